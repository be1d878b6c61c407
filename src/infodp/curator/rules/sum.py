"""SUM(column): a noisy sum of the clamped, grid-snapped values per cell.

Values are clamped to the declared bounds and snapped to a power-of-two grid
(:mod:`~infodp.curator.plan.grid`), so the sum is an integer in grid units with sensitivity
m·max|v| (one unit's m rows at the bound of larger magnitude; McSherry 2009, Thm 4 for the
disjoint cells). The interval is the mechanism's one-cell tail times the grid step.

>>> from infodp.curator.declaration.source import load_schema
>>> s = load_schema({"table": "t", "privacy_unit": "pid", "max_rows_per_unit": 3,
...                  "columns": {"pid": {"type": "int"}, "x": {"type": "int", "bounds": [-7, 5]}}})
>>> SUM_MEASURE.sensitivity(Measurement(MeasurementKind.SUM, "x"), s)
21
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from sqlglot import exp

from infodp.curator.plan.nodes import Aggregate, AggregateFunc, Measurement, MeasurementKind
from infodp.curator.rules.base import (
    BoundedRule,
    Cells,
    ColumnAccuracy,
    GridSum,
    Interval,
    Value,
    measured,
)

if TYPE_CHECKING:
    from collections.abc import Sequence


__all__ = ["SUM", "SUM_MEASURE"]


#: The measurement kind of a sum: sensitivity m·max(|lo|, |hi|) in grid units; a cell's range
#: rows·(max(hi, 0) − min(lo, 0)) over cells of 0 to ``rows`` rows (a filter or a group may
#: hold any number of them, so the empty sum 0 is in range).
SUM_MEASURE = GridSum(
    MeasurementKind.SUM,
    per_row=lambda g: g.magnitude,
    spread=lambda g: max(g.hi, 0) - min(g.lo, 0),
)


class SumRule(BoundedRule):
    """SUM(column) of a bounded numeric column."""

    func: ClassVar[AggregateFunc] = AggregateFunc.SUM
    sql_names = ("SUM",)
    nodes: ClassVar[dict[type[exp.Expr], bool]] = {exp.Sum: False}

    def needs(self, agg: Aggregate) -> tuple[Measurement, ...]:
        """One sum."""
        return (measured(agg, MeasurementKind.SUM, agg.column),)

    def answer(
        self, agg: Aggregate, cells: Cells, key: tuple[str, ...], row: Sequence[int | None]
    ) -> tuple[Value, Interval]:
        """The noisy sum in column units and the mechanism's one-cell interval."""
        m = self.needs(agg)[0]
        h, g = cells.halfwidth(cells.index[m]), cells.grid(agg.column or "").step
        v = cells.noisy(row, m)
        return v * g, [(v - h) * g, (v + h) * g]

    def column(self, agg: Aggregate, cells: Cells) -> tuple[list[Value], list[Interval]]:
        """The whole column at once."""
        m = self.needs(agg)[0]
        h, g = cells.halfwidth(cells.index[m]), cells.grid(agg.column or "").step
        vs = cells.column(m)
        return [v * g for v in vs], [[(v - h) * g, (v + h) * g] for v in vs]

    def accuracy(self, agg: Aggregate, cells: Cells, rows: int | None, name: str) -> ColumnAccuracy:
        """The mechanism's one-cell half-width times the grid step."""
        m = self.needs(agg)[0]
        return {
            "halfwidth": float(cells.halfwidth(cells.index[m])) * cells.grid(agg.column or "").step
        }


#: The SUM rule.
SUM = SumRule()
