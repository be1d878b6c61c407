"""COUNT(*) and COUNT(column): a noisy count per cell.

Sensitivity m = ``max_rows_per_unit``: one unit adds or removes at most m rows over all the
(disjoint) cells (McSherry 2009, Thm 4). The interval is the mechanism's own one-cell tail
(discrete Laplace, Ghosh et al. 2009; discrete Gaussian, Canonne, Kamath & Steinke 2020),
clamped at 0 (post-processing). COUNT(column) counts the non-null values of any declared
column, or of the privacy unit's column: exactly COUNT(*) over the rows where the column is not
NULL, so its sensitivity is m too (each of a unit's rows adds at most 1). A bounded numeric
column's values are those of its bounded copy (the values AVG divides by: its null policy
applied); any other column's are the stored values, a ``replace`` policy's constant filled in
and, for a float, NaN and ±inf left out (its null policy's "no value").

>>> from infodp.curator.plan.nodes import Aggregate
>>> [m.key for m in COUNT.needs(Aggregate("count")) + COUNT.needs(Aggregate("count", "x"))]
['count(*)', 'count(x)']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from sqlglot import exp

from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.plan.nodes import Aggregate, AggregateFunc, Measurement, MeasurementKind
from infodp.curator.rules.base import (
    Cells,
    ColumnAccuracy,
    Interval,
    Measure,
    Rule,
    Value,
    measured,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from infodp.curator.rules.base import Parsing

__all__ = ["COUNT", "COUNT_MEASURES", "CountRule"]


class _Counted(Measure):
    """Rows (COUNT(*)) or non-null values (COUNT(column)) per cell."""

    def sensitivity(self, m: Measurement, schema: DatasetSchema) -> int:
        """m: a unit's rows, in any cells (L1 over the disjoint cells)."""
        return schema.max_rows_per_unit


class _CountRows(_Counted):
    kind = MeasurementKind.COUNT_ROWS


class _CountValues(_Counted):
    kind = MeasurementKind.COUNT


#: The measurement kinds a count is made of.
COUNT_MEASURES: tuple[Measure, ...] = (_CountRows(), _CountValues())


def measurement(agg: Aggregate) -> Measurement:
    """The count measurement of ``agg`` (COUNT(*) or the non-null count of its column), over
    the rows its FILTER keeps."""
    if agg.column is None:
        return measured(agg, MeasurementKind.COUNT_ROWS)
    return measured(agg, MeasurementKind.COUNT, agg.column)


class CountRule(Rule):
    """COUNT(*) and COUNT(column)."""

    func: ClassVar[AggregateFunc] = AggregateFunc.COUNT
    sql_names = ("COUNT",)

    def parse(self, node: exp.Expr, sql: Parsing) -> Aggregate | None:
        """``COUNT(*)``, or ``COUNT(column)`` of a declared column or the privacy unit's."""
        if not isinstance(node, exp.Count):
            return None
        arg = node.this
        if isinstance(arg, exp.Distinct):
            return None  # COUNT(DISTINCT column): its own rule (count_distinct)
        if arg is None or isinstance(arg, exp.Star):
            return Aggregate(AggregateFunc.COUNT)
        unit = sql.unit_column(arg)  # the privacy unit need not be a declared column
        if unit is not None:
            return Aggregate(AggregateFunc.COUNT, unit)
        return Aggregate(AggregateFunc.COUNT, sql.column(arg).name)

    def needs(self, agg: Aggregate) -> tuple[Measurement, ...]:
        """One count."""
        return (measurement(agg),)

    def counted(self, agg: Aggregate) -> Measurement:
        """The one count this aggregate releases."""
        return self.needs(agg)[0]

    def answer(
        self, agg: Aggregate, cells: Cells, key: tuple[str, ...], row: Sequence[int | None]
    ) -> tuple[Value, Interval]:
        """The noisy count clamped at 0, with the mechanism's one-cell interval."""
        m = self.counted(agg)
        h = cells.halfwidth(cells.index[m])
        v = cells.noisy(row, m)
        return (v if v > 0 else 0), [v - h if v > h else 0, v + h if v + h > 0 else 0]

    def column(self, agg: Aggregate, cells: Cells) -> tuple[list[Value], list[Interval]]:
        """The whole column at once (the common case: one list pass per column)."""
        m = self.counted(agg)
        h = cells.halfwidth(cells.index[m])
        vs = cells.column(m)
        # A count is never negative: clamping at 0 is post-processing, keeps coverage.
        return (
            [v if v > 0 else 0 for v in vs],
            [[v - h if v > h else 0, v + h if v + h > 0 else 0] for v in vs],
        )

    def accuracy(self, agg: Aggregate, cells: Cells, rows: int | None, name: str) -> ColumnAccuracy:
        """The mechanism's one-cell half-width."""
        return {"halfwidth": float(cells.halfwidth(cells.index[self.counted(agg)]))}


#: The COUNT rule.
COUNT = CountRule()
