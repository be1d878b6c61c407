"""One object per process: made on first use, and made again in a forked child.

Threads and open connections do not survive ``fork``: a child that kept its parent's
deadline watchdog, check connections or ledger flusher would wait on a thread that no longer
runs. The query backends and the ledger each hold such an object; this is their one copy of
the idiom.

>>> made = []
>>> one = PerProcess(lambda: len(made.append(0) or made))
>>> one(), one(), len(made)
(1, 1, 1)
>>> one.made()
1
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["PerProcess"]

_T = TypeVar("_T")


class PerProcess(Generic[_T]):
    """``make()`` called once per process; calling the holder returns this process's object."""

    def __init__(self, make: Callable[[], _T]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._held: tuple[int, _T] | None = None

    def __call__(self) -> _T:
        """This process's object (made now if there is none yet, or it was the parent's)."""
        with self._lock:
            if self._held is None or self._held[0] != os.getpid():  # none yet, or forked
                self._held = (os.getpid(), self._make())
            return self._held[1]

    def made(self) -> _T | None:
        """The object made last (by this process or its parent), or None; makes none."""
        held = self._held
        return None if held is None else held[1]
