"""Declared bounds kept by DuckDB's own constraints (infodp.curator.backends.bound_checks).

Registration writes, on each bounded copy, ``CHECK (copy BETWEEN lo AND hi)`` (and ``NOT NULL``
when the null policy leaves no NULL); a query leaves out its per-row bound only when it reads
exactly those constraints back from the catalogue. The tests: DuckDB refuses the writes the
per-row bound used to neutralise; every other table (replaced, looser, without NOT NULL) is
bounded per row again; both forms give the same aggregates; the form never depends on the data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _stores import cats, floats, ints, one_table
from infodp.curator.backends import duckdb as duckdb_backend
from infodp.curator.backends.bound_checks import enforced_bounds
from infodp.curator.engine import Curator

SCHEMA: dict[str, Any] = one_table(
    "t",
    {
        "x": ints(0, 9),  # null policy error: NOT NULL and the range
        "y": floats(-2, 2, "drop"),  # dropped values are NULL: the range only
        "g": cats("a", "b"),
    },
)
SQL = "SELECT g, COUNT(*), SUM(x), COUNT(y), AVG(y) FROM t GROUP BY g"


def _store(where: Path | str, frame: pd.DataFrame) -> Curator:
    cur = Curator(where, keep_open=True)  # a service's kept connection reads the constraints
    cur.register_dataset("t", frame, SCHEMA)
    return cur


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {"x": [1, 2, 30, -4, 9], "y": [0.5, None, 7.0, -1.0, 2.0], "g": ["a", "b", "a", "b", "a"]}
    )


def _exact(db: Path) -> dict[tuple[str, ...], tuple[int, ...]]:
    """The bounded aggregates of :data:`SQL` read on a kept connection (a service's)."""
    cur = Curator(db, keep_open=True)
    try:
        return cur.exact_aggregates(SQL).values
    finally:
        cur.close()


def _edit(db: Path, *statements: str) -> None:
    """Run ``statements`` on the store with DuckDB itself (as an owner editing it would)."""
    con = duckdb.connect(str(db))
    try:
        for statement in statements:
            con.execute(statement)
    finally:
        con.close()


def _enforced(db: Path) -> frozenset[str]:
    cur = Curator(db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        return enforced_bounds(con, "t", cur.schema("t"))
    finally:
        con.close()
        cur.close()


def test_writes_that_leave_the_declared_range_are_refused(tmp_path: Path) -> None:
    # The grid of x (int, [0, 9]) is the integers 0..9; y's grid is finer than 1 (a float
    # column), so its copy's range is wider than [-2, 2] in grid units but finite.
    db = tmp_path / "s.duckdb"
    _store(db, _frame()).close()
    con = duckdb.connect(str(db))
    try:
        for edit in (
            "UPDATE t SET __bnd_x = 10",
            "UPDATE t SET __bnd_x = -1",
            "UPDATE t SET __bnd_x = NULL",  # a NULL-free copy stays NULL-free
            "UPDATE t SET __bnd_y = 1099511627776",
            "INSERT INTO t (x, y, g, __bnd_x, __bnd_y) VALUES (1, 1.0, 'a', 1000, 0)",
        ):
            with pytest.raises(duckdb.ConstraintException):
                con.execute(edit)
        # Within the range (and NULL where the policy drops) a write is the owner's business.
        con.execute("UPDATE t SET __bnd_x = 9, __bnd_y = NULL WHERE g = 'b'")
    finally:
        con.close()
    assert _enforced(db) == {"x", "y"}


@pytest.mark.parametrize(
    ("replaced", "still_enforced"),
    [
        # A table as an older store holds it (CREATE TABLE AS: no constraint at all).
        ("CREATE TABLE t AS SELECT * FROM old", set()),
        # A looser range than the declaration's is not the declaration's (y's is exact).
        (
            "CREATE TABLE t (x BIGINT, y DOUBLE, g VARCHAR, "
            "__bnd_x BIGINT NOT NULL CHECK (__bnd_x BETWEEN 0 AND 10), "
            "__bnd_y BIGINT CHECK (__bnd_y BETWEEN {y}))",
            {"y"},
        ),
        # Without NOT NULL the range does not keep a NULL out of x's copy; y may hold NULL.
        (
            "CREATE TABLE t (x BIGINT, y DOUBLE, g VARCHAR, "
            "__bnd_x BIGINT CHECK (__bnd_x BETWEEN 0 AND 9), "
            "__bnd_y BIGINT CHECK (__bnd_y BETWEEN {y}))",
            {"y"},
        ),
        # Another column's range, or a check over two columns, bounds nothing.
        (
            "CREATE TABLE t (x BIGINT, y DOUBLE, g VARCHAR, __bnd_x BIGINT NOT NULL "
            "CHECK (__bnd_x BETWEEN {y}), __bnd_y BIGINT, "
            "CHECK (__bnd_y BETWEEN 0 AND 9 OR __bnd_x >= 0))",
            set(),
        ),
    ],
    ids=["older store", "looser range", "no NOT NULL", "other columns"],
)
def test_a_table_without_the_exact_constraints_is_bounded_per_row(
    tmp_path: Path, replaced: str, still_enforced: set[str]
) -> None:
    db = tmp_path / "s.duckdb"
    _store(db, _frame()).close()
    want = _exact(db)
    # y's copy range as registration declared it, read back from the catalogue.
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(
            "SELECT expression FROM duckdb_constraints() WHERE table_name = 't' "
            "AND constraint_column_names = ['__bnd_y']"
        ).fetchone()
    assert row is not None
    y_range = str(row[0]).strip("()").split("BETWEEN")[1]
    refill = [] if "AS SELECT" in replaced else ["INSERT INTO t SELECT * FROM old"]
    _edit(db, "ALTER TABLE t RENAME TO old", replaced.format(y=y_range), *refill, "DROP TABLE old")
    assert _enforced(db) == still_enforced
    assert _exact(db) == want  # the same rows, the same bounds


def test_a_replaced_table_with_out_of_range_rows_is_bounded_again(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    _store(db, _frame()).close()
    _edit(
        db,
        "CREATE TABLE unchecked AS SELECT * FROM t",
        "DROP TABLE t",
        "ALTER TABLE unchecked RENAME TO t",
        "UPDATE t SET __bnd_x = 1000 WHERE x = 2",  # left out: its row goes
        "UPDATE t SET __bnd_y = -1099511627776 WHERE x = 1",  # clamped to the lower end
    )
    values = _exact(db)
    # Rows of g='a': x = 1, 30 -> 9, 9 (y: 0.5 -> clamped to -2, 7.0 -> 2, 2.0); of 'b': only
    # x = -4 -> 0 (the row x = 2 is left out), y = -1.
    count_a, sum_a = values[("a",)][:2]
    count_b, sum_b = values[("b",)][:2]
    assert (count_a, sum_a, count_b, sum_b) == (3, 1 + 9 + 9, 1, 0)


ROWS = st.lists(
    st.tuples(
        st.integers(-50, 50),
        st.one_of(st.none(), st.floats(-10, 10), st.sampled_from([float("nan"), float("inf")])),
        st.sampled_from(["a", "b", "c"]),
    ),
    min_size=1,
    max_size=40,
)


@pytest.mark.slow  # ~3 CPU-s (40 stores in memory)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ROWS)
def test_both_forms_give_the_same_aggregates(rows: list[tuple[int, float | None, str]]) -> None:
    # The statement without per-row bounds (the constraints keep them) and the one with them
    # read the same rows and values of a registered table: ties, NULLs, NaN, ±inf, values out
    # of the bounds and keys outside the declared ones.
    frame = pd.DataFrame(rows, columns=["x", "y", "g"])
    cur = _store(":memory:", frame)
    try:
        constrained = cur.exact_aggregates(SQL).values
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(duckdb_backend, "enforced_bounds", lambda *_: frozenset())
            per_row = cur.exact_aggregates(SQL).values
    finally:
        cur.close()
    assert constrained == per_row


def test_the_form_of_a_query_is_the_same_on_neighbouring_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Which form runs is decided from the declaration and the catalogue: two stores that
    # differ in one person (one with an out-of-range value, one with a NULL) run one text.
    texts: list[list[str]] = []
    compile_ = duckdb_backend.compiled_statements

    def spy(*args: Any, **kwargs: Any) -> list[str]:
        out = compile_(*args, **{**kwargs, "salted": False})
        if not kwargs.get("empty"):
            texts.append(out)
        return out

    monkeypatch.setattr(duckdb_backend, "compiled_statements", spy)
    frame = _frame()
    neighbour = pd.concat([frame, pd.DataFrame({"x": [500], "y": [None], "g": ["b"]})])
    for i, data in enumerate((frame, neighbour)):
        cur = _store(tmp_path / f"{i}.duckdb", data)
        cur.exact_aggregates(SQL)
        cur.close()
    assert len(texts) == 2 and texts[0] == texts[1]
    assert "BETWEEN" not in texts[0][0] and "CASE" not in texts[0][0]


def test_a_connection_opened_for_one_query_keeps_the_per_row_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Reading the catalogue on a fresh connection costs more than the bound saves on one query
    # (below ~10M rows): only a kept connection reads it. The choice is the curator's
    # configuration, the same on every store.
    texts: list[str] = []
    compile_ = duckdb_backend.compiled_statements

    def spy(*args: Any, **kwargs: Any) -> list[str]:
        out = compile_(*args, **kwargs)
        if not kwargs.get("empty"):
            texts.extend(out)
        return out

    monkeypatch.setattr(duckdb_backend, "compiled_statements", spy)
    db = tmp_path / "s.duckdb"
    _store(db, _frame()).close()
    for keep_open in (False, True):
        cur = Curator(db, keep_open=keep_open)
        cur.exact_aggregates(SQL)
        cur.close()
    per_query, kept = texts
    assert "BETWEEN" in per_query and "CASE" in per_query
    assert "BETWEEN" not in kept and "CASE" not in kept
