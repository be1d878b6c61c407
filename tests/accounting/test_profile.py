"""Privacy profiles: constructors, queries, composition laws, group privacy, information."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, special, stats

import infodp.accounting as acc
from _stores import TEXT, ints, one_table
from infodp.accounting import profile as prof
from infodp.errors import ParameterError
from infodp.testing import renyi_orders

_PROFILES = [
    acc.laplace_profile(2.0),
    acc.gaussian_profile(3.0),
    acc.discrete_laplace_profile(1.5, 2),
    acc.discrete_gaussian_profile(2.0),
    acc.randomized_response_profile(1.0, 3),
    acc.pure_dp_profile(0.7),
    acc.subsampled_gaussian_profile(1.0, 0.05),
    acc.approximate_dp_profile(1.0, 1e-6),
]


def _gauss_eps(mu: float, delta: float) -> float:
    # Balle & Wang 2018, Theorem 8 inverted by root finding (N(0,1) vs N(μ,1)).
    def d(e: float) -> float:
        return float(
            stats.norm.cdf(mu / 2 - e / mu) - math.exp(e) * stats.norm.cdf(-mu / 2 - e / mu)
        )

    return 0.0 if d(0.0) <= delta else float(optimize.brentq(lambda e: d(e) - delta, 0, 300))


def test_all_matches_public_names() -> None:
    for module in (acc, prof):
        defined = {
            n
            for n, v in vars(module).items()
            if not n.startswith("_") and getattr(v, "__module__", None) == module.__name__
        }
        assert defined <= set(module.__all__)
        assert all(hasattr(module, n) for n in module.__all__)


@pytest.mark.parametrize(
    ("build", "arg"),
    [
        (lambda: acc.laplace_profile(-1.0), "scale"),
        (lambda: acc.gaussian_profile(1.0, sensitivity=0.0), "sensitivity"),
        (lambda: acc.discrete_laplace_profile(1.0, 1.5), "sensitivity"),
        (lambda: acc.discrete_gaussian_profile(float("nan")), "sigma"),
        (lambda: acc.randomized_response_profile(1.0, 1), "k"),
        (lambda: acc.pure_dp_profile(-0.1), "epsilon"),
        (lambda: acc.subsampled_gaussian_profile(1.0, 1.1), "sampling_rate"),
        (lambda: acc.approximate_dp_profile(1.0, 2.0), "delta"),
        (lambda: acc.compose(), "profiles"),
        (lambda: acc.gaussian_profile(1.0).rdp(0.5), "alpha"),
        (lambda: acc.gaussian_profile(1.0).epsilon(1.5), "delta"),
        (lambda: acc.gaussian_profile(1.0).repeat(0), "k"),
        (lambda: acc.gaussian_profile(1.0).group(-2), "k"),
    ],
)
def test_bad_parameters_name_the_argument(build: object, arg: str) -> None:
    with pytest.raises(ParameterError, match=arg):
        build()  # type: ignore[operator]


@pytest.mark.parametrize("p", _PROFILES, ids=lambda p: type(p).__name__)
def test_queries_are_never_nan_and_ordered(p: acc.PrivacyProfile) -> None:
    alphas = np.array([1.0, 1.5, 2.0, 10.0, math.inf])
    curve = np.asarray(p.rdp(alphas))
    assert not np.isnan(curve).any()
    assert np.all(curve[1:] >= curve[:-1] - 1e-12)  # non-decreasing in α
    assert curve[-1] == p.pure_epsilon()
    for d in [0.0, 1e-9, 1e-3, 0.5, 1.0]:
        e = p.epsilon(d)
        assert not math.isnan(e)
        assert e >= 0
    assert p.epsilon(1.0) == 0.0
    for e in [0.0, 0.5, 3.0]:
        assert 0.0 <= p.delta(e) <= 1.0
    # information(1) is the least of the RDP curve and the capacity/level-composition bounds
    assert 0.0 <= p.information(1.0) <= float(p.rdp(1.0))


def test_pure_epsilons() -> None:
    assert acc.laplace_profile(2.0, 3.0).pure_epsilon() == 1.5
    assert acc.discrete_laplace_profile(2.0, 3).pure_epsilon() == 1.5
    assert acc.gaussian_profile(1.0).pure_epsilon() == math.inf
    assert acc.randomized_response_profile(math.log(3)).pure_epsilon() == pytest.approx(math.log(3))
    assert acc.approximate_dp_profile(1.0, 0.0).pure_epsilon() == 1.0
    assert acc.approximate_dp_profile(1.0, 1e-9).pure_epsilon() == math.inf


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_pure_dp_kl_is_eps_tanh(eps: float) -> None:
    # KL of the ε-DP extreme pair equals ε·tanh(ε/2) (Cuff & Yu 2016, Property 1),
    # computed here from the pair itself.
    pair = np.array([special.expit(eps), special.expit(-eps)])
    kl = float(np.sum(special.rel_entr(pair, pair[::-1])))
    assert acc.pure_dp_profile(eps).rdp(1.0) == pytest.approx(kl, rel=1e-12)
    assert kl == pytest.approx(eps * math.tanh(eps / 2), rel=1e-12)


def test_laplace_epsilon_delta_zero_is_pure() -> None:
    assert acc.laplace_profile(0.5).epsilon(0.0) == pytest.approx(2.0, abs=1e-9)
    assert acc.gaussian_profile(1.0).epsilon(0.0) == math.inf


@pytest.mark.parametrize(("sigma", "k"), [(3.0, 10), (8.0, 50), (1.0, 1)])
@pytest.mark.parametrize("delta", [1e-5, 1e-8])
def test_composed_gaussians_epsilon_is_tight_and_valid(sigma: float, k: int, delta: float) -> None:
    # k Gaussians with σ compose to one with σ/√k (exact ε by Balle & Wang's formula).
    exact = _gauss_eps(math.sqrt(k) / sigma, delta)
    ours = acc.gaussian_profile(sigma).repeat(k).epsilon(delta)
    assert exact <= ours <= exact + 5e-4


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_subsampled_gaussian_profile_vs_dp_accounting(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sigma = float(rng.uniform(0.8, 3.0))
    q = float(10 ** rng.uniform(-2.5, -1))
    steps = int(rng.integers(50, 3000))
    delta = 1e-6
    event = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps
    )
    pld_acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    pld_acc.compose(event)
    rdp_acc = rdp_privacy_accountant.RdpAccountant()
    rdp_acc.compose(event)
    profile = acc.subsampled_gaussian_profile(sigma, q).repeat(steps)
    ours = profile.epsilon(delta)
    assert ours == pytest.approx(pld_acc.get_epsilon(delta), rel=1e-3)
    assert ours <= rdp_acc.get_epsilon(delta) * 1.001


def test_dp_sgd_reference_value() -> None:
    # Published reference: q = 0.01, σ = 1, 10 000 steps, δ = 1e-5: tight ε ≈ 6.1877.
    p = acc.subsampled_gaussian_profile(1.0, 0.01).repeat(10_000)
    assert p.epsilon(1e-5) == pytest.approx(6.1877, abs=1e-3)


def test_laplace_reference_value() -> None:
    # Published reference: 1000 Laplace(10) mechanisms, δ = 1e-6: tight ε ≈ 18.950.
    assert acc.laplace_profile(10.0).repeat(1000).epsilon(1e-6) == pytest.approx(18.950, abs=2e-3)


@settings(max_examples=30)
@given(
    s1=st.floats(0.5, 20.0),
    s2=st.floats(0.1, 10.0),
    eps=st.floats(0.05, 3.0),
    alpha=st.floats(1.0, 100.0),
    k=st.integers(1, 50),
)
def test_rdp_is_additive_under_composition(
    s1: float, s2: float, eps: float, alpha: float, k: int
) -> None:
    # Mironov 2017, Proposition 1.
    a, b, c = acc.gaussian_profile(s1), acc.laplace_profile(s2), acc.pure_dp_profile(eps)
    total = acc.compose(a, b, c.repeat(k)).rdp(alpha)
    assert total == pytest.approx(a.rdp(alpha) + b.rdp(alpha) + k * c.rdp(alpha), rel=1e-9)


@settings(max_examples=30)
@given(scale=st.floats(0.2, 20.0), k=st.integers(1, 30), alpha=st.floats(1.0, 50.0))
def test_group_privacy_laws(scale: float, k: int, alpha: float) -> None:
    # Dwork & Roth 2014, Thm 2.2 (kε); Bun & Steinke 2016, Prop 1.9 (k²ρ); additive
    # mechanisms: group of k = sensitivity k (exact).
    lap = acc.laplace_profile(scale)
    assert lap.group(k).pure_epsilon() == pytest.approx(k / scale)
    g = acc.gaussian_profile(scale)
    assert g.group(k).rdp(alpha) == pytest.approx(k * k * alpha / (2 * scale * scale))
    rr = acc.randomized_response_profile(1.0 / scale)
    assert rr.group(k).pure_epsilon() == pytest.approx(k / scale)


def test_generic_group_uses_mironov_and_zcdp() -> None:
    base = acc.subsampled_gaussian_profile(2.0, 0.1)
    grp = base.group(4)
    assert isinstance(grp, prof.GroupProfile)
    alphas = np.array([1.0, 2.0, 4.0])
    # Corollary 4 of Mironov 2017 with c = 2: 9·ε(4·max(α, 2)).
    expected = 9 * np.asarray(base.rdp(4 * np.maximum(alphas, 2.0)))
    np.testing.assert_allclose(np.asarray(grp.rdp(alphas)), np.minimum(expected, np.inf))
    assert np.all(np.asarray(grp.rdp(alphas)) >= np.asarray(base.rdp(alphas)))
    assert grp.epsilon(1e-5) >= base.epsilon(1e-5)
    assert acc.discrete_gaussian_profile(2.0).group(3).zcdp_rho() == pytest.approx(9 / 8)


def test_parallel_is_the_max_and_post_processing_is_identity() -> None:
    a, b = acc.laplace_profile(1.0), acc.gaussian_profile(2.0)
    par = acc.parallel(a, b)
    for alpha in [1.0, 2.0, 8.0]:
        assert par.rdp(alpha) == pytest.approx(max(a.rdp(alpha), b.rdp(alpha)))
    assert par.pure_epsilon() == math.inf
    assert par.epsilon(1e-6) >= max(a.epsilon(1e-6), b.epsilon(1e-6)) - 1e-9
    assert acc.post_process(a) is a


def test_subsampling_edge_cases() -> None:
    assert acc.subsampled_gaussian_profile(2.0, 1.0) == acc.gaussian_profile(2.0)
    zero = acc.subsampled_gaussian_profile(2.0, 0.0)
    assert zero.pure_epsilon() == 0.0
    assert zero.epsilon(0.0) == 0.0


def test_compose_merges_identical_profiles() -> None:
    g = acc.gaussian_profile(1.0)
    c = acc.compose(g, g, acc.compose(g, acc.laplace_profile(1.0)))
    assert isinstance(c, prof.ComposedProfile)
    assert dict(c.parts)[g] == 3
    assert g.repeat(1) is g
    assert acc.compose(g) is g


def test_zcdp() -> None:
    assert acc.gaussian_profile(2.0, 3.0).zcdp_rho() == pytest.approx(9 / 8)
    assert acc.pure_dp_profile(1.0).zcdp_rho() == 0.5
    assert acc.compose(acc.gaussian_profile(1.0), acc.pure_dp_profile(1.0)).zcdp_rho() == 1.0
    assert acc.compose(acc.gaussian_profile(1.0), acc.laplace_profile(1.0)).zcdp_rho() is None


@pytest.mark.parametrize("eps", [0.2, math.log(3), 2.0])
def test_information_bounds_binary_channel_capacity(eps: float) -> None:
    # Randomized response is a BSC with crossover p = 1/(1+e^ε); its Shannon capacity
    # ln 2 − h(p) (Cover & Thomas, Thm 7.1.1) must lie below the profile's information(1).
    p = special.expit(-eps)
    capacity = math.log(2) + p * math.log(p) + (1 - p) * math.log1p(-p)
    profile = acc.randomized_response_profile(eps)
    assert capacity <= profile.information(1.0)
    assert profile.information(math.inf) == pytest.approx(eps)


def test_approximate_dp_profile() -> None:
    p = acc.approximate_dp_profile(1.0, 1e-6)
    assert p.delta(1.0) == pytest.approx(1e-6)
    assert p.delta(math.inf) == pytest.approx(1e-6)  # the δ mass is an infinite loss
    assert p.epsilon(1e-6) == pytest.approx(1.0, abs=1e-3)
    assert p.rdp(2.0) == math.inf
    assert p.information(1.0) == math.inf
    # Dwork & Roth 2014, Thm 2.2: group of k gives (kε, k e^{(k−1)ε} δ).
    g = p.group(2)
    assert g.pure_epsilon() == math.inf
    assert g.delta(2.0) == pytest.approx(2 * math.e * 1e-6)


@settings(max_examples=25)
@given(d1=st.floats(1e-10, 0.9), d2=st.floats(1e-10, 0.9))
def test_epsilon_non_increasing_in_delta(d1: float, d2: float) -> None:
    p = acc.compose(acc.gaussian_profile(4.0).repeat(5), acc.laplace_profile(3.0))
    lo, hi = sorted((d1, d2))
    assert p.epsilon(hi) <= p.epsilon(lo) + 1e-12


@pytest.mark.slow  # --durations: among the slowest tests of the suite
def test_huge_epsilon_falls_back_to_rdp_when_pld_grid_too_large() -> None:
    from infodp.accounting.pld import PLDTooLarge

    p = acc.gaussian_profile(0.01).repeat(10)
    with pytest.raises(PLDTooLarge, match="value_discretization_interval"):
        p.pld()
    mu = math.sqrt(10) / 0.01

    def log_gap(e: float) -> float:  # log δ(ε) − log 1e-6, Balle & Wang in the log domain
        a, b = special.log_ndtr(mu / 2 - e / mu), e + special.log_ndtr(-mu / 2 - e / mu)
        return float(a + math.log(-math.expm1(b - a)) - math.log(1e-6))

    exact = float(optimize.brentq(log_gap, mu * mu / 2, mu * mu))
    eps = p.epsilon(1e-6)
    assert exact <= eps <= exact * 1.05


_EXACT_CURVES = [p for p in _PROFILES if not isinstance(p, prof.SubsampledGaussianProfile)]


@settings(max_examples=60)
@given(
    index=st.integers(0, len(_EXACT_CURVES) - 1),
    a1=renyi_orders(min_value=1.0),
    a2=renyi_orders(min_value=1.0),
)
def test_rdp_non_decreasing_in_alpha_including_special_orders(
    index: int, a1: float, a2: float
) -> None:
    # Rényi divergence is non-decreasing in α (van Erven & Harremoës 2014, Thm 3), also at
    # the exact special orders 1 and ∞ and within 1e-12 of 1 (infodp.testing.renyi_orders).
    p = _EXACT_CURVES[index]
    lo, hi = sorted((a1, a2))
    assert p.rdp(lo) <= p.rdp(hi) + 1e-12 * max(1.0, abs(p.rdp(lo)))


def test_repeat_of_a_composition_multiplies_counts() -> None:
    g, lap = acc.gaussian_profile(2.0), acc.laplace_profile(3.0)
    twice = acc.compose(g, lap).repeat(3)
    assert isinstance(twice, prof.ComposedProfile)
    assert dict(twice.parts) == {g: 3, lap: 3}
    assert twice.rdp(2.0) == pytest.approx(3 * (g.rdp(2.0) + lap.rdp(2.0)))


def test_delta_one_is_no_privacy_and_composes() -> None:
    # (ε, δ = 1) promises nothing: δ(ε') = 1 for every finite ε', and ε(δ) = ∞ for δ < 1
    # (Kairouz, Oh & Viswanath 2015: the dominating pair reveals the input with probability δ).
    p = acc.approximate_dp_profile(1.0, 1.0)
    assert p.delta(50.0) == 1.0
    assert math.isinf(p.epsilon(0.5))
    both = acc.compose(p, acc.laplace_profile(1.0))
    assert both.delta(10.0) == 1.0
    assert math.isinf(both.epsilon(1e-6))


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_pld_queries_never_round_below_the_exact_value(eps: float) -> None:
    # The extreme pair of ε-DP (randomized response, Kairouz, Oh & Viswanath 2015) has
    # ε(0) = ε exactly and δ(ε') = (e^ε − e^ε')/(1 + e^ε); float cancellation in the PLD made
    # both come out a few ulps low (found in review).
    p = acc.pure_dp_profile(eps)
    assert p.epsilon(0.0) >= eps
    eps2 = eps - 1e-11
    exact = -math.exp(eps) * math.expm1(eps2 - eps) / (1 + math.exp(eps))
    assert p.delta(eps2) >= exact


# ---- the article's level-α composition in information(α) ------------------------------------


@pytest.mark.parametrize("sigma", [0.5, 2.0, 8.0])
def test_information_of_composed_gaussian_uses_level_rule_where_tighter(sigma: float) -> None:
    # Before: information(α) read the RDP curve, 100·α/(2σ²) (Mironov 2017, Prop. 3 and 1).
    # Now: the level-α composition of "DP and Information Theory" (2022),
    # "Group privacy and composability": Σ ε_i at level α with 1/(α − 1) = Σ 1/(α_i − 1),
    # over the Gaussian's Shannon capacity ≤ Δ²/(4σ²) (Cover & Thomas 2006, Thm 9.4.1, with
    # total input variance ≤ Δ²/2).
    composed = acc.gaussian_profile(sigma).repeat(100)
    before = {a: 100 * a / (2 * sigma**2) for a in (1.0, 2.0, 8.0)}
    at_one = composed.information_bound(1.0)
    assert at_one.rule == "level composition"
    assert at_one.nats == pytest.approx(100 / (4 * sigma**2), rel=1e-12)
    assert at_one.nats < before[1.0]  # strictly smaller where the level rule is tighter
    for a in (2.0, 8.0):
        # at α > 1 the rule would need each use at 1 + 100(α − 1): the RDP curve is tighter
        bound = composed.information_bound(a)
        assert bound.rule == "rdp"
        assert bound.nats == pytest.approx(before[a], rel=1e-12)  # no larger than before
        level = 100 * float(acc.gaussian_profile(sigma).rdp(1.0 + 100 * (a - 1.0)))
        assert level > bound.nats


def test_information_bound_never_exceeds_rdp_and_is_additive_at_one() -> None:
    # Shannon capacity is subadditive under composition (chain rule), so information(1) of a
    # composition is at most the sum of the parts' information(1).
    parts = [acc.gaussian_profile(1.5), acc.randomized_response_profile(0.7, 3)]
    composed = acc.compose(*parts)
    assert composed.information(1.0) <= sum(p.information(1.0) for p in parts) * (1 + 1e-12)
    for a in (1.0, 1.5, 4.0, math.inf):
        assert composed.information(a) <= float(composed.rdp(a))


@settings(max_examples=60, deadline=None)
@given(
    scale=st.floats(0.5, 1e5),
    d=st.integers(1, 5000),
    k=st.integers(1, 4),
    alpha=st.one_of(st.just(1.0), st.just(math.inf), st.floats(1.0, 300.0)),
)
def test_one_order_on_floats_matches_the_array_path(
    scale: float, d: int, k: int, alpha: float
) -> None:
    # A Python order is answered on floats (_rdp_at: the closed forms, sums over parts); an
    # array goes through _rdp_orders and numpy. Both must give the same curve.
    from infodp.accounting import compose, discrete_laplace_profile, gaussian_profile, parallel

    lap = discrete_laplace_profile(scale, d)
    for profile in (
        lap,
        compose(lap, discrete_laplace_profile(30.0, 1)).repeat(k),
        parallel(lap, discrete_laplace_profile(2.0, 1)),
        compose(lap, gaussian_profile(3.0)),
    ):
        scalar = profile.rdp(alpha)
        array = float(np.asarray(profile.rdp(np.array([alpha])))[0])
        assert isinstance(scalar, float)
        assert scalar == pytest.approx(array, rel=1e-9, abs=1e-300)


@settings(max_examples=60, deadline=None)
@given(
    eps0=st.floats(0.01, 2.0),
    delta0=st.floats(1e-9, 1e-3),
    scales=st.lists(st.floats(0.5, 20.0), min_size=1, max_size=3),
)
def test_basic_composition_bounds_a_mixed_composition(
    eps0: float, delta0: float, scales: list[float]
) -> None:
    # Dwork & Roth 2014, Theorem 3.16: an (ε0, δ0) mechanism composed with pure ε_i ones is
    # (ε0 + Σ ε_i, δ0)-DP. The PLD of the (ε0, δ0) part alone is loose here (it spreads δ0
    # over the composition), so δ at Σε must come out no larger than δ0 (rounded up).
    parts = [acc.approximate_dp_profile(eps0, delta0)] + [acc.laplace_profile(s) for s in scales]
    composed = acc.compose(*parts)
    total = eps0 + sum(1.0 / s for s in scales)
    assert composed.approx_guarantee() is not None
    g_eps, g_delta = composed.approx_guarantee()  # type: ignore[misc]
    assert g_eps >= total * (1 - 1e-15) and g_eps <= total * (1 + 1e-12)
    assert g_delta == pytest.approx(delta0, rel=1e-12) and g_delta >= delta0
    assert composed.delta(g_eps) <= g_delta
    assert composed.epsilon(g_delta) <= g_eps
    # Still an upper bound: never below what the tight PLD of the parts says.
    assert composed.delta(g_eps) >= min(composed.pld().delta(g_eps), g_delta) - 1e-12


def test_the_curators_partition_selection_meets_its_charge() -> None:
    # A partition-selection AVG at (0.7, 1e-6): the selection's (ε/3, δ) and two pure parts.
    # Before the basic bound was a candidate, the composed δ(0.7) came out 1e-5 and the
    # ledger refused the query as not meeting its own charge.
    from fractions import Fraction

    from infodp.curator.declaration.source import load_schema
    from infodp.curator.price.cost import plan_cost
    from infodp.curator.sql.parse import parse_query

    schema = load_schema(one_table("t", {"h": TEXT, "n": ints(-10, 200)}, unit="pid"))
    plan = parse_query("SELECT h, AVG(n) FROM t GROUP BY h", schema)
    cost = plan_cost(plan, schema, Fraction(7, 10), Fraction(1, 10**6), None)
    assert cost.profile().delta(0.7) <= 1e-6 * (1 + 1e-9)


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_delta_just_below_the_largest_loss_is_positive(eps: float) -> None:
    # A loss one ulp above ε' makes δ(ε') = E_P[(1 − e^{ε' − L})₊] > 0 (the hockey-stick
    # divergence through the privacy loss L, Sommer, Meiser & Mohammadi 2019), but the float
    # sum cancels to exactly the mass at +∞: the rounding allowance must still be added there
    # (at ε = 0.1 it was not, and δ = 0 came back).
    p = acc.compose(acc.discrete_laplace_profile(1 / eps, 1), acc.pure_dp_profile(math.ulp(eps)))
    below = math.nextafter(eps, 0.0)
    assert p.pure_epsilon() > eps > below
    assert p.delta(below) > 0.0
    assert p.delta(p.pure_epsilon()) == 0.0
