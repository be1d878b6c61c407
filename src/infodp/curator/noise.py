"""The curator's release primitives over the mechanisms' exact secure samplers.

Every noisy value the curator releases is an *integer* aggregate (a count, or a sum of values
snapped to a power-of-two grid inside the database) plus exact discrete Laplace noise drawn by
:func:`infodp.mechanisms.sampling.discrete_laplace` from a cryptographic source. For integer
sensitivity Δ and noise P(k) ∝ exp(−|k|/b) with b = Δ/ε the release is exactly ε-DP
(Canonne, Kamath & Steinke 2020, arXiv:2004.00010, Thm 7 / the geometric mechanism of Ghosh,
Roughgarden & Sundararajan 2009). No floating-point noise is ever formed.

Quantiles use the exponential mechanism (McSherry & Talwar 2007) sampled *exactly* by inverse
CDF over certified intervals of the weights exp(−(γ_j − γ_min)), refined lazily (Knuth & Yao
1976) only when the uniform draw falls within the weights' error — so the work does not
depend on the data (a rejection loop would run a data-dependent number of rounds).

This module is the minimal adapter the brief allows while ``infodp.mechanisms`` has no
calibrated release API for these cases; it uses only the mechanisms' samplers.

>>> from infodp.mechanisms.sampling import InsecureSeededSource
>>> src = InsecureSeededSource(0, i_understand_this_is_not_private=True)
>>> isinstance(release_integer(10, 1, Fraction(1), src), int)
True
>>> dlap_halfwidth(10.0, 0.05)  # P(|Y| > k) <= 5% for P(k) ∝ exp(-|k|/10)
30
"""

from __future__ import annotations

import bisect
import decimal
import functools
import itertools
import math
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp.errors import ParameterError
from infodp.mechanisms.sampling import (
    InsecureSeededSource,
    RandomSource,
    discrete_laplace,
    discrete_laplace_batch,
    require_secure_source,
)

__all__ = [
    "BufferedCryptoSource",
    "dlap_abs_mean",
    "dlap_entropy",
    "dlap_halfwidth",
    "dlap_tail",
    "exponential_mechanism",
    "exponential_mechanism_rows",
    "exponential_mechanism_scaled",
    "grid_step",
    "release_integer",
    "release_integers",
    "require_release_source",
]


class BufferedCryptoSource(RandomSource):
    """The OS CSPRNG (``os.urandom``) read in 64 KiB blocks: the same randomness as
    :class:`~infodp.mechanisms.sampling.CryptoRandomSource`, without one system call per
    integer (a release of 200 cells needs thousands of draws).

    ``randbelow(n)`` takes ⌈log2 n⌉ fresh bits and rejects values ≥ n, so it is exactly
    uniform; ``random_bytes(n)`` (the batch samplers' input) hands out the next n buffered
    bytes, or n fresh ones when n exceeds the block. Every hand-out happens under a lock, so
    no two threads get the same bytes; after ``os.fork()`` the child discards the buffer and
    the lock (``os.register_at_fork``), so no two processes get the same bytes either.
    (A fork made by C code behind Python's back is not seen; CPython does not support running
    Python in such a child anyway.)

    >>> src = BufferedCryptoSource()
    >>> all(0 <= src.randbelow(7) < 7 for _ in range(100)), src.secure
    (True, True)
    >>> len(src.random_bytes(100_000))
    100000
    """

    secure = True

    def __init__(self, block: int = 65536) -> None:
        self._block = block
        self._buffer = b""
        self._pos = 0
        self._lock = threading.Lock()
        _LIVE_SOURCES.add(self)

    def _forget(self) -> None:
        # In a forked child: never reuse the parent's bytes; the lock may have been held by a
        # parent thread that does not exist here.
        self._buffer, self._pos, self._lock = b"", 0, threading.Lock()

    def random_bytes(self, n: int) -> bytes:
        """``n`` bytes of the OS CSPRNG, never handed to another thread or process."""
        if n <= 0:
            return b""
        if n > self._block:
            return os.urandom(n)
        with self._lock:  # threads must never be handed the same bytes
            if self._pos + n > len(self._buffer):
                self._buffer = os.urandom(self._block)
                self._pos = 0
            chunk = self._buffer[self._pos : self._pos + n]
            self._pos += n
        return chunk

    def randbelow(self, n: int) -> int:
        if n < 1:
            raise ParameterError("n", n, "an integer >= 1")
        if n == 1:
            return 0
        k = (n - 1).bit_length()
        nbytes = (k + 7) // 8
        while True:
            r = int.from_bytes(self.random_bytes(nbytes), "big") >> (8 * nbytes - k)
            if r < n:
                return r

    def __repr__(self) -> str:
        return "BufferedCryptoSource()"


#: Every live BufferedCryptoSource, so a forked child can make each one forget its buffer.
_LIVE_SOURCES: weakref.WeakSet[BufferedCryptoSource] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for source in list(_LIVE_SOURCES):
        source._forget()


os.register_at_fork(after_in_child=_after_fork_in_child)


def grid_step(low: float, high: float, integer: bool) -> float:
    """The power-of-two grid g that values in [low, high] are snapped to before summing.

    g = 1 for int columns whose bounds are below 2^24 (exact); otherwise the largest power of
    two not above max(|low|, |high|) / 2^20, so that snapping moves a value by at most
    g/2 ≤ 2^-21 of the larger bound while the integer sums stay far from overflow.

    >>> grid_step(0, 120, True), grid_step(0, 500000, False)
    (1.0, 0.25)
    """
    top = max(abs(low), abs(high))
    if integer and top <= 2.0**24:
        return 1.0
    if top == 0:
        return 1.0
    exponent = math.floor(math.log2(top)) - 20
    return math.ldexp(1.0, exponent) if not integer else max(1.0, math.ldexp(1.0, exponent))


