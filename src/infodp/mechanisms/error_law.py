"""The law of a linear combination of independent lattice noises, bounded from above.

A ratio or a centred moment released from several noisy sums has an error that, to a known
exact identity, is ``Σ c_i N_i`` for independent integer noises ``N_i`` (discrete Laplace or
discrete Gaussian, one per measurement) and real coefficients ``c_i``. Its quantiles are far
below the sum of the terms' own quantiles (the union bound): :func:`combination_halfwidth`
computes an upper bound on the exact one by numerical convolution of the terms' laws.

How the bound stays an upper bound (no step is optimistic):

- each ``N_i`` is cut at ``|N_i| ≤ K_i`` with ``P(|N_i| > K_i) ≤ τ_i`` (the mechanism's own
  certified tail); the τ_i are added to the failure probability;
- the integers of ``[−K_i, K_i]`` are grouped in blocks of ``L`` consecutive values whose
  mass is bounded above by ``L`` times the pmf at the block's point nearest 0 (the pmf is
  symmetric and non-increasing in ``|k|``); each block is placed on the grid ``w·Z`` nearest
  its centre, which moves each value by at most ``w`` — so the sum moves by at most ``n·w``
  (more if a term's range needs longer blocks, and then by what its blocks allow);
- the sub-probability vectors are convolved (FFT; every entry only over-counts, so the mass
  beyond ``t`` is over-estimated), and a margin of 10⁻⁹ covers the float rounding.

The answer is a function of its exact inputs only (each mechanism's exact parameters, the
coefficients, β), so it is remembered process-wide (:data:`REMEMBERED` combinations, least
recently used first out): a query asked again, in this process or by another curator object
in it, convolves nothing. The first term's law on its grid and its spectrum are remembered
too (``LEADS`` of each): an interval's search convolves the same lead noise (coefficient
1, the same grid while its range is the widest) with many coefficients of the others, and
each reuse returns the very arrays a fresh computation would.

>>> from infodp.mechanisms import DiscreteLaplaceMechanism
>>> a, b = DiscreteLaplaceMechanism(100.0), DiscreteLaplaceMechanism(100.0)
>>> h = combination_halfwidth([(a, 1.0), (b, 1.0)], 0.05)
>>> a.halfwidth(0.05) < h < a.halfwidth(0.025) + b.halfwidth(0.025)
True
"""

from __future__ import annotations

import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from infodp._np import np, npt
from infodp.errors import ParameterError

if TYPE_CHECKING:
    from infodp.mechanisms.base import _AdditiveLattice

__all__ = ["REMEMBERED", "combination_halfwidth"]

#: Grid points over the widest term's truncated range (the discretisation costs n·w, about
#: n·30/RESOLUTION of a noise scale: about 1% of a 95% half-width for three terms).
RESOLUTION = 2048
#: Most blocks one term is cut into (memory and time stay bounded for any noise scale).
_MAX_BLOCKS = 1 << 16
#: Absolute margin for the floating-point evaluation of the pmfs, their sums and the FFT.
_FLOAT_MARGIN = 1e-9
#: How many combinations' answers one process remembers (about half a kB each, key
#: included): planning an AVG's ε by accuracy (``Curator.epsilon_for``) asks some 13 000
#: combinations, so the same plan asked again convolves nothing (at 8192 the LRU order
#: evicted each one before its second use).
REMEMBERED = 1 << 15
#: How many first terms' laws and spectra one process remembers (at most ~200 kB each).
LEADS = 16


def combination_halfwidth(
    terms: Sequence[tuple[_AdditiveLattice | None, float]], beta: float
) -> float:
    """An h with P(|Σ c_i N_i| > h) ≤ β, for independent noises N_i of the given mechanisms.

    ``terms`` pairs an additive lattice mechanism (its integer noise in grid units, e.g.
    :class:`~infodp.mechanisms.DiscreteLaplaceMechanism`) with a real coefficient; mechanisms
    that are None and zero coefficients are dropped. One term is answered by the mechanism's
    own exact tail (``|c|·halfwidth(β)``). Several are convolved (module docstring); the
    answer never understates the exact quantile of the combination.

    >>> from infodp.mechanisms import DiscreteLaplaceMechanism
    >>> m = DiscreteLaplaceMechanism(10.0)
    >>> combination_halfwidth([(m, -2.0)], 0.05) == 2 * m.halfwidth(0.05)
    True
    >>> combination_halfwidth([], 0.05)
    0.0
    """
    if not (isinstance(beta, (int, float)) and 0.0 < beta < 1.0):
        raise ParameterError("beta", beta, "a probability in (0, 1)")
    live = [(m, float(c)) for m, c in terms if m is not None and c != 0.0]
    for _, c in live:
        if not math.isfinite(c):
            raise ParameterError("coefficient", c, "a finite number")
    if not live:
        return 0.0
    if len(live) == 1:
        m, c = live[0]
        return abs(c) * float(m.halfwidth(beta))
    try:
        # Mechanisms are frozen records: equal exactly when their parameters are.
        return _remembered(tuple(live), float(beta))
    except TypeError:  # a mechanism that cannot be a key: computed, not remembered
        return _convolved(live, float(beta))


