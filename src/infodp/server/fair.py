"""A fair hand-out of a few shared things (the service's worker processes) across analysts.

A plain first-come-first-served line lets whoever sends the most requests hold every worker:
one analyst with two keys and two slow queries kept both workers busy while another
analyst's cheap query waited behind them (BENCHMARKS.md "server abuse"). :class:`FairQueue`
hands things out by analyst instead:

* **a cap** — no analyst holds more than ``cap`` things at once (the pool uses
  ``max(1, workers - 1)``), so with two or more workers one is always left for the others;
* **fewest held first, then round robin** — a freed thing goes to the waiting analyst (under
  their cap) who holds the fewest right now, ties broken in favour of the one served least
  recently; each analyst's own callers are served in order of arrival. An analyst with many
  waiting callers thus gets one turn per round, like every other waiting analyst, instead of
  one turn per request.

Callers without an analyst (``None``, the library's own use) share one line and no cap.

>>> q = FairQueue(cap=1)
>>> q.add("w1"); q.add("w2")
>>> q.take("alice", timeout=1.0), q.take("bob", timeout=1.0)
('w2', 'w1')
>>> q.take("alice", timeout=0.01) is None  # alice is at her cap of one
True
>>> q.give_back("alice", "w2"); q.take("alice", timeout=1.0)
'w2'
"""

from __future__ import annotations

import collections
import itertools
import threading
from typing import Generic, TypeVar

from infodp._validate import as_positive_int

__all__ = ["FairQueue"]

T = TypeVar("T")


class _Waiter(Generic[T]):
    """A caller waiting for a thing: ``lock`` is released once ``item`` is handed over."""

    __slots__ = ("item", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lock.acquire()
        self.item: T | None = None


class FairQueue(Generic[T]):
    """Free things handed to waiting callers by analyst (see the module docstring);
    thread-safe.

    ``cap``: most things one analyst holds at once (a positive integer).

    >>> q = FairQueue(cap=2)
    >>> q.add("w")
    >>> q.take(None, timeout=1.0), q.waiting(), q.held("anyone")
    ('w', 0, 0)
    """

    def __init__(self, cap: int) -> None:
        self.cap = as_positive_int("cap", cap)
        self._lock = threading.Lock()
        self._idle: list[T] = []
        self._waiting: dict[str | None, collections.deque[_Waiter[T]]] = {}
        self._held: collections.Counter[str | None] = collections.Counter()
        # When each analyst was last handed something (a tick of _clock): the tie-break.
        self._served: dict[str | None, int] = {}
        self._clock = itertools.count(1)

    def waiting(self) -> int:
        """How many callers wait for a thing now."""
        with self._lock:
            return sum(len(line) for line in self._waiting.values())

    def held(self, analyst: str | None) -> int:
        """How many things ``analyst`` holds now."""
        with self._lock:
            return self._held[analyst]

    def idle(self) -> int:
        """How many things are free now."""
        with self._lock:
            return len(self._idle)

    def add(self, item: T) -> None:
        """A new (or replaced) free ``item``: to the next waiting analyst, else idle."""
        with self._lock:
            self._idle.append(item)
            self._dispatch()

    def give_back(self, analyst: str | None, item: T | None) -> None:
        """``analyst`` no longer holds one thing; ``item`` is free again (None: it was lost,
        e.g. a worker killed at its deadline, and its replacement comes through :meth:`add`)."""
        with self._lock:
            if self._held[analyst] > 0:
                self._held[analyst] -= 1
            if not self._held[analyst]:
                del self._held[analyst]
            if item is not None:
                self._idle.append(item)
            # Also when nothing came back: the analyst may now be under their cap while a
            # thing sits idle.
            self._dispatch()

    def take(self, analyst: str | None, timeout: float) -> T | None:
        """A free thing for ``analyst``, waiting at most ``timeout`` seconds for their turn
        (None when not handed one in time). Give it back with :meth:`give_back`."""
        with self._lock:
            if self._idle and self._may_hold(analyst) and not self._waiting.get(analyst):
                # Idle things and waiting callers never coexist unless every waiting analyst
                # is at their cap, so nobody is overtaken here.
                return self._hand(analyst)
            waiter: _Waiter[T] = _Waiter()
            self._waiting.setdefault(analyst, collections.deque()).append(waiter)
        waiter.lock.acquire(timeout=max(0.0, timeout))
        with self._lock:
            if waiter.item is None:  # not handed one in time: leave the line
                line = self._waiting.get(analyst)
                if line is not None:
                    line.remove(waiter)
                    if not line:
                        del self._waiting[analyst]
                return None
            return waiter.item

    # -- under self._lock ----------------------------------------------------------------------

    def _may_hold(self, analyst: str | None) -> bool:
        return analyst is None or self._held[analyst] < self.cap

    def _hand(self, analyst: str | None) -> T:
        self._held[analyst] += 1
        self._served[analyst] = next(self._clock)
        return self._idle.pop()

    def _dispatch(self) -> None:
        """Hand idle things to waiting callers: the eligible analyst holding the fewest, then
        the one served least recently; within an analyst, the oldest caller."""
        while self._idle and self._waiting:
            eligible = [a for a in self._waiting if self._may_hold(a)]
            if not eligible:
                return
            analyst = min(eligible, key=lambda a: (self._held[a], self._served.get(a, 0)))
            line = self._waiting[analyst]
            waiter = line.popleft()
            if not line:
                del self._waiting[analyst]
            waiter.item = self._hand(analyst)
            waiter.lock.release()
