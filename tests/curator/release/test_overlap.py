"""The query path overlaps the reservation's fsync with the DuckDB aggregate, safely.

``Curator.query`` commits the reservation (budget checked, row written, visible and kept if
the process dies), then runs the commit's fsync while DuckDB aggregates, and releases nothing
until the fsync has returned. What is checked here, against the ledger file itself (a second
connection, another process after a SIGKILL) and a spy on what was released:

* a failing fsync releases nothing (the noise, drawn from the data-independent source before
  the aggregate, is dropped unseen), keeps the charge, answers with the one constant failure
  and does so without waiting for the aggregate (its timing cannot carry the data);
* a process killed between the reservation's commit and its fsync (before the data is read)
  leaves the charge spent;
* a refusal (budget exceeded) never starts the aggregate;
* ``Ledger.sync`` is the fsync of the ledger's WAL file, and a deferred reservation is
  visible to other connections as soon as it returns.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import _stores
from _kill import kill_when_marked, query_stopped_at
from _stores import ints, one_table
from infodp.curator.backends.duckdb import DuckDBBackend
from infodp.curator.engine import Curator
from infodp.curator.ledger import Ledger
from infodp.curator.release.overlap import background
from infodp.errors import BudgetExceeded, QueryFailed

SCHEMA = one_table("t", {"x": ints(0, 9)})
SQL = "SELECT COUNT(*) FROM t"


def make_store(tmp_path: Path, epsilon: str = "1") -> Path:
    frame = pd.DataFrame({"x": list(range(10)) * 5})
    return Path(_stores.make_store(tmp_path, "t", frame, SCHEMA, budget={"epsilon": epsilon}).db)


def _spent(db: Path) -> Fraction:
    """The analyst's spend as stored in the file (a connection of its own)."""
    con = sqlite3.connect(f"file:{db}.ledger?mode=ro", uri=True)
    try:
        (spent,) = con.execute("SELECT spent_epsilon FROM analysts WHERE name = 'a'").fetchone()
    finally:
        con.close()
    return Fraction(spent)


@pytest.mark.slow
def test_a_failed_fsync_releases_nothing_and_does_not_wait_for_the_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = make_store(tmp_path)
    cur = Curator(db, keep_open=True)
    started, go_on = threading.Event(), threading.Event()
    real = DuckDBBackend.aggregate

    def slow_aggregate(self: DuckDBBackend, *args: Any, **kwargs: Any) -> Any:
        started.set()
        assert go_on.wait(30)  # the data "takes" until the test lets it go
        return real(self, *args, **kwargs)

    def failing_sync() -> None:
        assert started.wait(30)  # the aggregate is running (on a helper thread)
        raise OSError(5, "Input/output error")

    released: list[Any] = []
    monkeypatch.setattr(DuckDBBackend, "aggregate", slow_aggregate)
    monkeypatch.setattr(cur.ledger, "sync", failing_sync)
    monkeypatch.setattr(cur._runner, "release", lambda *a, **k: released.append(a))
    try:
        with pytest.raises(QueryFailed) as info:
            cur.query("a", SQL, epsilon="0.25")
        # Answered while the aggregate is still held: the failure's time is the fsync's.
        assert not go_on.is_set()
    finally:
        go_on.set()
    assert str(info.value) == QueryFailed.MESSAGE
    assert released == []  # nothing of the query (the noise drawn for it included) left
    (entry,) = cur.ledger.entries()
    assert entry.status == "failed" and entry.result_json is None
    assert "Input/output error" in (entry.error or "")
    assert _spent(db) == Fraction(1, 4)  # the charge stays (the data may have been read)
    monkeypatch.undo()
    # The abandoned connection is not reused: the next query runs and is released.
    r = cur.query("a", SQL, epsilon="0.25")
    assert len(r.rows) == 1 and _spent(db) == Fraction(1, 2)
    assert [e.status for e in cur.ledger.entries()] == ["failed", "released"]
    cur.close()


@pytest.mark.slow
def test_the_release_waits_for_the_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even when the aggregate is done first, nothing is released before the fsync returns."""
    db = make_store(tmp_path)
    cur = Curator(db, keep_open=True)
    order: list[str] = []
    real_sync, real_release = cur.ledger.sync, cur._runner.release

    def slow_sync() -> None:
        time.sleep(0.2)
        real_sync()
        order.append("durable")

    def release(*args: Any, **kwargs: Any) -> Any:
        order.append("release")
        return real_release(*args, **kwargs)

    monkeypatch.setattr(cur.ledger, "sync", slow_sync)
    monkeypatch.setattr(cur._runner, "release", release)
    cur.query("a", SQL, epsilon="0.25")
    assert order == ["durable", "release"]
    cur.close()


@pytest.mark.slow
def test_a_refusal_never_starts_the_aggregate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = make_store(tmp_path, epsilon="0.5")
    cur = Curator(db, keep_open=True)
    calls: list[Any] = []
    monkeypatch.setattr(DuckDBBackend, "aggregate", lambda *a, **k: calls.append(a))
    with pytest.raises(BudgetExceeded):
        cur.query("a", SQL, epsilon="0.75")
    assert calls == [] and cur.ledger.entries() == [] and _spent(db) == 0
    cur.close()


# The query stops at "reserved" and is killed there.
_VICTIM = query_stopped_at("reserved")


@pytest.mark.slow
def test_a_kill_between_the_commit_and_its_fsync_keeps_the_charge(tmp_path: Path) -> None:
    db = make_store(tmp_path)
    marker = tmp_path / "marker"
    out = kill_when_marked(_VICTIM, db, marker)
    assert "RESULT" not in out
    led = Ledger(str(db) + ".ledger")
    (entry,) = led.entries()
    assert entry.id == int(marker.read_text())
    assert entry.status == "reserved" and entry.result_json is None
    assert led.budget("a", "t").spent_epsilon == Fraction(1, 4) and led.check() == []
    led.close()


def test_a_deferred_reservation_is_visible_at_once_and_sync_fsyncs_the_wal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = make_store(tmp_path)
    led = Ledger(str(db) + ".ledger")
    led.reserve("a", "t", SQL, Fraction(1, 8), Fraction(0), 0.1, durable=False)
    assert _spent(db) == Fraction(1, 8)  # committed: another connection sees it
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    led.sync()
    assert os.stat(str(db) + ".ledger-wal").st_ino in synced
    led.close()


def test_background_hands_back_values_and_errors() -> None:
    assert [background(lambda i=i: i * i).result() for i in range(5)] == [0, 1, 4, 9, 16]
    job = background(lambda: {}["missing"])
    with pytest.raises(KeyError):
        job.result()
    seen: list[int] = []
    job.add_done_callback(lambda: seen.append(1))  # already done: runs at once
    assert job.done() and seen == [1]
