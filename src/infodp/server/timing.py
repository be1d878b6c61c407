"""Answer time that does not depend on one person: predictable transactions for the service.

Over HTTP an analyst who does not hold the store still sees when each answer arrives, and a
query's run time depends on the data: one person's rows, multiplied by a join, took a query
from 25 ms to 196 ms, and the status of a query cut by the timeout told the same bit.
Haeberlen, Pierce & Narayan, "Differential Privacy Under Fire" (USENIX Security 2011, §5)
close that channel with *predictable transactions*: each query gets a time budget fixed, before
it runs, from public facts only; its answer is released when the budget is spent and not
before; and a query that overruns yields a default outcome that does not depend on the data.

Here:

- **the budget** (:func:`answer_seconds`): the operator's declared seconds per table a query
  reads (``answer_time`` for DuckDB datasets, ``spark_answer_time`` for Spark's), times the
  number of tables its FROM and JOINs read (subqueries included). Both are public: the
  settings and the SQL text. One person's rows can add at most the dataset's declared work
  bound (``max_derived_rows_per_unit``) to any relation, so a budget the operator sizes for
  the data leaves that margin.
- **the clock** starts when the query route is entered (after authentication and the
  analyst's own slot), so validation, planning and the reservation count against it; a
  refusal before the reservation (bad SQL, no budget, over budget) answers at once: it reads
  no data, so its time is a function of the query and the declaration alone.
- **the release**: the answer is computed (in a worker process, its DuckDB statement
  interrupted at the budget), then held until the budget is spent; the wait is in the event
  loop, holding no worker and no thread.
- **the default outcome** (:meth:`~infodp.curator.Curator.default_json`): when the release
  is not ready at the budget, or fails after the reservation, the analyst receives the
  query's release on the *empty* dataset with fresh noise: the same status (200), the same
  charge and the same body shape as any answer, at the same time. The ledger keeps that text
  (what the analyst saw) and the server log says the budget was overrun, so the operator can
  raise it; the analyst is not told (that would be the bit the padding hides).
- ``answer_time = 0`` turns padding off (the library's default, where an embedding
  application decides; ``infodp serve`` pads by default).

What it does not cover, and the docs say so: in-process use (``Session``, ``Curator``, the CLI
on a store file) runs where the data already is, and there the declared work bound is the
protection; a budget smaller than the real run time turns answers into default outcomes
(private, useless); the time to write the response is not padded (it depends on the body's
size, which depends on the query's declared shape and on the released noisy values only).

>>> answer_seconds(1.0, 30.0, backend="duckdb", tables=3)
3.0
>>> answer_seconds(1.0, 30.0, backend="spark", tables=1)
30.0
>>> answer_seconds(0.0, 30.0, backend="duckdb", tables=3)
0.0
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable
from typing import Any

from infodp._engines import engine
from infodp.curator.answer.result import StoreNotOpened
from infodp.errors import ParameterError

__all__ = ["answer_seconds", "check_answer_time", "released_on_time"]

log = logging.getLogger("infodp.server")


def answer_seconds(per_table: float, spark_per_table: float, *, backend: str, tables: int) -> float:
    """A query's time budget: the declared seconds per table of its backend × the tables it
    reads (0 when padding is off)."""
    if per_table <= 0:
        return 0.0
    seconds = per_table if engine(backend).in_store else spark_per_table
    return seconds * max(1, tables)


def check_answer_time(name: str, value: float) -> float:
    """``value`` as an answer time in seconds: 0 (off) or a positive finite number.

    >>> check_answer_time("--answer-time", 0.5)
    0.5
    >>> check_answer_time("--answer-time", -1)
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: --answer-time must be 0 (no padding) or a positive number of seconds, at most 3600; got -1.
    """  # noqa: E501
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError(name, value, "a number of seconds")
    if not math.isfinite(value) or value < 0 or value > 3600:
        raise ParameterError(
            name, value, "0 (no padding) or a positive number of seconds, at most 3600"
        )
    return float(value)


async def released_on_time(
    release_at: float, compute: Callable[[], str], default: Callable[[], str], *, entry: int
) -> tuple[str, str | None]:
    """(the text released, None or why it is the default outcome), returned at
    ``release_at`` (``time.monotonic()``) and not before.

    ``compute()`` (the release, in a thread) races the budget; ``default()`` (the default
    outcome, data-free) is made meanwhile. The caller records the outcome in the ledger
    after the response is sent, so the time the record takes cannot delay a release that
    finished just in time.
    """
    from starlette.concurrency import run_in_threadpool

    real = asyncio.ensure_future(run_in_threadpool(compute))
    fallback = await run_in_threadpool(default)
    cause: str | None = None
    try:
        left = max(0.0, release_at - time.monotonic())
        text = await asyncio.wait_for(asyncio.shield(real), timeout=left)
    except StoreNotOpened:
        raise  # nothing of the data was touched: the caller refunds, as without padding
    except TimeoutError:
        cause = "overran its answer time"
        real.add_done_callback(_discard)
        text = fallback
    except Exception as err:  # a failure after the reservation: data-dependent, so hidden
        cause = f"failed: {type(err).__name__}: {err}"[:300]
        text = fallback
    if cause is not None:
        log.warning("query entry %d %s; released its default outcome", entry, cause)
    left = release_at - time.monotonic()
    if left > 0:
        await asyncio.sleep(left)
    return text, cause


def _discard(task: asyncio.Future[Any]) -> None:
    """Collect a late release's outcome unseen (it is never released)."""
    with contextlib.suppress(BaseException):
        task.result()
