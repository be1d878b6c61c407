"""The zCDP budget of a synthetic release: (ε, δ) → ρ, its exact split, and per-step noise.

Every step is charged in zero-concentrated DP, where adaptive composition adds (Bun & Steinke
2016, Lemma 2.3), and all amounts are exact :class:`~fractions.Fraction` s:

* (ε, δ) → ρ: the largest ρ (rounded *down* to a dyadic rational) whose certified conversion
  :func:`infodp.accounting.conversions.zcdp_to_epsilon` (Bun & Steinke 2016, Prop. 1.3, or the
  Rényi conversion of Canonne, Kamath & Steinke 2020, Prop. 12) is at most ε at δ;
* a discrete Gaussian N_Z(0, σ²) on counts of L2 sensitivity Δ is Δ²/(2σ²)-zCDP (Canonne,
  Kamath & Steinke 2020, Theorem 4): σ is rounded *up*, so a measurement never spends more
  than its share;
* the exponential mechanism at ε is ε²/8-zCDP (it is ε-bounded-range: Cesar & Rogers 2021,
  "Bounding, concentrating, and truncating", Lemma 3.2; McKenna et al. 2022 use the same): ε is
  rounded *down*.

>>> rho = rho_for(1.0, 1e-6)
>>> 0.02 < float(rho) < 0.03, zcdp_to_epsilon(float(rho), 1e-6) <= 1.0
(True, True)
>>> sigma = sigma_for(Fraction(1, 8))       # Δ = 1: σ ≥ √(1/(2ρ)) = 2
>>> sigma, gaussian_rho(sigma)
(Fraction(2, 1), Fraction(1, 8))
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

from infodp._validate import as_positive, as_probability
from infodp.accounting.conversions import zcdp_to_epsilon
from infodp.errors import ParameterError

__all__ = [
    "PRECISION_BITS",
    "em_epsilon_for",
    "em_rho",
    "gaussian_rho",
    "rho_for",
    "sigma_for",
    "sqrt_down",
    "sqrt_up",
]

#: Amounts are rounded to multiples of 2^-PRECISION_BITS (in the safe direction).
PRECISION_BITS = 40


def sqrt_up(x: Fraction) -> Fraction:
    """The least multiple of 2^-PRECISION_BITS that is ≥ √x (exact integer arithmetic).

    >>> sqrt_up(Fraction(4)), sqrt_up(Fraction(2)) ** 2 >= 2
    (Fraction(2, 1), True)
    """
    scale = 4**PRECISION_BITS
    target = x * scale
    s = math.isqrt(math.ceil(target))
    while s * s < target:
        s += 1
    return Fraction(s, 2**PRECISION_BITS)


def sqrt_down(x: Fraction) -> Fraction:
    """The greatest multiple of 2^-PRECISION_BITS that is ≤ √x.

    >>> sqrt_down(Fraction(9, 4)), sqrt_down(Fraction(2)) ** 2 <= 2
    (Fraction(3, 2), True)
    """
    return Fraction(math.isqrt(math.floor(x * 4**PRECISION_BITS)), 2**PRECISION_BITS)


def rho_for(epsilon: object, delta: object) -> Fraction:
    """The largest ρ (rounded down) such that ρ-zCDP implies (``epsilon``, ``delta``)-DP."""
    eps = as_positive("epsilon", epsilon)
    d = as_probability("delta", delta)
    if not 0 < d < 1 or not math.isfinite(eps):
        raise ParameterError(
            "delta" if math.isfinite(eps) else "epsilon",
            delta if math.isfinite(eps) else epsilon,
            "0 < δ < 1 and a finite ε (synthetic data is released under zCDP)",
        )
    rho = _largest_rho(eps, d)
    if rho <= 0:
        raise ParameterError("epsilon", epsilon, "a budget large enough for a positive ρ")
    return rho


@functools.lru_cache(maxsize=256)
def _largest_rho(eps: float, d: float) -> Fraction:
    """:func:`rho_for` of checked floats, remembered: a function of its two inputs only, and
    its bisection converts ρ to ε about a hundred times (each a minimisation over 361 Rényi
    orders, seconds in all), while one release asks it twice and a process often asks the
    same (ε, δ) again."""
    # A margin of 1e-9 relative keeps the floating-point conversion on the safe side.
    target = eps * (1 - 1e-9)
    lo, hi = 0.0, max(eps, eps * eps)
    while zcdp_to_epsilon(hi, d) <= target:
        hi *= 2
    for _ in range(80):
        mid = (lo + hi) / 2
        if zcdp_to_epsilon(mid, d) <= target:
            lo = mid
        else:
            hi = mid
    return Fraction(math.floor(lo * 2**PRECISION_BITS), 2**PRECISION_BITS)


def sigma_for(rho: Fraction, sensitivity: int = 1) -> Fraction:
    """σ (rounded up) of a discrete Gaussian spending at most ``rho``: σ ≥ Δ/√(2ρ)."""
    if rho <= 0:
        raise ParameterError("rho", rho, "a positive share of the budget")
    return sqrt_up(Fraction(sensitivity**2) / (2 * rho))


def gaussian_rho(sigma: Fraction, sensitivity: int = 1) -> Fraction:
    """ρ = Δ²/(2σ²) of a discrete Gaussian (Canonne, Kamath & Steinke 2020, Theorem 4)."""
    return Fraction(sensitivity**2) / (2 * sigma * sigma)


def em_epsilon_for(rho: Fraction) -> Fraction:
    """ε (rounded down) of an exponential mechanism spending at most ``rho``: ε ≤ √(8ρ)."""
    return sqrt_down(8 * rho)


def em_rho(epsilon: Fraction) -> Fraction:
    """ρ = ε²/8 of the exponential mechanism (Cesar & Rogers 2021, Lemma 3.2)."""
    return epsilon * epsilon / 8
