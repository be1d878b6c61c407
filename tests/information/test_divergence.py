"""Tests for infodp.information.divergence.

References (cited next to each check):
[vEH14] van Erven & Harremoës 2014, "Rényi divergence and Kullback–Leibler divergence",
        IEEE Trans. Inf. Theory 60(7).
[Mir17] Mironov 2017, "Rényi differential privacy", CSF, Table II (randomized response).
[Gil10] Gilardoni 2010, "On Pinsker's and Vajda's type inequalities for Csiszár's
        f-divergences", IEEE Trans. Inf. Theory 56(11) (α/2 · V² ≤ D_α for 0 < α ≤ 1).
Peers: scipy.special.rel_entr, dit (bits, converted with ln 2), dp_accounting PLD.
"""

from __future__ import annotations

import itertools
import math
from decimal import Context, Decimal, localcontext

import dit
import numpy as np
import pytest
from dit.divergences import kullback_leibler_divergence as dit_kl
from dit.divergences import renyi_divergence as dit_renyi
from dit.divergences import variational_distance as dit_variational
from dp_accounting.pld import privacy_loss_distribution as dp_pld
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.special import rel_entr

from infodp.errors import ParameterError
from infodp.information import divergence
from infodp.information.divergence import (
    hockey_stick_divergence,
    kl_divergence,
    max_divergence,
    renyi_divergence,
    total_variation,
)
from infodp.testing import channels, distribution_pairs, renyi_orders

LN2 = math.log(2.0)


# ------------------------------------------------------------------------------------------
# independent references


def _bernoulli_renyi(a: float, b: float, alpha: float) -> float:
    """[vEH14, eq. (1)] written out by hand for P = Ber(a), Q = Ber(b), 0 < a, b < 1."""
    s = a**alpha * b ** (1 - alpha) + (1 - a) ** alpha * (1 - b) ** (1 - alpha)
    return math.log(s) / (alpha - 1)


def _decimal_renyi(p: list[float], q: list[float], alpha: float) -> float:
    """D_α by [vEH14, eq. (1)] in 700-digit decimals (1 − 1e-300 stays exact), unbounded exponent.

    The float inputs are converted exactly and renormalised exactly (as the library does).
    """
    ctx = Context(prec=700, Emax=999_999_999, Emin=-999_999_999)
    with localcontext(ctx):
        P = [Decimal(x) for x in p]
        Q = [Decimal(x) for x in q]
        sp, sq = sum(P), sum(Q)
        P = [x / sp for x in P]
        Q = [x / sq for x in Q]
        a = Decimal(alpha)
        terms = [
            (a * pi.ln() + (1 - a) * qi.ln()).exp() for pi, qi in zip(P, Q, strict=True) if pi > 0
        ]
        return float(sum(terms).ln() / (a - 1))


def _decimal_kl(p: list[float], q: list[float]) -> float:
    ctx = Context(prec=700, Emax=999_999_999, Emin=-999_999_999)
    with localcontext(ctx):
        P = [Decimal(x) for x in p]
        Q = [Decimal(x) for x in q]
        sp, sq = sum(P), sum(Q)
        return float(
            sum((pi / sp) * ((pi / sp) / (qi / sq)).ln() for pi, qi in zip(P, Q, strict=True) if pi)
        )


def _dit_pair(p: np.ndarray, q: np.ndarray) -> tuple[dit.Distribution, dit.Distribution]:
    outcomes = [str(i) for i in range(len(p))]
    return (
        dit.Distribution(outcomes, list(p), validate=False, trim=False),
        dit.Distribution(outcomes, list(q), validate=False, trim=False),
    )


def _brute_force_delta(p: np.ndarray, q: np.ndarray, epsilon: float) -> float:
    """Tight δ = max over events S of P(S) − e^ε Q(S), by enumerating all 2^n events."""
    n = len(p)
    best = 0.0
    for k in range(n + 1):
        for event in itertools.combinations(range(n), k):
            idx = list(event)
            best = max(best, float(p[idx].sum() - math.exp(epsilon) * q[idx].sum()))
    return best


# ------------------------------------------------------------------------------------------
# closed forms


