"""The demo session on a small census (the 1M-row table is for `infodp demo` only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infodp.cli import main
from infodp.curator.demo import (
    CENSUS_SCHEMA,
    STORE_ANALYST,
    census_frame,
    next_commands,
    run_demo,
)


def test_census_is_reproducible_and_plausible() -> None:
    a, b = census_frame(20000, seed=1), census_frame(20000, seed=1)
    assert a.equals(b)
    # declared domains hold (schema = public metadata)
    for name, spec in CENSUS_SCHEMA["columns"].items():
        if "categories" in spec:
            assert set(a[name].unique()) <= set(spec["categories"])
        else:
            low, high = spec["bounds"]
            vals = a[name].dropna()
            assert vals.between(low, high).all() or name == "income"
    # prevalence rises with age (the generator's documented design)
    old = (a.loc[a.age >= 65, "diagnosis"] != "none").mean()
    young = (a.loc[a.age < 30, "diagnosis"] != "none").mean()
    assert old > young + 0.1
    assert 0.005 < a.income.isna().mean() < 0.02


@pytest.mark.slow  # ~0.6 CPU-s (measured)
def test_demo_session_runs_and_caches_the_table(tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    lines: list[str] = []
    first = run_demo(db, False, lines.append, rows=20000)
    assert first["created_table"] and first["rows"] == 20000
    assert first["refused"]["exit_status"] == 3 and "short by" in first["refused"]["error"]
    assert len(first["queries"]) == 4
    assert any("Over-budget query refused" in line for line in lines)
    # every answer carries intervals, cost and leakage
    for q in first["queries"]:
        assert q["cost"]["leakage"]["bits"]["inf"] > 0
        assert len(q["rows"]) == len(q["confidence_intervals"])
    second = run_demo(db, True, None, rows=20000)
    assert not second["created_table"] and second["analyst"] == first["analyst"]
    json.dumps(second)  # JSON-able
    # Repeatable: every run spends the same ε (0.3 + 0.3 + 0.2 + 0.2 + synopsis 0.5 = 1.5,
    # basic composition) and reports the same table total; the store keeps its own ledger
    # (which the demo's session never charges).
    assert second["remaining"]["spent_epsilon"] == first["remaining"]["spent_epsilon"] == 1.5
    assert second["table_information_bits"] == first["table_information_bits"]
    assert second["synopsis"]["name"] == first["synopsis"]["name"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.duckdb", "demo.duckdb.ledger"]


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_demo_store_answers_ledger_and_query_afterwards(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "infodp-demo.duckdb")
    lines: list[str] = []
    result = run_demo(db, False, lines.append, rows=2000)
    # Every command the demo prints runs on its store.
    assert result["next_commands"] == next_commands(db)
    assert any("infodp ledger --db" in line for line in lines)
    code, out, err = _cli(capsys, "ledger", "--db", db, "--json")
    assert code == 0, err
    ledger = json.loads(out)
    assert ledger["consistent"] and [d["name"] for d in ledger["datasets"]] == ["census"]
    # The demo's own session ran on a ledger of its own: the store's ledger is unspent.
    assert ledger["entries"] == []
    sql = "SELECT region, COUNT(*) FROM census GROUP BY region"
    code, out, err = _cli(
        capsys, "query", "--db", db, "--analyst", STORE_ANALYST, "--epsilon", "0.1", "--json", sql
    )
    assert code == 0, err
    assert json.loads(out)["cost"]["epsilon"] == 0.1
    code, out, _ = _cli(capsys, "ledger", "--db", db, "--json")
    assert code == 0 and len(json.loads(out)["entries"]) == 1


@pytest.mark.slow
def test_older_demo_store_without_ledger_gets_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "infodp-demo.duckdb"
    run_demo(db, True, None, rows=2000)
    for p in tmp_path.glob("*.ledger*"):
        p.unlink()  # as the demo used to leave its store: the census, no ledger
    again = run_demo(db, True, None, rows=2000)
    assert not again["created_table"]
    code, out, err = _cli(capsys, "ledger", "--db", str(db), "--json")
    assert code == 0, err
    assert json.loads(out)["consistent"]


@pytest.mark.slow  # real server processes
def test_demo_store_is_served_afterwards(tmp_path: Path) -> None:
    from _server_harness import ServerProcess, get_json
    from infodp.server.auth import KeyStore, key_store_path

    db = str(tmp_path / "infodp-demo.duckdb")
    run_demo(db, True, None, rows=2000)
    key = KeyStore(key_store_path(db)).issue(STORE_ANALYST)
    with ServerProcess(db, workers=1) as server:  # `infodp serve --db` on the demo's store
        body = {"sql": "SELECT COUNT(*) FROM census", "epsilon": "0.1"}
        status, payload, _ = get_json(server.port, "POST", "/v1/query", body, key=key)
    assert status == 200, payload
    assert payload["cost"]["epsilon"] == 0.1
