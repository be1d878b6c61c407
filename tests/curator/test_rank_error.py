"""The quantile's stated rank error: never optimistic, and the least that public facts allow.

The statement r = (2Δ/ε)·ln(k(1 − β)/β) over k + 1 grid points (Dwork & Roth 2014, Theorem
3.11's argument with its denominator kept) is checked three ways: against its closed form in
40 digits; against the exact tail of the mechanism's score on several data shapes (it must
cover: P(score > r) ≤ β, computed from the exact law, and in seeded draws); and against the
dataset that attains it (all rows on one grid point), where any smaller statement fails — so
on typical data, whose tail is much thinner, a data-independent statement is necessarily a
few times wider than the observed 95th percentile (BENCHMARKS.md, accuracy).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from infodp.curator.rules.quantile import rank_error as _quantile_rank_error
from infodp.mechanisms.quantile import (
    GridQuantileLaw,
    grid_quantile,
    grid_quantile_law,
    score_sensitivity,
)
from infodp.mechanisms.sampling import InsecureSeededSource


@given(
    sensitivity=st.integers(1, 10**6),
    epsilon=st.fractions(min_value=Fraction(1, 10**6), max_value=100),
    k=st.integers(1, 10**7),
    beta=st.floats(1e-12, 0.5),
)
def test_rank_error_is_at_least_the_exact_value(
    sensitivity: int, epsilon: Fraction, k: int, beta: float
) -> None:
    # (2Δ/ε)·ln(k(1 − β)/β) evaluated with 40 digits from the exact inputs
    with mpmath.workdps(40):
        b = mpmath.mpf(beta)
        scale = 2 * mpmath.mpf(sensitivity) / (mpmath.mpf(epsilon.numerator) / epsilon.denominator)
        exact = scale * mpmath.log(k * (1 - b) / b)
        reported = _quantile_rank_error(sensitivity, epsilon, k, beta)
        assert reported >= exact
        # raised by at most 10⁻¹¹ of the terms' magnitude (the float evaluation's margin)
        size = abs(mpmath.log(k)) + abs(mpmath.log(1 - b)) + abs(mpmath.log(b)) + 1
        assert reported <= max(exact, 0) + scale * size * mpmath.mpf("1e-11")


def tail(law: GridQuantileLaw, epsilon: Fraction, delta: Fraction, r: float) -> float:
    """P(score > r) under the exact law (float weights; scores in rows)."""
    scores = np.array([int(s) for s in law.scores], dtype=np.float64) / law.denominator
    mults = law.mults.astype(np.float64)
    live = mults > 0
    gamma = float(epsilon / (2 * delta)) * (scores - scores[live].min())
    weights = np.where(live, mults * np.exp(-gamma), 0.0)
    return float(weights[scores > r].sum() / weights.sum())


LO, HI = 0, 1000
_RNG = np.random.default_rng(11)
SHAPES = {
    "uniform": _RNG.integers(LO, HI + 1, 3000),
    "log-normal": np.clip(np.round(_RNG.lognormal(5, 0.7, 3000)), LO, HI).astype(np.int64),
    "two clusters": np.concatenate([_RNG.integers(100, 120, 1500), _RNG.integers(800, 820, 500)]),
    "mostly tied": np.concatenate([np.full(2500, 400), _RNG.integers(LO, HI + 1, 500)]),
    "few rows": _RNG.integers(LO, HI + 1, 12),
}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("q", [Fraction(1, 10), Fraction(1, 2), Fraction(9, 10)], ids=str)
@pytest.mark.parametrize("epsilon", [Fraction(1, 2), Fraction(2)], ids=str)
def test_the_stated_rank_error_covers_every_shape(
    shape: str, q: Fraction, epsilon: Fraction
) -> None:
    beta = 0.05
    delta = score_sensitivity(1, q)
    values, counts = np.unique(SHAPES[shape], return_counts=True)
    law = grid_quantile_law(values, counts.astype(np.int64), LO, HI, q)
    r = _quantile_rank_error(delta, epsilon, HI - LO, beta)
    assert tail(law, epsilon, delta, r) <= beta


@pytest.mark.slow
def test_draws_keep_the_stated_rank_error() -> None:
    src = InsecureSeededSource(5, i_understand_this_is_not_private=True)
    q, epsilon, beta = Fraction(1, 2), Fraction(1), 0.05
    delta = score_sensitivity(1, q)
    data = np.sort(SHAPES["log-normal"])
    values, counts = np.unique(data, return_counts=True)
    law = grid_quantile_law(values, counts.astype(np.int64), LO, HI, q)
    r = _quantile_rank_error(delta, epsilon, HI - LO, beta)
    n = len(data)
    errors = []
    for _ in range(2000):
        c = grid_quantile(law, epsilon, delta, src)
        below, at_most = np.searchsorted(data, c), np.searchsorted(data, c, side="right")
        errors.append(max(below - q * n, q * n - at_most, 0))
    assert np.mean(np.asarray(errors) <= r) >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / 2000)


@pytest.mark.parametrize("q", [Fraction(1, 2), Fraction(9, 10)], ids=str)
@pytest.mark.parametrize("epsilon", [Fraction(1, 2), Fraction(4)], ids=str)
@pytest.mark.parametrize("points", [101, 100_001])
def test_the_stated_rank_error_is_attained(q: Fraction, epsilon: Fraction, points: int) -> None:
    # All n rows on the lowest grid point: every other point scores (1 − q)·n. With (1 − q)·n
    # just below r, the tail there exceeds β: no smaller data-independent statement holds.
    beta = 0.05
    delta = score_sensitivity(1, q)
    r = _quantile_rank_error(delta, epsilon, points - 1, beta)
    n = math.ceil(r / (1 - q)) - 1
    s = float((1 - q) * n)
    assert s < r
    law = grid_quantile_law(np.array([0]), np.array([n]), 0, points - 1, q)
    assert tail(law, epsilon, delta, s - 1e-9) > beta  # P(score ≥ s) > β
    assert tail(law, epsilon, delta, r) <= beta
    assert r <= s + float(2 * (1 - q) * delta / epsilon) + 1  # attained within a lattice step
