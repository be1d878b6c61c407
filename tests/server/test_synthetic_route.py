"""POST /v1/synopses/synthetic: charged once, refused for free, padded to the answer time, and
answered from for free by the synopsis query route."""

from __future__ import annotations

import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _asgi import call
from _stores import cats, ints, make_store, one_table, visits_population
from infodp.curator.engine import Curator
from infodp.server.app import ServerSettings, create_app

# Every test here fits a synthetic data model through the service: slow.
pytestmark = pytest.mark.slow


@pytest.fixture
def world(tmp_path: Path) -> tuple[str, str]:
    db = str(tmp_path / "store.duckdb")
    cur = Curator(db)
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(
        {"age": rng.integers(0, 100, 400), "region": rng.choice(["north", "south"], 400)}
    )
    cur.register_dataset(
        "people",
        frame,
        one_table("people", {"age": ints(0, 99), "region": cats("north", "south")}),
    )
    key = cur.add_analyst("alice", "people", epsilon=3, delta="1e-5")
    cur.close()
    assert key is not None
    return db, key


def _left(app: object, key: str) -> Fraction:
    budgets = call(app, "GET", "/v1/budget", key=key).json()["budgets"]
    exact = budgets[0]["exact"]
    return Fraction(exact["epsilon"]) - Fraction(exact["spent_epsilon"])


def test_release_is_charged_padded_and_queried_for_free(world: tuple[str, str]) -> None:
    db, key = world
    app = create_app(ServerSettings(db, answer_time=0.5))
    body = {"name": "fake", "dataset": "people", "epsilon": 1, "delta": 1e-6, "method": "mst"}
    started = time.monotonic()
    r = call(app, "POST", "/v1/synopses/synthetic", body, key=key)
    assert r.status_code == 200, r.text
    assert time.monotonic() - started >= 0.5  # answered no earlier than the answer time
    payload = r.json()
    assert payload["rows"] > 0 and sorted(payload["columns"]) == ["age", "region"]
    assert "bits per person" in payload["explanation"]["summary"]
    assert _left(app, key) == 2
    q = call(
        app,
        "POST",
        "/v1/synopses/fake/query",
        {"sql": "SELECT COUNT(*) AS n FROM people"},
        key=key,
    )
    assert q.status_code == 200, q.text
    assert q.json()["rows"] == [[payload["rows"]]]
    assert q.json()["cost"]["note"] == "post-processing of synthetic table fake: free"
    assert _left(app, key) == 2


@pytest.mark.parametrize(
    ("change", "status", "message"),
    [
        ({"epsilon": 5}, 409, "budget"),
        ({"columns": ["age", "nope"]}, 400, "nope"),
        ({"delta": 0}, 400, "delta must be a positive finite number; got 0"),
    ],
    ids=["over_budget", "unknown_column", "no_delta"],
)
def test_refusals_charge_nothing(
    world: tuple[str, str], change: dict[str, object], status: int, message: str
) -> None:
    db, key = world
    app = create_app(ServerSettings(db, answer_time=0))
    body = {"name": "fake", "dataset": "people", "epsilon": 1, "delta": 1e-6, **change}
    r = call(app, "POST", "/v1/synopses/synthetic", body, key=key)
    assert r.status_code == status, r.text
    assert message in r.json()["error"]["message"]
    assert _left(app, key) == 3


def test_a_population_table_is_released_over_http(tmp_path: Path) -> None:
    frames, declaration = visits_population(300, 2, 2, seed=4)
    store = make_store(
        tmp_path, "clinic", frames, declaration, budget={"epsilon": 3, "delta": "1e-5"}
    )
    app = create_app(ServerSettings(store.db))
    body = {"name": "v", "dataset": "clinic", "table": "visits", "epsilon": 1, "delta": 1e-6}
    r = call(app, "POST", "/v1/synopses/synthetic", body, key=store.key)
    assert r.status_code == 200, r.text
    assert r.json()["columns"] == ["kind"]
    q = call(
        app,
        "POST",
        "/v1/synopses/v/query",
        {"sql": "SELECT COUNT(*) AS n FROM visits"},
        key=store.key,
    )
    assert q.status_code == 200, q.text
    assert q.json()["rows"] == [[r.json()["rows"]]]
    refused = call(app, "POST", "/v1/synopses/synthetic", {**body, "table": None}, key=store.key)
    assert refused.status_code == 400
    assert "one of the population's private tables: people, visits" in refused.text
    assert _left(app, store.key) == 2
