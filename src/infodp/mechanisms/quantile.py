"""The exponential mechanism sampled exactly over integer scores, and quantiles through it.

The curator's quantiles use the exponential mechanism (McSherry & Talwar 2007; Dwork & Roth
2014, Definition 3.4 and Theorem 3.10: ε-DP when every score has sensitivity Δ), sampled
*exactly* by inverse CDF over certified intervals of the weights exp(−(γ_j − γ_min)), refined
lazily (Knuth & Yao 1976) only when the uniform draw falls within the weights' error — so the
work does not depend on the data (a rejection loop would run a data-dependent number of
rounds). :class:`ExponentialQuantile` is the mechanism object (``profile()``, ``channel()``,
``release_rows``) the curator calls; the functions below are its samplers.

>>> from infodp.mechanisms.sampling import InsecureSeededSource
>>> src = InsecureSeededSource(0, i_understand_this_is_not_private=True)
>>> m = ExponentialQuantile(Fraction(1), 1)
>>> m.release([Fraction(0), Fraction(10**6)], source=src), m.profile().pure_epsilon()
(0, 1.0)
"""

from __future__ import annotations

import bisect
import decimal
import functools
import itertools
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from infodp._exact import float_up as _up
from infodp.errors import ParameterError
from infodp.mechanisms.base import ChannelView, Mechanism
from infodp.mechanisms.sampling import RandomSource, require_secure_source

if TYPE_CHECKING:
    from infodp.accounting import PrivacyProfile

__all__ = [
    "ExponentialQuantile",
    "GridQuantileLaw",
    "exponential_mechanism",
    "exponential_mechanism_rows",
    "exponential_mechanism_scaled",
    "extreme_target",
    "grid_quantile",
    "grid_quantile_law",
    "score_sensitivity",
]


@dataclass(frozen=True)
class ExponentialQuantile(Mechanism):
    """Exponential mechanism over candidates scored by *lower is better* integer-ratio scores.

    Picks j with probability ∝ exp(−ε·score_j/(2Δ)) (McSherry & Talwar 2007): ε-DP when each
    score moves by at most Δ between neighbours (Dwork & Roth 2014, Theorem 3.10). For a
    quantile q the candidates are every point of a release grid, scored on both sides
    (:func:`grid_quantile_law`), of sensitivity Δ = the rows per unit; at q = 0 and 1 (MIN
    and MAX) :meth:`release_grid` aims at the rank :func:`extreme_target` from the extreme.
    ``epsilon`` is exact (a Fraction), so the charge and the sampler use the same number.
    """

    epsilon: Fraction
    sensitivity: int = 1

    def __post_init__(self) -> None:
        eps = Fraction(self.epsilon)
        if eps <= 0:
            raise ParameterError("epsilon", float(eps), "a positive number")
        if isinstance(self.sensitivity, bool) or not (
            isinstance(self.sensitivity, int) and self.sensitivity >= 1
        ):
            raise ParameterError("sensitivity", self.sensitivity, "an integer >= 1")
        object.__setattr__(self, "epsilon", eps)

    def profile(self) -> PrivacyProfile:
        """``pure_dp_profile(ε)`` (ε rounded up to a float)."""
        from infodp.accounting import pure_dp_profile

        return pure_dp_profile(_up(self.epsilon))

    def release(self, value: Any, *, source: Any = None) -> int:
        """The chosen index for the scores ``value`` (lower is better), exactly."""
        return exponential_mechanism(
            [Fraction(v) for v in value], self.epsilon, Fraction(self.sensitivity), source
        )

    def release_rows(
        self, rows: npt.NDArray[np.int64], denominator: int, *, source: Any = None
    ) -> list[int]:
        """One independent draw per row of integer scores ``rows / denominator``."""
        return exponential_mechanism_rows(
            rows, denominator, self.epsilon, Fraction(self.sensitivity), source
        )

    def release_grid(
        self,
        values: npt.NDArray[np.int64],
        counts: npt.NDArray[np.int64],
        lo: int,
        hi: int,
        q: Fraction,
        *,
        source: Any = None,
    ) -> int:
        """The q-quantile as a grid point of lo..hi for data ``values`` × ``counts``, exactly.

        >>> from infodp.mechanisms.sampling import InsecureSeededSource
        >>> src = InsecureSeededSource(0, i_understand_this_is_not_private=True)
        >>> m = ExponentialQuantile(Fraction(10), 1)
        >>> m.release_grid(np.array([90]), np.array([40]), 0, 100, Fraction(1, 2), source=src)
        90
        """
        q = Fraction(q)
        target = None
        if q in (0, 1):  # MIN and MAX: aim just inside the extreme (extreme_target)
            target = extreme_target(self.epsilon, self.sensitivity, hi - lo + 1)
        law = grid_quantile_law(values, counts, lo, hi, q, target=target)
        return grid_quantile(law, self.epsilon, score_sensitivity(self.sensitivity, q), source)

    def simulate(self, value: Any, size: int, rng: Any = None) -> Any:
        """Simulation only, NOT private: numpy draws of the chosen index."""
        from infodp.mechanisms.exponential import ExponentialMechanism

        return ExponentialMechanism(_up(self.epsilon), float(self.sensitivity)).simulate(
            [-float(v) for v in value], size, rng
        )

    def probabilities(self, scores: Sequence[float]) -> npt.NDArray[np.float64]:
        """The output law: softmax(−ε·scores/(2Δ))."""
        from infodp.mechanisms.exponential import ExponentialMechanism

        m = ExponentialMechanism(float(self.epsilon), float(self.sensitivity))
        return m.probabilities([-float(v) for v in scores])

    def channel(self, scores: Sequence[Sequence[float]]) -> ChannelView:
        """Exact channel: one row per neighbouring dataset's score vector."""
        from infodp.mechanisms.exponential import ExponentialMechanism

        m = ExponentialMechanism(float(self.epsilon), float(self.sensitivity))
        return m.channel([[-float(v) for v in row] for row in scores])


