"""The Poisson-subsampled Gaussian mechanism: one DP-SGD step.

Each individual's row (a vector, e.g. a per-example gradient) is clipped to L2 norm C, kept
independently with probability q (Poisson sampling), the kept rows are summed and
N(0, (zC)²) noise is added per coordinate (Abadi et al. 2016; Mironov, Talwar & Zhang 2019,
"Rényi Differential Privacy of the Sampled Gaussian Mechanism"). Neighbouring datasets
differ by adding or removing one row, as in dp-accounting's default.

Secure release: every clipped row is mapped to the grid 2**-k by truncating each coordinate
toward zero (never increasing its norm, so a row's contribution stays ≤ C/grid units; an
exact integer check enforces it), the Bernoulli(q) choices are exact (q is a dyadic rational),
the sum is exact integer arithmetic, and the noise is the discrete Gaussian N_Z(0, (zC/grid)²)
per coordinate (CKS 2020, Algorithm 3).

Accounting: ``profile()`` certifies what ``release()`` does for a row of any dimension d.
One row moves the lattice sum by an integer vector v with ‖v‖² ≤ n = ⌊(C/grid)²⌋, and the
pair N_Z^d(v, s²) against N_Z^d(0, s²) (s = zC/grid, rounded down) is *not* a function of ‖v‖
alone: on coarse lattices the shift (3, 4) leaks more than the shift (5, 0). Every such pair,
for every d and every ‖v‖² ≤ n, is dominated by one continuous Gaussian pair of ratio r′
(:mod:`infodp.mechanisms._subsampled_lattice`: N_Z(0, s²) is below N(0, s′²) in the convex
order, s′² ≈ s² + 1/12, then a certified envelope), so the profile is the Poisson-subsampled
Gaussian with noise multiplier 1/r′; at the default grid r′ exceeds 1/z by about 1e-4
relatively. When n = 1 only the unit vectors ±e_i exist and the exact lattice pair
(:func:`infodp.accounting.discrete_subsampled_gaussian_profile`) is used. The continuous
profile at z is NOT an upper bound for the lattice release (at grid = C, z = 0.4, q = 0.1 it
understates δ(6) by a factor 2.8); it is kept as ``ideal_profile()`` for the idealised
mechanism.

>>> m = SubsampledGaussian(1.1, 0.01)
>>> round(m.profile().repeat(1000).epsilon(1e-5), 2)
1.52
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp._validate import as_positive, as_positive_int, as_probability
from infodp.accounting import (
    PrivacyProfile,
    discrete_subsampled_gaussian_profile,
    pure_dp_profile,
    subsampled_gaussian_profile,
)
from infodp.errors import ParameterError
from infodp.mechanisms._subsampled_lattice import dominating_gaussian_ratio
from infodp.mechanisms.base import ChannelView, Mechanism, _OnGrid, as_grid
from infodp.mechanisms.gaussian import _dgauss_pmf, _dgauss_tail
from infodp.mechanisms.sampling import as_generator, discrete_gaussian, require_secure_source

__all__ = ["SubsampledGaussian"]


def _as_rows(rows: Any) -> npt.NDArray[np.float64]:
    try:
        arr = np.asarray(rows, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("rows", "<data>", "a 2-d array of finite numbers") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or not np.isfinite(arr).all():
        raise ParameterError("rows", f"array of shape {arr.shape}", "a 2-d array of finite numbers")
    return arr


@dataclass(frozen=True)
class SubsampledGaussian(_OnGrid, Mechanism):
    """One Poisson-subsampled Gaussian step: noise multiplier z, sampling rate q, clip norm C.

    >>> from infodp.mechanisms.sampling import InsecureSeededSource
    >>> m = SubsampledGaussian(1.0, 0.5, clip_norm=1.0, grid=2.0**-4)
    >>> out = m.release([[0.3, 0.4], [3.0, 4.0]], source=InsecureSeededSource(
    ...     1, i_understand_this_is_not_private=True))
    >>> out.shape, bool(np.all(out * 16 == np.round(out * 16)))
    ((2,), True)
    """

    noise_multiplier: float
    sampling_rate: float
    clip_norm: float = 1.0
    grid: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "noise_multiplier", as_positive("noise_multiplier", self.noise_multiplier)
        )
        object.__setattr__(
            self, "sampling_rate", as_probability("sampling_rate", self.sampling_rate)
        )
        object.__setattr__(self, "clip_norm", as_positive("clip_norm", self.clip_norm))
        object.__setattr__(self, "grid", as_grid(self.grid, self.clip_norm))

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        delta: float,
        sensitivity: float = 1.0,
        sampling_rate: float = 0.01,
        steps: int = 1,
        grid: float | None = None,
    ) -> SubsampledGaussian:
        """The least noise multiplier (bisection, rounded up) meeting (ε, δ) after ``steps``.

        >>> m = SubsampledGaussian.calibrate(1.0, 1e-5, sampling_rate=0.01, steps=10)
        >>> m.profile().repeat(10).epsilon(1e-5) <= 1.0
        True
        """
        eps = as_positive("epsilon", epsilon)
        dlt = as_probability("delta", delta, open_low=True, open_high=True)
        q = as_probability("sampling_rate", sampling_rate, open_low=True)
        k = as_positive_int("steps", steps)

        g = as_grid(grid, sensitivity)

        def ok(z: float) -> bool:
            # The certified PLD of the lattice release (what ``profile()`` uses; its Rényi
            # curve is slower and only ever lowers ε), asked at a δ a little below the target.
            try:
                pld = cls(z, q, sensitivity, g).profile().repeat(k).pld()
            except ParameterError:  # too little noise for this grid to be certified
                return False
            return pld.epsilon(max(0.0, dlt * (1 - 1e-9) - 1e-14)) <= eps

        lo, hi = 0.05, 1.0
        while not ok(hi):
            lo, hi = hi, hi * 2
            if hi > 1e6:
                raise ParameterError("epsilon", epsilon, "reachable with noise multiplier ≤ 1e6")
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            if ok(mid):
                hi = mid
            else:
                lo = mid
            if hi - lo <= 1e-4 * hi:
                break
        while cls(hi, q, sensitivity, g).profile().repeat(k).epsilon(dlt) > eps:
            hi *= 1 + 1e-4  # never overshoot the target, whatever the rounding allowances
        return cls(hi, q, sensitivity, g)

    @property
    def sigma(self) -> float:
        """Noise standard deviation per coordinate, z·C."""
        return self.noise_multiplier * self.clip_norm

    @property
    def _lattice(self) -> tuple[float, int]:
        """(s, n): noise sd zC/grid rounded down and the bound ⌊(C/grid)²⌋ on ‖shift‖² (units)."""
        unit = Fraction(self._unit)
        exact = Fraction(self.noise_multiplier) * Fraction(self.clip_norm) / unit
        s = float(exact)
        if Fraction(s) > exact:  # never round σ up (a one-ulp change is far inside the
            s = math.nextafter(s, 0.0)  # 1e-9 relative margins of the lattice certificate)
        return s, math.floor((Fraction(self.clip_norm) / unit) ** 2)

    def profile(self) -> PrivacyProfile:
        """Certified profile of ``release()`` for rows of any dimension (module docstring).

        Raises ParameterError when the lattice is too coarse (noise below about one grid
        unit against a clip norm of several units) or too fine (noise above 2**16 units) for
        the certificate.

        >>> m = SubsampledGaussian(0.4, 0.1, clip_norm=1.0, grid=1.0)
        >>> m.profile().delta(6.0) > m.ideal_profile().delta(6.0)   # the lattice leaks more
        True
        """
        s, n = self._lattice
        q = self.sampling_rate
        if n == 0 or q == 0.0:
            return pure_dp_profile(0.0)
        if n == 1:  # only ±e_i: exactly the one-dimensional lattice pair
            return discrete_subsampled_gaussian_profile(s, 1, q)
        try:
            ratio = dominating_gaussian_ratio(s, n)
        except ParameterError:
            raise ParameterError(
                "grid",
                self.grid,
                f"a grid on which the noise z·C/grid = {s:g} units can be certified against "
                f"shifts of norm C/grid = {math.sqrt(n):g} units (between about 1 and 65536 "
                "units of noise)",
            ) from None
        noise = 1.0 / ratio
        return subsampled_gaussian_profile(math.nextafter(noise, 0.0), q)

    def ideal_profile(self) -> PrivacyProfile:
        """The continuous idealisation ``subsampled_gaussian_profile(z, q)``: NOT a bound for
        ``release()`` (which uses lattice noise), only for the idealised mechanism.

        >>> round(SubsampledGaussian(1.0, 1.0).ideal_profile().rdp(2.0), 6)
        1.0
        """
        return subsampled_gaussian_profile(self.noise_multiplier, self.sampling_rate)

    def _clip(self, rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        # scaled norms (no overflow for huge rows): ‖x‖ = m·‖x/m‖, m = max|x_j|
        peak = np.max(np.abs(rows), axis=1, initial=0.0)
        safe = np.where(peak > 0, peak, 1.0)
        scaled = rows / safe[:, None]
        norms = np.linalg.norm(scaled, axis=1)
        factor = np.ones(rows.shape[0])
        big = norms > self.clip_norm / safe
        factor[big] = (self.clip_norm / peak[big]) / norms[big]
        clipped = scaled * (safe * factor)[:, None]
        return np.where(big[:, None], clipped, rows)

    def _lattice_row(self, row: npt.NDArray[np.float64]) -> list[int]:
        g = Fraction(self._unit)
        units = [int(Fraction(float(x)) / g) for x in row]  # int() truncates toward zero
        bound = (Fraction(self.clip_norm) / g) ** 2
        while sum(n * n for n in units) > bound:  # float clipping may overshoot by an ulp
            i = max(range(len(units)), key=lambda j: abs(units[j]))
            units[i] -= 1 if units[i] > 0 else -1
        return units

    def release(self, value: Any, *, source: Any = None) -> npt.NDArray[np.float64]:
        """Noisy sum of the clipped, Poisson-sampled rows of ``value`` (n × d), on the grid."""
        rows = self._clip(_as_rows(value))
        src = require_secure_source(source)
        q = Fraction(self.sampling_rate)
        total = [0] * rows.shape[1]
        for row in rows:
            if src.bernoulli(q.numerator, q.denominator):
                for j, n in enumerate(self._lattice_row(row)):
                    total[j] += n
        sigma_units = Fraction(self.noise_multiplier) * Fraction(self.clip_norm)
        sigma_units /= Fraction(self._unit)
        noisy = [t + discrete_gaussian(sigma_units, src) for t in total]
        return np.array([float(Fraction(n) * Fraction(self._unit)) for n in noisy])

    def simulate(self, value: Any, size: int, rng: Any = None) -> npt.NDArray[np.float64]:
        """Simulation only, NOT private: ``size`` idealised steps (continuous noise), size × d."""
        rows = self._clip(_as_rows(value))
        n = as_positive_int("size", size, minimum=0)
        gen = as_generator(rng)
        mask = gen.random((n, rows.shape[0])) < self.sampling_rate
        sums = mask.astype(np.float64) @ rows
        return np.asarray(sums + gen.normal(0.0, self.sigma, size=sums.shape), dtype=np.float64)

    def channel(
        self,
        contributions: Sequence[float | None],
        *,
        tail: float = 1e-9,
        max_outputs: int = 4001,
    ) -> ChannelView:
        """1-d channel of the secure release for one individual's contribution.

        ``None`` means the individual is absent (output N_Z(0, σ²) in grid units); a number c
        (|c| ≤ C) means present: the mixture (1 − q) N_Z(0, σ²) + q N_Z(trunc(c/grid), σ²).
        """
        from infodp.channel import Channel

        tol = as_probability("tail", tail, open_low=True, open_high=True)
        cap = as_positive_int("max_outputs", max_outputs, minimum=2)
        values = list(contributions)
        if not values:
            raise ParameterError("contributions", contributions, "a non-empty sequence")
        shifts: list[int | None] = []
        for c in values:
            if c is None:
                shifts.append(None)
                continue
            x = float(c)
            if not math.isfinite(x) or abs(x) > self.clip_norm:
                raise ParameterError("contributions", c, f"None or a number in ±{self.clip_norm:g}")
            shifts.append(self._lattice_row(np.array([x]))[0])
        s = self.sigma / self._unit
        width = 1
        while _dgauss_tail(s, width + 1) > tol:
            width *= 2
            if width > cap:  # the tails are bounded below by TAIL_FLOOR: stop the search
                raise ParameterError(
                    "max_outputs", cap, f"at least {2 * width + 1}; or a larger tail tolerance"
                )
        present = [v for v in shifts if v is not None]
        lo = min([0, *present]) - width
        hi = max([0, *present]) + width
        if hi - lo + 1 > cap:
            raise ParameterError(
                "max_outputs", cap, f"at least {hi - lo + 1}; choose a coarser grid"
            )
        ys = np.arange(lo, hi + 1, dtype=np.int64)

        def row_of(c: int) -> npt.NDArray[np.float64]:
            r = _dgauss_pmf(s, ys - c)
            r[0] += _dgauss_tail(s, c - lo + 1)
            r[-1] += _dgauss_tail(s, hi - c + 1)
            return r

        q = self.sampling_rate
        rows = [row_of(0) if v is None else (1 - q) * row_of(0) + q * row_of(v) for v in shifts]
        lumped = max(_dgauss_tail(s, width + 1) * 2, 0.0)
        rows = [r / math.fsum(r.tolist()) for r in rows]
        return ChannelView(
            Channel(
                np.array(rows),
                inputs=[repr(v) for v in values],
                outputs=[float(y) * self._unit for y in ys],
            ),
            lumped,
            f"1-d outputs on the grid {self._unit:g}·[{lo}, {hi}], tails lumped into the ends",
        )
