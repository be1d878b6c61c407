"""Waiting out a lock held by another process: retry with jittered exponential backoff.

The store (DuckDB) and the ledger (SQLite) both let a second process wait while the first
holds a conflicting lock: the attempt is repeated after 5 ms, 10 ms, 20 ms, … (capped), each
pause with up to 1 ms of random jitter so that waiting processes do not retry in step
(exponential backoff with jitter, as in Metcalfe & Boggs 1976's Ethernet), until a deadline.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["retry"]

_T = TypeVar("_T")


def retry(
    attempt: Callable[[], _T],
    *,
    retryable: Callable[[Exception], bool],
    deadline: float,
    cap: float = 0.25,
    first: float = 0.005,
    timed_out: Callable[[Exception], Exception] | None = None,
) -> _T:
    """``attempt()``, repeated while it raises an error that is ``retryable``, until the
    ``time.monotonic()`` ``deadline``; then the last error (or ``timed_out(error)``, chained)
    is raised. Other errors are raised at once.

    >>> calls = []
    >>> def flaky() -> str:
    ...     calls.append(1)
    ...     if len(calls) < 3:
    ...         raise OSError("locked")
    ...     return "done"
    >>> retry(flaky, retryable=lambda e: "locked" in str(e), deadline=time.monotonic() + 5)
    'done'
    >>> len(calls)
    3
    """
    delay = first
    while True:
        try:
            return attempt()
        except Exception as err:
            if not retryable(err):
                raise
            if time.monotonic() > deadline:
                if timed_out is not None:
                    raise timed_out(err) from err
                raise
            time.sleep(delay + secrets.randbelow(1000) / 1e6)
            delay = min(cap, delay * 2)
