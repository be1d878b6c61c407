"""Divergences between discrete distributions, in nats.

Rényi divergence of every order α ∈ [0, ∞] (KL at α = 1 and max-divergence at α = ∞ are exact
special cases), total variation and the hockey-stick divergence E_{e^ε} (the tight δ of a pair
of output distributions at a given ε).

Conventions (van Erven & Harremoës 2014, "Rényi divergence and Kullback–Leibler divergence",
IEEE Trans. Inf. Theory 60(7), Sec. II; cited below as [vEH14]):

* 0 < α < 1 and 1 < α < ∞: D_α(P‖Q) = 1/(α−1) · log Σ_i p_i^α q_i^{1−α}  [vEH14, eq. (1)],
  with 0^{1−α} = ∞ for α > 1 (so D_α = ∞ when P is not absolutely continuous w.r.t. Q).
* α = 0: D_0(P‖Q) = −log Q(p > 0)  [vEH14, Thm 4].
* α = 1: D_1(P‖Q) = Σ_i p_i log(p_i/q_i)  (KL) [vEH14, Thm 5].
* α = ∞: D_∞(P‖Q) = log max_{i: p_i > 0} p_i/q_i  [vEH14, Thm 6].

Inputs must sum to 1 within 1e-9; they are renormalised exactly before use so that a 1e-9
rounding in the input cannot be amplified by 1/(α−1) near α = 1.

>>> round(renyi_divergence([0.5, 0.5], [0.9, 0.1], 2), 6)  # log(0.25/0.9 + 0.25/0.1)
1.021651
"""

from __future__ import annotations

import math
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from infodp._validate import as_alpha, as_alphas, as_probability_vector
from infodp.errors import ParameterError

__all__ = [
    "hockey_stick_divergence",
    "kl_divergence",
    "max_divergence",
    "renyi_divergence",
    "total_variation",
]

FloatArray = npt.NDArray[np.float64]

# Below this |α − 1| the series-friendly form log1p(Σ w expm1(t L)) / t is used (see
# _tilted_log_mean); above it the plain log-sum-exp form is accurate to ~1e-13 absolute.
_NEAR_ONE = 1e-2


def _normalised_pair(p: Any, q: Any) -> tuple[FloatArray, FloatArray]:
    """Validate two probability vectors of equal length and renormalise them exactly."""
    pv = as_probability_vector("p", p)
    qv = as_probability_vector("q", q)
    if pv.shape != qv.shape:
        raise ParameterError(
            "q", f"a vector of length {qv.size}", f"the same length as p ({pv.size})"
        )
    return pv / pv.sum(), qv / qv.sum()


def _as_orders(value: Any) -> FloatArray:
    """Rényi orders in [0, ∞] as a float64 array (0-d for a scalar; bools and NaN refused)."""
    if np.ndim(value) == 0:
        return np.asarray(as_alpha("alpha", value), dtype=np.float64)
    return as_alphas("alpha", value)


def _logsumexp(a: FloatArray) -> float:
    """log Σ exp(a_i) over a 1-d array that may hold −inf (never +inf); −inf if empty.

    Written as m + log1p(Σ_{i ≠ argmax} e^{a_i − m}) so that a sum 1 + 1e-150 keeps its
    1e-150 (plain ``log`` of the sum would round it away).
    """
    finite = a[np.isfinite(a)]
    if finite.size == 0:
        return -math.inf
    k = int(np.argmax(finite))
    m = float(finite[k])
    rest = np.delete(finite, k)
    return m + math.log1p(float(np.exp(rest - m).sum()))


def _tilted_log_mean(logw: FloatArray, L: FloatArray, t: float) -> float:
    """(1/t) · log Σ_i w_i e^{t L_i} for t ≠ 0, where w = exp(logw) sums to 1.

    ``logw`` must be finite (zero weights removed by the caller); ``L`` may hold +inf only when
    t < 0 (those terms vanish). This is the cumulant-generating-function form shared by the
    Rényi divergence (L = log p/q, t = α − 1) and the Rényi entropy (L = log p).

    Numerics follow the branch-by-regime habit of dp_accounting's RDP code: for |t| small the
    identity Σ w e^{tL} = 1 + Σ w expm1(tL) and ``log1p`` keep full relative accuracy, so the
    result tends to the mean Σ w L (the KL / Shannon value) as t → 0 instead of 0/0; otherwise
    log-sum-exp in the log domain handles any order (up to 1e300) and weights down to 1e-300.
    When t·L could overflow (|t·L| > 600 at the extreme finite L: max for t > 0, min for
    t < 0), the log-sum-exp is shifted by that L so that t·(L − shift) ≤ 0 with equality at
    the dominant term; the shift is not applied otherwise because subtracting it back would
    cancel digits of a tiny result.
    """
    if abs(t) <= _NEAR_ONE:
        w = np.exp(logw)
        with np.errstate(invalid="ignore", over="ignore"):
            s = float(np.sum(w * np.expm1(t * L)))
        if math.isfinite(s) and s >= -0.5:
            return math.log1p(s) / t
    finite_L = L[np.isfinite(L)]
    if finite_L.size == 0:
        return -math.inf / t  # every term vanishes (t < 0 and L = +inf): log 0 / t
    extreme = float(finite_L.max()) if t > 0 else float(finite_L.min())
    shift = extreme if abs(t * extreme) > 600.0 else 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        terms = logw + t * (L - shift)
    return shift + _logsumexp(terms) / t


