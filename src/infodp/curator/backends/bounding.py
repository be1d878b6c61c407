"""Contribution bounding as sqlglot expressions: the bounded copy made at registration and
the bounds every query applies again (shared by every backend).

Registration stores, beside each bounded numeric column, its *bounded copy*
(:func:`bounded_column`): the value cleaned by its null policy, clamped to its declared
bounds and snapped to its power-of-two grid, as an integer (:func:`snap_expression`), and
cuts each privacy unit to ``max_rows_per_unit`` rows (:func:`unit_cut`). Queries read the
copy and bound it once more in the very statement that aggregates (:func:`snapped`), so a
store edited after registration still cannot contribute beyond the declared bounds, unless
the table's own constraints keep the copy in its range
(:mod:`~infodp.curator.backends.bound_checks`: DuckDB refuses any write that leaves it).

>>> from infodp.curator.declaration.schema import ColumnSpec
>>> print(snap_expression(ColumnSpec("x", "int", bounds=(0.0, 10.0))).sql())
CAST(ROUND(CASE WHEN "x" IS NULL THEN NULL ELSE LEAST(GREATEST("x", 0), 10) END) AS BIGINT)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from sqlglot import exp

from infodp.curator.backends.dialects import DUCKDB, SqlDialect
from infodp.curator.declaration.schema import ColumnSpec, DatasetSchema
from infodp.curator.plan.grid import ColumnGrid, column_grid
from infodp.errors import InternalError, ParameterError

__all__ = [
    "BOOL_TEXTS",
    "bool_typing",
    "bounded_column",
    "category",
    "clamped",
    "column",
    "copy_range",
    "counted_value",
    "counts_stored",
    "empty_relation",
    "empty_relation_tree",
    "ident",
    "literal",
    "not_boolean_message",
    "null_unit_message",
    "snap_expression",
    "snapped",
    "stored_columns",
    "unit_cut",
]

#: How registration stores each declared type (BIGINT, DOUBLE, BOOLEAN, else VARCHAR).
_TYPES = {"int": "BIGINT", "float": "DOUBLE", "bool": "BOOLEAN"}


#: How registration reads a source value as a ``bool`` column, by its text (lower case,
#: trimmed): a BOOLEAN, an integer 0/1 (or 0.0/1.0 from a floating column) or the words of
#: a CSV. NaN is NULL (the column's null policy decides); anything else is refused.
BOOL_TEXTS: dict[str, bool | None] = {
    "true": True,
    "t": True,
    "1": True,
    "1.0": True,
    "false": False,
    "f": False,
    "0": False,
    "0.0": False,
    "nan": None,
}


def bool_typing(source: exp.Expr) -> tuple[exp.Expr, exp.Expr]:
    """(the typed BOOLEAN, the condition of a value that is not a boolean) of a source
    value declared ``bool``, in SQL both engines read (:data:`BOOL_TEXTS`).

    >>> typed, bad = bool_typing(exp.column("x"))
    >>> print(typed.sql().split(" THEN")[0])
    CASE WHEN LOWER(TRIM(CAST(x AS VARCHAR))) IN ('true', 't', '1', '1.0')
    """
    text = exp.Lower(this=exp.Trim(this=exp.cast(source.copy(), "VARCHAR")))
    ifs = [
        exp.If(
            this=exp.In(
                this=text.copy(),
                expressions=[literal(k) for k, v in BOOL_TEXTS.items() if v is value],
            ),
            true=exp.Boolean(this=value),
        )
        for value in (True, False)
    ]
    typed = exp.Case(ifs=ifs)
    known = exp.In(this=text, expressions=[literal(k) for k in BOOL_TEXTS])
    bad = exp.and_(
        exp.Not(this=exp.Is(this=source.copy(), expression=exp.Null())),
        exp.Not(this=exp.Paren(this=known)),
        copy=False,
    )
    return typed, bad


def not_boolean_message(name: str) -> str:
    """The owner's refusal of a ``bool`` column holding another value (both backends): it
    names the column, never the value.

    >>> not_boolean_message("refurbished")
    "column 'refurbished' is declared bool but some values are not booleans (true/false, t/f or 1/0); declare it as int, category or text, or clean the source."
    """  # noqa: E501
    return (
        f"column {name!r} is declared bool but some values are not booleans (true/false, "
        "t/f or 1/0); declare it as int, category or text, or clean the source."
    )


def ident(name: str) -> exp.Identifier:
    """A quoted identifier (a declared name, whatever its spelling)."""
    return exp.Identifier(this=name, quoted=True)


def column(name: str) -> exp.Column:
    """The declared column ``name`` (quoted)."""
    return exp.Column(this=ident(name))


def literal(value: float | int | str) -> exp.Expr:
    """A literal: a quoted string, an integer, or a finite float in its shortest repr.

    >>> print(literal("it's").sql(), literal(3).sql(), literal(0.25).sql())
    'it''s' 3 0.25
    """
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, bool):
        raise InternalError("bool literal")
    if isinstance(value, int):
        return exp.Literal.number(str(value))
    if not math.isfinite(value):
        raise ParameterError("literal", value, "a finite number")
    return exp.Literal.number(repr(float(value)))


def bounded_column(name: str) -> str:
    """Name of the materialised bounded copy of numeric column ``name``."""
    return f"__bnd_{name}"


def _clean(col: ColumnSpec, dialect: SqlDialect) -> exp.Expr:
    """The cleaned, clamped value of a numeric column (NULL when the policy drops it)."""
    c = column(col.name)
    if col.bounds is None:
        raise InternalError(f"column {col.name} has no bounds")
    low, high = col.bounds
    lo, hi = (int(low), int(high)) if col.type == "int" else (low, high)
    clamped: exp.Expr = exp.Least(
        this=exp.Greatest(this=c, expressions=[literal(lo)]), expressions=[literal(hi)]
    )
    if col.type == "bool":  # false is 0, true is 1: within [0, 1] by its type
        clamped = exp.cast(c, "BIGINT")
    replace = col.nulls.action == "replace"
    repl = literal(float(col.nulls.value)) if replace else exp.Null()  # type: ignore[arg-type]
    bad: exp.Expr = exp.Is(this=c.copy(), expression=exp.Null())
    if col.type == "float":
        bad = exp.or_(bad, exp.Not(this=dialect.isfinite(c.copy())), copy=False)
    return exp.Case(ifs=[exp.If(this=bad, true=repl)], default=clamped)


def snap_expression(
    col: ColumnSpec, dialect: SqlDialect = DUCKDB, grid: ColumnGrid | None = None
) -> exp.Expr:
    """Clamp to the bounds, apply the null policy, snap to the grid (the column's, or
    ``grid``), as a BIGINT (a NULL, NaN or ±inf is NULL unless the policy replaces it;
    registration refuses one under the policy ``error``)."""
    grid = grid or column_grid(col)
    inner = _clean(col, dialect)
    if grid.step != 1.0:
        # g is a power of two: multiplying by 1/g is exact and faster than dividing.
        inner = exp.Mul(this=exp.Paren(this=inner), expression=literal(1.0 / grid.step))
    return exp.cast(exp.Round(this=inner), "BIGINT")


def snapped(col: ColumnSpec, enforced: bool = False) -> tuple[exp.Expr, exp.Expr | None]:
    """The bounded copy made at registration, bounded again by the aggregating statement:
    (value expression, row filter or None).

    ``enforced``: the store's own constraints keep the copy in its grid range (and free of
    NULL where the filter would drop NULL: :mod:`~infodp.curator.backends.bound_checks`), so
    the copy is read as stored, with no filter.

    A column that registration guarantees to hold no NULL (null policy ``error`` or
    ``replace``) is bounded by a row filter, ``v BETWEEN lo AND hi``: a row whose stored value
    left the grid's range after registration is left out of the query (it contributes
    nothing, which is as bounded as clamping it). Plans are made without the column
    statistics, so the filter is evaluated on every row, like a clamping CASE. A column whose
    dropped values are NULL keeps the CASE, which keeps NULL NULL.
    """
    v = column(bounded_column(col.name))
    if enforced:
        return v, None
    if col.nulls.leaves_no_null:
        return v, exp.Paren(this=copy_range(col))
    grid = column_grid(col)
    return clamped(v, literal(grid.lo), literal(grid.hi)), None


def copy_range(col: ColumnSpec) -> exp.Between:
    """``"__bnd_x" BETWEEN lo AND hi``: the grid range the bounded copy stays in (the row
    filter of :func:`snapped`, the CHECK of :mod:`~infodp.curator.backends.bound_checks`).

    >>> print(copy_range(ColumnSpec("x", "int", bounds=(0.0, 10.0))).sql())
    "__bnd_x" BETWEEN 0 AND 10
    """
    grid = column_grid(col)
    return exp.Between(
        this=column(bounded_column(col.name)), low=literal(grid.lo), high=literal(grid.hi)
    )


def clamped(v: exp.Expr, lo: exp.Expr, hi: exp.Expr) -> exp.Expr:
    """``v`` clamped to [lo, hi] by a CASE, NULL kept NULL (LEAST/GREATEST skip NULLs).

    >>> print(clamped(exp.column("v"), literal(0), literal(9)).sql())
    CASE WHEN v < 0 THEN 0 WHEN v > 9 THEN 9 ELSE v END
    """
    return exp.Case(
        ifs=[
            exp.If(this=exp.LT(this=v.copy(), expression=lo), true=lo.copy()),
            exp.If(this=exp.GT(this=v.copy(), expression=hi), true=hi.copy()),
        ],
        default=v,
    )


def category(col: ColumnSpec) -> exp.Expr:
    """A GROUP BY key as stored: an int key as BIGINT (compared as integers and named in
    Python), a bool key as the text ``false``/``true`` (its two declared keys, as both
    engines spell a cast BOOLEAN), every other key as VARCHAR, so no cast (a no-op cast
    still costs DuckDB a projection per row); a ``replace`` policy's value filled in.

    >>> print(category(ColumnSpec("b", "bool")).sql())
    CAST("b" AS VARCHAR)
    """
    if col.type == "float":
        raise InternalError("float group key")
    expr: exp.Expr = column(col.name)
    if col.nulls.action == "replace" and col.type == "bool":
        fill: exp.Expr = exp.Boolean(this=bool(col.nulls.value))
        expr = exp.Coalesce(this=expr, expressions=[fill])
    elif col.nulls.action == "replace":
        value = col.nulls.value
        text = int(float(value)) if col.type == "int" else str(value)  # type: ignore[arg-type]
        expr = exp.Coalesce(this=expr, expressions=[literal(text)])
    if col.type == "bool":
        expr = exp.cast(expr, "VARCHAR")
    return expr


def counts_stored(schema: DatasetSchema, name: str) -> bool:
    """True when COUNT(``name``) reads the stored column, not a bounded copy: any column but a
    bounded numeric one (the privacy unit's column, declared or not, included).

    >>> from infodp.curator.declaration.source import load_schema
    >>> s = load_schema({"table": "t", "privacy_unit": "pid", "columns": {
    ...     "x": {"type": "int", "bounds": [0, 9]}, "y": {"type": "int"}, "z": {"type": "text"}}})
    >>> [counts_stored(s, c) for c in ("x", "y", "z", "pid")]
    [False, True, True, True]
    """
    names = {c.name.lower() for c in schema.columns}
    if name.lower() not in names:
        return True  # the undeclared privacy unit's column
    return not schema.column(name).has_bounded_copy


def counted_value(
    schema: DatasetSchema, name: str, stored: exp.Expr, dialect: SqlDialect
) -> exp.Expr:
    """What COUNT(``name``) counts the non-null values of, from the ``stored`` column: the
    value itself; a ``replace`` policy's constant for a NULL (so every row counts); a float's
    NaN and ±inf as NULL (its null policy's "no value", as for the bounded copy).

    >>> from infodp.curator.declaration.source import load_schema
    >>> s = load_schema({"table": "t", "privacy_unit": "row", "columns": {
    ...     "f": {"type": "float", "nulls": "drop"}, "z": {"type": "text"}}})
    >>> print(counted_value(s, "z", exp.column("z"), DUCKDB).sql())
    z
    >>> print(counted_value(s, "f", exp.column("f"), DUCKDB).sql(normalize_functions=False))
    CASE WHEN isfinite(f) THEN 1 END
    """
    if not any(c.name.lower() == name.lower() for c in schema.columns):
        return stored
    col = schema.column(name)
    if col.nulls.action == "replace":
        return literal(1)
    if col.type == "float":
        return exp.Case(ifs=[exp.If(this=dialect.isfinite(stored), true=literal(1))])
    return stored


def stored_columns(schema: DatasetSchema) -> list[tuple[str, str]]:
    """(name, SQL type) of every column of a registered table: the privacy unit when it is
    not declared, every declared column, the bounded copy of each bounded numeric column."""
    cols: list[tuple[str, str]] = []
    names = {c.name.lower() for c in schema.columns}
    if not schema.unit_is_row and schema.privacy_unit.lower() not in names:
        cols.append((schema.privacy_unit, "VARCHAR"))
    cols.extend((col.name, _TYPES.get(col.type, "VARCHAR")) for col in schema.columns)
    cols.extend(
        (bounded_column(col.name), "BIGINT") for col in schema.columns if col.has_bounded_copy
    )
    return cols


def null_unit_message(unit: str) -> str:
    """The owner's refusal of a source whose id column holds NULL under the default policy
    (both backends): it names the policy to declare, never a value.

    >>> null_unit_message("pid")[:60]
    "privacy_unit column 'pid' holds NULL values; every row must "
    """
    return (
        f"privacy_unit column {unit!r} holds NULL values; every row must belong to an "
        f"individual. Declare the id column's null policy 'nulls: drop' (columns: {unit}: "
        "{type: ..., nulls: drop}) to leave the rows without an id out at registration "
        "(their number is reported), or give every row an id."
    )


def _type(name: str) -> exp.DataType:
    """The SQL type ``name`` (BIGINT, DOUBLE, VARCHAR, BOOLEAN) as the tree the parser makes
    of it.

    >>> _type("DOUBLE") == exp.DataType.build("DOUBLE")
    True
    """
    return exp.DataType(this=exp.DataType.Type[name])


def empty_relation_tree(schema: DatasetSchema) -> exp.Expr:
    """:func:`empty_relation` as a tree."""
    # Each type built from its name, not parsed from text (the same tree, without running
    # the SQL parser once per column in every query's check).
    items = [
        exp.alias_(exp.cast(exp.Null(), _type(t)), ident(n), copy=False)
        for n, t in stored_columns(schema)
    ]
    select = exp.Select(expressions=items, limit=exp.Limit(expression=literal(0)))
    return exp.Subquery(this=select, alias=exp.TableAlias(this=ident(schema.table)))


def empty_relation(schema: DatasetSchema) -> str:
    """A relation with the stored table's columns and types and no rows (DuckDB SQL).

    Every declared column (BIGINT, DOUBLE or VARCHAR, as registration stores them), the
    privacy unit when it is not declared, and the bounded copy of each bounded numeric column;
    aliased as the table. A constant: no stored data or statistics behind it.

    >>> from infodp.curator.declaration.source import load_schema
    >>> s = load_schema({"table": "t", "privacy_unit": "row",
    ...                  "columns": {"x": {"type": "int", "bounds": [0, 10]}}})
    >>> empty_relation(s)
    '(SELECT CAST(NULL AS BIGINT) AS "x", CAST(NULL AS BIGINT) AS "__bnd_x" LIMIT 0) AS "t"'
    """
    return str(empty_relation_tree(schema).sql(normalize_functions=False))


def unit_cut(
    body: exp.Select,
    unit: str,
    hashed: Sequence[str],
    limit: int,
    *,
    salt: int | None,
    dialect: SqlDialect,
    columns: Sequence[str] = (),
) -> exp.Select:
    """``body`` keeping at most ``limit`` rows of each unit: ``row_number`` over the unit in
    the order of a 64-bit hash of the ``hashed`` columns (and ``salt`` first, when given).

    A choice made from each unit's own rows only (neighbours differ in one unit's rows). With
    no salt it is the same for the same data (fingerprints and re-registrations agree); with a
    secret salt nobody can predict or steer it. Without QUALIFY the rank is a column of a
    subquery and ``columns`` (the body's output) are selected back.
    """
    args: list[exp.Expr] = [column(c) for c in hashed]
    if salt is not None:
        args.insert(0, literal(salt))
    window = exp.Window(
        this=exp.Anonymous(this="row_number"),
        partition_by=[column(unit)],
        order=exp.Order(expressions=[exp.Ordered(this=dialect.hash64(args))]),
    )
    if dialect.qualify:
        body.set("qualify", exp.Qualify(this=exp.LTE(this=window, expression=literal(limit))))
        return body
    body.set("expressions", [*body.expressions, exp.alias_(window, "__rank", copy=False)])
    ranked = exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier("__ranked")))
    select = exp.Select(expressions=[column(c) for c in columns]).from_(ranked, copy=False)
    return select.where(exp.LTE(this=exp.column("__rank"), expression=literal(limit)), copy=False)
