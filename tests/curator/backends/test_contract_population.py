"""The contract over several tables: joins, derived columns and subqueries on DuckDB and Spark.

One population (people, their visits, a public table of regions) is registered twice in one
store, once per engine, and every construct class is asked of both. Two independent checks:

- the exact pre-noise measurements equal plain SQL (DuckDB, on the frames themselves) on the
  same bounded data — the data are generated inside the declared bounds and row limits, with
  integer values (grid step 1), so the bounded data are the data;
- Spark's measurements equal DuckDB's cell for cell (one engine cannot drift from the other).

The released answers then agree with the exact ones statistically: the noise of many releases
(released minus exact, in the measurement's own units) has the mean and spread of the charged
mechanism (its mean within 4 standard errors of 0, its spread within 15% of the mechanism's).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

from _stores import clinic, ints
from infodp.curator.backends.base import ExactAggregates
from infodp.curator.engine import Curator

pytestmark = pytest.mark.spark

KINDS = ["checkup", "emergency", "specialist"]
SCHEMA = clinic("person_id", income=ints(0, 100000), visits=5, cost=ints(0, 1000), kinds=KINDS)


def _frames() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(23)
    n = 500
    ids = [f"p{i}" for i in range(n)]
    people = pd.DataFrame(
        {
            "person_id": ids,
            "age": rng.integers(0, 101, n),
            "income": rng.integers(0, 100001, n),
            "region": rng.choice(["n", "s", "e", "w"], n),  # 'w' has no public row
        }
    )
    per = rng.integers(0, 6, n)
    m = int(per.sum())
    visits = pd.DataFrame(
        {
            "person_id": np.repeat(ids, per),
            "cost": rng.integers(0, 1001, m),
            "kind": rng.choice(["checkup", "emergency", "specialist"], m),
        }
    )
    # 'e' is in two areas: a person of region e is joined to two public rows (multiplicity 2).
    regions = pd.DataFrame({"region": ["n", "s", "e", "e"], "area": ["hi", "lo", "lo", "mid"]})
    return {"people": people, "visits": visits, "regions": regions}


@pytest.fixture(scope="module")
def store(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Curator]:
    root = tmp_path_factory.mktemp("population")
    cur = Curator(root / "s.duckdb")
    sources = {}
    for name, frame in _frames().items():
        sources[name] = str(root / f"{name}.parquet")
        frame.to_parquet(sources[name])
    cur.register_dataset("pd", sources, SCHEMA)
    cur.register_dataset("ps", sources, SCHEMA, backend="spark", same_population_as="pd")
    cur.add_analyst("a", "pd", epsilon=10_000)
    yield cur
    cur.close()


#: (query over dataset {d}, the same question in plain SQL over the frames, number of keys).
CASES = [
    (
        "SELECT r.area, COUNT(*), SUM(p.age) FROM {d}.people p JOIN {d}.regions r "
        "ON p.region = r.region GROUP BY r.area",
        "SELECT r.area, COUNT(*), SUM(p.age) FROM people p JOIN regions r "
        "ON p.region = r.region GROUP BY r.area",
        1,
    ),
    (
        "SELECT COUNT(*), SUM(v.cost) FROM {d}.people p JOIN {d}.visits v "
        "ON p.person_id = v.person_id WHERE p.age > 40",
        "SELECT COUNT(*), SUM(v.cost) FROM people p JOIN visits v "
        "ON p.person_id = v.person_id WHERE p.age > 40",
        0,
    ),
    (
        "SELECT r.area, COUNT(*), SUM(v.cost) FROM {d}.people p JOIN {d}.visits v "
        "ON p.person_id = v.person_id JOIN {d}.regions r ON p.region = r.region GROUP BY r.area",
        "SELECT r.area, COUNT(*), SUM(v.cost) FROM people p JOIN visits v "
        "ON p.person_id = v.person_id JOIN regions r ON p.region = r.region GROUP BY r.area",
        1,
    ),
    (
        "SELECT SUM(CASE WHEN income > 50000 THEN 1 ELSE 0 END), COUNT(*) FROM {d}.people",
        "SELECT SUM(CASE WHEN income > 50000 THEN 1 ELSE 0 END), COUNT(*) FROM people",
        0,
    ),
    (
        "SELECT COUNT(*), SUM(cost * 2 + 1) FROM {d}.visits WHERE cost * 2 > 900",
        "SELECT COUNT(*), SUM(cost * 2 + 1) FROM visits WHERE cost * 2 > 900",
        0,
    ),
    (
        "SELECT kind, COUNT(*) FROM (SELECT kind, cost FROM {d}.visits WHERE cost > 100) AS v "
        "GROUP BY kind",
        "SELECT kind, COUNT(*) FROM visits WHERE cost > 100 GROUP BY kind",
        1,
    ),
    (
        # a declared per-unit truncation: each person's 2 costliest visits (ties cost the same)
        "SELECT COUNT(*), SUM(v.cost) FROM {d}.people p JOIN (SELECT * FROM {d}.visits "
        "QUALIFY ROW_NUMBER() OVER (PARTITION BY person_id ORDER BY cost DESC) <= 2) AS v "
        "ON p.person_id = v.person_id",
        "SELECT COUNT(*), SUM(v.cost) FROM people p JOIN (SELECT * FROM visits "
        "QUALIFY ROW_NUMBER() OVER (PARTITION BY person_id ORDER BY cost DESC) <= 2) AS v "
        "ON p.person_id = v.person_id",
        0,
    ),
    (
        "SELECT SUM(total), COUNT(*) FROM (SELECT person_id, SUM(cost) AS total "
        "FROM {d}.visits GROUP BY person_id) AS t",
        "SELECT SUM(total), COUNT(*) FROM (SELECT person_id, SUM(cost) AS total "
        "FROM visits GROUP BY person_id) AS t",
        0,
    ),
]


def _plain(sql: str) -> dict[tuple[str, ...], tuple[int, ...]]:
    con = duckdb.connect()
    try:
        for name, frame in _frames().items():
            con.register(name, frame)
        rows = con.execute(sql).fetchall()
    finally:
        con.close()
    return rows  # type: ignore[return-value]


def _by_key(rows: Any, keys: int) -> dict[tuple[str, ...], tuple[int, ...]]:
    return {tuple(str(k) for k in r[:keys]): tuple(int(v) for v in r[keys:]) for r in rows}


def _released(agg: ExactAggregates) -> dict[tuple[str, ...], tuple[int, ...]]:
    return {
        tuple(str(k) for k in key): tuple(int(v or 0) for v in vals)
        for key, vals in agg.values.items()
    }


@pytest.mark.parametrize(("sql", "plain", "keys"), CASES)
def test_exact_answers_equal_plain_sql_on_the_bounded_rows_on_both_engines(
    store: Curator, sql: str, plain: str, keys: int
) -> None:
    duck = store.exact_aggregates(sql.format(d="pd"))
    spark = store.exact_aggregates(sql.format(d="ps"))
    assert duck.values == spark.values
    want = _by_key(_plain(plain), keys)
    got = {k: v for k, v in _released(duck).items() if k in want}
    assert got == want


def test_released_answers_agree_with_the_exact_ones_statistically(store: Curator) -> None:
    sql = CASES[2][0].format(d="pd")
    exact = _released(store.exact_aggregates(sql))
    noise: dict[int, list[float]] = {0: [], 1: []}
    scales: dict[int, float] = {}
    simulated: dict[int, object] = {}
    for _ in range(200):
        r = store.query("a", sql, epsilon=2)
        frame = r.to_pandas()
        for _, row in frame.iterrows():
            key = (str(row["area"]),)
            if key not in exact:
                continue
            noise[0].append(float(row["COUNT(*)"]) - exact[key][0])
            noise[1].append(float(row["SUM(v.cost)"]) - exact[key][1])
        for i, part in enumerate(r.cost.parts):
            mech = part.noise_mechanism
            assert mech is not None
            # The mechanism's standard deviation in released units (grid step 1 here). The
            # same price gives the same (cached) mechanism object, whose simulation with the
            # same generator gives the same figure: simulated again only for a new object.
            if simulated.get(i) is not mech:
                scales[i] = float(np.std(mech.simulate(0, 200_000, np.random.default_rng(i))))
                simulated[i] = mech
    for i, xs in noise.items():
        arr = np.asarray(xs)
        assert abs(arr.mean()) < 4 * scales[i] / np.sqrt(len(arr))
        assert arr.std() == pytest.approx(scales[i], rel=0.15)


def test_spark_keeps_one_bounded_copy_per_table_and_a_reopened_store_reads_them(
    store: Curator,
) -> None:
    from infodp.curator.store.database import catalogue

    where = Path(catalogue(store.backend)["ps"]["bounded_path"])
    assert sorted(p.name for p in where.iterdir()) == ["people", "regions", "visits"]
    files = [p for p in where.rglob("*") if p.is_file()]
    assert files and all(p.stat().st_mode & 0o077 == 0 for p in files)
    again = Curator(store.db)
    try:
        n = again.exact_aggregates("SELECT COUNT(*) FROM ps.visits").values[()][0]
    finally:
        again.close()
    assert n == len(_frames()["visits"])
    # The public facts are the same whichever engine measured them.
    assert store.schema("ps").to_json().replace('"ps"', '"pd"') == store.schema("pd").to_json()
