"""Rényi-DP curves of the standard mechanisms and RDP → (ε, δ) conversions.

All values are in nats. Orders α are floats > 1 here (α = 1 and α = ∞ are the exact special
cases handled by :class:`~infodp.accounting.profile.PrivacyProfile`), except where a function
says it accepts α = 1.

>>> round(gaussian_rdp(1.0, 2.0), 6)            # α / (2σ²)
1.0
>>> round(laplace_rdp(1.0, 1.0), 6)             # Mironov 2017, Table II at α = 1
0.367879
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from infodp._np import np, npt
from infodp._scipy import integrate, special
from infodp._validate import (
    as_alpha,
    as_alphas,
    as_positive,
    as_positive_int,
    as_probability,
    as_real,
)
from infodp.errors import ParameterError

__all__ = [
    "DEFAULT_ORDERS",
    "discrete_gaussian_rdp",
    "discrete_laplace_kl",
    "discrete_laplace_rdp",
    "gaussian_rdp",
    "group_rdp",
    "laplace_rdp",
    "randomized_response_rdp",
    "subsampled_gaussian_kl",
    "subsampled_gaussian_rdp",
]

if TYPE_CHECKING:
    ArrayF = npt.NDArray[np.float64]

    DEFAULT_ORDERS: ArrayF
    """Orders at which RDP curves are tabulated for conversions (any order gives a valid
    bound): see :func:`_default_orders`."""


@functools.cache
def _default_orders() -> ArrayF:
    """The orders behind ``DEFAULT_ORDERS``, built on first use (a query that asks for α = 1,
    2 and ∞ alone never tabulates a curve, nor imports numpy).

    A superset of dp-accounting's ``DEFAULT_RDP_ORDERS`` up to 1024 (1.1 … 10.9 by 0.1,
    integers to 63, powers of two), so the RDP conversion is never looser than its
    ``RdpAccountant``. Sorted and deduplicated by hand: np.unique on floats imports numpy.ma.

    >>> float(_default_orders()[0]), float(_default_orders()[-1])
    (1.05, 4096.0)
    """
    orders = np.array(
        sorted(
            set(
                np.concatenate(
                    [
                        np.round(np.arange(1.05, 3.0, 0.05), 10),
                        np.round(np.arange(3.0, 12.0, 0.1), 10),
                        np.round(np.arange(12.0, 64.0, 1.0), 10),
                        np.round(np.geomspace(64.0, 4096.0, 19), 6),
                    ]
                ).tolist()
            )
        ),
        dtype=np.float64,
    )
    orders.setflags(write=False)
    return orders


def __getattr__(name: str) -> ArrayF:
    if name == "DEFAULT_ORDERS":
        return _default_orders()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _orders(alpha: npt.ArrayLike) -> ArrayF:
    a = as_alphas("alpha", alpha, minimum=1.0)
    return a


def _out(a: ArrayF, values: ArrayF) -> float | ArrayF:
    return float(values) if a.ndim == 0 else values


def _log1p_over_x(y: ArrayF) -> ArrayF:
    """log(1 + y)/y with the limit 1 at y = 0 (series below 1e-8)."""
    small = np.abs(y) < 1e-8
    safe = np.where(small, 1.0, y)
    return np.where(small, 1.0 - y / 2, np.log1p(safe) / safe)


def _expm1_over_x(t: ArrayF) -> ArrayF:
    """(e^t − 1)/t with the limit 1 at t = 0 (series below 1e-8)."""
    small = np.abs(t) < 1e-8
    safe = np.where(small, 1.0, t)
    return np.where(small, 1.0 + t / 2, np.expm1(safe) / safe)


def _renyi_from_losses(losses: ArrayF, masses: ArrayF, x: ArrayF) -> ArrayF:
    """D_α = log E_P[e^{(α−1)L}]/(α−1) for a discrete privacy loss L (masses under P).

    Near α = 1 it is evaluated as S·log1p(y)/y with S = Σ m_i L_i (e^{(α−1)L_i} − 1)/((α−1)L_i)
    and y = (α−1)·S, which keeps full relative precision as α → 1 (where S → KL).
    """
    out = np.empty(x.shape)
    # The series form also holds far from α = 1 as long as (α−1)·L stays small; it is what keeps
    # tiny privacy losses (ε ~ 1e-9, whose RDP is ~1e-18) from rounding to an optimistic 0.
    near = (x - 1 < 1e-2) | ((x - 1) * float(np.max(np.abs(losses))) < 1.0)
    if near.any():
        t = (x[near] - 1)[:, None] * losses[None, :]
        big_s = np.sum(masses[None, :] * losses[None, :] * _expm1_over_x(t), axis=1)
        out[near] = big_s * _log1p_over_x((x[near] - 1) * big_s)
    far = ~near
    if far.any():
        with np.errstate(divide="ignore"):
            terms = np.log(masses)[None, :] + (x[far] - 1)[:, None] * losses[None, :]
        out[far] = _logsumexp_rows(terms) / (x[far] - 1)
    return out


def _logsumexp_rows(terms: ArrayF) -> ArrayF:
    """log Σ_j exp(terms[i, j]) per row, shifted by the row maximum (as scipy's logsumexp).

    Plain numpy so that the curator's per-query leakage summary does not load scipy.
    """
    top = np.max(terms, axis=1)
    shift = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out: ArrayF = np.log(np.sum(np.exp(terms - shift[:, None]), axis=1)) + shift
    return out


def gaussian_rdp(sigma: float, alpha: npt.ArrayLike) -> float | ArrayF:
    """RDP of the Gaussian mechanism with noise σ per unit sensitivity: α/(2σ²).

    Mironov 2017, Table II (Gaussian row); α = 1 is the KL divergence 1/(2σ²).

    >>> gaussian_rdp(0.5, 1.0)
    2.0
    """
    s = as_positive("sigma", sigma)
    a = _orders(alpha)
    return _out(a, a / (2.0 * s * s))


def laplace_rdp(lam: float, alpha: npt.ArrayLike) -> float | ArrayF:
    """RDP of the Laplace mechanism with scale λ per unit sensitivity (Mironov 2017, Table II).

    ε(α) = 1/(α−1)·log(α/(2α−1)·e^{(α−1)/λ} + (α−1)/(2α−1)·e^{−α/λ}) for α > 1,
    ε(1) = 1/λ + e^{−1/λ} − 1, ε(∞) = 1/λ.

    >>> round(laplace_rdp(2.0, float("inf")), 6)
    0.5
    """
    b = as_positive("lam", lam)
    a = _orders(alpha)
    flat = a.reshape(-1)
    out = np.empty(flat.shape)
    one = flat == 1.0
    inf = np.isinf(flat)
    mid = ~(one | inf)
    out[one] = 1.0 / b + math.expm1(-1.0 / b)
    out[inf] = 1.0 / b
    x = flat[mid]
    # Same quantity as ε0 + log1p((α−1)c)/(α−1), c = expm1(ε0(1−2α))/(2α−1), ε0 = 1/λ
    # (the form of dp-accounting's _laplace_rdp), evaluated stably for α near 1.
    eps0 = 1.0 / b
    c = np.expm1(eps0 * (1 - 2 * x)) / (2 * x - 1)
    out[mid] = eps0 + c * _log1p_over_x((x - 1) * c)
    return _out(a, out.reshape(a.shape))


def randomized_response_rdp(epsilon: float, k: int, alpha: npt.ArrayLike) -> float | ArrayF:
    """RDP of k-ary randomized response (Mironov 2017, Table II for k = 2).

    The worst pair of inputs gives output distributions P = (a, b, b, …), Q = (b, a, b, …)
    with a = e^ε/(e^ε+k−1), b = 1/(e^ε+k−1), so
    ε(α) = 1/(α−1)·log(a^α b^{1−α} + b^α a^{1−α} + (k−2)·b); ε(1) = (a−b)·ε
    (for k = 2 this is ε·tanh(ε/2), Cuff & Yu 2016, Property 1); ε(∞) = ε.

    >>> round(randomized_response_rdp(1.0, 2, 1.0), 6) == round(math.tanh(0.5), 6)
    True
    """
    eps = as_real("epsilon", epsilon)
    if eps < 0:
        raise ParameterError("epsilon", epsilon, "a non-negative number (>= 0)")
    kk = as_positive_int("k", k, minimum=2)
    a = _orders(alpha)
    flat = a.reshape(-1)
    out = np.empty(flat.shape)
    if eps == 0:
        return _out(a, np.zeros(a.shape))
    log_b = -(eps + math.log1p((kk - 1) * math.exp(-eps)))
    log_a = eps + log_b
    one = flat == 1.0
    inf = np.isinf(flat)
    mid = ~(one | inf)
    out[one] = (math.exp(log_a) - math.exp(log_b)) * eps
    out[inf] = eps
    # Privacy loss under P: ε w.p. a, 0 w.p. (k−2)b, −ε w.p. b.
    losses = np.array([eps, 0.0, -eps])
    masses = np.array([math.exp(log_a), (kk - 2) * math.exp(log_b), math.exp(log_b)])
    out[mid] = _renyi_from_losses(losses, masses, flat[mid])
    return _out(a, out.reshape(a.shape))


def discrete_laplace_rdp(scale: float, sensitivity: int, alpha: npt.ArrayLike) -> float | ArrayF:
    """RDP of the discrete Laplace mechanism P(k) ∝ r^{|k|}, r = e^{−1/scale}, shift Δ.

    Σ_k P(k)^α P(k−Δ)^{1−α} summed in closed form: splitting the sum at 0 and Δ, the privacy
    loss is Δλ on k ≤ 0 (mass 1/(1+r)), −Δλ on k ≥ Δ (mass r^Δ/(1+r)) and λ(Δ − 2k) in
    between (λ = 1/scale), so the sum is E_P[e^{(α−1)L}] over Δ + 1 atoms, whose middle part
    is a geometric series (:func:`_discrete_laplace_rdp_closed`). Where the rounding of that
    closed form is not negligible (tiny ε, orders near 1) and Δ is small, the Δ + 1 atoms
    are summed instead. ε(1) is :func:`discrete_laplace_kl`; ε(∞) = Δ/scale.

    A scalar order is answered on Python floats (no array; the curator's leakage summary
    asks for α = 1, 2, ∞ only).

    >>> round(discrete_laplace_rdp(1.0, 1, float("inf")), 6)
    1.0
    >>> round(discrete_laplace_rdp(2.0, 1, 2.0), 6)   # log((e^{1/2} + e^{-1})/(1 + e^{-1/2}))
    0.227336
    """
    t = as_positive("scale", scale)
    d = as_positive_int("sensitivity", sensitivity)
    lam = 1.0 / t
    if isinstance(alpha, int | float) and not isinstance(alpha, bool):
        a = as_alpha("alpha", alpha, minimum=1.0)
        value, precise = _discrete_laplace_rdp_at(lam, d, a)
        if precise or d > _ATOMS_MAX:
            return value
        return float(_discrete_laplace_rdp_atoms(lam, d, np.array([a]))[0])
    orders = _orders(alpha)
    flat = orders.reshape(-1)
    pairs = [_discrete_laplace_rdp_at(lam, d, x) for x in flat.tolist()]
    out = np.array([v for v, _ in pairs], dtype=np.float64)
    rough = np.array([not ok for _, ok in pairs], dtype=bool)
    if d <= _ATOMS_MAX and rough.any():
        out[rough] = _discrete_laplace_rdp_atoms(lam, d, flat[rough])
    return _out(orders, out.reshape(orders.shape))


#: Up to this many atoms, orders whose closed form is not precise to :data:`_CLOSED_RTOL`
#: are summed atom by atom (O(Δ) per order); above it the closed form is used throughout (a
#: curator cell on a fine grid has Δ in the millions).
_ATOMS_MAX = 2048
#: Largest relative rounding allowance of the closed form taken as exact enough.
_CLOSED_RTOL = 1e-9


@functools.lru_cache(maxsize=2**16)
def _discrete_laplace_rdp_at(lam: float, d: int, alpha: float) -> tuple[float, bool]:
    """The RDP at one order α ∈ [1, ∞] on Python floats, and whether it is precise.

    α = 1 and ∞ are exact (the KL's closed form; Δλ); in between the closed form of
    :func:`_discrete_laplace_rdp_closed` is precise when its rounding allowance is at most
    :data:`_CLOSED_RTOL` of the value. Kept per (λ, Δ, α): a function of these floats alone,
    asked again at the same orders by every composition holding the same mechanism.
    """
    if alpha == 1.0:
        return _discrete_laplace_kl(1.0 / lam, d), True
    if math.isinf(alpha):
        return d * lam, True
    return _discrete_laplace_rdp_closed(lam, d, alpha)


def _discrete_laplace_rdp_closed(lam: float, d: int, alpha: float) -> tuple[float, bool]:
    """Upper bound on the discrete Laplace RDP from the closed-form sum, order α ∈ (1, ∞).

    With t = α − 1 > 0 the sum E_P[e^{tL}] of :func:`discrete_laplace_rdp` is
    e^{tΔλ}/(1+r) + e^{−(1+t)Δλ}/(1+r) + (1−r)/(1+r)·e^{tΔλ}·Σ_{k=1}^{Δ−1} q^k with
    q = e^{−λ(1+2t)} < 1 (a geometric series; empty when Δ = 1). It is evaluated in the log
    domain; the rounding of that evaluation (a few ulps of its largest term, divided by t) is
    added, so the value stays an upper bound, and it is capped by the pure-ε bound Δλ
    (Mironov 2017, Prop. 3) and by α(Δλ)²/2 (Bun & Steinke 2016, Prop. 1.4: ε-DP implies
    (ε²/2)-zCDP). The flag says whether that rounding allowance is below
    :data:`_CLOSED_RTOL` of the value.

    >>> value, precise = _discrete_laplace_rdp_closed(0.5, 1, 2.0)
    >>> round(value, 6), precise
    (0.227336, True)
    """
    t = alpha - 1.0
    eps = d * lam
    log1r = math.log1p(math.exp(-lam))
    terms = [t * eps - log1r, -(1.0 + t) * eps - log1r]
    if d > 1:
        log_q = -lam * (1.0 + 2.0 * t)
        # log Σ_{k=1}^{Δ−1} q^k = log q + log(1 − q^{Δ−1}) − log(1 − q).
        geo = log_q + math.log(-math.expm1((d - 1) * log_q)) - math.log(-math.expm1(log_q))
        terms.append(math.log(-math.expm1(-lam)) - log1r + t * eps + geo)
    top = max(terms)
    log_e = top + math.log(math.fsum(math.exp(x - top) for x in terms))
    slack = 8 * sys.float_info.epsilon * (max(abs(x) for x in terms) + 1.0)
    value = (log_e + slack) / t
    precise = slack <= _CLOSED_RTOL * log_e
    return min(max(value, 0.0), eps, alpha * eps * eps / 2), precise


def _discrete_laplace_rdp_atoms(lam: float, d: int, alphas: ArrayF) -> ArrayF:
    """The RDP at orders α ∈ (1, ∞) summed over the Δ + 1 atoms of the privacy loss.

    Privacy loss λ(|k−Δ| − |k|) under P: Δλ w.p. 1/(1+r), −Δλ w.p. r^Δ/(1+r) and
    λ(Δ−2k) w.p. P(k) for 0 < k < Δ, so Σ_k P(k)^α P(k−Δ)^{1−α} = E_P[e^{(α−1)L}].
    """
    r = math.exp(-lam)
    k = np.arange(1, d, dtype=np.float64)
    losses = np.concatenate([[d * lam, -d * lam], lam * (d - 2 * k)])
    masses = np.concatenate(
        [[1 / (1 + r), math.exp(-lam * d) / (1 + r)], (1 - r) / (1 + r) * np.exp(-lam * k)]
    )
    return _renyi_from_losses(losses, masses, alphas)


def discrete_laplace_kl(scale: float, sensitivity: int) -> float:
    """KL divergence of the discrete Laplace pair shifted by Δ (RDP at α = 1).

    KL = λ·E[|k−Δ| − |k|] with P(k ≤ 0) = 1/(1+r), P(k ≥ Δ) = r^Δ/(1+r) and the middle terms
    a geometric series (:func:`_discrete_laplace_kl_closed`); at Δ = 1 it is ε·tanh(ε/2).

    >>> round(discrete_laplace_kl(1.0, 1), 6)
    0.462117
    """
    return _discrete_laplace_kl(
        as_positive("scale", scale), as_positive_int("sensitivity", sensitivity)
    )


@functools.lru_cache(maxsize=1024)
def _discrete_laplace_kl(t: float, d: int) -> float:
    # Cached: a query's composed profile asks for the same pair many times.
    return _discrete_laplace_kl_closed(1.0 / t, d)


def _discrete_laplace_kl_closed(lam: float, d: int) -> float:
    """:func:`discrete_laplace_kl` in closed form, O(1) for any Δ ≥ 1 (no sum over atoms).

    |k − Δ| − |k| = Δ − 2·clip(k, 0, Δ) and E[clip(k, 0, Δ)] = Σ_{j=1}^{Δ} P(k ≥ j) with
    P(k ≥ j) = r^j/(1+r), so with ε = λΔ
    KL = ε − (λ/sinh λ)(1 − e^{−ε}) = (ε − 1 + e^{−ε}) + (1 − λ/sinh λ)(1 − e^{−ε}),
    both brackets from their Taylor series when small (no cancellation), rounded up by
    2^-40 relative.

    At Δ = 1 the pair is binary randomized response, whose KL is ε·tanh(ε/2) (Cuff & Yu 2016,
    Property 1):

    >>> 0 <= _discrete_laplace_kl_closed(0.5, 1) - 0.5 * math.tanh(0.25) < 1e-12   # rounded up
    True
    """
    e = lam * d
    # Small arguments: ε − 1 + e^{−ε} = ε²/2 − ε³/6 + ε⁴/24 − …, 1 − λ/sinh λ = λ²/6 − 7λ⁴/360 + …
    head = e * e * (0.5 - e * (1 / 6 - e * (1 / 24 - e / 120))) if e < 1e-3 else e + math.expm1(-e)
    # λ/sinh λ = 2λe^{−λ}/(1 − e^{−2λ}): no overflow at large λ (a scale far below 1).
    ratio = 2 * lam * math.exp(-lam) / -math.expm1(-2 * lam)
    corr = lam * lam * (1 / 6 - 7 * lam * lam / 360) if lam < 1e-3 else 1 - ratio
    return (head + corr * -math.expm1(-e)) * (1 + 2.0**-40)


def discrete_gaussian_rdp(sigma: float, sensitivity: int, alpha: npt.ArrayLike) -> ArrayF:
    """RDP bound of the discrete Gaussian: α·Δ²/(2σ²) (Canonne, Kamath & Steinke 2020, Thm 4).

    >>> discrete_gaussian_rdp(1.0, 1, np.array([2.0]))
    array([1.])
    """
    s = as_positive("sigma", sigma)
    d = as_positive_int("sensitivity", sensitivity)
    a = _orders(alpha)
    return np.asarray(a * d * d / (2.0 * s * s), dtype=np.float64)


def _log_a_int(q: float, sigma: float, alpha: int) -> float:
    # Mironov, Talwar & Zhang 2019, Section 3.3, integer α:
    # A_α = Σ_{i=0}^{α} C(α,i) (1−q)^{α−i} q^i exp((i²−i)/(2σ²)).
    i = np.arange(alpha + 1, dtype=np.float64)
    log_coef = special.gammaln(alpha + 1) - special.gammaln(i + 1) - special.gammaln(alpha - i + 1)
    terms = log_coef + i * math.log(q) + (alpha - i) * math.log1p(-q) + (i * i - i) / (2 * sigma**2)
    top = float(np.max(terms))
    return top + math.log(float(np.sum(np.exp(terms - top))))


def _log_a_frac(q: float, sigma: float, alphas: ArrayF) -> ArrayF:
    # Mironov, Talwar & Zhang 2019, Section 3.3, fractional α: two convergent series
    # A_α = Σ_i C(α,i) [ q^i (1−q)^{α−i} e^{(i²−i)/(2σ²)} Φ̄-part + symmetric part ],
    # with z0 = σ² log(1/q − 1) + 1/2 (as in dp-accounting's _compute_log_a_frac),
    # vectorised over the orders; rows are extended until their terms have decayed.
    z0 = sigma**2 * math.log(1 / q - 1) + 0.5
    out = np.full(alphas.shape, math.inf)
    todo = np.arange(alphas.size)
    n = 64
    while todo.size and n <= 65536:
        x = alphas[todo][:, None]
        i = np.arange(n, dtype=np.float64)[None, :]
        j = x - i
        log_coef = special.gammaln(x + 1) - special.gammaln(i + 1) - special.gammaln(j + 1)
        log_t0 = log_coef + i * math.log(q) + j * math.log1p(-q)
        log_t1 = log_coef + j * math.log(q) + i * math.log1p(-q)
        log_s0 = log_t0 + (i * i - i) / (2 * sigma**2) + special.log_ndtr(-(i - z0) / sigma)
        log_s1 = log_t1 + (j * j - j) / (2 * sigma**2) + special.log_ndtr(-(z0 - j) / sigma)
        both = np.concatenate([log_s0, log_s1], axis=1)
        top = np.max(both, axis=1)
        total = top + np.log(np.sum(np.exp(both - top[:, None]), axis=1))
        tail = np.maximum(log_s0[:, -1], log_s1[:, -1])
        decreasing = (log_s0[:, -1] < log_s0[:, -2]) & (log_s1[:, -1] < log_s1[:, -2])
        done = decreasing & (tail < total - 40)
        # Terms decay faster than geometrically from here; add a generous tail allowance so
        # the truncated series stays an upper bound.
        out[todo[done]] = total[done] + np.exp(tail[done] - total[done]) * n
        todo = todo[~done]
        n *= 2
    return out


def subsampled_gaussian_rdp(
    noise_multiplier: float, sampling_rate: float, alpha: npt.ArrayLike
) -> ArrayF:
    """RDP of the Poisson-subsampled Gaussian mechanism (Mironov, Talwar & Zhang 2019).

    ε(α) = log(A_α)/(α−1) with A_α the exact sum for integer α and the convergent series of
    Section 3.3 for fractional α (the same algorithm as dp-accounting's ``RdpAccountant``).
    α = 1 is handled by :func:`subsampled_gaussian_kl`.

    >>> r = subsampled_gaussian_rdp(1.0, 0.01, np.array([2.0, 3.0]))
    >>> [round(float(v), 8) for v in r]
    [0.00017181, 0.00026464]
    """
    sigma = as_positive("noise_multiplier", noise_multiplier)
    q = as_probability("sampling_rate", sampling_rate)
    a = _orders(alpha)
    flat = a.reshape(-1)
    out = np.empty(flat.shape)
    frac: list[int] = []
    for idx, x in enumerate(flat):
        if q == 0:
            out[idx] = 0.0
        elif math.isinf(x):
            out[idx] = math.inf
        elif x == 1.0:
            out[idx] = subsampled_gaussian_kl(sigma, q)
        elif q == 1.0:
            out[idx] = x / (2 * sigma**2)
        elif float(x).is_integer():
            out[idx] = _log_a_int(q, sigma, int(x)) / (x - 1)
        else:
            frac.append(idx)
    if frac:
        xs = flat[frac]
        out[frac] = _log_a_frac(q, sigma, xs) / (xs - 1)
    # Never above the un-subsampled Gaussian (post-processing of the Gaussian mechanism).
    out = np.minimum(np.maximum(out, 0.0), flat / (2 * sigma**2))
    return out.reshape(a.shape)


def subsampled_gaussian_kl(noise_multiplier: float, sampling_rate: float) -> float:
    """KL bound of the Poisson-subsampled Gaussian: the larger of the two directions.

    Computed by adaptive quadrature of E_P[log(1−q+q·e^{(2y−1)/(2σ²)})] (P the mixture) and of
    the reverse direction; the result is rounded up by 1e-9 relative plus 1e-15 absolute to
    cover the quadrature error estimate.

    >>> round(subsampled_gaussian_kl(1.0, 1.0), 6)
    0.5
    """
    sigma = as_positive("noise_multiplier", noise_multiplier)
    q = as_probability("sampling_rate", sampling_rate)
    if q == 0:
        return 0.0
    if q == 1:
        return 1.0 / (2 * sigma**2)
    s2 = sigma**2
    log1mq = math.log1p(-q)
    logq = math.log(q)

    def loss(y: float) -> float:
        # log(1 − q + q e^{(2y−1)/(2σ²)}), computed stably.
        return float(np.logaddexp(log1mq, logq + (2 * y - 1) / (2 * s2)))

    def p_mix(y: float) -> float:
        return (1 - q) * math.exp(-y * y / (2 * s2)) / math.sqrt(2 * math.pi * s2) + q * math.exp(
            -((y - 1) ** 2) / (2 * s2)
        ) / math.sqrt(2 * math.pi * s2)

    def p0(y: float) -> float:
        return math.exp(-y * y / (2 * s2)) / math.sqrt(2 * math.pi * s2)

    lo, hi = -40 * sigma, 1 + 40 * sigma
    kl_a, err_a = integrate.quad(lambda y: p_mix(y) * loss(y), lo, hi, limit=400, points=[0.5])
    kl_b, err_b = integrate.quad(lambda y: -p0(y) * loss(y), lo, hi, limit=400, points=[0.5])
    value = max(kl_a + err_a, kl_b + err_b)
    return float(max(value, 0.0) * (1 + 1e-9) + 1e-15)


def group_rdp(
    rdp: Callable[[npt.ArrayLike], float | ArrayF], k: int, alpha: npt.ArrayLike
) -> ArrayF:
    """RDP bound for a group of k individuals from the curve of one (Mironov 2017, Cor. 4).

    With c = ⌈log2 k⌉: if the mechanism is (α, ε)-RDP and α ≥ 2^{c+1}, it is
    (α/2^c, 3^c·ε)-RDP for datasets at distance 2^c ≥ k. So ε_k(α′) ≤ 3^c·ε(2^c·max(α′, 2))
    (orders below 2 use monotonicity of the Rényi divergence in α).

    >>> from infodp.accounting.rdp import gaussian_rdp
    >>> group_rdp(lambda a: gaussian_rdp(1.0, a), 2, np.array([2.0]))
    array([6.])
    """
    n = as_positive_int("k", k)
    a = _orders(alpha)
    if n == 1:
        return np.asarray(rdp(a), dtype=np.float64)
    c = math.ceil(math.log2(n))
    return np.asarray(3.0**c * np.asarray(rdp((2.0**c) * np.maximum(a, 2.0))), dtype=np.float64)
