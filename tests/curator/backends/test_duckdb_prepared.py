"""A kept-open reader runs a repeated statement as one prepared on its connection; the
aggregates are those of a fresh connection, and of pandas over the declared bounds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from infodp.curator.backends import duckdb as backend
from infodp.curator.engine import Curator

SCHEMA = {
    "table": "t",
    "privacy_unit": "row",
    "columns": {
        "g": {"type": "category", "categories": ["a", "b", "c"]},
        "v": {"type": "int", "bounds": [0, 10]},
    },
}


def test_repeated_statements_are_prepared_and_agree(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    frame = pd.DataFrame(
        {"g": rng.choice(["a", "b", "c", "d"], 500), "v": rng.integers(-5, 20, 500)}
    )
    db = tmp_path / "s.duckdb"
    Curator(db).register_dataset("t", frame, SCHEMA)
    clipped = frame.assign(v=frame.v.clip(0, 10))
    # Every group present (the engine then reads the declared ones), v clamped to [0, 10].
    want = {(g,): (len(part), int(part.v.sum())) for g, part in clipped.groupby("g")}
    sql = "SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g"
    kept = Curator(db, keep_open=True)
    runs = [kept.exact_aggregates(sql).values for _ in range(3)]
    assert all(r == want for r in runs)
    names, _ = backend._PREPARED[kept._con]
    assert len(names) == 1  # prepared at its second run, reused at its third
    fresh = Curator(db)  # a connection per query: nothing is prepared
    assert fresh.exact_aggregates(sql).values == want
    kept.close()
    fresh.close()
