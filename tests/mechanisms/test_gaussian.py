"""Tests of the Gaussian and discrete Gaussian mechanisms and their calibration.

Independent values: dp-accounting's analytic Gaussian calibration (`get_sigma_gaussian`,
Balle & Wang 2018) and its discrete-Gaussian PLD (Canonne, Kamath & Steinke 2020), the
classic formula of Dwork & Roth (2014, Theorem A.1), and scipy's normal CDF.
"""

from __future__ import annotations

import math
from fractions import Fraction

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as dp_pld
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from infodp.errors import ParameterError
from infodp.mechanisms import gaussian
from infodp.mechanisms.gaussian import (
    DiscreteGaussianMechanism,
    GaussianMechanism,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    gaussian_delta,
)
from infodp.mechanisms.sampling import InsecureSeededSource


def _bw_delta(sigma: float, eps: float, d: float) -> float:
    # Balle & Wang 2018, Theorem 8, straight from scipy's normal CDF.
    return float(
        stats.norm.cdf(d / (2 * sigma) - eps * sigma / d)
        - math.exp(eps) * stats.norm.cdf(-d / (2 * sigma) - eps * sigma / d)
    )


@pytest.mark.parametrize(("eps", "delta"), [(1.0, 1e-5), (0.3, 1e-6), (4.0, 1e-3), (0.1, 1e-2)])
def test_analytic_sigma_matches_dp_accounting(eps: float, delta: float) -> None:
    ours = analytic_gaussian_sigma(eps, delta)
    peer = dp_accounting.get_sigma_gaussian(eps, delta)
    assert ours == pytest.approx(peer, rel=1e-6)
    assert _bw_delta(ours, eps, 1.0) <= delta * (1 + 1e-9)


def test_gaussian_delta_matches_scipy() -> None:
    for s, e, d in [(1.0, 0.5, 1.0), (3.0, 1.0, 2.0), (0.7, 2.0, 1.0)]:
        assert gaussian_delta(s, e, d) == pytest.approx(_bw_delta(s, e, d), rel=1e-9)


def test_classic_formula_and_refusal() -> None:
    # Dwork & Roth 2014, Theorem A.1: sigma = Delta sqrt(2 ln(1.25/delta)) / eps.
    assert classic_gaussian_sigma(0.5, 1e-5, 2.0) == pytest.approx(
        2 * math.sqrt(2 * math.log(1.25e5)) / 0.5, rel=1e-15
    )
    with pytest.raises(ParameterError, match="epsilon"):
        classic_gaussian_sigma(1.5, 1e-5)
    with pytest.raises(ParameterError, match="epsilon"):
        GaussianMechanism.calibrate(2.0, 1e-5, method="classic")


@settings(max_examples=30)
@given(
    eps=st.floats(0.01, 1.0),
    log_delta=st.floats(-12, -2),
    sens=st.floats(0.1, 10.0),
)
def test_analytic_at_most_classic_and_meets_delta(
    eps: float, log_delta: float, sens: float
) -> None:
    delta = 10.0**log_delta
    a = analytic_gaussian_sigma(eps, delta, sens)
    c = classic_gaussian_sigma(eps, delta, sens)
    assert a <= c
    # the classic sigma also meets delta (exact Balle-Wang delta, independent formula)
    assert _bw_delta(c, eps, sens) <= delta * (1 + 1e-9)
    assert _bw_delta(a, eps, sens) <= delta * (1 + 1e-9)


@pytest.mark.slow  # --durations: among the slowest tests of the suite
@settings(max_examples=8)
@given(eps=st.floats(0.05, 5.0), log_delta=st.floats(-10, -3))
def test_calibration_never_overshoots(eps: float, log_delta: float) -> None:
    delta = 10.0**log_delta
    m = GaussianMechanism.calibrate(eps, delta, sensitivity=1.0, grid=2.0**-6)
    assert m.profile().delta(eps) <= delta
    assert m.profile().epsilon(delta) <= eps
    dm = DiscreteGaussianMechanism.calibrate(eps, delta, sensitivity=1)
    assert _cks_delta(dm.sigma, eps, 1) <= delta * (1 + 1e-9)


