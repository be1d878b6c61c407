"""What every mechanism shares: the interface, the release grid and the channel view.

A mechanism is an immutable value. It releases through a secure path (exact discrete samplers
on a cryptographic source, see :mod:`infodp.mechanisms.sampling`), simulates through a fast
numpy path that is *not* private (``simulate``), and exposes two views of itself: its
:class:`~infodp.accounting.PrivacyProfile` (``profile()``) and its channel (``channel(...)``,
a :class:`ChannelView` wrapping a :class:`~infodp.channel.Channel`).

Real-valued releases are made on a grid of spacing ``grid = 2**-k``: the true value is
snapped to the nearest grid point and integer noise (in grid units) is added. Snapping two
values at distance ≤ Δ gives grid points at most ``ceil(Δ/grid) + 1`` units apart (each
snap moves a value by at most half a unit), so the noise is calibrated, and the profile
stated, for that inflated integer sensitivity.

>>> grid_sensitivity(1.0, 2.0**-10)
1025
>>> snap(0.3, 0.25)
1
>>> default_grid(1.0) == 2.0**-10
True
"""

from __future__ import annotations

import math
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

from infodp._np import np, npt
from infodp._validate import as_positive, as_positive_int, as_real
from infodp.errors import InternalError, ParameterError

if TYPE_CHECKING:
    from infodp.accounting import PrivacyProfile
    from infodp.channel import Channel

__all__ = [
    "GRID_BITS",
    "MIN_TAIL_TARGET",
    "TAIL_FLOOR",
    "TAIL_ROUND",
    "ChannelView",
    "Mechanism",
    "NoiseFamily",
    "as_grid",
    "default_grid",
    "grid_sensitivity",
    "lattice_channel",
    "round_up",
    "snap",
    "tail_up",
]

#: The default grid resolves the sensitivity into 2**GRID_BITS to 2**(GRID_BITS+1) units, so
#: the rounding inflates the sensitivity (hence the noise) by at most 2/2**GRID_BITS ≈ 0.2%.
GRID_BITS = 10

# Largest number of grid points a channel view evaluates before merging them into outputs.
_MAX_FINE_OUTPUTS = 4_000_000

#: Relative round-up of a tail probability computed in floats. Its exponents are at most
#: ~800 nats (anything further underflows), so exp, log1p and an fsum of exps err by less
#: than 800 · 4 · 2⁻⁵³ ≈ 4e-13 relative: 1e-9 leaves a margin of 2500.
TAIL_ROUND = 1e-9
#: Below the smallest normal float (2⁻¹⁰²²) a computed tail loses its relative precision (or
#: underflows to 0): a tail is never reported below it.
TAIL_FLOOR = sys.float_info.min
#: The smallest probability (a half-width's β, a threshold's δ) a float tail can certify:
#: far above TAIL_FLOOR, so that searches over tails end.
MIN_TAIL_TARGET = 1e-300


def tail_up(value: float) -> float:
    """An upper bound on the tail probability that ``value`` computes in floats.

    ``value·(1 + TAIL_ROUND)``, at least ``TAIL_FLOOR`` and at most 1: reported accuracy
    (half-widths) and thresholds built on it are never optimistic.

    >>> tail_up(0.25) > 0.25, tail_up(0.0) > 0.0, tail_up(1.0)
    (True, True, 1.0)
    """
    return min(1.0, max(value * (1.0 + TAIL_ROUND), TAIL_FLOOR))


class Mechanism(ABC):
    """Interface of every mechanism (subclasses are frozen dataclasses).

    >>> from infodp.mechanisms import LaplaceMechanism
    >>> isinstance(LaplaceMechanism(1.0), Mechanism)
    True
    """

    @abstractmethod
    def profile(self) -> PrivacyProfile:
        """The privacy profile of :meth:`release` (what the secure release guarantees)."""

    @abstractmethod
    def release(self, value: Any, *, source: Any = None) -> Any:
        """Release a private value (secure path; ``source`` None = cryptographic)."""

    @abstractmethod
    def simulate(self, value: Any, size: int, rng: Any = None) -> Any:
        """Simulation only, NOT private: ``size`` fast numpy draws of the release."""


