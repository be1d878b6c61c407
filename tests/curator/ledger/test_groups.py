"""Budget groups keep the ledger's guarantees: one transaction per charge, seals, crash
safety, verification and migration of older stores.

A dataset in a budget group is charged on its group root's caps and on the analyst's budget
there; these tests check that the integrity machinery (totals equal the entries' sums, seals
of every grant including the membership, the checkpoint, the accountant replay) counts
those charges where they are debited, that a process killed mid-query leaves a consistent
ledger, and that a store made before budget groups opens, keeps working and gets its
sketches at the next registration.
"""

from __future__ import annotations

import os
import sqlite3
import textwrap
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from _kill import kill_when_marked
from _ledgers import edit, ledger_of, sqlite_only, store_ledger
from _stores import TEXT, BuiltOnce, ints, one_table
from infodp.accounting.accountant import Budget
from infodp.curator.engine import Curator
from infodp.curator.ledger import integrity
from infodp.curator.store import database, ledger_location
from infodp.curator.store.database import reinit_ledger
from infodp.errors import LedgerError, ParameterError

SCHEMA = one_table("t", {"pid": TEXT, "x": ints(0, 9)}, unit="pid")
QUERY = "SELECT COUNT(*) FROM {}"

# Every test on both ledger storages (SQLite, PostgreSQL: tests/conftest.py).
pytestmark = pytest.mark.usefixtures("ledger_kind")


def _frame(n: int, extra: int = 0) -> pd.DataFrame:
    ids = [f"p{i}" for i in range(n)] + [f"dummy{i}" for i in range(extra)]
    return pd.DataFrame({"pid": ids, "x": [i % 10 for i in range(len(ids))]})


#: The default grouped store, built once per module with a SQLite ledger (its directory);
#: each test writes to a copy of its two files. A PostgreSQL ledger is a schema of the
#: cluster, not a file to copy: those stores are built each time.
_GROUPED = BuiltOnce[Path]("grouped")
_grouped_folder = _GROUPED.fixture()


def _sqlite_ledgers() -> bool:
    """Whether new stores get their ledger file beside them (not the PostgreSQL kind)."""
    return database.default_ledger is ledger_location.default_ledger


def _grouped_store(tmp_path: Path, **budget: object) -> Path:
    """orig and its copy with one dummy row (declared one group), analyst a granted on both
    (one budget)."""
    if budget or not _sqlite_ledgers():
        return _build_grouped(tmp_path, **budget)
    _GROUPED.copy("default", _build_grouped, tmp_path)
    return tmp_path / "s.duckdb"


def _build_grouped(tmp_path: Path, **budget: object) -> Path:
    """:func:`_grouped_store`, built anew in ``tmp_path``."""
    db = tmp_path / "s.duckdb"
    cur = Curator(db)
    cur.register_dataset("orig", _frame(500), SCHEMA, max_epsilon=2)
    copy = cur.register_dataset("copy", _frame(500, 1), SCHEMA, same_population_as="orig")
    assert copy["shares_budgets_of"] == "orig"
    cur.add_analyst("a", "orig", **(budget or {"epsilon": 1}))
    assert cur.add_analyst("a", "copy", **(budget or {"epsilon": 1})) is None
    cur.close()
    return db


def _sql(db: Path, *statements: str) -> None:
    edit(ledger_of(db), *statements)


@pytest.mark.slow
def test_a_membership_edited_by_hand_fails_verify_and_is_never_charged(tmp_path: Path) -> None:
    """The copy moved out of its group (or into another) by SQL: the member's seal covers it."""
    db = _grouped_store(tmp_path)
    live = Curator(db)  # opened before the edit
    _sql(db, "UPDATE datasets SET budget_group = NULL WHERE name = 'copy'")
    assert any("dataset copy was edited" in p for p in live.ledger.verify())
    with pytest.raises(LedgerError, match="inconsistent"):
        store_ledger(db)
    live.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit", "error"),
    [
        ("UPDATE datasets SET independent = 1 WHERE name = 'copy'", "edited"),
        ("UPDATE datasets SET budget_group = NULL WHERE name = 'copy'", "changed while in use"),
    ],
)
def test_a_membership_edit_is_refused_by_a_curator_opened_before_it(
    tmp_path: Path, edit: str, error: str
) -> None:
    db = _grouped_store(tmp_path)
    live = Curator(db)
    live.query("a", QUERY.format("copy"), epsilon="0.25")  # the seals are known sound
    _sql(db, edit)
    with pytest.raises(LedgerError, match=error):
        live.query("a", QUERY.format("copy"), epsilon="0.25")
    assert live.ledger.budget("a", "orig").spent_epsilon == Fraction(1, 4)
    live.close()


