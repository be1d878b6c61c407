"""δ(ε) of discrete Laplace releases and their compositions in closed form (Python floats).

The tight δ(ε) of a pair (P, Q) is the hockey-stick divergence E_P[(1 − e^{ε − L})_+] with
L = log P/Q the privacy loss (Balle, Barthe & Gaboardi 2018, Theorem 1; Dwork & Roth 2014,
Section 3.5). For the discrete Laplace pair P(k) ∝ r^{|k|}, Q(k) = P(k − Δ), r = e^{−λ},
λ = 1/scale, the loss takes Δ + 1 values: ε₀ = Δλ on k ≤ 0 (mass 1/(1+r)), −ε₀ on k ≥ Δ
(mass r^Δ/(1+r)) and λ(Δ − 2k) at 0 < k < Δ (mass (1−r)/(1+r)·r^k) (Ghosh, Roughgarden &
Sundararajan 2009 for the pair; the split of :func:`infodp.accounting.rdp.discrete_laplace_rdp`).
The atoms above a threshold form geometric series, so one pair's δ(ε) is O(1) for any Δ
(:func:`discrete_laplace_delta`), and a composition of several pairs is a sum over the
atoms of all but the largest one (:func:`composed_discrete_laplace_delta`).

Both directions of the pair have the same loss distribution (reflect k → Δ − k), so these
are the profile's δ(ε) for add and remove neighbours alike. The numpy PLD gives the same
quantity on a pessimistic grid; this is what a pure-ε query's leakage summary uses (its
attacker success needs δ(0), the total variation), with no array and no FFT.

>>> round(discrete_laplace_delta(1.0, 1, 0.0), 12) == round(math.tanh(0.5), 12)   # TV of RR_1
True
>>> discrete_laplace_delta(1.0, 1, 1.0)
0.0
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

__all__ = ["composed_discrete_laplace_delta", "discrete_laplace_delta"]

#: Most atom combinations summed explicitly for a composition (beyond it: no closed form).
MAX_COMBINATIONS = 4096

# Rounding allowance: each value is a short sum of terms of magnitude ≤ 1, computed with
# expm1; 1e-12 relative plus a few ulps of the terms' sizes covers its rounding.
_RTOL = 1e-12
_ULPS = 16 * sys.float_info.epsilon


def _hockey(lam: float, d: int, t: float) -> tuple[float, float]:
    """E_P[(1 − e^{t − L})_+] for one discrete Laplace pair at a real threshold t, and the
    sum of the magnitudes of its terms (for the rounding allowance).

    With ε₀ = Δλ: zero when t ≥ ε₀; 1 − e^t when t ≤ −ε₀ (every atom counts and
    E_P[e^{−L}] = 1); otherwise, with K = min(Δ − 1, ⌈(Δ − t/λ)/2⌉ − 1) the last middle atom
    above t, (1 + r)·value = −expm1(t − ε₀) [k ≤ 0] − r·expm1(−λK) − e^{t−ε₀}·expm1(λK)
    [0 < k ≤ K: Σ r^k and Σ r^k·e^{t − λ(Δ−2k)} = e^{t−ε₀} Σ e^{λk}, geometric series].
    """
    eps0 = d * lam
    if t >= eps0:
        return 0.0, 0.0
    if t <= -eps0:
        value = -math.expm1(t)
        return value, value
    r = math.exp(-lam)
    k_max = min(d - 1, math.ceil((d - t / lam) / 2) - 1) if d > 1 else 0
    terms = [-math.expm1(t - eps0)]
    if k_max >= 1:
        terms.append(-r * math.expm1(-lam * k_max))
        # e^{t−ε₀}·expm1(λK), as a difference once λK ≥ 1 (t − ε₀ + λK < 0: no overflow).
        grow = lam * k_max
        tilt = (
            math.exp(t - eps0) * math.expm1(grow)
            if grow < 1.0
            else (math.exp(t - eps0 + grow) - math.exp(t - eps0))
        )
        terms.append(-tilt)
    norm = 1.0 + r
    return math.fsum(terms) / norm, math.fsum(abs(x) for x in terms) / norm


def _round_up(value: float, size: float) -> float:
    return min(1.0, max(0.0, value) * (1.0 + _RTOL) + _ULPS * size)


def discrete_laplace_delta(scale: float, sensitivity: int, epsilon: float) -> float:
    """Tight δ(ε) of the discrete Laplace mechanism (``scale``, integer ``sensitivity``),
    rounded up. ε may be any real (δ(ε) for ε < 0 is the hockey stick at e^ε < 1).

    >>> discrete_laplace_delta(2.0, 3, 0.0) > discrete_laplace_delta(2.0, 3, 0.5) > 0.0
    True
    """
    value, size = _hockey(1.0 / scale, sensitivity, epsilon)
    return _round_up(value, size)


def _atoms(lam: float, d: int) -> list[tuple[float, float]]:
    """(loss, mass) of the Δ + 1 privacy-loss atoms under P."""
    r = math.exp(-lam)
    out = [(d * lam, 1.0 / (1.0 + r)), (-d * lam, math.exp(-lam * d) / (1.0 + r))]
    c = -math.expm1(-lam) / (1.0 + r)
    out += [(lam * (d - 2 * k), c * math.exp(-lam * k)) for k in range(1, d)]
    return out


def composed_discrete_laplace_delta(
    pairs: Sequence[tuple[float, int]], epsilon: float
) -> float | None:
    """Tight δ(ε) of the composition of discrete Laplace mechanisms given as (scale, Δ),
    rounded up; None when the atoms to enumerate exceed :data:`MAX_COMBINATIONS`.

    The total loss is the sum of independent losses (the product of the pairs), so
    δ(ε) = Σ_a P(L_rest = a)·E[(1 − e^{ε − a − L_big})_+]: the atoms of every pair but the
    one with the largest Δ are enumerated and the largest is summed in closed form.

    Two uses of binary randomized response RR_1 (Δ = 1) are no easier to tell apart than one
    (P⊗P and Q⊗Q differ only on (0, 0) and (1, 1): TV = p² − q² = p − q = tanh(1/2)):

    >>> both = composed_discrete_laplace_delta([(1.0, 1), (1.0, 1)], 0.0)
    >>> round(both, 12) == round(math.tanh(0.5), 12)
    True
    """
    if not pairs:
        return 0.0 if epsilon >= 0 else -math.expm1(epsilon)
    order = sorted(pairs, key=lambda p: p[1])
    big_scale, big_d = order[-1]
    combos: list[tuple[float, float]] = [(0.0, 1.0)]
    for scale, d in order[:-1]:
        if len(combos) * (d + 1) > MAX_COMBINATIONS:
            return None
        atoms = _atoms(1.0 / scale, d)
        combos = [(a + b, w * m) for a, w in combos for b, m in atoms]
    lam = 1.0 / big_scale
    values: list[float] = []
    size = 0.0
    for a, w in combos:
        v, s = _hockey(lam, big_d, epsilon - a)
        values.append(w * v)
        size += w * s
    return _round_up(math.fsum(values), size)