@pytest.mark.parametrize(
    ("a", "b", "alpha"),
    [(0.5, 0.9, 2.0), (0.3, 0.6, 0.5), (0.01, 0.2, 3.7), (0.75, 0.25, 10.0), (0.4, 0.41, 0.1)],
)
def test_bernoulli_pairs_match_hand_formula(a: float, b: float, alpha: float) -> None:
    # [vEH14, eq. (1)]
    expected = _bernoulli_renyi(a, b, alpha)
    assert renyi_divergence([a, 1 - a], [b, 1 - b], alpha) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, math.log(3), 5.0])
@pytest.mark.parametrize("alpha", [0.5, 2.0, 8.0])
def test_randomized_response_matches_mironov_table(epsilon: float, alpha: float) -> None:
    # [Mir17, Table II]: RR with p = e^ε/(1+e^ε):
    # D_α = 1/(α−1) log(p^α (1−p)^{1−α} + (1−p)^α p^{1−α}); D_∞ = ε.
    p = math.exp(epsilon) / (1 + math.exp(epsilon))
    P, Q = [p, 1 - p], [1 - p, p]
    expected = math.log(p**alpha * (1 - p) ** (1 - alpha) + (1 - p) ** alpha * p ** (1 - alpha))
    expected /= alpha - 1
    assert renyi_divergence(P, Q, alpha) == pytest.approx(expected, rel=1e-12)
    assert max_divergence(P, Q) == pytest.approx(epsilon, rel=1e-12)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0, 1.0 + 1e-12, 2.0, 1e6, math.inf])
def test_uniform_on_a_subset_is_log_ratio_at_every_order(alpha: float) -> None:
    # P uniform on k of the n points of Q = uniform(n): p/q = n/k on supp P, so D_α = log(n/k)
    # for every α ([vEH14], eq. (1) and Thms 4–6 all reduce to log(n/k)).
    n, k = 7, 3
    P = [1 / k] * k + [0.0] * (n - k)
    Q = [1 / n] * n
    assert renyi_divergence(P, Q, alpha) == pytest.approx(math.log(n / k), rel=1e-12)


def test_order_zero_is_minus_log_q_of_support_of_p() -> None:
    # [vEH14, Thm 4]: D_0(P‖Q) = −log Q(p > 0).
    P = [0.5, 0.5, 0.0, 0.0]
    Q = [0.1, 0.2, 0.3, 0.4]
    assert renyi_divergence(P, Q, 0) == pytest.approx(-math.log(0.3), rel=1e-14)
    # A support that Q fully covers gives 0; a tiny complement keeps full relative accuracy.
    assert renyi_divergence([1.0, 0.0], [1 - 1e-15, 1e-15], 0) == pytest.approx(1e-15, rel=1e-6)


def test_kl_matches_scipy_rel_entr() -> None:
    rng = np.random.default_rng(20140701)
    for _ in range(20):
        p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
        assert kl_divergence(p, q) == pytest.approx(float(rel_entr(p, q).sum()), rel=1e-12)


@pytest.mark.parametrize("alpha", [0.25, 0.9, 1.0, 1.5, 3.0, 20.0])
def test_renyi_and_kl_match_dit_on_random_distributions(alpha: float) -> None:
    # dit reports bits; D_α = log2(Σ p^α q^{1−α})/(α−1) there ([vEH14, eq. (1)]).
    rng = np.random.default_rng(1234)
    for _ in range(10):
        p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
        d1, d2 = _dit_pair(p, q)
        ref = (dit_kl(d1, d2) if alpha == 1 else dit_renyi(d1, d2, alpha)) * LN2
        assert renyi_divergence(p, q, alpha) == pytest.approx(ref, rel=1e-9, abs=1e-13)


def test_total_variation_matches_dit_and_definition() -> None:
    rng = np.random.default_rng(7)
    for _ in range(10):
        p, q = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
        d1, d2 = _dit_pair(p, q)
        tv = total_variation(p, q)
        # dit's variational distance is ½ Σ |p − q| (sup over events), like ours.
        assert tv == pytest.approx(float(dit_variational(d1, d2)), rel=1e-12)
        assert tv == pytest.approx(_brute_force_delta(p, q, 0.0), rel=1e-12)


