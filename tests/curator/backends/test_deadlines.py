"""The shared deadline watchdog of the DuckDB backend: a running query's deadline fires on
time, and the deadlines of finished queries are dropped instead of each waking the thread."""

from __future__ import annotations

import time
from typing import Any, cast

from infodp.curator.backends.duckdb import _Deadline, _Watchdog


class _Con:
    """A connection stand-in that counts its interrupts."""

    def __init__(self) -> None:
        self.interrupts = 0

    def interrupt(self) -> None:
        self.interrupts += 1


def _deadline(con: _Con) -> _Deadline:
    return _Deadline(cast(Any, con), None)  # watched by the test's own watchdog


def _wait_for(check: Any, seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.005)
    return False


def test_finished_deadlines_are_dropped_and_a_running_one_still_fires() -> None:
    dog = _Watchdog()
    finished = []
    for _ in range(500):  # queries that end long before their (distant) deadline
        d = _deadline(_Con())
        dog.watch(time.monotonic() + 60, d)
        d.__exit__()
        finished.append(d)
    assert dog.pending() <= 1  # each watch dropped the finished one before it
    con = _Con()
    running = _deadline(con)
    dog.watch(time.monotonic() + 0.05, running)  # earlier than the one the thread waits for
    assert _wait_for(lambda: con.interrupts == 1)
    assert running.fired and not any(d.fired for d in finished)


def test_a_later_deadline_does_not_delay_an_earlier_one() -> None:
    dog = _Watchdog()
    late, early = _Con(), _Con()
    dog.watch(time.monotonic() + 30, _deadline(late))
    dog.watch(time.monotonic() + 0.05, _deadline(early))
    assert _wait_for(lambda: early.interrupts == 1)
    assert late.interrupts == 0 and dog.pending() == 1
