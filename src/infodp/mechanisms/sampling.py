"""Secure exact samplers, the random sources that drive them, and fast simulators.

Two kinds of sampler live here and they must not be confused:

* **Release samplers** (:func:`bernoulli`, :func:`bernoulli_exp`, :func:`geometric_exp`,
  :func:`discrete_laplace`, :func:`discrete_gaussian`, :func:`uniform_int`) use integer and
  :class:`fractions.Fraction` arithmetic only, driven by a :class:`RandomSource` that hands out
  uniform integers. With :class:`CryptoRandomSource` (``secrets``, i.e. the operating system's
  CSPRNG) their output distribution is *exactly* the stated one: no floating-point value is
  ever formed, so the attack of Mironov (2012, "On significance of the least significant bits
  for differential privacy") on textbook floating-point Laplace sampling has nothing to find.
  The algorithms are Algorithms 1-3 of Canonne, Kamath & Steinke (2020), "The Discrete Gaussian
  for Differential Privacy" (NeurIPS 2020, arXiv:2004.00010).
* **Batch release samplers** (:func:`discrete_laplace_batches`, :func:`discrete_laplace_batch`,
  :func:`discrete_gaussian_batch`): the same Algorithms 1-3 vectorised with numpy over all
  pending samples (of several scales at once), reading the source's raw bytes
  (:meth:`RandomSource.random_bytes`) once per batch. Uniform integers come from Lemire's
  multiply-shift with rejection, Bernoulli(a/b) from comparing a uniform's digits with a/b,
  Bernoulli(exp(-g)) and the geometric step from comparing them with exactly computed digits
  of e^-g; every decision is an integer comparison, ties read more digits, and anything that
  could leave exact int64 range falls back to Python integers: the output distribution is
  exactly the scalar samplers'.
* **Simulators** (``simulate_*``) are vectorised numpy samplers for simulation and auditing.
  They use floating point and a seedable numpy Generator: they are *not* private and the
  release path never calls them.

A release refuses seeds: :func:`require_secure_source` accepts only a :class:`RandomSource`,
and the one seeded source, :class:`InsecureSeededSource`, must be created with an explicit
``i_understand_this_is_not_private=True`` opt-in (test mode).

>>> from fractions import Fraction
>>> src = InsecureSeededSource(7, i_understand_this_is_not_private=True)
>>> x = discrete_laplace(Fraction(3, 2), src)
>>> isinstance(x, int)
True
>>> isinstance(require_secure_source(None), CryptoRandomSource)
True
"""

from __future__ import annotations

import functools
import math
import os
import random
import secrets
import sys
from abc import ABC, abstractmethod
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from infodp._np import np, npt
from infodp._validate import as_positive, as_positive_int
from infodp.errors import ParameterError

__all__ = [
    "CryptoRandomSource",
    "InsecureSeededSource",
    "RandomSource",
    "as_fraction",
    "as_generator",
    "bernoulli",
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_gaussian_batch",
    "discrete_laplace",
    "discrete_laplace_batch",
    "discrete_laplace_batches",
    "geometric_exp",
    "require_secure_source",
    "simulate_discrete_gaussian",
    "simulate_discrete_laplace",
    "uniform_int",
]


# ---------------------------------------------------------------------------------------------
# Random sources
# ---------------------------------------------------------------------------------------------


class RandomSource(ABC):
    """A source of exactly uniform integers; the only randomness the release samplers use.

    Subclasses implement :meth:`randbelow`; :meth:`bernoulli` and :meth:`bernoulli_exp` have
    exact defaults built on it, which a source may override (the tests do, to enumerate the
    samplers' outputs with their exact probabilities).

    >>> class Counter(RandomSource):   # a toy (non-random) source: 0, 1, 2, ... mod n
    ...     i = 0
    ...     def randbelow(self, n: int) -> int:
    ...         self.i += 1
    ...         return (self.i - 1) % n
    >>> Counter().bernoulli(1, 2)
    True
    """

    #: True only for sources fit for releasing private values.
    secure: bool = False

    @abstractmethod
    def randbelow(self, n: int) -> int:
        """A uniform integer in ``{0, ..., n - 1}`` (``n >= 1``)."""

    def random_bytes(self, n: int) -> bytes:
        """``n`` independent uniform bytes (the batch samplers' only randomness).

        The default is exact on top of :meth:`randbelow` (one uniform integer below 256^n);
        sources override it with their native byte stream.
        """
        if n <= 0:
            return b""
        return self.randbelow(1 << (8 * n)).to_bytes(n, "little")

    def bernoulli(self, numerator: int, denominator: int) -> bool:
        """True with probability exactly ``numerator / denominator`` (0 <= num <= den)."""
        return self.randbelow(denominator) < numerator

    def bernoulli_exp(self, gamma: Fraction) -> bool:
        """True with probability exactly ``exp(-gamma)`` (CKS 2020, Algorithm 1)."""
        if gamma > 1:
            whole = math.floor(gamma)
            for _ in range(whole):
                if not _bernoulli_exp_unit(Fraction(1), self):
                    return False
            return _bernoulli_exp_unit(gamma - whole, self)
        return _bernoulli_exp_unit(gamma, self)


class CryptoRandomSource(RandomSource):
    """The cryptographic source: :func:`secrets.randbelow` (the OS CSPRNG).

    >>> 0 <= CryptoRandomSource().randbelow(10) < 10
    True
    """

    secure = True

    def randbelow(self, n: int) -> int:
        if n < 1:
            raise ParameterError("n", n, "an integer >= 1")
        return secrets.randbelow(n)

    def random_bytes(self, n: int) -> bytes:
        """``n`` bytes from the OS CSPRNG (``os.urandom``)."""
        return os.urandom(n) if n > 0 else b""

    def __repr__(self) -> str:
        return "CryptoRandomSource()"