def _renyi_from_logs(logp: FloatArray, logq: FloatArray, alpha: float) -> float:
    """D_α(P‖Q) from log-probabilities restricted to supp P (logp finite; logq may be −inf).

    The caller guarantees Σ exp(logp) = 1 and Σ q = 1. Every formula below involves q only on
    supp P, except α = 0, which the caller handles through :func:`_order_zero`.
    """
    with np.errstate(invalid="ignore"):
        L = logp - logq  # log p_i/q_i on supp P; +inf where q_i = 0
    if alpha == math.inf:
        # [vEH14, Thm 6]: D_∞ = log max_{p_i > 0} p_i / q_i.
        return max(0.0, float(L.max()))
    if alpha >= 1.0 and np.isposinf(L).any():
        # P not absolutely continuous w.r.t. Q: D_α = ∞ for α ≥ 1 [vEH14, Sec. II-A].
        return math.inf
    if alpha == 1.0:
        # KL = Σ p_i (log p_i − log q_i) [vEH14, Thm 5]; differences of logs never overflow.
        return max(0.0, float(np.sum(np.exp(logp) * L)))
    # [vEH14, eq. (1)] written as (1/t) log Σ p_i exp(t log(p_i/q_i)), t = α − 1.
    value = _tilted_log_mean(logp, L, alpha - 1.0)
    return max(0.0, value)


def _order_zero(p: FloatArray, q: FloatArray) -> float:
    """D_0(P‖Q) = −log Q(supp P) [vEH14, Thm 4], via log1p of the complement when accurate."""
    inside = p > 0
    q_in = float(q[inside].sum())
    q_out = float(q[~inside].sum())
    if q_in <= 0.0:
        return math.inf
    value = -math.log1p(-q_out) if q_out < 0.5 else -math.log(q_in)
    return max(0.0, value)


@overload
def renyi_divergence(p: Any, q: Any, alpha: float | int) -> float: ...
@overload
def renyi_divergence(p: Any, q: Any, alpha: Any) -> float | FloatArray: ...
def renyi_divergence(p: Any, q: Any, alpha: Any) -> float | FloatArray:
    """Rényi divergence D_α(P‖Q) in nats, for every order α ∈ [0, ∞].

    ``alpha`` may be a scalar (a float is returned) or an array of orders (an array of the same
    shape is returned). α = 0, 1 and ∞ are exact special cases; orders near 1 use an
    ``expm1``/``log1p`` form so that D_{1±1e-12} agrees with KL; large orders and tiny
    probabilities (down to 1e-300 and below) are handled in the log domain. The result is +∞
    when α ≥ 1 and P puts mass where Q has none, or when α < 1 and P ⊥ Q.

    Source: van Erven & Harremoës 2014, eq. (1) and Theorems 4–6 (orders 0, 1, ∞).

    >>> round(renyi_divergence([0.5, 0.5], [0.9, 0.1], 1), 6)  # KL
    0.510826
    >>> round(renyi_divergence([0.75, 0.25], [0.25, 0.75], float("inf")), 6)  # log 3
    1.098612
    >>> [round(float(d), 4) for d in renyi_divergence([0.5, 0.5], [0.9, 0.1], [0, 0.5, 2])]
    [0.0, 0.2231, 1.0217]
    >>> renyi_divergence([0.5, 0.5], [1.0, 0.0], 2)
    inf
    """
    pn, qn = _normalised_pair(p, q)
    alphas = _as_orders(alpha)
    support = pn > 0
    with np.errstate(divide="ignore"):
        logp = np.log(pn[support])
        logq = np.log(qn[support])
    out = np.empty(alphas.shape, dtype=np.float64)
    for index, a_raw in np.ndenumerate(alphas):
        a = float(a_raw)
        out[index] = _order_zero(pn, qn) if a == 0.0 else _renyi_from_logs(logp, logq, a)
    if out.ndim == 0:
        return float(out)
    return out


