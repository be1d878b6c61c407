"""PLDs checked against exact hockey-stick curves, brute force and dp-accounting's PLD."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as dpa_pld
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, special, stats

from infodp.accounting import pld as pld_module
from infodp.accounting.pld import PrivacyLossDistribution
from infodp.errors import ParameterError

H = 1e-4


def _gauss_delta(mu: float, eps: float) -> float:
    # Balle & Wang 2018, Theorem 8, for N(0,1) vs N(μ,1).
    return float(
        stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu)
    )


def _gauss_eps(mu: float, delta: float) -> float:
    if _gauss_delta(mu, 0.0) <= delta:
        return 0.0
    return float(optimize.brentq(lambda e: _gauss_delta(mu, e) - delta, 0.0, 300.0, xtol=1e-13))


def _hockey_stick(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    return float(np.sum(np.maximum(p - math.exp(eps) * q, 0.0)))


@pytest.mark.parametrize(("sigma", "k"), [(1.0, 1), (2.0, 4), (5.0, 25), (10.0, 100), (0.8, 9)])
@pytest.mark.parametrize("eps", [0.0, 0.5, 1.0, 3.0])
def test_k_gaussians_are_one_gaussian(sigma: float, k: int, eps: float) -> None:
    # Composition of k Gaussians = Gaussian with σ/√k: the exact δ(ε) is Balle & Wang's.
    pld = PrivacyLossDistribution.from_gaussian(sigma, 1.0, H).self_compose(k)
    exact = _gauss_delta(math.sqrt(k) / sigma, eps)
    ours = pld.delta(eps)
    # Pessimistic up to floating-point rounding of the discretisation (~1e-13 absolute).
    assert ours >= exact - 1e-12
    assert ours == pytest.approx(exact, rel=2e-3, abs=1e-12)


@pytest.mark.parametrize(("sigma", "k"), [(2.0, 4), (5.0, 25), (1.5, 3)])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-9])
def test_k_gaussians_epsilon_never_below_exact(sigma: float, k: int, delta: float) -> None:
    exact = _gauss_eps(math.sqrt(k) / sigma, delta)
    ours = PrivacyLossDistribution.from_gaussian(sigma, 1.0, H).self_compose(k).epsilon(delta)
    assert exact <= ours <= exact + 5e-4


@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("delta", [0.0, 1e-6, 0.1])
def test_single_laplace_epsilon(scale: float, delta: float) -> None:
    # Laplace pair: δ(ε) = 1 − e^{(ε−ε0)/2} on [−ε0, ε0], so ε(δ) = ε0 + 2 log(1 − δ).
    eps0 = 1 / scale
    exact = max(0.0, eps0 + 2 * math.log1p(-delta))
    ours = PrivacyLossDistribution.from_laplace(scale, 1.0, H).epsilon(delta)
    assert exact <= ours + 1e-12
    assert ours == pytest.approx(exact, abs=2 * H)


@pytest.mark.parametrize("seed", range(8))
def test_laplace_composition_matches_dp_accounting(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scale = float(rng.uniform(1.0, 20.0))
    k = int(rng.integers(2, 300))
    delta = float(10 ** rng.uniform(-9, -3))
    ours = PrivacyLossDistribution.from_laplace(scale, 1.0, H).self_compose(k).epsilon(delta)
    theirs = (
        dpa_pld.from_laplace_mechanism(scale, value_discretization_interval=H)
        .self_compose(k)
        .get_epsilon_for_delta(delta)
    )
    assert ours == pytest.approx(theirs, rel=1e-3, abs=1e-4)


@pytest.mark.slow  # ~0.6 CPU-s (measured)
@pytest.mark.parametrize("seed", range(6))
def test_subsampled_gaussian_matches_dp_accounting(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    sigma = float(rng.uniform(0.7, 3.0))
    q = float(10 ** rng.uniform(-2.5, -0.5))
    k = int(rng.integers(10, 2000))
    delta = float(10 ** rng.uniform(-8, -4))
    ours = (
        PrivacyLossDistribution.from_subsampled_gaussian(sigma, q, H).self_compose(k).epsilon(delta)
    )
    theirs = (
        dpa_pld.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=H)
        .self_compose(k)
        .get_epsilon_for_delta(delta)
    )
    assert ours == pytest.approx(theirs, rel=1e-3, abs=1e-4)


def test_subsampled_gaussian_single_step_against_exact_mixture() -> None:
    # Hockey stick of the remove pair by brute-force quadrature on a fine grid.
    sigma, q, eps = 1.0, 0.1, 0.5
    y = np.linspace(-12, 13, 500001)
    p0 = stats.norm.pdf(y, 0, sigma)
    mix = (1 - q) * p0 + q * stats.norm.pdf(y, 1, sigma)
    remove = np.trapezoid(np.maximum(mix - math.exp(eps) * p0, 0), y)
    add = np.trapezoid(np.maximum(p0 - math.exp(eps) * mix, 0), y)
    ours = PrivacyLossDistribution.from_subsampled_gaussian(sigma, q, H).delta(eps)
    assert ours >= max(remove, add) * (1 - 1e-6)
    assert ours == pytest.approx(max(remove, add), rel=1e-4)


@pytest.mark.parametrize("eps", [0.5, math.log(3), 2.0])
@pytest.mark.parametrize("k", [2, 3, 7])
def test_randomized_response_delta_brute_force(eps: float, k: int) -> None:
    a = math.exp(eps) / (math.exp(eps) + k - 1)
    b = 1 / (math.exp(eps) + k - 1)
    p = np.array([a, b] + [b] * (k - 2))
    q = np.array([b, a] + [b] * (k - 2))
    pld = PrivacyLossDistribution.from_randomized_response(eps, k, H)
    for e in [0.0, eps / 3, eps / 2, eps]:
        exact = _hockey_stick(p, q, e)
        assert pld.delta(e) >= exact - 1e-12
        # Between grid points the curve is interpolated: off by at most ~h·slope.
        assert pld.delta(e) == pytest.approx(exact, abs=H)


@pytest.mark.parametrize("scale", [0.7, 2.0])
@pytest.mark.parametrize("sens", [1, 3])
def test_discrete_laplace_against_brute_force_and_dp_accounting(scale: float, sens: int) -> None:
    ks = np.arange(-3000, 3001)
    logw = -np.abs(ks) / scale
    norm = special.logsumexp(logw)
    p = np.exp(logw - norm)
    q = np.exp(-np.abs(ks - sens) / scale - norm)
    pld = PrivacyLossDistribution.from_discrete_laplace(scale, sens, H)
    for e in [0.0, 0.3, 1.0]:
        exact = _hockey_stick(p, q, e)
        assert pld.delta(e) >= exact - 1e-14
        assert pld.delta(e) == pytest.approx(exact, abs=2e-5)
    theirs = dpa_pld.from_discrete_laplace_mechanism(
        1 / scale, sensitivity=sens, value_discretization_interval=H
    ).self_compose(10)
    ours = pld.self_compose(10)
    assert ours.epsilon(1e-6) == pytest.approx(theirs.get_epsilon_for_delta(1e-6), abs=2e-3)


@pytest.mark.parametrize(
    ("scale", "sens"),
    # The larger case takes ~2.5 CPU-s: slow (out of the quick tier).
    [(30_000.0, 3000), pytest.param(250_000.0, 20_000, marks=pytest.mark.slow)],
)
def test_discrete_laplace_closed_form_against_brute_force_and_the_atoms(
    scale: float, sens: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Above 2048 atoms spaced 2/scale ≤ h apart the PLD is built from geometric series
    # (a curator sum has Δ in the millions): the same δ-curve as the atom-by-atom build and as
    # the hockey-stick divergence of the two shifted pmfs summed directly.
    ks = np.arange(-int(40 * scale), int(40 * scale) + sens + 1)
    logw = -np.abs(ks) / scale
    norm = special.logsumexp(logw)
    p = np.exp(logw - norm)
    q = np.exp(-np.abs(ks - sens) / scale - norm)
    closed = PrivacyLossDistribution.from_discrete_laplace(scale, sens, H)
    monkeypatch.setattr(pld_module, "_DLAP_ATOMS_MAX", 10**9)
    atoms = PrivacyLossDistribution.from_discrete_laplace(scale, sens, H)
    top = sens / scale
    for e in [0.0, top / 7, top / 2, top - 3 * H]:
        exact = _hockey_stick(p, q, e)
        assert closed.delta(e) >= exact - 1e-14
        assert closed.delta(e) == pytest.approx(exact, abs=2e-5)
        assert closed.delta(e) == pytest.approx(atoms.delta(e), abs=1e-9)
    assert closed.delta(top + H) == pytest.approx(0.0, abs=1e-13)  # pure ε = Δ/scale
    assert closed.self_compose(10).epsilon(1e-6) == pytest.approx(
        atoms.self_compose(10).epsilon(1e-6), abs=2e-4
    )


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [0.8, 3.0])
def test_discrete_gaussian_against_brute_force_and_dp_accounting(sigma: float) -> None:
    ks = np.arange(-200, 201)
    logw = -(ks**2) / (2 * sigma**2)
    norm = special.logsumexp(logw)
    p = np.exp(logw - norm)
    q = np.exp(-((ks - 1) ** 2) / (2 * sigma**2) - norm)
    pld = PrivacyLossDistribution.from_discrete_gaussian(sigma, 1, H)
    for e in [0.0, 0.5, 1.5]:
        exact = _hockey_stick(p, q, e)
        assert pld.delta(e) >= exact - 1e-14
        assert pld.delta(e) == pytest.approx(exact, abs=2e-5)
    theirs = dpa_pld.from_discrete_gaussian_mechanism(
        sigma, sensitivity=1, value_discretization_interval=H
    ).self_compose(5)
    assert pld.self_compose(5).epsilon(1e-6) == pytest.approx(
        theirs.get_epsilon_for_delta(1e-6), abs=2e-3
    )


def test_privacy_parameters_pld_is_property3() -> None:
    # Ünsal & Önen, Property 3: δ′ = 1 − (e^{ε′}+1)(1−δ)/(e^ε+1) for ε′ < ε.
    eps, delta = 1.0, 1e-4
    pld = PrivacyLossDistribution.from_privacy_parameters(eps, delta, H)
    assert pld.delta(eps) == pytest.approx(delta, rel=1e-12)
    assert pld.delta(5.0) == pytest.approx(delta, rel=1e-12)
    for e in [0.0, 0.25, 0.5]:
        expected = 1 - (math.exp(e) + 1) * (1 - delta) / (math.exp(eps) + 1)
        assert pld.delta(e) == pytest.approx(expected, abs=1e-6)
    assert pld.epsilon(delta) == pytest.approx(eps, abs=H)
    assert pld.epsilon(delta / 2) == math.inf


def test_self_compose_agrees_with_repeated_compose() -> None:
    # Second algorithm: pairwise FFT convolutions instead of one spectral power.
    base = PrivacyLossDistribution.from_subsampled_gaussian(1.0, 0.05, 1e-3)
    fast = base.self_compose(8)
    slow = base
    for _ in range(7):
        slow = slow.compose(base)
    for delta in [1e-3, 1e-5, 1e-7]:
        assert fast.epsilon(delta) == pytest.approx(slow.epsilon(delta), abs=1e-6)


def test_heterogeneous_compose_matches_gaussian_closed_form() -> None:
    # N(0,σ1²) then N(0,σ2²): one Gaussian with 1/σ² = 1/σ1² + 1/σ2².
    a = PrivacyLossDistribution.from_gaussian(1.0, 1.0, H)
    b = PrivacyLossDistribution.from_gaussian(2.0, 1.0, H)
    mu = math.sqrt(1 + 1 / 4)
    for eps in [0.0, 1.0, 2.0]:
        assert a.compose(b).delta(eps) == pytest.approx(_gauss_delta(mu, eps), rel=2e-3)
        assert a.compose(b).delta(eps) >= _gauss_delta(mu, eps) - 1e-12


def test_maximum_dominates_parts() -> None:
    parts = [
        PrivacyLossDistribution.from_laplace(1.0, 1.0, H),
        PrivacyLossDistribution.from_gaussian(1.0, 1.0, H),
    ]
    worst = PrivacyLossDistribution.maximum(parts)
    for eps in [0.0, 0.3, 0.9, 2.0]:
        assert worst.delta(eps) >= max(p.delta(eps) for p in parts) - 1e-12


def test_from_rdp_curve_is_valid_for_gaussian() -> None:
    # The RDP-only PLD must dominate the exact Gaussian curve (it is looser, never tighter).
    pld = PrivacyLossDistribution.from_rdp_curve(
        lambda a: np.asarray(a, dtype=float) / 2, math.inf, 1e-3
    )
    for eps in [0.0, 0.5, 1.0, 2.0, 4.0]:
        assert pld.delta(eps) >= _gauss_delta(1.0, eps) - 1e-12


def test_errors() -> None:
    with pytest.raises(ParameterError, match="interval"):
        PrivacyLossDistribution.from_gaussian(1.0, 1.0, 0.0)
    with pytest.raises(ParameterError, match=r"other\.interval"):
        PrivacyLossDistribution.from_gaussian(1.0, 1.0, 1e-3).compose(
            PrivacyLossDistribution.from_gaussian(1.0, 1.0, 1e-4)
        )
    with pytest.raises(ParameterError, match="delta"):
        PrivacyLossDistribution.from_gaussian(1.0, 1.0, 1e-3).epsilon(-0.1)
    with pytest.raises(ParameterError, match="sigma"):
        PrivacyLossDistribution.from_gaussian(float("nan"), 1.0, 1e-3)


_SHARED = PrivacyLossDistribution.from_subsampled_gaussian(1.2, 0.02, 1e-3).self_compose(300)


@settings(max_examples=40)
@given(d1=st.floats(1e-12, 1.0), d2=st.floats(1e-12, 1.0))
def test_epsilon_non_increasing_in_delta(d1: float, d2: float) -> None:
    lo, hi = sorted((d1, d2))
    assert _SHARED.epsilon(hi) <= _SHARED.epsilon(lo) + 1e-12


@settings(max_examples=40)
@given(e1=st.floats(-2.0, 20.0), e2=st.floats(-2.0, 20.0))
def test_delta_non_increasing_and_inverse_of_epsilon(e1: float, e2: float) -> None:
    lo, hi = sorted((e1, e2))
    assert _SHARED.delta(hi) <= _SHARED.delta(lo) + 1e-15
    d = _SHARED.delta(hi)
    if 0 < d < 1 and hi >= 0:
        # ε(δ(ε)) ≤ ε: the returned ε is the smallest certified one.
        assert _SHARED.epsilon(d) <= hi + 1e-9


def test_compose_all_heterogeneous_matches_gaussian_closed_form() -> None:
    # 3 × N(σ=1) and 2 × N(σ=2): one Gaussian with μ² = 3 + 2/4 (Balle & Wang 2018, Thm 8).
    a = PrivacyLossDistribution.from_gaussian(1.0, 1.0, H)
    b = PrivacyLossDistribution.from_gaussian(2.0, 1.0, H)
    both = PrivacyLossDistribution.compose_all([(a, 3), (b, 2)])
    mu = math.sqrt(3 + 2 / 4)
    for eps in [0.5, 2.0, 4.0]:
        assert both.delta(eps) >= _gauss_delta(mu, eps) - 1e-12
        assert both.delta(eps) == pytest.approx(_gauss_delta(mu, eps), rel=2e-3)
    with pytest.raises(ParameterError, match="items"):
        PrivacyLossDistribution.compose_all([])


def test_gaussian_tail_constant_is_the_scipy_quantile() -> None:
    from scipy import special

    from infodp.accounting import pld

    assert float(-special.ndtri(1e-17)) == pld._Z_TAIL


def test_losses_beyond_the_grid_index_range_are_too_large_not_an_overflow() -> None:
    # ε = 1.8e15 on a 2e-4 grid puts the loss atom at index ~9e18 > 2^63: the PLD refuses
    # (callers fall back to the RDP/pure-ε bounds) instead of casting to a wrapped int64.
    from infodp.accounting.pld import PLDTooLarge

    with pytest.raises(PLDTooLarge):
        PrivacyLossDistribution.from_randomized_response(1.8e15, 2, 2e-4)