# ------------------------------------------------------------------------------------------
# extreme numerics


@pytest.mark.parametrize("alpha", [0.5, 2.0, 1e3, 1e6])
def test_huge_order_and_tiny_probabilities_against_decimal(alpha: float) -> None:
    # 700-digit decimal evaluation of [vEH14, eq. (1)] as reference.
    p = [1e-300, 0.3, 0.7]
    q = [1e-250, 0.6, 0.4]
    ours = renyi_divergence(p, q, alpha)
    assert math.isfinite(ours)
    assert ours == pytest.approx(_decimal_renyi(p, q, alpha), rel=1e-10)


@pytest.mark.parametrize("alpha", [0.5, 2.0, 1e6])
def test_mass_ratio_far_beyond_float_range_against_decimal(alpha: float) -> None:
    # p/q = 1e-300/1e-320 would overflow e^{(α−1) log(p/q)} in any linear-domain evaluation.
    p = [1e-300, 1.0 - 1e-300]
    q = [1e-320, 1.0]
    ours = renyi_divergence(p, q, alpha)
    assert math.isfinite(ours)
    assert ours == pytest.approx(_decimal_renyi(p, q, alpha), rel=1e-9, abs=1e-300)


def test_large_order_close_to_max_divergence_from_below() -> None:
    # [vEH14, Thm 6] D_α ↑ D_∞; the sandwich D_∞ + log(p_i*)/(α−1) ≤ D_α ≤ D_∞ follows from
    # p_i* r^{α−1} ≤ Σ p_i (p_i/q_i)^{α−1} ≤ r^{α−1} with r = max ratio at i*.
    p = [1e-300, 0.3, 0.7]
    q = [1e-250, 0.6, 0.4]
    d_inf = max_divergence(p, q)
    assert d_inf == pytest.approx(math.log(0.7 / 0.4), rel=1e-14)
    for alpha in (1e3, 1e6):
        d = renyi_divergence(p, q, alpha)
        assert d_inf + math.log(0.7) / (alpha - 1) - 1e-15 <= d <= d_inf + 1e-15


@pytest.mark.parametrize("alpha", [1e100, 1e300, 1.7e308])
def test_astronomical_orders_never_overflow(alpha: float) -> None:
    # Same sandwich as above: at α ≥ 1e100 the gap log(p_i*)/(α−1) is below 1e-99, so D_α must
    # equal D_∞ to rounding ([vEH14, Thm 6]); t·log(p/q) itself would overflow float64.
    p = [1e-300, 0.3, 0.7]
    q = [1e-250, 0.6, 0.4]
    assert renyi_divergence(p, q, alpha) == pytest.approx(max_divergence(p, q), rel=1e-14)
    assert renyi_divergence(q, p, alpha) == pytest.approx(max_divergence(q, p), rel=1e-14)


@pytest.mark.parametrize("delta", [1e-12, -1e-12, 1e-9, -1e-9])
def test_orders_within_1e_12_of_one_agree_with_kl(delta: float) -> None:
    # Continuity at α = 1 [vEH14, Thm 5]; the decimal KL is the reference; the gap
    # D_{1+δ} − KL is O(δ) (its derivative at 1 is half the variance of log p/q).
    p = [1e-300, 0.2, 0.3, 0.5]
    q = [1e-200, 0.5, 0.25, 0.25]
    kl = _decimal_kl(p, q)
    assert kl_divergence(p, q) == pytest.approx(kl, rel=1e-13)
    assert renyi_divergence(p, q, 1 + delta) == pytest.approx(kl, rel=10 * abs(delta) + 1e-13)


@given(distribution_pairs(shared_support=True), st.sampled_from([1e-12, -1e-12, 1e-7]))
def test_near_one_agrees_with_kl_property(pq: tuple[np.ndarray, np.ndarray], t: float) -> None:
    p, q = pq
    kl = kl_divergence(p, q)
    # |D_{1+t} − KL| ≤ |t|·(spread of log p/q)² + rounding; log ratios are ≤ ~1500 here.
    L = np.log(p[p > 0]) - np.log(q[p > 0])
    bound = abs(t) * float(np.max(L**2)) + 1e-12 * max(1.0, kl)
    assert abs(renyi_divergence(p, q, 1 + t) - kl) <= bound