def exponential_mechanism(
    scores: Sequence[Fraction],
    epsilon: Fraction,
    sensitivity: Fraction,
    source: RandomSource | None,
) -> int:
    """Index j with probability ∝ exp(−ε·score_j / (2Δ)) (lower score is better), exactly.

    McSherry & Talwar (2007); Dwork & Roth (2014), Def. 3.4 and Thm 3.10 (ε-DP when every
    score has sensitivity Δ). Sampled by exact inverse CDF (see :func:`_inverse_cdf`).

    >>> from infodp.mechanisms.sampling import InsecureSeededSource
    >>> src = InsecureSeededSource(3, i_understand_this_is_not_private=True)
    >>> exponential_mechanism([Fraction(0), Fraction(10**6)], Fraction(1), Fraction(1), src)
    0
    """
    if not scores:
        raise ParameterError("scores", scores, "a non-empty sequence")
    scores = [Fraction(x) for x in scores]
    denominator = math.lcm(*(x.denominator for x in scores))
    return exponential_mechanism_scaled(
        [int(x * denominator) for x in scores], denominator, epsilon, sensitivity, source
    )


def exponential_mechanism_scaled(
    numerators: Sequence[int] | npt.NDArray[np.int64],
    denominator: int,
    epsilon: Fraction,
    sensitivity: Fraction,
    source: RandomSource | None,
) -> int:
    """:func:`exponential_mechanism` for scores ``numerators[j] / denominator`` (integers).

    The form the curator's quantiles use: scores |b·#{x < t_j} − a·n| / b for q = a/b, so no
    fraction is formed per candidate unless an exact refinement round is needed.

    >>> from infodp.mechanisms.sampling import InsecureSeededSource
    >>> src = InsecureSeededSource(3, i_understand_this_is_not_private=True)
    >>> exponential_mechanism_scaled([0, 3 * 10**6], 3, Fraction(1), Fraction(1), src)
    0
    """
    if len(numerators) == 0:
        raise ParameterError("scores", list(numerators), "a non-empty sequence")
    if not (isinstance(denominator, int) and denominator > 0):
        raise ParameterError("denominator", denominator, "a positive integer")
    src = require_secure_source(source)
    factor = Fraction(epsilon) / (2 * Fraction(sensitivity) * denominator)
    # γ_j = shifted_j · factor; as floats with relative error ≤ 3·2^−53 (two roundings and a
    # product), far inside the first round's 2^−39 margin.
    f = float(factor) if factor < 2**1000 else math.inf
    if isinstance(numerators, np.ndarray) and numerators.dtype == np.int64:
        shifted_arr = numerators - numerators.min()
        zero = shifted_arr == 0
        with np.errstate(invalid="ignore", over="ignore"):
            approx = shifted_arr.astype(np.float64) * f

        def exact() -> list[Fraction]:
            return [int(v) * factor for v in shifted_arr.tolist()]

    else:
        low = min(numerators)
        shifted = [int(v) - low for v in numerators]
        big = 2**1000
        with np.errstate(invalid="ignore", over="ignore"):
            approx = np.array([float(v) if v < big else math.inf for v in shifted]) * f
        zero = np.array([v == 0 for v in shifted])

        def exact() -> list[Fraction]:
            return [v * factor for v in shifted]

    approx = np.where(zero, 0.0, approx)

    return _inverse_cdf(approx, exact, src)


