"""Tests of infodp.explain: every number against a closed form or a second algorithm.

Sources of the expected values (computed here, never copied from our output):
- pure ε-DP: the randomized-response pair p = e^ε/(1+e^ε) is the worst ε-DP pair
  (Kairouz, Oh & Viswanath 2015, Thm 2.1); its divergences are computed from the two
  probabilities directly; KL = ε·tanh(ε/2) (Cuff & Yu 2016, Property 1).
- (ε, δ): the canonical four-output channel of KOV 2015 (Thm 2.1); attacker success, min-entropy
  leakage and the trade-off curve are computed from it by brute force / linear programming.
- Gaussian: δ(ε) of Balle & Wang 2018 (Thm 8), the GDP trade-off Φ(Φ⁻¹(1−α) − μ) of Dong,
  Roth & Su 2022, success Φ(μ/2), KL = μ²/2, and the binary-input mutual information by
  quadrature (a lower bound on capacity, so any valid upper bound must exceed it).
- "DP and Information Theory" (2022): "approx. 1.44 bits per query" for ε = 1; Markov tail
  (footnote 2).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, optimize, stats

import infodp.explain as ex
from infodp.errors import ParameterError
from infodp.explain import bounds, explain, explain_epsilon_delta

LN2 = math.log(2.0)


# ---- independent reference profiles (closed forms only) --------------------------------------


def _rr(eps: float) -> tuple[float, float]:
    p = math.exp(eps) / (1.0 + math.exp(eps))
    return p, 1.0 - p


def _rr_renyi(eps: float, alpha: float) -> float:
    """D_α of randomized response from the two probabilities (no log-domain tricks)."""
    p, q = _rr(eps)
    if alpha == 1.0:
        return p * math.log(p / q) + q * math.log(q / p)
    if math.isinf(alpha):
        return eps
    return math.log(p**alpha * q ** (1 - alpha) + q**alpha * p ** (1 - alpha)) / (alpha - 1)


def _canonical(eps: float, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """KOV 2015's dominating pair for (ε, δ)-DP: reveal w.p. δ, else ε-randomized response."""
    p, q = _rr(eps)
    P = np.array([delta, (1 - delta) * p, (1 - delta) * q, 0.0])
    return P, P[::-1].copy()


@dataclass(frozen=True)
class PureRef:
    eps: float

    def pure_epsilon(self) -> float:
        return self.eps

    def rdp(self, alpha: Any) -> float:
        return _rr_renyi(self.eps, float(alpha))

    def information(self, alpha: Any) -> float:
        return self.rdp(alpha)

    def delta(self, epsilon: Any) -> float:
        P, Q = _canonical(self.eps, 0.0)
        return float(np.maximum(P - math.exp(epsilon) * Q, 0).sum())

    def epsilon(self, delta: Any) -> float:
        return self.eps

    def group(self, k: Any) -> PureRef:
        return PureRef(k * self.eps)


@dataclass(frozen=True)
class EpsDeltaRef:
    eps: float
    d: float

    def pure_epsilon(self) -> float:
        return math.inf

    def rdp(self, alpha: Any) -> float:
        return math.inf

    def information(self, alpha: Any) -> float:
        return math.inf

    def delta(self, epsilon: Any) -> float:
        P, Q = _canonical(self.eps, self.d)  # hockey-stick divergence, by definition
        return float(np.maximum(P - math.exp(epsilon) * Q, 0).sum())

    def epsilon(self, delta: Any) -> float:
        return self.eps if delta >= self.d else math.inf

    def group(self, k: Any) -> EpsDeltaRef:
        # Dwork & Roth 2014, Theorem 2.2.
        return EpsDeltaRef(k * self.eps, min(1.0, k * math.exp((k - 1) * self.eps) * self.d))


@dataclass(frozen=True)
class GaussRef:
    mu: float  # sensitivity / sigma

    def pure_epsilon(self) -> float:
        return math.inf

    def rdp(self, alpha: Any) -> float:
        return float(alpha) * self.mu**2 / 2.0  # Mironov 2017, Prop. 7

    def information(self, alpha: Any) -> float:
        return self.rdp(alpha)

    def delta(self, epsilon: Any) -> float:
        m, e = self.mu, float(epsilon)  # Balle & Wang 2018, Theorem 8
        return float(stats.norm.cdf(m / 2 - e / m) - math.exp(e) * stats.norm.cdf(-m / 2 - e / m))

    def epsilon(self, delta: Any) -> float:
        if self.delta(0.0) <= delta:
            return 0.0
        return float(optimize.brentq(lambda e: self.delta(e) - delta, 0.0, 200.0, xtol=1e-13))

    def group(self, k: Any) -> GaussRef:
        return GaussRef(k * self.mu)