def _cks_delta(sigma: float, eps: float, d: int) -> float:
    # Canonne, Kamath & Steinke 2020, Theorem 7: exact delta of the discrete Gaussian,
    # delta = P[Y > eps s^2/d - d/2] - e^eps P[Y > eps s^2/d + d/2], Y ~ N_Z(0, s^2).
    ks = np.arange(-math.ceil(60 * sigma) - 60, math.ceil(60 * sigma) + 61)
    w = np.exp(-(ks.astype(float) ** 2) / (2 * sigma * sigma))
    w /= w.sum()
    a = eps * sigma * sigma / d - d / 2
    b = eps * sigma * sigma / d + d / 2
    return float(w[ks > a].sum() - math.exp(eps) * w[ks > b].sum())


def test_discrete_gaussian_profile_against_dp_accounting_and_cks() -> None:
    # dp-accounting's discrete-Gaussian PLD and CKS 2020 Theorem 7 agree with our calibration
    dm = DiscreteGaussianMechanism.calibrate(1.0, 1e-5)
    exact = _cks_delta(dm.sigma, 1.0, 1)
    assert exact <= 1e-5
    peer = dp_pld.from_discrete_gaussian_mechanism(
        dm.sigma, sensitivity=1, value_discretization_interval=1e-6
    )
    assert peer.get_delta_for_epsilon(1.0) == pytest.approx(exact, rel=1e-3)
    # and it is tight: 0.1% less noise would break the target
    assert _cks_delta(dm.sigma * 0.999, 1.0, 1) > 1e-5


def test_release_profile_accounts_for_grid() -> None:
    m = GaussianMechanism(2.0, sensitivity=1.0, grid=0.25)
    assert m.integer_sensitivity == 5 and m.grid_sigma == 8.0
    assert m.profile().zcdp_rho() == pytest.approx(25 / (2 * 64))  # CKS 2020 Thm 4
    assert m.ideal_profile().zcdp_rho() == pytest.approx(1 / 8)


def test_release_on_grid_and_goodness_of_fit() -> None:
    m = GaussianMechanism(1.0, sensitivity=1.0, grid=0.125)
    src = InsecureSeededSource(3, i_understand_this_is_not_private=True)
    draws = np.array([m.release(0.3, source=src) for _ in range(1500)])
    assert np.all(draws * 8 == np.round(draws * 8))
    # round(0.3*8) = 2 grid units = 0.25: KS against N(0.25, 1) (grid 1/8 << sigma)
    assert stats.kstest(draws - 0.25, "norm").pvalue > 1e-3
    fast = (m.simulate(0.3, 20000, rng=5) - 0.25) * 8  # grid units, N_Z(0, 64)
    edges = np.arange(-26, 27, 4)
    ks = np.arange(-200, 201)
    pmf = np.exp(-(ks.astype(float) ** 2) / 128)
    pmf /= pmf.sum()
    idx = np.clip(np.searchsorted(edges, ks, side="right"), 1, edges.size - 1)
    probs = np.bincount(idx, weights=pmf, minlength=edges.size)[1:]
    obs_idx = np.clip(np.searchsorted(edges, fast, side="right"), 1, edges.size - 1)
    observed = np.bincount(obs_idx, minlength=edges.size)[1:]
    assert stats.chisquare(observed, probs * fast.size).pvalue > 1e-3
    with pytest.raises(ParameterError, match="seed"):
        m.release(0.3, source=7)


