"""A source copied as a stored table on DuckDB (registration only): every declared column
typed and checked, the null policies applied, each bounded numeric column's bounded copy made,
each unit cut to its row limit.

The refusals name the column and the rule, never a value (the owner's own data stays out of
messages, which may be logged).

>>> import duckdb
>>> from infodp.curator.declaration.source import load_schema
>>> con = duckdb.connect()
>>> _ = con.execute("CREATE VIEW __source AS SELECT * FROM (VALUES ('a', 1), (NULL, 0), "
...                 "('b', 1)) AS v(pid, flag)")
>>> s = load_schema({"table": "t", "privacy_unit": "pid", "columns": {
...     "pid": {"type": "text", "nulls": "drop"}, "flag": {"type": "bool"}}})
>>> copy_table(con, "t", ["pid", "flag"], s)
Registered(rows=2, unit_ok=True, dropped=1)
>>> con.execute('SELECT typeof(flag), sum(__bnd_flag) FROM t GROUP BY 1').fetchall()
[('BOOLEAN', 2)]
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
from sqlglot import exp

from infodp.curator.backends.base import Registered
from infodp.curator.backends.bound_checks import column_constraints
from infodp.curator.backends.bounding import (
    bool_typing,
    bounded_column,
    column,
    ident,
    not_boolean_message,
    null_unit_message,
    snap_expression,
    unit_cut,
)
from infodp.curator.backends.dialects import DUCKDB
from infodp.curator.declaration.schema import DatasetSchema
from infodp.errors import ParameterError

__all__ = ["copy_table"]


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql(tree: exp.Expr) -> str:
    """DuckDB's SQL of a tree (sqlglot's generic dialect: no dialect to import)."""
    return str(tree.sql(normalize_functions=False))


def copy_table(
    con: duckdb.DuckDBPyConnection, name: str, columns: Sequence[str], schema: DatasetSchema
) -> Registered:
    """Copy view ``__source`` (its ``columns``) as table ``name`` bounded by ``schema``:
    (rows kept, True, rows without an id left out). A failure leaves no table behind."""
    wanted = _typed_columns(con, columns, schema)
    if con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE lower(table_name) = lower(?)",
        [name],
    ).fetchone() != (0,):
        raise ParameterError("name", name, "a table name not yet in the store")
    select = ", ".join(f"{expr} AS {_ident(col)}" for col, expr in wanted)
    con.execute(f"CREATE TEMP TABLE __typed AS SELECT {select} FROM __source")
    try:
        dropped = _drop_null_units(con, schema)
        # Refused before the table exists (its NOT NULL constraints would refuse the rows
        # with DuckDB's message instead of the declaration's).
        _refuse_forbidden_nulls(con, schema)
        # The rows kept (what a declared public_rows is checked against).
        count = con.execute("SELECT count(*) FROM __typed").fetchone()
        rows = 0 if count is None else int(count[0])
        _create(con, name, _bounded_body(schema, wanted), schema)
    finally:
        con.execute("DROP TABLE IF EXISTS __typed")
    # The stored table is bounded by construction: every unit within its row limit.
    return Registered(rows, True, dropped)


def _create(con: duckdb.DuckDBPyConnection, name: str, body: str, schema: DatasetSchema) -> None:
    """Table ``name`` holding the rows of ``body``, each bounded copy declared with its
    constraints (:mod:`~infodp.curator.backends.bound_checks`): DuckDB then refuses any later
    write that leaves the declared range, and queries need not bound those rows again."""
    constraints = column_constraints(schema)
    described = con.execute(f"DESCRIBE {body}").fetchall()
    columns = ", ".join(
        " ".join([_ident(col), str(kind), constraints.get(col, "")]).rstrip()
        for col, kind, *_ in described
    )
    # One transaction, as the CREATE TABLE AS it replaces: the table exists filled or not at all.
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(f"CREATE TABLE {_ident(name)} ({columns})")
        con.execute(f"INSERT INTO {_ident(name)} {body}")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def _unit_column(
    available: dict[str, str], names: Sequence[str], schema: DatasetSchema
) -> list[tuple[str, str]]:
    """The privacy unit's (stored name, source column) when it is not a declared column."""
    if schema.unit_is_row:
        return []
    unit = available.get(schema.privacy_unit.lower())
    if unit is None:
        raise ParameterError(
            f"privacy_unit column {schema.privacy_unit!r} is not in the source; "
            f"source columns: {', '.join(names)}."
        )
    if schema.privacy_unit.lower() in {c.name.lower() for c in schema.columns}:
        return []
    return [(schema.privacy_unit, _ident(unit))]