def _np_tradeoff(P: np.ndarray, Q: np.ndarray, fpr: float) -> float:
    """Neyman–Pearson by linear programming: least FNR = 1 − max P·φ s.t. Q·φ ≤ fpr."""
    res = optimize.linprog(-P, A_ub=[Q], b_ub=[fpr], bounds=[(0, 1)] * len(P), method="highs")
    assert res.success
    return float(1.0 + res.fun)


EPSILONS = [0.1, 0.5, 1.0, 2.0, 5.0]


# ---- pure ε -------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", EPSILONS)
def test_pure_epsilon_leakage_matches_randomized_response(eps: float) -> None:
    e = explain(PureRef(eps))
    assert e.pure and e.delta == 0.0 and e.epsilon == eps
    # Cuff & Yu 2016 Property 1: KL of the worst ε-DP pair is ε·tanh(ε/2).
    assert e.nats["1"] == pytest.approx(eps * math.tanh(eps / 2), rel=1e-12)
    assert e.nats["1"] == pytest.approx(_rr_renyi(eps, 1.0), rel=1e-9)
    assert e.nats["2"] == pytest.approx(_rr_renyi(eps, 2.0), rel=1e-9)
    assert e.nats["inf"] == eps
    for key in ("1", "2", "inf"):
        assert e.bits[key] == pytest.approx(e.nats[key] / LN2)
    assert e.unbounded_probability == 0.0 and e.conditional_nats is None


def test_article_one_point_four_four_bits() -> None:
    # "DP and Information Theory" (2022), Epilogue: ε = 1 leaks "at a rate of approx. 1.44 bits per
    # query".
    e = explain_epsilon_delta(1.0)
    assert round(e.bits["inf"], 2) == 1.44


@pytest.mark.parametrize("eps", EPSILONS)
def test_pure_attacker_views_closed_forms(eps: float) -> None:
    e = explain(PureRef(eps))
    p, q = _rr(eps)
    # Distinguishing game with a fair coin: best test on the worst pair wins ½(max + max).
    brute = 0.5 * (max(p, q) + max(q, p))
    assert e.attacker_success_max == pytest.approx(math.exp(eps) / (1 + math.exp(eps)))
    assert e.attacker_success_max == pytest.approx(brute)
    assert e.attacker_success_linear == pytest.approx(
        min(1.0, 0.5 + eps / 2)
    )  # linear bound ½ + ε/2
    assert e.attacker_success_linear >= e.attacker_success_max
    # Ünsal & Önen eq. (50) (Barthe & Köpf): log(2e^ε/(1+e^ε)); eq. (51): log Σ_y max_x P(y|x).
    assert e.min_entropy_leakage_bound == pytest.approx(
        math.log(2 * math.exp(eps) / (1 + math.exp(eps)))
    )
    assert e.min_entropy_leakage_bound == pytest.approx(math.log(max(p, q) + max(q, p)))
    assert e.posterior_odds_bound == pytest.approx(math.exp(eps))


@pytest.mark.parametrize("eps", EPSILONS)
def test_pure_rates_and_tail(eps: float) -> None:
    e = explain(PureRef(eps), tail_alpha=2)
    c1 = eps * math.tanh(eps / 2)
    for b in (1, 8, 64):
        assert e.releases_for_bits[b] == math.ceil(b * LN2 / c1)
    c2 = _rr_renyi(eps, 2.0)
    for r, prob in e.tail:
        # "DP and Information Theory" (2022), footnote 2 (Markov): (e^{(α−1)C} − 1)/(e^{(α−1)R} −
        # 1) at α = 2.
        assert prob == pytest.approx(min(1.0, math.expm1(c2) / math.expm1(r)), rel=1e-9)