def kl_divergence(p: Any, q: Any) -> float:
    """Kullback–Leibler divergence D(P‖Q) = Σ p_i log(p_i/q_i) in nats (+∞ if P ≪̸ Q).

    Source: van Erven & Harremoës 2014, Thm 5 (order 1 of the Rényi family).

    >>> round(kl_divergence([0.5, 0.5], [0.9, 0.1]), 6)
    0.510826
    >>> kl_divergence([1.0, 0.0], [0.5, 0.5]) == kl_divergence([1.0, 0.0], [0.5, 0.5])
    True
    >>> round(kl_divergence([1.0, 0.0], [0.5, 0.5]), 6)  # log 2
    0.693147
    """
    return renyi_divergence(p, q, 1.0)


def max_divergence(p: Any, q: Any) -> float:
    """Max-divergence D_∞(P‖Q) = log max_{p_i > 0} p_i/q_i in nats: the pure-DP ε of the pair.

    Source: van Erven & Harremoës 2014, Thm 6; Mironov 2017 ("Rényi DP"), Sec. 3: a mechanism
    is ε-DP iff D_∞ ≤ ε for every pair of neighbouring output distributions.

    >>> round(max_divergence([0.75, 0.25], [0.25, 0.75]), 6)  # randomized response: ln 3
    1.098612
    """
    return renyi_divergence(p, q, math.inf)


def total_variation(p: Any, q: Any) -> float:
    """Total variation distance TV(P, Q) = ½ Σ |p_i − q_i| = max_A P(A) − Q(A), in [0, 1].

    Source: Tsybakov 2009, "Introduction to Nonparametric Estimation", Lemma 2.1 (Scheffé).
    It equals the hockey-stick divergence at ε = 0.

    >>> total_variation([0.5, 0.5], [0.9, 0.1])
    0.4
    """
    pn, qn = _normalised_pair(p, q)
    value = 0.5 * float(np.abs(pn - qn).sum())
    return min(1.0, value)


@overload
def hockey_stick_divergence(p: Any, q: Any, epsilon: float | int) -> float: ...
@overload
def hockey_stick_divergence(p: Any, q: Any, epsilon: Any) -> float | FloatArray: ...
def hockey_stick_divergence(p: Any, q: Any, epsilon: Any) -> float | FloatArray:
    """Hockey-stick divergence E_{e^ε}(P‖Q) = Σ_i max(p_i − e^ε q_i, 0): the tight δ at ε.

    A pair of output distributions satisfies (ε, δ)-indistinguishability in the direction P vs
    Q iff δ ≥ E_{e^ε}(P‖Q) (Barthe & Olmedo 2013, ICALP; Balle et al. 2018, "Improving
    the Gaussian mechanism", Thm 5 via Lemma 1). ``epsilon`` may be any real, ±∞, scalar or
    array (vectorised). Each positive term is evaluated as p_i · (−expm1(ε − log(p_i/q_i)))
    so that e^ε never overflows and there is no cancellation; ε = +∞ gives P(q = 0).

    >>> round(hockey_stick_divergence([0.75, 0.25], [0.25, 0.75], 0.0), 6)  # = TV
    0.5
    >>> hockey_stick_divergence([0.75, 0.25], [0.25, 0.75], math.log(3))  # RR is ln3-DP
    0.0
    >>> [round(float(d), 6) for d in hockey_stick_divergence([0.75, 0.25], [0.25, 0.75], [0, 1])]
    [0.5, 0.07043]
    """
    pn, qn = _normalised_pair(p, q)
    try:
        eps = np.asarray(epsilon, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("epsilon", epsilon, "a real number or array of reals") from None
    if np.isnan(eps).any():
        raise ParameterError("epsilon", epsilon, "real numbers (no NaN)")
    support = pn > 0
    with np.errstate(divide="ignore"):
        logp = np.log(pn[support])
        logq = np.log(qn[support])
    w = pn[support]
    L = logp - logq  # +inf where q_i = 0 (logq = −inf, logp finite)
    out = np.empty(eps.shape, dtype=np.float64)
    for index, e_raw in np.ndenumerate(eps):
        e = float(e_raw)
        if e == math.inf:
            # Limit ε → ∞: only the mass of P where Q vanishes remains.
            out[index] = min(1.0, float(w[np.isposinf(L)].sum()))
            continue
        above = e < L  # p_i > e^ε q_i
        gap = -np.expm1(e - L[above])  # 1 − e^ε q_i/p_i ∈ (0, 1]; L = +inf gives 1
        out[index] = min(1.0, max(0.0, float(np.sum(w[above] * gap))))
    if out.ndim == 0:
        return float(out)
    return out
