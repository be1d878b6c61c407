"""AVG(column): a noisy centred sum over a noisy count, with Fieller's interval.

The values are clamped, snapped to the grid and centred at the middle of the bounds, so the
centred sum has sensitivity m·r (r = the largest |v − centre|, in grid units) rather than
m·max|v| (Li et al. 2016, "Differential Privacy: From Theory to Practice", §2.5: centring
halves a sum's sensitivity on a symmetric range). AVG = S̃/C̃ is post-processing of the two
measurements; its interval inverts the exact error law of S̃ − μ·C̃ (Fieller 1954;
:mod:`~infodp.curator.rules.intervals`), and its planned half-width is the widest over groups of
the public planning size (:func:`~infodp.curator.rules.column_accuracy.widest_mean`).

>>> from infodp.curator.plan.nodes import Aggregate
>>> [m.key for m in AVG.needs(Aggregate("avg", "x"))]
['csum(x)', 'count(x)']
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from sqlglot import exp

from infodp._lazy import lazy_module
from infodp.curator.plan.nodes import Aggregate, AggregateFunc, Measurement, MeasurementKind
from infodp.curator.rules.base import (
    BoundedRule,
    Cells,
    ColumnAccuracy,
    GridSum,
    Interval,
    Rule,
    Value,
    column_of,
    measured,
)
from infodp.curator.rules.column_accuracy import Width, planned_rows, widest_mean
from infodp.errors import InternalError

if TYPE_CHECKING:
    from infodp.curator.rules import intervals as _intervals
else:  # on first use: only a query with AVG, VARIANCE or STDDEV inverts an interval
    _intervals = lazy_module("infodp.curator.rules.intervals")

__all__ = ["AVG", "CSUM_MEASURE", "MomentRule", "planned_halfwidth"]


#: The measurement kind of a centred sum (AVG, VARIANCE and STDDEV share it): sensitivity
#: m·r, r the largest |v − centre| in grid units; a cell's range rows·(hi − lo) (the same
#: bound as the uncentred sum's).
CSUM_MEASURE = GridSum(
    MeasurementKind.CSUM, per_row=lambda g: g.radius, spread=lambda g: g.hi - g.lo
)


#: A search for the widest half-width over groups of n rows (column_accuracy).
Widest = Callable[[Width, int, int], float]


def planned_halfwidth(
    rule: Rule, agg: Aggregate, cells: Cells, rows: int | None, name: str, widest: Widest
) -> float:
    """The widest half-width of ``agg``'s released interval over groups of ``rows`` rows
    (``widest`` searches the groups' moments), from ``rule``'s own answer, so planning and
    release cannot disagree."""
    col = column_of(agg)
    n = planned_rows(name, rows)
    radius = cells.grid(col).radius
    slots = [
        (cells.index.get(measured(agg, kind, col)), kind)
        for kind in (MeasurementKind.COUNT, MeasurementKind.CSUM, MeasurementKind.CSUMSQ)
    ]

    def width(s: int, q: int) -> float:
        row: list[int | None] = [None] * len(cells.parts)
        for (i, _), value in zip(slots, (n, s, q), strict=True):
            if i is not None:
                row[i] = value
        _, interval = rule.answer(agg, cells, (), row)
        if not isinstance(interval, list):
            raise InternalError(f"{agg.func} answered without an interval")
        low, high = interval
        return (float(high) - float(low)) / 2

    return widest(width, n, radius)


class MomentRule(BoundedRule):
    """An aggregate answered from a column's moments (AVG, VARIANCE, STDDEV), planned for the
    widest interval over groups of the public planning size."""

    @abstractmethod
    def widest(self, width: Width, n: int, radius: int) -> float:
        """The widest half-width ``width`` reaches over groups of ``n`` rows."""

    def accuracy(self, agg: Aggregate, cells: Cells, rows: int | None, name: str) -> ColumnAccuracy:
        """The widest half-width over groups of ``rows`` rows."""
        return {"halfwidth": planned_halfwidth(self, agg, cells, rows, name, self.widest)}


class AvgRule(MomentRule):
    """AVG(column) of a bounded numeric column."""

    func: ClassVar[AggregateFunc] = AggregateFunc.AVG
    sql_names = ("AVG",)
    nodes: ClassVar[dict[type[exp.Expr], bool]] = {exp.Avg: False}

    def needs(self, agg: Aggregate) -> tuple[Measurement, ...]:
        """A centred sum and the non-null count."""
        return (
            measured(agg, MeasurementKind.CSUM, agg.column),
            measured(agg, MeasurementKind.COUNT, agg.column),
        )

    def answer(
        self, agg: Aggregate, cells: Cells, key: tuple[str, ...], row: Sequence[int | None]
    ) -> tuple[Value, Interval]:
        """S̃/C̃ within the bounds and the inverted Fieller interval (intervals.avg_answer)."""
        sm, cm = self.needs(agg)
        s, c = cells.noisy(row, sm), cells.noisy(row, cm)
        ps, pc = cells.part(sm)[1], cells.part(cm)[1]
        grid = cells.grid(column_of(agg))
        return _intervals.avg_answer(
            s, c, ps.noise_mechanism, pc.noise_mechanism, grid, cells.beta, cells.box
        )

    def widest(self, width: Width, n: int, radius: int) -> float:
        """Over the groups' means (column_accuracy.widest_mean)."""
        return widest_mean(width, n, radius)


#: The AVG rule.
AVG = AvgRule()
