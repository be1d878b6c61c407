"""The discrete Gaussian N_Z(0, σ²) as a distribution: its normaliser, pmf and tail bounds.

P[N = k] = e^{−k²/(2σ²)} / Z with Z = Σ_k e^{−k²/(2σ²)} (Canonne, Kamath & Steinke 2020,
Definition 1). The accountant's PLDs and Rényi sums, the mechanisms' tails and the curator's
information bounds all read the distribution from here, so each bound has one proof and one
copy.

>>> p = pmf(2.0, np.arange(-40, 41))
>>> round(float(p.sum()), 12), bool(p[40] == p.max())
(1.0, True)
>>> abs(log_normaliser_lower(2.0) - log_normaliser(2.0)) < 1e-12  # partial sum vs Poisson sum
True
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt

from infodp._scipy import special  # loaded on first use, as in infodp.accounting.pld

__all__ = [
    "EXACT_SIGMA",
    "WINDOW_WIDTH",
    "cdf_upper",
    "log_normaliser",
    "log_normaliser_lower",
    "log_outside_upper",
    "pmf",
]

ArrayF = npt.NDArray[np.float64]

#: Above this σ the discrete Gaussian PLD is built from blocks of consecutive k (below it, one
#: atom per k: about 80σ floats). The Euler-Maclaurin remainder of :func:`cdf_upper`
#: is ≤ 0.0069/σ⁴ (< 3e-17 here).
EXACT_SIGMA = 4096.0
#: Relative round-up of every CDF bound: covers the few roundings of Φ, φ and the sums.
_CDF_ROUND = 2.0**-40
#: E|He₄(Z)| ≤ √(E He₄(Z)²) = √(4!) (Cauchy-Schwarz; E He_n(Z)² = n! for the probabilists'
#: Hermite polynomials).
_HE4_ABS_MEAN = math.sqrt(24.0)

# Atom window half-width, in noise standard deviations, of the discrete subsampled Gaussian:
# the mass beyond it is ≤ e^{−75} ≈ 3e-33 and is bounded rigorously, not neglected.
WINDOW_WIDTH = math.sqrt(150.0)


@functools.lru_cache(maxsize=64)
def log_normaliser_lower(s: float) -> float:
    """A lower bound on log Z, Z = Σ_k e^{−k²/(2s²)}: the partial sum over |k| ≤ W, or for
    s > 4096 log(s√(2π)) (Z ≥ s√(2π) by Poisson summation, Canonne, Kamath & Steinke 2020,
    proof of Fact 20; the two agree to e^{−2π²s²} there), so memory stays bounded."""
    if s > EXACT_SIGMA:
        return math.log(s) + 0.5 * math.log(2 * math.pi)
    w = math.ceil(WINDOW_WIDTH * s) + 2
    ks = np.arange(-w, w + 1, dtype=np.float64)
    return float(special.logsumexp(-(ks * ks) / (2 * s * s)))


def log_outside_upper(s: float, c: float, lo: int, hi: int) -> float:
    """log of an upper bound on Σ_{k∉[lo, hi]} e^{−(k−c)²/(2s²)} / Z for lo ≤ c ≤ hi.

    The summand decreases in |k − c|, so Σ_{k ≥ hi+1} ≤ ∫_hi^∞ = √(2π)·s·Φ̄((hi − c)/s), likewise
    below lo; Z (Canonne, Kamath & Steinke 2020, Definition 1) is bounded below by a partial sum.
    """
    left = float(special.log_ndtr(-(c - lo) / s))
    right = float(special.log_ndtr(-(hi - c) / s))
    return float(
        np.logaddexp(left, right)
        + 0.5 * math.log(2 * math.pi)
        + math.log(s)
        - log_normaliser_lower(s)
    )


def log_normaliser(sigma: float) -> float:
    """log Z, Z = Σ_k e^{−k²/(2σ²)}, by Poisson summation: σ√(2π)(1 + 2Σ_{n≥1} e^{−2π²σ²n²})
    (Canonne, Kamath & Steinke 2020, proof of Fact 20; the theta-function identity).

    >>> ks = np.arange(-60, 61); direct = math.log(float(np.exp(-(ks * ks) / 18.0).sum()))
    >>> abs(log_normaliser(3.0) - direct) < 1e-12
    True
    """
    corr = sum(math.exp(-2 * math.pi**2 * sigma**2 * n * n) for n in range(1, 8))
    return math.log(sigma * math.sqrt(2 * math.pi)) + math.log1p(2 * corr)


def pmf(sigma: float, k: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """P[N = k] for N ~ N_Z(0, σ²) at the integers ``k``.

    >>> z = sum(math.exp(-k * k / 2.0) for k in range(-40, 41))  # σ = 1: Z by direct sum
    >>> abs(float(pmf(1.0, np.array([0]))[0]) - 1 / z) < 1e-15
    True
    """
    kf = k.astype(np.float64)
    return np.exp(-(kf * kf) / (2 * sigma * sigma) - log_normaliser(sigma))


def cdf_upper(s: float, b: ArrayF) -> ArrayF:
    """Upper bounds on P[N ≤ b] for N ~ N_Z(0, σ²) (discrete Gaussian, σ ≥ 1) at integers b.

    With f(x) = e^{−x²/(2σ²)}, P[N ≤ b] = Σ_{k≤b} f(k) / Z. Euler-Maclaurin with p = 4
    (e.g. Apostol 1999, "An elementary view of Euler's summation formula"; DLMF 2.10.1) on
    (−∞, b]: Σ_{k≤b} f(k) = ∫_{−∞}^b f + f(b)/2 + (1/12) f′(b) − (1/720) f‴(b) + R,
    |R| ≤ (2ζ(4)/(2π)⁴) ∫_{−∞}^b |f⁗| = (1/720) ∫_{−∞}^b |f⁗|. With u = x/σ,
    f⁽ⁿ⁾(x) = (−1)ⁿ Heₙ(u) f(x)/σⁿ, so ∫_{−∞}^b |f⁗| = σ^{−3} √(2π) E[|He₄(Z)|; Z ≤ u]; that
    is −He₃(u)φ(u) below the least root of He₄ and at most √24 everywhere.
    By Poisson summation Z = σ√(2π)(1 + 2 Σ_{n≥1} e^{−2π²σ²n²}) ≥ σ√(2π) (Canonne, Kamath &
    Steinke 2020, proof of Fact 20), so dividing by σ√(2π) only overstates:
    P[N ≤ b] ≤ Φ(u) + (φ(u)/σ)(1/2 − u/(12σ) + He₃(u)/(720σ³)) + E[|He₄(Z)|; Z ≤ u]/(720σ⁴).
    Rounded up by 2⁻⁴⁰ relative, clipped to [0, 1].

    >>> s = 3.0; ks = np.arange(-60, 61); p = np.exp(-ks**2 / (2 * s * s)); p /= p.sum()
    >>> exact = float(p[ks <= 2].sum()); bound = float(cdf_upper(s, np.array([2.0]))[0])
    >>> exact <= bound < exact + 1e-4
    True
    """
    u = np.asarray(b, dtype=np.float64) / s
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        phi = np.exp(-0.5 * u * u) / math.sqrt(2 * math.pi)
        he3 = np.where(phi > 0.0, u * (u * u - 3.0), 0.0)  # no inf·0 far out in the tails
        # Below 2^-1000 the Hermite term is negligible beside the remainder bound; avoid inf·0.
        corr = np.where(phi > 0.0, phi / s * (0.5 - u / (12 * s) + he3 / (720 * s**3)), 0.0)
        # ∫_{−∞}^u |He₄|φ: He₄ > 0 below its least root −√(3 + √6), where the integral is
        # −He₃(u)φ(u) (d/dt[He₃φ] = −He₄φ); above, E|He₄(Z)| ≤ √24 bounds it.
        low_tail = u <= -math.sqrt(3.0 + math.sqrt(6.0))
        spread = np.where(low_tail, -he3 * phi, _HE4_ABS_MEAN)
    value = special.ndtr(u) + corr + spread / (720 * s**4)
    return np.asarray(np.clip(value * (1.0 + _CDF_ROUND), 0.0, 1.0), dtype=np.float64)
