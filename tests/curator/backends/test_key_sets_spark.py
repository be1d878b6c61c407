"""Key-set releases (``SELECT keys FROM t GROUP BY keys``) on the Spark backend: declared keys
released whole and for free, undeclared ones chosen by partition selection; the oracle is
plain SQL's distinct keys on the same frame (every group far above the threshold)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

from _stores import TEXT, cats, one_table
from infodp.curator.engine import Curator
from infodp.mechanisms.sampling import InsecureSeededSource

pytestmark = pytest.mark.spark

SCHEMA = one_table(
    "t",
    {"pid": TEXT, "educ": TEXT, "sex": TEXT, "g": cats("a", "b", "never")},
    unit="pid",
    max_rows_per_unit=2,
)


def frame() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    n = 3000
    return pd.DataFrame(
        {
            "pid": [f"u{i // 2}" for i in range(n)],
            "educ": rng.choice(["hs", "ba", "phd"], n),
            "sex": rng.choice(["1", "2"], n),
            "g": rng.choice(["a", "b"], n),
        }
    )


def test_spark_releases_declared_keys_for_free_and_selects_the_others(
    spark: Any, tmp_path: Path
) -> None:
    path = tmp_path / "t.parquet"
    frame().to_parquet(path)
    cur = Curator(
        tmp_path / "s.duckdb", source=InsecureSeededSource(9, i_understand_this_is_not_private=True)
    )
    cur.register_dataset("t", str(path), SCHEMA, backend="spark")
    cur.add_analyst("a", "t", epsilon=10, delta=Fraction(1, 1000))
    free = cur.query("a", "SELECT g FROM t GROUP BY g", epsilon=1)
    assert sorted(free.rows) == [("a",), ("b",), ("never",)] and free.cost.epsilon == 0
    chosen = cur.query("a", "SELECT sex, educ FROM t GROUP BY sex, educ", epsilon=1, delta=1e-5)
    con = duckdb.connect()
    con.register("t", frame())
    want = [tuple(r) for r in con.execute("SELECT DISTINCT sex, educ FROM t").fetchall()]
    assert sorted(chosen.rows) == sorted(want)
    cur.close()
