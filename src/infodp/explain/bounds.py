"""Closed-form bounds that turn ε and δ into attacker-facing meaning.

Every function here is a formula from a source document, cited next to it; they are the
building blocks of :func:`infodp.explain.explain`. All information quantities are in nats.

The unifying fact (Kairouz, Oh & Viswanath 2015, Theorem 2.1; also Murtagh & Vadhan 2016): for
one pair of neighbouring datasets, every (ε, δ)-DP mechanism is a post-processing of the
four-output channel that reveals the row with probability δ and otherwise runs binary
randomized response with parameter ε. Its hypothesis-testing region, distinguishing game and
min-entropy leakage are therefore the worst cases implied by (ε, δ) alone, and for δ = 0 its
Rényi divergences are the tight Rényi-DP curve of pure ε-DP.
"""

from __future__ import annotations

import math
from typing import Any

from infodp._np import np, npt
from infodp._validate import as_alpha, as_nonnegative, as_positive, as_probability
from infodp.errors import ParameterError
from infodp.units import LN2

__all__ = [
    "LN2",
    "attacker_success_bound",
    "linear_success_bound",
    "markov_tail_bound",
    "min_entropy_leakage_bound",
    "posterior_odds_bound",
    "pure_dp_divergence",
    "releases_needed",
    "tradeoff_fnr",
]


def pure_dp_divergence(epsilon: Any, alpha: Any) -> float:
    """Tight Rényi divergence of order α between the outputs of an ε-DP mechanism, in nats.

    The worst pair of an ε-DP mechanism is binary randomized response with
    p = e^ε/(1 + e^ε) (Kairouz–Oh–Viswanath 2015, Thm 2.1), so
    D_α ≤ 1/(α−1) · log(p^α q^{1−α} + q^α p^{1−α}) (Mironov 2017, Table II), which in the log
    domain is (logaddexp((α−1)ε, −αε) − log1p(e^{−ε})) / (α − 1).
    α = 1 is the exact KL divergence ε·tanh(ε/2) (Cuff & Yu 2016, Property 1) and α = ∞ is ε.

    >>> round(pure_dp_divergence(1.0, 1), 6)  # 1·tanh(1/2)
    0.462117
    >>> round(pure_dp_divergence(1.0, 2), 6)
    0.735326
    >>> pure_dp_divergence(1.0, float("inf"))
    1.0
    """
    eps = as_nonnegative("epsilon", epsilon, allow_inf=True)
    a = as_alpha("alpha", alpha, minimum=1.0)
    if eps == 0.0:
        return 0.0
    if math.isinf(eps) or math.isinf(a):
        return eps
    if a == 1.0:
        # Cuff & Yu 2016, Property 1: KL of the extreme ε-DP pair.
        return eps * math.tanh(eps / 2.0)
    kl = eps * math.tanh(eps / 2.0)
    if a - 1.0 < 1e-5:
        # Series near α = 1 (the closed form cancels): D_α = KL + (α − 1)·Var_P[L]/2 + O((α−1)²)
        # with L = ±ε the privacy loss of RR, Var_P[L] = ε²(1 − tanh²(ε/2)) (van Erven &
        # Harremoës 2014, the derivative of D_α at α = 1 is half the variance).
        variance = eps * eps * (1.0 - math.tanh(eps / 2.0) ** 2)
        return min(eps, kl + (a - 1.0) * variance / 2.0)
    s = (a - 1.0) * eps
    if s <= 1.0:
        # Same quantity without cancellation for small ε: the sum over outputs is
        # 1 + (expm1(s) + e^{−ε}·expm1(−s)) / (1 + e^{−ε}).
        tail = math.exp(-eps)
        lead = math.log1p((math.expm1(s) + tail * math.expm1(-s)) / (1.0 + tail))
    else:
        # logaddexp(s, −αε) on floats: the larger term plus log1p of the other's ratio.
        hi, lo = max(s, -a * eps), min(s, -a * eps)
        lead = hi + math.log1p(math.exp(lo - hi)) - math.log1p(math.exp(-eps))
    return max(kl, min(eps, lead / (a - 1.0)))