#: Decimal digits of the weights in the first exact refinement round of :func:`_inverse_cdf`.
_EM_DIGITS = 40
#: Fixed-point bits of the first (floating-point) round.
_EM_BITS = 52


def _float_round(approx: npt.NDArray[np.float64]) -> tuple[list[int], list[int], int]:
    """Certified integer bounds on 2^52·exp(−γ_j) from float64 approximations of γ_j.

    ``approx`` has relative error ≤ 2^−50, so for γ ≤ 51 its absolute error is below
    5·10^−14, and numpy's exp adds a few ulp: each weight's relative error is below 10^−13,
    bounded here by 2^−39 > 1.8·10^−12 plus two units. Where approx > 50.001 the exact γ
    exceeds 50 and the weight lies in [0, 1] units (exp(−50)·2^52 < 1).
    """
    capped = approx > 50.001
    ws = np.exp(-np.minimum(approx, 50.001)) * float(2**_EM_BITS)
    v = ws.astype(np.int64)
    m = (v >> 39) + 2
    lows = np.where(capped, 0, np.maximum(0, v - m))
    highs = np.where(capped, 1, v + m + 1)
    return lows.tolist(), highs.tolist(), 2**_EM_BITS


def _decimal_round(gammas: Sequence[Fraction], digits: int) -> tuple[list[int], list[int], int]:
    """Certified integer bounds on 10^digits·exp(−γ_j) from correctly rounded decimal exp."""
    scale = 10**digits
    ctx = decimal.Context(prec=digits + 12, rounding=decimal.ROUND_HALF_EVEN)
    cap = Fraction(math.ceil((digits + 5) * math.log(10)) + 1)
    lows: list[int] = []
    highs: list[int] = []
    for g in gammas:
        capped = g > cap
        x = cap if capped else g
        e = ctx.exp(-ctx.divide(decimal.Decimal(x.numerator), decimal.Decimal(x.denominator)))
        w = int(ctx.to_integral_value(ctx.multiply(e, decimal.Decimal(scale))))
        # |w − scale·exp(−x)| ≤ 1.5 (relative error ≤ (x + 2)·10^−(digits+11) < 10^−9 of a
        # weight ≤ 1, plus rounding to an integer); a capped weight lies in [0, w].
        lows.append(0 if capped else max(0, w - 2))
        highs.append(w + 2)
    return lows, highs, scale


def _draw_bits(src: RandomSource, extra: int) -> int:
    nbytes = (extra + 7) // 8
    return int.from_bytes(src.random_bytes(nbytes), "big") >> (8 * nbytes - extra)


