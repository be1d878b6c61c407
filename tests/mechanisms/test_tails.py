"""Every noise tail the mechanisms compute in floats is an upper bound, and a tight one.

The reference is the exact tail in 40-digit arithmetic (mpmath), from the definitions:

- discrete Gaussian N_Z(0, σ²): P(k) ∝ e^{−k²/(2σ²)} (Canonne, Kamath & Steinke 2020,
  Definition 1), summed directly over |k| ≤ 60σ + 60 (the rest is below e^{−1800});
- discrete Laplace Lap_Z(b): P[N ≥ k] = q^k/(1 + q), q = e^{−1/b} (CKS 2020, Definition 2);
- discrete staircase: P(k) ∝ e^{−ε·stairs(|k|)} (Geng & Viswanath 2016, Definition 3 on the
  integers), summed directly plus a geometric bound on the remainder.

The float tails feed reported accuracy (half-widths) and thresholds, so they must never be
below the exact value; they are rounded up by ``TAIL_ROUND`` (1e-9) relative, so they stay
within 2e-9 of it wherever the exact tail is a normal float.
"""

from __future__ import annotations

import math

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infodp.errors import ParameterError
from infodp.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    StaircaseMechanism,
)
from infodp.mechanisms.base import TAIL_FLOOR, TAIL_ROUND
from infodp.mechanisms.partition import PartitionSelection

mpmath.mp.dps = 40


def _dgauss_exact(sigma: float, k: int) -> mpmath.mpf:
    """P[N ≥ k] for N ~ N_Z(0, σ²) by direct sums in 40 digits."""
    s2 = 2 * mpmath.mpf(sigma) ** 2
    n = math.ceil(60 * sigma) + 60
    norm = 1 + 2 * mpmath.fsum(mpmath.exp(-(j * j) / s2) for j in range(1, n + 1))
    tail = mpmath.fsum(mpmath.exp(-(j * j) / s2) for j in range(k, k + n + 1))
    return tail / norm


def _dlap_exact(scale: float, k: int) -> mpmath.mpf:
    q = mpmath.exp(-1 / mpmath.mpf(scale))
    return q**k / (1 + q)


def _staircase_exact(eps: float, m: int, j: int, k: int) -> mpmath.mpf:
    """P[N ≥ k] for the staircase pmf ∝ w(|a|), w(a) = e^{−ε(a div m + [a mod m ≥ j])}: direct
    sums up to a cut where the remaining blocks weigh below e^{−120}, plus a bound on them."""
    b = mpmath.exp(-mpmath.mpf(eps))
    blocks = math.ceil(120 / eps)

    def w(a: int) -> mpmath.mpf:
        return b ** (a // m + (1 if a % m >= j else 0))

    def tail_sum(start: int, rest: bool) -> mpmath.mpf:
        end = (start // m + blocks) * m  # a block boundary
        # Σ_{a ≥ end} w(a) ≤ m Σ_{B ≥ end/m} b^B
        bound = m * b ** (end // m) / (1 - b) if rest else 0
        return mpmath.fsum(w(a) for a in range(start, end)) + bound

    # Numerator over, normaliser Z = 2S − 1 under-estimated: at least the exact tail, and
    # above it by at most e^{−120} relative.
    return tail_sum(k, True) / (2 * tail_sum(0, False) - 1)


def _check(returned: float, exact: mpmath.mpf) -> None:
    assert mpmath.mpf(returned) >= exact
    if exact >= TAIL_FLOOR:
        assert mpmath.mpf(returned) <= exact * (1 + 2 * TAIL_ROUND)
    else:
        assert returned == TAIL_FLOOR  # the least tail a float reports


@pytest.mark.slow  # ~0.7 CPU-s (measured)
@settings(max_examples=60, deadline=None)
@given(sigma=st.floats(0.2, 40.0), z=st.floats(0.0, 42.0))
def test_discrete_gaussian_tail_bounds_the_exact_tail(sigma: float, z: float) -> None:
    k = max(1, round(z * sigma))
    _check(DiscreteGaussianMechanism(sigma).upper_tail(k), _dgauss_exact(sigma, k))


@pytest.mark.slow  # ~0.8 CPU-s (measured)
@settings(max_examples=40, deadline=None)
@given(sigma=st.floats(0.2, 20.0), bits=st.integers(0, 3), z=st.floats(0.0, 42.0))
def test_snapped_gaussian_tail_bounds_the_exact_tail(sigma: float, bits: int, z: float) -> None:
    # GaussianMechanism releases grid·N_Z(0, (σ/grid)²): the tail is in grid units.
    m = GaussianMechanism(sigma, sensitivity=1.0, grid=2.0**-bits)
    s = m.grid_sigma
    k = max(1, round(z * s))
    _check(m.upper_tail(k), _dgauss_exact(s, k))


@settings(max_examples=100, deadline=None)
@given(scale=st.floats(0.05, 1e4), k=st.integers(1, 10**6))
def test_discrete_laplace_tails_bound_the_exact_tail(scale: float, k: int) -> None:
    _check(DiscreteLaplaceMechanism(scale).upper_tail(k), _dlap_exact(scale, k))
    m = LaplaceMechanism(scale, sensitivity=1.0, grid=0.25)
    _check(m.upper_tail(k), _dlap_exact(m.grid_scale, k))


@settings(max_examples=40, deadline=None)
@given(eps=st.floats(0.3, 3.0), bits=st.integers(0, 3), k=st.integers(1, 400))
def test_staircase_tail_bounds_the_exact_tail(eps: float, bits: int, k: int) -> None:
    m = StaircaseMechanism(eps, sensitivity=1.0, grid=2.0**-bits)
    _check(m.upper_tail(k), _staircase_exact(eps, m.period, m.step, k))


@settings(max_examples=40, deadline=None)
@given(scale=st.floats(0.5, 200.0), beta=st.floats(1e-12, 0.5))
def test_halfwidth_is_never_optimistic(scale: float, beta: float) -> None:
    # P(|N| > h) = 2·P[N ≥ h + 1] ≤ β exactly, and h − 1 would not do (up to the round-up).
    h = DiscreteLaplaceMechanism(scale).halfwidth(beta)
    assert 2 * _dlap_exact(scale, h + 1) <= beta
    if h > 0:
        assert 2 * _dlap_exact(scale, h) > beta * (1 - 2 * TAIL_ROUND)


def test_a_tail_below_the_float_range_is_still_bounded() -> None:
    # e^{−2000}: the float computation underflows to 0; the reported tail is TAIL_FLOOR.
    assert DiscreteLaplaceMechanism(1.0).upper_tail(2000) == TAIL_FLOOR
    assert DiscreteGaussianMechanism(1.0).upper_tail(70) == TAIL_FLOOR
    assert _dgauss_exact(1.0, 70) < TAIL_FLOOR


def test_targets_below_what_float_tails_certify_are_refused() -> None:
    with pytest.raises(ParameterError, match="beta"):
        DiscreteLaplaceMechanism(1.0).halfwidth(1e-310)
    with pytest.raises(ParameterError, match="delta"):
        PartitionSelection(1.0, max_partitions=10, delta=1e-301)
