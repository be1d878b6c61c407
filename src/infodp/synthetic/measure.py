"""Measuring marginals: exact counts of a clique of attributes, plus secure discrete Gaussian
noise, and the private selection of which marginal to measure.

A marginal is the contingency table of a few attributes (a *clique*). One unit adds or removes
at most ``m`` rows (``max_rows_per_unit``, 1 for one row per person), so a marginal's L1 and L2
sensitivity are both at most m. Its noisy release adds independent N_Z(0, σ²) to every cell,
drawn exactly by :func:`infodp.mechanisms.sampling.discrete_gaussian_batch` (Canonne, Kamath &
Steinke 2020, Algorithm 3): the released counts are integers, and no floating-point noise ever
touches a private count. Selection is infodp's exponential mechanism
(:class:`infodp.mechanisms.exponential.ExponentialMechanism`, an exact sampler).

>>> import numpy as np
>>> from infodp.mechanisms.sampling import InsecureSeededSource
>>> codes = np.array([[0, 1], [1, 1], [1, 0]])
>>> marginal(codes, (2, 2), (0, 1)).tolist()
[0, 1, 1, 1]
>>> src = InsecureSeededSource(3, i_understand_this_is_not_private=True)
>>> m = measure(codes, (2, 2), (0, 1), Fraction(1, 1000), src)
>>> m.values.tolist(), m.values.dtype.kind
([0, 1, 1, 1], 'i')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from infodp.mechanisms.exponential import ExponentialMechanism
from infodp.mechanisms.sampling import RandomSource, discrete_gaussian_batch

__all__ = ["Clique", "Measurement", "marginal", "measure", "select"]

#: A clique: attribute positions in increasing order.
Clique = tuple[int, ...]


def marginal(
    codes: npt.NDArray[np.int64], sizes: Sequence[int], clique: Clique
) -> npt.NDArray[np.int64]:
    """Exact counts of the marginal on ``clique`` (row-major over its attributes' codes)."""
    shape = [sizes[i] for i in clique]
    if not clique:
        return np.array([codes.shape[0]], dtype=np.int64)
    flat = np.ravel_multi_index(tuple(codes[:, i] for i in clique), shape)
    return np.bincount(flat, minlength=math.prod(shape)).astype(np.int64)


@dataclass(frozen=True, slots=True)
class Measurement:
    """A released marginal: integer noisy counts of ``clique`` with noise N_Z(0, ``sigma``²)."""

    clique: Clique
    values: npt.NDArray[np.int64]
    sigma: Fraction
    cells: npt.NDArray[np.int64] | None = None

    @property
    def variance(self) -> float:
        """Per-cell variance bound of the noise (σ² bounds the discrete Gaussian's variance,
        Canonne, Kamath & Steinke 2020, Corollary 9)."""
        return float(self.sigma) ** 2

    @property
    def variances(self) -> npt.NDArray[np.float64]:
        """Each cell's variance bound: σ² times the number of measured cells it sums
        (``cells``, one each when not set; a merged cell of :mod:`infodp.synthetic.compress`)."""
        n = np.ones(self.values.size) if self.cells is None else self.cells.astype(np.float64)
        return np.asarray(n * self.variance, dtype=np.float64)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: the clique, the integer counts and σ (exact, as text)."""
        out: dict[str, object] = {
            "clique": list(self.clique),
            "values": [int(v) for v in self.values.tolist()],
            "sigma": str(self.sigma),
        }
        if self.cells is not None:
            out["cells"] = [int(v) for v in self.cells.tolist()]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Measurement:
        """Rebuild from :meth:`to_dict`."""
        clique = tuple(int(i) for i in data["clique"])  # type: ignore[attr-defined]
        values = np.asarray(data["values"], dtype=np.int64)
        cells = data.get("cells")
        return cls(
            clique,
            values,
            Fraction(str(data["sigma"])),
            None if cells is None else np.asarray(cells, dtype=np.int64),
        )


def measure(
    codes: npt.NDArray[np.int64],
    sizes: Sequence[int],
    clique: Clique,
    sigma: Fraction,
    source: RandomSource,
) -> Measurement:
    """The marginal on ``clique`` plus exact discrete Gaussian noise of ``sigma`` per cell."""
    exact = marginal(codes, sizes, clique)
    noise = np.asarray(discrete_gaussian_batch(sigma, exact.size, source), dtype=np.int64)
    return Measurement(clique, exact + noise, sigma)


def select(
    scores: Sequence[float], epsilon: Fraction, sensitivity: float, source: RandomSource
) -> int:
    """Index of a candidate drawn by the exponential mechanism at ``epsilon`` for ``scores``
    of the given sensitivity (P ∝ exp(ε·score/(2Δ)); McSherry & Talwar 2007)."""
    em = ExponentialMechanism(float(epsilon), float(sensitivity))
    return em.release([float(s) for s in scores], source=source)
