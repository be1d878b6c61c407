"""The demo session on a small census (the 1M-row table is for `infodp demo` only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infodp.curator.demo import CENSUS_SCHEMA, census_frame, run_demo


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
    # basic composition) and reports the same table total; no ledger file is left behind.
    assert second["remaining"]["spent_epsilon"] == first["remaining"]["spent_epsilon"] == 1.5
    assert second["table_information_bits"] == first["table_information_bits"]
    assert second["synopsis"]["name"] == first["synopsis"]["name"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.duckdb"]
