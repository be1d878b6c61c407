"""An independent exponential mechanism for quantiles, point by point (test-only oracle).

Every grid point c of lo..hi is scored by brute force — the distance from q·n to the ranks
[#{x < c}, #{x <= c}] it occupies — and weighed by exp(−ε·score/(2Δ)) in 40-digit
arithmetic (McSherry & Talwar 2007; Dwork & Roth 2014, Def. 3.4), Δ = m·max(q, 1 − q) for
units of at most m rows (the constant of OpenDP's quantile scorer). Nothing here groups
points into runs or shares code with :mod:`infodp.mechanisms.quantile`;
:func:`mechanism_law` only spreads a law the mechanism built back over its points.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import mpmath
import numpy as np
from scipy import stats

from infodp.mechanisms.quantile import GridQuantileLaw


def _mp(x: Fraction) -> mpmath.mpf:
    return mpmath.mpf(x.numerator) / x.denominator


def brute_score(data: Sequence[int], c: int, q: Fraction, aim: int | None = None) -> Fraction:
    """Distance from q·n to the ranks [#{x < c}, #{x <= c}] point c occupies.

    ``aim`` (MIN and MAX): the target is min(aim, n/2) rows from the bottom (q = 0) or from
    the top (q = 1) instead of q·n.
    """
    n = len(data)
    below = sum(1 for x in data if x < c)
    at_most = sum(1 for x in data if x <= c)
    target = q * n
    if aim is not None:
        inside = min(Fraction(aim), Fraction(n, 2))
        target = inside if q == 0 else n - inside
    if below <= target <= at_most:
        return Fraction(0)
    return min(abs(below - target), abs(at_most - target))


def reference_law(
    data: Sequence[int],
    lo: int,
    hi: int,
    q: Fraction,
    epsilon: Fraction,
    rows_per_unit: int,
    aim: int | None = None,
) -> list[float]:
    """P(c) for every grid point c in lo..hi, straight from the definition (40 digits)."""
    delta = rows_per_unit * max(q, 1 - q)
    with mpmath.workdps(40):
        factor = mpmath.mpf(epsilon.numerator) / epsilon.denominator / (2 * _mp(delta))
        weights = [
            mpmath.exp(-factor * mpmath.mpf(s.numerator) / s.denominator)
            for s in (brute_score(data, c, q, aim) for c in range(lo, hi + 1))
        ]
        total = mpmath.fsum(weights)
        return [float(w / total) for w in weights]


def mechanism_law(
    law: GridQuantileLaw, lo: int, hi: int, epsilon: Fraction, delta: Fraction
) -> list[float]:
    """The law the sampler is given, spread back over the points (each run's points equal)."""
    out = [0.0] * (hi - lo + 1)
    scores = [Fraction(int(s), law.denominator) for s in law.scores]
    live = [s for s, m in zip(scores, law.mults.tolist(), strict=True) if m > 0]
    best = min(live)
    with mpmath.workdps(40):
        f = mpmath.mpf(epsilon.numerator) / epsilon.denominator / (2 * _mp(delta))
        point = [
            mpmath.exp(-f * mpmath.mpf((s - best).numerator) / (s - best).denominator)
            for s in scores
        ]
        total = mpmath.fsum(w * m for w, m in zip(point, law.mults.tolist(), strict=True))
        for start, mult, w in zip(law.starts.tolist(), law.mults.tolist(), point, strict=True):
            for c in range(start, start + mult):
                out[c - lo] = float(w / total)
    return out


def chi_square_pvalue(draws: Sequence[int], probs: Sequence[float], lo: int) -> float:
    """Pearson chi-square of the draws against ``probs``, cells below 5 expected pooled."""
    n = len(draws)
    counts = np.bincount(np.asarray(draws) - lo, minlength=len(probs))
    expected = np.asarray(probs) * n
    big = expected >= 5
    obs = [*counts[big].tolist(), int(counts[~big].sum())]
    exp = [*expected[big].tolist(), float(expected[~big].sum())]
    if exp[-1] == 0:
        assert obs[-1] == 0
        obs, exp = obs[:-1], exp[:-1]
    if len(exp) == 1:
        return 1.0
    return float(stats.chisquare(obs, exp).pvalue)