def test_infinite_when_p_is_not_absolutely_continuous() -> None:
    # [vEH14, Sec. II-A]: D_α = ∞ for α ≥ 1 if P ≪̸ Q; finite for α < 1 unless P ⊥ Q.
    p, q = [0.5, 0.5], [1.0, 0.0]
    assert renyi_divergence(p, q, [1.0, 2.0, math.inf]).tolist() == [math.inf] * 3
    assert renyi_divergence(p, q, 0.5) == pytest.approx(-2 * math.log(math.sqrt(0.5)), rel=1e-14)
    assert renyi_divergence([1.0, 0.0], [0.0, 1.0], 0.5) == math.inf
    assert renyi_divergence([1.0, 0.0], [0.0, 1.0], 0.0) == math.inf


def test_vectorised_over_alpha_keeps_shape_and_matches_scalars() -> None:
    p, q = [0.2, 0.5, 0.3], [0.4, 0.4, 0.2]
    grid = np.array([[0.0, 0.5, 1.0], [2.0, 1e6, math.inf]])
    out = renyi_divergence(p, q, grid)
    assert isinstance(out, np.ndarray)
    assert out.shape == grid.shape
    for index, a in np.ndenumerate(grid):
        assert out[index] == renyi_divergence(p, q, float(a))
    assert isinstance(renyi_divergence(p, q, 2), float)


# ------------------------------------------------------------------------------------------
# laws (hypothesis)


@given(distribution_pairs(), renyi_orders())
def test_non_negative_and_never_nan(pq: tuple[np.ndarray, np.ndarray], alpha: float) -> None:
    # [vEH14, Thm 8] (Gibbs' inequality for every order).
    d = renyi_divergence(*pq, alpha)
    assert not math.isnan(d)
    assert d >= 0.0


@given(distribution_pairs(), st.lists(renyi_orders(), min_size=2, max_size=5))
def test_non_decreasing_in_alpha(pq: tuple[np.ndarray, np.ndarray], orders: list[float]) -> None:
    # [vEH14, Thm 3]: α ↦ D_α(P‖Q) is non-decreasing on [0, ∞].
    alphas = sorted(orders)
    values = renyi_divergence(*pq, alphas)
    for lo, hi in itertools.pairwise(values):
        assert hi == lo or hi >= lo - 1e-9 * max(1.0, abs(lo))


@given(distribution_pairs(n=3), channels(n_inputs=3), renyi_orders())
def test_data_processing_inequality(
    pq: tuple[np.ndarray, np.ndarray], W: np.ndarray, alpha: float
) -> None:
    # [vEH14, Thm 9]: D_α(PW‖QW) ≤ D_α(P‖Q) for every α ∈ [0, ∞] and channel W.
    p, q = pq
    pw, qw = p @ W, q @ W
    # Skip draws where a float product underflowed to 0 (e.g. 0.5 · 5e-324): that changes the
    # support of the pushed-forward distribution, an artefact of the test's arithmetic.
    for orig, pushed in ((p, pw), (q, qw)):
        assume(np.array_equal(pushed > 0, ((orig > 0) @ (W > 0)) > 0))
    before = renyi_divergence(p, q, alpha)
    after = renyi_divergence(pw / pw.sum(), qw / qw.sum(), alpha)
    assert after <= before + 1e-9 * max(1.0, before)


@given(distribution_pairs())
def test_identical_distributions_have_zero_divergence(pq: tuple[np.ndarray, np.ndarray]) -> None:
    p, _ = pq
    values = renyi_divergence(p, p, [0.0, 0.5, 1.0, 1 + 1e-12, 2.0, 1e6, math.inf])
    assert np.all(np.abs(values) <= 1e-12)


