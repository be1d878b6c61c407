"""Public facts are declared, never measured (task "the curator leaks through side doors", item 2).

Under add/remove neighbours (Dwork & Roth 2014, Def. 2.4 with the unit as the individual) the
row count N is private: any output that is a function of N separates two neighbouring tables
with certainty. The tests build pairs of stores whose tables differ in exactly one privacy unit
and check that every cost object, estimate, dataset listing and refusal is identical across the
pair; information about the whole table and δ·N use only a bound the owner declared.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from _asgi import call
from _stores import BuiltOnce
from infodp.cli import main
from infodp.curator.engine import Curator
from infodp.curator.rules.budget_info import discrete_laplace_information
from infodp.errors import ParameterError
from infodp.mechanisms.sampling import InsecureSeededSource
from infodp.server.app import ServerSettings, create_app

REGIONS = ["n", "s", "e", "w"]


def schema(table: str = "people", **public: int) -> dict[str, Any]:
    return {
        "table": table,
        "privacy_unit": "person_id",
        "max_rows_per_unit": 2,
        **public,
        "columns": {
            "age": {"type": "int", "bounds": [0, 99]},
            "income": {"type": "float", "bounds": [0, 1000], "nulls": "drop"},
            "region": {"type": "category", "categories": REGIONS},
            "city": {"type": "text"},
        },
    }


def frame(units: int, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(units):
        for _ in range(1 + u % 2):  # units with one and with two rows
            rows.append(
                {
                    "person_id": u,
                    "age": int(rng.integers(0, 100)),
                    "income": float(rng.uniform(0, 1000)),
                    "region": REGIONS[int(rng.integers(0, 4))],
                    "city": f"c{int(rng.integers(0, 6))}",
                }
            )
    return pd.DataFrame(rows)


#: Each pair built so far, by its declared facts (the folder holds its four files; the
#: analysts' keys). Tests write to their stores, so each gets a copy.
_PAIRS = BuiltOnce[dict[str, str]]("pairs")
_pairs_folder = _PAIRS.fixture()


def neighbours(tmp_path: Path, **public: int) -> tuple[Curator, Curator, dict[str, str]]:
    """Two stores: ``people`` with 40 units, and the same without the last unit (2 rows).

    Built once per module for each ``public``; each call opens a fresh copy in ``tmp_path``
    (copying the files costs far less than registering the four datasets again)."""
    facts = tuple(sorted(public.items()))
    keys = _PAIRS.copy(facts, lambda folder: _build(folder, **public), tmp_path)
    a, b = (
        Curator(
            tmp_path / f"{name}.duckdb",
            source=InsecureSeededSource(11, i_understand_this_is_not_private=True),
        )
        for name in ("full", "less")
    )
    return a, b, dict(keys)


def _build(directory: Path, **public: int) -> dict[str, str]:
    """The two stores of :func:`neighbours` in ``directory`` (closed); the analysts' keys."""
    full = frame(40)
    less = full[full["person_id"] != 39]
    assert len(full) - len(less) == 2
    keys: dict[str, str] = {}
    for name, data in (("full", full), ("less", less)):
        cur = Curator(
            directory / f"{name}.duckdb",
            source=InsecureSeededSource(11, i_understand_this_is_not_private=True),
        )
        cur.register_dataset("people", data, schema(**public))
        # The same people: declared independent, so it does not share people's budgets
        # (a foreign dataset alice holds nothing on).
        cur.register_dataset(
            "visits",
            data.assign(age=data["age"] // 2),
            schema("visits", **public),
            independent=True,
        )
        keys[name] = cur.add_analyst("alice", "people", epsilon=100, delta="0.01")
        cur.add_analyst("bob", "visits", epsilon=100)
        cur.close()
    return keys


QUERIES: list[tuple[str, str, str]] = [
    ("SELECT COUNT(*) FROM people", "0.5", "0"),
    ("SELECT SUM(age), AVG(income) FROM people", "0.5", "0"),
    ("SELECT region, COUNT(*), STDDEV(age) FROM people GROUP BY region", "1", "0"),
    ("SELECT MEDIAN(age) FROM people WHERE region = 'n'", "0.25", "0"),
    ("SELECT QUANTILE(income, 0.9) FROM people", "0.25", "0"),
    ("SELECT city, COUNT(*) FROM people GROUP BY city", "1", "0.000001"),
]


@pytest.mark.slow  # ~0.8 CPU-s (measured)
@pytest.mark.parametrize("public", [{}, {"public_max_rows": 1000}])
def test_neighbouring_stores_give_identical_costs(tmp_path: Path, public: dict[str, int]) -> None:
    a, b, _ = neighbours(tmp_path, **public)
    for sql, eps, dlt in QUERIES:
        ra = a.query("alice", sql, epsilon=eps, delta=dlt)
        rb = b.query("alice", sql, epsilon=eps, delta=dlt)
        assert ra.to_dict()["cost"] == rb.to_dict()["cost"], sql
        ea, eb = a.ledger.entry(ra.entry_id), b.ledger.entry(rb.entry_id)
        assert (ea.epsilon, ea.delta, ea.info_nats) == (eb.epsilon, eb.delta, eb.info_nats)
    assert a.ledger.budget("alice", "people") == b.ledger.budget("alice", "people")


@pytest.mark.slow  # ~1.0 CPU-s (measured)
def test_information_uses_the_declared_bound_only(tmp_path: Path) -> None:
    a, _, _ = neighbours(tmp_path, public_max_rows=1000)
    cost = a.query("alice", "SELECT COUNT(*) FROM people", epsilon="0.5").cost
    # One count of a table with at most 1000 rows, m = 2, discrete Laplace of scale 2/0.5
    # (budget_info: the channel's information for an input range of the declared width).
    assert cost.information_nats == pytest.approx(
        discrete_laplace_information(1000.0, 4.0), rel=1e-12
    )
    assert "1000 rows" in cost.to_dict()["information_scope"]
    c, _, _ = neighbours(tmp_path / "undeclared")
    undeclared = c.query("alice", "SELECT COUNT(*) FROM people", epsilon="0.5").cost
    assert undeclared.information_nats == math.inf
    assert "per individual only" in undeclared.to_dict()["information_scope"]
    # δ·N in explain's summary: the declared bound, never N (here 59 or 57 rows).
    sel = "SELECT city, COUNT(*) FROM people GROUP BY city"
    leak = a.query("alice", sel, epsilon="1", delta="0.000001").leakage
    # explain reports δ·N for the (ε, δ) pair its summary is about (Explanation.delta).
    assert leak["expected_exposed_individuals"] == pytest.approx(leak["delta"] * 1000)
    leak = c.query("alice", sel, epsilon="1", delta="0.000001").leakage
    assert "expected_exposed_individuals" not in leak


@pytest.mark.slow
def test_declared_facts_must_be_true(tmp_path: Path) -> None:
    data = frame(10)  # 15 rows
    cur = Curator(tmp_path / "s.duckdb")
    with pytest.raises(ParameterError, match="public_rows"):
        cur.register_dataset("people", data, schema(public_rows=14))
    with pytest.raises(ParameterError, match="public_max_rows"):
        cur.register_dataset("people", data, schema(public_max_rows=14))
    with pytest.raises(ParameterError, match="public_max_rows"):
        cur.register_dataset("people", data, schema(public_rows=15, public_max_rows=10))
    with pytest.raises(ParameterError, match="non-negative integer"):
        cur.register_dataset("people", data, schema(public_rows=15.0))  # type: ignore[arg-type]
    info = cur.register_dataset("people", data, schema(public_rows=15))
    assert info["rows"] == 15  # the owner sees the count
    assert cur.plan("SELECT COUNT(*) FROM people")[2] == 15
    with pytest.raises(ParameterError, match="public row"):
        cur.register_dataset("v", data, schema("v"), info_cap_bits=10)


def _apps(tmp_path: Path, **public: int) -> tuple[Any, Any, dict[str, str]]:
    a, b, keys = neighbours(tmp_path, **public)
    return create_app(ServerSettings(str(a.db))), create_app(ServerSettings(str(b.db))), keys


@pytest.mark.slow  # ~0.9 CPU-s (measured)
def test_estimates_and_listings_are_identical_and_hide_n(tmp_path: Path) -> None:
    app_a, app_b, keys = _apps(tmp_path)
    for sql, eps, dlt in QUERIES:
        body = {"sql": sql, "epsilon": eps, "delta": dlt}
        ra = call(app_a, "POST", "/v1/estimate", body, key=keys["full"])
        rb = call(app_b, "POST", "/v1/estimate", body, key=keys["less"])
        assert ra.status_code == rb.status_code == 200
        assert ra.json() == rb.json(), sql
    for path in ("/v1/datasets", "/v1/datasets/people", "/v1/budget"):
        ra = call(app_a, "GET", path, key=keys["full"])
        rb = call(app_b, "GET", path, key=keys["less"])
        assert ra.status_code == rb.status_code == 200
        assert ra.json() == rb.json(), path
    listing = call(app_a, "GET", "/v1/datasets", key=keys["full"]).json()
    # Only the dataset alice holds a budget on, and no measured row count in it.
    assert [d["name"] for d in listing["datasets"]] == ["people"]
    assert listing["datasets"][0]["public_rows"] is None
    assert '"rows"' not in json.dumps(listing)


@pytest.mark.slow  # ~0.7 CPU-s (measured)
def test_foreign_and_missing_datasets_look_the_same(tmp_path: Path) -> None:
    app, _, keys = _apps(tmp_path)
    key = keys["full"]
    for make in (
        lambda n: ("GET", f"/v1/datasets/{n}", None),
        lambda n: ("POST", "/v1/query", {"sql": f"SELECT COUNT(*) FROM {n}", "epsilon": 0.1}),
        lambda n: ("POST", "/v1/estimate", {"sql": f"SELECT COUNT(*) FROM {n}", "epsilon": 0.1}),
        lambda n: (
            "POST",
            "/v1/synopses",
            {"name": "s", "dataset": n, "columns": ["region"], "epsilon": 0.1},
        ),
    ):
        # 'visits' exists (bob's); 'vizits' does not. Same name length, same answer shape.
        method, path, body = make("visits")
        foreign = call(app, method, path, body, key=key)
        method, path, body = make("vizits")
        missing = call(app, method, path, body, key=key)
        assert foreign.status_code == missing.status_code and foreign.status_code in (403, 404)
        assert foreign.text.replace("visits", "vizits") == missing.text, path


@pytest.mark.slow  # ~0.6 CPU-s (measured)
def test_synopsis_names_do_not_leak_across_datasets(tmp_path: Path) -> None:
    a, _, _ = neighbours(tmp_path)
    a.release_synopsis("bob", "regions", "visits", ["region"], epsilon="0.5")
    # alice (no budget on visits) can use the same name on her dataset: no collision error.
    a.release_synopsis("alice", "regions", "people", ["region"], epsilon="0.5")
    with pytest.raises(ParameterError, match="not used yet on people"):
        a.release_synopsis("alice", "regions", "people", ["region"], epsilon="0.5")
    with pytest.raises(ParameterError) as err:
        a.query_synopsis("nope", "SELECT COUNT(*) FROM people", dataset="people")
    assert "regions" not in str(err.value)
    app = create_app(ServerSettings(str(a.db)))
    alice = a.ledger.issue_key("alice")
    r = call(
        app, "POST", "/v1/synopses/regions/query", {"sql": "SELECT COUNT(*) FROM people"}, key=alice
    )
    assert r.status_code == 200
    listed = call(app, "GET", "/v1/synopses", key=alice).json()["synopses"]
    assert [(s["name"], s["dataset"]) for s in listed] == [("regions", "people")]


@pytest.mark.slow  # ~0.6 CPU-s (measured)
def test_open_per_query_errors_do_not_quote_the_store_path(tmp_path: Path) -> None:
    a, _, keys = neighbours(tmp_path)
    app = create_app(ServerSettings(str(a.db), keep_open=False))
    body = {"sql": "SELECT COUNT(*) FROM people", "epsilon": 0.1}
    assert call(app, "POST", "/v1/query", body, key=keys["full"]).status_code == 200
    a.close()
    a.db.rename(tmp_path / "moved.duckdb")
    r = call(app, "POST", "/v1/query", body, key=keys["full"])
    assert r.status_code >= 400
    assert str(tmp_path) not in r.text and ".duckdb" not in r.text


@pytest.mark.slow  # ~0.6 CPU-s (measured)
def test_cli_costs_are_identical_across_the_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, _ = neighbours(tmp_path)
    costs = []
    for cur in (a, b):
        cur.close()
        capsys.readouterr()
        argv = ["query", "--db", str(cur.db), "--analyst", "alice", "--epsilon", "0.5", "--json"]
        assert main([*argv, "SELECT region, AVG(age) FROM people GROUP BY region"]) == 0
        costs.append(json.loads(capsys.readouterr().out)["cost"])
    assert costs[0] == costs[1]