def attacker_success_bound(epsilon: Any, delta: Any = 0.0) -> float:
    """Best success probability in the distinguishing game with a fair coin, under (ε, δ)-DP.

    Bob sees the output and guesses whether the target row is in (the distinguishing game). The
    (ε, δ) trade-off region (Kairouz–Oh–Viswanath 2015, Thm 2.1) gives
    FPR + FNR ≥ 2(1 − δ)/(1 + e^ε), so P(win) ≤ (e^ε + δ)/(1 + e^ε); tight. For δ = 0 this is
    e^ε/(1 + e^ε).

    >>> round(attacker_success_bound(1.0), 6)
    0.731059
    >>> round(attacker_success_bound(1.0, 0.01), 6)
    0.733748
    """
    eps = as_nonnegative("epsilon", epsilon, allow_inf=True)
    d = as_probability("delta", delta)
    if math.isinf(eps):
        return 1.0
    # (e^ε + δ)/(1 + e^ε) = 1 − (1 − δ)·σ(−ε), σ the logistic function (no overflow).
    tail = math.exp(-eps)
    return min(1.0, 1.0 - (1.0 - d) * tail / (1.0 + tail))


def linear_success_bound(epsilon: Any, delta: Any = 0.0) -> float:
    """The linear bound ½ + ε/2 on the distinguishing game, capped at 1.

    The first-order form of e^ε/(1 + e^ε) (from e^ε/(1 + e^ε) ≤ ½ + ε/4 ≤ ½ + ε/2), often
    quoted in introductions to DP. For δ > 0 we add δ/2 (the total-variation slack of
    (ε, δ)-DP). It is always ≥ :func:`attacker_success_bound`.

    >>> linear_success_bound(1.0)
    1.0
    >>> linear_success_bound(0.2)
    0.6
    """
    eps = as_nonnegative("epsilon", epsilon, allow_inf=True)
    d = as_probability("delta", delta)
    return min(1.0, 0.5 + eps / 2.0 + d / 2.0)


def posterior_odds_bound(epsilon: Any) -> float:
    """Factor by which one release can multiply an attacker's odds about one row: e^ε.

    From the definition P(M(D) ∈ E) ≤ e^ε P(M(D') ∈ E) and Bayes' rule (“Differential Privacy and
    Information Theory” (2022),
    "ε-privacy"; Dwork & Roth 2014, §2.3). With δ > 0 it holds only on the 1 − δ event.

    >>> round(posterior_odds_bound(1.0), 6)
    2.718282
    """
    eps = as_nonnegative("epsilon", epsilon, allow_inf=True)
    return math.inf if eps > 709.0 else math.exp(eps)


def min_entropy_leakage_bound(epsilon: Any, delta: Any = 0.0) -> float:
    """Min-entropy (maximal) leakage of one individual's binary secret, in nats.

    Barthe & Köpf 2011, Thm 3 and Cor. 1, as restated in Ünsal & Önen 2023 eq. (50):
    ML ≤ log(2e^ε/(1 + e^ε)). In general ML = log Σ_y max_x P(y|x) = log(1 + TV) for a binary
    input (Ünsal & Önen 2023 eqs. 51–52); under (ε, δ)-DP, TV ≤ (e^ε − 1 + 2δ)/(e^ε + 1), which
    gives log(2(e^ε + δ)/(1 + e^ε)) = log(2 · :func:`attacker_success_bound`).

    >>> round(min_entropy_leakage_bound(1.0), 6)
    0.379885
    """
    return math.log(2.0 * attacker_success_bound(epsilon, delta))


