"""Curator.release_synthetic: charged once like a query, refused for free, stored as a synopsis
that answers SQL for free, exported, explained in bits per person."""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from _stores import cats, floats, ints, make_store, one_table, visits_population
from infodp.curator import Curator
from infodp.errors import BudgetExceeded, ParameterError
from infodp.mechanisms.sampling import InsecureSeededSource
from infodp.synthetic.budget import rho_for

# Every test here fits a synthetic data model on a store (seconds of CPU each): slow.
pytestmark = pytest.mark.slow

DECLARATION = one_table(
    "census",
    {
        "age": ints(0, 99),
        "edu": cats("primary", "secondary", "tertiary"),
        "region": cats("n", "s"),
        "income": floats(0, 100000),
    },
)


def _census(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    age = rng.integers(18, 90, n)
    edu = np.array(["primary", "secondary", "tertiary"])[np.minimum((age - 18) // 25, 2)]
    region = np.where(rng.random(n) < 0.4, "n", "s")
    income = np.clip(age * 800 + rng.normal(0, 5000, n), 0, 100000)
    return pd.DataFrame({"age": age, "edu": edu, "region": region, "income": income})


def _copy(db: str | Path, directory: Path, file: str) -> Path:
    """A copy of a closed store (its DuckDB file and the ledger next to it): each test charges
    and writes its own copy, made far more cheaply than by registering the data again."""
    target = directory / file
    shutil.copyfile(db, target)
    shutil.copyfile(f"{db}.ledger", f"{target}.ledger")
    return target


@pytest.fixture(scope="module")
def census_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("census") / "store.duckdb"
    cur = Curator(db)
    cur.register_dataset("census", _census(3000), DECLARATION)
    cur.add_analyst("alice", "census", epsilon=5, delta=Fraction(1, 10**4))
    cur.close()
    return db


@pytest.fixture
def curator(census_store: Path, tmp_path: Path) -> Curator:
    return Curator(
        _copy(census_store, tmp_path, "store.duckdb"),
        source=InsecureSeededSource(3, i_understand_this_is_not_private=True),
    )


def _left(cur: Curator) -> tuple[Fraction, Fraction]:
    b = cur.ledger.budget("alice", "census")
    return b.remaining_epsilon, b.remaining_delta


def test_release_charges_its_epsilon_and_delta_once(curator: Curator) -> None:
    before = _left(curator)
    t = curator.release_synthetic("alice", "fake", "census", epsilon="1.5", delta="1e-6")
    after = _left(curator)
    assert before[0] - after[0] == Fraction(3, 2)
    assert before[1] - after[1] == Fraction(1, 10**6)
    assert sorted(t.to_frame().columns) == ["age", "edu", "income", "region"]
    assert abs(len(t.frame) - 3000) < 200


def test_ledger_entry_has_the_shape_of_a_query_entry(curator: Curator) -> None:
    curator.query("alice", "SELECT COUNT(*) FROM census", epsilon=0.5)
    curator.release_synthetic("alice", "fake", "census", epsilon=1, delta="1e-6", method="mst")
    curator.ledger.flush()
    query, synth = curator.ledger.entries("alice")[-2:]
    assert query.to_dict().keys() == synth.to_dict().keys()
    assert (query.status, synth.status) == ("released", "released")
    assert (synth.epsilon, synth.delta) == (Fraction(1), Fraction(1, 10**6))
    # Its information cost is ρ nats per person (rounded up), as the explanation states.
    assert synth.info_nats == pytest.approx(float(rho_for(1.0, 1e-6)), rel=1e-12)
    assert synth.info_nats >= float(rho_for(1.0, 1e-6))
    recorded = json.loads(synth.result_json or "{}")
    assert recorded["synthetic"] == "fake" and recorded["cost"]["epsilon"] == 1.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"method": "pgm"}, "method must be aim or mst"),
        ({"columns": ["age", "nope"]}, "nope"),
        ({"workload": [["age", "edu", "region", "income"]]}, "a list of 1 to 3"),
        ({"bins": 1}, "an integer from 2 to 256"),
        ({"rows": 0}, "an integer from 1 to 1000000"),
    ],
    ids=["method", "column", "workload", "bins", "rows"],
)
def test_refusals_charge_nothing_and_say_why(
    curator: Curator, options: dict[str, object], message: str
) -> None:
    before, entries = _left(curator), len(curator.ledger.entries())
    with pytest.raises(ParameterError, match=message):
        curator.release_synthetic("alice", "fake", "census", epsilon=1, delta="1e-6", **options)
    assert _left(curator) == before and len(curator.ledger.entries()) == entries


