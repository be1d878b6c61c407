"""Rényi divergences between continuous distributions.

Closed forms for the two noise families of differential privacy, Laplace and Gaussian, at
every order α in [0, ∞] (α = 1 and α = ∞ exact), plus numerical quadrature with an error
estimate for any two continuous ``scipy.stats`` distributions. Everything is in nats.

The closed forms are those of Gil, Alajaji & Linder (2013), "Rényi divergence measures for
commonly used univariate continuous distributions", Information Sciences 249, Table 2; for
equal scales they reduce to Mironov (2017), "Rényi Differential Privacy", Table II.

>>> round(renyi_divergence_gaussian(0.0, 1.0, 1.0, 1.0, alpha=2.0), 12)  # α Δ² / (2 σ²)
1.0
>>> round(renyi_divergence_laplace(0.0, 1.0, 1.0, 1.0, alpha=float("inf")), 12)  # Δ / b
1.0
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from infodp._scipy import integrate, special
from infodp._validate import as_alpha, as_positive, as_real
from infodp.errors import ParameterError

__all__ = [
    "QuadratureResult",
    "renyi_divergence_gaussian",
    "renyi_divergence_laplace",
    "renyi_divergence_quadrature",
]


# Below this distance from α = 1, the Laplace formula switches to its first-order expansion.
_NEAR_ONE = 1e-6


def _log_exprel(t: float) -> float:
    """log((e^t − 1) / t), stable for every real t (the value at t = 0 is 0)."""
    if t == 0.0:
        return 0.0
    if abs(t) < 1e-5:
        # Series: (e^t − 1)/t = 1 + t/2 + t²/6 + …
        return math.log1p(t / 2.0 + t * t / 6.0)
    if t > 0:
        # (e^t − 1)/t = e^t (1 − e^{−t}) / t
        return t + math.log1p(-math.exp(-t)) - math.log(t)
    # t < 0: (e^t − 1)/t = (1 − e^t)/|t|
    return math.log(-math.expm1(t)) - math.log(-t)


def renyi_divergence_laplace(
    loc_p: float, scale_p: float, loc_q: float, scale_q: float, *, alpha: float
) -> float:
    """D_α(Lap(loc_p, scale_p) ‖ Lap(loc_q, scale_q)) in nats.

    Exact at every α in [0, ∞]: α = 1 is the Kullback–Leibler divergence
    log(b_q/b_p) + (b_p e^{−d/b_p} + d)/b_q − 1, α = ∞ the max-divergence
    log(b_q/b_p) + d/b_q (∞ when b_p > b_q), with d = |loc_p − loc_q|. For other α the
    integral ∫ p^α q^{1−α} splits into three exponential pieces at the two locations
    (Gil, Alajaji & Linder 2013, Table 2); it diverges (D_α = ∞) when α/b_p + (1−α)/b_q ≤ 0.
    With equal scales this is Mironov (2017), Table II:
    (1/(α−1)) log(α/(2α−1) e^{(α−1)d/b} + (α−1)/(2α−1) e^{−αd/b}).

    >>> round(renyi_divergence_laplace(0, 1, 1, 1, alpha=1.0), 10)  # d/b + e^{−d/b} − 1
    0.3678794412
    >>> renyi_divergence_laplace(0, 2, 0, 1, alpha=float("inf"))
    inf
    """
    mu_p = as_real("loc_p", loc_p)
    b_p = as_positive("scale_p", scale_p)
    mu_q = as_real("loc_q", loc_q)
    b_q = as_positive("scale_q", scale_q)
    a = as_alpha("alpha", alpha)
    d = abs(mu_p - mu_q)
    if a == 0.0:
        return 0.0  # −log Q(supp P), and both supports are the real line
    if a == 1.0:
        return math.log(b_q / b_p) + (b_p * math.exp(-d / b_p) + d) / b_q - 1.0
    if math.isinf(a):
        return math.inf if b_p > b_q else math.log(b_q / b_p) + d / b_q
    if abs(a - 1.0) < _NEAR_ONE:
        # Near α = 1 the three-term formula divides a rounding error by α − 1. Use instead
        # D_α = KL + (α − 1) Var_P[L] / 2 + O((α − 1)²), with L = log p/q the privacy loss
        # (the derivative of D_α at α = 1; van Erven & Harremoës 2014, Section III-F).
        u = d / b_p
        e = math.exp(-u)
        var_abs_shifted = 2 * b_p**2 + d**2 - (d + b_p * e) ** 2  # Var|X − d|, X ~ Lap(0, b_p)
        cov = b_p**2 * e * (1 + u)  # Cov(|X|, |X − d|)
        var_loss = 1.0 + var_abs_shifted / b_q**2 - 2 * cov / (b_p * b_q)
        kl = math.log(b_q / b_p) + (b_p * e + d) / b_q - 1.0
        return max(0.0, kl + (a - 1.0) * var_loss / 2)
    # ∫ C exp(−A|x| − c|x − d|) dx with A = α/b_p, c = (1−α)/b_q, C = (2b_p)^{−α}(2b_q)^{α−1}.
    big_a = a / b_p
    c = (1.0 - a) / b_q
    s = big_a + c
    if s <= 0:
        return math.inf
    log_c = -a * math.log(2 * b_p) + (a - 1.0) * math.log(2 * b_q)
    terms = [-c * d - math.log(s), -big_a * d - math.log(s)]
    if d > 0:
        # ∫_0^d e^{−cd} e^{(c−A)x} dx = e^{−cd} · d · exprel((c − A) d)
        terms.append(-c * d + math.log(d) + _log_exprel((c - big_a) * d))
    log_integral = float(special.logsumexp(terms))
    return max(0.0, (log_c + log_integral) / (a - 1.0))


def renyi_divergence_gaussian(
    mean_p: float, std_p: float, mean_q: float, std_q: float, *, alpha: float
) -> float:
    """D_α(N(mean_p, std_p²) ‖ N(mean_q, std_q²)) in nats.

    Gil, Alajaji & Linder (2013), Table 2: with σ²_α = α σ_q² + (1 − α) σ_p²,
    D_α = log(σ_q/σ_p) + log(σ_q²/σ²_α) / (2(α − 1)) + α (μ_p − μ_q)² / (2 σ²_α),
    and D_α = ∞ when σ²_α ≤ 0. α = 1 is the KL divergence
    log(σ_q/σ_p) + (σ_p² + Δ²)/(2σ_q²) − ½; α = ∞ is log(σ_q/σ_p) + Δ²/(2(σ_q² − σ_p²)) when
    σ_p < σ_q, 0 for identical distributions and ∞ otherwise. Equal variances give Mironov's
    α Δ²/(2σ²) (Rényi DP, Proposition 3).

    >>> round(renyi_divergence_gaussian(0, 1, 0, 2, alpha=1.0), 10)
    0.3181471806
    >>> renyi_divergence_gaussian(0, 1, 1, 1, alpha=float("inf"))
    inf
    """
    mu_p = as_real("mean_p", mean_p)
    s_p = as_positive("std_p", std_p)
    mu_q = as_real("mean_q", mean_q)
    s_q = as_positive("std_q", std_q)
    a = as_alpha("alpha", alpha)
    d2 = (mu_p - mu_q) ** 2
    if a == 0.0:
        return 0.0
    log_ratio = math.log(s_q / s_p)
    if a == 1.0:
        return max(0.0, log_ratio + (s_p**2 + d2) / (2 * s_q**2) - 0.5)
    if math.isinf(a):
        if s_p < s_q:
            return log_ratio + d2 / (2 * (s_q**2 - s_p**2))
        return 0.0 if (s_p == s_q and d2 == 0.0) else math.inf
    var_a = a * s_q**2 + (1.0 - a) * s_p**2
    if var_a <= 0:
        return math.inf
    # log(σ_q²/σ²_α) computed as log1p of a small relative difference when α is near 1.
    log_var_ratio = -math.log1p((1.0 - a) * (s_p**2 - s_q**2) / s_q**2)
    return max(0.0, log_ratio + log_var_ratio / (2 * (a - 1.0)) + a * d2 / (2 * var_a))


@dataclass(frozen=True, slots=True)
class QuadratureResult:
    """A numerically integrated divergence (nats) with an absolute error estimate (nats)."""

    value: float
    error: float


def _is_continuous_frozen(dist: Any) -> bool:
    return hasattr(dist, "logpdf") and hasattr(dist, "ppf") and hasattr(dist, "support")


def renyi_divergence_quadrature(p: Any, q: Any, *, alpha: float) -> QuadratureResult:
    """D_α(P ‖ Q) for two continuous frozen ``scipy.stats`` distributions, by quadrature.

    For α in (0, 1) ∪ (1, ∞): D_α = log ∫ exp(α log p + (1 − α) log q) / (α − 1)
    (van Erven & Harremoës 2014, Eq. (1)); α = 1 integrates p (log p − log q). The integrand is
    rescaled by its largest value to avoid underflow, the real line is split at the quantiles
    of both distributions, and the absolute error of the integral is propagated to the
    divergence (first order). The orders 0 and ∞ need no integral: use the closed forms.

    >>> from scipy import stats
    >>> r = renyi_divergence_quadrature(stats.norm(0, 1), stats.norm(1, 1), alpha=2.0)
    >>> round(r.value, 8), r.error < 1e-8
    (1.0, True)
    """
    for name, dist in (("p", p), ("q", q)):
        if not _is_continuous_frozen(dist):
            raise ParameterError(
                name, type(dist).__name__, "a frozen continuous scipy.stats distribution"
            )
    a = as_alpha("alpha", alpha)
    if a == 0.0 or math.isinf(a):
        raise ParameterError(
            "alpha", alpha, "in (0, inf) for quadrature (use the closed forms at 0 and inf)"
        )

    lo_p, hi_p = (float(x) for x in p.support())
    lo_q, hi_q = (float(x) for x in q.support())
    if a >= 1.0 and (lo_p < lo_q or hi_p > hi_q):
        return QuadratureResult(math.inf, 0.0)  # supp P ⊄ supp Q
    lo, hi = (max(lo_p, lo_q), min(hi_p, hi_q)) if a < 1.0 else (lo_p, hi_p)
    if not lo < hi:
        return QuadratureResult(math.inf, 0.0)  # disjoint supports

    def log_integrand(x: float) -> float:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            lp = float(p.logpdf(x))
            lq = float(q.logpdf(x))
        if a == 1.0:
            return lp  # the weight; the log ratio is applied in ``integrand``
        if lp == -math.inf or (lq == -math.inf and a < 1.0):
            return -math.inf
        return a * lp + (1.0 - a) * lq

    # Break points: quantiles of both distributions, clipped to the integration range.
    probs = np.array([1e-12, 1e-6, 1e-3, 0.1, 0.5, 0.9, 0.999, 1 - 1e-6, 1 - 1e-12])
    with np.errstate(all="ignore"):
        cuts = np.concatenate([p.ppf(probs), q.ppf(probs)])
    cuts = np.unique(cuts[np.isfinite(cuts) & (cuts > lo) & (cuts < hi)])
    edges = [lo, *cuts.tolist(), hi]
    scale = max(log_integrand(float(x)) for x in (cuts if cuts.size else [0.5 * (lo + hi)]))
    if not math.isfinite(scale):
        scale = 0.0

    def integrand(x: float) -> float:
        li = log_integrand(x)
        if li == -math.inf:
            return 0.0
        if a == 1.0:
            with np.errstate(divide="ignore"):
                lq = float(q.logpdf(x))
            if lq == -math.inf:
                return math.inf
            return math.exp(li) * (li - lq)
        return math.exp(li - scale)

    total = 0.0
    abserr = 0.0
    for left, right in itertools.pairwise(edges):
        value, err = integrate.quad(integrand, left, right, limit=200, epsabs=0.0, epsrel=1e-12)
        total += value
        abserr += err
    if not math.isfinite(total):
        return QuadratureResult(math.inf, 0.0)
    if a == 1.0:
        return QuadratureResult(max(0.0, total), abserr)
    if total <= 0.0:
        return QuadratureResult(math.inf, 0.0)
    value = (math.log(total) + scale) / (a - 1.0)
    return QuadratureResult(max(0.0, value), abserr / (total * abs(a - 1.0)))
