"""How bounded columns become integers: power-of-two grids and quantile bins (no backend).

The cost model (:mod:`infodp.curator.cost`) and the backends share these definitions: a
value is clamped to its declared bounds, divided by a power-of-two ``step`` and rounded, so
every noisy measurement is an integer aggregate with an integer sensitivity.

>>> from infodp.curator.schema import ColumnSpec
>>> column_grid(ColumnSpec("age", "int", bounds=(0.0, 120.0))).radius
60
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from infodp.curator.schema import ColumnSpec
from infodp.errors import InternalError

__all__ = ["ColumnGrid", "column_grid", "grid_step", "quantile_candidates"]


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


def column_grid(col: ColumnSpec) -> ColumnGrid:
    """The grid of a bounded numeric column.

    >>> g = column_grid(ColumnSpec("age", "int", bounds=(0.0, 120.0)))
    >>> (g.step, g.lo, g.hi, g.center, g.radius)
    (1.0, 0, 120, 60, 60)
    """
    if col.bounds is None:
        raise InternalError(f"column {col.name} has no bounds")
    low, high = col.bounds
    step = grid_step(low, high, col.is_integer)
    lo, hi = _round_half_away(low / step), _round_half_away(high / step)
    center = _round_half_away((low + high) / 2 / step)
    return ColumnGrid(low, high, step, lo, hi, center)


def _round_half_away(x: float) -> int:
    # DuckDB's round() rounds half away from zero; mirror it for the bounds.
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


def quantile_candidates(col: ColumnSpec) -> int:
    """How many points of the column's grid a quantile may answer: hi − lo + 1.

    Quantiles are answered on the same grid every bounded value is snapped to, so their
    resolution is the grid step (2^−21 of the larger bound at worst), not a fixed binning.

    >>> quantile_candidates(ColumnSpec("age", "int", bounds=(0.0, 120.0)))
    121
    """
    grid = column_grid(col)
    return grid.hi - grid.lo + 1
