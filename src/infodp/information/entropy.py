"""Entropies of discrete distributions, in nats.

Shannon, Rényi (every order α ∈ [0, ∞]) and min-entropy of a probability vector; the binary
entropy h(p), its inverse on [0, ½] and the binary Rényi entropy H_α(p).

Definitions (Rényi 1961, "On measures of entropy and information"; Cover & Thomas
2006, "Elements of Information Theory", eq. (2.1) and Example 2.1.1):

* H_α(P) = 1/(1−α) · log Σ_i p_i^α for α ∉ {0, 1, ∞};
* H_0(P) = log |supp P| (Hartley), H_1(P) = −Σ p_i log p_i (Shannon),
  H_∞(P) = −log max_i p_i (min-entropy).

>>> round(shannon_entropy([0.5, 0.25, 0.25]), 6)  # 1.5 bits
1.039721
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from infodp._validate import as_probability_vector, as_real
from infodp.errors import ParameterError
from infodp.information.divergence import _as_orders, _each, _tilted_log_mean
from infodp.units import LN2

__all__ = [
    "binary_entropy",
    "binary_entropy_deficit",
    "binary_renyi_entropy",
    "inverse_binary_entropy",
    "inverse_binary_entropy_deficit",
    "min_entropy",
    "renyi_entropy",
    "shannon_entropy",
]

FloatArray = npt.NDArray[np.float64]

# h(p) accepts a target up to this much above ln 2 (rounding of a caller's ln 2 − 0).
_LN2_SLACK = 1e-12


def _log_support(p: FloatArray) -> FloatArray:
    """log p_i over the support of a validated, renormalised vector."""
    return np.log(p[p > 0])


def _renyi_entropy_from_logs(logp: FloatArray, alpha: float) -> float:
    """H_α from the log-probabilities of the support (which sum to 1 after exp)."""
    if alpha == 0.0:
        return math.log(logp.size)  # Hartley entropy, Rényi 1961
    if alpha == math.inf:
        return max(0.0, -float(logp.max()))  # min-entropy
    if alpha == 1.0:
        return max(0.0, -float(np.sum(np.exp(logp) * logp)))  # Shannon
    # H_α = −(1/(α−1)) log Σ p_i e^{(α−1) log p_i}: the tilted mean of log p with t = α − 1,
    # evaluated with expm1/log1p near α = 1 (continuity to Shannon) and log-sum-exp elsewhere.
    value = -_tilted_log_mean(logp, logp, alpha - 1.0)
    return min(max(0.0, value), math.log(logp.size))


def shannon_entropy(p: Any) -> float:
    """Shannon entropy H(P) = −Σ p_i log p_i in nats (0 log 0 = 0).

    Source: Cover & Thomas 2006, eq. (2.1).

    >>> round(shannon_entropy([0.25, 0.25, 0.25, 0.25]), 6)  # log 4
    1.386294
    >>> shannon_entropy([1.0, 0.0])
    0.0
    """
    pv = as_probability_vector("p", p)
    return _renyi_entropy_from_logs(_log_support(pv / pv.sum()), 1.0)


@overload
def renyi_entropy(p: Any, alpha: float | int) -> float: ...
@overload
def renyi_entropy(p: Any, alpha: Any) -> float | FloatArray: ...
def renyi_entropy(p: Any, alpha: Any) -> float | FloatArray:
    """Rényi entropy H_α(P) = 1/(1−α) log Σ p_i^α in nats, for every α ∈ [0, ∞].

    ``alpha`` may be a scalar or an array (vectorised). α = 0 (Hartley), 1 (Shannon) and ∞
    (min-entropy) are exact; orders near 1 are continuous with Shannon.

    Source: Rényi 1961; van Erven & Harremoës 2014, Sec. I-A.

    >>> round(renyi_entropy([0.5, 0.25, 0.25], 2), 6)  # −log(3/8)
    0.980829
    >>> [round(float(h), 6) for h in renyi_entropy([0.5, 0.25, 0.25], [0, 1, float("inf")])]
    [1.098612, 1.039721, 0.693147]
    """
    pv = as_probability_vector("p", p)
    alphas = _as_orders(alpha)
    logp = _log_support(pv / pv.sum())
    return _each(lambda a: _renyi_entropy_from_logs(logp, a), alphas)


def min_entropy(p: Any) -> float:
    """Min-entropy H_∞(P) = −log max_i p_i in nats (the Rényi entropy of order ∞).

    Source: Rényi 1961; Smith 2009 ("On the foundations of quantitative information flow",
    FoSSaCS), Sec. 3: the attacker's one-guess vulnerability is V(X) = e^{−H_∞(X)}.

    >>> round(min_entropy([0.5, 0.25, 0.25]), 6)  # log 2
    0.693147
    """
    pv = as_probability_vector("p", p)
    return _renyi_entropy_from_logs(_log_support(pv / pv.sum()), math.inf)


def _as_unit_interval(name: str, value: Any) -> FloatArray:
    """A scalar (0-d) or array of numbers in [0, 1]."""
    if np.ndim(value) == 0:
        x = as_real(name, value)
        arr = np.asarray(x, dtype=np.float64)
    else:
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise ParameterError(name, value, "numbers in [0, 1]") from None
        if np.isnan(arr).any():
            raise ParameterError(name, value, "numbers in [0, 1] (no NaN)")
    if ((arr < 0) | (arr > 1)).any():
        interval = "a probability in [0, 1]" if arr.ndim == 0 else "probabilities in [0, 1]"
        raise ParameterError(name, value, interval)
    return arr


def _binary_entropy_scalar(p: float) -> float:
    """h(p) = −p log p − (1−p) log(1−p), with log1p for the second term (accurate at p ≈ 0)."""
    if p == 0.0 or p == 1.0:
        return 0.0
    return -p * math.log(p) - (1.0 - p) * math.log1p(-p)


@overload
def binary_entropy(p: float | int) -> float: ...
@overload
def binary_entropy(p: Any) -> float | FloatArray: ...
def binary_entropy(p: Any) -> float | FloatArray:
    """Binary entropy h(p) = −p log p − (1−p) log(1−p) in nats, p ∈ [0, 1] (scalar or array).

    Source: Cover & Thomas 2006, Example 2.1.1.

    >>> round(binary_entropy(0.5), 6)  # log 2
    0.693147
    >>> round(binary_entropy(0.11), 6)
    0.346515
    """
    arr = _as_unit_interval("p", p)
    return _each(_binary_entropy_scalar, arr)


def _binary_logs(p: float) -> FloatArray:
    """log of the support of (p, 1 − p), with log1p for the complement."""
    logs = []
    if p > 0.0:
        logs.append(math.log(p))
    if p < 1.0:
        logs.append(math.log1p(-p))
    return np.asarray(logs, dtype=np.float64)


@overload
def binary_renyi_entropy(p: float | int, alpha: float | int) -> float: ...
@overload
def binary_renyi_entropy(p: Any, alpha: Any) -> float | FloatArray: ...
def binary_renyi_entropy(p: Any, alpha: Any) -> float | FloatArray:
    """Binary Rényi entropy H_α(p) = −1/(α−1) · log(p^α + (1−p)^α) in nats, α ∈ [0, ∞].

    This is the H_α(p) of the 2022 article ("Differential Privacy and Information Theory",
    section on protection against bad outcomes): a binary symmetric channel with crossover p
    has radius log 2 − H_α(p) (Sibson capacity at the uniform prior). ``p`` is a scalar;
    ``alpha`` may be an array (vectorised). 1 − p is handled with log1p, so p = 1e-300 is
    exact.

    >>> round(binary_renyi_entropy(0.25, 2), 6)  # −log(1/16 + 9/16)
    0.470004
    >>> round(binary_renyi_entropy(0.25, 1), 6) == round(binary_entropy(0.25), 6)
    True
    """
    x = as_real("p", p)
    if not 0.0 <= x <= 1.0:
        raise ParameterError("p", p, "a probability in [0, 1]")
    alphas = _as_orders(alpha)
    logs = _binary_logs(x)
    return _each(lambda a: _renyi_entropy_from_logs(logs, a), alphas)


def _bisect_floats(ok: Callable[[float], bool], upper: float) -> tuple[float, float]:
    """Adjacent floats lo < hi in [0, upper] with ok(lo) true and ok(hi) false.

    ``ok`` must be true at 0, false at ``upper`` and monotone (true then false). Non-negative
    float64 values are ordered like their int64 bit patterns, so ~64 halvings of the bit
    pattern reach two adjacent floats, whatever the magnitude (down to subnormals).
    """
    lo = 0  # bit pattern of 0.0
    hi = int(np.float64(upper).view(np.int64))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(float(np.int64(mid).view(np.float64))):
            lo = mid
        else:
            hi = mid
    return float(np.int64(lo).view(np.float64)), float(np.int64(hi).view(np.float64))


def _inverse_binary_entropy_scalar(h: float) -> float:
    """Largest float p ∈ [0, ½] with h(p) ≤ h (h is increasing on [0, ½]).

    Returning the lower end makes 1 − 2·h⁻¹(·) (the MI-DP → δ conversion) err on the large,
    conservative side.
    """
    if h <= 0.0:
        return 0.0
    if h >= LN2:
        return 0.5
    lo, _ = _bisect_floats(lambda p: _binary_entropy_scalar(p) <= h, 0.5)
    return lo


def _deficit_scalar(x: float) -> float:
    """ln 2 − h(½ − x) for x ∈ [0, ½], accurate to a few ulps even for tiny x.

    Exact identity: ln 2 − h(½ − x) = ½[(1 − 2x) log(1 − 2x) + (1 + 2x) log(1 + 2x)]
    = Σ_{k≥1} (2x)^{2k} / (2k(2k − 1)) (Taylor series of the binary entropy about ½; Cover &
    Thomas 2006, Example 2.1.1 differentiated). The series is used below x = 1e-3, where the
    closed form would cancel its ±2x terms.
    """
    if x <= 0.0:
        return 0.0
    if x >= 0.5:
        return LN2
    if x < 1e-3:
        u = (2.0 * x) ** 2
        total, power = 0.0, 1.0
        for k in range(1, 7):
            power *= u
            total += power / (2 * k * (2 * k - 1))
        return total
    return 0.5 * ((1.0 - 2.0 * x) * math.log1p(-2.0 * x) + (1.0 + 2.0 * x) * math.log1p(2.0 * x))


def _inverse_deficit_scalar(d: float) -> float:
    """Smallest float x ∈ [0, ½] with ln 2 − h(½ − x) ≥ d (conservative: x, hence δ = 2x, up)."""
    if d <= 0.0:
        return 0.0
    if d >= LN2:
        return 0.5
    _, hi = _bisect_floats(lambda x: _deficit_scalar(x) < d, 0.5)
    return hi


@overload
def binary_entropy_deficit(x: float | int) -> float: ...
@overload
def binary_entropy_deficit(x: Any) -> float | FloatArray: ...
def binary_entropy_deficit(x: Any) -> float | FloatArray:
    """ln 2 − h(½ − x) in nats for x ∈ [0, ½]: how far a coin with P(heads) = ½ − x is from fair.

    Computed without forming ½ − x, so tiny x keep full relative accuracy (≈ 2x²).
    Source: Cover & Thomas 2006, Example 2.1.1 (h), expanded about ½.

    >>> round(binary_entropy_deficit(1e-10) / 1e-20, 12)  # 2x² to first order
    2.0
    >>> round(binary_entropy_deficit(0.25), 12) == round(math.log(2) - binary_entropy(0.25), 12)
    True
    """
    arr = _as_unit_interval("x", x)
    if (arr > 0.5).any():
        raise ParameterError("x", x, "a distance from ½ in [0, 0.5]")
    return _each(_deficit_scalar, arr)


@overload
def inverse_binary_entropy_deficit(d: float | int) -> float: ...
@overload
def inverse_binary_entropy_deficit(d: Any) -> float | FloatArray: ...
def inverse_binary_entropy_deficit(d: Any) -> float | FloatArray:
    """The x ∈ [0, ½] with ln 2 − h(½ − x) = d, for d ∈ [0, ln 2]: so h⁻¹(ln 2 − d) = ½ − x.

    Use this, not :func:`inverse_binary_entropy`, for the MI-DP → δ conversion
    δ = 1 − 2 h⁻¹(ln 2 − ε) = 2x at small ε (Cuff & Yu 2016): ln 2 − 1e-20 rounds to
    ln 2 in float64, so ``inverse_binary_entropy`` would give p = ½ and δ = 0, whereas the
    true δ ≈ √(2ε) = 1.4e-10. The result is the smallest float x with deficit ≥ d, so
    δ = 2x is never optimistic.

    >>> round(inverse_binary_entropy_deficit(1e-20) / 1e-10, 9)  # x ≈ √(d/2)
    0.707106781
    >>> inverse_binary_entropy_deficit(math.log(2))
    0.5
    """
    arr = _as_unit_interval_entropy(d, "d", "a deficit")
    return _each(_inverse_deficit_scalar, arr)


@overload
def inverse_binary_entropy(h: float | int) -> float: ...
@overload
def inverse_binary_entropy(h: Any) -> float | FloatArray: ...
def inverse_binary_entropy(h: Any) -> float | FloatArray:
    """Inverse of the binary entropy on [0, ½]: the p ∈ [0, ½] with h(p) = h, h ∈ [0, ln 2].

    Needed for the MI-DP → (ε, δ) conversion δ = 1 − 2 h⁻¹(ln 2 − ε) (Cuff & Yu 2016, CCS,
    Cuff & Yu 2016; restated in Ünsal & Önen's tutorial). The result is the largest float p with
    h(p) ≤ h (exact up to one ulp of h's evaluation), so 1 − 2p is never optimistic by more
    than that rounding. Targets up to 1e-12 above ln 2 are accepted as ln 2 (rounding).
    Scalar or array input.

    >>> round(inverse_binary_entropy(math.log(2)), 6)
    0.5
    >>> round(inverse_binary_entropy(binary_entropy(0.11)), 12)
    0.11
    """
    arr = _as_unit_interval_entropy(h)
    return _each(_inverse_binary_entropy_scalar, arr)


def _as_unit_interval_entropy(value: Any, name: str = "h", what: str = "an entropy") -> FloatArray:
    """Validate nats in [0, ln 2] (entropies h, or deficits ln 2 − h), with a 1e-12 rounding
    slack above ln 2; returns them clipped to ln 2 (0-d for a scalar)."""
    allowed = f"{what} in [0, ln 2 = {LN2!r}] nats"
    if np.ndim(value) == 0:
        arr = np.asarray(as_real(name, value), dtype=np.float64)
    else:
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise ParameterError(name, value, allowed) from None
        if not np.isfinite(arr).all():
            raise ParameterError(name, value, allowed + " (finite, no NaN)")
    if ((arr < 0) | (arr > LN2 + _LN2_SLACK)).any():
        raise ParameterError(name, value, allowed)
    return np.minimum(arr, LN2)
