"""The subsampled discrete Gaussian release for rows with several coordinates.

One row moves the lattice sum by an integer vector v; the exact pair
(1 − q)·N_Z^d(0, s²) + q·N_Z^d(v, s²) against N_Z^d(0, s²) is computed here independently of
the library: by direct summation over the 2-d lattice for the shift (3, 4), and through the
law of T = v·K (the privacy loss is a function of T), built by convolving the scaled 1-d
discrete Gaussian pmfs (Canonne, Kamath & Steinke 2020, Definition 1), for random shifts.
Atoms beyond 12 standard deviations (mass < e^-70) are left out, which only lowers the exact
values the profile must dominate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import logsumexp

from infodp.accounting import discrete_subsampled_gaussian_profile
from infodp.errors import ParameterError
from infodp.mechanisms._subsampled_lattice import (
    convex_dominating_sigma,
    dominating_gaussian_ratio,
)
from infodp.mechanisms.subsampled import SubsampledGaussian


def _dgauss(s: float) -> tuple[np.ndarray, np.ndarray]:
    w = math.ceil(12 * s) + 2
    k = np.arange(-w, w + 1)
    logp = -(k.astype(float) ** 2) / (2 * s * s)
    return k, np.exp(logp - logsumexp(logp))


def _law_of_t(v: list[int], s: float) -> tuple[int, np.ndarray]:
    """(offset, pmf) of T = Σ v_i K_i, K_i ~ N_Z(0, s²) i.i.d., on the integers."""
    k, p = _dgauss(s)
    law, offset = np.array([1.0]), 0
    for vi in (abs(x) for x in v if x != 0):
        scaled = np.zeros(vi * (len(k) - 1) + 1)
        scaled[::vi] = p
        law = np.convolve(law, scaled)
        offset += vi * int(k[0])
    return offset, law


def _pair_deltas(v: list[int], s: float, q: float, eps: float) -> tuple[float, float]:
    """Exact (remove, add) δ(ε) of the subsampled pair for the shift vector v."""
    n = sum(x * x for x in v)
    _, law = _law_of_t(v, s)
    Q = np.concatenate([law, np.zeros(n)])
    shifted = np.concatenate([np.zeros(n), law])  # T + ‖v‖² (the law under N_Z^d(v, s²))
    P = (1 - q) * Q + q * shifted
    e = math.exp(eps)
    return float(np.maximum(P - e * Q, 0).sum()), float(np.maximum(Q - e * P, 0).sum())


def _pair_2d(v: tuple[int, int], s: float, q: float) -> tuple[np.ndarray, np.ndarray]:
    """P, Q of the 2-d pair on a box of the lattice Z², by direct summation."""
    w = int(-_dgauss(s)[0][0])
    big = np.arange(-w - 8, w + 9)
    lp = -(big.astype(float) ** 2) / (2 * s * s)
    lp -= logsumexp(lp)
    Q = np.exp(lp[:, None] + lp[None, :])
    moved = np.zeros_like(Q)
    moved[v[0] :, v[1] :] = Q[: Q.shape[0] - v[0], : Q.shape[1] - v[1]]
    return (1 - q) * Q + q * moved, Q


@pytest.mark.slow
def test_the_shift_3_4_leaks_more_than_the_shift_5_and_the_profile_covers_it() -> None:
    # s = zC/grid = 0.4·1.25/0.25 = 2 units, clip norm 5 units, q = 0.3.
    m = SubsampledGaussian(0.4, 0.3, clip_norm=1.25, grid=0.25)
    P, Q = _pair_2d((3, 4), 2.0, 0.3)
    e2 = math.exp(2.0)
    exact = max(float(np.maximum(P - e2 * Q, 0).sum()), float(np.maximum(Q - e2 * P, 0).sum()))
    assert exact == pytest.approx(0.1082, abs=5e-5)
    # The same pair from the law of v·K agrees (two independent computations).
    assert max(_pair_deltas([3, 4], 2.0, 0.3, 2.0)) == pytest.approx(exact, rel=1e-9)
    # The one-coordinate lattice pair with shift 5 (the previous profile) is below it ...
    one_d = discrete_subsampled_gaussian_profile(2.0, 5, 0.3).delta(2.0)
    assert one_d < exact - 4e-3
    # ... the certified profile is not.
    assert m.profile().delta(2.0) >= exact
    for alpha in (2.0, 4.0):
        renyi = max(
            float(logsumexp(alpha * np.log(a) + (1 - alpha) * np.log(b))) / (alpha - 1)
            for a, b in ((P, Q), (Q, P))
        )
        assert m.profile().rdp(alpha) >= renyi


@pytest.mark.slow  # ~3 CPU-s
@settings(max_examples=25, deadline=None)
@given(
    z=st.floats(0.5, 2.0),
    q=st.floats(0.05, 0.9),
    grid=st.sampled_from([0.25, 0.125]),
    clip=st.sampled_from([1.0, 1.3]),
    eps=st.floats(0.0, 4.0),
    data=st.data(),
)
def test_profile_dominates_every_integer_shift_vector(
    z: float, q: float, grid: float, clip: float, eps: float, data: st.DataObject
) -> None:
    m = SubsampledGaussian(z, q, clip_norm=clip, grid=grid)
    s, n = m._lattice
    assert n == math.floor((clip / grid) ** 2)
    d = data.draw(st.integers(1, 3))
    v = data.draw(st.lists(st.integers(-9, 9), min_size=d, max_size=d))
    while sum(x * x for x in v) > n:  # shrink into the ball ‖v‖² ≤ n
        i = int(np.argmax(np.abs(v)))
        v[i] -= int(np.sign(v[i]))
    if not any(v):
        v[0] = 1
    remove, add = _pair_deltas(v, s, q, eps)
    assert m.profile().delta(eps) >= max(remove, add)


@pytest.mark.parametrize("s", [0.4, 1.0, 2.0, 7.3, 64.0])
def test_discrete_gaussian_is_below_the_certified_gaussian_in_convex_order(s: float) -> None:
    # Stop-loss transforms E(K − a)₊ (direct sums) against E(Y − a)₊ = s′φ(a/s′) − aΦ̄(a/s′).
    sp = convex_dominating_sigma(s)
    k, p = _dgauss(s)
    a = np.linspace(0.0, 8 * s, 4001)
    pi_k = np.array([float(np.sum(np.maximum(k - x, 0) * p)) for x in a])

    def pi_gauss(sd: float) -> np.ndarray:
        return np.asarray(sd * stats.norm.pdf(a / sd) - a * stats.norm.sf(a / sd))

    assert np.all(pi_k <= pi_gauss(sp) * (1 + 1e-9) + 1e-300)
    assert sp * sp - s * s >= 1 / 12 - 1e-12  # about Sheppard's correction, not more
    assert sp <= s * 1.25
    assert np.any(pi_k > pi_gauss(s))  # s itself is not enough: the lattice must be paid for


@pytest.mark.parametrize(
    ("s", "n", "v"),
    [
        (2.0, 25, [3, 4]),
        (2.0, 25, [5]),
        (2.0, 25, [2, 2, 2, 2]),
        (4.0, 16, [2, 2, 2]),
        (7.3, 40, [6, 2]),
    ],
)
def test_every_shift_pair_is_below_the_gaussian_envelope(s: float, n: int, v: list[int]) -> None:
    # Base pairs N_Z^d(v, s²) against N_Z^d(0, s²) (q = 1) against the Gaussian pair of
    # ratio r′ (Balle & Wang 2018, Thm 8: Φ(r/2 − ε/r) − e^ε Φ(−r/2 − ε/r)), for ε < 0 too.
    r = dominating_gaussian_ratio(s, n)
    assert math.sqrt(n) / s < r
    for eps in np.linspace(-2.0, 6.0, 33):
        exact = max(_pair_deltas(v, s, 1.0, float(eps)))
        gauss = stats.norm.cdf(r / 2 - eps / r) - math.exp(eps) * stats.norm.cdf(-r / 2 - eps / r)
        assert exact <= gauss + 1e-12


def test_one_unit_shifts_keep_the_exact_lattice_pair() -> None:
    # clip norm = one grid unit: only the vectors ±e_i, i.e. the 1-d pair exactly.
    m = SubsampledGaussian(0.4, 0.1, clip_norm=1.0, grid=1.0)
    assert m.profile() == discrete_subsampled_gaussian_profile(m._lattice[0], 1, 0.1)


@pytest.mark.slow  # ~1.6 CPU-s
def test_a_lattice_too_coarse_to_certify_is_a_clear_error() -> None:
    m = SubsampledGaussian(0.1, 0.5, clip_norm=1.0, grid=0.25)  # 0.4 units of noise, shift 4
    with pytest.raises(ParameterError, match="grid"):
        m.profile()
    # calibration steps over such noise levels instead of failing
    cal = SubsampledGaussian.calibrate(2.0, 1e-5, sampling_rate=0.5, steps=1, grid=0.25)
    assert cal.profile().epsilon(1e-5) <= 2.0