def test_over_budget_and_pure_dp_are_refused_for_free(curator: Curator) -> None:
    before, entries = _left(curator), len(curator.ledger.entries())
    with pytest.raises(BudgetExceeded):
        curator.release_synthetic("alice", "fake", "census", epsilon=6, delta="1e-6")
    with pytest.raises(ParameterError, match="delta must be a positive finite number; got 0"):
        curator.release_synthetic("alice", "fake", "census", epsilon=1, delta=0)
    with pytest.raises(ParameterError, match="an identifier"):
        curator.release_synthetic("alice", "not a name", "census", epsilon=1, delta="1e-6")
    assert _left(curator) == before and len(curator.ledger.entries()) == entries


def test_a_name_is_used_once_per_dataset_and_the_second_release_is_free(
    curator: Curator,
) -> None:
    curator.release_synthetic("alice", "fake", "census", epsilon=1, delta="1e-6")
    before = _left(curator)
    with pytest.raises(ParameterError, match="a synopsis name not used yet on census"):
        curator.release_synthetic("alice", "fake", "census", epsilon=1, delta="1e-6")
    assert _left(curator) == before


def test_sql_over_the_synthetic_table_is_free_and_matches_pandas(curator: Curator) -> None:
    t = curator.release_synthetic("alice", "fake", "census", epsilon=2, delta="1e-6")
    before = _left(curator)
    r = curator.query_synopsis(
        "fake", "SELECT edu, COUNT(*) AS n FROM census GROUP BY edu ORDER BY edu"
    )
    assert _left(curator) == before
    assert r["cost"]["epsilon"] == 0.0
    assert r["cost"]["note"] == "post-processing of synthetic table fake: free"
    stored = curator.synthetic("fake").frame
    # DuckDB's ORDER BY puts NULL (an undeclared value's code) last, as sort_index does.
    want = stored.groupby("edu", dropna=False).size().sort_index()
    assert r["rows"] == [[None if pd.isna(k) else k, int(v)] for k, v in want.items()]
    pd.testing.assert_frame_equal(stored, t.frame)


def test_synthetic_sql_errors_name_the_table(curator: Curator) -> None:
    curator.release_synthetic("alice", "fake", "census", epsilon=1, delta="1e-6")
    with pytest.raises(ParameterError, match="SQL over synthetic table fake failed"):
        curator.query_synopsis("fake", "SELECT nope FROM census")


def test_exports_round_trip(curator: Curator, tmp_path: Path) -> None:
    t = curator.release_synthetic("alice", "fake", "census", epsilon=1, delta="1e-6")
    parquet = t.to_parquet(tmp_path / "fake.parquet")
    back = duckdb.connect().execute(f"SELECT * FROM '{parquet}'").fetch_df()
    for column, dtype in (("age", "Int64"), ("edu", "string"), ("income", "Float64")):
        pd.testing.assert_series_equal(back[column].astype(dtype), t.frame[column])
    csv = pd.read_csv(t.to_csv(tmp_path / "fake.csv"))
    pd.testing.assert_series_equal(csv["region"].astype("string"), t.frame["region"])


def test_explanation_states_bits_per_person_beside_epsilon_and_delta(curator: Curator) -> None:
    t = curator.release_synthetic("alice", "fake", "census", epsilon=1, delta="1e-6")
    e = t.explanation
    rho = float(rho_for(1.0, 1e-6))
    assert (e["epsilon"], e["delta"]) == (1.0, pytest.approx(1e-6, rel=1e-12))
    # ρ-zCDP: KL ≤ ρ nats (Bun & Steinke 2016), so ρ/ln 2 bits at α = 1 and 2ρ/ln 2 at α = 2.
    assert e["bits_per_person"]["1"] == pytest.approx(rho / math.log(2), rel=1e-9)
    assert e["bits_per_person"]["2"] == pytest.approx(2 * rho / math.log(2), rel=1e-9)
    assert "bits per person" in e["summary"]
    assert Fraction(e["rho_spent_exact"]) <= Fraction(e["rho_exact"])


def test_units_with_several_rows_get_noise_scaled_by_their_row_cap(tmp_path: Path) -> None:
    cur = Curator(
        tmp_path / "s.duckdb",
        source=InsecureSeededSource(4, i_understand_this_is_not_private=True),
    )
    frame = pd.DataFrame({"pid": np.repeat(np.arange(200), 3), "g": ["a", "b", "a"] * 200})
    declared = {"table": "visits", "privacy_unit": "pid", "max_rows_per_unit": 2}
    cur.register_dataset(
        "visits",
        frame,
        {
            **declared,
            "columns": {
                "pid": {"type": "int"},
                "g": {"type": "category", "categories": ["a", "b"]},
            },
        },
    )
    cur.add_analyst("bob", "visits", epsilon=5, delta="1e-4")
    t = cur.release_synthetic("bob", "fake", "visits", epsilon=1, delta="1e-6", method="mst")
    sigma = Fraction(t.spec["measurements"][0]["sigma"])
    # One column, all of ρ on its one-way marginal: σ = m/√(2ρ) with m = 2.
    assert float(sigma) == pytest.approx(2 / math.sqrt(2 * float(rho_for(1.0, 1e-6))), rel=1e-9)
    # At most 2 rows of each of the 200 units are read: about 400 synthetic rows, not 600.
    assert abs(len(t.frame) - 400) < 50