@pytest.mark.slow
def test_a_cancelled_charge_on_a_member_is_refunded_to_its_group(tmp_path: Path) -> None:
    db = _grouped_store(tmp_path)
    led = store_ledger(db)
    e = led.reserve("a", "copy", QUERY.format("copy"), Fraction(1, 4), Fraction(0), 0.5)
    assert led.budget("a", "orig").spent_epsilon == Fraction(1, 4)
    assert led.verify() == []  # the checkpoint moves past the member's entry
    led.cancel(e, "before the data")
    assert led.budget("a", "copy").spent_epsilon == 0
    assert led.dataset("orig").spent_epsilon == 0
    # (the information total was rounded up by one ulp when charged: it stays an upper bound)
    assert led.dataset("orig").info_spent_nats == pytest.approx(0, abs=1e-12)
    assert led.verify() == [] and led.check() == []
    led.close()
    assert store_ledger(db).check() == []  # opens from the moved checkpoint


@pytest.mark.slow
def test_an_accountant_budget_of_a_group_replays_from_both_datasets(tmp_path: Path) -> None:
    db = _grouped_store(tmp_path, budget=Budget.zcdp("0.5"))
    cur = Curator(db)
    cur.query("a", QUERY.format("copy"), epsilon="0.25")
    cur.query("a", QUERY.format("orig"), epsilon="0.25")
    # The full verification replays the accountant from the entries on both datasets.
    assert cur.ledger.verify() == []
    left = [cur.ledger.budget("a", d).accountant_json for d in ("orig", "copy")]
    assert left[0] == left[1] is not None
    cur.close()


# A query on the copy, killed once its cost is reserved and the data read (nothing released).
_VICTIM = textwrap.dedent(
    """
    import sys, time, pathlib
    from infodp.curator.engine import Curator
    marker = pathlib.Path(sys.argv[2])
    def hook(stage, entry):
        if stage == "aggregated":
            tmp = marker.with_suffix(".tmp")
            tmp.write_text(str(entry))
            tmp.replace(marker)
            time.sleep(600)
    Curator(sys.argv[1], _hook=hook).query("a", "SELECT COUNT(*) FROM copy", epsilon="0.25")
    print("RESULT LEFT THE PROCESS")
    """
)


@pytest.mark.slow  # a child process
def test_sigkill_mid_query_on_a_member_charges_the_group(tmp_path: Path) -> None:
    db = _grouped_store(tmp_path)
    out = kill_when_marked(_VICTIM, db, tmp_path / "marker")
    assert "RESULT" not in out
    led = store_ledger(db)
    (entry,) = led.entries()
    assert (entry.dataset, entry.status) == ("copy", "reserved")
    assert led.budget("a", "orig").spent_epsilon == Fraction(1, 4)  # lost budget, not privacy
    assert led.dataset("orig").spent_epsilon == Fraction(1, 4)
    assert led.check() == [] and led.verify() == []
    Curator(db).query("a", QUERY.format("orig"), epsilon="0.25")
    assert led.budget("a", "copy").spent_epsilon == Fraction(1, 2)


def _as_format_3(db: Path) -> None:
    """What a ledger of the previous format looks like: no group columns, no sketches."""
    _sql(
        db,
        "ALTER TABLE datasets DROP COLUMN budget_group",
        "ALTER TABLE datasets DROP COLUMN independent",
        "DROP TABLE unit_sketches",
        "DELETE FROM meta WHERE key = 'unit_salt'",
        "UPDATE meta SET value = '3' WHERE key = 'format'",
    )


@pytest.mark.slow
@sqlite_only("older formats exist only as SQLite files")
def test_a_store_of_the_previous_format_opens_keeps_working_and_is_sketched(
    tmp_path: Path,
    ledger_kind: str,
) -> None:
    db = tmp_path / "s.duckdb"
    cur = Curator(db)
    cur.register_dataset("orig", _frame(500), SCHEMA, max_epsilon=2)
    cur.add_analyst("a", "orig", epsilon=1)
    cur.query("a", QUERY.format("orig"), epsilon="0.25")
    cur.close()
    _as_format_3(db)
    cur = Curator(db)  # verified as format 3 (its seals checked), then migrated
    conn = sqlite3.connect(str(db) + ".ledger")
    assert conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0] == "5"
    conn.close()
    cur.query("a", QUERY.format("orig"), epsilon="0.25")
    assert cur.ledger.budget("a", "orig").spent_epsilon == Fraction(1, 2)
    assert cur.ledger.verify() == []
    assert [d.name for d in cur.ledger.unsketched()] == ["orig"]
    # The next registration sketches the old dataset first: its copy is recognised.
    with pytest.raises(ParameterError, match="in dataset 'orig'"):
        cur.register_dataset("copy", _frame(500, 1), SCHEMA)
    assert cur.ledger.unsketched() == []
    info = cur.register_dataset("copy", _frame(500, 1), SCHEMA, same_population_as="orig")
    assert info["shares_budgets_of"] == "orig"
    # a's grant of the old format covers orig alone; granted the copy, one budget for both.
    with pytest.raises(ParameterError, match="no budget on dataset 'copy'"):
        cur.ledger.budget("a", "copy")
    assert cur.add_analyst("a", "copy", epsilon=1) is None
    assert cur.ledger.budget("a", "copy").spent_epsilon == Fraction(1, 2)
    assert cur.ledger.verify() == []
    cur.close()


