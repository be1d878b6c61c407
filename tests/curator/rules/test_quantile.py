"""QUANTILE/MEDIAN's rule: the score's sensitivity by enumeration of neighbours, the
information ln(#candidates), and the rank error (Dwork & Roth 2014, Thm 3.11) against the
exact law of the draw computed by brute force (tests/_quantile_reference.py)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest

from _quantile_reference import brute_score, reference_law
from _rules_oracle import table_schema as schema
from infodp.curator.plan.nodes import Measurement, MeasurementKind
from infodp.curator.price.cost import plan_cost
from infodp.curator.price.layout import Layout
from infodp.curator.rules import measure_for, rule_for
from infodp.curator.sql.parse import parse_query
from infodp.errors import ParameterError
from infodp.mechanisms.quantile import score_sensitivity

LO, HI = 0, 8


@pytest.mark.parametrize("q", [Fraction(0), Fraction(1, 4), Fraction(1, 2), Fraction(1)], ids=str)
@pytest.mark.parametrize("m", [1, 2])
def test_score_moves_at_most_the_drawn_sensitivity_between_neighbours(q: Fraction, m: int) -> None:
    # Every table of up to 3 rows on a small grid, and every unit of up to m rows added to it.
    meas = Measurement(MeasurementKind.QUANTILE, "x", q)
    delta = score_sensitivity(measure_for(meas).sensitivity(meas, schema(m, LO, 4)), q)
    values = range(LO, 5)
    worst = Fraction(0)
    for size in range(4):
        for table in itertools.combinations_with_replacement(values, size):
            for k in range(1, m + 1):
                for unit in itertools.combinations_with_replacement(values, k):
                    bigger = [*table, *unit]
                    for c in values:
                        moved = abs(brute_score(bigger, c, q) - brute_score(table, c, q))
                        worst = max(worst, moved)
    assert worst <= delta
    assert worst == delta  # and the bound is reached: it is the sensitivity


def test_information_is_the_log_of_the_candidate_count() -> None:
    s = schema(1, LO, HI)
    cost = plan_cost(parse_query("SELECT MEDIAN(x) FROM t", s), s, Fraction(1), Fraction(0), 10)
    (part,) = cost.parts
    assert measure_for(part.measurement).information(part, s, 10) == math.log(HI - LO + 1)


def _rank_error(sql: str, epsilon: Fraction, beta: float) -> float:
    s = schema(1, LO, HI)
    plan = parse_query(sql, s)
    cost = plan_cost(plan, s, epsilon, Fraction(0), None)
    agg = plan.aggregates[0]
    got = rule_for(agg).accuracy(agg, Layout.of(plan, s, cost, beta).cells(), None, "q")
    return got["rank_error"]


@pytest.mark.parametrize("q", [Fraction(1, 2), Fraction(9, 10)], ids=str)
@pytest.mark.parametrize("epsilon", [Fraction(1, 2), Fraction(2)], ids=str)
def test_rank_error_holds_under_the_exact_law(q: Fraction, epsilon: Fraction) -> None:
    # P(the drawn point has more than q·n + r rows below it or (1 − q)·n + r above) ≤ β,
    # summed over the brute-force law of the exponential mechanism on this grid.
    beta = 0.1
    r = _rank_error(f"SELECT QUANTILE(x, {float(q)}) FROM t", epsilon, beta)
    data = [1] * 5 + [4] * 9 + [7] * 6
    n = len(data)
    law = reference_law(data, LO, HI, q, epsilon, rows_per_unit=1)
    bad = sum(
        p
        for c, p in zip(range(LO, HI + 1), law, strict=True)
        if sum(x < c for x in data) > q * n + r or sum(x > c for x in data) > (1 - q) * n + r
    )
    assert bad <= beta


def test_quantile_refusals_name_the_argument() -> None:
    s = schema()
    with pytest.raises(ParameterError, match="quantile"):
        parse_query("SELECT QUANTILE(x, 1.5) FROM t", s)
    with pytest.raises(ParameterError, match="quantile"):
        parse_query("SELECT QUANTILE(x, 'a') FROM t", s)
    with pytest.raises(ParameterError, match=r"MEDIAN\(u\) needs declared bounds"):
        parse_query("SELECT MEDIAN(u) FROM t", s)


@pytest.mark.parametrize(
    ("sql", "q"),
    [
        ("SELECT PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY x) FROM t", Fraction(9, 10)),
        ("SELECT PERCENTILE_DISC(0.25) WITHIN GROUP (ORDER BY x) FROM t", Fraction(1, 4)),
        ("SELECT QUANTILE_CONT(x, 0.9) FROM t", Fraction(9, 10)),
        ("SELECT MEDIAN(x) FROM t", Fraction(1, 2)),
    ],
)
def test_every_spelling_asks_for_the_same_measurement(sql: str, q: Fraction) -> None:
    # The SQL standard's ordered-set form (ISO/IEC 9075, PERCENTILE_CONT ... WITHIN GROUP) and
    # DuckDB's QUANTILE_* all measure the column's grid histogram for the same q.
    plan = parse_query(sql, schema())
    (agg,) = plan.aggregates
    assert rule_for(agg).needs(agg) == (Measurement(MeasurementKind.QUANTILE, "x", q),)


def test_within_group_refuses_what_it_cannot_answer() -> None:
    with pytest.raises(ParameterError, match="ascending"):
        parse_query("SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY x DESC) FROM t", schema())
    with pytest.raises(ParameterError, match=r"needs declared bounds"):
        parse_query("SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY u) FROM t", schema())
