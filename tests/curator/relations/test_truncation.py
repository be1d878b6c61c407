"""A declared per-unit truncation: ``QUALIFY ROW_NUMBER() OVER (PARTITION BY unit ...) <= T``
in a row-level subquery bounds each person's rows by T instead of the declared limit.

The bound is the closed form min(m, T) (and m₁·min(m₂, T) through a join); the exact answers
are checked against pandas on the same rows (the T highest costs of each person, or the count
min(n_u, T), whichever rows a unit keeps); the refusals name the one allowed form.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _stores import TEXT, ints, population, private
from infodp.curator.engine import Curator
from infodp.errors import ParameterError

SCHEMA = population(
    "person_id",
    {
        "people": private(1, person_id=TEXT, age=ints(0, 100)),
        "visits": private(12, person_id=TEXT, cost=ints(0, 1000)),
    },
)


def _tables() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(5)
    n = 300
    ids = [f"p{i}" for i in range(n)]
    per = rng.integers(0, 13, n)
    visits = pd.DataFrame(
        {"person_id": np.repeat(ids, per), "cost": rng.integers(0, 1001, int(per.sum()))}
    )
    people = pd.DataFrame({"person_id": ids, "age": rng.integers(0, 101, n)})
    return {"people": people, "visits": visits}


@pytest.fixture(scope="module")
def clinic(tmp_path_factory: pytest.TempPathFactory) -> Curator:
    cur = Curator(Path(tmp_path_factory.mktemp("truncation")) / "s.duckdb")
    cur.register_dataset("clinic", _tables(), SCHEMA)
    cur.add_analyst("a", "clinic", epsilon=100)
    return cur


def _cut(t: int, order: str = "") -> str:
    over = f"PARTITION BY person_id{' ORDER BY ' + order if order else ''}"
    return f"(SELECT * FROM visits QUALIFY ROW_NUMBER() OVER ({over}) <= {t}) AS v"


@pytest.mark.slow
@pytest.mark.parametrize("t", [1, 3, 12, 40])
def test_the_row_bound_is_min_of_the_declared_limit_and_t(clinic: Curator, t: int) -> None:
    _, schema, _, _ = clinic.plan(f"SELECT COUNT(*) FROM {_cut(t)}")
    assert schema.max_rows_per_unit == min(12, t)
    joined = f"SELECT COUNT(*) FROM people p JOIN {_cut(t)} ON p.person_id = v.person_id"
    _, schema, _, _ = clinic.plan(joined)
    assert schema.max_rows_per_unit == 1 * min(12, t)
    cost = clinic.query("a", joined, epsilon="0.1").cost
    assert [p.sensitivity for p in cost.parts] == [min(12, t)]


@pytest.mark.parametrize("t", [1, 2, 5])
def test_exact_answers_are_each_persons_first_t_rows(clinic: Curator, t: int) -> None:
    visits = _tables()["visits"]
    counts = clinic.exact_aggregates(f"SELECT COUNT(*) FROM {_cut(t)}").values[()]
    assert counts == (int(visits.groupby("person_id").size().clip(upper=t).sum()),)
    # ORDER BY cost DESC: the t highest costs of each person (ties have equal costs).
    top = visits.sort_values("cost", ascending=False).groupby("person_id").head(t)
    got = clinic.exact_aggregates(f"SELECT COUNT(*), SUM(cost) FROM {_cut(t, 'cost DESC')}")
    assert got.values[()] == (len(top), int(top["cost"].sum()))


@pytest.mark.parametrize(
    "qualify",
    [
        "ROW_NUMBER() OVER (PARTITION BY cost) <= 3",
        "ROW_NUMBER() OVER (ORDER BY cost) <= 3",
        "RANK() OVER (PARTITION BY person_id ORDER BY cost) <= 3",
        "ROW_NUMBER() OVER (PARTITION BY person_id) >= 3",
        "ROW_NUMBER() OVER (PARTITION BY person_id) <= 0",
        "ROW_NUMBER() OVER (PARTITION BY person_id) <= 2.5",
        "ROW_NUMBER() OVER (PARTITION BY person_id) <= cost",
    ],
)
def test_any_other_qualify_is_refused_naming_the_allowed_form(
    clinic: Curator, qualify: str
) -> None:
    with pytest.raises(ParameterError, match="QUALIFY ROW_NUMBER"):
        clinic.plan(f"SELECT COUNT(*) FROM (SELECT * FROM visits QUALIFY {qualify}) AS v")


def test_qualify_is_refused_in_a_per_unit_aggregation_and_outside_a_subquery(
    clinic: Curator,
) -> None:
    per_unit = (
        "SELECT AVG(s) FROM (SELECT person_id, SUM(cost) AS s FROM visits GROUP BY person_id "
        "QUALIFY ROW_NUMBER() OVER (PARTITION BY person_id) <= 1) AS t"
    )
    with pytest.raises(ParameterError, match="QUALIFY in a per-unit aggregation"):
        clinic.plan(per_unit)
    with pytest.raises(ParameterError, match=r"window function|QUALIFY"):
        clinic.plan(
            "SELECT COUNT(*) FROM visits QUALIFY ROW_NUMBER() OVER (PARTITION BY person_id) <= 1"
        )
