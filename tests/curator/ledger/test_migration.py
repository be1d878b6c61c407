"""``infodp ledger migrate --to postgresql://…``: a store's SQLite ledger moved into PostgreSQL.

The source is a ledger of format 4 (made as the previous test of formats makes one: the
access lists dropped, the grants sealed without them) with a budget group, spends, an
analyst's ledger key, a server key and a revoked one. The oracle is the SQLite file itself,
read with :mod:`sqlite3`, and the copy read with psycopg directly: every entry keeps its id
and hash link, every spend its exact value; the copy verifies, and the store then charges
the PostgreSQL ledger (the file is no longer written).
"""

from __future__ import annotations

import json
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _stores import TEXT, ints, one_table
from infodp.cli import main
from infodp.curator.engine import Curator
from infodp.curator.ledger import integrity
from infodp.curator.ledger.migration import copy_to_postgres
from infodp.errors import LedgerError, ParameterError

pytestmark = pytest.mark.postgres

SCHEMA = one_table("t", {"pid": TEXT, "x": ints(0, 9)}, unit="pid")


def _frame(n: int, extra: int = 0) -> pd.DataFrame:
    ids = [f"p{i}" for i in range(n)] + [f"dummy{i}" for i in range(extra)]
    return pd.DataFrame({"pid": ids, "x": [i % 10 for i in range(len(ids))]})


