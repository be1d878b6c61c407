"""One contract, two engines: DuckDB and Spark give the same bounded aggregates and answers.

Every dataset is registered twice in one store from the same Parquet file, once per backend;
each query is then asked of both. The independent check is the other engine: the DuckDB
backend's bounded aggregates (clamp, null policy, grid snapping of
:mod:`infodp.curator.plan.grid`, per-unit limits) must equal Spark's cell for cell, so one backend
cannot drift from the other's contribution bounding. Where a per-unit limit keeps a random
subset of a unit's rows, the data are built so that every admissible subset gives the same
aggregate (all rows of a unit carry the same values), or the test checks the law the limit
guarantees (each unit in at most k groups: the cell counts sum to the number of units).

Noise is the curator's, not the backend's: with the same seeded test source the released
answers are identical, and with different seeds the noise (released raw measurement minus
the exact aggregate) follows the same distribution on both engines (two-sample
Kolmogorov-Smirnov test, scipy).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from _stores import TEXT, cats, floats, ints, one_table
from infodp.cli import main
from infodp.curator.backends.base import Backend, ExactAggregates
from infodp.curator.backends.duckdb import DuckDBBackend
from infodp.curator.engine import Curator
from infodp.errors import ParameterError
from infodp.mechanisms.sampling import InsecureSeededSource

pytestmark = pytest.mark.spark

CATS = [f"c{i}" for i in range(40)]

EXACT = one_table(
    "t",
    {
        "pid": TEXT,
        "x": floats(0, 10, "drop"),
        "y": {"type": "int", "bounds": [0, 100], "nulls": {"replace": 50}},
        "w": floats(-1000.5, 250000, {"replace": 3.25}),
        "g": cats("a", "b", "c"),
        "c": cats(*CATS),
        "h": {"type": "text", "nulls": "drop"},
        "k": ints(0, 4),
    },
    unit="pid",
    max_rows_per_unit=2,
)

LIMITS = one_table(
    "t",
    {"pid": TEXT, "x": floats(0, 10), "g": cats("a", "b", "c")},
    unit="pid",
    max_rows_per_unit=2,
)

GROUPS = one_table(
    "t",
    {"pid": TEXT, "g": cats("a", "b", "c")},
    unit="pid",
    max_rows_per_unit=2,
    max_groups_per_unit=1,
)


def _exact_frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    units = 400
    pid = np.concatenate([np.arange(units), rng.choice(units, 200, replace=False)])
    n = len(pid)
    x = rng.uniform(-1, 12, n)
    x[::13] = np.nan
    x[5::29] = np.inf
    y = rng.integers(-5, 110, n).astype("float64")
    y[::11] = np.nan
    w = rng.normal(1000, 50000, n)
    w[::17] = np.nan
    h = rng.choice(["h0", "h1", "h2", "h3"], n).astype(object)
    h[::7] = None
    return pd.DataFrame(
        {
            "pid": [f"p{u}" for u in pid],
            "x": x,
            "y": pd.array([None if np.isnan(v) else int(v) for v in y], dtype="Int64"),
            "w": w,
            "g": rng.choice(["a", "b", "c", "d"], n),  # 'd' is outside the declared keys
            "c": rng.choice(CATS, n),
            "h": h,
            "k": rng.integers(0, 7, n),  # 5 and 6 are outside the bounds
        }
    )


def _limits_frame() -> pd.DataFrame:
    """Units with 1 to 5 rows (the limit is 2); every row of a unit has the same values, so
    whichever rows a unit keeps, the aggregates are the same."""
    rng = np.random.default_rng(8)
    rows = []
    for u in range(150):
        x, g = float(rng.uniform(0, 10)), str(rng.choice(["a", "b", "c"]))
        rows += [(f"p{u}", x, g)] * int(rng.integers(1, 6))
    return pd.DataFrame(rows, columns=["pid", "x", "g"])


def _groups_frame() -> pd.DataFrame:
    """Every unit has two rows in two different groups (group limit 1)."""
    rng = np.random.default_rng(9)
    rows = []
    for u in range(120):
        a, b = rng.choice(["a", "b", "c"], 2, replace=False)
        rows += [(f"p{u}", str(a)), (f"p{u}", str(b))]
    return pd.DataFrame(rows, columns=["pid", "g"])


@pytest.fixture(scope="module")
def store(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Curator]:
    root = tmp_path_factory.mktemp("contract")
    cur = Curator(root / "s.duckdb")
    for name, frame, schema in (
        ("exact", _exact_frame(), EXACT),
        ("limits", _limits_frame(), LIMITS),
        ("groups", _groups_frame(), GROUPS),
    ):
        path = root / f"{name}.parquet"
        frame.to_parquet(path)
        # Synthetic ids in every frame: unrelated datasets, declared so; the same people on
        # Spark: declared so too (a likely copy needs a declaration).
        cur.register_dataset(f"{name}_duckdb", str(path), schema, independent=True)
        cur.register_dataset(
            f"{name}_spark",
            str(path),
            schema,
            backend="spark",
            same_population_as=f"{name}_duckdb",
        )
    yield cur
    cur.close()


def _both(cur: Curator, sql: str, dataset: str) -> tuple[ExactAggregates, ExactAggregates]:
    return (
        cur.exact_aggregates(sql.format(t=f"{dataset}_duckdb")),
        cur.exact_aggregates(sql.format(t=f"{dataset}_spark")),
    )


def _same(a: ExactAggregates, b: ExactAggregates) -> None:
    assert a.values == b.values
    assert a.histograms.keys() == b.histograms.keys()
    for key, hist in a.histograms.items():
        np.testing.assert_array_equal(hist, b.histograms[key])


def test_both_backends_implement_the_contract(store: Curator) -> None:
    assert isinstance(store.backend, DuckDBBackend) and isinstance(store.backend, Backend)
    assert isinstance(store.spark(), Backend)


def test_the_catalogue_records_the_spark_dataset(store: Curator) -> None:
    from infodp.curator.store.database import catalogue

    meta = catalogue(store.backend)
    assert meta["exact_spark"]["backend"] == "spark"
    assert Path(meta["exact_spark"]["bounded_path"]).is_dir()
    assert meta["exact_duckdb"].get("backend", "duckdb") == "duckdb"
    # The bounded copy is private to the data owner, like the store.
    files = [p for p in Path(meta["exact_spark"]["bounded_path"]).rglob("*") if p.is_file()]
    assert files and all(p.stat().st_mode & 0o077 == 0 for p in files)


AGGREGATES = [
    "SELECT COUNT(*) FROM {t}",
    "SELECT COUNT(x), COUNT(y), COUNT(w) FROM {t}",
    "SELECT SUM(x), SUM(y), SUM(w) FROM {t}",
    "SELECT AVG(x), AVG(y), AVG(w) FROM {t}",
    "SELECT VARIANCE(x), STDDEV(y), VAR_POP(w), STDDEV_POP(x) FROM {t}",
    "SELECT MEDIAN(x), MEDIAN(y), MEDIAN(w) FROM {t}",
    "SELECT QUANTILE(x, 0.9), QUANTILE(y, 0.25) FROM {t}",
    # histograms over declared keys (category and bounded int), one and two keys
    "SELECT g, COUNT(*) FROM {t} GROUP BY g",
    "SELECT c, COUNT(*), SUM(y) FROM {t} GROUP BY c",
    "SELECT g, k, COUNT(*), SUM(x), AVG(w) FROM {t} GROUP BY g, k",
    "SELECT g, MEDIAN(x), VARIANCE(y) FROM {t} GROUP BY g",
    # an undeclared key (partition selection)
    "SELECT h, COUNT(*), SUM(y) FROM {t} GROUP BY h",
    "SELECT h, g, AVG(x) FROM {t} GROUP BY h, g",
    # filters
    "SELECT COUNT(*), SUM(x) FROM {t} WHERE x > 2 AND g IN ('a', 'b')",
    "SELECT COUNT(*) FROM {t} WHERE NOT (y BETWEEN 10 AND 20) OR x IS NULL",
    "SELECT g, SUM(y) FROM {t} WHERE h IS NOT NULL AND h <> 'h1' GROUP BY g",
    "SELECT COUNT(*), AVG(x) FROM {t} WHERE k = 3 OR w >= 1000.5",
    "SELECT h, COUNT(*) FROM {t} WHERE x < 5 GROUP BY h",
    # an aggregate's own FILTER, and COUNT(DISTINCT ...)
    "SELECT COUNT(*) FILTER (WHERE x > 2), SUM(y) FILTER (WHERE g = 'a'), "
    "AVG(w) FILTER (WHERE h IS NOT NULL), COUNT(*) FROM {t}",
    "SELECT g, k, COUNT(*) FILTER (WHERE NOT (y BETWEEN 10 AND 20)), VARIANCE(x) FILTER "
    "(WHERE c IN ('c1', 'c2') OR x IS NULL) FROM {t} WHERE w > 0 GROUP BY g, k",
    "SELECT COUNT(DISTINCT pid), COUNT(DISTINCT h), COUNT(DISTINCT k) FROM {t}",
    "SELECT g, COUNT(DISTINCT pid), COUNT(DISTINCT c) FILTER (WHERE y > 50) FROM {t} GROUP BY g",
    "SELECT h, COUNT(DISTINCT pid), COUNT(*) FILTER (WHERE k = 3) FROM {t} GROUP BY h",
    # derived GROUP BY keys: bins of a bounded int and float column, CASE bands
    "SELECT FLOOR(y / 10) * 10 AS decade, COUNT(*), AVG(w) FROM {t} GROUP BY decade",
    "SELECT g, FLOOR(x / 3) AS b, SUM(y), MEDIAN(x) FROM {t} GROUP BY g, b",
    "SELECT CASE WHEN y < 18 THEN 'minor' WHEN y < 65 THEN 'adult' END AS band, COUNT(*), "
    "VARIANCE(x) FROM {t} GROUP BY band",
]

#: FILTER and COUNT(DISTINCT ...) asked of the store, and the same question in plain DuckDB
#: SQL over the source frame: the bounded rows are the frame's rows here (every unit is within
#: its 2 rows, no group limit below it), y's bounded value is COALESCE(y, 50) clamped to
#: [0, 100], and the released groups are the declared keys.
PLAIN = [
    (
        "SELECT COUNT(*) FILTER (WHERE x > 2), COUNT(*) FILTER (WHERE g = 'a' AND k = 3), "
        "SUM(y) FILTER (WHERE h IS NOT NULL), COUNT(DISTINCT pid), COUNT(DISTINCT h), "
        "COUNT(DISTINCT k) FILTER (WHERE y > 50) FROM {t}",
        "SELECT COUNT(*) FILTER (WHERE x > 2), COUNT(*) FILTER (WHERE g = 'a' AND k = 3), "
        "SUM(LEAST(GREATEST(COALESCE(y, 50), 0), 100)) FILTER (WHERE h IS NOT NULL), "
        "COUNT(DISTINCT pid), COUNT(DISTINCT h), COUNT(DISTINCT k) FILTER (WHERE y > 50) FROM f",
    ),
    (
        "SELECT g, COUNT(DISTINCT pid), COUNT(*) FILTER (WHERE k = 3), "
        "COUNT(DISTINCT c) FILTER (WHERE y > 50) FROM {t} GROUP BY g",
        "SELECT g, COUNT(DISTINCT pid), COUNT(*) FILTER (WHERE k = 3), "
        "COUNT(DISTINCT c) FILTER (WHERE y > 50) FROM f WHERE g IN ('a', 'b', 'c') GROUP BY g",
    ),
]


#: Derived GROUP BY keys asked of the store, and the same question in plain DuckDB SQL over
#: the source frame (as in PLAIN): bins read the bounded copy (y: COALESCE(y, 50) clamped to
#: [0, 100]; x: NULL, NaN and inf dropped, clamped to [0, 10]), bands read y as WHERE does.
DERIVED = [
    (
        "SELECT FLOOR(y / 10) * 10 AS decade, COUNT(*), SUM(y) FROM {t} GROUP BY decade",
        "SELECT CAST(FLOOR(LEAST(GREATEST(COALESCE(y, 50), 0), 100) / 10) AS BIGINT) * 10 AS d, "
        "COUNT(*), SUM(LEAST(GREATEST(COALESCE(y, 50), 0), 100)) FROM f GROUP BY d",
    ),
    (
        "SELECT g, FLOOR(x / 3) AS b, COUNT(*) FROM {t} GROUP BY g, b",
        "SELECT g, CAST(FLOOR(LEAST(GREATEST(x, 0), 10) / 3) AS BIGINT) AS b, COUNT(*) FROM f "
        "WHERE isfinite(x) AND g IN ('a', 'b', 'c') GROUP BY g, b",
    ),
    (
        "SELECT CASE WHEN y < 18 THEN 'minor' WHEN y < 65 THEN 'adult' ELSE 'senior' END AS band, "
        "COUNT(*), SUM(k) FROM {t} GROUP BY band",
        "SELECT CASE WHEN y < 18 THEN 'minor' WHEN y < 65 THEN 'adult' ELSE 'senior' END, "
        "COUNT(*), SUM(LEAST(GREATEST(k, 0), 4)) FROM f GROUP BY 1",
    ),
]


@pytest.mark.parametrize(("sql", "plain"), DERIVED)
def test_derived_keys_equal_plain_sql_on_the_bounded_rows(
    store: Curator, sql: str, plain: str
) -> None:
    import duckdb

    from infodp.curator.declaration.source import load_schema
    from infodp.curator.sql.parse import parse_query

    duck, spark = _both(store, sql, "exact")
    con = duckdb.connect()
    try:
        con.register("f", _exact_frame())
        keys = 2 if "GROUP BY g" in sql else 1
        rows = con.execute(plain).fetchall()
    finally:
        con.close()
    want = {tuple(str(v) for v in r[:keys]): tuple(r[keys:]) for r in rows}
    plan = parse_query(sql.format(t="t"), load_schema(EXACT))  # the domain, from the schema
    for pos, g in enumerate(plan.group_by):
        assert {k[pos] for k in want} <= set(g.categories or ())
    # The released cells are the declared ones (a group of the undeclared 'd' is never read).
    declared = set(itertools.product(*(g.categories or () for g in plan.group_by)))
    assert {k: v for k, v in duck.values.items() if v[0] and k in declared} == want
    _same(duck, spark)


@pytest.mark.parametrize("sql", AGGREGATES)
def test_exact_aggregates_are_equal_across_backends(store: Curator, sql: str) -> None:
    duck, spark = _both(store, sql, "exact")
    assert duck.values  # the query reached data on both engines
    _same(duck, spark)


@pytest.mark.parametrize(("sql", "plain"), PLAIN)
def test_filter_and_distinct_counts_equal_plain_sql_on_the_bounded_rows(
    store: Curator, sql: str, plain: str
) -> None:
    import duckdb

    duck, spark = _both(store, sql, "exact")
    con = duckdb.connect()
    try:
        con.register("f", _exact_frame())
        keys = 1 if "GROUP BY" in sql else 0
        want = {tuple(r[:keys]): tuple(r[keys:]) for r in con.execute(plain).fetchall()}
    finally:
        con.close()
    released = {k: v for k, v in duck.values.items() if k in want}
    assert released == want and len(want) == (3 if "GROUP BY" in sql else 1)
    _same(duck, spark)


def test_distinct_units_and_filtered_counts_under_the_row_limit(store: Curator) -> None:
    """Units of 1 to 5 identical rows, at most 2 kept: every unit is counted once by
    COUNT(DISTINCT pid), and a filter counts min(n_u, 2) rows of each unit it keeps."""
    frame = _limits_frame()
    sql = "SELECT COUNT(DISTINCT pid), COUNT(*) FILTER (WHERE x > 5), COUNT(DISTINCT g) FROM {t}"
    duck, spark = _both(store, sql, "limits")
    kept = frame[frame.x > 5].groupby("pid").size().clip(upper=2).sum()
    assert duck.values[()] == spark.values[()] == (150, kept, 3)


def test_distinct_units_under_the_group_limit_sum_to_the_units(store: Curator) -> None:
    # k = 1: each of the 120 units is in exactly one group, so its id is counted once in all.
    duck, spark = _both(store, "SELECT g, COUNT(DISTINCT pid) FROM {t} GROUP BY g", "groups")
    for agg in (duck, spark):
        assert sum(v[0] or 0 for v in agg.values.values()) == 120


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT COUNT(*), SUM(x), AVG(x) FROM {t}",
        "SELECT g, COUNT(*), SUM(x) FROM {t} GROUP BY g",
        "SELECT COUNT(*), MEDIAN(x) FROM {t} WHERE x > 5",
    ],
)
def test_per_unit_row_limit_gives_the_same_aggregates(store: Curator, sql: str) -> None:
    duck, spark = _both(store, sql, "limits")
    _same(duck, spark)
    if "GROUP BY" not in sql and "WHERE" not in sql:
        # Independent count: each unit keeps min(n_u, m) rows (m = 2).
        frame = _limits_frame()
        kept = frame.groupby("pid").size().clip(upper=2).sum()
        assert duck.values[()][0] == spark.values[()][0] == kept


def test_per_unit_group_limit_keeps_one_group_per_unit(store: Curator) -> None:
    duck, spark = _both(store, "SELECT g, COUNT(*) FROM {t} GROUP BY g", "groups")
    for agg in (duck, spark):
        # With k = 1 each of the 120 units lands in exactly one group, with one row.
        assert sum(v[0] or 0 for v in agg.values.values()) == 120


def test_same_seed_gives_the_same_answers_on_both_backends(store: Curator) -> None:
    out = []
    for backend in ("duckdb", "spark"):
        store._runner.source = InsecureSeededSource(5, i_understand_this_is_not_private=True)
        key = f"seed_{backend}"
        store.add_analyst(key, f"exact_{backend}", epsilon=100, delta="0.5")
        sqls = [
            "SELECT g, k, COUNT(*), AVG(x), MEDIAN(y) FROM {t} GROUP BY g, k",
            "SELECT h, SUM(y) FROM {t} GROUP BY h",
            "SELECT g, COUNT(*) FILTER (WHERE x > 2), COUNT(DISTINCT pid) FROM {t} GROUP BY g",
            "SELECT FLOOR(y / 25) AS q, CASE WHEN k > 2 THEN 'hi' ELSE 'lo' END AS kb, "
            "COUNT(*), AVG(x) FROM {t} GROUP BY q, kb",
        ]
        out.append(
            [
                store.query(key, s.format(t=f"exact_{backend}"), epsilon=1, delta="1e-6").rows
                for s in sqls
            ]
        )
    assert out[0] == out[1]


def _residuals(cur: Curator, backend: str, seed: int, runs: int) -> np.ndarray:
    cur._runner.source = InsecureSeededSource(seed, i_understand_this_is_not_private=True)
    analyst = f"ks_{backend}"
    cur.add_analyst(analyst, f"exact_{backend}", epsilon=1000)
    sql = f"SELECT c, COUNT(*), SUM(y) FROM exact_{backend} GROUP BY c"
    exact = cur.exact_aggregates(sql)
    out = []
    for _ in range(runs):
        r = cur.query(analyst, sql, epsilon=2)
        for row, noisy in zip(r.rows, r.noisy, strict=True):
            truth = exact.values.get((row[0],), (0, 0))
            out.extend(int(v) - int(t or 0) for v, t in zip(noisy, truth, strict=True))
    return np.asarray(out)


def test_noise_follows_the_same_distribution_on_both_backends(store: Curator) -> None:
    duck = _residuals(store, "duckdb", 11, 6)
    spark = _residuals(store, "spark", 12, 6)
    assert len(duck) == len(spark) == 6 * 40 * 2
    # Fixed seeds: the p-value is a fixed number; a backend that changed the noise (or the
    # sensitivity it is scaled to) would move it far below this level.
    assert stats.ks_2samp(duck, spark).pvalue > 1e-3


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (pd.DataFrame({"pid": ["a", "b"], "x": [1.0, float("nan")]}), "holds NULL, NaN"),
        (pd.DataFrame({"pid": ["a", None], "x": [1.0, 2.0]}), "column 'pid' holds NULL"),
        (pd.DataFrame({"pid": ["a", "b"], "x": ["1", "zz"]}), "not numbers of that type"),
        (pd.DataFrame({"pid": ["a", "b"]}), "declared column 'x' is not in the source"),
    ],
)
def test_registration_refusals_are_the_same(
    store: Curator, tmp_path: Path, frame: pd.DataFrame, message: str
) -> None:
    schema = one_table("t", {"pid": TEXT, "x": floats(0, 1)}, unit="pid")
    path = tmp_path / "bad.parquet"
    frame.to_parquet(path)
    seen = []
    for i, backend in enumerate(("duckdb", "spark")):
        with pytest.raises(ParameterError) as err:
            store.register_dataset(
                f"bad{i}_{tmp_path.name[-6:]}", str(path), schema, backend=backend
            )
        seen.append(str(err.value))
    assert message in seen[0] and seen[0] == seen[1]
    # A refused Spark registration leaves no bounded copy behind.
    assert not list(Path(str(store.db) + ".bounded").glob("bad1_*"))


def test_cli_registers_and_queries_a_spark_dataset(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "people.parquet"
    _limits_frame().to_parquet(path)
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(LIMITS))
    db = str(tmp_path / "s.duckdb")
    bounded = tmp_path / "copy"
    register = ["dataset", "register", "--db", db, "--name", "people", "--source", str(path)]
    register += ["--schema", str(schema), "--backend", "spark", "--bounded-path", str(bounded)]
    code = main([*register, "--spark-conf", "spark.sql.shuffle.partitions=2", "--json"])
    out = capsys.readouterr().out
    assert code == 0 and json.loads(out)["backend"] == "spark"
    assert bounded.is_dir()
    add = ["analyst", "add", "--db", db, "--name", "a", "--dataset", "people", "--epsilon", "1"]
    assert main([*add, "--json"]) == 0
    capsys.readouterr()
    assert main(["dataset", "list", "--db", db, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["datasets"]
    assert [(d["name"], d["backend"]) for d in listed] == [("people", "spark")]
    capsys.readouterr()
    sql = "SELECT g, COUNT(*) FROM people GROUP BY g"
    code = main(["query", "--db", db, "--analyst", "a", "--epsilon", "0.5", "--json", sql])
    captured = capsys.readouterr()
    assert code == 0 and captured.err == ""
    answer = json.loads(captured.out)  # exactly one JSON object, no progress output
    assert [row[0] for row in answer["rows"]] == ["a", "b", "c"]


def test_server_answers_a_spark_dataset(store: Curator) -> None:
    from _asgi import call
    from infodp.server.app import ServerSettings, create_app

    key = store.add_analyst("http", "exact_spark", epsilon=10)
    app = create_app(ServerSettings(str(store.db)))
    body = {"sql": "SELECT g, COUNT(*) FROM exact_spark GROUP BY g", "epsilon": "0.5"}
    response = call(app, "POST", "/v1/query", body, key=key)
    assert response.status_code == 200, response.text
    assert [row[0] for row in response.json()["rows"]] == ["a", "b", "c"]


def test_the_same_data_registered_twice_on_spark_is_refused(store: Curator) -> None:
    """The fingerprint is taken before the per-unit row limit (the rows a unit keeps are a
    secret random choice), so a second copy of the same data is recognised, and its bounded
    copy is removed again."""
    from infodp.curator.store.database import catalogue

    source = catalogue(store.backend)["limits_spark"]["source"]
    with pytest.raises(ParameterError, match="limits_spark"):
        store.register_dataset("limits_again", source, LIMITS, backend="spark")
    assert not Path(str(store.db) + ".bounded", "limits_again").exists()


def test_a_session_runs_on_spark(spark: Any, tmp_path: Path) -> None:
    from infodp import Session

    frame = _limits_frame()
    seeded = InsecureSeededSource(3, i_understand_this_is_not_private=True)
    s = Session(frame, LIMITS, epsilon=1, backend="spark", source=seeded)
    duck = Session(
        frame,
        LIMITS,
        epsilon=1,
        source=InsecureSeededSource(3, i_understand_this_is_not_private=True),
    )
    sql = "SELECT COUNT(*), AVG(x) FROM t"
    # Units within the same values whatever rows they keep: the same exact aggregates and
    # the same seed give the same answer on both engines.
    assert s.query(sql, epsilon=0.5).rows == duck.query(sql, epsilon=0.5).rows
    assert s.remaining_epsilon == 0.5
    scratch = s._scratch
    assert scratch is not None and scratch.is_dir()
    s.close()
    assert not scratch.exists()  # the private bounded copy goes with the session
    with pytest.raises(ParameterError, match="ledger"):
        Session(frame, LIMITS, epsilon=1, backend="spark", ledger=tmp_path / "l")


def test_sums_of_squares_do_not_overflow_on_spark(spark: Any, tmp_path: Path) -> None:
    """VARIANCE's centred sum of squares passes 2^63 here: 2.4M rows at the bound 1e6 of
    [-1e6, 1e6], snapped on the grid of step 1/2 (``grid_step``) to 2e6 each, so the exact
    value is n · (2e6)^2 = 9.6e18 > 2^63 − 1 ≈ 9.22e18. DuckDB sums into HUGEINT; Spark must
    give the same exact value (not an overflow error, not a wrapped sum)."""
    n = 2_400_000
    path = tmp_path / "wide.parquet"
    pd.DataFrame({"x": np.full(n, 1e6)}).to_parquet(path)
    schema = one_table("t", {"x": floats(-1e6, 1e6)})
    cur = Curator(tmp_path / "s.duckdb")
    try:
        cur.register_dataset("wide_duckdb", str(path), schema)
        cur.register_dataset("wide_spark", str(path), schema, backend="spark")
        duck, sp = _both(cur, "SELECT VARIANCE(x) FROM {t}", "wide")
        _same(duck, sp)
        # (csum, csumsq, count) with centre 0: n·2e6, n·(2e6)^2, n.
        assert sp.values[()] == (n * 2_000_000, n * 2_000_000**2, n)
    finally:
        cur.close()