def _as_format_4(db: Path) -> None:
    """What a ledger of format 4 looks like: no access lists, the grants sealed without."""
    _sql(
        db,
        "ALTER TABLE analysts DROP COLUMN access",
        "UPDATE meta SET value = '4' WHERE key = 'format'",
    )
    conn = sqlite3.connect(str(db) + ".ledger")
    conn.row_factory = sqlite3.Row
    store_id = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0]
    with conn:
        for row in conn.execute("SELECT * FROM analysts").fetchall():
            conn.execute(
                "UPDATE meta SET value = ? WHERE key = ?",
                (integrity.analyst_seal(store_id, row), integrity.seal_key("analysts", row)),
            )
    conn.close()


@pytest.mark.slow
@sqlite_only("older formats exist only as SQLite files")
def test_a_format_4_store_keeps_its_groups_as_recorded_and_grants_as_named(
    tmp_path: Path,
    ledger_kind: str,
) -> None:
    """A group the sketch made in format 4 stays (now shown as recorded); a grant of
    format 4 covers the dataset it is stored on (the root), never the group's others."""
    db = tmp_path / "s.duckdb"
    cur = Curator(db)
    cur.register_dataset("orig", _frame(500), SCHEMA, max_epsilon=2)
    cur.register_dataset("copy", _frame(500, 1), SCHEMA, same_population_as="orig")
    cur.add_analyst("a", "orig", epsilon=1)
    cur.query("a", QUERY.format("orig"), epsilon="0.25")
    cur.close()
    _as_format_4(db)
    cur = Curator(db)  # verified as format 4 (its seals checked), then migrated
    assert cur.ledger.dataset("copy").budget_group == "orig"
    assert cur.ledger.group_members("orig") == ["copy", "orig"]
    assert [b.dataset for b in cur.ledger.budgets("a")] == ["orig"]
    with pytest.raises(ParameterError, match="no budget on dataset 'copy'"):
        cur.query("a", QUERY.format("copy"), epsilon="0.25")
    cur.query("a", QUERY.format("orig"), epsilon="0.25")
    assert cur.ledger.budget("a", "orig").spent_epsilon == Fraction(1, 2)
    assert cur.add_analyst("a", "copy", epsilon=1) is None
    cur.query("a", QUERY.format("copy"), epsilon="0.25")
    assert cur.ledger.dataset("orig").spent_epsilon == Fraction(3, 4)
    assert cur.ledger.verify() == []
    cur.close()


@pytest.mark.slow
def test_an_access_list_edited_by_hand_fails_verify_and_is_never_charged(tmp_path: Path) -> None:
    """b granted on the copy only; its row edited to cover orig too: the seal covers it."""
    db = _grouped_store(tmp_path)
    cur = Curator(db)
    cur.add_analyst("b", "copy", epsilon=1)
    cur.query("b", QUERY.format("copy"), epsilon="0.25")
    _sql(db, """UPDATE analysts SET access = '["copy", "orig"]' WHERE name = 'b'""")
    assert any("analyst b/orig was edited" in p for p in cur.ledger.verify())
    with pytest.raises(LedgerError, match="edited"):
        cur.query("b", QUERY.format("orig"), epsilon="0.25")
    cur.close()


@pytest.mark.slow
@sqlite_only("older formats exist only as SQLite files")
def test_an_edit_of_a_previous_format_ledger_is_still_caught(
    tmp_path: Path, ledger_kind: str
) -> None:
    db = _grouped_store(tmp_path)
    _sql(
        db,
        "DELETE FROM datasets WHERE name = 'copy'",
        "DELETE FROM meta WHERE key = 'seal [\"copy\"]'",
    )
    _as_format_3(db)
    _sql(db, "UPDATE datasets SET max_epsilon = '1000'")
    with pytest.raises(LedgerError, match="inconsistent"):
        store_ledger(db)


@pytest.mark.slow
@sqlite_only("it deletes the ledger file")
def test_a_reinitialised_ledger_restores_the_groups(tmp_path: Path, ledger_kind: str) -> None:
    db = _grouped_store(tmp_path)
    os.remove(str(db) + ".ledger")
    assert reinit_ledger(db)["datasets"] == ["orig", "copy"]  # the root first
    cur = Curator(db)
    assert cur.ledger.dataset("copy").budget_group == "orig"
    assert cur.ledger.verify() == []
    # The sketches are made again under the new salt at the next registration.
    assert {d.name for d in cur.ledger.unsketched()} == {"orig", "copy"}
    with pytest.raises(ParameterError, match="in dataset 'orig'"):
        cur.register_dataset("again", _frame(500, 2), SCHEMA)
    info = cur.register_dataset("again", _frame(500, 2), SCHEMA, same_population_as="copy")
    assert info["shares_budgets_of"] == "orig"
    cur.close()


def test_the_format_is_the_one_with_access_lists() -> None:
    assert integrity.FORMAT == "5" and integrity.SEALED_FORMATS == ("3", "4", "5")