def test_markov_tail_special_levels() -> None:
    # α = 1: C/R ("DP and Information Theory" (2022)); α = ∞: a leak never exceeds the capacity.
    assert bounds.markov_tail_bound(0.3, 1.2, 1) == pytest.approx(0.25)
    assert bounds.markov_tail_bound(0.3, 0.31, math.inf) == 0.0
    assert bounds.markov_tail_bound(0.3, 0.29, math.inf) == 1.0
    # Large orders stay finite (log domain): ratio → e^{(α−1)(C−R)}.
    assert bounds.markov_tail_bound(1.0, 2.0, 1001.0) == pytest.approx(math.exp(-1000.0), rel=1e-9)


@pytest.mark.parametrize("alpha", [1.0, 1.5, 2.0, 3.0, 10.0, 64.0])
@pytest.mark.parametrize("eps", EPSILONS)
def test_pure_dp_divergence_matches_direct_probabilities(eps: float, alpha: float) -> None:
    assert bounds.pure_dp_divergence(eps, alpha) == pytest.approx(_rr_renyi(eps, alpha), rel=1e-9)


def test_huge_epsilon_does_not_overflow() -> None:
    e = explain(PureRef(30.0))
    assert e.attacker_success_max == pytest.approx(1.0)
    assert bounds.attacker_success_bound(800.0, 0.0) == 1.0
    assert bounds.posterior_odds_bound(800.0) == math.inf
    assert bounds.min_entropy_leakage_bound(800.0) == pytest.approx(LN2)
    np.testing.assert_allclose(bounds.tradeoff_fnr([0.0, 0.5], 800.0), [1.0, 0.0])


@pytest.mark.parametrize("alpha", [1.5, 2.0, 10.0])
def test_pure_dp_divergence_tiny_epsilon_keeps_precision(alpha: float) -> None:
    # For small ε, D_α = (α/2)·Var_P[L] + O(ε³) (second-order expansion of the Rényi
    # divergence, van Erven & Harremoës 2014), and the RR privacy loss L = ±ε has variance ≈ ε².
    eps = 1e-6
    assert bounds.pure_dp_divergence(eps, alpha) == pytest.approx(alpha * eps**2 / 2, rel=1e-5)


def test_markov_tail_huge_capacity_is_one() -> None:
    assert bounds.markov_tail_bound(800.0, 0.5, 2.0) == 1.0
    assert bounds.markov_tail_bound(0.5, 800.0, 2.0) < 1e-300


def test_pure_dp_divergence_huge_epsilon_is_finite() -> None:
    assert bounds.pure_dp_divergence(800.0, 2.0) == pytest.approx(800.0, rel=1e-3)
    assert bounds.pure_dp_divergence(800.0, 1.0) == pytest.approx(800.0)


# ---- (ε, δ) -------------------------------------------------------------------------------


@pytest.mark.parametrize(("eps", "delta"), [(1.0, 0.01), (0.5, 1e-5), (2.0, 0.1), (0.1, 0.3)])
def test_epsilon_delta_is_unbounded_with_probability_delta(eps: float, delta: float) -> None:
    e = explain(EpsDeltaRef(eps, delta), epsilon=eps)
    assert (e.epsilon, e.delta) == (eps, pytest.approx(delta))
    # "DP and Information Theory" (2022), "Hacking (ε, δ)-privacy": no level is bounded; failure
    # has probability δ.
    assert e.nats == {"1": None, "2": None, "inf": None}
    assert e.bits == {"1": None, "2": None, "inf": None}
    assert e.unbounded_probability == pytest.approx(delta)
    assert all(n is None for n in e.releases_for_bits.values())
    assert all(p == 1.0 for _, p in e.tail)
    # The conditional figures are those of ε-randomized response, and labelled separately.
    assert e.conditional_nats is not None
    assert e.conditional_nats["1"] == pytest.approx(eps * math.tanh(eps / 2))
    assert e.conditional_nats["2"] == pytest.approx(_rr_renyi(eps, 2.0))
    assert e.conditional_nats["inf"] == eps
    assert any("probability" in w for w in e.warnings)


