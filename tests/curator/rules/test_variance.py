"""VARIANCE/STDDEV's rule: the centred sum of squares' sensitivity by enumeration of
neighbours, its information against the closed form over the enumerated range, and the
coverage of the released interval (sample and population) over seeded draws."""

from __future__ import annotations

import itertools
import statistics
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _rules_oracle import brute_l1, coverage_floor, dlap_information, simulated_cells
from _rules_oracle import table_schema as schema
from infodp.curator.plan.grid import column_grid
from infodp.curator.plan.nodes import Measurement, MeasurementKind
from infodp.curator.price.cost import plan_cost
from infodp.curator.rules import measure_for, rule_for
from infodp.curator.sql.parse import parse_query
from infodp.errors import ParameterError

CSUMSQ_X = Measurement(MeasurementKind.CSUMSQ, "x")


def _centre(lo: int, hi: int) -> int:
    return column_grid(schema(1, lo, hi).column("x")).center


@pytest.mark.parametrize("m", [1, 2, 3])
@pytest.mark.parametrize("bounds", [(0, 9), (-7, 5), (3, 8)])
def test_sum_of_squares_sensitivity_is_the_brute_force_l1(m: int, bounds: tuple[int, int]) -> None:
    lo, hi = bounds
    c = _centre(lo, hi)
    want = brute_l1(lambda v: (v - c) ** 2, range(lo, hi + 1), m)
    assert measure_for(CSUMSQ_X).sensitivity(CSUMSQ_X, schema(m, lo, hi)) == want


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 8), lo=st.integers(-50, 50), width=st.integers(1, 60), extra=st.integers(0, 30)
)
def test_sum_of_squares_sensitivity_grows_with_m_and_the_bounds(
    m: int, lo: int, width: int, extra: int
) -> None:
    rule, hi = measure_for(CSUMSQ_X), lo + width
    base = rule.sensitivity(CSUMSQ_X, schema(m, lo, hi))
    assert base <= rule.sensitivity(CSUMSQ_X, schema(m + 1, lo, hi))
    assert base <= rule.sensitivity(CSUMSQ_X, schema(m, lo - extra, hi + extra))


@pytest.mark.slow
@pytest.mark.parametrize("rows", [1, 2, 3])
def test_information_is_the_discrete_laplace_bound_over_the_squares_range(rows: int) -> None:
    lo, hi = -7, 5
    c = _centre(lo, hi)
    sums = {
        sum((v - c) ** 2 for v in cell)
        for size in range(rows + 1)
        for cell in itertools.combinations_with_replacement(range(lo, hi + 1), size)
    }
    s = schema(1, lo, hi, rows=rows)
    plan = parse_query("SELECT VARIANCE(x) FROM t", s)
    cost = plan_cost(plan, s, Fraction(1), Fraction(0), rows)
    part = next(p for p in cost.parts if p.measurement == CSUMSQ_X)
    got = measure_for(CSUMSQ_X).information(part, s, rows)
    assert got == pytest.approx(dlap_information(max(sums) - min(sums), part.scale), rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sql", "truth"),
    [
        ("SELECT VARIANCE(x) FROM t", statistics.variance),
        ("SELECT STDDEV_POP(x) FROM t", statistics.pstdev),
    ],
)
def test_interval_covers_the_true_value_at_the_stated_level(sql: str, truth: object) -> None:
    lo, hi, beta, draws = 0, 10, 0.1, 300
    data = [v for v in range(lo, hi + 1) for _ in range(30)] + [2] * 100
    c = _centre(lo, hi)
    exact = {
        Measurement(MeasurementKind.CSUM, "x"): sum(v - c for v in data),
        CSUMSQ_X: sum((v - c) ** 2 for v in data),
        Measurement(MeasurementKind.COUNT, "x"): len(data),
    }
    agg, cells = simulated_cells(
        sql, schema(1, lo, hi), exact, draws, epsilon=Fraction(3), beta=beta, seed=3
    )
    true = truth(data)
    _, intervals = rule_for(agg).column(agg, cells)
    covered = sum(a <= true <= b for a, b in intervals)
    assert covered / draws >= coverage_floor(1 - beta, draws)


def test_variance_refusals_name_the_construct() -> None:
    s = schema()
    with pytest.raises(ParameterError, match=r"VARIANCE\(u\) needs declared bounds"):
        parse_query("SELECT VAR_POP(u) FROM t", s)
    with pytest.raises(ParameterError, match=r"STDDEV\(c\) needs a numeric column"):
        parse_query("SELECT STDDEV_SAMP(c) FROM t", s)
    with pytest.raises(ParameterError, match="DISTINCT"):
        parse_query("SELECT VARIANCE(DISTINCT x) FROM t", s)
