"""AVG's rule: the centred sum's sensitivity by enumeration of neighbours, its information
against the closed form over the range found by enumeration, and the coverage of the
released interval (Fieller 1954 inversion) over seeded draws."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _rules_oracle import brute_l1, coverage_floor, dlap_information, simulated_cells
from _rules_oracle import table_schema as schema
from infodp.curator.plan.grid import column_grid
from infodp.curator.plan.nodes import Measurement, MeasurementKind
from infodp.curator.price.cost import plan_cost
from infodp.curator.rules import measure_for, measurements, rule_for
from infodp.curator.sql.parse import parse_query
from infodp.errors import ParameterError

CSUM_X = Measurement(MeasurementKind.CSUM, "x")
COUNT_X = Measurement(MeasurementKind.COUNT, "x")


def _centre(lo: int, hi: int) -> int:
    return column_grid(schema(1, lo, hi).column("x")).center


@pytest.mark.parametrize("m", [1, 2, 3])
@pytest.mark.parametrize("bounds", [(0, 9), (-7, 5), (3, 8)])
def test_centred_sum_sensitivity_is_the_brute_force_l1(m: int, bounds: tuple[int, int]) -> None:
    lo, hi = bounds
    c = _centre(lo, hi)
    want = brute_l1(lambda v: v - c, range(lo, hi + 1), m)  # a row adds v − centre
    assert measure_for(CSUM_X).sensitivity(CSUM_X, schema(m, lo, hi)) == want


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 8), lo=st.integers(-50, 50), width=st.integers(1, 60), extra=st.integers(0, 30)
)
def test_centred_sum_sensitivity_grows_with_m_and_the_bounds(
    m: int, lo: int, width: int, extra: int
) -> None:
    rule, hi = measure_for(CSUM_X), lo + width
    base = rule.sensitivity(CSUM_X, schema(m, lo, hi))
    assert base <= rule.sensitivity(CSUM_X, schema(m + 1, lo, hi))
    # widened symmetrically (the centre stays), the radius cannot shrink
    assert base <= rule.sensitivity(CSUM_X, schema(m, lo - extra, hi + extra))


@pytest.mark.parametrize("rows", [1, 2, 3])
def test_information_is_the_discrete_laplace_bound_over_the_centred_range(rows: int) -> None:
    lo, hi = 3, 8
    c = _centre(lo, hi)
    sums = {
        sum(v - c for v in cell)
        for size in range(rows + 1)
        for cell in itertools.combinations_with_replacement(range(lo, hi + 1), size)
    }
    s = schema(1, lo, hi, rows=rows)
    cost = plan_cost(parse_query("SELECT AVG(x) FROM t", s), s, Fraction(1), Fraction(0), rows)
    part = next(p for p in cost.parts if p.measurement == CSUM_X)
    got = measure_for(CSUM_X).information(part, s, rows)
    assert got == pytest.approx(dlap_information(max(sums) - min(sums), part.scale), rel=1e-9)


def test_avg_shares_its_count_with_count_of_the_column() -> None:
    plan = parse_query("SELECT AVG(x), COUNT(x), SUM(x) FROM t", schema())
    assert measurements(plan) == (CSUM_X, COUNT_X, Measurement(MeasurementKind.SUM, "x"))


@pytest.mark.slow  # statistical: coverage over many releases
@pytest.mark.parametrize(("n", "mean"), [(40, 2.5), (400, 8.75)])
def test_interval_covers_the_true_mean_at_the_stated_level(n: int, mean: float) -> None:
    s, beta, draws = schema(1, 0, 10), 0.1, 400
    c = _centre(0, 10)
    exact = {CSUM_X: round((mean - c) * n), COUNT_X: n}
    true = c + exact[CSUM_X] / n
    agg, cells = simulated_cells(
        "SELECT AVG(x) FROM t", s, exact, draws, epsilon=Fraction(1, 2), beta=beta, seed=n
    )
    _, intervals = rule_for(agg).column(agg, cells)
    covered = sum(lo <= true <= hi for lo, hi in intervals)
    assert covered / draws >= coverage_floor(1 - beta, draws)


def test_avg_refusals_name_the_construct() -> None:
    s = schema()
    with pytest.raises(ParameterError, match=r"AVG\(DISTINCT"):
        parse_query("SELECT AVG(DISTINCT x) FROM t", s)
    with pytest.raises(ParameterError, match=r"AVG\(u\) needs declared bounds"):
        parse_query("SELECT AVG(u) FROM t", s)
