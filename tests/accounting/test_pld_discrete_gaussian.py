"""The discrete Gaussian PLD at large σ: bounded memory, pessimistic and accurate.

Independent references: the continuous Gaussian's exact hockey stick (Balle & Wang 2018,
Theorem 8, via scipy's normal CDF), the per-atom PLD (one atom per k, the pmf summed directly)
where both paths run, dp-accounting's discrete Gaussian PLD, and a direct sum of the pmf for
the tail bound. A PLD built on a grid of h whose losses are rounded up by at most h' satisfies
δ(ε) ≤ δ_true(ε − h' − h) (connect-the-dots interpolates between grid points whose δ are those
of the rounded-up losses; Doroshenko et al. 2022), which gives the upper checks below.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as dpa_pld
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from infodp.accounting import discrete_gaussian_profile, discrete_subsampled_gaussian_profile
from infodp.accounting import pld as pld_module
from infodp.accounting.pld import PLDTooLarge, PrivacyLossDistribution

H = 2e-4  # the profiles' default grid (DEFAULT_INTERVAL)
PEAK_BYTES = 200 * 2**20


def continuous_delta(sigma: float, sens: float, eps: float) -> float:
    """Balle & Wang 2018, Theorem 8: Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)."""
    u, v = sens / (2 * sigma), eps * sigma / sens
    return max(0.0, float(stats.norm.cdf(u - v) - math.exp(eps) * stats.norm.cdf(-u - v)))


def em_slack(sigma: float) -> float:
    """Upper bound on the Euler-Maclaurin remainder of the blocked CDF bounds, √24/(720σ⁴)."""
    return math.sqrt(24.0) / (720 * sigma**4)


def blocked(sigma: float, sens: int, h: float = H) -> PrivacyLossDistribution:
    return PrivacyLossDistribution(h, (pld_module._dgauss_pmf_blocked(sigma, sens, h),))


def peak_of(fn: object) -> int:
    tracemalloc.start()
    try:
        fn()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_curator_sized_sum_is_built_in_bounded_memory() -> None:
    # σ ≈ 1.7e7 grid units, Δ = 2^21: the one-atom-per-k construction needed ~1.4e9 atoms.
    peak = peak_of(lambda: PrivacyLossDistribution.from_discrete_gaussian(1.7e7, 2**21, H))
    assert peak < PEAK_BYTES
    profile = discrete_gaussian_profile(1.7e7, 2**21)
    peak = peak_of(lambda: (profile.delta(0.5), profile.epsilon(1e-6)))
    assert peak < PEAK_BYTES


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [1e5, 1.7e7, 3e9])
@pytest.mark.parametrize("ratio", [0.05, 0.2, 1.0, 3.0])
def test_large_sigma_is_pessimistic_and_close_to_the_continuous_gaussian(
    sigma: float, ratio: float
) -> None:
    # For σ ≥ 1e5 the discrete Gaussian's hockey stick is the continuous one's up to O(1/σ²)
    # relative (lattice sums of a smooth density; the normaliser is exact to e^{−2π²σ²}).
    sens = max(1, round(ratio * sigma))
    pld = PrivacyLossDistribution.from_discrete_gaussian(sigma, sens, H)
    mu = sens / sigma
    for eps in np.linspace(0.0, mu * mu / 2 + 6 * mu, 25):
        ours = pld.delta(float(eps))
        exact = continuous_delta(sigma, sens, float(eps))
        assert ours >= exact * (1 - 1e-8) - 1e-16
        assert ours <= continuous_delta(sigma, sens, float(eps) - 2 * H) + 3e-15


MODERATE = [(50.0, 1), (50.0, 7), (300.0, 20), (2000.0, 1), (2000.0, 300), (4000.0, 999)]


@pytest.mark.parametrize(("sigma", "sens"), MODERATE)
def test_blocked_path_dominates_the_per_atom_path_and_stays_close(sigma: float, sens: int) -> None:
    exact = PrivacyLossDistribution.from_discrete_gaussian(sigma, sens, H)  # one atom per k
    assert sigma <= pld_module._DGAUSS_EXACT_SIGMA
    ours = blocked(sigma, sens)
    mu = sens / sigma
    for eps in np.linspace(0.0, mu * mu / 2 + 6 * mu, 30):
        e = float(eps)
        # The per-atom path rounds floats (~1e-15); the blocked one never undercuts it more.
        assert ours.delta(e) >= exact.delta(e) - 1e-15
        assert ours.delta(e) <= exact.delta(e - 2 * H) + 2 * em_slack(sigma) + 1e-14


def test_blocked_path_against_dp_accounting() -> None:
    # dp-accounting sums the pmf atom by atom (feasible at σ = 5000); our blocked PLD is used.
    sigma, sens = 5000.0, 400
    assert sigma > pld_module._DGAUSS_EXACT_SIGMA
    ours = PrivacyLossDistribution.from_discrete_gaussian(sigma, sens, H).self_compose(3)
    theirs = dpa_pld.from_discrete_gaussian_mechanism(
        sigma, sensitivity=sens, value_discretization_interval=H
    ).self_compose(3)
    for delta in (1e-3, 1e-6, 1e-9):
        assert ours.epsilon(delta) == pytest.approx(theirs.get_epsilon_for_delta(delta), abs=2e-3)


@pytest.mark.slow  # ~0.9 CPU-s (measured)
@settings(max_examples=30, deadline=None)
@given(
    log_sigma=st.floats(math.log(4200.0), math.log(1e10)),
    ratio=st.floats(1e-3, 4.0),
    eps=st.floats(0.0, 1.0),
)
def test_hypothesis_large_sigma_bounds(log_sigma: float, ratio: float, eps: float) -> None:
    sigma = math.exp(log_sigma)
    sens = max(1, round(ratio * sigma))
    pld = PrivacyLossDistribution.from_discrete_gaussian(sigma, sens, H)
    e = eps * (sens / sigma) * 4
    # Atoms scale with the loss range over h, not with σ.
    assert pld._pmfs[0].probs.size <= 2 * 17 * (sens / sigma) / H + 10
    assert pld.delta(e) >= continuous_delta(sigma, sens, e) * (1 - 1e-6) - 1e-16
    assert pld.delta(e) <= continuous_delta(sigma, sens, e - 2 * H) + 3e-15


@settings(max_examples=25, deadline=None)
@given(sigma=st.floats(20.0, 1500.0), sens=st.integers(1, 200), eps=st.floats(0.0, 2.0))
def test_hypothesis_blocked_never_below_per_atom(sigma: float, sens: int, eps: float) -> None:
    exact = PrivacyLossDistribution.from_discrete_gaussian(sigma, sens, H)
    ours = blocked(sigma, sens)
    assert ours.delta(eps) >= exact.delta(eps) - 1e-15
    assert ours.delta(eps) <= exact.delta(eps - 2 * H) + 2 * em_slack(sigma) + 1e-14


@pytest.mark.parametrize("sigma", [3.0, 40.0, 700.0])
def test_cdf_upper_bound_against_a_direct_sum(sigma: float) -> None:
    ks = np.arange(-math.ceil(45 * sigma), math.ceil(45 * sigma) + 1)
    logw = -(ks.astype(np.float64) ** 2) / (2 * sigma**2)
    pmf = np.exp(logw - special.logsumexp(logw))
    cdf = np.cumsum(pmf)
    points = np.unique(np.linspace(-9 * sigma, 9 * sigma, 41).round())
    exact = cdf[np.searchsorted(ks, points)]
    bound = pld_module._dgauss_cdf_upper(sigma, points)
    assert np.all(bound >= exact * (1 - 1e-13))
    assert np.all(bound <= exact + 2 * em_slack(sigma) + 1e-12)


def test_sizes_are_refused_before_arrays_are_built() -> None:
    # A discrete Laplace with atoms farther apart than h and Δ = 10^12: refused, not allocated.
    def build() -> None:
        with pytest.raises(PLDTooLarge):
            PrivacyLossDistribution.from_discrete_laplace(0.5, 10**12, 1e-4)
        with pytest.raises(PLDTooLarge):
            PrivacyLossDistribution.from_discrete_gaussian(10.0, 10**9, 1e-4)
        with pytest.raises(PLDTooLarge):
            PrivacyLossDistribution.from_discrete_subsampled_gaussian(1.7e7, 2**21, 0.01, 1e-4)

    assert peak_of(build) < PEAK_BYTES


def test_large_subsampled_discrete_gaussian_falls_back_to_closed_forms() -> None:
    s, mu, q = 1.7e7, 2**21, 0.01
    profile = discrete_subsampled_gaussian_profile(s, mu, q)
    values: list[float] = []
    peak = peak_of(lambda: values.extend([profile.delta(1.0), profile.information(1.0)]))
    assert peak < PEAK_BYTES
    # KL ≤ D_2 ≤ log(1 − q + q e^{μ²/s²}) (Jensen; CKS 2020, Proposition 5 for D_2 of N_Z).
    assert values[1] == pytest.approx(math.log1p(q * math.expm1(mu * mu / (s * s))), rel=1e-9)
    # δ(1) is certified by the RDP curve (the PLD is refused): never above the unsubsampled
    # continuous Gaussian's RDP conversion would allow, and a probability.
    assert 0.0 <= values[0] <= 1e-6
