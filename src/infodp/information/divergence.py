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
from collections.abc import Callable
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
    "tilted_log_mean",
    "total_variation",
]

FloatArray = npt.NDArray[np.float64]

# Below this |α − 1| the series-friendly form log1p(Σ w expm1(t L)) / t is used (see
# tilted_log_mean); above it the plain log-sum-exp form is accurate to ~1e-13 absolute.
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


def tilted_log_mean(logw: FloatArray, L: FloatArray, t: float) -> FloatArray:
    """Column-wise (1/t) · log Σ_i w_i e^{t L_i}, t ≠ 0: the one Rényi kernel of infodp.

    Column j holds the weights ``exp(logw[:, j])`` (−inf marks an absent entry; the present
    weights of a column sum to 1) and the values ``L[:, j]``. With L = log p/q and t = α − 1 it
    is D_α(P‖Q); with L = log p it is minus the Rényi entropy; with L a privacy loss under P it
    is the RDP of a privacy loss distribution. It is shared by :mod:`infodp.information`,
    :mod:`infodp.channel` (pairwise divergences) and :mod:`infodp.accounting.rdp`.

    L = +inf is allowed: for t < 0 its term vanishes, for t > 0 the column is +inf. Numerics
    by regime (the habit of dp_accounting's RDP code): when |t| ≤ 1e-2 or |t|·max|L| < 1 the
    identity Σ w e^{tL} = 1 + Σ w expm1(tL) and ``log1p`` keep full relative accuracy (the
    value tends to the mean Σ w L — KL, Shannon — as t → 0 instead of 0/0, and tiny values
    such as the RDP ~1e-18 of ε ~ 1e-9 do not round to an optimistic 0); otherwise log-sum-exp,
    shifted by the extreme finite L (max for t > 0, min for t < 0) where t·L could overflow.

    >>> w = np.log(np.array([[0.5], [0.5]]))
    >>> L = np.array([[np.log(0.5 / 0.25)], [np.log(0.5 / 0.75)]])  # D_2(½,½ ‖ ¼,¾)
    >>> round(float(tilted_log_mean(w, L, 1.0)[0]), 6), round(float(np.log(4 / 3)), 6)
    (0.287682, 0.287682)
    """
    present = np.isfinite(logw)
    infinite = present & np.isposinf(L)
    live = present & ~infinite
    safe_L = np.where(live, L, 0.0)
    out = np.full(logw.shape[1], np.nan)
    if t > 0:
        out[infinite.any(axis=0)] = np.inf
    empty = ~live.any(axis=0) & np.isnan(out)
    out[empty] = -np.inf / t  # every term vanishes: log 0 / t
    spread = np.max(np.abs(safe_L), axis=0) if len(safe_L) else np.zeros(logw.shape[1])
    series = np.isnan(out) & ((abs(t) <= _NEAR_ONE) | (abs(t) * spread < 1.0))
    if series.any():
        w = np.where(present, np.exp(np.where(present, logw, 0.0)), 0.0)
        with np.errstate(invalid="ignore", over="ignore"):
            terms = np.where(live, w * np.expm1(t * safe_L), 0.0) - np.where(infinite, w, 0.0)
        ssum = np.sum(terms, axis=0)
        good = series & np.isfinite(ssum) & (ssum >= -0.5)
        out[good] = np.log1p(ssum[good]) / t
    todo = np.isnan(out)
    if todo.any():
        Lc = np.where(live, safe_L, -np.inf if t > 0 else np.inf)[:, todo]
        extreme = Lc.max(axis=0) if t > 0 else Lc.min(axis=0)
        shift = np.where(np.abs(t * extreme) > 600.0, extreme, 0.0)
        with np.errstate(over="ignore", invalid="ignore"):
            a = np.where(live[:, todo], logw[:, todo] + t * (safe_L[:, todo] - shift), -np.inf)
        k = np.argmax(a, axis=0)
        m = np.take_along_axis(a, k[None, :], axis=0)[0]
        np.put_along_axis(a, k[None, :], -np.inf, axis=0)
        with np.errstate(invalid="ignore", under="ignore"):
            rest = np.exp(a - m[None, :]).sum(axis=0)
        out[todo] = shift + (m + np.log1p(rest)) / t
    return out


def _tilted_log_mean(logw: FloatArray, L: FloatArray, t: float) -> float:
    """Scalar form of :func:`tilted_log_mean` (one column)."""
    return float(tilted_log_mean(np.asarray(logw)[:, None], np.asarray(L)[:, None], t)[0])


def _each(fn: Callable[[float], float], values: FloatArray) -> float | FloatArray:
    """``fn`` at every entry of ``values`` (orders α, levels ε, probabilities): a float for a
    0-d ``values``, else a float64 array of its shape.

    >>> _each(lambda a: 2 * a, np.asarray(1.5)), _each(lambda a: 2 * a, np.array([0.0, 1.0]))
    (3.0, array([0., 2.]))
    """
    out = np.empty(values.shape, dtype=np.float64)
    for index, v in np.ndenumerate(values):
        out[index] = fn(float(v))
    if out.ndim == 0:
        return float(out)
    return out


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
    return _each(
        lambda a: _order_zero(pn, qn) if a == 0.0 else _renyi_from_logs(logp, logq, a), alphas
    )


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

    def at(e: float) -> float:
        if e == math.inf:
            # Limit ε → ∞: only the mass of P where Q vanishes remains.
            return min(1.0, float(w[np.isposinf(L)].sum()))
        above = e < L  # p_i > e^ε q_i
        gap = -np.expm1(e - L[above])  # 1 − e^ε q_i/p_i ∈ (0, 1]; L = +inf gives 1
        return min(1.0, max(0.0, float(np.sum(w[above] * gap))))

    return _each(at, eps)
