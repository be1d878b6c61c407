"""Conversions checked against closed forms, brute force and dp-accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize, special, stats

from infodp.accounting import conversions as conv
from infodp.accounting.rdp import DEFAULT_ORDERS
from infodp.errors import ParameterError


def _gaussian_exact_epsilon(mu: float, delta: float) -> float:
    """ε(δ) of the Gaussian pair N(0,1) vs N(μ,1) (Balle & Wang 2018, Theorem 8) by root-finding."""

    def delta_of(eps: float) -> float:
        return float(
            stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu)
        )

    if delta_of(0.0) <= delta:
        return 0.0
    return float(optimize.brentq(lambda e: delta_of(e) - delta, 0.0, 500.0, xtol=1e-13))


@given(eps=st.floats(0.0, 20.0))
def test_pure_to_kl_equals_kl_of_rr_pair_and_beats_the_tutorial_bound(eps: float) -> None:
    # Cuff & Yu 2016, Property 1: the extreme ε-DP pair (e^ε/(1+e^ε), 1/(1+e^ε)) has KL
    # ε·tanh(ε/2); Ünsal & Önen states the looser min(ε, ε²).
    p = np.array([special.expit(eps), special.expit(-eps)])
    kl = float(np.sum(special.rel_entr(p, p[::-1])))
    assert conv.pure_to_kl(eps) == pytest.approx(kl, rel=1e-9, abs=1e-15)
    assert conv.pure_to_kl(eps) <= conv.pure_to_kl_simple(eps) + 1e-12


def test_pure_to_rdp_endpoints() -> None:
    assert conv.pure_to_rdp(1.5, math.inf) == 1.5
    assert conv.pure_to_rdp(1.5, 1.0) == pytest.approx(1.5 * math.tanh(0.75))


@pytest.mark.parametrize("crossover", [0.01, 0.1, 0.25, 0.4, 0.49])
def test_mi_to_delta_tight_on_binary_symmetric_channel(crossover: float) -> None:
    # A BSC with uniform input: MI = ln 2 − h(p) (computed here from the joint law) and
    # TV = 1 − 2p, the value the tight conversion returns (Cuff & Yu 2016, Theorem 2).
    joint = 0.5 * np.array([[1 - crossover, crossover], [crossover, 1 - crossover]])
    mi = float(np.sum(special.rel_entr(joint, np.full((2, 2), 0.25))))
    assert conv.mi_to_delta(mi) == pytest.approx(1 - 2 * crossover, rel=1e-7)
    assert conv.mi_to_delta(mi) <= conv.mi_to_delta_pinsker(mi)
    assert conv.mi_to_delta_pinsker(mi) == pytest.approx(min(1.0, math.sqrt(2 * mi)))


@given(eps=st.floats(0.0, 2.0))
def test_mi_to_delta_below_pinsker(eps: float) -> None:
    assert conv.mi_to_delta(eps) <= conv.mi_to_delta_pinsker(eps) + 1e-12


@given(eps=st.floats(0.0, 5.0), delta=st.floats(0.0, 0.5), eps2=st.floats(0.0, 6.0))
def test_approx_dp_property3_matches_brute_force_hockey_stick(
    eps: float, delta: float, eps2: float
) -> None:
    # Ünsal & Önen, Property 3; checked against the hockey-stick divergence of the (ε, δ)
    # dominating pair of Kairouz, Oh & Viswanath 2015 computed by brute force.
    a = (1 - delta) * special.expit(eps)
    b = (1 - delta) * special.expit(-eps)
    p = np.array([delta, a, b, 0.0])
    q = np.array([0.0, b, a, delta])
    brute = float(np.sum(np.maximum(p - math.exp(eps2) * q, 0.0)))
    assert conv.approx_dp_to_approx_dp(eps, delta, eps2) == pytest.approx(brute, abs=1e-12)


def test_approx_dp_formula_as_printed_in_seed() -> None:
    eps, delta, eps2 = 1.0, 1e-3, 0.4
    printed = 1 - (math.exp(eps2) + 1) * (1 - delta) / (math.exp(eps) + 1)
    assert conv.approx_dp_to_approx_dp(eps, delta, eps2) == pytest.approx(printed, rel=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_rdp_to_epsilon_and_delta_match_dp_accounting(seed: int) -> None:
    # The improved conversion (CKS 2020, Prop. 12) is what dp-accounting implements.
    rng = np.random.default_rng(seed)
    sigma = float(rng.uniform(0.3, 10.0))
    curve = DEFAULT_ORDERS / (2 * sigma**2) * float(rng.integers(1, 50))
    delta = float(10 ** rng.uniform(-12, -2))
    theirs, _ = dpa_rdp.compute_epsilon(DEFAULT_ORDERS, curve, delta)
    assert conv.rdp_to_epsilon(curve, DEFAULT_ORDERS, delta) == pytest.approx(theirs, rel=1e-12)
    eps = float(rng.uniform(0.1, 10.0))
    theirs_d, _ = dpa_rdp.compute_delta(DEFAULT_ORDERS, curve, eps)
    ours_d = conv.rdp_to_delta(curve, DEFAULT_ORDERS, eps)
    assert ours_d <= theirs_d * (1 + 1e-12)
    assert ours_d == pytest.approx(theirs_d, rel=1e-9)


@pytest.mark.parametrize("rho", [0.01, 0.1, 0.5, 2.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
def test_zcdp_to_epsilon_is_valid_and_no_worse_than_bun_steinke(rho: float, delta: float) -> None:
    # The Gaussian mechanism with ρ = μ²/2 is ρ-zCDP, so any valid conversion is ≥ its exact
    # ε(δ); Bun & Steinke 2016, Prop. 1.3 is one valid conversion we must not exceed.
    eps = conv.zcdp_to_epsilon(rho, delta)
    exact = _gaussian_exact_epsilon(math.sqrt(2 * rho), delta)
    assert exact <= eps + 1e-9
    assert eps <= rho + 2 * math.sqrt(rho * math.log(1 / delta)) + 1e-12
    assert conv.zcdp_to_delta(rho, eps) <= delta * (1 + 1e-6)


def test_level_composition_and_pure_group_privacy() -> None:
    # "DP and Information Theory" (2022): 1/(α−1) = Σ 1/(α_i − 1);
    # group of n at α = ∞: nε (Dwork & Roth 2014, Thm 2.2).
    assert conv.level_composition([1.0, 2.0], [3.0, 3.0]) == (3.0, 2.0)
    assert conv.level_composition([1.0, 2.0], [2.0, 5.0]) == pytest.approx((3.0, 1.8))
    assert conv.level_composition([1.0, 2.0], [1.0, 5.0]) == (3.0, 1.0)
    assert conv.level_composition([1.0], [math.inf]) == (1.0, math.inf)
    assert conv.level_composition([1.0, 1.0], [math.inf, 3.0]) == (2.0, 3.0)
    assert conv.pure_group_privacy(0.5, 4) == 2.0
    assert conv.pure_group_privacy(math.inf, 2) == math.inf
    with pytest.raises(ParameterError, match="epsilons"):
        conv.level_composition([1.0], [2.0, 3.0])


@given(n=st.integers(1, 20), eps=st.floats(0.0, 5.0))
def test_pure_group_privacy_is_composition_at_infinity(n: int, eps: float) -> None:
    total, level = conv.level_composition([eps] * n, [math.inf] * n)
    assert level == math.inf
    assert conv.pure_group_privacy(eps, n) >= total * (1 - 1e-15)
    assert conv.pure_group_privacy(eps, n) == pytest.approx(total, rel=1e-15)


def test_leakage_tail_bound_formula_and_limits() -> None:
    # "DP and Information Theory" (2022), footnote 2: (e^{(α−1)ε} − 1)/(e^{(α−1)R} − 1).
    eps, alpha, r = 0.3, 3.0, 2.0
    direct = (math.exp(2 * eps) - 1) / (math.exp(2 * r) - 1)
    assert conv.leakage_tail_bound(eps, alpha, r) == pytest.approx(direct, rel=1e-12)
    # α → 1 is Markov on the mean: ε/R; α → ∞ gives 0 for R > ε.
    assert conv.leakage_tail_bound(eps, 1.0, r) == pytest.approx(eps / r)
    assert conv.leakage_tail_bound(eps, 1 + 1e-7, r) == pytest.approx(eps / r, rel=1e-5)
    assert conv.leakage_tail_bound(eps, math.inf, r) == 0.0
    assert conv.leakage_tail_bound(eps, 1e4, r) == pytest.approx(0.0, abs=1e-300)
    assert conv.leakage_tail_bound(3.0, 2.0, 1.0) == 1.0
    with pytest.raises(ParameterError, match="r must be"):
        conv.leakage_tail_bound(eps, alpha, 0.0)


@given(delta1=st.floats(1e-12, 0.5), delta2=st.floats(1e-12, 0.5), s=st.floats(0.5, 20.0))
def test_rdp_to_epsilon_non_increasing_in_delta(delta1: float, delta2: float, s: float) -> None:
    curve = DEFAULT_ORDERS / (2 * s * s)
    lo, hi = sorted((delta1, delta2))
    assert (
        conv.rdp_to_epsilon(curve, DEFAULT_ORDERS, hi)
        <= conv.rdp_to_epsilon(curve, DEFAULT_ORDERS, lo) + 1e-12
    )


def test_bad_input_raises() -> None:
    with pytest.raises(ParameterError, match="delta"):
        conv.rdp_to_epsilon([1.0], [2.0], 1.5)
    with pytest.raises(ParameterError, match="epsilon"):
        conv.pure_to_kl(-1.0)
    with pytest.raises(ParameterError, match="rho"):
        conv.zcdp_to_epsilon(float("nan"), 1e-5)


@pytest.mark.parametrize("eps", [1e-30, 1e-20, 1e-17])
def test_mi_to_delta_is_never_zero_for_tiny_information(eps: float) -> None:
    # ln 2 − h(½ − x) = 2x² + O(x⁴) (Taylor), so δ = 2x → √(2ε) as ε → 0 (Cuff & Yu 2016,
    # Theorem 2): a δ of 0 here would be an optimistic claim.
    assert conv.mi_to_delta(eps) == pytest.approx(math.sqrt(2 * eps), rel=1e-9)
