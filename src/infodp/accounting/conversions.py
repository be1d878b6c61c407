"""Conversions between privacy notions, each with its source beside the formula.

Everything is in nats. The functions take and return plain numbers; profiles use them.

>>> round(pure_to_kl(1.0), 6)                 # ε·tanh(ε/2), Cuff & Yu 2016, Property 1
0.462117
>>> round(mi_to_delta(0.1), 6) <= round(mi_to_delta_pinsker(0.1), 6)
True
>>> level_composition([1.0, 1.0], [3.0, 3.0])  # Σε at level α with 1/(α−1) = Σ 1/(α_i−1)
(2.0, 2.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

from infodp._exact import float_up
from infodp._np import np, npt
from infodp._scipy import optimize
from infodp._validate import (
    as_alpha,
    as_nonnegative,
    as_positive,
    as_positive_int,
    as_probability,
    as_real,
)
from infodp.errors import ParameterError
from infodp.units import LN2

__all__ = [
    "approx_dp_to_approx_dp",
    "leakage_tail_bound",
    "level_composition",
    "mi_to_delta",
    "mi_to_delta_pinsker",
    "pure_group_privacy",
    "pure_to_kl",
    "pure_to_kl_simple",
    "pure_to_rdp",
    "rdp_to_delta",
    "rdp_to_epsilon",
    "zcdp_to_delta",
    "zcdp_to_epsilon",
]


def pure_to_kl(epsilon: float) -> float:
    """Tight KL bound of an ε-DP mechanism: D(P‖Q) ≤ ε·tanh(ε/2) nats.

    Cuff & Yu 2016, Property 1 (tight: attained by binary randomized response). Ünsal & Önen
    (tutorial, eq. 6) state the looser min(ε, ε²), see :func:`pure_to_kl_simple`.

    >>> pure_to_kl(0.0)
    0.0
    """
    eps = as_nonnegative("epsilon", epsilon, allow_inf=True)
    if math.isinf(eps):
        return math.inf
    return eps * math.tanh(eps / 2)


def pure_to_kl_simple(epsilon: float) -> float:
    """The looser KL bound min(ε, ε²) of Ünsal & Önen (tutorial, Property 1, eq. 6).

    >>> pure_to_kl_simple(0.5)
    0.25
    """
    eps = as_nonnegative("epsilon", epsilon, allow_inf=True)
    return min(eps, eps * eps)


def pure_to_rdp(epsilon: float, alpha: float) -> float:
    """Tight Rényi-DP of order α implied by ε-DP: the binary randomized-response pair.

    ε(α) = 1/(α−1)·log(p^α(1−p)^{1−α} + (1−p)^α p^{1−α}), p = e^ε/(1+e^ε) (Mironov 2017,
    Table II; the pair dominates every ε-DP pair, Kairouz, Oh & Viswanath 2015, Thm 2.1).
    It never exceeds min(ε, αε²/2) (Bun & Steinke 2016, Proposition 3.3).

    >>> round(pure_to_rdp(1.0, float("inf")), 6)
    1.0
    """
    from infodp.accounting.rdp import randomized_response_rdp

    eps = as_nonnegative("epsilon", epsilon)
    a = as_alpha("alpha", alpha, minimum=1.0)
    return float(randomized_response_rdp(eps, 2, a))


def mi_to_delta_pinsker(epsilon: float) -> float:
    """(0, δ)-DP from ε-MI-DP by Pinsker's inequality: δ = √(2ε) (capped at 1).

    With a uniform binary input, I = ½D(P₀‖M) + ½D(P₁‖M) ≥ 2·TV(P₀, M)² = TV(P₀, P₁)²/2
    (Pinsker), so TV ≤ √(2ε) (Cuff & Yu 2016, Section 3).

    >>> round(mi_to_delta_pinsker(0.02), 6)
    0.2
    """
    eps = as_nonnegative("epsilon", epsilon, allow_inf=True)
    return min(1.0, math.sqrt(2 * eps)) if math.isfinite(eps) else 1.0


def mi_to_delta(epsilon: float) -> float:
    """Tight (0, δ)-DP from ε-MI-DP: δ = 1 − 2·h⁻¹(ln 2 − ε), h the binary entropy (nats).

    Cuff & Yu 2016, Theorem 2 (restated by Ünsal & Önen); 1 when ε ≥ ln 2. Never larger than the
    Pinsker value :func:`mi_to_delta_pinsker`.

    >>> round(mi_to_delta(math.log(2)), 6)
    1.0
    """
    eps = as_nonnegative("epsilon", epsilon, allow_inf=True)
    if eps >= LN2:
        return 1.0
    # 1 − 2h⁻¹(ln 2 − ε) = 2x with ln 2 − h(½ − x) = ε. Solving for x directly keeps small ε
    # exact: ln 2 − ε would round to ln 2 for ε < 1e-16 and give an optimistic δ = 0.
    # Imported here: the profiles import this module, and a query's pricing never asks for it.
    from infodp.information.entropy import inverse_binary_entropy_deficit

    x = float(inverse_binary_entropy_deficit(eps))
    return min(1.0, 2.0 * x)


def approx_dp_to_approx_dp(epsilon: float, delta: float, epsilon_prime: float) -> float:
    """δ′ such that (ε, δ)-DP implies (ε′, δ′)-DP, ε′ ≥ 0 (Ünsal & Önen, Property 3, eq. 8).

    δ′ = 1 − (e^{ε′} + 1)(1 − δ)/(e^ε + 1) for ε′ < ε, and δ′ = δ for ε′ ≥ ε. This is the
    δ-curve of the (ε, δ) randomized response, which dominates every (ε, δ)-DP pair.

    >>> round(approx_dp_to_approx_dp(1.0, 0.0, 0.0), 6)    # TV of ε-DP ≤ tanh(ε/2)
    0.462117
    """
    eps = as_nonnegative("epsilon", epsilon)
    d = as_probability("delta", delta)
    eps2 = as_nonnegative("epsilon_prime", epsilon_prime)
    if eps2 >= eps:
        return d
    # 1 − (e^{ε′}+1)(1−δ)/(e^ε+1) = [e^ε − e^{ε′} + δ(1 + e^{ε′})]/(e^ε + 1), no cancellation.
    value = (math.exp(eps) - math.exp(eps2) + d * (1 + math.exp(eps2))) / (math.exp(eps) + 1)
    return min(1.0, max(d, value))


def zcdp_to_epsilon(rho: float, delta: float) -> float:
    """ε such that ρ-zCDP implies (ε, δ)-DP: the better of two certified conversions.

    - Bun & Steinke 2016, Proposition 1.3: ε = ρ + 2√(ρ·log(1/δ));
    - the RDP curve αρ through the conversion of Canonne, Kamath & Steinke 2020,
      Proposition 12, minimised over α > 1 (any α gives a valid bound).

    >>> round(zcdp_to_epsilon(0.5, 1e-5), 4) <= round(0.5 + 2 * math.sqrt(0.5 * math.log(1e5)), 4)
    True
    """
    r = as_nonnegative("rho", rho)
    d = as_probability("delta", delta)
    if r == 0:
        return 0.0
    if d == 0:
        return math.inf
    if d == 1:
        return 0.0
    bs = r + 2 * math.sqrt(r * math.log(1 / d))
    best = _min_over_orders(
        lambda a: rdp_to_epsilon([a * r], [a], d), grid=lambda a: _zcdp_rdp_to_epsilon_each(r, a, d)
    )
    return float(min(bs, best))


def _zcdp_rdp_to_epsilon_each(
    rho: float, orders: npt.NDArray[np.float64], d: float
) -> npt.NDArray[np.float64]:
    """``rdp_to_epsilon([a * rho], [a], d)`` for every order a > 1 at once (0 < d < 1): the
    same operations, element by element (an order whose α·ρ overflows gives ∞ either way)."""
    with np.errstate(over="ignore"):
        r = np.maximum(orders * rho, 0.0)
    log_d = math.log(d)
    improved = r + np.log1p(-1.0 / orders) - (log_d + np.log(orders)) / (orders - 1)
    mironov = r - log_d / (orders - 1)
    eps = np.where(d * d + np.expm1(-r) >= 0, 0.0, np.minimum(improved, mironov))
    out: npt.NDArray[np.float64] = np.maximum(eps, 0.0)
    return out


def zcdp_to_delta(rho: float, epsilon: float) -> float:
    """δ such that ρ-zCDP implies (ε, δ)-DP (Canonne, Kamath & Steinke 2020, Prop. 12,
    applied to the RDP curve αρ and minimised over α > 1).

    >>> round(zcdp_to_delta(0.5, zcdp_to_epsilon(0.5, 1e-5)), 8) <= 1e-5
    True
    """
    r = as_nonnegative("rho", rho)
    eps = as_nonnegative("epsilon", epsilon)
    if r == 0:
        return 0.0

    best = _min_over_orders(lambda a: math.log(max(rdp_to_delta([a * r], [a], eps), 1e-300)))
    return float(min(1.0, math.exp(best)))


def _min_over_orders(
    f: Callable[[float], float],
    grid: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]] | None = None,
) -> float:
    """min over α > 1 of f(α): a log-spaced grid of α − 1, then a bounded local refinement.

    Every α gives a valid bound, so any α the search returns is safe; the search only
    affects tightness. ``grid``, when given, is ``f`` on an array of orders at once (the same
    values; the grid's 361 calls of ``f`` are most of the search's time).
    """
    log_am1 = np.linspace(-9.0, 9.0, 361)
    orders = [1.0 + math.exp(x) for x in log_am1]
    values = np.array([f(a) for a in orders]) if grid is None else grid(np.array(orders))
    i = int(np.argmin(values))
    lo, hi = log_am1[max(i - 1, 0)], log_am1[min(i + 1, log_am1.size - 1)]
    res = optimize.minimize_scalar(
        lambda x: f(1.0 + math.exp(x)), bounds=(float(lo), float(hi)), method="bounded"
    )
    return float(min(float(values[i]), f(1.0 + math.exp(float(res.x)))))


def level_composition(epsilons: Sequence[float], alphas: Sequence[float]) -> tuple[float, float]:
    """The article's composition: Σε_i at level α with 1/(α−1) = Σ_i 1/(α_i − 1).

    "Differential Privacy and Information Theory" (2022), "Group Privacy and Composability"
    (proved with Hölder's inequality on the chain rule). It holds for the privacy "at level α"
    (Rényi capacity) of queries conditionally independent given the data. The article also
    applies it to the rows of one query (group privacy); with each row's privacy taken with the
    other rows fixed, that use is false below α = ∞, see :func:`pure_group_privacy`. Orders
    α_i = 1 force α = 1; orders α_i = ∞ contribute 0 to the sum (α = ∞ if all are ∞).

    >>> level_composition([0.5, 0.5, 0.5], [float("inf")] * 3)
    (1.5, inf)
    """
    eps = [as_nonnegative("epsilons", e, allow_inf=True) for e in epsilons]
    als = [as_alpha("alphas", a, minimum=1.0) for a in alphas]
    if len(eps) != len(als) or not eps:
        raise ParameterError("epsilons", epsilons, "a non-empty list as long as alphas")
    if any(a == 1.0 for a in als):
        level = 1.0
    else:
        inv = sum(1.0 / (a - 1.0) for a in als if math.isfinite(a))
        level = math.inf if inv == 0 else 1.0 + 1.0 / inv
    return float(sum(eps)), level


def pure_group_privacy(epsilon: float, n: int) -> float:
    """Pure ε of a group of n rows: nε (Dwork & Roth 2014, Theorem 2.2), i.e. at level α = ∞.

    Which group rule holds depends on what "private at level α" means for one row:

    - α = ∞ (pure ε): nε under every reading below — along any path of n one-row changes
      the log-likelihood ratios add up (the triangle inequality). This function's rule.
    - Capacity with the *other rows fixed* (the one-row channel: that row varies, the rest
      held at given values): the article's finite-α rule — "Differential Privacy and
      Information Theory" (2022), "Group privacy", nε at level 1 + (α − 1)/n — is false
      there. For a noisy sum of two rows the group's capacity exceeds 2ε at levels 1, 1.5
      and 2 (tests/accounting/test_conversions_channels.py has the counterexamples).
    - Rényi divergence between datasets n changes apart (RDP, any n-step path): the article's
      rule is false there too (Gaussian of sensitivity 1, ε(α) = α/(2σ²): a group of 2 has
      3/σ² at order 1.5, the rule claims 2·ε(2) = 2/σ²); what holds is Mironov 2017,
      "Rényi Differential Privacy", Proposition 2: (α, ε)-RDP gives groups of 2^c at order
      α/2^c with 3^c·ε (α ≥ 2^{c+1}).
    - Capacity with the other rows *random and possibly correlated* with the row (the
      reading the article's proof uses: the chain rule over the rows with Hölder's
      inequality, as in :func:`level_composition`): the article's rule is stated for this
      stronger per-row premise; infodp neither checks that proof nor exports the rule, and
      per-row figures computed with the other rows fixed do not meet the premise.

    >>> pure_group_privacy(0.5, 3)
    1.5
    """
    eps = as_nonnegative("epsilon", epsilon, allow_inf=True)
    k = as_positive_int("n", n)
    return _up_mul(k, eps)


def _up_mul(k: int, eps: float) -> float:
    """k·ε rounded up to the next float when the product is inexact (:func:`float_up`)."""
    return eps if not math.isfinite(eps) else float_up(k * Fraction(eps))


def leakage_tail_bound(epsilon: float, alpha: float, r: float) -> float:
    """Markov bound on the leakage: P(D_α(P_{X|Y}‖P_X) ≥ R) ≤ (e^{(α−1)ε} − 1)/(e^{(α−1)R} − 1).

    "Differential Privacy and Information Theory" (2022), footnote 2 (Markov's inequality
    applied to e^{(α−1)D_α} − 1, whose mean is e^{(α−1)I_α} − 1 ≤ e^{(α−1)ε} − 1 when the
    query is ε-private at level α). The exact limits are used at
    α = 1 (ε/R) and α = ∞ (0 if R > ε, else 1). Capped at 1.

    >>> round(leakage_tail_bound(0.1, 2.0, 1.0), 6)
    0.061207
    """
    eps = as_nonnegative("epsilon", epsilon, allow_inf=True)
    a = as_alpha("alpha", alpha, minimum=1.0)
    rr = as_positive("r", r, allow_inf=True)
    if math.isinf(eps):
        return 1.0
    if math.isinf(rr):
        return 0.0
    if a == 1.0:
        return min(1.0, eps / rr)
    if math.isinf(a):
        return 0.0 if rr > eps else 1.0
    # log of the ratio, computed with expm1 in the log domain to avoid overflow.
    x, y = (a - 1.0) * eps, (a - 1.0) * rr
    log_num = x + math.log(-math.expm1(-x)) if x > 0 else -math.inf
    log_den = y + math.log(-math.expm1(-y))
    return float(min(1.0, math.exp(log_num - log_den))) if x > 0 else 0.0


def rdp_to_epsilon(rdp: npt.ArrayLike, orders: npt.ArrayLike, delta: float) -> float:
    """Smallest ε, over the given orders, such that RDP implies (ε, δ)-DP.

    Per order α > 1, the minimum of
    - the improved conversion ε = ε(α) + log(1 − 1/α) − (log δ + log α)/(α − 1)
      (Canonne, Kamath & Steinke 2020, Proposition 12; Balle et al. 2020, Theorem 21), and
    - Mironov's ε = ε(α) + log(1/δ)/(α − 1) (Mironov 2017, Proposition 3);
    and ε = 0 when δ ≥ √(1 − e^{−ε(α)}) (Bretagnolle–Huber: TV ≤ √(1 − e^{−KL}) ≤ √(1 − e^{−D_α})).

    >>> round(rdp_to_epsilon([0.5], [2.0], 0.9), 6)
    0.0
    """
    r = np.asarray(rdp, dtype=np.float64).reshape(-1)
    a = np.asarray(orders, dtype=np.float64).reshape(-1)
    if r.shape != a.shape:
        raise ParameterError("rdp", f"shape {r.shape}", f"the shape of orders {a.shape}")
    d = as_probability("delta", delta)
    if d == 0:
        return 0.0 if bool(np.all(r == 0)) else math.inf
    ok = np.isfinite(r) & np.isfinite(a) & (a > 1)
    if not ok.any():
        return math.inf
    r, a = np.maximum(r[ok], 0.0), a[ok]
    log_d = math.log(d)
    improved = r + np.log1p(-1.0 / a) - (log_d + np.log(a)) / (a - 1)
    mironov = r - log_d / (a - 1)
    eps = np.minimum(improved, mironov)
    eps = np.where(d * d + np.expm1(-r) >= 0, 0.0, eps)
    return float(max(float(np.min(eps)), 0.0))


def rdp_to_delta(rdp: npt.ArrayLike, orders: npt.ArrayLike, epsilon: float) -> float:
    """Smallest δ, over the given orders, such that RDP implies (ε, δ)-DP.

    Per order α > 1 the minimum of log δ = (α − 1)(ε(α) − ε + log(1 − 1/α)) − log α
    (Canonne, Kamath & Steinke 2020, Proposition 12), Mironov's δ = e^{(α−1)(ε(α)−ε)}
    (Mironov 2017, Proposition 3), and the Bretagnolle–Huber bound √(1 − e^{−ε(α)}).

    >>> round(rdp_to_delta([1.0], [2.0], 11.126631), 6)
    1e-05
    """
    r = np.asarray(rdp, dtype=np.float64).reshape(-1)
    a = np.asarray(orders, dtype=np.float64).reshape(-1)
    if r.shape != a.shape:
        raise ParameterError("rdp", f"shape {r.shape}", f"the shape of orders {a.shape}")
    eps = as_real("epsilon", epsilon)
    if eps < 0:
        raise ParameterError("epsilon", epsilon, "a non-negative number (>= 0)")
    ok = np.isfinite(r) & np.isfinite(a) & (a > 1)
    if not ok.any():
        return 1.0
    r, a = np.maximum(r[ok], 0.0), a[ok]
    log_improved = (a - 1) * (r - eps + np.log1p(-1.0 / a)) - np.log(a)
    log_mironov = (a - 1) * (r - eps)
    with np.errstate(divide="ignore"):
        log_bh = np.where(r > 0, 0.5 * np.log(-np.expm1(-np.maximum(r, 1e-300))), -np.inf)
    best = float(np.min(np.minimum(np.minimum(log_improved, log_mironov), log_bh)))
    return float(min(math.exp(best), 1.0))