@dataclass(frozen=True)
class ChannelView:
    """A mechanism's channel over a stated input set and output grid.

    ``channel`` rows are the release's output distributions for each input. When outputs are
    windowed, the mass outside the window is lumped into the two end outputs: the view is then
    a post-processing of the release, so by the data-processing inequality (“Differential Privacy
    and Information Theory” (2022)) every
    capacity and divergence of the view is ≤ the mechanism's. ``tail_mass`` is the largest
    mass any row had lumped (0 for an exact view) and bounds the total-variation distance
    between a row of the view and the release's law restricted to the window.

    >>> from infodp.mechanisms import DiscreteLaplaceMechanism
    >>> view = DiscreteLaplaceMechanism(1.0).channel([0, 1], tail=1e-6)
    >>> view.channel.n_inputs, view.tail_mass <= 2e-6
    (2, True)
    """

    channel: Channel
    tail_mass: float
    description: str


def default_grid(sensitivity: float) -> float:
    """The default grid: the power of two 2**(floor(log2 Δ) − GRID_BITS).

    >>> default_grid(3.0) == 2.0**-9
    True
    """
    d = as_positive("sensitivity", sensitivity)
    return math.ldexp(1.0, math.frexp(d)[1] - 1 - GRID_BITS)


def as_grid(grid: Any, sensitivity: float) -> float:
    """Validate ``grid`` (a power of two; None → :func:`default_grid`).

    >>> as_grid(0.1, 1.0)
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: grid must be a power of two (2**k for an integer k), or None for the default; got 0.1.
    """  # noqa: E501
    if grid is None:
        return default_grid(sensitivity)
    g = as_positive("grid", grid)
    if math.frexp(g)[0] != 0.5:
        raise ParameterError(
            "grid", grid, "a power of two (2**k for an integer k), or None for the default"
        )
    return g


def grid_sensitivity(sensitivity: float, grid: float) -> int:
    """Sensitivity in grid units after snapping, rounded up: ceil(Δ/grid) + 1.

    Exact (Fractions): |round(x/g) − round(x'/g)| ≤ |x − x'|/g + 1 ≤ Δ/g + 1.

    >>> grid_sensitivity(0.75, 0.25)
    4
    """
    ratio = Fraction(sensitivity) / Fraction(grid)
    return math.ceil(ratio) + 1


def snap(value: Any, grid: float) -> int:
    """The nearest grid point to ``value``, in grid units (exact rational arithmetic).

    >>> snap(-0.6, 0.5)
    -1
    """
    x = as_real("value", value)
    return round(Fraction(x) / Fraction(grid))


def round_up(ok: Callable[[float], bool], value: float, name: str, *, rel: float = 0.0) -> float:
    """The least value ≥ ``value`` found with ``ok(value)`` true: calibration rounds noise up.

    Steps grow from one ulp (or ``rel``·value) geometrically, then bisect back; the result
    always satisfies ``ok`` (``ok`` is assumed monotone: more noise never hurts privacy).

    >>> round_up(lambda s: s >= 2.5, 1.0, "scale", rel=1e-3) >= 2.5
    True
    """
    if ok(value):
        return value
    lo, step = value, max(math.ulp(value), rel * value)
    for _ in range(400):
        hi = value + step
        if ok(hi):
            for _ in range(12 if rel > 0 else 0):
                mid = 0.5 * (lo + hi)
                if mid in (lo, hi):
                    break
                if ok(mid):
                    hi = mid
                else:
                    lo = mid
            return hi
        lo, step = hi, 2 * step
    raise InternalError(f"calibration of {name} did not meet its target")


