"""Accuracy-first planning (curator/price/estimate.py) against the discrete Laplace's closed-form
tail: P(|N| > h) = 2p^(h+1)/(1 + p), p = e^(−ε/Δ) (Inusah & Kozubowski 2006, the two-sided
geometric law), evaluated with mpmath; and the rank error of MIN against Dwork & Roth 2014,
Thm 3.11 with its denominator kept (plus the rank it aims at)."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import mpmath
import pytest

from _rules_oracle import table_schema as schema
from infodp.curator.plan.nodes import QueryPlan
from infodp.curator.price.cost import plan_cost
from infodp.curator.price.estimate import column_accuracy, least_epsilon, measurement_accuracy
from infodp.curator.rules.base import ColumnAccuracy
from infodp.curator.sql.parse import parse_query


def _halfwidth(epsilon: Fraction, beta: float) -> int:
    """The least h with P(|N| > h) ≤ β for the discrete Laplace of scale 1/ε (40 digits)."""
    with mpmath.workdps(40):
        p = mpmath.exp(-mpmath.mpf(epsilon.numerator) / epsilon.denominator)
        h = 0
        while 2 * p ** (h + 1) / (1 + p) > beta:
            h += 1
        return h


def _accuracy_at(
    sql: str, beta: float
) -> tuple[QueryPlan, Callable[[Fraction], list[ColumnAccuracy]]]:
    s = schema(1, 0, 100)
    plan = parse_query(sql, s)

    def at(eps: Fraction) -> list[ColumnAccuracy]:
        return column_accuracy(plan, s, plan_cost(plan, s, eps, Fraction(0), None), beta, None)

    return plan, at


@pytest.mark.parametrize("epsilon", [Fraction(1, 10), Fraction(1), Fraction(3)], ids=str)
def test_count_halfwidth_is_the_closed_form_tail(epsilon: Fraction) -> None:
    _, at = _accuracy_at("SELECT COUNT(*) FROM t", 0.05)
    (got,) = at(epsilon)
    assert got == {"column": "COUNT(*)", "halfwidth": float(_halfwidth(epsilon, 0.05))}


@pytest.mark.parametrize("target", [3, 20, 150])
def test_least_epsilon_reaches_the_target_and_no_less_does(target: int) -> None:
    plan, at = _accuracy_at("SELECT COUNT(*) FROM t", 0.05)
    eps = least_epsilon(plan.outputs, target, at)
    assert _halfwidth(eps, 0.05) <= target
    # rounded up to 3 significant digits after a 0.1% bisection: 1% less misses the target
    assert _halfwidth(eps * Fraction(99, 100), 0.05) > target


def test_min_rank_error_in_an_estimate_is_the_theorem_bound() -> None:
    s = schema(1, 0, 100)
    cost = plan_cost(parse_query("SELECT MIN(x) FROM t", s), s, Fraction(1), Fraction(0), None)
    (acc,) = measurement_accuracy(cost, s, 0.05)
    # t + (2Δ/ε)·ln(k(1 − β)/β), Δ = m·max(q, 1 − q) = 1 at q = 0, k + 1 = 101 grid points,
    # t = ⌈(2Δ/ε)(ln 101 + ln 20)⌉ the rank MIN aims at
    t = math.ceil(2 * (math.log(101) + math.log(20)))
    r = 2 * math.log(100 * 0.95 / 0.05)
    assert acc["rank_error"] == pytest.approx(t + r, rel=1e-9)
    assert acc["rank_error"] >= t + r
