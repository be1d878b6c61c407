"""Budget totals and grants are covered by the ledger's integrity checks.

An analyst's budget raised from 1 to 1000 by a direct SQL edit used to pass ``infodp ledger
verify`` as consistent, and a query of ε = 50 then ran. Every grant (an analyst's budget,
the accountant's budget, the key hash; a dataset's caps) now carries a seal written with it:
an edit fails verification, stops the ledger at open, and a curator that opened the ledger
before the edit refuses to charge against it. Ledgers written before seals are sealed at
their first open (format 2 -> 3).
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from _cli_errors import json_error
from _ledgers import LedgerAt, ledger_of, raw_rows, run, store_ledger
from _stores import ints, make_store, one_table
from infodp.accounting.accountant import Accountant, Budget
from infodp.cli import main
from infodp.curator.engine import Curator
from infodp.curator.ledger import Ledger, integrity
from infodp.errors import LedgerError

SCHEMA = one_table("t", {"x": ints(0, 9)})
QUERY = "SELECT COUNT(*) FROM t"

# Every test on both ledger storages (SQLite, PostgreSQL: tests/conftest.py).
pytestmark = pytest.mark.usefixtures("ledger_kind")


def _store(tmp_path: Path, **budget: object) -> Path:
    frame = pd.DataFrame({"x": list(range(10)) * 3})
    return Path(make_store(tmp_path, "t", frame, SCHEMA, budget=budget, file="s.duckdb").db)


def _sql(db: Path, statement: str, *args: object) -> None:
    run(ledger_of(db), statement, *args)


def _spent(db: Path) -> str:
    ((spent,),) = raw_rows(ledger_of(db), "SELECT spent_epsilon FROM analysts WHERE name = 'a'")
    return str(spent)


@pytest.mark.slow
def test_a_budget_raised_by_sql_fails_verify_and_is_never_charged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _store(tmp_path, epsilon=1)
    live = Curator(db)  # opened before the edit: its reservations must check the grant too
    _sql(db, "UPDATE analysts SET epsilon = '1000' WHERE name = 'a'")
    capsys.readouterr()
    assert main(["ledger", "verify", "--db", str(db), "--json"]) == 2
    out, err = capsys.readouterr()
    error = json_error(out, err, 2)
    assert error["kind"] == "ledger" and "grant of analyst a/t was edited" in err
    with pytest.raises(LedgerError, match="edited"):
        live.query("a", QUERY, epsilon=50)
    with pytest.raises(LedgerError, match="edited"):
        Curator(db).query("a", QUERY, epsilon=50)
    assert _spent(db) == "0"  # nothing was charged
    assert [e.status for e in live.ledger.entries()] == []
    live.close()


@pytest.mark.slow
def test_an_accountant_budget_edited_consistently_is_still_refused(tmp_path: Path) -> None:
    """Both copies of an approx budget raised together (the state and its budget text)."""
    db = _store(tmp_path, budget=Budget.approx(1, "1e-6"))
    live = Curator(db)
    state = json.loads(live.ledger.budget("a", "t").accountant_json or "")
    state["budget"]["epsilon"] = 1000
    _sql(
        db,
        "UPDATE analysts SET accountant_json = ?, budget_json = ? WHERE name = 'a'",
        json.dumps(state, sort_keys=True),
        json.dumps(state["budget"]),
    )
    with pytest.raises(LedgerError, match="edited"):
        live.query("a", QUERY, epsilon=50)
    with pytest.raises(LedgerError, match="grant of analyst a/t was edited"):
        store_ledger(db)
    live.close()


@pytest.mark.slow
def test_an_accountant_state_whose_budget_differs_from_the_grant_is_refused(
    tmp_path: Path,
) -> None:
    """Only the state's own copy of the budget raised: the seal holds, the spend refuses."""
    db = _store(tmp_path, budget=Budget.pure(1))
    live = Curator(db)
    _sql(
        db,
        "UPDATE analysts SET accountant_json = ? WHERE name = 'a'",
        Accountant(Budget.pure(1000)).to_json(),
    )
    with pytest.raises(LedgerError, match="edited"):
        live.query("a", QUERY, epsilon=50)
    assert _spent(db) == "0"
    live.close()


@pytest.mark.parametrize(
    "edit",
    [
        "UPDATE datasets SET max_epsilon = '1000'",
        "UPDATE datasets SET info_cap_bits = 1e9",
        "UPDATE analysts SET delta = '1/2'",
        "UPDATE analysts SET key_hash = 'x'",
        "DELETE FROM analysts",
        "DELETE FROM meta WHERE key LIKE 'seal %'",
    ],
)
def test_every_grant_and_cap_is_sealed(tmp_path: Path, ledger_at: LedgerAt, edit: str) -> None:
    path = ledger_at(tmp_path / "l.ledger")
    led = Ledger(path)
    led.register_dataset("t", "{}", rows=3, source="-", info_cap_bits=5, max_epsilon=Fraction(2))
    led.add_analyst("a", "t", Fraction(1), Fraction(0))
    assert led.verify() == []
    led.close()
    run(path, edit)
    with pytest.raises(LedgerError, match="inconsistent"):
        Ledger(path)


def _as_format_2(db: Path) -> None:
    """What a ledger written before seals looks like: no seals, format 2."""
    _sql(db, "DELETE FROM meta WHERE key LIKE 'seal %'")
    _sql(db, "UPDATE meta SET value = '2' WHERE key = 'format'")


@pytest.mark.slow
def test_a_ledger_before_seals_is_sealed_at_its_first_open(tmp_path: Path) -> None:
    db = _store(tmp_path, epsilon=1)
    _as_format_2(db)
    led = store_ledger(db)  # sealed as found (its chain and totals verified)
    assert led.verify() == []
    led.close()
    meta = dict(raw_rows(ledger_of(db), "SELECT key, value FROM meta"))
    assert meta["format"] == integrity.FORMAT
    assert {k for k in meta if k.startswith("seal ")} == {'seal ["a", "t"]', 'seal ["t"]'}
    _sql(db, "UPDATE analysts SET epsilon = '1000'")  # from now on an edit is caught
    with pytest.raises(LedgerError, match="edited"):
        store_ledger(db)


def test_a_ledger_of_a_newer_format_is_refused(tmp_path: Path) -> None:
    db = _store(tmp_path, epsilon=1)
    _sql(db, "UPDATE meta SET value = '9' WHERE key = 'format'")
    with pytest.raises(LedgerError, match="format 9"):
        store_ledger(db)


@pytest.mark.slow
def test_a_sealed_budget_is_charged_as_before(tmp_path: Path) -> None:
    db = _store(tmp_path, epsilon=1)
    cur = Curator(db)
    cur.query("a", QUERY, epsilon="0.25")
    assert cur.ledger.budget("a", "t").spent_epsilon == Fraction(1, 4)
    assert cur.ledger.verify() == []
    cur.close()
