"""COUNT(column) of any declared column, and of the privacy unit's column, on both engines.

The exact part is plain SQL's COUNT(column) over the same rows (DuckDB on the pandas frame,
an independent oracle: every unit is within its row limit, so bounding keeps every row);
neighbouring datasets (one unit removed) move the exact counts by at most the sensitivity the
cost charges (m) and give answers of the same shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

from _stores import TEXT, cats, one_table
from infodp.curator.engine import Curator
from infodp.curator.price.cost import plan_cost
from infodp.mechanisms.sampling import InsecureSeededSource

M = 3
SCHEMA = one_table(
    "t",
    {
        "pid": TEXT,
        "t": {"type": "text", "nulls": "drop"},
        "n": {"type": "int", "nulls": "drop"},
        "f": {"type": "float", "nulls": "drop"},
        "x": {"type": "int", "bounds": [0, 9], "nulls": "drop"},
        "g": cats("a", "b"),
    },
    unit="pid",
    max_rows_per_unit=M,
)
COUNTS = "COUNT(t), COUNT(n), COUNT(f), COUNT(x), COUNT(pid), COUNT(g), COUNT(*)"


def frame(units: int = 60, drop: str | None = None) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, M + 1, units)
    n = int(sizes.sum())
    out = pd.DataFrame(
        {
            "pid": [f"u{i}" for i, k in enumerate(sizes) for _ in range(k)],
            "t": rng.choice(["2020-01-01", "2021-06-30", "z"], n).astype(object),
            "n": pd.array(rng.integers(-(10**9), 10**9, n), dtype="Int64"),
            "f": rng.normal(0, 1e6, n),
            "x": pd.array(rng.integers(0, 10, n), dtype="Int64"),
            "g": rng.choice(["a", "b"], n),
        }
    )
    for j, col in enumerate(("t", "n", "f", "x")):
        out.loc[rng.random(n) < 0.2 + 0.1 * j, col] = None
    return out if drop is None else out[out.pid != drop].reset_index(drop=True)


def plain(df: pd.DataFrame, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    con.register("t", df)
    return [tuple(r) for r in con.execute(sql).fetchall()]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Curator]:
    root = tmp_path_factory.mktemp("count-values")
    cur = Curator(
        root / "s.duckdb", source=InsecureSeededSource(3, i_understand_this_is_not_private=True)
    )
    cur.register_dataset("t", frame(), SCHEMA)
    yield cur
    cur.close()


@pytest.mark.slow
def test_the_exact_counts_are_plain_sql_counts(store: Curator) -> None:
    got = store.exact_aggregates(f"SELECT {COUNTS} FROM t").values
    (want,) = plain(frame(), f"SELECT {COUNTS} FROM t")
    # The measurements are shared by equality: COUNT(*) is one, each COUNT(col) another.
    assert got == {(): want}


def test_the_grouped_exact_counts_are_plain_sql_counts(store: Curator) -> None:
    got = store.exact_aggregates("SELECT g, COUNT(t), COUNT(pid) FROM t GROUP BY g").values
    want = plain(frame(), "SELECT g, COUNT(t), COUNT(pid) FROM t GROUP BY g")
    assert got == {(g,): tuple(rest) for g, *rest in want}


def test_a_count_of_a_text_column_is_answered_with_the_count_star_interval(
    store: Curator,
) -> None:
    store.add_analyst("a", "t", epsilon=100)
    r = store.query("a", "SELECT COUNT(t) AS nt, COUNT(*) AS n FROM t", epsilon=2)
    (nt_ci, n_ci) = r.confidence_intervals[0]
    # Both counts have Δ = m and ε/2 each: the same discrete Laplace, the same half-width.
    assert nt_ci[1] - nt_ci[0] == n_ci[1] - n_ci[0]
    (want,) = plain(frame(), "SELECT COUNT(t) FROM t")
    assert abs(r.rows[0][0] - want[0]) <= (nt_ci[1] - nt_ci[0]) * 3


@pytest.mark.slow
def test_neighbouring_datasets_move_each_count_by_at_most_m(tmp_path: Path) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    full, less = frame(), frame(drop="u0")
    assert int((full.pid == "u0").sum()) == M  # the removed unit holds m rows
    cur.register_dataset("t", full, SCHEMA)
    cur.register_dataset("t2", less, {**SCHEMA, "table": "t2"}, independent=True)
    for sql in (f"SELECT {COUNTS} FROM {{}}", "SELECT g, COUNT(t), COUNT(pid) FROM {} GROUP BY g"):
        a = cur.exact_aggregates(sql.format("t")).values
        b = cur.exact_aggregates(sql.format("t2")).values
        assert a.keys() == b.keys()
        for i in range(len(next(iter(a.values())))):
            l1 = sum(abs(int(a[k][i] or 0) - int(b[k][i] or 0)) for k in a)
            assert l1 <= M
        plan, schema, _, _ = cur.plan(sql.format("t"))
        parts = plan_cost(plan, schema, Fraction(1), Fraction(0), None).parts
        assert {p.sensitivity for p in parts} == {M}  # the L1 bound just checked
    for name in ("t", "t2"):
        cur.add_analyst(f"a_{name}", name, epsilon=10)
    ra = cur.query("a_t", f"SELECT {COUNTS} FROM t", epsilon=1)
    rb = cur.query("a_t2", f"SELECT {COUNTS} FROM t2", epsilon=1)
    assert ra.columns == rb.columns and len(ra.rows) == len(rb.rows) == 1
    cur.close()


@pytest.mark.spark
def test_spark_counts_equal_plain_sql_counts(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    frame().to_parquet(path)
    cur = Curator(tmp_path / "s.duckdb")
    cur.register_dataset("t", str(path), SCHEMA, backend="spark")
    got = cur.exact_aggregates(f"SELECT {COUNTS} FROM t").values
    (want,) = plain(frame(), f"SELECT {COUNTS} FROM t")
    assert got == {(): want}
    grouped = cur.exact_aggregates("SELECT g, COUNT(t), COUNT(pid) FROM t GROUP BY g").values
    assert grouped == {
        (g,): tuple(rest)
        for g, *rest in plain(frame(), "SELECT g, COUNT(t), COUNT(pid) FROM t GROUP BY g")
    }
    cur.close()
