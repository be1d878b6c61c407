"""Run one call on a helper thread while the caller does something else (the query path).

The service path overlaps the reservation's fsync (and the data-independent noise) with the
DuckDB aggregate: both release the interpreter lock, so the query costs about the longer of
the two instead of their sum. Threads are kept and reused (starting one per query costs more
than the fsync it would hide), and a forked child starts its own.

>>> job = background(lambda: 6 * 7)
>>> job.result()
42
>>> background(lambda: 1 // 0).result()
Traceback (most recent call last):
...
ZeroDivisionError: integer division or modulo by zero
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar, cast

__all__ = ["Job", "background"]

_T = TypeVar("_T")


class Job(Generic[_T]):
    """A call running on a helper thread; :meth:`result` waits for it."""

    __slots__ = ("_callbacks", "_error", "_fn", "_lock", "_over", "_value", "_waiting")

    def __init__(self, fn: Callable[[], _T]) -> None:
        self._fn: Callable[[], _T | None] = fn
        # Held until the call is over; result() waits by acquiring it (a bare lock: the
        # hand-back costs one wake-up, without an Event's Python-level condition).
        self._waiting = threading.Lock()
        self._waiting.acquire()
        self._over = False
        self._lock = threading.Lock()
        self._value: _T | None = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[], None]] = []

    def _run(self) -> None:
        try:
            self._value = self._fn()
        except BaseException as err:  # handed to result()
            self._error = err
        finally:
            self._fn = _finished  # what it referenced (a connection) is not kept alive
            with self._lock:
                self._over = True
                callbacks, self._callbacks = self._callbacks, []
            self._waiting.release()
            for callback in callbacks:
                with contextlib.suppress(Exception):  # a cleanup's failure stays here
                    callback()

    def add_done_callback(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once the call is over (now, if it already is)."""
        with self._lock:
            if not self._over:
                self._callbacks.append(callback)
                return
        callback()

    def done(self) -> bool:
        """True once the call has returned or raised."""
        return self._over

    def result(self) -> _T:
        """The call's value (its exception is raised here, in the caller's thread)."""
        with self._waiting:  # released when the call is over (and by each waiter in turn)
            pass
        if self._error is not None:
            raise self._error
        # Set by _run before done (a call that raised has no value and raised above).
        return cast(_T, self._value)


def _finished() -> None:
    return None


class _Runnable(Protocol):
    """What a helper thread runs: a :class:`Job` of any value type."""

    def _run(self) -> None: ...


class _Helper:
    """One reusable daemon thread; it puts itself back on the idle list after each call."""

    def __init__(self, pool: _Pool) -> None:
        self._pool = pool
        self._go = threading.Lock()
        self._go.acquire()
        self._job: _Runnable | None = None
        threading.Thread(target=self._loop, name="infodp-overlap", daemon=True).start()

    def give(self, job: _Runnable) -> None:
        self._job = job
        self._go.release()

    def _loop(self) -> None:
        while True:
            self._go.acquire()
            job, self._job = self._job, None
            if job is not None:
                job._run()
            # Nothing of the call outlives it here (an idle daemon thread's references are
            # never released, not even at exit).
            job = None
            self._pool.idle(self)


class _Pool:
    def __init__(self) -> None:
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._idle: list[_Helper] = []

    def idle(self, helper: _Helper) -> None:
        with self._lock:
            self._idle.append(helper)

    def run(self, job: _Runnable) -> None:
        with self._lock:
            helper = self._idle.pop() if self._idle else None
        if helper is None:  # every helper is busy (concurrent queries): one more thread
            helper = _Helper(self)
        helper.give(job)


_POOL: list[_Pool] = []
_POOL_LOCK = threading.Lock()


def background(fn: Callable[[], _T]) -> Job[_T]:
    """Start ``fn()`` on a helper thread and return its :class:`Job`."""
    with _POOL_LOCK:
        if not _POOL or _POOL[0].pid != os.getpid():  # none yet, or forked
            _POOL[:] = [_Pool()]
        pool = _POOL[0]
    job = Job(fn)
    pool.run(job)
    return job
