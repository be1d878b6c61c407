"""Opening a ledger costs O(entries since the verified checkpoint), not O(history).

The guarantees, checked here against edits of the file: at open, the hash chain of the entries
after the checkpoint, the checkpoint entry's own link, the head (a dropped tail entry is seen)
and the stored spends against the checkpoint's sums plus the later entries; the whole history
(chain, sums, every accountant state against a replay of its entries) is verified by
``Ledger.verify()`` / ``infodp ledger verify``, which then moves the checkpoint to the head.
An edit of an entry *before* the checkpoint that also keeps every sum consistent is found by
the full verification only (docs/curator.md, "Integrity").
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from _cli_errors import json_error
from _ledgers import LedgerAt, edit, ledger_of
from _stores import one_table
from infodp.accounting.accountant import Accountant, Budget
from infodp.cli import main
from infodp.curator.ledger import Ledger, integrity
from infodp.errors import LedgerError

_SPEC = {"mechanism": "pure-dp", "epsilon": 0.01}


def _filled(path: Path, n: int, *, accountant: bool = False) -> Ledger:
    led = Ledger(path)
    led.register_dataset("t", "{}", rows=3, source="-")
    state = Accountant(Budget.pure("100")).to_json() if accountant else None
    led.add_analyst("a", "t", Fraction(100), Fraction(0), accountant_json=state)
    for i in range(n):
        led.reserve("a", "t", f"q{i}", Fraction(1, 100), Fraction(0), 0.0, profile_spec=_SPEC)
    led.close()
    return led


def _count_links(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = integrity.chain

    def counting(*args: object) -> str:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(integrity, "chain", counting)
    return calls


def _sql(path: Path | str, *statements: str) -> None:
    edit(path, *statements)


def test_open_verifies_only_the_entries_after_the_checkpoint(
    tmp_path: Path, ledger_at: LedgerAt, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = ledger_at(tmp_path / "l.ledger")
    _filled(path, 300)
    calls = _count_links(monkeypatch)
    Ledger(path).close()  # 300 unverified entries: verified once, the checkpoint moves
    assert len(calls) == 300
    calls.clear()
    Ledger(path).close()
    assert calls == []  # nothing after the checkpoint: open is independent of the history
    led = Ledger(path)
    led.reserve("a", "t", "more", Fraction(1, 100), Fraction(0), 0.0, profile_spec=_SPEC)
    led.close()
    calls.clear()
    Ledger(path).close()
    assert len(calls) == 1
    assert Ledger(path).verify() == []  # the full check still covers everything


@pytest.mark.slow
@pytest.mark.parametrize(
    ("damage", "at_open"),
    [
        ("UPDATE entries SET sql = 'x' WHERE id = 310", True),  # after the checkpoint
        ("DELETE FROM entries WHERE id = (SELECT max(id) FROM entries)", True),  # dropped tail
        ("UPDATE analysts SET spent_epsilon = '0'", True),  # a lowered spend
        ("UPDATE meta SET value = replace(value, '\"3\"', '\"2\"') WHERE key = 'checkpoint'", True),
        ("UPDATE entries SET chain = 'x' WHERE id = 300", True),  # the checkpoint's own entry
        # before the checkpoint, sums kept consistent: only the full verification sees it
        ("UPDATE entries SET sql = 'x' WHERE id = 5", False),
    ],
)
def test_damage_is_found_at_open_or_by_the_full_verification(
    tmp_path: Path, ledger_at: LedgerAt, damage: str, at_open: bool
) -> None:
    path = ledger_at(tmp_path / "l.ledger")
    _filled(path, 300)
    Ledger(path).close()  # checkpoint at entry 300
    led = Ledger(path)
    for i in range(10):
        led.reserve("a", "t", f"r{i}", Fraction(1, 100), Fraction(0), 0.0, profile_spec=_SPEC)
    led.close()
    _sql(path, damage)
    if at_open:
        with pytest.raises(LedgerError, match="ledger"):
            Ledger(path)
    else:
        problems = Ledger(path).verify()
        assert problems and "hash chain" in problems[0]


def test_a_cancel_before_the_checkpoint_keeps_the_ledger_consistent(
    tmp_path: Path, ledger_at: LedgerAt
) -> None:
    path = ledger_at(tmp_path / "l.ledger")
    led = _filled(path, 70)
    first = led.reserve("a", "t", "late", Fraction(1, 10), Fraction(0), 0.0, profile_spec=_SPEC)
    Ledger(path).close()  # the checkpoint moves past the reserved entry
    led.cancel(first, "store not opened")
    led.close()
    fresh = Ledger(path)
    assert fresh.verify() == []
    assert fresh.budget("a", "t").spent_epsilon == Fraction(70, 100)


def test_accountant_states_are_checked_against_their_entries(
    tmp_path: Path, ledger_at: LedgerAt
) -> None:
    path = ledger_at(tmp_path / "l.ledger")
    _filled(path, 3, accountant=True)
    state = json.loads(Ledger(path).budget("a", "t").accountant_json or "")
    state["spent"][0]["count"] = 2
    state["totals"] = ["1/50"]
    _sql(path, f"UPDATE analysts SET accountant_json = '{json.dumps(state)}'")
    problems = Ledger(path).verify()
    assert any("accountant state" in p for p in problems)


@pytest.mark.slow
def test_cli_ledger_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pandas as pd

    from infodp.curator.engine import Curator

    db = tmp_path / "s.duckdb"
    cur = Curator(db)
    schema = one_table("t", {"x": {"type": "int"}})
    schema["columns"]["x"]["bounds"] = [0, 9]  # type: ignore[index]
    cur.register_dataset("t", pd.DataFrame({"x": list(range(10))}), schema)
    cur.add_analyst("a", "t", epsilon=1)
    cur.query("a", "SELECT COUNT(*) FROM t", epsilon="0.5")
    cur.close()
    capsys.readouterr()
    assert main(["ledger", "verify", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"db": str(db), "consistent": True}
    _sql(ledger_of(db), "UPDATE entries SET sql = 'x' WHERE id = 1")
    assert main(["ledger", "verify", "--db", str(db), "--json"]) == 2
    out, err = capsys.readouterr()
    assert "ledger" in err and json_error(out, err, 2)["kind"] == "ledger"
