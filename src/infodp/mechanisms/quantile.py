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
    "exponential_mechanism",
    "exponential_mechanism_rows",
    "exponential_mechanism_scaled",
]


@dataclass(frozen=True)
class ExponentialQuantile(Mechanism):
    """Exponential mechanism over candidates scored by *lower is better* integer-ratio scores.

    Picks j with probability ∝ exp(−ε·score_j/(2Δ)) (McSherry & Talwar 2007): ε-DP when each
    score moves by at most Δ between neighbours (Dwork & Roth 2014, Theorem 3.10). For a
    quantile q the scores are |#{x < t_j} − q·n|, of sensitivity Δ = the rows per unit.
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
    approx: npt.NDArray[np.float64], exact: Callable[[], list[Fraction]], src: RandomSource
) -> int:
    """Index j with probability exp(−γ_j) / Σ_i exp(−γ_i), exactly, in data-independent work.

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
    """
    n = len(approx)
    lows, highs, scale = _float_round(approx)
    c_low = list(itertools.accumulate(lows, initial=0))
    c_high = list(itertools.accumulate(highs, initial=0))
    extra = (scale * n).bit_length() + 64
    u = _draw_bits(src, extra)
    j = _decide(u, extra, c_low, c_high)
    return j if j >= 0 else _refine(u, extra, exact, n, src)


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
    u: int, bits: int, exact: Callable[[], list[Fraction]], n: int, src: RandomSource
) -> int:
    """Continue :func:`_inverse_cdf` with the same U: decimal rounds of growing precision."""
    gammas = exact()
    rounds = 1
    while True:
        lows, highs, scale = _decimal_round(gammas, _EM_DIGITS * 2 ** (rounds - 1))
        rounds += 1
        c_low = list(itertools.accumulate(lows, initial=0))
        c_high = list(itertools.accumulate(highs, initial=0))
        extra = (scale * n).bit_length() + 64
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