def _inverse_cdf(
    approx: npt.NDArray[np.float64],
    exact: Callable[[], list[Fraction]],
    src: RandomSource,
    mults: Sequence[int] | None = None,
) -> int:
    """Index j with probability w_j·exp(−γ_j) / Σ_i w_i·exp(−γ_i), exactly, in data-independent
    work (w_j = ``mults[j]``, a non-negative integer, default 1).

    Inverse-CDF sampling with certified interval arithmetic (the lazy-refinement idea of
    Knuth & Yao 1976): each weight exp(−γ_j) (at most 1, as γ ≥ 0) is bracketed by integers
    in a fixed-point scale, the uniform U by its first bits; index j is returned only when
    U·T lies certainly between the cumulative weights C_j and C_{j+1}. Otherwise the weights
    are recomputed exactly-bracketed (decimal, 40, 80, ... digits, from the exact γ of
    ``exact()``) and more bits of the same U are drawn (:func:`_refine`), so the distribution
    is exact. The first round (float64 weights with a 2^−39 relative margin, ``approx``
    holding γ to 2^−50) does the same work for every input of the same length — one
    vectorised ``exp``, two running sums and a binary search — and a second round happens
    with probability below about n·2^−38, so the running time does not reveal the data.
    Some j with γ_j = 0 must have w_j ≥ 1 (the total is then at least one unit).
    """
    n = len(approx)
    lows, highs, scale = _float_round(approx)
    lows, highs, total = _weighted(lows, highs, scale, n, mults)
    c_low = list(itertools.accumulate(lows, initial=0))
    c_high = list(itertools.accumulate(highs, initial=0))
    extra = total.bit_length() + 64
    u = _draw_bits(src, extra)
    j = _decide(u, extra, c_low, c_high)
    return j if j >= 0 else _refine(u, extra, exact, n, src, mults)


def _weighted(
    lows: list[int], highs: list[int], scale: int, n: int, mults: Sequence[int] | None
) -> tuple[list[int], list[int], int]:
    """The brackets times the multiplicities, and the largest possible total (scale·Σw)."""
    if mults is None:
        return lows, highs, scale * n
    return (
        list(map(operator.mul, lows, mults)),
        list(map(operator.mul, highs, mults)),
        scale * sum(mults),
    )


def _decide(u: int, bits: int, c_low: Any, c_high: Any) -> int:
    """The index U·T certainly falls in, or −1 (U known to ``bits`` bits as u)."""
    n = len(c_low) - 1
    # U·T lies in [u·T_low, (u + 1)·T_high] / 2^bits; C·2^bits ≤ x ⟺ C ≤ x >> bits.
    a = (u * int(c_low[n])) >> bits
    b = ((u + 1) * int(c_high[n])) >> bits
    j = bisect.bisect_right(c_high, a) - 1  # the largest j with C_high_j ≤ U·T surely
    # (c_low/c_high: lists of ints, or int64 rows whose values stay below 2^63)
    return j if 0 <= j < n and b < int(c_low[j + 1]) else -1


def _refine(
    u: int,
    bits: int,
    exact: Callable[[], list[Fraction]],
    n: int,
    src: RandomSource,
    mults: Sequence[int] | None = None,
) -> int:
    """Continue :func:`_inverse_cdf` with the same U: decimal rounds of growing precision."""
    gammas = exact()
    rounds = 1
    while True:
        lows, highs, scale = _decimal_round(gammas, _EM_DIGITS * 2 ** (rounds - 1))
        lows, highs, total = _weighted(lows, highs, scale, n, mults)
        rounds += 1
        c_low = list(itertools.accumulate(lows, initial=0))
        c_high = list(itertools.accumulate(highs, initial=0))
        extra = total.bit_length() + 64
        u = (u << extra) | _draw_bits(src, extra)
        bits += extra
        j = _decide(u, bits, c_low, c_high)
        if j >= 0:
            return j


def _exact_row(row: npt.NDArray[np.int64], factor: Fraction) -> list[Fraction]:
    return [int(x) * factor for x in row.tolist()]


