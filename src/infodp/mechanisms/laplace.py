"""The Laplace mechanism, released securely on a grid, and the discrete Laplace (geometric).

The textbook Laplace mechanism adds Lap(Δ/ε) noise to a real value (Dwork, McSherry, Nissim &
Smith 2006; Dwork & Roth 2014). Sampled with floating point it leaks through the low-order bits
(Mironov 2012), so :meth:`LaplaceMechanism.release` instead snaps the value to a grid
2**-k and adds *discrete* Laplace noise in grid units, drawn exactly (Canonne, Kamath &
Steinke 2020, Algorithm 2) with the sensitivity inflated for the snapping
(Δ → ceil(Δ/grid) + 1 units, see :mod:`infodp.mechanisms.base`). Its ``profile()`` is that
of the discrete Laplace with the inflated sensitivity: pure ε = (ceil(Δ/g) + 1)·g/scale.

>>> m = LaplaceMechanism.calibrate(epsilon=1.0, sensitivity=1.0)
>>> m.profile().pure_epsilon() <= 1.0
True
>>> round(m.scale, 4)   # Δ/ε inflated by (1024 + 1)/1024 for the 2**-10 grid
1.001
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from infodp._np import np, npt
from infodp._validate import as_nonnegative, as_positive, as_positive_int
from infodp.accounting import discrete_laplace_profile, laplace_profile
from infodp.mechanisms.base import (
    NoiseFamily,
    _IntegerFamily,
    _SnappedFamily,
    as_grid,
    grid_sensitivity,
    round_up,
    tail_up,
)
from infodp.mechanisms.sampling import (
    discrete_laplace,
    discrete_laplace_batch,
    discrete_laplace_batches,
    simulate_discrete_laplace,
)

__all__ = ["DiscreteLaplaceMechanism", "LaplaceMechanism"]


def _dlap_pmf(scale: float, k: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    # Lap_Z(b): P(k) = (1 − q)/(1 + q) q^|k|, q = e^{−1/b} (CKS 2020, Definition 2; log domain).
    log_norm = math.log(-math.expm1(-1.0 / scale)) - math.log1p(math.exp(-1.0 / scale))
    return np.exp(log_norm - np.abs(k).astype(np.float64) / scale)


def _dlap_tail(scale: float, k: int) -> float:
    # P[N ≥ k] = q^k / (1 + q) for k ≥ 1 (geometric series of the pmf above), rounded up.
    return tail_up(math.exp(-k / scale - math.log1p(math.exp(-1.0 / scale))))


#: Lap_Z noise: the secure release of both Laplace mechanisms.
_LAPLACE = NoiseFamily(
    _dlap_pmf,
    _dlap_tail,
    discrete_laplace,
    simulate_discrete_laplace,
    discrete_laplace_profile,
    laplace_profile,
)


@dataclass(frozen=True)
class LaplaceMechanism(_SnappedFamily):
    """Laplace noise of scale ``scale`` for a real value of L1 ``sensitivity``, on a grid.

    ``grid`` is a power of two (None: 2**(floor(log2 Δ) − 10)). The release is
    ``grid·(round(x/grid) + N)`` with N ~ Lap_Z(scale/grid) exactly; ``profile()`` is
    ``discrete_laplace_profile(scale/grid, ceil(Δ/grid) + 1)``.

    >>> m = LaplaceMechanism(2.0, sensitivity=1.0, grid=0.25)
    >>> m.integer_sensitivity, round(m.profile().pure_epsilon(), 6)   # (4 + 1)·0.25/2
    (5, 0.625)
    >>> from infodp.mechanisms.sampling import InsecureSeededSource
    >>> y = m.release(10.0, source=InsecureSeededSource(0, i_understand_this_is_not_private=True))
    >>> (y * 4).is_integer()
    True
    """

    scale: float
    sensitivity: float = 1.0
    grid: float | None = None

    _family = _LAPLACE
    _parameter = "scale"

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        delta: float = 0.0,
        sensitivity: float = 1.0,
        grid: float | None = None,
    ) -> LaplaceMechanism:
        """The least-noise mechanism whose release is ``epsilon``-DP (never above it).

        scale = (ceil(Δ/g) + 1)·g/ε rounded up: Lap_Z(b) with integer sensitivity m is
        (m/b)-DP, since P(k)/P(k + m) ≤ e^(m/b) (Ghosh, Roughgarden & Sundararajan 2009,
        geometric mechanism); ``delta`` is accepted and unused (pure DP).

        >>> m = LaplaceMechanism.calibrate(0.5, sensitivity=2.0, grid=0.5)
        >>> m.scale, m.profile().pure_epsilon()
        (5.0, 0.5)
        """
        eps = as_positive("epsilon", epsilon)
        as_nonnegative("delta", delta)
        d = as_positive("sensitivity", sensitivity)
        g = as_grid(grid, d)
        scale = grid_sensitivity(d, g) * g / eps
        scale = round_up(lambda s: cls(s, d, g).profile().pure_epsilon() <= eps, scale, "scale")
        return cls(scale, d, g)

    @property
    def grid_scale(self) -> float:
        """The noise scale in grid units, scale/grid (exact: grid is a power of two)."""
        return self._noise_parameter


@dataclass(frozen=True)
class DiscreteLaplaceMechanism(_IntegerFamily):
    """Discrete Laplace (two-sided geometric) noise for an integer value, P(k) ∝ e^(−|k|/scale).

    ε = sensitivity/scale (pure DP; Ghosh, Roughgarden & Sundararajan 2009 for the geometric
    mechanism; CKS 2020 Algorithm 2 for the exact sampler).

    >>> m = DiscreteLaplaceMechanism.calibrate(epsilon=0.5, sensitivity=2)
    >>> m.scale, m.profile().pure_epsilon()
    (4.0, 0.5)
    >>> from infodp.mechanisms.sampling import InsecureSeededSource
    >>> isinstance(m.release(7, source=InsecureSeededSource(1, i_understand_this_is_not_private=True)), int)
    True
    """  # noqa: E501

    scale: float
    sensitivity: int = 1

    _family = _LAPLACE
    _parameter = "scale"

    @classmethod
    def calibrate(
        cls, epsilon: float, delta: float = 0.0, sensitivity: int = 1
    ) -> DiscreteLaplaceMechanism:
        """scale = Δ/ε rounded up so that the profile's ε never exceeds ``epsilon``."""
        eps = as_positive("epsilon", epsilon)
        as_nonnegative("delta", delta)
        d = as_positive_int("sensitivity", sensitivity)
        scale = round_up(lambda s: cls(s, d).profile().pure_epsilon() <= eps, d / eps, "scale")
        return cls(scale, d)

    def _exact_noise_batch(self, size: int, source: Any) -> list[int]:
        return discrete_laplace_batch(Fraction(self.scale), size, source)

    @staticmethod
    def noise_batches(
        mechanisms: Sequence[DiscreteLaplaceMechanism], size: int, source: Any = None
    ) -> list[list[int]]:
        """``size`` exact noise draws (grid units) for each of ``mechanisms``, drawn together.

        The same distribution per mechanism as :meth:`release_batch` on zeros (the exact
        discrete Laplace of its scale, CKS 2020), in one vectorised pass over all of them
        (:func:`~infodp.mechanisms.sampling.discrete_laplace_batches`).

        >>> from infodp.mechanisms import InsecureSeededSource
        >>> src = InsecureSeededSource(0, i_understand_this_is_not_private=True)
        >>> ms = [DiscreteLaplaceMechanism(2.0), DiscreteLaplaceMechanism(50.0)]
        >>> tuple(len(z) for z in DiscreteLaplaceMechanism.noise_batches(ms, 80, src))
        (80, 80)
        """
        scales = [Fraction(m.scale) for m in mechanisms]
        return discrete_laplace_batches(scales, [size] * len(scales), source)

    def upper_tail(self, k: int) -> float:
        """P[N ≥ k] = q^k/(1 + q), q = e^(−1/scale), for k ≥ 1 (CKS 2020, Definition 2),
        rounded up (:func:`~infodp.mechanisms.base.tail_up`)."""
        return 1.0 if k <= 0 else _dlap_tail(self.scale, k)