def require_release_source(source: RandomSource | None) -> RandomSource:
    """The source a release may use: cryptographic, or one built with the insecure opt-in.

    :func:`~infodp.mechanisms.sampling.require_secure_source` already refuses seeds; a
    :class:`~infodp.mechanisms.sampling.RandomSource` that does not declare itself ``secure``
    is refused too, unless it is an :class:`~infodp.mechanisms.sampling.InsecureSeededSource`
    (which cannot be built without ``i_understand_this_is_not_private=True``).

    >>> class Counter(RandomSource):
    ...     def randbelow(self, n): return 0
    >>> require_release_source(Counter())
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: source must be a secure RandomSource (or InsecureSeededSource(seed, i_understand_this_is_not_private=True) in tests); got 'Counter'.
    """  # noqa: E501
    src = require_secure_source(source)
    if getattr(src, "secure", False) is True or isinstance(src, InsecureSeededSource):
        return src
    raise ParameterError(
        "source",
        type(src).__name__,
        "a secure RandomSource (or InsecureSeededSource(seed, "
        "i_understand_this_is_not_private=True) in tests)",
    )


def release_integer(
    value: int, sensitivity: int, epsilon: Fraction, source: RandomSource | None
) -> int:
    """``value`` + discrete Laplace noise of scale sensitivity/ε: exactly ε-DP (CKS 2020).

    A sensitivity of 0 releases the value itself (it does not depend on the data).
    """
    if sensitivity < 0 or epsilon <= 0:
        raise ParameterError("epsilon", float(epsilon), "a positive number with sensitivity >= 0")
    if sensitivity == 0:
        return int(value)
    src = require_release_source(source)
    return int(value) + discrete_laplace(Fraction(sensitivity) / epsilon, src)


def release_integers(
    values: Sequence[int], sensitivity: int, epsilon: Fraction, source: RandomSource | None
) -> list[int]:
    """Each of ``values`` + independent discrete Laplace noise of scale sensitivity/ε.

    Same distribution as :func:`release_integer` per value (exactly ε-DP each, CKS 2020), drawn
    in one batch by :func:`~infodp.mechanisms.sampling.discrete_laplace_batch`.

    >>> from infodp.mechanisms.sampling import InsecureSeededSource
    >>> src = InsecureSeededSource(0, i_understand_this_is_not_private=True)
    >>> release_integers([5, 7], 0, Fraction(1), src)  # sensitivity 0: nothing to hide
    [5, 7]
    >>> len(release_integers([0] * 200, 1, Fraction(1, 10), src))
    200
    """
    if sensitivity < 0 or epsilon <= 0:
        raise ParameterError("epsilon", float(epsilon), "a positive number with sensitivity >= 0")
    if sensitivity == 0:
        return [int(v) for v in values]
    src = require_release_source(source)
    noise = discrete_laplace_batch(Fraction(sensitivity) / epsilon, len(values), src)
    return [int(v) + z for v, z in zip(values, noise, strict=True)]


def dlap_tail(scale: float, k: int) -> float:
    """P(|Y| > k) for P(Y = y) ∝ exp(−|y|/scale): 2 p^(k+1) / (1 + p) with p = e^(−1/scale).

    >>> round(dlap_tail(1.0, 0), 6)  # 2e^-1/(1+e^-1)
    0.537883
    """
    if k < 0:
        return 1.0
    log_p = -1.0 / scale
    return min(1.0, 2.0 * math.exp((k + 1) * log_p) / (1.0 + math.exp(log_p)))


def dlap_halfwidth(scale: float, beta: float) -> int:
    """The smallest integer k with P(|Y| > k) ≤ β for the discrete Laplace of ``scale``.

    From P(|Y| > k) = 2p^(k+1)/(1+p): k = ⌈scale·ln(2/(β(1+p)))⌉ − 1, then checked (and
    nudged up) against :func:`dlap_tail` so the stated coverage is never optimistic.
    """
    if scale <= 0:
        return 0
    p = math.exp(-1.0 / scale)
    k = max(0, math.ceil(scale * math.log(2.0 / (beta * (1.0 + p)))) - 1)
    while dlap_tail(scale, k) > beta:
        # Step by at least one float ulp of k: for astronomical scales k + 1 rounds back to k
        # inside dlap_tail and a unit step never ends (found by the HTTP service's fuzzing).
        k += max(1, k >> 50)
    return k


def dlap_abs_mean(scale: float) -> float:
    """E|Y| = 2p / (1 − p²) for the discrete Laplace, p = e^(−1/scale).

    >>> round(dlap_abs_mean(1e6) / 1e6, 6)  # -> scale for a large scale (continuous Laplace)
    1.0
    """
    t = 1.0 / scale
    # 2p/(1-p^2) = 1/sinh(1/scale), stable for large and small scales.
    return 1.0 / math.sinh(t) if t < 700 else 0.0


def dlap_entropy(scale: float) -> float:
    """Shannon entropy (nats) of the discrete Laplace: ln((1+p)/(1−p)) + E|Y|/scale.

    −ln P(y) = ln((1+p)/(1−p)) + |y|/scale, averaged over y. ln((1+p)/(1−p)) = ln coth(1/(2 scale)).

    >>> abs(dlap_entropy(1e4) - (1 + math.log(2e4))) < 1e-6  # continuous Laplace: 1 + ln(2b)
    True
    """
    t = 1.0 / scale
    if t > 700:
        return 0.0
    return -math.log(math.tanh(t / 2.0)) + dlap_abs_mean(scale) * t


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
    src = require_release_source(source)
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
    src = require_release_source(source)
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
