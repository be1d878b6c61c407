"""SUM's rule: sensitivity by enumeration of neighbours (and its monotonicity), information
against the closed form over the sum's range found by enumeration, interval coverage."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _rules_oracle import brute_l1, coverage_floor, dlap_information, simulated_cells
from _rules_oracle import table_schema as schema
from infodp.curator.plan.nodes import Measurement, MeasurementKind
from infodp.curator.price.cost import plan_cost
from infodp.curator.rules import measure_for, rule_for
from infodp.curator.sql.parse import parse_query
from infodp.errors import ParameterError

SUM_X = Measurement(MeasurementKind.SUM, "x")


@pytest.mark.parametrize("m", [1, 2, 3])
@pytest.mark.parametrize("bounds", [(0, 9), (-7, 5), (3, 8), (-6, -2)])
def test_sensitivity_is_the_brute_force_l1_over_neighbours(m: int, bounds: tuple[int, int]) -> None:
    lo, hi = bounds
    want = brute_l1(lambda v: v, range(lo, hi + 1), m)  # a row adds its (clamped) value
    assert measure_for(SUM_X).sensitivity(SUM_X, schema(m, lo, hi)) == want


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 8),
    lo=st.integers(-50, 50),
    width=st.integers(1, 60),
    wider=st.tuples(st.integers(0, 20), st.integers(0, 20)),
)
def test_sensitivity_grows_with_rows_per_unit_and_with_the_bounds(
    m: int, lo: int, width: int, wider: tuple[int, int]
) -> None:
    rule, hi = measure_for(SUM_X), lo + width
    base = rule.sensitivity(SUM_X, schema(m, lo, hi))
    assert base <= rule.sensitivity(SUM_X, schema(m + 1, lo, hi))
    assert base <= rule.sensitivity(SUM_X, schema(m, lo - wider[0], hi + wider[1]))


def _sum_range(lo: int, hi: int, rows: int) -> int:
    """max − min of the sum over every cell of 0..rows values in lo..hi (enumerated)."""
    sums = {
        sum(cell)
        for size in range(rows + 1)
        for cell in itertools.combinations_with_replacement(range(lo, hi + 1), size)
    }
    return max(sums) - min(sums)


@pytest.mark.parametrize("rows", [1, 2, 3])
@pytest.mark.parametrize("bounds", [(0, 9), (-7, 5), (3, 8), (-6, -2)])
def test_information_is_the_discrete_laplace_bound_over_the_sum_range(
    rows: int, bounds: tuple[int, int]
) -> None:
    s = schema(1, *bounds, rows=rows)
    plan = parse_query("SELECT SUM(x) FROM t", s)
    (part,) = plan_cost(plan, s, Fraction(1, 3), Fraction(0), rows).parts
    got = measure_for(SUM_X).information(part, s, rows)
    assert got == pytest.approx(dlap_information(_sum_range(*bounds, rows), part.scale), rel=1e-9)


@pytest.mark.parametrize("true", [0, -40, 900])
def test_interval_covers_the_true_sum_at_the_stated_level(true: int) -> None:
    s, beta, n = schema(1, -10, 10), 0.05, 3000
    agg, cells = simulated_cells(
        "SELECT SUM(x) FROM t", s, {SUM_X: true}, n, epsilon=Fraction(1, 2), beta=beta, seed=7
    )
    step = cells.grid("x").step
    _, intervals = rule_for(agg).column(agg, cells)
    covered = sum(lo <= true * step <= hi for lo, hi in intervals)
    assert covered / n >= coverage_floor(1 - beta, n)


def test_sum_refusals_name_the_construct() -> None:
    s = schema()
    with pytest.raises(ParameterError, match=r"SUM\(DISTINCT"):
        parse_query("SELECT SUM(DISTINCT x) FROM t", s)
    with pytest.raises(ParameterError, match=r"SUM\(u\) needs declared bounds"):
        parse_query("SELECT SUM(u) FROM t", s)
    with pytest.raises(ParameterError, match=r"SUM\(c\) needs a numeric column"):
        parse_query("SELECT SUM(c) FROM t", s)