def tradeoff_fnr(fpr: Any, epsilon: Any, delta: Any = 0.0) -> npt.NDArray[np.float64]:
    """Smallest false-negative rate of any test at false-positive rate ``fpr`` under (ε, δ)-DP.

    Kairouz, Oh & Viswanath 2015, Theorem 2.1 (and Wasserman & Zhou 2010): the region is
    FNR ≥ max(0, 1 − δ − e^ε·FPR, e^{−ε}(1 − δ − FPR)). Vectorised over ``fpr``.

    >>> [round(float(v), 6) for v in tradeoff_fnr([0.0, 0.5, 1.0], 1.0)]
    [1.0, 0.18394, 0.0]
    """
    eps = as_nonnegative("epsilon", epsilon, allow_inf=True)
    d = as_probability("delta", delta)
    x = np.asarray(fpr, dtype=np.float64)
    bad = np.isnan(x) | (x < 0) | (x > 1)
    if bad.any():
        raise ParameterError("fpr", float(x[bad].flat[0]), "false-positive rates in [0, 1]")
    if math.isinf(eps):
        return np.zeros_like(x)
    line1 = 1.0 - d - math.exp(min(eps, 709.0)) * x
    line2 = math.exp(-eps) * (1.0 - d - x)
    out: npt.NDArray[np.float64] = np.maximum(0.0, np.maximum(line1, line2))
    return out


def _log_expm1(x: float) -> float:
    """log(e^x − 1) for x > 0 without overflow."""
    return x + math.log1p(-math.exp(-x)) if x > 1.0 else math.log(math.expm1(x))


def markov_tail_bound(capacity: Any, leak: Any, alpha: Any) -> float:
    """Bound on P(D_α(P_{X|Y} ‖ P_X) ≥ R): the chance one output teaches more than R nats.

    “Differential Privacy and Information Theory” (2022) ("Connecting differential privacy to
    Shannon", footnote 2, by Markov's
    inequality): P ≤ (e^{(α−1)C} − 1)/(e^{(α−1)R} − 1) with C the capacity at level α;
    C/R at α = 1; at α = ∞ the leak never exceeds C. Capped at 1; ``capacity`` = inf gives 1.

    >>> round(markov_tail_bound(0.5, 2.0, 1), 6)
    0.25
    >>> round(markov_tail_bound(0.5, 2.0, 2), 6)
    0.101536
    >>> markov_tail_bound(0.5, 2.0, float("inf"))
    0.0
    """
    c = as_nonnegative("capacity", capacity, allow_inf=True)
    r = as_positive("leak", leak)
    a = as_alpha("alpha", alpha, minimum=1.0)
    if math.isinf(c):
        return 1.0
    if math.isinf(a):
        return 0.0 if r > c else 1.0
    if c == 0.0:
        return 0.0
    if a == 1.0:
        return min(1.0, c / r)
    s = a - 1.0
    log_ratio = _log_expm1(s * c) - _log_expm1(s * r)
    return 1.0 if log_ratio >= 0.0 else math.exp(log_ratio)


def releases_needed(bits: Any, capacity: Any) -> float:
    """Fewest releases from which an attacker can learn ``bits`` bits about one row.

    Mutual information composes additively (“Differential Privacy and Information Theory” (2022),
    "Composability" at α = 1), so n releases
    carry at most n·C₁ nats; learning b bits needs n ≥ b·ln 2 / C₁ (“Differential Privacy and
    Information Theory” (2022), "To fix a
    broken wifi": C₁ is the Shannon rate). Returns the ceiling; inf when C₁ = 0, and 1 when C₁
    is unbounded (one release may suffice).

    >>> releases_needed(8, 0.462117)
    12.0
    """
    b = as_positive("bits", bits)
    c = as_nonnegative("capacity", capacity, allow_inf=True)
    if c == 0.0:
        return math.inf
    if math.isinf(c):
        return 1.0
    return float(max(1, math.ceil(b * LN2 / c - 1e-12)))