def lattice_channel(
    centers: Sequence[int],
    pmf: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.float64]],
    tail: Callable[[int], float],
    *,
    width: int,
    unit: float,
    inputs: Sequence[Any],
    max_outputs: int,
) -> ChannelView:
    """Channel of ``center + N`` (N symmetric integer noise) over a window, tails lumped.

    ``pmf(k)`` is P[N = k] (vectorised), ``tail(k)`` is P[N ≥ k] for k ≥ 1; the window is
    [min center − width, max center + width] and its end outputs also carry the mass beyond.
    When the window has more than ``max_outputs`` points, runs of adjacent points are merged
    into one output each (post-processing: capacities of the view stay lower bounds).

    >>> import numpy as np
    >>> pmf = lambda k: np.where(np.abs(k) <= 1, 1 / 3, 0.0)  # uniform noise on {-1, 0, 1}
    >>> view = lattice_channel([0, 1], pmf, lambda k: 0.0, width=1, unit=1.0,
    ...                        inputs=[0, 1], max_outputs=10)
    >>> view.channel.matrix.round(3).tolist()
    [[0.333, 0.333, 0.333, 0.0], [0.0, 0.333, 0.333, 0.333]]
    """
    from infodp.channel import Channel

    lo = min(centers) - width
    hi = max(centers) + width
    n_out = hi - lo + 1
    if n_out > _MAX_FINE_OUTPUTS:
        raise ParameterError(
            "inputs",
            f"{len(centers)} inputs needing {n_out} grid outputs",
            f"a view of at most {_MAX_FINE_OUTPUTS} grid points; choose a coarser grid or a "
            "larger tail tolerance",
        )
    # More grid points than max_outputs: merge runs of `factor` adjacent points into one
    # output (a post-processing, so the view's capacities stay ≤ the release's).
    factor = -(-n_out // max_outputs)
    ys = np.arange(lo, hi + 1, dtype=np.int64)
    pad = (-n_out) % factor
    rows = []
    lumped = 0.0
    for c in centers:
        row = pmf(ys - c).astype(np.float64)
        left = tail(c - lo + 1)  # P[N <= lo - c - 1] = P[N >= c - lo + 1] by symmetry
        right = tail(hi - c + 1)
        row[0] += left
        row[-1] += right
        lumped = max(lumped, left + right)
        if factor > 1:
            row = np.concatenate([row, np.zeros(pad)]).reshape(-1, factor).sum(axis=1)
        rows.append(row / math.fsum(row.tolist()))
    starts = ys[::factor]
    outputs = [float(y) * unit for y in starts]
    binned = "" if factor == 1 else f", merged in runs of {factor} points (labels: run starts)"
    channel = Channel(np.array(rows), inputs=list(inputs), outputs=outputs)
    return ChannelView(
        channel=channel,
        tail_mass=lumped,
        description=(
            f"outputs on the grid {unit:g}·[{lo}, {hi}]{binned}, tails lumped into the ends"
        ),
    )


class _AdditiveLattice(Mechanism):
    """Shared release/simulate/channel code of ``value + integer noise`` on a grid.

    Subclasses (frozen dataclasses) provide the unit, the sensitivity and the noise.
    """

    #: True for mechanisms on integers (unit 1, inputs must be integers, no snapping).
    _integer: bool = False

    @property
    @abstractmethod
    def _unit(self) -> float: ...

    @property
    @abstractmethod
    def _sensitivity(self) -> float: ...

    @abstractmethod
    def _noise_pmf(self, k: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]: ...

    @abstractmethod
    def _noise_tail(self, k: int) -> float: ...

    @abstractmethod
    def _exact_noise(self, source: Any) -> int: ...

    @abstractmethod
    def _fast_noise(self, size: int, gen: np.random.Generator) -> npt.NDArray[np.int64]: ...

    def _center(self, value: Any) -> int:
        if self._integer:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ParameterError("value", value, "an integer (this mechanism works on Z)")
            return int(value)
        return snap(value, self._unit)

    def release(self, value: Any, *, source: Any = None) -> Any:
        """Release ``value`` privately: snap to the grid, add exact integer noise.

        ``source`` must be None (the cryptographic source) or a RandomSource; a seed is
        refused (see :func:`~infodp.mechanisms.sampling.require_secure_source`).
        """
        from infodp.mechanisms.sampling import require_secure_source

        src = require_secure_source(source)
        n = self._center(value) + self._exact_noise(src)
        return n if self._integer else float(Fraction(n) * Fraction(self._unit))

    def _exact_noise_batch(self, size: int, source: Any) -> list[int]:
        # Subclasses with a vectorised exact sampler override this (same distribution).
        return [self._exact_noise(source) for _ in range(size)]

    def release_batch(self, values: Sequence[int], *, source: Any = None) -> list[int]:
        """``values[i]`` + independent exact noise each, in grid units (one batch of draws).

        The same distribution per value as :meth:`release` on an integer value; for snapped
        mechanisms the values are already in grid units (integers).

        >>> from infodp.mechanisms import DiscreteLaplaceMechanism, InsecureSeededSource
        >>> src = InsecureSeededSource(0, i_understand_this_is_not_private=True)
        >>> len(DiscreteLaplaceMechanism(2.0).release_batch([0] * 5, source=src))
        5
        """
        from infodp.mechanisms.sampling import require_secure_source

        src = require_secure_source(source)
        ints = [int(v) for v in values]
        noise = self._exact_noise_batch(len(ints), src)
        return [v + z for v, z in zip(ints, noise, strict=True)]

    def upper_tail(self, k: int) -> float:
        """An upper bound on P[N ≥ k] of the integer noise N (k ≥ 1), never understated.

        ``_noise_tail`` is rounded up (:func:`tail_up`) by every mechanism.
        """
        return 1.0 if k <= 0 else self._noise_tail(k)

    def halfwidth(self, beta: float) -> int:
        """The smallest integer h ≥ 0 with P(|N| > h) ≤ β (grid units), never optimistic.

        P(|N| > h) = 2·P[N ≥ h + 1] (symmetric noise); found by doubling and bisection on
        :meth:`upper_tail`.

        >>> from infodp.mechanisms import DiscreteLaplaceMechanism
        >>> DiscreteLaplaceMechanism(10.0).halfwidth(0.05)
        30
        """
        from infodp._validate import as_probability

        b = as_probability("beta", beta, open_low=True, open_high=True)
        if b < MIN_TAIL_TARGET:
            raise ParameterError(
                "beta", beta, f"a probability in [{MIN_TAIL_TARGET:g}, 1) (a float tail bound)"
            )
        return _halfwidth(self, b)

    def simulate(self, value: Any, size: int, rng: Any = None) -> Any:
        """Simulation only, NOT private: ``size`` draws of the release for ``value`` (numpy)."""
        from infodp._validate import as_positive_int
        from infodp.mechanisms.sampling import as_generator

        n = as_positive_int("size", size, minimum=0)
        draws = self._center(value) + self._fast_noise(n, as_generator(rng))
        return draws if self._integer else draws.astype(np.float64) * self._unit

    def channel(
        self, inputs: Sequence[Any], *, tail: float = 1e-9, max_outputs: int = 4001
    ) -> ChannelView:
        """The channel of the release over ``inputs`` (values at most one sensitivity apart).

        Outputs are the grid points within a window whose excluded mass per side is ≤
        ``tail``; that mass is lumped into the end outputs (``ChannelView.tail_mass``). With
        more than ``max_outputs`` points, adjacent points are merged (see
        :func:`lattice_channel`).
        """
        from infodp._validate import as_positive_int, as_probability

        tol = as_probability("tail", tail, open_low=True, open_high=True)
        cap = as_positive_int("max_outputs", max_outputs, minimum=2)
        values = list(inputs)
        if not values:
            raise ParameterError("inputs", inputs, "a non-empty sequence of values")
        centers = [self._center(v) for v in values]
        spread = max(float(v) for v in values) - min(float(v) for v in values)
        if spread > self._sensitivity:
            raise ParameterError(
                "inputs",
                values,
                f"values at most the sensitivity {self._sensitivity:g} apart (neighbouring "
                "datasets), so that the view measures one individual's influence",
            )
        width = 1
        while self._noise_tail(width + 1) > tol:
            width *= 2
            if width > _MAX_FINE_OUTPUTS:
                raise ParameterError(
                    "tail",
                    tail,
                    "a tolerance the noise reaches within the view; use a coarser grid",
                )
        return lattice_channel(
            centers,
            self._noise_pmf,
            self._noise_tail,
            width=width,
            unit=self._unit,
            inputs=values,
            max_outputs=cap,
        )


def _halfwidth(mech: _AdditiveLattice, beta: float) -> int:
    key = (mech, beta)
    cached = _HALFWIDTHS.get(key)
    if cached is not None:
        return cached
    hi = 1
    while 2.0 * mech.upper_tail(hi + 1) > beta:
        hi *= 2
    lo = 0 if 2.0 * mech.upper_tail(1) > beta else -1
    if lo == -1:
        h = 0
    else:
        while hi - lo > 1:  # invariant: lo fails, hi meets the target
            mid = (lo + hi) // 2
            if 2.0 * mech.upper_tail(mid + 1) > beta:
                lo = mid
            else:
                hi = mid
        h = hi
    if len(_HALFWIDTHS) > 4096:
        _HALFWIDTHS.clear()
    _HALFWIDTHS[key] = h
    return h


#: Half-widths already found, per (mechanism, β): the same for every cell of a measurement.
_HALFWIDTHS: dict[tuple[Any, float], int] = {}


class _OnGrid:
    """A mechanism releasing on a grid: a frozen dataclass with a field ``grid``, resolved to
    a power of two in ``__post_init__``, which is its unit."""

    if TYPE_CHECKING:
        grid: float | None

    @property
    def _unit(self) -> float:
        if self.grid is None:
            raise InternalError("grid not resolved")
        return self.grid


class _SnappedReal(_OnGrid, _AdditiveLattice):
    """A real-valued lattice mechanism: inputs are snapped to ``grid``, sensitivity is real.

    Subclasses are frozen dataclasses with fields ``sensitivity`` and ``grid`` (resolved to a
    power of two in ``__post_init__``); this class derives the grid-unit quantities from them.
    """

    if TYPE_CHECKING:
        sensitivity: float

    @property
    def _sensitivity(self) -> float:
        return self.sensitivity

    @property
    def integer_sensitivity(self) -> int:
        """Sensitivity in grid units after snapping: ceil(Δ/grid) + 1."""
        return grid_sensitivity(self.sensitivity, self._unit)


@dataclass(frozen=True)
class NoiseFamily:
    """Integer noise of one family, given by its parameter in lattice units (a scale or σ).

    Everything a lattice mechanism needs from its noise: the pmf and a rounded-up upper tail
    (for intervals and channels), the exact sampler (on a :class:`Fraction` parameter, for
    releases), the fast numpy sampler (simulation only) and the profile of ``value + noise``
    at an integer sensitivity.
    """

    pmf: Callable[[float, npt.NDArray[np.int64]], npt.NDArray[np.float64]]
    tail: Callable[[float, int], float]
    exact: Callable[[Fraction, Any], int]
    simulate: Callable[[float, int, np.random.Generator], npt.NDArray[np.int64]]
    profile: Callable[[float, int], PrivacyProfile]
    #: The continuous noise's profile (value units, real sensitivity): what an ideal,
    #: unsnapped release would guarantee (never what the release guarantees).
    continuous: Callable[[float, float], PrivacyProfile] | None = None


class _FamilyLattice(_AdditiveLattice):
    """A lattice mechanism whose noise is one :class:`NoiseFamily`; the subclass names the field
    holding the family's parameter (``_parameter``) in value units."""

    _family: ClassVar[NoiseFamily]
    _parameter: ClassVar[str]

    @property
    def _noise_parameter(self) -> float:
        # The parameter in grid units (exact: the grid is a power of two, or 1 on Z).
        return float(getattr(self, self._parameter)) / self._unit

    @property
    def _lattice_sensitivity(self) -> int:
        if self._integer:
            return int(self._sensitivity)
        return grid_sensitivity(self._sensitivity, self._unit)

    def profile(self) -> PrivacyProfile:
        """Profile of the release: the family's noise at the integer (snapped) sensitivity."""
        return self._family.profile(self._noise_parameter, self._lattice_sensitivity)

    def _noise_pmf(self, k: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        return self._family.pmf(self._noise_parameter, k)

    def _noise_tail(self, k: int) -> float:
        return self._family.tail(self._noise_parameter, k)

    def _exact_noise(self, source: Any) -> int:
        units = Fraction(getattr(self, self._parameter)) / Fraction(self._unit)
        return self._family.exact(units, source)

    def _fast_noise(self, size: int, gen: np.random.Generator) -> npt.NDArray[np.int64]:
        return self._family.simulate(self._noise_parameter, size, gen)


class _SnappedFamily(_SnappedReal, _FamilyLattice):
    """A real value snapped to a grid plus family noise (Laplace, Gaussian): fields
    ``<parameter>``, ``sensitivity`` and ``grid``."""

    def __post_init__(self) -> None:
        name = self._parameter
        object.__setattr__(self, name, as_positive(name, getattr(self, name)))
        object.__setattr__(self, "sensitivity", as_positive("sensitivity", self.sensitivity))
        object.__setattr__(self, "grid", as_grid(self.grid, self.sensitivity))

    def ideal_profile(self) -> PrivacyProfile:
        """Profile of the idealised continuous mechanism (NOT what release guarantees).

        >>> from infodp.mechanisms import GaussianMechanism, LaplaceMechanism
        >>> LaplaceMechanism(1.0).ideal_profile().pure_epsilon()
        1.0
        >>> GaussianMechanism(2.0).ideal_profile().zcdp_rho()
        0.125
        """
        if self._family.continuous is None:
            raise InternalError(f"{type(self).__name__} has no continuous counterpart")
        return self._family.continuous(getattr(self, self._parameter), self.sensitivity)


class _IntegerFamily(_FamilyLattice):
    """An integer value plus family noise (discrete Laplace, discrete Gaussian): fields
    ``<parameter>`` and an integer ``sensitivity``; no grid."""

    _integer = True

    if TYPE_CHECKING:
        sensitivity: int

    def __post_init__(self) -> None:
        name = self._parameter
        object.__setattr__(self, name, as_positive(name, getattr(self, name)))
        object.__setattr__(self, "sensitivity", as_positive_int("sensitivity", self.sensitivity))

    @property
    def _unit(self) -> float:
        return 1.0

    @property
    def _sensitivity(self) -> float:
        return float(self.sensitivity)