def exponential_mechanism_rows(
    rows: npt.NDArray[np.int64],
    denominator: int,
    epsilon: Fraction,
    sensitivity: Fraction,
    source: RandomSource | None,
) -> list[int]:
    """One independent :func:`exponential_mechanism_scaled` draw per row of ``rows``.

    The same distribution and randomness use per row, with the first round vectorised over
    all rows (numpy exp and running sums in int64, safe for up to 2047 candidates), so a
    GROUP BY with thousands of quantile cells does not hold the interpreter for long.

    >>> from infodp.mechanisms.sampling import InsecureSeededSource
    >>> src = InsecureSeededSource(3, i_understand_this_is_not_private=True)
    >>> rows = np.array([[0, 10**6], [10**6, 0]], dtype=np.int64)
    >>> exponential_mechanism_rows(rows, 1, Fraction(1), Fraction(1), src)
    [0, 1]
    """
    src = require_secure_source(source)
    g, n = rows.shape
    if g == 0:
        return []
    if n == 0:
        raise ParameterError("scores", [], "a non-empty sequence")
    if n * (2**_EM_BITS + 2**15) >= 2**63:
        return [
            exponential_mechanism_scaled(r, denominator, epsilon, sensitivity, src) for r in rows
        ]
    factor = Fraction(epsilon) / (2 * Fraction(sensitivity) * denominator)
    f = float(factor) if factor < 2**1000 else math.inf
    shifted = rows - rows.min(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", over="ignore"):
        approx = np.where(shifted == 0, 0.0, shifted.astype(np.float64) * f)
    capped = approx > 50.001
    v = (np.exp(-np.minimum(approx, 50.001)) * float(2**_EM_BITS)).astype(np.int64)
    m = (v >> 39) + 2
    c_low = np.zeros((g, n + 1), dtype=np.int64)
    c_high = np.zeros((g, n + 1), dtype=np.int64)
    np.cumsum(np.where(capped, 0, np.maximum(0, v - m)), axis=1, out=c_low[:, 1:])
    np.cumsum(np.where(capped, 1, v + m + 1), axis=1, out=c_high[:, 1:])
    extra = (2**_EM_BITS * n).bit_length() + 64
    out: list[int] = []
    for r in range(g):
        u = _draw_bits(src, extra)
        j = _decide(u, extra, c_low[r], c_high[r])
        if j >= 0:
            out.append(j)
            continue
        out.append(_refine(u, extra, functools.partial(_exact_row, shifted[r], factor), n, src))
    return out


# -- quantiles over a release grid -------------------------------------------------------------


@dataclass(frozen=True)
class GridQuantileLaw:
    """The exponential mechanism's law for a q-quantile over the grid points lo..hi, grouped.

    Entry j stands for the ``mults[j]`` consecutive grid points from ``starts[j]`` that share
    the score ``scores[j] / denominator``: the gaps strictly between consecutive distinct data
    values (and below the least, above the greatest), and each distinct value itself. A grid
    point's probability is exp(−ε·score/(2Δ)) / Z (McSherry & Talwar 2007); an entry's is
    ``mults[j]`` times that — choosing an interval between order statistics with probability
    ∝ length × exp(−ε·score/(2Δ)), then a point uniformly within it, is Smith (2011)'s
    mechanism restricted to the grid.
    """

    starts: npt.NDArray[np.int64]
    mults: npt.NDArray[np.int64]
    scores: npt.NDArray[np.int64] | list[int]
    denominator: int


def score_sensitivity(rows_per_unit: int, q: Fraction) -> Fraction:
    """Δ of the q-quantile score when one unit (at most ``rows_per_unit`` rows) is added or
    removed: each row moves every score by at most max(q, 1 − q) (see :func:`grid_quantile_law`;
    the same constant as OpenDP's quantile scorer, and as for the one-sided |L − q·n|).

    >>> score_sensitivity(1, Fraction(1, 2)), score_sensitivity(3, Fraction(9, 10))
    (Fraction(1, 2), Fraction(27, 10))
    """
    q = Fraction(q)
    return rows_per_unit * max(q, 1 - q)


#: The level β₀ of the rank MIN and MAX aim at (:func:`extreme_target`): a point beyond the
#: data is drawn with probability at most about β₀ (when the group has ≥ 2t rows).
TARGET_BETA = Fraction(1, 20)


def extreme_target(epsilon: Fraction, rows_per_unit: int, points: int) -> int:
    """The rank t (rows from the extreme) that MIN and MAX aim at, from public facts only.

    t = ⌈(2Δ/ε)(ln K + ln(1/β₀))⌉ with Δ = m (the score's sensitivity at q = 0 or 1), K the
    grid's number of points and β₀ = ``TARGET_BETA`` (1/20): the exponential mechanism's
    utility bound (McSherry & Talwar 2007; Dwork & Roth 2014, Theorem 3.11): the released
    point's score exceeds the best (0) by (2Δ/ε)(ln K + ln(1/β₀)) with probability at most
    β₀. Every point beyond the extreme scores t when the target is rank t, so with
    probability ≥ 1 − β₀ the draw is not beyond the data (and it has at most t + r rows
    past it, r the rank error: :func:`grid_quantile_law`). Aiming at rank 0 instead (the
    plain q = 0 quantile) scores every point from the declared bound to the extreme 0, and
    the draw is nearly uniform over them at every ε.

    >>> extreme_target(Fraction(1), 1, 101) == math.ceil(2 * (math.log(101) + math.log(20)))
    True
    """
    scale = float(2 * Fraction(rows_per_unit) / Fraction(epsilon))
    return math.ceil(scale * (math.log(points) + math.log(float(1 / TARGET_BETA))))


def grid_quantile_law(
    values: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int64],
    lo: int,
    hi: int,
    q: Fraction,
    *,
    target: int | None = None,
) -> GridQuantileLaw:
    """Entries (gaps and tied values) and their two-sided scores for the q-quantile.

    ``values`` are the distinct data values in grid units, ascending, within [lo, hi];
    ``counts`` their multiplicities. The score of a grid point c counts both sides of it:
    with L = #{x < c}, E = #{x = c}, n rows, it is the distance from q·n to the ranks c
    occupies, max(L − q·n, q·n − (L + E), 0) — zero exactly at the q-quantiles, so a value
    shared by many rows is scored by all of them (a score that counts one side only,
    |L − q·n|, ties every candidate on constant data). Adding or removing one row moves L − q·n
    and q·n − (L + E) each by at most max(q, 1 − q) ≤ 1 (:func:`score_sensitivity`), as for
    the one-sided score. Equivalently, L ≤ q·n + s and #{x > c} ≤ (1 − q)·n + s for a score s:
    its rank error. Scores are integers over q's denominator.

    ``target`` (MIN and MAX, q = 0 or 1 only; :func:`extreme_target`): the point aimed at is
    τ = min(t, n/2) rows from the extreme instead of q·n = 0 (or n), i.e. the score of c is
    max(L − τ, τ − (L + E), 0) for q = 0 and the same counted from the top for q = 1. Its
    sensitivity is still 1 per row: adding a row moves L (or L + E) by 0 or 1 and τ by 0 to
    1/2, so each term moves by at most 1 (the n/2 keeps a group of fewer than 2t rows from
    being answered beyond its other end). A score s means at most τ + s ≤ t + s rows lie
    past the point on the extreme's side. Scores are then integers over 2.

    >>> law = grid_quantile_law(np.array([3]), np.array([5]), 0, 9, Fraction(1, 2))
    >>> law.starts.tolist(), law.mults.tolist(), [int(s) for s in law.scores]
    ([0, 3, 4], [3, 1, 6], [5, 0, 5])
    >>> law = grid_quantile_law(np.array([2, 5]), np.array([1, 9]), 0, 9, 0, target=3)
    >>> [int(s) / law.denominator for s in law.scores]  # τ = min(3, 10/2) = 3
    [3.0, 2.0, 2.0, 0.0, 7.0]
    """
    q = Fraction(q)
    if not 0 <= q <= 1:
        raise ParameterError("q", float(q), "a number in [0, 1]")
    if target is not None and (q not in (0, 1) or target < 0):
        raise ParameterError("target", target, "a rank >= 0, for q = 0 or q = 1 only")
    v = np.asarray(values, dtype=np.int64)
    c = np.asarray(counts, dtype=np.int64)
    d = len(v)
    if len(c) != d or (d and (int(v[0]) < lo or int(v[-1]) > hi or bool((np.diff(v) <= 0).any()))):
        raise ParameterError(
            "values", d, "distinct ascending grid values within [lo, hi], one count each"
        )
    if d and int(c.min()) < 1:
        raise ParameterError("counts", int(c.min()), "positive integers")
    b = q.denominator
    n = int(c.sum())
    an = q.numerator * n  # the aimed rank q·n, times b
    if target is not None:
        # The aimed rank over b = 2: 2τ = min(2t, n) rows from the bottom for MIN, 2(n − τ)
        # for MAX.
        b, twice = 2, min(2 * target, n)
        an = twice if q == 0 else 2 * n - twice
    # Interleaved: gap 0, value 0, gap 1, ..., value d − 1, gap d.
    starts = np.empty(2 * d + 1, dtype=np.int64)
    ends = np.empty(2 * d + 1, dtype=np.int64)
    starts[0] = lo
    starts[2::2] = v + 1
    starts[1::2] = v
    ends[-1] = hi
    ends[0:-1:2] = v - 1
    ends[1::2] = v
    mults = ends - starts + 1
    below = np.zeros(d + 1, dtype=np.int64)
    np.cumsum(c, out=below[1:])
    left = np.empty(2 * d + 1, dtype=np.int64)  # L = rows below the entry
    left[0::2] = below
    left[1::2] = below[:-1]
    ties = np.zeros(2 * d + 1, dtype=np.int64)  # E = rows at the entry
    ties[1::2] = c
    scores: npt.NDArray[np.int64] | list[int]
    if b * max(n, 1) < 2**62:
        scores = np.maximum(np.maximum(left * b - an, an - (left + ties) * b), 0)
    else:  # exact in Python integers
        scores = [
            max(b * int(lt) - an, an - b * (int(lt) + int(e)), 0)
            for lt, e in zip(left.tolist(), ties.tolist(), strict=True)
        ]
    return GridQuantileLaw(starts, mults, scores, b)


