"""The ``registered_store`` fixture (conftest.py) hands each test a copy of a store made once
through the CLI: the copy must be a whole store, and copies must not share spending."""

from __future__ import annotations

import json

import pytest

from _cli_store import RegisterStore
from infodp.cli import main

BUDGETS = {"A": ["--epsilon", "1"], "Z": ["--currency", "zcdp", "--rho", "0.05"]}


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main([*args, "--json"]) == 0
    payload: dict[str, object] = json.loads(capsys.readouterr().out)
    return payload


def _spent(capsys: pytest.CaptureFixture[str], db: str) -> dict[str, str]:
    analysts = _json(capsys, "analyst", "list", "--db", db)["analysts"]
    assert isinstance(analysts, list)
    return {a["analyst"]: a["exact"]["spent_epsilon"] for a in analysts}


@pytest.mark.slow
def test_each_copy_is_a_whole_store_of_its_own(
    capsys: pytest.CaptureFixture[str], registered_store: RegisterStore
) -> None:
    first = registered_store(analysts=BUDGETS)
    second = registered_store(analysts=BUDGETS)
    assert first.db != second.db and first.keys == second.keys
    assert set(first.keys) == {"A", "Z"} and len(set(first.keys.values())) == 2
    for store in (first, second):
        assert _json(capsys, "ledger", "verify", "--db", store.db)["consistent"] is True
        datasets = _json(capsys, "dataset", "list", "--db", store.db)["datasets"]
        assert isinstance(datasets, list) and [d["name"] for d in datasets] == ["people"]
    listed = _json(capsys, "analyst", "list", "--db", first.db)["analysts"]
    assert isinstance(listed, list)
    (zcdp,) = [a for a in listed if a["analyst"] == "Z"]
    assert zcdp["accountant"]["budget"] == {"currency": "zcdp", "rho": 0.05}
    # What one copy spends, the other does not see.
    sql = "SELECT COUNT(*) FROM people"
    assert main(["query", "--db", first.db, "--analyst", "A", "--epsilon", "0.5", sql]) == 0
    capsys.readouterr()
    assert _spent(capsys, first.db) == {"A": "1/2", "Z": "0"}
    assert _spent(capsys, second.db) == {"A": "0", "Z": "0"}
    assert _spent(capsys, registered_store(analysts=BUDGETS).db) == {"A": "0", "Z": "0"}
