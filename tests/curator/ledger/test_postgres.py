"""The PostgreSQL storage of the ledger: its dialect translation and its failures.

The translation is checked against the statements PostgreSQL itself accepts (run on the
session's cluster), the failures by the messages an operator reads.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from typing import Any

import pytest

from _postgres import _free_port
from infodp.curator.ledger import Ledger
from infodp.curator.ledger.postgres import PgDatabase, Row, translate
from infodp.errors import BudgetExceeded, InternalError, LedgerError, ParameterError

pytestmark = pytest.mark.postgres


def test_the_dialect_of_the_ledger_runs_on_postgresql(pg_cluster: Any) -> None:
    import psycopg

    url = pg_cluster.new_schema()
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in (
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            "CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, x REAL, b BLOB)",
        ):
            conn.execute(translate(statement))  # type: ignore[arg-type]
        for v in ("1", "2"):
            conn.execute(
                translate("INSERT OR REPLACE INTO meta (key, value) VALUES ('k', ?)"), (v,)
            )  # type: ignore[arg-type]
            conn.execute(translate("INSERT OR IGNORE INTO meta (key, value) VALUES ('j', ?)"), (v,))  # type: ignore[arg-type]
        rows = conn.execute("SELECT key, value FROM meta ORDER BY key").fetchall()
        assert rows == [("j", "1"), ("k", "2")]  # replaced, and ignored
        conn.execute("INSERT INTO t (id, x) VALUES (1, %s)", (0.1,))
        # REAL is 8 bytes here, as in SQLite: a Python float comes back exactly.
        assert conn.execute("SELECT x FROM t").fetchone() == (0.1,)
        cols = conn.execute(translate("PRAGMA table_info(t)")).fetchall()  # type: ignore[arg-type]
        assert [c[1] for c in cols] == ["id", "x", "b"]


def test_an_unknown_replace_target_is_an_internal_error() -> None:
    with pytest.raises(InternalError, match="no conflict target known for INSERT OR REPLACE"):
        translate("INSERT OR REPLACE INTO nowhere (a, b) VALUES (?, ?)")


def test_rows_read_by_name_and_position() -> None:
    r = Row(("a", "b"), {"a": 0, "b": 1}, (1, "x"))
    assert (r["b"], r[0], len(r), list(r), r.keys()) == ("x", 1, 2, [1, "x"], ["a", "b"])


def test_an_unreachable_ledger_says_so_without_its_password() -> None:
    url = f"postgresql://infodp:hunter2@127.0.0.1:{_free_port()}/x"
    with pytest.raises(LedgerError, match="cannot be reached") as info:
        Ledger(url)
    assert "hunter2" not in str(info.value)
    db = PgDatabase(url, timeout=0.5)
    with (
        pytest.raises(InternalError, match=r"stayed locked or unreachable for 0\.5 s"),
        db.transaction(),
    ):
        pass


def test_without_psycopg_the_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ParameterError, match=r"needs psycopg; install infodp\[postgres\]"):
        Ledger("postgresql://u@127.0.0.1:1/x")


def test_writers_on_two_connections_never_overspend(pg_cluster: Any) -> None:
    """Two ledger objects (two servers' connections) charging one budget in turns."""
    url = pg_cluster.new_schema()
    one = Ledger(url)
    one.register_dataset("t", "{}", rows=1, source="-")
    one.add_analyst("a", "t", Fraction(1), Fraction(0))
    two = Ledger(url, create=False)
    accepted = 0
    for i in range(12):
        try:
            (one if i % 2 else two).reserve("a", "t", "q", Fraction(1, 10), Fraction(0), 0.0)
            accepted += 1
        except BudgetExceeded:
            pass
    assert accepted == 10  # 1 / (1/10), whichever server charged
    assert one.budget("a", "t").spent_epsilon == Fraction(1) and two.verify() == []