def grid_quantile(
    law: GridQuantileLaw, epsilon: Fraction, sensitivity: Fraction, source: RandomSource | None
) -> int:
    """A grid point drawn from ``law``: P(c) ∝ exp(−ε·score(c)/(2Δ)), exactly.

    An entry by exact inverse CDF over mults × exp(−γ) (:func:`_inverse_cdf`), then a point
    uniformly within it (:func:`~infodp.mechanisms.sampling.uniform_int`); ε-DP by Dwork &
    Roth (2014), Theorem 3.10, over the data-independent candidate set lo..hi, and by
    Theorem 3.11 the point's score exceeds the least by more than (2Δ/ε)(ln|R| + t) with
    probability at most e^−t, |R| = hi − lo + 1.

    >>> from infodp.mechanisms.sampling import InsecureSeededSource
    >>> src = InsecureSeededSource(0, i_understand_this_is_not_private=True)
    >>> law = grid_quantile_law(np.array([3]), np.array([40]), 0, 9, Fraction(1, 2))
    >>> grid_quantile(law, Fraction(10), Fraction(1), src)
    3
    """
    from infodp.mechanisms.sampling import uniform_int

    src = require_secure_source(source)
    factor = Fraction(epsilon) / (2 * Fraction(sensitivity) * law.denominator)
    f = float(factor) if factor < 2**1000 else math.inf
    live = law.mults > 0
    if isinstance(law.scores, np.ndarray):
        low = int(law.scores[live].min())
        shifted = law.scores - low
        with np.errstate(invalid="ignore", over="ignore"):
            approx = np.where(shifted <= 0, 0.0, shifted.astype(np.float64) * f)
        shifted_list: list[int] = shifted.tolist()
    else:
        low = min(s for s, ok in zip(law.scores, live.tolist(), strict=True) if ok)
        shifted_list = [s - low for s in law.scores]
        big = 2**1000
        with np.errstate(invalid="ignore", over="ignore"):
            approx = np.array([float(x) if x < big else math.inf for x in shifted_list]) * f
        approx = np.where(np.array(shifted_list) <= 0, 0.0, approx)
    # A gap of length 0 may score below every live entry: its weight is 0 whatever γ is.
    approx = np.maximum(approx, 0.0)

    def exact() -> list[Fraction]:
        return [max(x, 0) * factor for x in shifted_list]

    mults = law.mults.tolist()
    j = _inverse_cdf(approx, exact, src, mults)
    return int(law.starts[j]) + uniform_int(mults[j], src)
