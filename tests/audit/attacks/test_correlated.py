"""Cuff & Yu (CCS 2016), Example 4.1: with fully correlated rows the ε-DP mean reveals each
individual; exact mutual information checked against generic scipy quadrature."""

from __future__ import annotations

import math

import pytest
from scipy import integrate, stats

from infodp.audit.attacks import (
    correlated_attack,
    correlated_mutual_information,
    independent_mutual_information,
)


def _quad_mi(shift: float, scale: float) -> float:
    # I(X; Y) for uniform X and Y | X=x ~ Laplace(x·shift, scale), by plain quadrature.
    p0, p1 = stats.laplace(0, scale).pdf, stats.laplace(shift, scale).pdf

    def f(y: float) -> float:
        a, b = p0(y), p1(y)
        m = (a + b) / 2
        out = 0.0
        if a > 0:
            out += 0.5 * a * math.log(a / m)
        if b > 0:
            out += 0.5 * b * math.log(b / m)
        return out

    lo, hi = -60 * scale, shift + 60 * scale
    return float(integrate.quad(f, lo, hi, points=[0.0, shift], limit=500)[0])


@pytest.mark.parametrize(("epsilon", "rows"), [(0.1, 10), (0.1, 30), (1.0, 1), (0.5, 4)])
def test_exact_correlated_mi_matches_quadrature(epsilon: float, rows: int) -> None:
    # All rows equal: the mean moves by 1 while the noise has scale 1/(nε).
    expected = _quad_mi(1.0, 1 / (rows * epsilon))
    assert correlated_mutual_information(epsilon, rows) == pytest.approx(expected, abs=1e-7)


def test_one_row_correlated_equals_independent() -> None:
    # With a single row both cases are the same channel.
    assert independent_mutual_information(0.7, 1) == pytest.approx(
        correlated_mutual_information(0.7, 1), abs=1e-5
    )


def test_attack_reveals_everyone_while_mi_dp_holds() -> None:
    r = correlated_attack(epsilon=0.1, rows=100, trials=20_000, rng=41)
    # Success of thresholding at ½: 1 − ½ e^{−nε/2} (Laplace tail).
    assert r.success_theory == pytest.approx(1 - 0.5 * math.exp(-5.0))
    assert abs(r.success - r.success_theory) < 4 * math.sqrt(0.003 / 20_000) + 1e-3
    assert r.success_lower > r.dp_ceiling  # far beyond what ε-DP allows a strong adversary
    # Unconditional information ≈ 1 bit, far above ε; the MI-DP quantity (conditional) is 0.
    assert r.unconditional_mi > 0.9 * math.log(2) > r.epsilon
    assert r.conditional_mi == 0.0 <= r.epsilon
    # The empirical lower bound stays below the exact value.
    assert 0.8 * r.unconditional_mi < r.unconditional_mi_lower <= r.unconditional_mi
    # Independent rows: I(X_i; Y) ≤ ε (Cuff & Yu, Corollary 4).
    assert r.independent_mi <= r.epsilon
