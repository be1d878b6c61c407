"""The background writer of held completions (:meth:`Ledger.complete_later`), and the
write at interpreter exit of those still held.

Anything with a ``flush()`` method can be handed over; the flusher calls it at most
:data:`FLUSH_AFTER` seconds after the first poke, from one daemon thread per process.

>>> class Held:
...     written = 0
...     def flush(self) -> None:
...         Held.written += 1
>>> h = Held()
>>> flusher().poke(h); flusher().flush_all(); Held.written >= 1
True
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
import weakref
from typing import Protocol

from infodp._per_process import PerProcess

__all__ = ["FLUSH_AFTER", "Flushable", "Flusher", "flusher", "hold"]

#: A completion held by Ledger.complete_later is written at the latest this long after
#: (read at each wait: a test may lengthen it).
FLUSH_AFTER = 0.05


class Flushable(Protocol):
    """What the flusher writes: an object holding writes until :meth:`flush`."""

    def flush(self) -> None:
        """Write what is held."""


class Flusher:
    """One daemon thread writing the held completions of idle ledgers."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._waiting: dict[int, Flushable] = {}  # strong references until written
        threading.Thread(target=self._run, name="infodp-ledger-flush", daemon=True).start()

    def poke(self, holder: Flushable) -> None:
        """Write ``holder``'s completions soon."""
        with self._cond:
            if id(holder) not in self._waiting:
                self._waiting[id(holder)] = holder
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._waiting:
                    self._cond.wait()
            time.sleep(FLUSH_AFTER)
            self.flush_all()

    def flush_all(self) -> None:
        """Flush every holder poked so far."""
        with self._cond:
            waiting, self._waiting = self._waiting, {}
        for holder in waiting.values():
            with contextlib.suppress(Exception):  # kept by the holder for its next flush
                holder.flush()


_FLUSHER = PerProcess(Flusher)


def flusher() -> Flusher:
    """This process's flusher (a new one after a fork)."""
    return _FLUSHER()


#: Every holder that has held a completion in this process (weakly: a ledger collected
#: with completions still held loses them, and its entries stay 'reserved').
_HOLDERS: weakref.WeakSet[Flushable] = weakref.WeakSet()


def hold(holder: Flushable) -> None:
    """Register ``holder`` for the write at exit and poke the background writer."""
    _HOLDERS.add(holder)
    flusher().poke(holder)


@atexit.register
def _flush_at_exit() -> None:
    # Each flush waits for one the background writer may have in progress (the holder's
    # lock), then writes what is still held.
    for holder in list(_HOLDERS):
        with contextlib.suppress(Exception):  # kept 'reserved': charged, no answer kept
            holder.flush()