def test_session_synthesize_spends_once_and_answers_for_free() -> None:
    from infodp.curator.session import Session

    s = Session(
        _census(500),
        DECLARATION,
        epsilon=3,
        delta="1e-5",
        source=InsecureSeededSource(8, i_understand_this_is_not_private=True),
    )
    t = s.synthesize("fake", epsilon=1, delta="1e-6", columns=["age", "edu"], method="aim")
    assert s.remaining_epsilon == 2.0
    r = s.query_synopsis("fake", "SELECT COUNT(*) FROM census")
    assert r["rows"] == [[len(t.frame)]] and s.remaining_epsilon == 2.0


def test_a_release_is_reproducible_from_its_random_source(tmp_path: Path) -> None:
    frames = []
    for run in ("a", "b"):
        cur = Curator(
            tmp_path / f"{run}.duckdb",
            source=InsecureSeededSource(21, i_understand_this_is_not_private=True),
        )
        cur.register_dataset("census", _census(800), DECLARATION)
        cur.add_analyst("alice", "census", epsilon=2, delta="1e-5")
        frames.append(
            cur.release_synthetic("alice", "fake", "census", epsilon=1, delta="1e-6").frame
        )
        cur.close()
    pd.testing.assert_frame_equal(frames[0], frames[1])


def test_a_synthetic_table_is_not_read_as_a_histogram(curator: Curator) -> None:
    curator.release_synthetic("alice", "fake", "census", epsilon=1, delta="1e-6")
    with pytest.raises(ParameterError, match="is a synthetic table: read it with synthetic"):
        curator.synopsis("fake")
    curator.release_synopsis("alice", "hist", "census", ["region"], epsilon="0.5")
    with pytest.raises(ParameterError, match="is a histogram, not a synthetic table"):
        curator.synthetic("hist")


def test_a_failure_after_the_reservation_keeps_the_charge_and_says_nothing(
    curator: Curator, monkeypatch: pytest.MonkeyPatch
) -> None:
    from infodp.curator.publish import synthetic as synthetic_release
    from infodp.errors import QueryFailed

    def broken(*args: object) -> object:
        raise RuntimeError("a message that must not reach the analyst")

    monkeypatch.setattr(synthetic_release, "_synthesize", broken)
    before = _left(curator)
    with pytest.raises(QueryFailed) as refused:
        curator.release_synthetic("alice", "fake", "census", epsilon=1, delta="1e-6")
    assert "must not reach" not in str(refused.value)
    assert before[0] - _left(curator)[0] == 1
    entry = curator.ledger.entries("alice")[-1]
    assert entry.status == "failed" and "must not reach" in (entry.error or "")


def test_a_zcdp_budget_is_charged_rho_and_an_approx_budget_epsilon_delta(tmp_path: Path) -> None:
    from infodp.accounting.accountant import Budget

    cur = Curator(
        tmp_path / "z.duckdb",
        source=InsecureSeededSource(5, i_understand_this_is_not_private=True),
    )
    cur.register_dataset("census", _census(500), DECLARATION)
    cur.add_analyst("zoe", "census", budget=Budget.zcdp(1))
    cur.add_analyst("amy", "census", budget=Budget.approx(2, "1e-5"))
    cur.release_synthetic("zoe", "z", "census", epsilon=1, delta="1e-6", method="mst")
    cur.release_synthetic("amy", "a", "census", epsilon=1, delta="1e-6", method="mst")
    rho = float(rho_for(1.0, 1e-6))
    # zCDP: the charge is ρ (the Gaussian's σ rounded down: a hair more, never less).
    left = 1 - cur.ledger.budget("zoe", "census").to_dict()["accountant"]["remaining"]
    assert rho <= left <= rho * (1 + 1e-9)
    # approx: (ε, δ) = (1, 1e-6) spent by the accountant's PLD, one release of (ε, δ)-DP.
    remaining = cur.ledger.budget("amy", "census").to_dict()["accountant"]["remaining"]
    assert remaining["epsilon_spent"] == pytest.approx(1.0, rel=1e-6)


Clinic = Callable[[Path, int, int], Curator]


