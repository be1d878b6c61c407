"""The global information budget: how much a release can tell about the *whole table*.

Per-individual ε bounds what is learnt about one person; “Differential Privacy and Information
Theory” (2022) ("to fix a broken wifi")
also asks how much is learnt about the table as a whole, which ε alone does not limit (many
people × small leak each). For an additive-noise release Y = X + N of an aggregate X that can
take any value in a range of width A, the Shannon information I(X; Y) (α = 1, nats) is at most

* Laplace(b): ln(1 + A/(2b)) — h(Y) ≤ ln(2e·E|Y − c|) (the Laplace maximises entropy under a
  first-absolute-moment constraint; Cover & Thomas 2006, Thm 12.1.1) with
  E|Y − c| ≤ A/2 + b, minus h(N) = ln(2eb);
* Gaussian(σ): ½ ln(1 + A²/(4σ²)) — Var X ≤ A²/4 and the Gaussian channel capacity
  (Shannon 1948; Cover & Thomas 2006, Thm 9.1.1);
* discrete Laplace (the noise the curator really adds, P(k) ∝ e^(−|k|/b) on the integers):
  I(X; X+N) = I(X; X+N+U) for an independent U ~ Uniform[0, 1) (X+N = ⌊X+N+U⌋), so
  I ≤ ln(2e(A/2 + E|N| + 1/4)) − H(N) with H(N) the entropy of N, and also I ≤ ln(A + 1)
  because X takes at most A + 1 integer values;

and information adds over conditionally independent releases (independent noise given the
table; chain rule). A dataset may carry a cap in bits that the ledger enforces across all
analysts.

>>> round(laplace_information(100.0, 10.0), 6)  # ln(1 + 100/20)
1.791759
>>> round(gaussian_information(2.0, 1.0), 6)  # ½ ln 2
0.346574
>>> discrete_laplace_information(0, 3.0)  # a data-independent value carries nothing
0.0
"""

from __future__ import annotations

import math

from infodp._validate import as_nonnegative, as_positive
from infodp.units import LN2, nats_to_bits

__all__ = [
    "BITS",
    "discrete_gaussian_information",
    "discrete_laplace_information",
    "gaussian_information",
    "laplace_information",
    "to_bits",
]

#: Nats per bit (kept as a name of this module; the value lives in :mod:`infodp.units`).
BITS = LN2


def laplace_information(value_range: float, scale: float) -> float:
    """Upper bound ln(1 + A/(2b)) nats on I(X; X + Laplace(b)) for X in a range of width A."""
    a = as_nonnegative("value_range", value_range)
    b = as_positive("scale", scale)
    return math.log1p(a / (2.0 * b))


def gaussian_information(value_range: float, sigma: float) -> float:
    """Upper bound ½ ln(1 + A²/(4σ²)) nats on I(X; X + N(0, σ²)) for X in a range of width A."""
    a = as_nonnegative("value_range", value_range)
    s = as_positive("sigma", sigma)
    return 0.5 * math.log1p(a * a / (4.0 * s * s))


def discrete_laplace_information(value_range: float, scale: float) -> float:
    """Upper bound (nats) on I(X; X + N) for integer X in a range of width A and N discrete Laplace.

    min(ln(A + 1), ln(2e(A/2 + E|N| + 1/4)) − H(N)), rounded up by one ulp.

    >>> b, a = 1e4, 1e5  # large scale: close to the continuous ln(1 + A/(2b))
    >>> abs(discrete_laplace_information(a, b) - math.log1p(a / (2 * b))) < 1e-4
    True
    """
    a = as_nonnegative("value_range", value_range)
    b = as_positive("scale", scale)
    if a == 0:
        return 0.0
    moment = a / 2.0 + _dlap_abs_mean(b) + 0.25
    bound = math.log(2.0 * math.e * moment) - _dlap_entropy(b)
    bound = min(max(bound, 0.0), math.log1p(a))
    return math.nextafter(bound, math.inf)


def discrete_gaussian_information(value_range: float, sigma: float) -> float:
    """Upper bound (nats) on I(X; X + N) for integer X in a range of width A, N ~ N_Z(0, σ²).

    As for the discrete Laplace, I(X; X+N) = I(X; X+N+U) ≤ h(X+N+U) − H(N) with
    h(X+N+U) ≤ ½ ln(2πe(A²/4 + σ² + 1/12)) (the Gaussian maximises entropy for a variance;
    Var N ≤ σ², Canonne, Kamath & Steinke 2020, Prop. 19) and H(N) = ln Z + E[N²]/(2σ²) ≥
    ln Z + 0.49 for σ ≥ 1 (E[N²] is within 10⁻⁶ of σ² there, by Poisson summation); also
    I ≤ ln(A + 1). Rounded up by one ulp.

    >>> s, a = 1e3, 1e4  # close to the continuous ½ ln(1 + A²/(4σ²)) (+0.01 margin)
    >>> 0 <= discrete_gaussian_information(a, s) - gaussian_information(a, s) < 0.02
    True
    """
    from infodp.accounting.discrete_gaussian import log_normaliser

    a = as_nonnegative("value_range", value_range)
    s = as_positive("sigma", sigma)
    if a == 0:
        return 0.0
    bound = math.log1p(a)
    if s >= 1.0:
        h_y = 0.5 * math.log(2 * math.pi * math.e * (a * a / 4.0 + s * s + 1.0 / 12.0))
        bound = min(bound, max(0.0, h_y - (log_normaliser(s) + 0.49)))
    return math.nextafter(bound, math.inf)


def _dlap_abs_mean(scale: float) -> float:
    """E|Y| = 2p / (1 − p²) for the discrete Laplace, p = e^(−1/scale).

    >>> round(_dlap_abs_mean(1e6) / 1e6, 6)  # -> scale for a large scale (continuous Laplace)
    1.0
    """
    t = 1.0 / scale
    # 2p/(1-p^2) = 1/sinh(1/scale), stable for large and small scales.
    return 1.0 / math.sinh(t) if t < 700 else 0.0


def _dlap_entropy(scale: float) -> float:
    """Shannon entropy (nats) of the discrete Laplace: ln((1+p)/(1−p)) + E|Y|/scale.

    −ln P(y) = ln((1+p)/(1−p)) + |y|/scale, averaged over y. ln((1+p)/(1−p)) = ln coth(1/(2 scale)).

    >>> abs(_dlap_entropy(1e4) - (1 + math.log(2e4))) < 1e-6  # continuous Laplace: 1 + ln(2b)
    True
    """
    t = 1.0 / scale
    if t > 700:
        return 0.0
    return -math.log(math.tanh(t / 2.0)) + _dlap_abs_mean(scale) * t


def to_bits(nats: float) -> float:
    """Nats → bits (÷ ln 2).

    >>> to_bits(math.log(2))
    1.0
    """
    return nats_to_bits(nats)
