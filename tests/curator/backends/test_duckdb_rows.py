"""The DuckDB backend reads its aggregate's rows column at a time; a row at a time gives the
same aggregates by key (NULL keys left out)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from infodp.curator.backends import base as backend


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
    assert backend.rows_by_key(rows, ng) == want
