"""The ledger's storage layer on its own: transactions, group commit, the guard and the
deferred fsync, on a plain table with no privacy accounting anywhere."""

from __future__ import annotations

import ast
import sqlite3
import threading
import time
from pathlib import Path

import pytest

import infodp.curator.ledger.storage as storage
from infodp.curator.ledger.storage import Database
from infodp.errors import LedgerError, ParameterError


def _db(path: Path | str) -> Database:
    db = Database(path, create=True)
    with db.transaction() as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS t (v INTEGER NOT NULL)")
    return db


def _insert(v: int) -> storage.Work:
    def work(conn: sqlite3.Connection) -> int:
        if v < 0:
            raise ParameterError("v", v, "a non-negative number")
        return int(conn.execute("INSERT INTO t (v) VALUES (?)", (v,)).lastrowid or 0)

    return work


def _values(db: Database) -> list[int]:
    with db.read() as conn:
        return [r["v"] for r in conn.execute("SELECT v FROM t ORDER BY rowid")]


def test_the_storage_layer_imports_no_accounting() -> None:
    """Testable and benchmarkable without any DP: only the standard library, errors and the
    retry helper."""
    tree = ast.parse(Path(storage.__file__).read_text())
    modules = {
        n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0
    }
    modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert {m for m in modules if m.startswith("infodp")} == {"infodp.errors", "infodp._retry"}


@pytest.mark.parametrize("where", ["file", "memory"])
def test_a_refused_write_in_a_group_undoes_only_itself(tmp_path: Path, where: str) -> None:
    db = _db(tmp_path / "x.db" if where == "file" else ":memory:")
    if where == "file":
        db.pin()
    writers = storage.writers_of(db)
    group = storage.group_of(db)
    out: list[object] = [None] * 4
    values = [1, 2, -1, 4]

    def run(i: int) -> None:
        try:
            out[i] = db.submit(_insert(values[i]), guarded=True)
        except ParameterError as err:
            out[i] = err

    writers.lock.acquire()  # the leader waits here while the others queue behind it
    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    threads[0].start()
    deadline = time.monotonic() + 30
    while not group._busy and time.monotonic() < deadline:
        time.sleep(0.001)
    for i in range(1, 4):  # queued in this order behind the leader
        threads[i].start()
        while len(group._queue) < i and time.monotonic() < deadline:
            time.sleep(0.001)
    writers.lock.release()
    for t in threads:
        t.join(timeout=60)
    assert isinstance(out[2], ParameterError)
    assert _values(db) == [1, 2, 4]  # in arrival order; the refused write left nothing
    assert all(isinstance(out[i], int) for i in (0, 1, 3))


def test_the_guard_refuses_guarded_writes_only(tmp_path: Path) -> None:
    db = _db(tmp_path / "x.db")

    def guard(conn: sqlite3.Connection) -> None:
        raise LedgerError("not ours any more")

    db.guard = guard
    with pytest.raises(LedgerError, match="not ours"):
        db.submit(_insert(1), guarded=True)
    assert db.submit(_insert(2), guarded=False) == 1
    assert _values(db) == [2]


def test_a_deferred_commit_is_visible_at_once_and_synced_on_request(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    db = _db(path)
    assert db.deferrable()  # WAL mode on a file
    db.submit(_insert(5), guarded=True, durable=False)
    other = Database(path)  # another connection sees the committed write before the fsync
    assert _values(other) == [5]
    db.sync()  # the fsync of the WAL (raises OSError if it fails)
    assert Path(str(path) + "-wal").exists()
    db.close()
    other.close()


def test_a_missing_file_is_never_recreated(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    db = _db(path)
    db.close()
    path.unlink()
    with pytest.raises(LedgerError, match="cannot be opened"):
        db.connection()
    assert not path.exists()


def test_files_are_created_private(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "x.db"
    Database(path, create=True)
    assert path.stat().st_mode & 0o777 == 0o600