@pytest.mark.parametrize(("eps", "delta"), [(1.0, 0.01), (0.5, 1e-5), (2.0, 0.1), (0.0, 0.2)])
def test_epsilon_delta_attacker_views_by_brute_force(eps: float, delta: float) -> None:
    e = explain(EpsDeltaRef(eps, delta), epsilon=eps)
    P, Q = _canonical(eps, delta)
    best = 0.5 * np.maximum(P, Q).sum()  # MAP test with a fair coin
    assert e.attacker_success_max == pytest.approx(best)
    assert e.attacker_success_epsilon_delta == pytest.approx(
        (math.exp(eps) + delta) / (1 + math.exp(eps))
    )
    assert e.attacker_success_linear >= e.attacker_success_max
    # Min-entropy leakage of a binary secret: log Σ_y max_x P(y|x) (Ünsal & Önen eq. 51).
    assert e.min_entropy_leakage_bound == pytest.approx(math.log(np.maximum(P, Q).sum()))


@pytest.mark.parametrize(("eps", "delta"), [(0.0, 0.0), (1.0, 0.0), (1.0, 0.01), (3.0, 0.2)])
def test_tradeoff_matches_kov_region_by_linear_programming(eps: float, delta: float) -> None:
    profile: Any = PureRef(eps) if delta == 0 else EpsDeltaRef(eps, delta)
    e = explain(profile, epsilon=eps)
    P, Q = _canonical(eps, delta)
    fprs = np.array([0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0])
    got = e.tradeoff(fprs)
    want = [_np_tradeoff(P, Q, a) for a in fprs]
    np.testing.assert_allclose(got, want, atol=1e-9)
    # And the stand-alone KOV formula.
    np.testing.assert_allclose(bounds.tradeoff_fnr(fprs, eps, delta), want, atol=1e-9)


def test_rows_census_example_from_article() -> None:
    # "DP and Information Theory" (2022): ε = 1, δ = 0.01 on census-like data: unbounded leakage
    # with probability 1%.
    e = explain(EpsDeltaRef(1.0, 0.01), epsilon=1.0, rows=10_000)
    assert e.expected_exposed_individuals == pytest.approx(100.0)
    assert any("1/N" in w for w in e.warnings)
    quiet = explain(EpsDeltaRef(1.0, 1e-9), epsilon=1.0, rows=10_000)
    assert quiet.expected_exposed_individuals == pytest.approx(1e-5)
    assert not any("1/N" in w for w in quiet.warnings)
    assert explain(PureRef(1.0), rows=10).expected_exposed_individuals == 0.0


def test_group_view() -> None:
    # "DP and Information Theory" (2022) "Group privacy" / Dwork & Roth Thm 2.2: kε for pure, (kε,
    # k e^{(k−1)ε} δ) else.
    g = explain(PureRef(0.5), group=3).group
    assert g is not None and g.epsilon == pytest.approx(1.5)
    assert g.nats["1"] == pytest.approx(1.5 * math.tanh(0.75))
    g2 = explain(EpsDeltaRef(1.0, 1e-3), epsilon=1.0, group=2).group
    assert g2 is not None
    assert (g2.epsilon, g2.delta) == (pytest.approx(2.0), pytest.approx(2 * math.e * 1e-3))


# ---- Gaussian -------------------------------------------------------------------------------


def _bpsk_mutual_information(mu: float) -> float:
    """I(X;Y) for X = ±μ/2 equiprobable, Y = X + N(0,1): a lower bound on the capacity."""

    def integrand(y: float) -> float:
        f0 = stats.norm.pdf(y, -mu / 2)
        f1 = stats.norm.pdf(y, mu / 2)
        m = 0.5 * (f0 + f1)
        return 0.5 * (f0 * math.log(f0 / m) + f1 * math.log(f1 / m)) if m > 0 else 0.0

    value, _ = integrate.quad(integrand, -mu / 2 - 12, mu / 2 + 12, limit=200)
    return float(value)


@pytest.mark.parametrize("mu", [0.25, 1.0, 2.0])
def test_gaussian_profile_numbers(mu: float) -> None:
    e = explain(GaussRef(mu), delta=1e-6)
    assert e.nats["1"] is not None and e.nats["2"] is not None
    assert _bpsk_mutual_information(mu) <= e.nats["1"] <= mu**2 / 2 + 1e-12  # KL = μ²/2
    assert e.nats["2"] <= mu**2 + 1e-12
    assert e.nats["inf"] is None and e.unbounded_probability == 1e-6
    # ε(δ) at least the exact one (Balle & Wang 2018).
    exact = GaussRef(mu).epsilon(1e-6)
    assert e.epsilon >= exact - 1e-9
    # Distinguishing game: Φ(μ/2) exactly (TV of two unit Gaussians μ apart).
    assert e.attacker_success_max >= stats.norm.cdf(mu / 2) - 1e-9
    assert e.attacker_success_max == pytest.approx(stats.norm.cdf(mu / 2), abs=1e-6)
    assert e.min_entropy_leakage_bound == pytest.approx(math.log(2 * stats.norm.cdf(mu / 2)))
    # Releases at the Shannon rate from the finite α = 1 bound.
    assert e.releases_for_bits[8] == math.ceil(8 * LN2 / e.nats["1"])
    # Conditional figures never exceed the guarantees where those exist.
    assert e.conditional_nats is not None and e.conditional_nats["1"] <= e.nats["1"]


