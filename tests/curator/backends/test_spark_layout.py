"""The bounded Parquet copy a Spark dataset reads: compact types, only bounded values.

Bounded columns are stored as 32-bit integers when every grid value fits (half the bytes a
query scans; the grid of ``infodp.curator.plan.grid.grid_step`` keeps snapped values below 2^24 in
magnitude, so they always do), and queries see them as BIGINT, so sums and products are
computed in 64 bits exactly as on DuckDB.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from _stores import ints, one_table
from infodp.curator.backends.duckdb import bounded_column
from infodp.curator.engine import Curator


@pytest.mark.spark
def test_bounded_columns_are_int32_when_the_grid_fits_and_bigint_to_queries(
    spark: Any, tmp_path: Path
) -> None:
    rng = np.random.default_rng(12)
    small = rng.integers(-50, 150, 200)  # bounds [0, 100]: clamped, grid step 1
    big = rng.integers(0, 2 * 10**12, 200)  # bounds [0, 10^12]: grid step 2^19
    pd.DataFrame({"a": small, "b": big}).to_parquet(tmp_path / "src.parquet")
    schema = one_table("t", {"a": ints(0, 100), "b": ints(0, 10**12)})
    cur = Curator(tmp_path / "s.duckdb")
    try:
        cur.register_dataset("t", str(tmp_path / "src.parquet"), schema, backend="spark")
        copy = Path(str(cur.db) + ".bounded", "t")
        table = pq.read_table(copy)
        types = {f.name: str(f.type) for f in table.schema}
        assert types[bounded_column("a")] == "int32"
        assert types[bounded_column("b")] == "int32"
        # The stored values are the clamped source (independent: numpy's clip).
        stored = table.to_pandas()
        assert sorted(stored[bounded_column("a")]) == sorted(np.clip(small, 0, 100))
        # The grid step for max bound 10^12 is 2^(floor(log2 10^12) - 20) = 2^19 (grid_step's
        # rule); snapping rounds half away from zero (non-negative here: floor(x + 1/2)).
        snapped = np.floor(big.clip(0, 10**12) / 2.0**19 + 0.5).astype(np.int64)
        assert sorted(stored[bounded_column("b")]) == sorted(snapped)
        # Queries read a view that widens the 32-bit column back to BIGINT.
        view = cur.spark()._view("t")
        # The view lives in the curator's own query session (its plan settings pinned).
        table = cur.spark().session().table(view)
        seen = {f.name: f.dataType.typeName() for f in table.schema.fields}
        assert seen[bounded_column("a")] == seen[bounded_column("b")] == "long"
    finally:
        cur.close()