class InsecureSeededSource(RandomSource):
    """A *seeded, non-cryptographic* source for reproducible tests only. NOT PRIVATE.

    Its outputs are predictable from the seed, so a value released with it protects no one.
    It must be opted into with ``i_understand_this_is_not_private=True``; the release path
    accepts it only then (test mode).

    >>> InsecureSeededSource(1)
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: i_understand_this_is_not_private must be True to build a seeded (predictable, non-private) source for tests; got False.
    >>> s = InsecureSeededSource(1, i_understand_this_is_not_private=True)
    >>> s.randbelow(6) == InsecureSeededSource(1, i_understand_this_is_not_private=True).randbelow(6)
    True
    """  # noqa: E501

    secure = False

    def __init__(self, seed: int, *, i_understand_this_is_not_private: bool = False) -> None:
        if i_understand_this_is_not_private is not True:
            raise ParameterError(
                "i_understand_this_is_not_private",
                i_understand_this_is_not_private,
                "True to build a seeded (predictable, non-private) source for tests",
            )
        self._random = random.Random(seed)
        # Checked by require_secure_source: an instance made without __init__ (no opt-in)
        # is refused.
        self._opted_in = True

    def randbelow(self, n: int) -> int:
        if n < 1:
            raise ParameterError("n", n, "an integer >= 1")
        return self._random.randrange(n)

    def random_bytes(self, n: int) -> bytes:
        """``n`` seeded (predictable) bytes: ``random.Random.randbytes``. NOT PRIVATE."""
        return self._random.randbytes(n) if n > 0 else b""

    def __repr__(self) -> str:
        return "InsecureSeededSource(<seeded, not private>)"


def require_secure_source(source: Any) -> RandomSource:
    """The source a release may use: ``None`` means a fresh :class:`CryptoRandomSource`.

    Seeds (ints) and numpy Generators are refused: a release from a known seed is not private.
    So is a :class:`RandomSource` that does not declare itself ``secure``, except an
    :class:`InsecureSeededSource`, since building one required the explicit test-mode opt-in.

    >>> require_secure_source(42)
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: source must be None (cryptographic randomness) or a RandomSource; a seed or numpy Generator is refused on the release path (for tests use InsecureSeededSource(seed, i_understand_this_is_not_private=True)); got 42.
    """  # noqa: E501
    if source is None:
        return CryptoRandomSource()
    if isinstance(source, RandomSource):
        if getattr(source, "secure", False) is True or (
            isinstance(source, InsecureSeededSource) and getattr(source, "_opted_in", False) is True
        ):
            return source
        # A source that does not declare itself secure releases predictable noise: only the
        # seeded test source, built with its explicit opt-in, may do that.
        raise ParameterError(
            "source",
            type(source).__name__,
            "a secure RandomSource (secure = True, e.g. CryptoRandomSource) or, in tests, "
            "InsecureSeededSource(seed, i_understand_this_is_not_private=True)",
        )
    raise ParameterError(
        "source",
        source,
        "None (cryptographic randomness) or a RandomSource; a seed or numpy Generator is "
        "refused on the release path (for tests use "
        "InsecureSeededSource(seed, i_understand_this_is_not_private=True))",
    )