def _format_4_store(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A store whose ledger is of format 4: orig and copy in one group, spends, keys."""
    db = tmp_path / "s.duckdb"
    cur = Curator(db)
    cur.register_dataset("orig", _frame(300), SCHEMA, max_epsilon=3)
    cur.register_dataset("copy", _frame(300, 1), SCHEMA, same_population_as="orig")
    keys = {"a": cur.add_analyst("a", "orig", epsilon=1) or ""}
    keys["b"] = cur.add_analyst("b", "orig", epsilon=2, delta="1e-6") or ""
    for eps in ("0.25", "0.125"):
        cur.query("a", "SELECT COUNT(*) FROM orig", epsilon=eps)
    cur.query("b", "SELECT SUM(x) FROM orig", epsilon="0.5")
    keys["server"] = cur.ledger.issue_key("b")
    cur.ledger.issue_key("a")
    cur.ledger.revoke_keys("a")
    cur.close()
    conn = sqlite3.connect(str(db) + ".ledger")
    conn.row_factory = sqlite3.Row
    with conn:
        conn.execute("ALTER TABLE analysts DROP COLUMN access")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'format'")
        store_id = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0]
        for row in conn.execute("SELECT * FROM analysts").fetchall():
            conn.execute(
                "UPDATE meta SET value = ? WHERE key = ?",
                (integrity.analyst_seal(store_id, row), integrity.seal_key("analysts", row)),
            )
    conn.close()
    return db, keys


def _sqlite(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(f"file:{db}.ledger?mode=ro", uri=True) as conn:
        return [tuple(r) for r in conn.execute(sql).fetchall()]


def _pg(url: str, sql: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return [tuple(r) for r in conn.execute(sql).fetchall()]  # type: ignore[arg-type]


ENTRIES = "SELECT id, analyst, dataset, epsilon, delta, info_nats, status, chain FROM entries"
SPENDS = "SELECT name, dataset, spent_epsilon, spent_delta FROM analysts ORDER BY name, dataset"


def test_a_format_4_ledger_moves_with_its_chain_and_the_store_then_uses_it(
    tmp_path: Path, pg_cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    db, keys = _format_4_store(tmp_path)
    before = _sqlite(db, ENTRIES + " ORDER BY id")
    assert len(before) == 3 and _sqlite(db, "SELECT value FROM meta WHERE key='format'") == [("4",)]
    url = pg_cluster.new_schema()
    code = main(["ledger", "migrate", "--db", str(db), "--to", url, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["entries"] == 3 and out["verified"] is True
    # Ids, links and exact spends as stored in the file (which was brought to this format).
    assert _pg(url, ENTRIES + " ORDER BY id") == _sqlite(db, ENTRIES + " ORDER BY id")
    assert [r[-1] for r in before] == [r[-1] for r in _pg(url, ENTRIES + " ORDER BY id")]
    assert _pg(url, SPENDS) == _sqlite(db, SPENDS)
    assert _pg(url, "SELECT value FROM meta WHERE key = 'format'") == [(integrity.FORMAT,)]
    # The store now opens the PostgreSQL ledger: keys, groups and budgets carried over.
    cur = Curator(db)
    assert cur.ledger.verify() == []
    assert cur.ledger.verify_key("b", keys["b"]) and not cur.ledger.verify_key("a", keys["a"])
    assert cur.ledger.ledger_key_revoked("a")
    assert cur.ledger.dataset("copy").budget_group == "orig"
    cur.query("b", "SELECT COUNT(*) FROM orig", epsilon="0.25")
    assert cur.ledger.budget("b", "orig").spent_epsilon == Fraction(3, 4)
    charged = Fraction(1, 4) + Fraction(1, 8) + Fraction(1, 2) + Fraction(1, 4)
    assert cur.ledger.dataset("orig").spent_epsilon == charged  # the group root: a and b
    cur.close()
    assert len(_pg(url, ENTRIES)) == 4 and len(_sqlite(db, ENTRIES)) == 3  # the file: unused
    assert main(["ledger", "verify", "--db", str(db)]) == 0
    assert "consistent" in capsys.readouterr().out


def test_migrate_refuses_a_database_that_holds_a_ledger_and_a_url_that_is_not_one(
    tmp_path: Path, pg_cluster: Any
) -> None:
    db, _ = _format_4_store(tmp_path)
    url = pg_cluster.new_schema()
    Curator(tmp_path / "other.duckdb", ledger=url).close()  # another store's ledger is there
    from infodp.curator.backends.duckdb import DuckDBBackend
    from infodp.curator.store.database import read_store_id

    store_id = read_store_id(DuckDBBackend(db)) or ""
    with pytest.raises(LedgerError, match="already holds a ledger; nothing was copied"):
        copy_to_postgres(str(db) + ".ledger", url, store_id=store_id)
    with pytest.raises(ParameterError, match="a postgresql:// URL"):
        copy_to_postgres(str(db) + ".ledger", str(tmp_path / "x"), store_id=store_id)
    # Refused: the store still charges its file.
    Curator(db).query("b", "SELECT COUNT(*) FROM orig", epsilon="0.25")
    assert len(_sqlite(db, ENTRIES)) == 4


def test_migrate_says_what_it_did_and_refuses_a_second_time(
    tmp_path: Path, pg_cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = _format_4_store(tmp_path)
    url = pg_cluster.new_schema()
    assert main(["ledger", "migrate", "--db", str(db), "--to", url]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"ledger of {db} moved to postgresql://postgres@127.0.0.1:")
    assert "3 entries, verified; the store now uses it" in out
    again = pg_cluster.new_schema()
    assert main(["ledger", "migrate", "--db", str(db), "--to", again]) == 2
    assert "a store whose ledger is still its SQLite file" in capsys.readouterr().err


def test_a_source_that_fails_the_full_verification_is_not_copied(
    tmp_path: Path, pg_cluster: Any
) -> None:
    """An edit before the verified checkpoint passes the open, not the full verification."""
    from infodp.curator.ledger import Ledger

    path = tmp_path / "l.ledger"
    led = Ledger(path)
    led.register_dataset("t", "{}", rows=1, source="-")
    led.add_analyst("a", "t", Fraction(100), Fraction(0))
    for i in range(70):
        led.reserve("a", "t", f"q{i}", Fraction(1, 100), Fraction(0), 0.0)
    led.close()
    Ledger(path).close()  # the checkpoint moves past the first entries
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE entries SET sql = 'edited' WHERE id = 1")
    store_id = Ledger(path).store_id  # still opens
    with pytest.raises(LedgerError, match=r"does not verify .*; nothing was copied"):
        copy_to_postgres(path, pg_cluster.new_schema(), store_id=store_id)
