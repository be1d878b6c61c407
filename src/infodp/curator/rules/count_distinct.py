"""COUNT(DISTINCT column): a noisy count of the distinct non-null values per cell.

The exact value of a cell is the number of distinct non-null values of ``column`` among the
cell's bounded rows (after the per-unit row and group limits). Its sensitivity under adding
or removing one unit u with at most m = ``max_rows_per_unit`` rows, in at most
k = ``max_groups_per_unit`` groups (L1 over the disjoint cells; McSherry 2009, Thm 4):

- **the privacy-unit column**: no other unit holds u's id, so u changes a cell's count by
  exactly 1 in every cell its rows fall into and by 0 elsewhere. Its rows fall into at most
  min(m, k) cells under GROUP BY (m rows, k groups), and into the one cell without it:
  Δ = min(m, k), or 1.
- **any other column**: adding u never removes a value, and adds at most one new value to a
  cell per row of u (a value already in the cell adds nothing); removing u takes a value out
  of a cell only when every row holding it there was u's, again at most one per row. The
  cells' changes sum to at most m: Δ = m (reached when u's m rows each bring a new value).

The filter of a FILTER clause only drops rows, so the same bounds hold. The interval is the
count's (:mod:`~infodp.curator.rules.count`: the mechanism's one-cell tail, clamped at 0),
and so is the information one cell releases: the closed form of the noise channel over the
cell's range 0 … rows, ``rows`` the declared public row bound (a cell holds at most that
many distinct values). Tumult Analytics releases the same aggregate as ``count_distinct``.

Float columns are refused (engines may disagree on which doubles are distinct: −0.0 and 0.0,
NaN); a numeric column's distinct values are those of the stored column, not its grid.

>>> from infodp.curator.declaration.source import load_schema
>>> s = load_schema({"table": "t", "privacy_unit": "pid", "max_rows_per_unit": 5,
...                  "max_groups_per_unit": 2,
...                  "columns": {"pid": {"type": "text"}, "x": {"type": "int"}}})
>>> [DISTINCT_MEASURE.sensitivity(Measurement(MeasurementKind.COUNT_DISTINCT, c, grouped=g), s)
...  for c, g in (("pid", False), ("pid", True), ("x", False), ("x", True))]
[1, 2, 5, 5]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from sqlglot import exp

from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.plan.nodes import Aggregate, AggregateFunc, Measurement, MeasurementKind
from infodp.curator.rules.base import Measure
from infodp.curator.rules.count import CountRule

if TYPE_CHECKING:
    from infodp.curator.rules.base import Parsing

__all__ = ["COUNT_DISTINCT", "DISTINCT_MEASURE", "is_unit"]


def is_unit(column: str | None, schema: DatasetSchema) -> bool:
    """True when ``column`` is the privacy unit's column."""
    return (
        column is not None
        and not schema.unit_is_row
        and column.lower() == schema.privacy_unit.lower()
    )


class _DistinctValues(Measure):
    """Distinct non-null values of a column per cell."""

    kind = MeasurementKind.COUNT_DISTINCT

    def sensitivity(self, m: Measurement, schema: DatasetSchema) -> int:
        """min(m, k) (1 without GROUP BY) for the unit's column, m for any other."""
        if is_unit(m.column, schema):
            return schema.group_limit if m.grouped else 1
        return schema.max_rows_per_unit


#: The measurement kind of COUNT(DISTINCT column).
DISTINCT_MEASURE = _DistinctValues()


class CountDistinctRule(CountRule):
    """COUNT(DISTINCT column), answered as a count."""

    func: ClassVar[AggregateFunc] = AggregateFunc.COUNT_DISTINCT
    sql_names = ("COUNT(DISTINCT column)",)

    def parse(self, node: exp.Expr, sql: Parsing) -> Aggregate | None:
        """``COUNT(DISTINCT column)`` of one declared column that is not a float."""
        if not (isinstance(node, exp.Count) and isinstance(node.this, exp.Distinct)):
            return None
        args = node.this.expressions
        if len(args) != 1:
            raise sql.refuse("COUNT(DISTINCT ...) of several columns", "name one column")
        unit = sql.unit_column(args[0])  # the privacy unit need not be a declared column
        if unit is not None:
            return Aggregate(self.func, unit, grouped=sql.grouped)
        col = sql.column(args[0])
        if col.type == "float":
            raise sql.refuse(
                f"COUNT(DISTINCT {col.name}) of a float column",
                "which doubles are distinct differs between engines; count an int, category "
                "or text column",
            )
        return Aggregate(self.func, col.name, grouped=sql.grouped)

    def needs(self, agg: Aggregate) -> tuple[Measurement, ...]:
        """One count of distinct values."""
        return (
            Measurement(
                MeasurementKind.COUNT_DISTINCT, agg.column, where=agg.where, grouped=agg.grouped
            ),
        )


#: The COUNT(DISTINCT column) rule.
COUNT_DISTINCT = CountDistinctRule()
