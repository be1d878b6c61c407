"""The compiler's vocabulary: the one SQL reduction each measurement kind sums.

Count rows, count values, sum, centred sum, centred sum of squares and count of distinct
values, each of a bounded value ``v`` in grid units; the aggregate statement of
:mod:`infodp.curator.backends.compile` holds one per measurement.

>>> from sqlglot import exp
>>> from infodp.curator.backends.dialects import DUCKDB
>>> REDUCTIONS[MeasurementKind.CSUM](exp.column("v"), 3, DUCKDB).sql()
'SUM((v - 3))'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp

from infodp.curator.backends.bounding import counts_stored, literal
from infodp.curator.backends.dialects import SqlDialect
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.plan.nodes import Measurement, MeasurementKind

__all__ = [
    "READS",
    "REDUCTIONS",
    "counts_values",
    "reads_stored",
    "stored_columns_read",
    "value_columns",
]


def _count_rows(v: exp.Expr | None, center: int, d: SqlDialect) -> exp.Expr:
    return exp.Count(this=exp.Star())


def _count(v: exp.Expr | None, center: int, d: SqlDialect) -> exp.Expr:
    return exp.Count(this=v)


def _sum(v: exp.Expr | None, center: int, d: SqlDialect) -> exp.Expr:
    return exp.Sum(this=v)


def _centred(v: exp.Expr | None, center: int) -> exp.Expr:
    return exp.Paren(this=exp.Sub(this=v, expression=literal(center)))


def _csum(v: exp.Expr | None, center: int, d: SqlDialect) -> exp.Expr:
    return exp.Sum(this=_centred(v, center))


def _csumsq(v: exp.Expr | None, center: int, d: SqlDialect) -> exp.Expr:
    twin = None if v is None else v.copy()  # a tree node has one parent
    square = exp.Mul(this=_centred(v, center), expression=_centred(twin, center))
    return exp.Sum(this=d.wide_sum_operand(square))


def _count_distinct(v: exp.Expr | None, center: int, d: SqlDialect) -> exp.Expr:
    return exp.Count(this=exp.Distinct(expressions=[v]))


#: What each measurement kind sums, of its bounded value ``v`` (grid units) centred at
#: ``center`` where it is centred; a quantile's histogram is its own statement
#: (the histogram statement of :func:`infodp.curator.backends.compile.compiled_statements`).
REDUCTIONS: dict[MeasurementKind, Callable[[exp.Expr | None, int, SqlDialect], exp.Expr]] = {
    MeasurementKind.COUNT_ROWS: _count_rows,
    MeasurementKind.COUNT: _count,
    MeasurementKind.SUM: _sum,
    MeasurementKind.CSUM: _csum,
    MeasurementKind.CSUMSQ: _csumsq,
    MeasurementKind.COUNT_DISTINCT: _count_distinct,
}


#: What each measurement kind reads besides its reduction: ``bounded`` its column's bounded
#: copy, ``stored`` the column as stored (a distinct count), ``counted`` the bounded copy, or
#: the stored column where it has none (:func:`counts_stored`), ``rows`` no column. A
#: histogram kind (:attr:`~infodp.curator.plan.nodes.MeasurementKind.histogram`) is read by its own
#: statement. The backends' one table by kind, beside :data:`REDUCTIONS`: a new kind is one
#: entry in each.
READS: dict[MeasurementKind, str] = {
    MeasurementKind.COUNT_ROWS: "rows",
    MeasurementKind.COUNT: "counted",
    MeasurementKind.SUM: "bounded",
    MeasurementKind.CSUM: "bounded",
    MeasurementKind.CSUMSQ: "bounded",
    MeasurementKind.COUNT_DISTINCT: "stored",
}


def value_columns(schema: DatasetSchema, ms: Sequence[Measurement]) -> list[str]:
    """The columns whose bounded copy the measurements read, in first-use order."""
    cols: list[str] = []
    for m in ms:
        if m.column is not None and not reads_stored(schema, m) and m.column not in cols:
            cols.append(m.column)
    return cols


def counts_values(m: Measurement) -> bool:
    """True when ``m`` counts the non-null values of its column (stored ones are counted as
    :func:`~infodp.curator.backends.bounding.counted_value` says)."""
    return not m.kind.histogram and READS[m.kind] == "counted"


def reads_stored(schema: DatasetSchema, m: Measurement) -> bool:
    """True when ``m`` reads its column as stored: a distinct count, or a count of a column
    without a bounded copy (:func:`counts_stored`); histograms read theirs in their own
    statement (no bounded value column either)."""
    if m.kind.histogram:
        return True
    if counts_values(m):
        return m.column is not None and counts_stored(schema, m.column)
    return READS[m.kind] == "stored"


def stored_columns_read(schema: DatasetSchema, ms: Sequence[Measurement]) -> list[str]:
    """The columns distinct counts and counts without a bounded copy read as stored, in
    first-use order."""
    return list(
        dict.fromkeys(
            m.column for m in ms if m.column and not m.kind.histogram and reads_stored(schema, m)
        )
    )