def as_generator(rng: Any) -> np.random.Generator:
    """A numpy Generator from ``rng`` (a Generator, a seed, or None) for simulators.

    >>> bool(as_generator(3).integers(10) == as_generator(3).integers(10))
    True
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, (int, np.integer)) and not isinstance(rng, bool)):
        return np.random.default_rng(rng)
    raise ParameterError("rng", rng, "a numpy Generator, an integer seed or None")


def as_fraction(name: str, value: Any, *, positive: bool = False) -> Fraction:
    """``value`` as an exact Fraction (floats convert exactly: every float is dyadic).

    >>> as_fraction("x", 0.5)
    Fraction(1, 2)
    """
    if isinstance(value, Fraction):
        frac = value
    elif isinstance(value, bool):
        raise ParameterError(name, value, "a rational number")
    elif isinstance(value, (int, np.integer)):
        frac = Fraction(int(value))
    else:
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise ParameterError(name, value, "a finite rational number") from None
        if not math.isfinite(x):
            raise ParameterError(name, value, "a finite rational number")
        frac = Fraction(x)
    if positive and frac <= 0:
        raise ParameterError(name, value, "a positive number (> 0)")
    if frac < 0:
        raise ParameterError(name, value, "a non-negative number (>= 0)")
    return frac


# ---------------------------------------------------------------------------------------------
# Exact samplers (Canonne, Kamath & Steinke 2020, arXiv:2004.00010, Algorithms 1-3)
# ---------------------------------------------------------------------------------------------


def uniform_int(n: int, source: RandomSource) -> int:
    """A uniform integer in ``{0, ..., n - 1}``, exactly.

    >>> uniform_int(1, CryptoRandomSource())
    0
    """
    return source.randbelow(as_positive_int("n", n))


def bernoulli(p: Fraction, source: RandomSource) -> bool:
    """True with probability exactly ``p`` (a Fraction in [0, 1]).

    >>> bernoulli(Fraction(1), CryptoRandomSource())
    True
    """
    if not 0 <= p <= 1:
        raise ParameterError("p", p, "a probability in [0, 1]")
    return source.bernoulli(p.numerator, p.denominator)


def bernoulli_exp(gamma: Fraction, source: RandomSource) -> bool:
    """True with probability exactly ``exp(-gamma)`` for a rational ``gamma >= 0``.

    Canonne, Kamath & Steinke (2020), Algorithm 1: for gamma in [0, 1] draw
    A_k ~ Bernoulli(gamma / k) for k = 1, 2, ... until the first A_k = 0 and return whether
    that K is odd (P[K odd] = exp(-gamma)); for gamma > 1 return the conjunction of
    floor(gamma) draws of Bernoulli(exp(-1)) and one of Bernoulli(exp(-(gamma - floor(gamma)))).

    >>> bernoulli_exp(Fraction(0), CryptoRandomSource())
    True
    """
    if gamma < 0:
        raise ParameterError("gamma", gamma, "a non-negative rational")
    return source.bernoulli_exp(gamma)


def _bernoulli_exp_unit(gamma: Fraction, source: RandomSource) -> bool:
    # CKS 2020 Algorithm 1, case gamma in [0, 1].
    num, den = gamma.numerator, gamma.denominator
    k = 1
    while source.bernoulli(num, den * k):  # A_k ~ Bernoulli(gamma / k)
        k += 1
    return k % 2 == 1


def geometric_exp(gamma: Fraction, source: RandomSource) -> int:
    """G >= 0 with P[G = k] = (1 - e^-gamma) e^(-gamma k), exactly (gamma > 0 rational).

    Counts successes of Bernoulli(exp(-gamma)) before the first failure.

    >>> geometric_exp(Fraction(50), CryptoRandomSource())
    0
    """
    if gamma <= 0:
        raise ParameterError("gamma", gamma, "a positive rational")
    count = 0
    while bernoulli_exp(gamma, source):
        count += 1
    return count


def discrete_laplace(scale: Fraction, source: RandomSource) -> int:
    """An integer Y with P[Y = y] proportional to exp(-|y| / scale), exactly.

    Canonne, Kamath & Steinke (2020), Algorithm 2, with scale = t/s for integers t, s:
    U ~ Uniform{0..t-1} accepted with probability exp(-U/t), V ~ Geometric(1 - e^-1),
    X = U + tV, Y = floor(X/s), a fair sign, rejecting (-, 0).

    >>> discrete_laplace(Fraction(1, 1000), CryptoRandomSource())
    0
    """
    if scale <= 0:
        raise ParameterError("scale", scale, "a positive rational")
    t, s = scale.numerator, scale.denominator
    while True:
        u = source.randbelow(t)
        if not bernoulli_exp(Fraction(u, t), source):
            continue
        v = 0
        while source.bernoulli_exp(Fraction(1)):
            v += 1
        y = (u + t * v) // s
        negative = source.bernoulli(1, 2)
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_gaussian(sigma: Fraction, source: RandomSource) -> int:
    """An integer Y with P[Y = y] proportional to exp(-y^2 / (2 sigma^2)), exactly.

    Canonne, Kamath & Steinke (2020), Algorithm 3: with t = floor(sigma) + 1 draw
    Y ~ Lap_Z(t) and accept with probability exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)).
    ``sigma`` is a positive rational (so sigma^2 is rational and all arithmetic is exact).

    >>> discrete_gaussian(Fraction(1, 1000), CryptoRandomSource())
    0
    """
    if sigma <= 0:
        raise ParameterError("sigma", sigma, "a positive rational")
    sigma2 = sigma * sigma
    t = math.floor(sigma) + 1
    while True:
        y = discrete_laplace(Fraction(t), source)
        gamma = (abs(y) - sigma2 / t) ** 2 / (2 * sigma2)
        if bernoulli_exp(gamma, source):
            return y


# ---------------------------------------------------------------------------------------------
# Exact batch sampler (CKS 2020 Algorithms 1-2 vectorised over all pending samples)
# ---------------------------------------------------------------------------------------------

#: Largest n for which the batch path draws uniforms below n in numpy (uint64 words and int64
#: sums stay exact below 2^62 with room to spare); beyond it the exact Python path is used.
_BATCH_MAX = 1 << 62


def _uniform_from_words(
    words: npt.NDArray[np.unsignedinteger[Any]], n: int
) -> npt.NDArray[np.uint64]:
    """The accepted uniform values below ``n`` from uniform ``words``, in order (exact).

    With k = bit_length(n - 1) <= bits of the word type, the top k bits of a uniform word are
    uniform on {0, ..., 2^k - 1}; keeping those below n leaves values exactly uniform on
    {0, ..., n - 1} (rejection sampling; acceptance n / 2^k > 1/2).
    """
    bits = 8 * words.dtype.itemsize
    k = (n - 1).bit_length()
    if not 1 <= k <= bits:
        raise ParameterError("n", n, f"an integer in [2, 2^{bits}] for {bits}-bit words")
    top = (words >> words.dtype.type(bits - k)).astype(np.uint64)
    return top[top < np.uint64(n)]


def _uniform_below(n: int, size: int, source: RandomSource) -> npt.NDArray[np.uint64]:
    """``size`` independent exactly uniform integers in {0, ..., n - 1}, 1 <= n <= 2^62."""
    if n == 1:
        return np.zeros(size, dtype=np.uint64)
    k = (n - 1).bit_length()
    nbytes = 1 if k <= 8 else 2 if k <= 16 else 4 if k <= 32 else 8
    dtype = np.dtype(f"<u{nbytes}")
    out = np.empty(size, dtype=np.uint64)
    filled = 0
    while filled < size:
        need = size - filled
        # Oversample by the expected rejection rate (2^k / n) so one round usually suffices.
        draw = need + (need * ((1 << k) - n)) // n + 8
        words = np.frombuffer(source.random_bytes(draw * nbytes), dtype=dtype)
        got = _uniform_from_words(words, n)[:need]
        out[filled : filled + got.size] = got
        filled += got.size
    return out


def _bernoulli_exp_unit_batch(
    num: npt.NDArray[np.uint64], den: int, source: RandomSource
) -> npt.NDArray[np.bool_]:
    """Independent Bernoulli(exp(-num_i/den)) for 0 <= num_i <= den (CKS 2020, Algorithm 1).

    A_k ~ Bernoulli(gamma/k) = [Uniform{0..den*k-1} < num_i] for k = 1, 2, ... until the
    first A_k = 0; the result is whether that K is odd (P[K odd] = exp(-gamma)). All pending
    samples share k, so each step is one vectorised draw below den*k; if den*k would leave
    the exact numpy range the remaining samples finish with Python integers.
    """
    out = np.empty(num.size, dtype=np.bool_)
    active = np.arange(num.size)
    k = 1
    while active.size:
        if den * k > _BATCH_MAX:  # astronomically rare: finish exactly in Python
            for i in active.tolist():
                a, kk = int(num[i]), k
                while source.bernoulli(a, den * kk):
                    kk += 1
                out[i] = kk % 2 == 1
            break
        go_on = _uniform_below(den * k, active.size, source) < num[active]
        out[active[~go_on]] = k % 2 == 1
        active = active[go_on]
        k += 1
    return out


def _geometric_exp1_batch(size: int, source: RandomSource) -> npt.NDArray[np.int64]:
    """``size`` iid V >= 0 with P[V = v] = (1 - e^-1) e^-v (CKS 2020, Algorithm 2, step 5).

    V counts the successes of Bernoulli(exp(-1)) before the first failure. One stream of
    iid Bernoulli(exp(-1)) draws is read in vectorised blocks and cut at its failures: the
    runs of successes between consecutive failures are iid copies of V; a run still open at
    the end of a block is carried into the next block, so the stream is read exactly as the
    scalar loop would.
    """
    v = np.empty(size, dtype=np.int64)
    filled, carry = 0, 0
    while filled < size:
        need = size - filled
        block = 2 * need + 16  # a failure has probability 1 - e^-1 ≈ 0.63 per draw
        success = _bernoulli_exp_unit_batch(np.ones(block, dtype=np.uint64), 1, source)
        failures = np.flatnonzero(~success)
        if failures.size == 0:
            carry += block
            continue
        runs = np.diff(failures, prepend=-1) - 1  # successes before each failure
        runs[0] += carry
        got = runs[:need]
        v[filled : filled + got.size] = got
        filled += got.size
        carry = block - 1 - int(failures[-1])  # successes after the block's last failure
    return v


#: Batches this small are drawn by the scalar sampler (8-15 µs a draw) while numpy is not yet
#: imported: a query releasing a few cells then never imports it (about 45 ms).
_SCALAR_BATCH = 64

#: With numpy already imported, the vectorised pass (about 60 µs whatever the size up to a
#: few hundred draws) is faster from this many draws on.
_SCALAR_BATCH_LOADED = 8

#: Largest numerator t of a scale t/s served by the fast path (:func:`_laplace_fast`): its
#: Bernoulli(U/(t k)) decisions compare one 32-bit word times t*k < 2^32 exactly in uint64.
_FAST_T = 1 << 26

#: Columns k of CKS 2020 Algorithm 1 decided together per round (see :func:`_bernoulli_exp_rows`).
_ALG1_COLUMNS = 6


class _Words:
    """Uniform words cut from the source's raw bytes, read in as few calls as possible.

    The fast path asks for its expected need up front (one ``random_bytes`` call, i.e. one
    OS CSPRNG read with :class:`CryptoRandomSource`) and tops up only when a rejection loop
    needs more. Every byte is handed out once, in order, so the words are iid uniform.
    """

    __slots__ = ("_buffer", "_pos", "_source", "reads")

    def __init__(self, source: RandomSource, nbytes: int) -> None:
        self._source = source
        self._buffer = source.random_bytes(nbytes)
        self._pos = 0
        self.reads = 1

    def take(self, count: int, dtype: Any) -> npt.NDArray[Any]:
        """``count`` fresh uniform words of the unsigned integer ``dtype``."""
        size = count * np.dtype(dtype).itemsize
        if self._pos + size > len(self._buffer):
            rest = self._buffer[self._pos :]
            more = max(2 * size, 4096)  # top up generously: one more read, not many
            self._buffer = rest + self._source.random_bytes(more)
            self._pos = 0
            self.reads += 1
        out = np.frombuffer(self._buffer, dtype=dtype, count=count, offset=self._pos)
        self._pos += size
        return out


def _bernoulli_ratio(
    num: npt.NDArray[np.uint64],
    den: npt.NDArray[np.uint64],
    words: _Words,
    dtype: Any = None,
) -> npt.NDArray[np.bool_]:
    """Independent Bernoulli(num/den) (broadcast shapes, 0 <= num <= den < 2^(64-w)), exactly.

    Each decision is [X < num/den] for a uniform real X in [0, 1) whose binary digits are read
    w bits (one word W of ``dtype``) at a time: X lies in [W, W+1)/2^w, so X·den < num for sure
    when (W+1)·den <= num·2^w, and for sure not when W·den >= num·2^w. Otherwise (probability
    below den/2^w) X = (W + X')/2^w with X' uniform and independent, and X < num/den exactly
    when X' < (num·2^w − W·den)/den: the same question with a smaller numerator, asked again
    with a fresh word. Every step is an integer comparison in uint64 (no overflow under the
    bound on den), so P[True] = num/den exactly (Devroye 1986, "Non-Uniform Random Variate
    Generation", Sec. 3.3: comparison with a uniform read digit by digit).
    """
    dtype = np.uint32 if dtype is None else dtype  # (numpy is imported lazily)
    w = np.uint64(8 * np.dtype(dtype).itemsize)
    shape = np.broadcast_shapes(num.shape, den.shape)
    low = words.take(math.prod(shape), dtype).reshape(shape).astype(np.uint64) * den
    target = num << w
    yes = low + den <= target
    # Undecided: low < target < low + den (yes implies low < target, as den >= 1).
    pending = np.flatnonzero((low < target) ^ yes)
    if pending.size:
        flat = yes.reshape(-1)
        rest = np.broadcast_to(target, shape).reshape(-1)[pending] - low.reshape(-1)[pending]
        d = np.broadcast_to(den, shape).reshape(-1)[pending]
        while pending.size:
            lo = words.take(pending.size, dtype).astype(np.uint64) * d
            tg = rest << w
            y = lo + d <= tg
            flat[pending] = y
            open_ = (lo < tg) & ~y
            pending, rest, d = pending[open_], (tg - lo)[open_], d[open_]
    return yes


def _bernoulli_exp_rows(
    num: npt.NDArray[np.uint64],
    den: npt.NDArray[np.uint64],
    words: _Words,
    *,
    first: int = 1,
    dtype: Any = None,
) -> npt.NDArray[np.bool_]:
    """Independent Bernoulli(exp(-num_i/den_i)) for 0 <= num_i <= den_i (CKS 2020, Alg. 1).

    A_k ~ Bernoulli(gamma/k) = Bernoulli(num/(den·k)) for k = 1, 2, ... until the first
    A_k = 0; the result is whether that K is odd (P[K odd] = exp(-gamma)). Column
    k = ``first`` is decided for every element, then C columns at once
    (:func:`_bernoulli_ratio` on a matrix) for the elements whose A_k were all 1 so far, and
    so on (draws after an element's first 0 are never looked at, so the decisions used are
    exactly those of the scalar loop).
    ``first`` > 1 means A_1 .. A_{first-1} are known to be 1 (gamma = 1 has A_1 = 1). When
    den·k would leave the exact range of the word type, the remaining elements finish with
    the scalar loop on Python integers.
    """
    dtype = np.uint32 if dtype is None else dtype  # (numpy is imported lazily)
    bits = 8 * np.dtype(dtype).itemsize
    out = np.empty(num.size, dtype=np.bool_)
    idx: npt.NDArray[np.intp] | None = None
    k = first
    while True:
        # The first column alone (A_1 = 0 ends about half of the elements), then C at a time.
        last = k if idx is None else k + _ALG1_COLUMNS - 1
        if int(den.max(initial=0)) * last >= 1 << (64 - bits):  # rare: exact Python finish
            todo = range(num.size) if idx is None else idx.tolist()
            for i, a, d in zip(todo, num.tolist(), den.tolist(), strict=True):
                kk = k
                while words._source.bernoulli(a, d * kk):
                    kk += 1
                out[i] = kk % 2 == 1
            return out
        ks = np.arange(k, last + 1, dtype=np.uint64)
        hit = _bernoulli_ratio(num[:, None], den[:, None] * ks, words, dtype)
        stop = hit.argmin(axis=1)  # the first A_k = 0 (0 also when there is none)
        odd = (stop & 1) == (k + 1) % 2  # K = k + stop is odd
        ended = ~hit.all(axis=1)
        if idx is None:
            out[:] = odd
            if ended.all():
                return out
            idx = np.flatnonzero(~ended)
        else:
            out[idx] = odd
            if ended.all():
                return out
            idx = idx[~ended]
        num, den = num[~ended], den[~ended]
        k = last + 1


@functools.cache
def _exp_neg1_bounds(terms: int) -> tuple[Fraction, Fraction]:
    """Rationals lo < e^-1 < hi: the alternating series sum_k (-1)^k/k! to ``terms`` terms,
    minus and plus the first omitted term 1/(terms+1)! (its error is below that term)."""
    total, term = Fraction(0), Fraction(1)
    for k in range(terms + 1):
        total += -term if k % 2 else term
        term /= k + 1
    return total - term, total + term


@functools.cache
def _exp_neg_floor(v: int, bits: int) -> int:
    """floor(2^bits · e^-v) for an integer v >= 1, exactly.

    Fixed point with ``prec`` bits: integers L <= 2^prec e^-1 <= H from the rational bounds of
    :func:`_exp_neg1_bounds`, raised to the power v by squaring with every product rounded
    down for L and up for H, so that L_v <= 2^prec e^-v <= H_v. When L_v and H_v give the
    same floor at ``bits`` bits, that is the answer; else the precision doubles. It ends:
    e^-v is irrational (e is transcendental), so never an integer over 2^bits.
    """
    prec = bits + 64
    while True:
        terms = 8
        while math.factorial(terms + 1) < 1 << (prec + 2):
            terms += 8
        lo, hi = _exp_neg1_bounds(terms)
        low, high = math.floor(lo * (1 << prec)), math.ceil(hi * (1 << prec))
        lv, hv = 1 << prec, 1 << prec  # the bounds of e^0
        k = v
        while k:
            if k & 1:
                lv, hv = (lv * low) >> prec, -((-hv * high) >> prec)
            k >>= 1
            if k:
                low, high = (low * low) >> prec, -((-high * high) >> prec)
        a, b = lv >> (prec - bits), hv >> (prec - bits)
        if a == b:
            return a
        prec *= 2


@functools.cache
def _geometric_thresholds() -> npt.NDArray[np.uint64]:
    """0 and c_v = floor(2^64 e^-v) for every v >= 1 with c_v > 0, ascending (uint64)."""
    cs = []
    v = 1
    while (c := _exp_neg_floor(v, 64)) > 0:
        cs.append(c)
        v += 1
    return np.array([0, *reversed(cs)], dtype=np.uint64)


def _below_exp_neg(v: int, digits: list[int], words: _Words) -> bool:
    """[X < e^-v] for the uniform X whose 64-bit digits so far are ``digits`` (more are drawn
    and appended as needed): the first digit where X and e^-v differ decides."""
    j = 0
    while True:
        if j == len(digits):
            digits.append(int(words.take(1, np.uint64)[0]))
        d = _exp_neg_floor(v, 64 * (j + 1)) & ((1 << 64) - 1)
        if digits[j] != d:
            return digits[j] < d
        j += 1


def _geometric_exp1_fast(size: int, words: _Words) -> npt.NDArray[np.int64]:
    """``size`` iid V with P[V = v] = (1 - e^-1) e^-v, i.e. P[V >= v] = e^-v, exactly.

    The same law as CKS 2020, Algorithm 2, step 5, by inversion: for a uniform X in [0, 1),
    V = #{v >= 1 : X < e^-v} has P[V >= v] = P[X < e^-v] = e^-v. X is read 64 bits at a time:
    its first word W gives V = #{v : W < c_v}, c_v = floor(2^64 e^-v) computed exactly
    (:func:`_exp_neg_floor`), unless W equals some c_v (or 0, below every e^-v with c_v = 0);
    then X's next digits are compared with those of e^-v (:func:`_below_exp_neg`). Every
    decision is an integer comparison (Devroye 1986, Sec. 3.3, comparison digit by digit).
    """
    table = _geometric_thresholds()
    w = words.take(size, np.uint64)
    right = np.searchsorted(table, w, side="right")  # >= 1: table[0] = 0 <= w
    v = (table.size - right).astype(np.int64)  # #{c_v > w}
    ties = np.flatnonzero(table[right - 1] == w)
    for i in ties.tolist():  # probability about 45 / 2^64 each
        digits = [int(w[i])]
        k = 0
        while _below_exp_neg(k + 1, digits, words):
            k += 1
        v[i] = k
    return v


def _uniform_below_fast(
    t: npt.NDArray[np.uint64], words: _Words, dtype: Any = None
) -> npt.NDArray[np.uint64]:
    """U_i uniform on {0, ..., t_i − 1} (1 <= t_i <= 2^w, w = bits of ``dtype`` <= 32), exactly.

    Lemire (2019, "Fast random integer generation in an interval", ACM TOMACS 29(1)), the
    multiply-shift method: with a uniform w-bit word W, P = W·t; the high part P >> w is the
    value and W is drawn again when the low part P mod 2^w is below 2^w mod t, which leaves
    every value with exactly floor(2^w / t) accepted words.
    """
    dtype = np.uint32 if dtype is None else dtype  # (numpy is imported lazily)
    bits = 8 * np.dtype(dtype).itemsize
    if bits > 32:  # W·t must stay below 2^64
        raise ParameterError("dtype", dtype, "an unsigned integer type of at most 32 bits")
    w, mask = np.uint64(bits), np.uint64((1 << bits) - 1)
    thr = np.uint64(1 << bits) % t
    prod = words.take(t.size, dtype).astype(np.uint64) * t
    out = prod >> w
    bad = np.flatnonzero((prod & mask) < thr)
    while bad.size:
        prod = words.take(bad.size, dtype).astype(np.uint64) * t[bad]
        out[bad] = prod >> w
        bad = bad[(prod & mask) < thr[bad]]
    return out


def _candidates(need: int, t: int, s: int) -> int:
    """Candidates to draw for ``need`` discrete Laplace values of scale t/s (sizing only).

    A candidate survives exp(-U/t) with probability (1 − e^-1)/(t(1 − e^(-1/t))) and the
    (−, 0) rejection with probability (1 + q)/2, q = e^(-s/t); 10% more plus 8 usually
    finish in one round. Only public numbers enter, and the count never changes the
    distribution of what is accepted (another round is drawn when short).
    """
    keep_u = -math.expm1(-1.0) / (t * -math.expm1(-1.0 / t))
    keep_sign = (1 + math.exp(-s / t)) / 2
    return math.ceil(1.1 * need / (keep_u * keep_sign)) + 8


def _laplace_fast(
    ts: list[int], ss: list[int], sizes: list[int], source: RandomSource
) -> list[list[int]]:
    """Discrete Laplace of scales t_j/s_j (t_j <= :data:`_FAST_T`), ``sizes[j]`` draws each,
    in one vectorised pass over all candidates (CKS 2020, Algorithm 2, per-element scales)."""
    out: list[list[int]] = [[] for _ in sizes]
    need = list(sizes)
    # <= 4 bytes for U, 4 for A_1 and 20 for the next 5 columns of the ~half with A_1 = 1,
    # 8 for V, 1 for the sign.
    expected = sum(_candidates(n, t, s) for n, t, s in zip(sizes, ts, ss, strict=True))
    words = _Words(source, 28 * expected + 256)
    while True:
        live = [j for j, n in enumerate(need) if n > 0]
        if not live:
            return out
        counts = [_candidates(need[j], ts[j], ss[j]) for j in live]
        t = np.repeat(np.array([ts[j] for j in live], dtype=np.uint64), counts)
        m = t.size
        top = int(t.max())  # words of 8, 16 or 32 bits: rejection below t/2^w <= 1/16
        wide = np.uint8 if top <= 1 << 4 else np.uint16 if top <= 1 << 12 else np.uint32
        u = _uniform_below_fast(t, words, wide)  # U ~ Uniform{0, ..., t-1}
        keep = _bernoulli_exp_rows(u, t, words)  # kept with probability exp(-U/t)
        v = _geometric_exp1_fast(m, words)  # V ~ Geometric(1 - e^-1)
        negative = (words.take(m, np.uint8) & np.uint8(1)).astype(np.bool_)  # fair sign
        t_top = max(ts[j] for j in live)
        v_top = int(v.max())
        # U + tV < t(V + 1) <= 2^62 keeps int64 exact (checked element by element only when
        # the largest t and V together could pass it).
        if t_top * (v_top + 1) > _BATCH_MAX and np.any(
            v.astype(np.uint64) > (np.uint64(_BATCH_MAX) - t) // t
        ):
            # U + tV could leave int64: this round in Python integers (exact, any size).
            s_all = np.repeat(np.array([ss[j] for j in live], dtype=object), counts).tolist()
            cols = (u.tolist(), t.tolist(), v.tolist(), s_all, negative.tolist(), keep.tolist())
            rows = zip(*cols, strict=True)
            ys: list[int | None] = []
            for a, tt, b, s, neg, ok in rows:
                yy = (a + tt * b) // s
                ys.append(None if not ok or (neg and yy == 0) else (-yy if neg else yy))
            off = 0
            for j, c in zip(live, counts, strict=True):
                got = [y for y in ys[off : off + c] if y is not None][: need[j]]
                out[j].extend(got)
                need[j] -= len(got)
                off += c
            continue
        y = u.astype(np.int64) + t.astype(np.int64) * v
        if any(ss[j] != 1 for j in live):  # integer scales (s = 1) need no division
            y //= np.repeat(np.array([ss[j] for j in live], dtype=np.int64), counts)
        keep &= ~(negative & (y == 0))  # reject (B = 1, Y = 0): zero is not counted twice
        signed = np.where(negative, -y, y)
        off = 0
        for j, c in zip(live, counts, strict=True):
            got = signed[off : off + c][keep[off : off + c]][: need[j]].tolist()
            out[j].extend(got)
            need[j] -= len(got)
            off += c


def discrete_laplace_batches(
    scales: Sequence[Any], sizes: Sequence[int], source: Any = None
) -> list[list[int]]:
    """``sizes[j]`` independent discrete Laplace draws of scale ``scales[j]``, for every j.

    The same distribution as ``[discrete_laplace_batch(scales[j], sizes[j], source) ...]``
    (so exactly the scalar :func:`discrete_laplace`'s), drawn in one pass: the candidates of
    all scales share each vectorised step of Canonne, Kamath & Steinke (2020), Algorithm 2,
    with per-element numerators and denominators, and the randomness is read from the source
    in one call (topped up only when a rejection loop needs more). Uniforms below t come from
    Lemire's multiply-shift with rejection, Bernoulli(U/(t k)) from exact digit comparisons
    (:func:`_bernoulli_ratio`): every decision is an integer comparison. Scales whose
    numerator exceeds 2^26 (or denominator 2^62) use the wider (slower) exact path of
    :func:`discrete_laplace_batch` one by one. A few draws in all (at most
    :data:`_SCALAR_BATCH` while numpy is not imported, :data:`_SCALAR_BATCH_LOADED` once it
    is) use the scalar sampler: the same distribution, faster at that size.

    >>> src = InsecureSeededSource(5, i_understand_this_is_not_private=True)
    >>> a, b = discrete_laplace_batches([Fraction(2), Fraction(4096000)], [100, 100], src)
    >>> len(a), len(b), all(type(y) is int for y in a + b)
    (100, 100, True)
    """
    if len(scales) != len(sizes):
        raise ParameterError("sizes", len(sizes), f"one size per scale ({len(scales)})")
    fracs = [as_fraction("scale", sc, positive=True) for sc in scales]
    ns = [as_positive_int("size", n, minimum=0) for n in sizes]
    src = require_secure_source(source)
    out: list[list[int]] = [[] for _ in ns]
    fast = [
        j
        for j, f in enumerate(fracs)
        if f.numerator <= _FAST_T and f.denominator <= _BATCH_MAX and ns[j] > 0
    ]
    small = _SCALAR_BATCH if "numpy" not in sys.modules else _SCALAR_BATCH_LOADED
    if sum(ns[j] for j in fast) <= small:
        for j in fast:
            out[j] = [discrete_laplace(fracs[j], src) for _ in range(ns[j])]
    else:
        drawn = _laplace_fast(
            [fracs[j].numerator for j in fast],
            [fracs[j].denominator for j in fast],
            [ns[j] for j in fast],
            src,
        )
        for j, ys in zip(fast, drawn, strict=True):
            out[j] = ys
    for j, f in enumerate(fracs):
        if j not in fast and ns[j] > 0:
            out[j] = _laplace_wide(f, ns[j], src)
    return out


def discrete_laplace_batch(scale: Fraction, size: int, source: Any = None) -> list[int]:
    """``size`` independent integers with P[Y = y] ∝ exp(-|y| / scale), exactly.

    Canonne, Kamath & Steinke (2020, arXiv:2004.00010), Algorithm 2 — the same steps as
    :func:`discrete_laplace` — vectorised with numpy: with scale = t/s, a block of candidates
    U ~ Uniform{0..t-1} is kept with probability exp(-U/t) (Algorithm 1), then
    V ~ Geometric(1 - e^-1), Y = floor((U + tV)/s) and a fair sign, rejecting (-, 0). The
    candidates are iid trials, so the accepted ones, taken in order, are iid draws of the
    target; blocks are repeated until ``size`` are accepted. See
    :func:`discrete_laplace_batches` (one scale here): every decision is an integer
    comparison, so the distribution is exact. When t or s exceed 2^62, or only a few draws
    are asked for, the scalar sampler is used; when U + tV could
    leave int64 range it is computed with Python integers.

    ``source`` is a :class:`RandomSource` or None (the OS CSPRNG); seeds are refused
    (:func:`require_secure_source`). Returns Python ints (no overflow, any magnitude).

    >>> src = InsecureSeededSource(5, i_understand_this_is_not_private=True)
    >>> ys = discrete_laplace_batch(Fraction(3, 2), 1000, src)
    >>> len(ys), all(isinstance(y, int) for y in ys)
    (1000, True)
    >>> discrete_laplace_batch(Fraction(1, 1000), 3, CryptoRandomSource())
    [0, 0, 0]
    """
    return discrete_laplace_batches([scale], [size], source)[0]


def _laplace_wide(scale: Fraction, n: int, src: RandomSource) -> list[int]:
    """CKS 2020 Algorithm 2 in numpy for numerators t above :data:`_FAST_T` (64-bit words,
    rejection from the top bits), with the scalar sampler beyond 2^62 or for small n."""
    t, s = scale.numerator, scale.denominator
    if t > _BATCH_MAX or s > _BATCH_MAX or n <= _SCALAR_BATCH:
        return [discrete_laplace(scale, src) for _ in range(n)]
    out: list[int] = []
    while len(out) < n:
        need = n - len(out)
        # At least ~30% of candidates are accepted (e^-1 of U-rejections at worst, half of
        # the rest when Y = 0 dominates): 3x candidates usually finish in one block.
        u = _uniform_below(t, 3 * need + 16, src)  # U ~ Uniform{0, ..., t-1}
        u = u[_bernoulli_exp_unit_batch(u, t, src)]  # keep with probability exp(-U/t)
        v = _geometric_exp1_batch(u.size, src)  # V ~ Geometric(1 - e^-1)
        negative = _uniform_below(2, u.size, src) == 1  # B ~ Bernoulli(1/2)
        if int(v.max(initial=0)) <= (_BATCH_MAX - t) // t:  # U + tV < 2^62: exact in int64
            y = (u.astype(np.int64) + np.int64(t) * v) // np.int64(s)
            ok = ~(negative & (y == 0))  # reject (B = 1, Y = 0): zero is not counted twice
            out.extend(np.where(negative, -y, y)[ok][:need].tolist())
        else:
            for a, b, neg in zip(u.tolist(), v.tolist(), negative.tolist(), strict=True):
                yy = (a + t * b) // s
                if len(out) < n and not (neg and yy == 0):
                    out.append(-yy if neg else yy)
    return out


def discrete_gaussian_batch(sigma: Fraction, size: int, source: Any = None) -> list[int]:
    """``size`` independent integers with P[Y = y] ∝ exp(-y^2 / (2 sigma^2)), exactly.

    Canonne, Kamath & Steinke (2020, arXiv:2004.00010), Algorithm 3 — the steps of
    :func:`discrete_gaussian` — in blocks: with t = floor(sigma) + 1 draw candidates
    Y ~ Lap_Z(t) by :func:`discrete_laplace_batch` and keep each with probability
    exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)); for sigma = p/q that exponent is the rational
    (|Y| q^2 t - p^2)^2 / (2 p^2 q^2 t^2), formed with Python integers (exact), decided by
    :func:`_gaussian_accept` (64-bit digit comparisons, the rest exactly in Python integers).
    Accepted candidates, in order, are iid draws of the target.

    >>> src = InsecureSeededSource(5, i_understand_this_is_not_private=True)
    >>> ys = discrete_gaussian_batch(Fraction(5, 2), 500, src)
    >>> len(ys), all(isinstance(y, int) for y in ys)
    (500, True)
    >>> discrete_gaussian_batch(Fraction(1, 1000), 3, CryptoRandomSource())
    [0, 0, 0]
    """
    sigma = as_fraction("sigma", sigma, positive=True)
    n = as_positive_int("size", size, minimum=0)
    src = require_secure_source(source)
    p, q = sigma.numerator, sigma.denominator
    t = math.floor(sigma) + 1
    out: list[int] = []
    while len(out) < n:
        need = n - len(out)
        # Measured acceptance: 0.46-0.54 for sigma < 2, 0.74-0.76 from sigma 4 on (0.7 is
        # assumed from 2 on). 10% more candidates plus 16 usually finish in one block;
        # otherwise another block is drawn. Sizing depends on sigma and the count only.
        accept = 0.45 if sigma < 2 else 0.7
        ys = discrete_laplace_batch(Fraction(t), math.ceil(1.1 * need / accept) + 16, src)
        words = _Words(src, 24 * len(ys))
        keep = _gaussian_accept([abs(y) for y in ys], p, q, t, words)
        out.extend([y for y, k in zip(ys, keep.tolist(), strict=True) if k][:need])
    return out


def _gaussian_accept(
    absy: list[int], p: int, q: int, t: int, words: _Words
) -> npt.NDArray[np.bool_]:
    """Bernoulli(exp(-gamma_y)), gamma_y = (|y| - sigma^2/t)^2 / (2 sigma^2), sigma = p/q, for
    every candidate |y| of CKS 2020, Algorithm 3, exactly; any size of p and q.

    gamma = g + r/d with g = floor(gamma) (Python integers, exact). Algorithm 1 for gamma > 1
    asks g draws of Bernoulli(exp(-1)) and one of Bernoulli(exp(-r/d)), all to succeed; the g
    draws together succeed with probability e^-g, decided here by one uniform X < e^-g
    (threshold floor(2^64 e^-g), ties digit by digit, as in :func:`_geometric_exp1_fast`).
    Bernoulli(exp(-r/d)) is Algorithm 1 with A_k = [X_k < r/(d k)]: the first 64-bit digit
    F_k = floor(2^64 r/(d k)) of r/(d k) settles it unless the word equals F_k, when the
    rest (r 2^64 − F_k d k)/(d k) is drawn with Python integers. F_k and g depend on |y|
    only, so they are computed once per distinct |y| of the batch.
    """
    den = 2 * p * p * q * q * t * t
    cols = _ALG1_COLUMNS
    index: dict[int, int] = {}
    wholes: list[int] = []
    rests: list[int] = []
    digits: list[list[int]] = []
    for a in absy:
        if a not in index:
            index[a] = len(wholes)
            g, r = divmod((a * q * q * t - p * p) ** 2, den)
            wholes.append(g)
            rests.append(r)
            digits.append([(r << 64) // (den * k) for k in range(1, cols + 1)])
    row = np.array([index[a] for a in absy], dtype=np.intp)
    m = row.size
    # The whole part: [X < e^-g] (g = 0: always).
    table = _geometric_thresholds()  # c_v for v = 1 .. table.size - 1, then 0
    thresholds = np.array(
        [int(table[-g]) if 0 < g < table.size else 0 for g in wholes], dtype=np.uint64
    )
    g_arr = np.array([min(g, table.size) for g in wholes], dtype=np.int64)[row]
    w = words.take(m, np.uint64)
    c = thresholds[row]
    ok = (g_arr == 0) | (w < c)
    for i in np.flatnonzero((g_arr > 0) & (w == c)).tolist():  # about 2^-64 each
        ok[i] = _below_exp_neg(wholes[row[i]], [int(w[i])], words)
    # The fraction: Algorithm 1 columns k = 1..C against the digits F_k, then Python integers.
    f = np.array(digits, dtype=np.uint64)[row]  # (m, C)
    w2 = words.take(m * cols, np.uint64).reshape(m, cols)
    hit = w2 < f
    for i, j in zip(*np.nonzero(w2 == f), strict=True):  # undecided first digits: exact rest
        r, k = rests[row[i]], int(j) + 1
        hit[i, j] = words._source.bernoulli((r << 64) - int(f[i, j]) * den * k, den * k)
    stop = hit.argmin(axis=1)
    frac_ok = (stop & 1) == 0  # K = stop + 1 is odd
    for i in np.flatnonzero(hit.all(axis=1)).tolist():  # all C columns 1: continue exactly
        r, k = rests[row[i]], cols + 1
        while words._source.bernoulli(r, den * k):
            k += 1
        frac_ok[i] = k % 2 == 1
    accepted: npt.NDArray[np.bool_] = ok & frac_ok
    return accepted


# ---------------------------------------------------------------------------------------------
# Fast simulators (numpy, floating point, seedable): NOT for releases
# ---------------------------------------------------------------------------------------------


def simulate_discrete_laplace(scale: float, size: int, rng: Any = None) -> npt.NDArray[np.int64]:
    """Simulation only (not private): ``size`` draws of the discrete Laplace, P ∝ e^(-|k|/scale).

    The difference of two iid geometric variables on {0, 1, ...} with success probability
    1 - e^(-1/scale) is discrete Laplace (Inusah & Kozubowski 2006).

    >>> simulate_discrete_laplace(2.0, 5, rng=1).shape
    (5,)
    """
    b = as_positive("scale", scale)
    n = as_positive_int("size", size, minimum=0)
    gen = as_generator(rng)
    p = -math.expm1(-1.0 / b)
    g1 = gen.geometric(p, size=n) - 1
    g2 = gen.geometric(p, size=n) - 1
    return (g1 - g2).astype(np.int64)


def simulate_discrete_gaussian(sigma: float, size: int, rng: Any = None) -> npt.NDArray[np.int64]:
    """Simulation only (not private): ``size`` draws of the discrete Gaussian N_Z(0, sigma^2).

    Vectorised form of the rejection sampler of Canonne, Kamath & Steinke (2020),
    Algorithm 3 (discrete Laplace proposal with scale t = floor(sigma) + 1).

    >>> simulate_discrete_gaussian(3.0, 4, rng=0).dtype
    dtype('int64')
    """
    s = as_positive("sigma", sigma)
    n = as_positive_int("size", size, minimum=0)
    gen = as_generator(rng)
    t = math.floor(s) + 1
    out = np.empty(n, dtype=np.int64)
    filled = 0
    while filled < n:
        need = n - filled
        batch = max(16, int(need * 1.6) + 8)
        y = simulate_discrete_laplace(float(t), batch, gen)
        log_accept = -((np.abs(y) - s * s / t) ** 2) / (2 * s * s)
        keep = y[gen.random(batch) < np.exp(log_accept)][:need]
        out[filled : filled + keep.size] = keep
        filled += keep.size
    return out
