"""How bounded columns become integers: power-of-two grids and quantile bins (no backend).

The cost model (:mod:`infodp.curator.price.cost`) and the backends share these definitions: a
value is clamped to its declared bounds, divided by a power-of-two ``step`` and rounded, so
every noisy measurement is an integer aggregate with an integer sensitivity.

>>> from infodp.curator.declaration.schema import ColumnSpec
>>> column_grid(ColumnSpec("age", "int", bounds=(0.0, 120.0))).radius
60
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from infodp.curator.declaration.schema import ColumnSpec
from infodp.errors import InternalError

__all__ = [
    "QUANTILE_REFINEMENT",
    "ColumnGrid",
    "column_grid",
    "grid_step",
    "quantile_candidates",
    "quantile_grid",
]


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


@dataclass(frozen=True, slots=True)
class ColumnGrid:
    """How a numeric column becomes integers: clamp to [low, high], divide by ``step``, round.

    ``lo``/``hi`` are the integer range of one snapped value, ``center`` the snapped midpoint
    (used by centred sums), so |v − center| ≤ ``radius`` for every snapped value v.
    """

    low: float
    high: float
    step: float
    lo: int
    hi: int
    center: int

    @property
    def radius(self) -> int:
        """The largest |v − center| over snapped values."""
        return max(self.hi - self.center, self.center - self.lo)

    @property
    def magnitude(self) -> int:
        """The largest |v| over snapped values."""
        return max(abs(self.lo), abs(self.hi))


def column_grid(col: ColumnSpec, refinement: int = 1) -> ColumnGrid:
    """The grid of a bounded numeric column (``refinement``: that many points per step).

    >>> g = column_grid(ColumnSpec("age", "int", bounds=(0.0, 120.0)))
    >>> (g.step, g.lo, g.hi, g.center, g.radius)
    (1.0, 0, 120, 60, 60)
    """
    if col.bounds is None:
        raise InternalError(f"column {col.name} has no bounds")
    low, high = col.bounds
    step = grid_step(low, high, col.is_integer) / refinement
    lo, hi = _round_half_away(low / step), _round_half_away(high / step)
    center = _round_half_away((low + high) / 2 / step)
    return ColumnGrid(low, high, step, lo, hi, center)


#: Points of a float column's quantile grid per step of its sum grid (a power of two, so the
#: quantile step stays a power of two and its points are exact in binary floating point).
QUANTILE_REFINEMENT = 16


def quantile_grid(col: ColumnSpec, q: Fraction | float | None = None) -> ColumnGrid:
    """The grid a q-quantile of the column is answered on: its points are the candidates.

    A float column's inner quantiles (0 < q < 1) use a grid ``QUANTILE_REFINEMENT`` times
    finer than the sum grid, read from the stored values at query time: snapping the data to
    the sum grid first moves the order statistics by up to half a step and lengthens or
    shortens each gap between them, and the exponential mechanism's choice of a gap (Smith
    2011) is then slightly off (on a skewed income column at ε = 10, 2.5% more error than
    Smith's mechanism on the raw values; 0.3% on the finer grid). The finer grid costs
    ln 16 more in the stated rank error (:func:`~infodp.curator.rules.quantile.rank_error`
    grows with ln of the number of candidates). Integer columns (exact on their grid) and
    MIN/MAX (aimed at a rank from the extreme, where the resolution does not matter) keep
    the column's grid.

    >>> quantile_grid(ColumnSpec("x", "float", bounds=(0.0, 1.0)), 0.5).step * 2**20
    0.0625
    >>> quantile_grid(ColumnSpec("x", "float", bounds=(0.0, 1.0)), 1).step * 2**20
    1.0
    """
    inner = q is not None and 0 < q < 1
    return column_grid(col, QUANTILE_REFINEMENT if col.type == "float" and inner else 1)


def _round_half_away(x: float) -> int:
    # DuckDB's round() rounds half away from zero; mirror it for the bounds.
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


def quantile_candidates(col: ColumnSpec, q: Fraction | float | None = None) -> int:
    """How many points of the column's quantile grid a q-quantile may answer: hi − lo + 1.

    Quantiles are answered on a grid as fine as the one every bounded value is snapped to or
    finer (:func:`quantile_grid`), not on a fixed binning.

    >>> quantile_candidates(ColumnSpec("age", "int", bounds=(0.0, 120.0)))
    121
    >>> quantile_candidates(ColumnSpec("x", "float", bounds=(0.0, 1.0)), 0.5) == 16 * 2**20 + 1
    True
    """
    grid = quantile_grid(col, q)
    return grid.hi - grid.lo + 1