@pytest.mark.parametrize("mu", [0.5, 1.0, 3.0])
def test_gaussian_tradeoff_is_conservative_and_close_to_gdp(mu: float) -> None:
    e = explain(GaussRef(mu), delta=1e-6)
    fprs = np.linspace(0.0, 1.0, 41)
    got = e.tradeoff(fprs)
    gdp = stats.norm.cdf(stats.norm.ppf(1 - fprs) - mu)  # Dong, Roth & Su 2022, μ-GDP
    assert (got <= gdp + 1e-9).all()  # attackers can never do better than we say
    assert np.max(gdp - got) < 0.03


# ---- laws (hypothesis) ----------------------------------------------------------------------


@given(
    eps=st.floats(0.0, 20.0, allow_nan=False),
    delta=st.floats(0.0, 0.5, allow_nan=False),
    alpha=st.floats(1.0, 100.0, allow_nan=False),
)
def test_laws_of_the_bounds(eps: float, delta: float, alpha: float) -> None:
    succ = bounds.attacker_success_bound(eps, delta)
    assert 0.5 - 1e-12 <= succ <= bounds.linear_success_bound(eps, delta) + 1e-12
    me = bounds.min_entropy_leakage_bound(eps, delta)
    assert -1e-12 <= me <= min(LN2, eps + delta) + 1e-9
    d1 = bounds.pure_dp_divergence(eps, 1.0)
    da = bounds.pure_dp_divergence(eps, alpha)
    # Monotone in α ("DP and Information Theory" (2022): D_α increases with α), capped by ε = D_∞.
    assert d1 <= da + 1e-9 and da <= eps + 1e-12
    assert d1 <= min(eps, eps * eps / 2) + 1e-12  # ε·tanh(ε/2) ≤ min(ε, ε²/2)


@given(
    capacity=st.floats(0.0, 10.0, allow_nan=False),
    r1=st.floats(1e-3, 50.0, allow_nan=False),
    r2=st.floats(1e-3, 50.0, allow_nan=False),
    alpha=st.one_of(st.floats(1.0, 50.0, allow_nan=False), st.just(math.inf)),
)
def test_markov_tail_is_a_probability_and_decreasing(
    capacity: float, r1: float, r2: float, alpha: float
) -> None:
    lo, hi = sorted((r1, r2))
    p_lo = bounds.markov_tail_bound(capacity, lo, alpha)
    p_hi = bounds.markov_tail_bound(capacity, hi, alpha)
    assert 0.0 <= p_hi <= p_lo + 1e-12 <= 1.0 + 1e-12


@given(eps=st.floats(0.01, 8.0), delta=st.floats(1e-9, 0.2))
def test_epsilon_delta_never_reports_a_conditional_number_as_guarantee(
    eps: float, delta: float
) -> None:
    d = explain(EpsDeltaRef(eps, delta), epsilon=eps).to_dict()
    assert d["nats"] == {"1": None, "2": None, "inf": None}
    assert d["conditional"]["probability"] == pytest.approx(1 - delta)
    assert "not a guarantee" in d["conditional"]["note"]


@given(eps=st.floats(0.0, 5.0), k=st.integers(1, 6))
def test_group_of_pure_scales_worst_case(eps: float, k: int) -> None:
    e = explain(PureRef(eps), group=k)
    g = e if k == 1 else e.group
    assert g is not None
    assert g.nats["inf"] == pytest.approx(k * eps)
    assert g.attacker_success_max >= e.attacker_success_max - 1e-12


# ---- contract -------------------------------------------------------------------------------


