"""Quantiles on the Spark backend: the law fed to the sampler is the independent reference.

Each tied or uniform dataset (units of two equal rows, m = 2) is registered with Spark and
with DuckDB from the same Parquet file. The sorted per-group histogram Spark returns must give
the law of ``tests/_quantile_reference.py`` point by point (every grid point scored by brute
force, 40-digit exponential-mechanism weights; McSherry & Talwar 2007, Dwork & Roth 2014
Def. 3.4) and equal DuckDB's histogram; grouped histograms agree across the engines; tied
data answer the tied value through a Spark query.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

from _quantile_reference import mechanism_law, reference_law
from _stores import TEXT, cats, floats, ints, one_table
from infodp.curator.engine import Curator
from infodp.mechanisms.quantile import grid_quantile_law, score_sensitivity
from infodp.mechanisms.sampling import InsecureSeededSource

pytestmark = pytest.mark.spark

LO, HI = 0, 20
SCHEMA = one_table(
    "t", {"pid": TEXT, "x": ints(LO, HI), "g": cats("a", "b")}, unit="pid", max_rows_per_unit=2
)
UNITS = {
    "all equal": [9] * 12,
    "two values 40/60": [3] * 4 + [15] * 6,
    "40% zeros": [0] * 8 + list(range(5, 17)),
    "uniform": list(range(LO, HI + 1)),
}


def frame(units: list[int]) -> pd.DataFrame:
    n = len(units)
    return pd.DataFrame(
        {
            "pid": [f"u{i}" for i in range(n) for _ in (0, 1)],
            "x": np.repeat(units, 2),
            "g": ["a" if i % 3 else "b" for i in range(n) for _ in (0, 1)],
        }
    )


@pytest.fixture(scope="module")
def store(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Curator]:
    root = tmp_path_factory.mktemp("quantile-spark")
    cur = Curator(
        root / "s.duckdb", source=InsecureSeededSource(21, i_understand_this_is_not_private=True)
    )
    for i, units in enumerate(UNITS.values()):
        path = root / f"d{i}.parquet"
        frame(units).to_parquet(path)
        # Synthetic ids u0, u1, ... in every case: unrelated datasets, declared so.
        cur.register_dataset(f"d{i}_spark", str(path), SCHEMA, backend="spark", independent=True)
        cur.register_dataset(f"d{i}_duckdb", str(path), SCHEMA, independent=True)
    yield cur
    cur.close()


@pytest.mark.parametrize("name", list(UNITS))
def test_spark_feeds_the_sampler_the_reference_law(store: Curator, name: str) -> None:
    i = list(UNITS).index(name)
    rows = [v for v in UNITS[name] for _ in (0, 1)]
    for q in (Fraction(1, 2), Fraction(9, 10)):
        sql = f"SELECT QUANTILE(x, {float(q)}) FROM d{i}_{{}}"
        (spark_hist,) = store.exact_aggregates(sql.format("spark")).histograms.values()
        (duck_hist,) = store.exact_aggregates(sql.format("duckdb")).histograms.values()
        np.testing.assert_array_equal(spark_hist, duck_hist)
        law = grid_quantile_law(spark_hist[0], spark_hist[1], LO, HI, q)
        got = mechanism_law(law, LO, HI, Fraction(1), score_sensitivity(2, q))
        want = reference_law(rows, LO, HI, q, Fraction(1), rows_per_unit=2)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)


def test_grouped_histograms_agree_across_engines(store: Curator) -> None:
    sql = "SELECT g, MEDIAN(x) FROM d2_{} GROUP BY g"
    spark = store.exact_aggregates(sql.format("spark")).histograms
    duck = store.exact_aggregates(sql.format("duckdb")).histograms
    assert spark.keys() == duck.keys() and len(spark) == 2
    for key, hist in spark.items():
        np.testing.assert_array_equal(hist, duck[key])


def test_tied_data_answer_the_tied_value_on_spark(store: Curator) -> None:
    store.add_analyst("a", "d0_spark", epsilon=1000)
    for _ in range(3):
        r = store.query("a", "SELECT MEDIAN(x) FROM d0_spark", epsilon=20)
        assert r.rows[0][0] == 9


@pytest.mark.parametrize("name", ["40% zeros", "uniform"])
def test_spark_min_max_aim_at_the_rank_inside_the_extreme(store: Curator, name: str) -> None:
    # MIN and MAX read the same histogram; their law aims at rank t = ⌈(2m/ε)(ln K + ln 20)⌉
    # from the extreme (at most n/2), scored by brute force in the reference (m = 2 here).
    import math

    from infodp.mechanisms.quantile import extreme_target

    i = list(UNITS).index(name)
    rows = [v for v in UNITS[name] for _ in (0, 1)]
    eps = Fraction(4)
    t = math.ceil(float(2 * 2 / eps) * (math.log(HI - LO + 1) + math.log(20)))
    assert extreme_target(eps, 2, HI - LO + 1) == t
    for func, q in (("MIN", Fraction(0)), ("MAX", Fraction(1))):
        (hist,) = store.exact_aggregates(f"SELECT {func}(x) FROM d{i}_spark").histograms.values()
        law = grid_quantile_law(hist[0], hist[1], LO, HI, q, target=t)
        got = mechanism_law(law, LO, HI, eps, score_sensitivity(2, q))
        want = reference_law(rows, LO, HI, q, eps, rows_per_unit=2, aim=t)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    store.add_analyst("m", f"d{i}_spark", epsilon=1000)
    r = store.query("m", f"SELECT MIN(x), MAX(x) FROM d{i}_spark", epsilon=2 * eps)
    low, high = r.confidence_intervals[0]
    assert f"aims at the value of rank {t} from the bottom" in low["note"]
    assert f"aims at the value of rank {t} from the top" in high["note"]


def test_an_inner_float_quantile_reads_the_finer_grid_on_both_engines(
    store: Curator, tmp_path: Any
) -> None:
    # A float column on [0, 8]: the sum grid's step is 2^(3 - 20); a median's grid is that
    # split in 16, 2^-21, read from the stored values. Spark's histogram equals DuckDB's and
    # numpy's snapping of the same values (round half away from zero; exact in binary here).
    x = [0.1, 0.3, 0.3, 2.5, 7.9, float("nan"), 4.0, 1.0 / 3]
    path = tmp_path / "f.parquet"
    pd.DataFrame({"pid": [f"u{i}" for i in range(len(x))], "x": x}).to_parquet(path)
    schema = one_table("t", {"x": floats(0, 8, "drop")})
    store.register_dataset("f_spark", str(path), schema, backend="spark", independent=True)
    store.register_dataset("f_duckdb", str(path), schema, independent=True)
    (spark_hist,) = store.exact_aggregates("SELECT MEDIAN(x) FROM f_spark").histograms.values()
    (duck_hist,) = store.exact_aggregates("SELECT MEDIAN(x) FROM f_duckdb").histograms.values()
    np.testing.assert_array_equal(spark_hist, duck_hist)
    finite = np.array([v for v in x if v == v])
    snapped = np.floor(finite * 2.0**21 + 0.5).astype(np.int64)
    values, counts = np.unique(snapped, return_counts=True)
    np.testing.assert_array_equal(duck_hist[0], values)
    np.testing.assert_array_equal(duck_hist[1], counts)