@functools.lru_cache(maxsize=REMEMBERED)
def _remembered(live: tuple[tuple[_AdditiveLattice, float], ...], beta: float) -> float:
    """:func:`_convolved`, remembered by its exact inputs."""
    return _convolved(live, beta)


def _convolved(live: Sequence[tuple[_AdditiveLattice, float]], beta: float) -> float:
    """The bound of :func:`combination_halfwidth` for two or more live terms (module
    docstring)."""
    tau = beta * 1e-3 / len(live)
    cuts = [int(m.halfwidth(tau)) for m, _ in live]
    spread = max(abs(c) * k for (_, c), k in zip(live, cuts, strict=True))
    if spread == 0.0:
        return 0.0
    w = spread / RESOLUTION
    (m0, c0), k0 = live[0], cuts[0]
    lead: _Lead | None = (m0, c0, k0, w)
    try:
        hash(lead)
    except TypeError:  # a mechanism that cannot be a key: its law is computed, not remembered
        lead = None
    # law[i] is the mass at (i + offset)·w; moved: how far the placement may move the sum
    law, offset, moved = _term_law(m0, c0, k0, w) if lead is None else _lead_law(lead)
    for (m, c), k in zip(live[1:], cuts[1:], strict=True):
        pmf, low, shift = _term_law(m, c, k, w)
        moved += shift
        law, offset = _convolve(law, pmf), offset + low
    budget = beta - len(live) * tau - _FLOAT_MARGIN
    # mass strictly beyond j grid steps on either side, for every j ≥ 0
    distance = np.abs(np.arange(law.size) + offset)
    top = int(distance.max())
    # (the same sums as np.add.at on zeros, in the same order, in a third of the time)
    outside = np.bincount(distance, weights=law, minlength=top + 2)
    # beyond[j] = Σ_{i > j} outside[i]
    beyond = np.cumsum(outside[::-1])[::-1][1:]
    ok = np.nonzero(beyond <= budget)[0]
    j = int(ok[0]) if ok.size else top
    return (j * w + moved) * (1.0 + 1e-12)


def _term_law(
    mech: _AdditiveLattice, c: float, k: int, w: float
) -> tuple[npt.NDArray[np.float64], int, float]:
    """Over-estimated masses of c·N (|N| ≤ k) on the grid w·Z, the first grid index, and
    how far any value was moved (half a block plus half a grid step)."""
    block = max(1, int(w / abs(c)), -(-(2 * k + 1) // _MAX_BLOCKS))
    starts = np.arange(-k, k + 1, block, dtype=np.int64)
    ends = np.minimum(starts + block - 1, k)
    nearest = np.where(starts > 0, starts, np.where(ends < 0, -ends, 0))
    mass = mech._noise_pmf(nearest) * (ends - starts + 1).astype(np.float64)
    centre = c * (starts + ends).astype(np.float64) / 2.0
    idx = np.rint(centre / w).astype(np.int64)
    low = int(idx.min())
    law = np.bincount(idx - low, weights=mass).astype(np.float64)
    return law, low, abs(c) * (block - 1) / 2.0 + w / 2.0


#: A first term: its mechanism, coefficient, cut and grid step (the inputs of its law).
_Lead = tuple["_AdditiveLattice", float, int, float]
#: Spectra of first terms' laws by (id of the law, FFT size): (the law, its spectrum).
_SPECTRA: OrderedDict[tuple[int, int], tuple[npt.NDArray[Any], npt.NDArray[Any]]] = OrderedDict()
_SPECTRA_LOCK = threading.Lock()


@functools.lru_cache(maxsize=LEADS)
def _lead_law(lead: _Lead) -> tuple[npt.NDArray[np.float64], int, float]:
    """:func:`_term_law` of a first term, remembered (read-only: the callers share it)."""
    law, low, shift = _term_law(*lead)
    law.flags.writeable = False
    return law, low, shift


def _spectrum(a: npt.NDArray[np.float64], size: int) -> npt.NDArray[np.complex128]:
    """The real FFT of ``a`` at ``size`` points; remembered (read-only) when ``a`` is a first
    term's law from :func:`_lead_law`, the only read-only laws here. An entry holds its law,
    so the law's id cannot be reused while the entry lasts."""
    if a.flags.writeable:
        return np.fft.rfft(a, size)
    key = (id(a), size)
    with _SPECTRA_LOCK:
        hit = _SPECTRA.get(key)
        if hit is not None and hit[0] is a:
            _SPECTRA.move_to_end(key)
            return hit[1]
    spectrum = np.fft.rfft(a, size)
    spectrum.flags.writeable = False
    with _SPECTRA_LOCK:
        _SPECTRA[key] = (a, spectrum)
        while len(_SPECTRA) > LEADS:
            _SPECTRA.popitem(last=False)
    return spectrum


def _convolve(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    n = a.size + b.size - 1
    if min(a.size, b.size) <= 64:
        return np.convolve(a, b)
    size = 1 << (n - 1).bit_length()
    out = np.fft.irfft(_spectrum(a, size) * np.fft.rfft(b, size), size)[:n]
    # FFT rounding may leave tiny negatives (≈ 1e-16 of the largest entry): the margin covers
    # them, and clipping keeps every entry an over-estimate up to that margin.
    return np.maximum(out, 0.0)