@pytest.fixture(scope="module")
def clinic(tmp_path_factory: pytest.TempPathFactory) -> Clinic:
    """``clinic(tmp_path, people, extra)``: a clinic population (tests/_stores.
    visits_population): ``people`` units with 5 visits each (over the cap of 3), ``extra``
    more units (a neighbour store when 1); a copy in ``tmp_path`` of a store of that shape
    built once per module."""
    built: dict[tuple[int, int], str] = {}

    def make(tmp_path: Path, people: int, extra: int = 0) -> Curator:
        db = built.get((people, extra))
        if db is None:
            frames, declaration = visits_population(people, 5, 3, extra=extra)
            db = built[people, extra] = make_store(
                tmp_path_factory.mktemp("clinic"),
                "clinic",
                frames,
                declaration,
                budget={"epsilon": 5, "delta": "1e-4"},
                file=f"clinic{extra}.duckdb",
            ).db
        copy = _copy(db, tmp_path, f"clinic{extra}.duckdb")
        return Curator(copy, source=InsecureSeededSource(6, i_understand_this_is_not_private=True))

    return make


def test_a_population_table_is_released_with_its_own_row_cap(
    tmp_path: Path, clinic: Clinic
) -> None:
    cur = clinic(tmp_path, 300, 0)
    before = cur.ledger.budget("a", "clinic").remaining_epsilon
    t = cur.release_synthetic(
        "a", "fake_visits", "clinic", table="visits", epsilon=1, delta="1e-6", method="mst"
    )
    assert before - cur.ledger.budget("a", "clinic").remaining_epsilon == 1
    assert list(t.frame.columns) == ["kind"]
    sigma = Fraction(t.spec["measurements"][0]["sigma"])
    # visits declares 3 rows per unit: σ = 3/√(2ρ) (one column, all of ρ on its marginal).
    assert float(sigma) == pytest.approx(3 / math.sqrt(2 * float(rho_for(1.0, 1e-6))), rel=1e-9)
    # At most 3 of each unit's 5 visits are read: about 900 synthetic rows, not 1500.
    assert abs(len(t.frame) - 900) < 100
    people = cur.release_synthetic(
        "a", "fake_people", "clinic", table="PEOPLE", epsilon=1, delta="1e-6"
    )
    assert list(people.frame.columns) == ["age"] and abs(len(people.frame) - 300) < 60
    # SQL over it is free, under the table's name or the population's, and matches pandas.
    stored = cur.synthetic("fake_visits", "clinic")
    assert stored.dataset == "clinic"
    for name in ("visits", "clinic"):
        got = stored.answer(f"SELECT kind, COUNT(*) AS n FROM {name} GROUP BY kind ORDER BY kind")
        expected = t.frame.groupby("kind", observed=True).size().sort_index()
        assert got["rows"] == [[str(k), int(v)] for k, v in expected.items()]
        assert got["cost"]["epsilon"] == 0.0


def test_neighbouring_populations_move_the_read_table_by_at_most_its_cap(
    tmp_path: Path, clinic: Clinic
) -> None:
    """One more unit (its person row and 5 visits): every cell of the rows the release reads
    moves by at most the cap, 3 (the sensitivity the noise is scaled to)."""
    from infodp.curator.publish.synthetic import _source_table, synthetic_sql

    counts = []
    for extra in (0, 1):
        cur = clinic(tmp_path, 50, extra)
        source = _source_table(cur.schema("clinic"), "visits")
        sql = synthetic_sql(source, ["kind"])
        con = duckdb.connect(str(tmp_path / f"clinic{extra}.duckdb"), read_only=True)
        rows = con.execute(f"SELECT kind, count(*) FROM ({sql}) GROUP BY kind").fetchall()
        con.close()
        cur.close()
        counts.append(dict(rows))
    moved = sum(abs(counts[1].get(k, 0) - counts[0].get(k, 0)) for k in ("a", "b"))
    assert moved == 3  # the new unit's 5 visits, capped at 3


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (None, "table must be one of the population's private tables: people, visits"),
        ("regions", "a private table (a public table is released as it is): people, visits"),
        ("vists", "unknown table 'vists'; the population's tables: people, regions, visits."),
    ],
)
def test_a_population_release_names_its_table_or_is_refused_for_free(
    tmp_path: Path, clinic: Clinic, table: str | None, message: str
) -> None:
    cur = clinic(tmp_path, 20, 0)
    before = cur.ledger.budget("a", "clinic").remaining_epsilon
    with pytest.raises(ParameterError, match=re.escape(message)):
        cur.release_synthetic("a", "x", "clinic", table=table, epsilon=1, delta="1e-6")
    assert cur.ledger.budget("a", "clinic").remaining_epsilon == before


def test_a_single_table_dataset_takes_only_its_own_table_name(curator: Curator) -> None:
    with pytest.raises(ParameterError, match="the dataset's own table 'census' or none"):
        curator.release_synthetic("alice", "x", "census", table="other", epsilon=1, delta="1e-6")
    t = curator.release_synthetic("alice", "x", "census", table="census", epsilon=1, delta="1e-6")
    assert len(t.frame) > 0
