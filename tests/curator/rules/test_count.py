"""COUNT's rule: sensitivity by enumeration of neighbours, information against its closed
form, and interval coverage over seeded draws (tests/_rules_oracle.py)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _rules_oracle import (
    brute_l1,
    coverage_floor,
    dlap_information,
    simulated_cells,
)
from _rules_oracle import table_schema as schema
from infodp.curator.plan.nodes import Measurement, MeasurementKind
from infodp.curator.price.cost import plan_cost
from infodp.curator.rules import measure_for, rule_for
from infodp.curator.sql.parse import parse_query
from infodp.errors import ParameterError


@pytest.mark.parametrize("m", [1, 2, 3])
@pytest.mark.parametrize("kind", [MeasurementKind.COUNT_ROWS, MeasurementKind.COUNT])
def test_sensitivity_is_the_brute_force_l1_over_neighbours(m: int, kind: MeasurementKind) -> None:
    meas = Measurement(kind, None if kind == MeasurementKind.COUNT_ROWS else "x")
    want = brute_l1(lambda v: 1, range(0, 10), m)  # each row counts once, in its cell
    assert measure_for(meas).sensitivity(meas, schema(m)) == want == m


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 20))
def test_sensitivity_grows_with_the_rows_per_unit(m: int) -> None:
    meas = Measurement(MeasurementKind.COUNT_ROWS)
    rule = measure_for(meas)
    assert rule.sensitivity(meas, schema(m)) <= rule.sensitivity(meas, schema(m + 1))


@pytest.mark.parametrize("rows", [1, 10, 1000])
def test_information_is_the_discrete_laplace_bound_over_the_count_range(rows: int) -> None:
    # A cell's count ranges over 0..rows (a filter or group holds any number of the rows).
    s = schema(rows=rows)
    cost = plan_cost(parse_query("SELECT COUNT(*) FROM t", s), s, Fraction(1, 2), Fraction(0), rows)
    (part,) = cost.parts
    got = measure_for(part.measurement).information(part, s, rows)
    assert got == pytest.approx(dlap_information(rows, part.scale), rel=1e-9)
    assert cost.information_nats >= got  # the total rounds up


def test_information_is_unbounded_without_a_declared_row_bound() -> None:
    s = schema()
    cost = plan_cost(parse_query("SELECT COUNT(*) FROM t", s), s, Fraction(1), Fraction(0), None)
    assert cost.information_nats == float("inf")


@pytest.mark.parametrize("true", [0, 3, 500])
def test_interval_covers_the_true_count_at_the_stated_level(true: int) -> None:
    s, beta, n = schema(), 0.1, 3000
    meas = Measurement(MeasurementKind.COUNT_ROWS)
    agg, cells = simulated_cells(
        "SELECT COUNT(*) FROM t", s, {meas: true}, n, epsilon=Fraction(1, 4), beta=beta, seed=true
    )
    values, intervals = rule_for(agg).column(agg, cells)
    covered = sum(lo <= true <= hi for lo, hi in intervals)
    assert covered / n >= coverage_floor(1 - beta, n)
    assert all(v is not None and v >= 0 for v in values)  # clamped at 0 (post-processing)


def test_count_refusals_name_the_construct() -> None:
    s = schema()
    with pytest.raises(ParameterError, match=r"SUM\(DISTINCT"):  # DISTINCT counts only
        parse_query("SELECT SUM(DISTINCT x) FROM t", s)
    with pytest.raises(ParameterError, match="unknown column 'nope'"):
        parse_query("SELECT COUNT(nope) FROM t", s)


@pytest.mark.parametrize(
    ("column", "m"), [(c, m) for c in ("x", "c", "u", "g") for m in (1, 3)] + [("pid", 3)]
)
def test_a_count_of_any_column_is_priced_as_count_star(column: str, m: int) -> None:
    # COUNT(col) is COUNT(*) over the rows where col is not NULL: one row of a unit adds at
    # most 1 to one cell, so Δ = m whatever the column (text, float without bounds, the
    # category, the privacy unit's id), and the discrete Laplace scale is b = Δ/ε.
    s = schema(m)  # m = 1: a row-level table (no id column)
    eps = Fraction(1, 2)
    (part,) = plan_cost(
        parse_query(f"SELECT COUNT({column}) FROM t", s), s, eps, Fraction(0), None
    ).parts
    (star,) = plan_cost(parse_query("SELECT COUNT(*) FROM t", s), s, eps, Fraction(0), None).parts
    assert part.measurement == Measurement(MeasurementKind.COUNT, column)
    assert part.sensitivity == brute_l1(lambda v: 1, range(0, 10), m) == m
    assert part.scale == star.scale == m / eps


def test_a_count_of_the_undeclared_privacy_unit_is_a_count() -> None:
    s = schema(2)
    undeclared = type(s)(s.table, s.privacy_unit, tuple(c for c in s.columns if c.name != "pid"), 2)
    (agg,) = parse_query("SELECT COUNT(PID) FROM t", undeclared).aggregates
    assert (agg.func, agg.column) == ("count", "pid")
