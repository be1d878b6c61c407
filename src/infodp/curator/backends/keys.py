"""Derived GROUP BY keys as sqlglot expressions (:mod:`infodp.curator.sql.derived`).

Bins read the column's bounded copy, clamped to its grid's range again by the statement (so a
value outside the declared bounds falls in the edge bin, and a dropped value stays NULL), as
``CAST(FLOOR(CAST(v AS DOUBLE) * step / w) AS BIGINT) * m``: the division is the dialect's
DOUBLE division on every engine, and exact enough that FLOOR agrees with the exact quotient
(the grid values are integers below 2^53 times a power of two, and ``w`` is an integer).
Bands are a CASE over the WHERE compiler's conditions, every result a text literal. The
expression depends on the query and the schema only.

>>> from infodp.curator.declaration.source import load_schema
>>> from infodp.curator.plan.nodes import Bins, GroupKey
>>> from infodp.curator.backends.dialects import SPARK
>>> s = load_schema({"table": "t", "privacy_unit": "row",
...                  "columns": {"age": {"type": "int", "bounds": [0, 120]}}})
>>> key = GroupKey("decade", ("0",), Bins("age", 10, 10))
>>> print(key_expression(key, s, SPARK, lambda p: None).sql(dialect="spark"))
CAST(FLOOR(CAST(CASE WHEN `__bnd_age` < 0 THEN 0 WHEN `__bnd_age` > 120 THEN 120 ELSE `__bnd_age` END AS DOUBLE) / CAST(10 AS DOUBLE)) AS BIGINT) * 10
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from infodp.curator.backends.bounding import bounded_column, clamped, column, literal
from infodp.curator.backends.dialects import SqlDialect
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.plan.grid import column_grid
from infodp.curator.plan.nodes import Bins, GroupKey, Predicate
from infodp.errors import InternalError

__all__ = ["key_expression"]


def key_expression(
    key: GroupKey,
    schema: DatasetSchema,
    dialect: SqlDialect,
    condition: Callable[[Predicate], exp.Expr | None],
) -> exp.Expr:
    """The value of derived key ``key`` per row (``condition`` compiles a WHERE node)."""
    derived = key.derived
    if derived is None:
        raise InternalError(f"GROUP BY {key.column} is not derived")
    if isinstance(derived, Bins):
        grid = column_grid(schema.column(derived.column))
        v = clamped(column(bounded_column(derived.column)), literal(grid.lo), literal(grid.hi))
        value: exp.Expr = exp.cast(v, "DOUBLE")
        if grid.step != 1.0:
            value = exp.Mul(this=value, expression=literal(grid.step))
        k = exp.cast(exp.Floor(this=dialect.divide(value, literal(derived.width))), "BIGINT")
        return k if derived.scale == 1 else exp.Mul(this=k, expression=literal(derived.scale))
    ifs = [exp.If(this=condition(p), true=literal(label)) for p, label in derived.branches]
    default = None if derived.default is None else literal(derived.default)
    return exp.Case(ifs=ifs, default=default)
