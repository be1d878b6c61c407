"""Every exported conversion checked by brute force against certified channel quantities.

A conversion is a guarantee only if it holds for every channel satisfying its premise; here the
premise and the conclusion are both computed on explicit small channels (noisy sums of one or
two rows, randomized response, random channels) with the certified brackets of
:class:`infodp.channel.Channel` — the upper end where the premise needs it, the lower end where
a counterexample does.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from infodp.accounting import conversions as conv
from infodp.accounting import rdp as _rdp
from infodp.channel import Channel


def noisy_sum(log_pmf: object, k: int, values: list[int], top: int = 2) -> Channel:
    """Y = clamp(v + Z, −k, k + top) for integer noise Z (clamping is post-processing).

    The window is the same for every ``values``, so the channels for one row ({0, 1} or
    {1, 2}, the other row fixed) and for the pair of rows ({0, 1, 2}) are views of one
    mechanism: the noisy sum of two rows in {0, 1}.
    """
    z = np.arange(-3 * k, 3 * k + 1)
    lp = np.asarray(log_pmf(z))  # type: ignore[operator]
    p = np.exp(lp - lp.max())
    p /= p.sum()
    lo, hi = -k, k + top
    W = np.zeros((len(values), hi - lo + 1))
    for i, v in enumerate(values):
        np.add.at(W[i], np.clip(v + z, lo, hi) - lo, p)
    return Channel(W / W.sum(axis=1, keepdims=True))


def discrete_laplace(b: float) -> object:
    return lambda z: -np.abs(z) / b


def discrete_gaussian(sigma: float) -> object:
    return lambda z: -(z**2) / (2 * sigma**2)


NOISES = [
    ("discrete Laplace b=4", discrete_laplace(4.0), 300),
    ("Gaussian σ=8", discrete_gaussian(8.0), 110),
]


def random_channels(count: int, n: int, m: int, seed: int) -> list[Channel]:
    rng = np.random.default_rng(seed)
    return [Channel(rng.dirichlet(np.full(m, 0.7), size=n)) for _ in range(count)]


# ---- group privacy: the article's finite-α rule is false, the α = ∞ rule holds ---------------


@pytest.mark.parametrize(("name", "log_pmf", "k"), NOISES)
@pytest.mark.parametrize("alpha", [1.0, 2.0, 3.0])
def test_group_rule_of_the_article_fails_for_a_noisy_sum_of_two_rows(
    name: str, log_pmf: object, k: int, alpha: float
) -> None:
    # "DP and Information Theory" (2022), "Group privacy": n rows of an
    # ε-private query (at level α) would be nε-private at level 1 + (α − 1)/n. For the sum of
    # two rows in {0, 1} plus noise, the group's input is the pair, whose sum takes 0, 1, 2:
    # a certified LOWER bound on its capacity exceeds 2 × a certified UPPER bound for one row.
    # (The window ±k holds all but e^{-70} of the noise: the one-row capacity of the
    # unclamped channel exceeds the clamped one by far less than the margin.)
    rows = [noisy_sum(log_pmf, k, [0, 1]), noisy_sum(log_pmf, k, [1, 2])]
    group = noisy_sum(log_pmf, k, [0, 1, 2])
    if alpha == 1.0:
        single = max(one.shannon_capacity().upper for one in rows)
        together = group.shannon_capacity().lower
    else:
        single = max(one.renyi_capacity(alpha, tol=1e-6).upper for one in rows)
        together = group.renyi_capacity(1.0 + (alpha - 1.0) / 2, tol=1e-6).lower
    assert together > 2 * single + 1e-3, name
    # the exported rule is the α = ∞ one, which holds (Dwork & Roth 2014, Thm 2.2)
    epsilon = max(one.epsilon() for one in rows)
    assert group.epsilon() <= conv.pure_group_privacy(epsilon, 2) * (1 + 1e-12)


def test_group_counterexample_numbers() -> None:
    # The figures of the report that found the bug: C ≥ 0.0274 against a claimed 0.0155
    # (discrete Laplace b = 4) and 0.00775 against 0.00390 (Gaussian σ = 8), at α = 1.
    lap_one = noisy_sum(discrete_laplace(4.0), 300, [0, 1]).shannon_capacity()
    lap_two = noisy_sum(discrete_laplace(4.0), 300, [0, 1, 2]).shannon_capacity()
    assert 2 * lap_one.upper == pytest.approx(0.0155, abs=5e-5)
    assert lap_two.lower == pytest.approx(0.0274, abs=5e-5)
    gau_one = noisy_sum(discrete_gaussian(8.0), 110, [0, 1]).shannon_capacity()
    gau_two = noisy_sum(discrete_gaussian(8.0), 110, [0, 1, 2]).shannon_capacity()
    assert 2 * gau_one.upper == pytest.approx(0.00390, abs=5e-5)
    assert gau_two.lower == pytest.approx(0.00775, abs=5e-5)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_pure_group_privacy_against_group_channels(n: int) -> None:
    rows = [noisy_sum(discrete_laplace(2.0), 80, [v, v + 1], top=n) for v in range(n)]
    group = noisy_sum(discrete_laplace(2.0), 80, list(range(n + 1)), top=n)
    epsilon = max(one.epsilon() for one in rows)
    assert group.capacity(math.inf).upper <= conv.pure_group_privacy(epsilon, n) + 1e-9
    assert conv.pure_group_privacy(0.1, 3) >= 0.3


# ---- level composition: conditionally independent uses -------------------------------------


@pytest.mark.parametrize(("a1", "a2"), [(2.0, 3.0), (3.0, 3.0), (1.5, 5.0)])
def test_level_composition_against_product_channels(a1: float, a2: float) -> None:
    for c1, c2 in zip(random_channels(2, 2, 3, 1), random_channels(2, 2, 3, 2), strict=True):
        e1 = c1.renyi_capacity(a1, tol=1e-6).upper
        e2 = c2.renyi_capacity(a2, tol=1e-6).upper
        total, level = conv.level_composition([e1, e2], [a1, a2])
        both = c1 & c2
        assert both.renyi_capacity(level, tol=1e-4, refine_budget=0).lower <= total + 1e-9


# ---- pure ε → KL / RDP -----------------------------------------------------------------------


@pytest.mark.slow  # ~0.6 CPU-s (measured)
@pytest.mark.parametrize("seed", range(4))
def test_pure_to_kl_and_rdp_against_random_channels(seed: int) -> None:
    for ch in random_channels(3, 3, 4, seed):
        eps = ch.epsilon()
        kl = ch.diameter(1.0)
        assert ch.shannon_capacity().upper <= kl + 1e-12
        assert kl <= conv.pure_to_kl(eps) + 1e-9
        assert conv.pure_to_kl(eps) <= conv.pure_to_kl_simple(eps) + 1e-12
        for alpha in (1.5, 2.0, 5.0):
            assert ch.renyi_capacity(alpha, tol=1e-3).lower <= ch.diameter(alpha) + 1e-9
            assert ch.diameter(alpha) <= conv.pure_to_rdp(eps, alpha) + 1e-9


def test_pure_to_kl_is_attained_by_randomized_response() -> None:
    rr = Channel.randomized_response(2, 1.3)
    assert rr.diameter(1.0) == pytest.approx(conv.pure_to_kl(1.3), rel=1e-9)
    assert rr.diameter(3.0) == pytest.approx(conv.pure_to_rdp(1.3, 3.0), rel=1e-9)


# ---- MI-DP → δ --------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_mi_to_delta_against_binary_input_channels(seed: int) -> None:
    # Cuff & Yu 2016, Thm 2: capacity ≤ ε (MI-DP) implies TV ≤ mi_to_delta(ε) ≤ Pinsker's.
    for ch in [*random_channels(6, 2, 5, 10 + seed), Channel.randomized_response(2, 0.4)]:
        cap = ch.shannon_capacity().upper
        tv = ch.delta(0.0)
        assert tv <= conv.mi_to_delta(cap) + 1e-9
        assert conv.mi_to_delta(cap) <= conv.mi_to_delta_pinsker(cap) + 1e-12


def test_mi_to_delta_is_attained_by_randomized_response() -> None:
    rr = Channel.randomized_response(2, 0.9)
    cap = rr.shannon_capacity()
    assert conv.mi_to_delta(cap.lower) <= rr.delta(0.0) + 1e-7 <= conv.mi_to_delta(cap.upper) + 2e-7


# ---- (ε, δ) → (ε′, δ′), zCDP and RDP → (ε, δ) ------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_approx_dp_to_approx_dp_against_random_channels(seed: int) -> None:
    for ch in random_channels(5, 3, 4, 20 + seed):
        for eps in (0.2, 1.0):
            d = ch.delta(eps)
            for eps2 in (0.0, 0.1, 0.5, 2.0):
                assert ch.delta(eps2) <= conv.approx_dp_to_approx_dp(eps, d, eps2) + 1e-9


def test_zcdp_conversions_against_the_discrete_gaussian_channel() -> None:
    # The discrete Gaussian with Δ = 1 is ρ = 1/(2σ²)-zCDP (Canonne, Kamath & Steinke 2020,
    # Thm 4); its channel's δ(ε) must stay below zcdp_to_delta and ε(δ) below zcdp_to_epsilon.
    sigma = 1.5
    ch = noisy_sum(discrete_gaussian(sigma), 30, [0, 1])
    rho = 1 / (2 * sigma**2)
    for alpha in (1.5, 2.0, 4.0):
        assert ch.diameter(alpha) <= alpha * rho + 1e-9
    for eps in (0.1, 0.5, 1.0, 2.0):
        assert ch.delta(eps) <= conv.zcdp_to_delta(rho, eps) + 1e-12
    for delta in (1e-2, 1e-4):
        assert ch.delta(conv.zcdp_to_epsilon(rho, delta)) <= delta * (1 + 1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_rdp_conversions_against_random_channels(seed: int) -> None:
    orders = np.asarray(_rdp.DEFAULT_ORDERS[:40])
    for ch in random_channels(4, 3, 5, 30 + seed):
        curve = np.array([ch.diameter(float(a)) for a in orders])
        for eps in (0.3, 1.0, 2.5):
            assert ch.delta(eps) <= conv.rdp_to_delta(curve, orders, eps) + 1e-12
        for delta in (1e-1, 1e-3):
            assert ch.delta(conv.rdp_to_epsilon(curve, orders, delta)) <= delta * (1 + 1e-6)


# ---- the Markov tail of the leakage -----------------------------------------------------------


@pytest.mark.slow  # ~0.7 CPU-s (measured)
@pytest.mark.parametrize("alpha", [1.5, 2.0, 4.0])
def test_leakage_tail_bound_against_posteriors(alpha: float) -> None:
    # P_Y(D_α(P_{X|Y}‖P_X) ≥ R) ≤ leakage_tail_bound(C_α, α, R) for every prior P_X.
    rng = np.random.default_rng(7)
    for ch in random_channels(4, 3, 6, 40):
        eps = ch.renyi_capacity(alpha, tol=1e-4).upper
        W = ch.matrix
        for prior in rng.dirichlet(np.ones(3), size=5):
            joint = prior[:, None] * W
            py = joint.sum(axis=0)
            post = joint / py
            d = np.log(np.sum(post**alpha * prior[:, None] ** (1 - alpha), axis=0)) / (alpha - 1)
            for r in (0.05, 0.2, 0.5, 1.0):
                assert float(py[d >= r].sum()) <= conv.leakage_tail_bound(eps, alpha, r) + 1e-9
