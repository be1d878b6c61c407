"""The one release path: every noisy cell comes from an :mod:`infodp.mechanisms` object.

For each measurement of a plan, :attr:`~infodp.curator.price.cost.MeasurementCost.mechanism` is the
calibrated mechanism (discrete Laplace, discrete Gaussian, the exponential mechanism for
quantiles; partition selection chooses the released groups), and this module draws its noise:
one exact batch per measurement (:meth:`~infodp.mechanisms.base._AdditiveLattice.release_batch`
over the batch samplers of :mod:`infodp.mechanisms.sampling`), or one exponential-mechanism
draw per released group (:meth:`~infodp.mechanisms.ExponentialQuantile.release_grid`).
No floating-point noise is ever formed.

>>> from fractions import Fraction
>>> from infodp.curator.price.cost import MeasurementCost
>>> from infodp.curator.plan.nodes import Measurement
>>> from infodp.mechanisms.sampling import InsecureSeededSource
>>> src = InsecureSeededSource(0, i_understand_this_is_not_private=True)
>>> p = MeasurementCost(Measurement("count_rows"), Fraction(1), 1, 1.0)
>>> len(draw_noise([p], 3, src)[0])
3
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from infodp._np import np, npt
from infodp.errors import ParameterError
from infodp.mechanisms.sampling import (
    InsecureSeededSource,
    RandomSource,
    require_secure_source,
)

if TYPE_CHECKING:
    from infodp.curator.price.cost import MeasurementCost

__all__ = [
    "BufferedCryptoSource",
    "draw_noise",
    "quantile_draws",
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
    infodp.errors.ParameterError: source must be a secure RandomSource (secure = True, e.g. CryptoRandomSource) or, in tests, InsecureSeededSource(seed, i_understand_this_is_not_private=True); got 'Counter'.
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


def draw_noise(
    parts: Sequence[MeasurementCost], cells: int, source: RandomSource
) -> list[list[int] | None]:
    """Noise (grid units) for ``cells`` cells of every non-quantile measurement.

    From each measurement's mechanism: the discrete Laplace ones all together in one exact
    vectorised pass (:meth:`~infodp.mechanisms.DiscreteLaplaceMechanism.noise_batches`: one
    read of the source for the whole query), any other one as its own batch
    (``mechanism.release_batch([0] * cells)``, e.g. the exact discrete Gaussian; Canonne,
    Kamath & Steinke 2020). Quantile measurements get None (they are drawn by
    :func:`quantile_draws`); a measurement of sensitivity 0 needs no noise.
    """
    from infodp.mechanisms import DiscreteLaplaceMechanism

    src = require_release_source(source)
    out: list[list[int] | None] = []
    laplace: list[tuple[int, DiscreteLaplaceMechanism]] = []
    for p in parts:
        mech = p.noise_mechanism if p.additive else None
        if not p.additive:  # drawn per released group by quantile_draws
            out.append(None)
        elif mech is None:
            out.append([0] * cells)
        elif isinstance(mech, DiscreteLaplaceMechanism):
            laplace.append((len(out), mech))
            out.append(None)
        else:
            out.append(mech.release_batch([0] * cells, source=src))
    if laplace:
        drawn = DiscreteLaplaceMechanism.noise_batches([m for _, m in laplace], cells, src)
        for (i, _), noise in zip(laplace, drawn, strict=True):
            out[i] = noise
    return out


def quantile_draws(
    part: MeasurementCost,
    histograms: Sequence[npt.NDArray[np.int64] | None],
    lo: int,
    hi: int,
    source: RandomSource,
) -> list[int]:
    """One exponential-mechanism grid point (of lo..hi) per group, from each group's sorted
    (values, counts) histogram (None: no rows), scored on both sides of every point
    (:meth:`~infodp.mechanisms.ExponentialQuantile.release_grid`)."""
    src = require_release_source(source)
    mech = part.quantile_mechanism  # an internal error for a quantile of sensitivity 0
    q = part.measurement.q if part.measurement.q is not None else Fraction(1, 2)  # MEDIAN
    empty = np.zeros(0, dtype=np.int64)
    out: list[int] = []
    for h in histograms:
        values, counts = (empty, empty) if h is None else (h[0], h[1])
        out.append(mech.release_grid(values, counts, lo, hi, q, source=src))
    return out