@given(distribution_pairs(), st.floats(min_value=0.01, max_value=0.99))
def test_skew_symmetry(pq: tuple[np.ndarray, np.ndarray], alpha: float) -> None:
    # [vEH14, Prop. 2]: (1−α) D_α(P‖Q) = α D_{1−α}(Q‖P) for 0 < α < 1.
    p, q = pq
    lhs = (1 - alpha) * renyi_divergence(p, q, alpha)
    rhs = alpha * renyi_divergence(q, p, 1 - alpha)
    if math.isinf(lhs) or math.isinf(rhs):
        assert lhs == rhs
    else:
        assert lhs == pytest.approx(rhs, rel=1e-9, abs=1e-12)


@given(distribution_pairs())
def test_pinsker(pq: tuple[np.ndarray, np.ndarray]) -> None:
    # Pinsker: TV ≤ √(KL/2) (Cover & Thomas 2006, Lemma 11.6.1).
    tv, kl = total_variation(*pq), kl_divergence(*pq)
    assert tv <= math.sqrt(kl / 2) + 1e-12


@given(distribution_pairs(), st.floats(min_value=0.01, max_value=1.0))
def test_generalised_pinsker_for_orders_below_one(
    pq: tuple[np.ndarray, np.ndarray], alpha: float
) -> None:
    # [Gil10] and [vEH14, Thm 31]: (α/2) V² ≤ D_α for 0 < α ≤ 1, with V = Σ|p−q| = 2 TV.
    v = 2 * total_variation(*pq)
    assert alpha / 2 * v**2 <= renyi_divergence(*pq, alpha) + 1e-12


# ------------------------------------------------------------------------------------------
# hockey-stick divergence


@pytest.mark.parametrize("epsilon", [0.0, 0.2, 0.5, 1.0, 2.0])
def test_hockey_stick_matches_brute_force_over_events(epsilon: float) -> None:
    # Tight δ(ε) = sup_S P(S) − e^ε Q(S) (Barthe & Olmedo 2013); enumerate all events.
    rng = np.random.default_rng(int(epsilon * 100))
    for _ in range(10):
        p, q = rng.dirichlet(np.ones(6) * 0.5), rng.dirichlet(np.ones(6) * 0.5)
        expected = _brute_force_delta(p, q, epsilon)
        assert hockey_stick_divergence(p, q, epsilon) == pytest.approx(expected, abs=1e-14)


def test_hockey_stick_of_randomized_response() -> None:
    # ln3-RR (blog post 002 in the seeds): δ(ε) = 3/4 − e^ε/4 for ε < ln 3 and 0 beyond.
    p, q = [0.75, 0.25], [0.25, 0.75]
    eps = np.array([0.0, 0.5, 1.0, math.log(3), 2.0])
    expected = np.maximum(0.75 - np.exp(eps) / 4, 0.0)
    assert hockey_stick_divergence(p, q, eps) == pytest.approx(expected, abs=1e-15)


def test_hockey_stick_bracketed_by_dp_accounting_pld() -> None:
    # dp_accounting's PLD gives an optimistic and a pessimistic δ(ε) for the same pair
    # (from_two_probability_mass_functions: upper = P, lower = Q); the exact value lies between.
    p = np.array([0.5, 0.3, 0.15, 0.05, 0.0])
    q = np.array([0.1, 0.3, 0.3, 0.1, 0.2])
    log_p = {i: math.log(v) for i, v in enumerate(p) if v > 0}
    log_q = {i: math.log(v) for i, v in enumerate(q) if v > 0}
    bounds = {
        pessimistic: dp_pld.from_two_probability_mass_functions(
            log_q, log_p, pessimistic_estimate=pessimistic, value_discretization_interval=1e-4
        )
        for pessimistic in (True, False)
    }
    for epsilon in (0.0, 0.3, 1.0, 1.5):
        ours = hockey_stick_divergence(p, q, epsilon)
        lo = bounds[False].get_delta_for_epsilon(epsilon)
        hi = bounds[True].get_delta_for_epsilon(epsilon)
        assert lo - 1e-12 <= ours <= hi + 1e-12
        assert hi - lo < 1e-3