def test_json_payload_keys_and_strictness() -> None:
    d = explain(EpsDeltaRef(1.0, 0.01), epsilon=1.0, rows=1000, group=2).to_dict()
    for key in (
        "epsilon",
        "delta",
        "nats",
        "bits",
        "attacker_success_max",
        "min_entropy_leakage_bound",
        "expected_exposed_individuals",
    ):
        assert key in d
    assert set(d["nats"]) == {"1", "2", "inf"} and d["nats"]["inf"] is None
    json.dumps(d, allow_nan=False)
    assert d["group"]["size"] == 2
    assert "expected_exposed_individuals" not in explain(PureRef(1.0)).to_dict()


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"delta": 1.5}, "delta"),
        ({"rows": 0}, "rows"),
        ({"group": 0}, "group"),
        ({"tail_alpha": 0.5}, "tail_alpha"),
    ],
)
def test_bad_arguments_raise_parameter_error(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(ParameterError, match=name):
        explain(GaussRef(1.0), **kwargs)


def test_not_a_profile_is_refused() -> None:
    with pytest.raises(ParameterError, match="profile"):
        explain(42)  # type: ignore[arg-type]


def test_bad_fpr_is_refused() -> None:
    with pytest.raises(ParameterError, match="fpr"):
        bounds.tradeoff_fnr([0.1, 1.5], 1.0)


def test_explanation_is_immutable() -> None:
    e = explain(PureRef(1.0))
    with pytest.raises(AttributeError):
        e.epsilon = 2.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        e.nats["1"] = 0.0  # type: ignore[index]


def test_spent_budget_of_an_accountant() -> None:
    from infodp.accounting import laplace_profile
    from infodp.accounting.accountant import Accountant, Budget

    acc = Accountant(Budget.pure(2.0))
    for _ in range(2):
        acc.spend(laplace_profile(scale=2.0))  # ε = 1/2 each
    e = explain(acc.spent())
    # Basic composition (Dwork & Roth 2014, Thm 3.16): ε = 1; KL adds, and the KL of Laplace
    # at ε is ε + e^{−ε} − 1 (Mironov 2017, Table II at α = 1).
    assert e.pure and e.epsilon == pytest.approx(1.0)
    assert e.nats["1"] == pytest.approx(2 * (0.5 + math.exp(-0.5) - 1), rel=1e-6)
    empty = explain([])
    assert empty.nats == {"1": 0.0, "2": 0.0, "inf": 0.0}


def test_all_lists_the_public_names() -> None:
    import infodp.explain.bounds as b
    import infodp.explain.html as h
    import infodp.explain.report as r

    for module in (ex, b, h, r):
        public = {
            n
            for n, v in vars(module).items()
            if not n.startswith("_")
            and callable(v)
            and getattr(v, "__module__", None) == module.__name__
        }
        assert public <= set(module.__all__), (module.__name__, public - set(module.__all__))
        for name in module.__all__:
            assert hasattr(module, name)


def test_results_of_the_literature_bear_only_where_they_apply() -> None:
    """Pure ε: information privacy (Calmon & Fawaz 2012) and identifiability (Wang, Ying &
    Zhang 2016) lines, and with N rows the 2εN-nat information cost (McGregor et al. 2010);
    a group adds the MI-DP caution (Cuff & Yu 2016, Ex. 5.1); (ε, δ) claims none of them."""
    from infodp.explain import explain_epsilon_delta as ed

    pure = ed(0.5, rows=1000, group=2)
    text = " ".join(pure.results)
    assert "Calmon & Fawaz" in text and "Wang, Ying & Zhang" in text
    assert "at most 1,000 nats" in text  # 2 · 0.5 · 1000, computed here independently
    assert "Cuff & Yu" in text
    assert pure.to_dict()["results"] == list(pure.results)
    approx = ed(0.5, 1e-6)
    assert not any("Calmon" in r or "McGregor" in r for r in approx.results)


def test_results_figures_agree_with_the_relations_module() -> None:
    # explain()'s "Also:" lines write out 2ε (Calmon & Fawaz 2012) and 2εN (McGregor et al.
    # 2010) so that a query's price imports no numpy; they must equal the relations' own.
    from infodp.channel.relations import dp_from_information_privacy, information_cost_bound
    from infodp.explain.report import _results

    eps, rows = 0.37, 1234
    lines = " ".join(_results(eps, None, rows, 1))
    assert f"{dp_from_information_privacy(eps):.4g}" in lines
    assert f"{information_cost_bound(eps, rows):.4g}" in lines