def _typed_columns(
    con: duckdb.DuckDBPyConnection, names: Sequence[str], schema: DatasetSchema
) -> list[tuple[str, str]]:
    """(stored name, typing expression over ``__source``) of the unit and every declared
    column; refuses a missing column or a value that is not a number of its declared type."""
    available = {c.lower(): c for c in names}
    wanted = _unit_column(available, names, schema)
    for col in schema.columns:
        if col.name.lower() not in available:
            raise ParameterError(
                f"declared column {col.name!r} is not in the source; source columns: "
                f"{', '.join(names)}."
            )
        src = _ident(available[col.name.lower()])
        if col.type == "bool":
            wanted.append((col.name, _bool_column(con, col.name, available[col.name.lower()])))
            continue
        cast = _TYPES.get(col.type)
        if cast is None:
            wanted.append((col.name, f"{src}::VARCHAR"))
            continue
        wanted.append((col.name, f"TRY_CAST({src} AS {cast})"))
        bad = con.execute(
            f"SELECT count(*) FROM __source WHERE {src} IS NOT NULL "
            f"AND TRY_CAST({src} AS {cast}) IS NULL"
        ).fetchone()
        if bad is not None and bad[0] > 0:
            raise ParameterError(
                f"column {col.name!r} is declared {col.type} but some values are not "
                f"numbers of that type."
            )
    return wanted


_TYPES = {"int": "BIGINT", "float": "DOUBLE"}


def _bool_column(con: duckdb.DuckDBPyConnection, name: str, source: str) -> str:
    """The typing expression of ``bool`` column ``name`` read from source column ``source``;
    refuses a value that is not a boolean, naming the column (never the value)."""
    typed, bad = bool_typing(column(source))
    row = con.execute(f"SELECT count(*) FROM __source WHERE {_sql(bad)}").fetchone()
    if row is not None and row[0] > 0:
        raise ParameterError(not_boolean_message(name))
    return _sql(typed)


def _bounded_body(schema: DatasetSchema, wanted: Sequence[tuple[str, str]]) -> str:
    """The stored table's SELECT over ``__typed``: every typed column and the bounded copy of
    each bounded numeric column, each unit cut to ``max_rows_per_unit`` rows.

    Clamping, the null policy and grid snapping are done here, once, inside DuckDB: the
    declared bounds are fixed for the table's life, and queries then sum plain BIGINTs (the
    per-unit row and group limits stay in each query's SQL, since they depend on the query's
    filter and groups). Every unit is cut here, once, whatever the data (as the Spark backend
    does): deciding from the data whether the cut is needed (and skipping the per-unit window
    in every query when it is not) made every query's run time tell whether one person has
    too many rows, a timing channel of ε = ∞. Which rows a unit keeps: row_number over the
    unit in the order of an unsalted hash of the whole row, a choice of each unit's own rows
    only, the same for the same data (so fingerprints and re-registrations agree).
    """
    bounded = [
        exp.alias_(snap_expression(col), ident(bounded_column(col.name)), copy=False)
        for col in schema.columns
        if col.has_bounded_copy
    ]
    body = exp.Select(expressions=[exp.Star(), *bounded]).from_("__typed", copy=False)
    if not schema.unit_is_row:
        hashed = [c for c, _ in wanted]
        body = unit_cut(
            body, schema.privacy_unit, hashed, schema.max_rows_per_unit, salt=None, dialect=DUCKDB
        )
    return _sql(body)


def _drop_null_units(con: duckdb.DuckDBPyConnection, schema: DatasetSchema) -> int:
    """Under the id column's ``nulls: drop``, delete the typed rows whose id is NULL; how
    many (0 under any other policy, whose NULL ids :func:`_refuse_forbidden_nulls` refuses)."""
    if not schema.drops_null_units:
        return 0
    missing = f"{_ident(schema.privacy_unit)} IS NULL"
    row = con.execute(f"SELECT count(*) FROM __typed WHERE {missing}").fetchone()
    con.execute(f"DELETE FROM __typed WHERE {missing}")
    return 0 if row is None else int(row[0])


def _refuse_forbidden_nulls(con: duckdb.DuckDBPyConnection, schema: DatasetSchema) -> None:
    """Refuse NULL, NaN or ±inf in a column whose null policy is ``error``, and NULL units."""
    for col in schema.columns:
        if col.nulls.action != "error" or col.name.lower() == schema.privacy_unit.lower():
            continue  # a NULL id is refused below, naming the id column's own policy
        c = _ident(col.name)
        check = f"{c} IS NULL" + (f" OR NOT isfinite({c})" if col.type == "float" else "")
        row = con.execute(f"SELECT count(*) FROM __typed WHERE {check}").fetchone()
        if row is not None and row[0] > 0:
            raise ParameterError(
                f"column {col.name!r} holds NULL, NaN or infinite values and declares "
                "no null policy; add 'nulls: drop' or 'nulls: {replace: VALUE}' to its "
                "declaration (values are never imputed silently)."
            )
    if schema.unit_is_row:
        return
    u = _ident(schema.privacy_unit)
    nulls = con.execute(f"SELECT count(*) FROM __typed WHERE {u} IS NULL").fetchone()
    if nulls is not None and nulls[0] > 0:
        raise ParameterError(null_unit_message(schema.privacy_unit))