def test_discrete_gaussian_release_exact_sampler() -> None:
    m = DiscreteGaussianMechanism(2.0)
    src = InsecureSeededSource(4, i_understand_this_is_not_private=True)
    draws = np.array([m.release(10, source=src) for _ in range(2000)]) - 10
    z = sum(math.exp(-(k * k) / 8) for k in range(-60, 61))
    ks = np.arange(-4, 5)
    probs = np.array([math.exp(-(k * k) / 8) / z for k in ks])
    probs[0] += sum(math.exp(-(k * k) / 8) / z for k in range(-60, -4))
    probs[-1] += sum(math.exp(-(k * k) / 8) / z for k in range(5, 61))
    observed = np.array([(np.clip(draws, -4, 4) == k).sum() for k in ks])
    assert stats.chisquare(observed, probs * draws.size).pvalue > 1e-3
    with pytest.raises(ParameterError):
        m.release(1.5, source=src)


def test_channel_view_rows_match_pmf() -> None:
    m = DiscreteGaussianMechanism(1.5)
    view = m.channel([0, 1], tail=1e-12)
    w = view.channel.matrix
    z = sum(math.exp(-(k * k) / 4.5) for k in range(-80, 81))
    outs = np.array(view.channel.outputs)
    mid = (outs > outs.min()) & (outs < outs.max())
    expected = np.exp(-(outs[mid] ** 2) / 4.5) / z
    assert np.allclose(w[0][mid], expected, rtol=1e-10, atol=0)
    assert view.tail_mass <= 2e-12
    with pytest.raises(ParameterError, match="sensitivity"):
        m.channel([0, 5])


def test_invalid_parameters() -> None:
    with pytest.raises(ParameterError):
        GaussianMechanism(-1.0)
    with pytest.raises(ParameterError, match="grid"):
        GaussianMechanism(1.0, grid=0.3)
    with pytest.raises(ParameterError, match="delta"):
        analytic_gaussian_sigma(1.0, 0.0)
    with pytest.raises(ParameterError, match="method"):
        GaussianMechanism.calibrate(1.0, 1e-5, method="magic")
    with pytest.raises(ParameterError):
        DiscreteGaussianMechanism(1.0, sensitivity=1.5)  # type: ignore[arg-type]


def test_frozen_and_all() -> None:
    m = GaussianMechanism(1.0)
    with pytest.raises(AttributeError):
        m.sigma = 2.0  # type: ignore[misc]
    assert Fraction(m.grid or 0) == Fraction(1, 1024)
    public = {
        n
        for n, v in vars(gaussian).items()
        if not n.startswith("_") and getattr(v, "__module__", None) == gaussian.__name__
    }
    assert public == set(gaussian.__all__)


@pytest.mark.parametrize("sigma", [5000.0, 1e7])
def test_large_sigma_tail_is_an_upper_bound_and_tight(sigma: float) -> None:
    # P[N ≥ k] of N_Z(0, σ²) above σ = 4096 comes from a closed-form bound: compare with the
    # continuous-correction estimate Φ̄((k − 1/2)/σ) (Euler-Maclaurin, error O(φ/σ²)) and, at
    # σ = 5000, with the direct sum of the pmf.
    from infodp.mechanisms.gaussian import DiscreteGaussianMechanism, _dgauss_tail

    for z in (0.5, 1.96, 4.0, 8.0):
        k = round(z * sigma)
        tail = _dgauss_tail(sigma, k)
        approx = float(stats.norm.sf((k - 0.5) / sigma))
        assert tail == pytest.approx(approx, rel=1e-6, abs=0.0)
        if sigma < 10_000:
            ks = np.arange(k, k + 45 * int(sigma), dtype=np.float64)
            norm = sigma * math.sqrt(2 * math.pi)  # exact to e^{−2π²σ²} (Poisson summation)
            direct = math.fsum(np.exp(-(ks * ks) / (2 * sigma * sigma)).tolist()) / norm
            # The closed form (within 1e-12) rounded up by TAIL_ROUND = 1e-9 relative.
            assert direct * (1 - 1e-13) <= tail <= direct * (1 + 2e-9) + 1e-300
    m = DiscreteGaussianMechanism(sigma)
    h = m.halfwidth(0.05)
    assert stats.norm.isf(0.025) * sigma - 1 <= h <= stats.norm.isf(0.025) * sigma + 2
