"""How the DuckDB backend runs and reads its aggregate: a kept-open reader runs a repeated
statement as one prepared on its connection (the aggregates are those of a fresh connection,
and of pandas over the declared bounds), and the rows are read column at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

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


@given(
    st.integers(min_value=0, max_value=2),
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.sampled_from(["a", "b", "c"]), st.integers(-3, 3)),
            st.one_of(st.none(), st.sampled_from(["x", "y"])),
            st.one_of(st.none(), st.integers(-(2**70), 2**70)),
            st.one_of(st.none(), st.integers(0, 10**6)),
        ),
        max_size=12,
    ),
)
def test_rows_by_key_column_at_a_time_match_a_row_loop(ng: int, rows: list[Any]) -> None:
    """The engine reads aggregate rows column at a time; a row at a time gives the same."""
    rows = [row[:ng] + row[2:] for row in rows]  # ng key columns, then two measurements
    want: dict[tuple[str, ...], tuple[int, ...]] = {}
    for row in rows:
        if None in row[:ng]:
            continue  # a NULL key is never released
        want[tuple(map(str, row[:ng]))] = tuple(int(v or 0) for v in row[ng:])
    if ng == 0:
        rows = rows[:1]  # an ungrouped aggregate has one row
        want = {(): tuple(int(v or 0) for v in rows[0])} if rows else {}
    assert backend._by_key(rows, ng) == want
