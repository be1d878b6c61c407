"""Relation columns (infodp.curator.relations.values): a derived column's bounded copy is
what registration would store for a column of its declaration, recomputed here in Python
(clamp to the bounds, divide by the grid step, round half away from zero)."""

from __future__ import annotations

import math

import duckdb
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from infodp.curator.declaration.schema import ColumnSpec, NullPolicy
from infodp.curator.plan.grid import column_grid
from infodp.curator.relations.values import snap_over

_CON = duckdb.connect()


def _snapped(spec: ColumnSpec, v: float | None) -> int | None:
    if v is None or not math.isfinite(v):
        return None
    g = column_grid(spec)
    assert spec.bounds is not None
    x = min(max(v, spec.bounds[0]), spec.bounds[1]) / g.step
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(st.none(), st.floats(-1e4, 1e4), st.just(math.inf), st.just(math.nan)),
    st.sampled_from([(0.0, 5500.000000000002), (-3.5, 1.25), (0.0, 1.0)]),
    st.sampled_from(["int", "float"]),
)
def test_bounded_copy_is_registrations_snap(v, bounds, kind):
    low, high = bounds
    # An int value is finite by construction (interval arithmetic on finite bounds); a
    # float one is tested for NaN and ±inf, which are dropped like NULL.
    assume(kind == "float" or v is None or math.isfinite(v))
    if kind == "int":
        low, high = float(math.ceil(low)), float(math.floor(high))
    spec = ColumnSpec("d", kind, (low, high), nulls=NullPolicy("drop"))
    cell = "NULL" if v is None else f"CAST('{v!r}' AS DOUBLE)"
    tree = snap_over(spec, exp.column("v"))
    got = _CON.execute(f"SELECT {tree.sql()} FROM (SELECT {cell} AS v)").fetchone()
    assert got is not None
    want = _snapped(spec, v)
    if want is None:
        assert got[0] is None
    else:
        assert got[0] == want