def test_hockey_stick_limits_and_extremes() -> None:
    p, q = [0.5, 0.3, 0.2], [0.6, 0.4, 0.0]
    # ε = +∞ keeps only the mass of P outside supp Q; ε = −∞ gives 1; huge ε never overflows.
    assert hockey_stick_divergence(p, q, math.inf) == pytest.approx(0.2)
    assert hockey_stick_divergence(p, q, -math.inf) == 1.0
    assert hockey_stick_divergence(p, q, 1e6) == pytest.approx(0.2)
    # Tiny masses: P = (1e-300·e^10, …), Q = (1e-300, …), ε = 5 → δ = 1e-300·(e^10 − e^5).
    tiny = 1e-300
    d = hockey_stick_divergence([tiny * math.exp(10), 1.0], [tiny, 1.0], 5.0)
    assert d == pytest.approx(tiny * (math.exp(10) - math.exp(5)), rel=1e-12)


@given(distribution_pairs(), st.lists(st.floats(min_value=-5, max_value=50), min_size=2))
def test_hockey_stick_laws(pq: tuple[np.ndarray, np.ndarray], eps: list[float]) -> None:
    p, q = pq
    values = hockey_stick_divergence(p, q, sorted(eps))
    # δ(ε) is non-increasing in ε and lies in [max(0, 1 − e^ε), 1]; δ(0) = TV; δ = 0 for
    # ε ≥ D_∞ (ε-DP) [Mir17, Sec. 3; Barthe & Olmedo 2013].
    assert np.all(np.diff(values) <= 1e-12)
    assert np.all((values >= 0) & (values <= 1))
    assert hockey_stick_divergence(p, q, 0.0) == pytest.approx(total_variation(p, q), abs=1e-12)
    d_inf = max_divergence(p, q)
    assume(math.isfinite(d_inf))
    assert hockey_stick_divergence(p, q, d_inf + 1e-9) <= 1e-12


# ------------------------------------------------------------------------------------------
# validation


@pytest.mark.parametrize(
    ("p", "q", "alpha", "needle"),
    [
        ([0.5, 0.5], [0.2, 0.3, 0.5], 2.0, "q"),
        ([0.5, -0.5, 1.0], [0.2, 0.3, 0.5], 2.0, "p must be non-negative"),
        ([0.5, 0.6], [0.5, 0.5], 2.0, "p must sum to 1"),
        ([0.5, float("nan")], [0.5, 0.5], 2.0, "p must contain only finite"),
        ([0.5, 0.5], [0.5, 0.5], -1.0, "alpha"),
        ([0.5, 0.5], [0.5, 0.5], float("nan"), "alpha"),
        ([0.5, 0.5], [0.5, 0.5], "two", "alpha"),
        ([0.5, 0.5], [0.5, 0.5], True, "alpha"),
        ([], [], 2.0, "p"),
    ],
)
def test_bad_input_raises_parameter_error_naming_the_argument(
    p: object, q: object, alpha: object, needle: str
) -> None:
    with pytest.raises(ParameterError, match=needle):
        renyi_divergence(p, q, alpha)


def test_hockey_stick_rejects_nan_epsilon() -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        hockey_stick_divergence([0.5, 0.5], [0.5, 0.5], float("nan"))
    with pytest.raises(ParameterError, match="epsilon"):
        hockey_stick_divergence([0.5, 0.5], [0.5, 0.5], "x")


def test_inputs_summing_to_one_within_tolerance_are_renormalised() -> None:
    # An input off by 1e-10 must not be amplified by 1/(α−1) near α = 1.
    p = [0.5 + 1e-10, 0.5]
    assert renyi_divergence(p, p, 1 + 1e-12) == pytest.approx(0.0, abs=1e-12)


def test_all_matches_public_names() -> None:
    public = {
        n for n in vars(divergence) if not n.startswith("_") and callable(vars(divergence)[n])
    }
    defined_here = {
        n for n in public if getattr(vars(divergence)[n], "__module__", "") == divergence.__name__
    }
    assert set(divergence.__all__) == defined_here


def test_information_package_reexports_every_public_name() -> None:
    # information/__init__.py is a plain re-export list of the three discrete modules.
    import infodp.information as pkg
    from infodp.information import entropy, mutual

    for module in (divergence, entropy, mutual):
        for name in module.__all__:
            assert name in pkg.__all__
            assert getattr(pkg, name) is getattr(module, name)
    for name in pkg.__all__:
        assert hasattr(pkg, name)
