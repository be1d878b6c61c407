"""``infodp synth``: releases once, writes the rows, refuses for free with its message."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _stores import cats, ints, make_store, one_table, visits_population
from infodp.cli import main
from infodp.curator.engine import Curator

# Every test here fits a synthetic data model through the CLI: slow.
pytestmark = pytest.mark.slow


@pytest.fixture
def store(tmp_path: Path) -> str:
    db = str(tmp_path / "store.duckdb")
    cur = Curator(db)
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"age": rng.integers(0, 100, 300), "region": rng.choice(["n", "s"], 300)})
    cur.register_dataset(
        "people",
        frame,
        one_table("people", {"age": ints(0, 99), "region": cats("n", "s")}),
    )
    cur.add_analyst("alice", "people", epsilon=2, delta="1e-5")
    cur.close()
    return db


def _spent(db: str) -> Fraction:
    cur = Curator(db)
    try:
        return cur.ledger.budget("alice", "people").spent_epsilon
    finally:
        cur.close()


ARGS = ["--analyst", "alice", "--dataset", "people", "--name", "fake", "--delta", "1e-6"]


def test_synth_releases_writes_and_is_queried_for_free(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fake.csv"
    code = main(["synth", "--db", store, *ARGS, "--epsilon", "1", "--out", str(out), "--json"])
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["method"] == "aim" and "bits per person" in payload["explanation"]["summary"]
    assert len(pd.read_csv(out)) == payload["rows"]
    assert _spent(store) == 1
    assert (
        main(
            ["query", "--db", store, "--synopsis", "fake", "SELECT COUNT(*) FROM people", "--json"]
        )
        == 0
    )
    answer = json.loads(capsys.readouterr().out)
    assert answer["rows"] == [[payload["rows"]]] and answer["cost"]["epsilon"] == 0.0
    assert _spent(store) == 1


def test_synth_refuses_a_bad_output_path_before_spending(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["synth", "--db", store, *ARGS, "--epsilon", "1", "--out", "rows.txt"])
    assert code != 0
    assert "--out must be a path ending in .csv or .parquet" in capsys.readouterr().err
    assert _spent(store) == 0


def test_synth_text_output_states_the_cost_in_bits(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["synth", "--db", store, *ARGS, "--epsilon", "1", "--method", "mst"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("released synthetic table fake (mst, ")
    assert "bits per person" in text and "infodp query --synopsis fake" in text


def test_synth_releases_a_population_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frames, declaration = visits_population(200, 2, 2, seed=3)
    db = make_store(
        tmp_path, "clinic", frames, declaration, budget={"epsilon": 2, "delta": "1e-5"}
    ).db
    args = ["synth", "--db", db, "--analyst", "a", "--dataset", "clinic", "--name", "v"]
    code = main([*args, "--table", "visits", "--epsilon", "1", "--delta", "1e-6", "--json"])
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["columns"] == ["kind"] and payload["dataset"] == "clinic"
    # Without --table: refused for free, naming the tables to choose from.
    code = main([*args, "--epsilon", "1", "--delta", "1e-6"])
    assert code == 2
    assert "one of the population's private tables: people, visits" in capsys.readouterr().err
