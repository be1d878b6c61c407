"""Unused columns of a public table never change an answer: a NULL or NaN in a public column
a query does not read leaves every joined row in COUNT(*) and SUM, on the library and the
Session paths (plain DuckDB SQL on the same frames is the oracle)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

import infodp
from _stores import TEXT, floats, ints, population, private, public
from infodp.curator.engine import Curator

PEOPLE = pd.DataFrame(
    {"pid": [f"p{i}" for i in range(12)], "region": ["a", "b", "c"] * 4, "age": range(12)}
)
REGIONS = pd.DataFrame(
    {
        "region": ["a", "b", "c"],
        "country": ["x", None, "y"],
        "pop": [1.0, np.nan, 2.0],
        "area": ["n", "n", None],
    }
)
SCHEMA = population(
    "pid",
    {
        "people": private(None, pid=TEXT, region=TEXT, age=ints(0, 99)),
        "regions": public(region=TEXT, country=TEXT, pop=floats(0, 10), area=TEXT),
    },
    table="c",
)
QUERIES = [
    "SELECT COUNT(*) FROM people p JOIN regions r ON p.region = r.region",
    "SELECT COUNT(*) FROM regions r JOIN people p ON p.region = r.region",
    "SELECT COUNT(*) FROM people p JOIN regions r USING (region)",
    "SELECT SUM(p.age) FROM people p LEFT JOIN regions r ON p.region = r.region",
    "SELECT COUNT(*) FROM people p JOIN regions r ON p.region = r.region WHERE p.age > 3",
]


@pytest.fixture(scope="module")
def curator(tmp_path_factory: pytest.TempPathFactory) -> Curator:
    cur = Curator(Path(tmp_path_factory.mktemp("nulls")) / "s.duckdb")
    cur.register_dataset("c", {"people": PEOPLE, "regions": REGIONS}, SCHEMA)
    return cur


def _plain(sql: str) -> float:
    con = duckdb.connect()
    con.register("people", PEOPLE)
    con.register("regions", REGIONS)
    value = con.execute(sql).fetchone()
    assert value is not None
    return float(value[0])


@pytest.mark.slow
@pytest.mark.parametrize("sql", QUERIES, ids=range(len(QUERIES)))
def test_unused_public_nulls_change_no_exact_answer(curator: Curator, sql: str) -> None:
    (got,) = curator.exact_aggregates(sql).values[()]
    assert got == _plain(sql)


def test_a_session_answers_the_join_over_every_row() -> None:
    # At a huge ε the released count is the exact one (the noise is below one row).
    session = infodp.Session({"people": PEOPLE, "regions": REGIONS}, SCHEMA, epsilon=10**7)
    result = session.query(QUERIES[0], epsilon=10**6)
    assert result.to_pandas()["COUNT(*)"].iloc[0] == _plain(QUERIES[0])
