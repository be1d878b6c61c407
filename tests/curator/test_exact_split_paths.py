"""A query whose ε is split into 3 (or 6, 7) parts spends exactly the analyst's whole (ε, δ)
budget, through the library, the CLI and the service: the shares add to at most the whole,
and the accountant compares exact guarantees (it once refused ``SELECT sex, AVG(age) … GROUP
BY sex`` with a budget of exactly (1, 1e-5): three shares of 1/3 rounded up added to
1 + 2.2e-16)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _asgi import call
from _stores import TEXT, ints, make_store, one_table
from infodp.cli import main
from infodp.curator.engine import Curator
from infodp.server.app import ServerSettings, create_app

FRAME = pd.DataFrame({"sex": ["f", "m", "x"] * 40, "age": [20 + i % 50 for i in range(120)]})
SCHEMA = one_table("t", {"sex": TEXT, "age": ints(0, 99)})
#: Partition selection, then AVG's sum and count: ε split in three.
SQL = "SELECT sex, AVG(age) FROM t GROUP BY sex"


def _store(directory: Path, epsilon: str) -> tuple[str, str]:
    store = make_store(directory, "t", FRAME, SCHEMA, budget={"epsilon": epsilon, "delta": "1e-5"})
    return store.db, store.key


def _left(db: str) -> tuple[Any, Any]:
    cur = Curator(db)
    try:
        b = cur.ledger.budget("a", "t")
        return b.epsilon - b.spent_epsilon, b.delta - b.spent_delta
    finally:
        cur.close()


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", ["1", "2", "0.3"])
def test_the_whole_budget_is_spent_in_one_query_through_the_library(
    tmp_path: Path, epsilon: str
) -> None:
    db, _ = _store(tmp_path, epsilon)
    cur = Curator(db)
    try:
        result = cur.query("a", SQL, epsilon=epsilon, delta="1e-5")
    finally:
        cur.close()
    assert result.columns == ("sex", "AVG(age)")
    assert _left(db) == (0, 0)


@pytest.mark.slow
def test_the_whole_budget_is_spent_in_one_query_through_the_cli(
    tmp_path: Path, capsys: Any
) -> None:
    db, _ = _store(tmp_path, "1")
    args = ["query", "--db", db, "--analyst", "a", "--epsilon", "1", "--delta", "1e-5"]
    capsys.readouterr()
    assert main([*args, "--json", SQL]) == 0
    assert json.loads(capsys.readouterr().out)["columns"] == ["sex", "AVG(age)"]
    assert _left(db) == (0, 0)
    # ... and then nothing is left: the next query is refused with the over-budget status.
    assert main([*args, SQL]) == 3


@pytest.mark.slow
def test_the_whole_budget_is_spent_in_one_query_through_the_service(tmp_path: Path) -> None:
    db, key = _store(tmp_path, "1")
    app = create_app(ServerSettings(db))
    try:
        body = {"sql": SQL, "epsilon": "1", "delta": "1e-5"}
        r = call(app, "POST", "/v1/query", body, key=key)
        assert r.status_code == 200, r.text
        assert call(app, "POST", "/v1/query", body, key=key).status_code == 409
    finally:
        app.state.service.close()
    assert _left(db) == (0, 0)
