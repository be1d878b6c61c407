"""Declared bounds kept by DuckDB itself: table constraints written at registration, trusted
by a query only after reading them back from the store's catalogue.

Every query bounds the stored bounded copy once more
(:func:`~infodp.curator.backends.bounding.snapped`): a row filter ``__bnd_v BETWEEN lo AND hi``
or a clamping CASE, evaluated on every row, so that a store edited after registration still
cannot contribute beyond the declared bounds. DuckDB can keep that promise instead:
registration creates the table with, on each bounded copy, the constraint
``CHECK (__bnd_v BETWEEN lo AND hi)`` (and ``NOT NULL`` when the column's null policy leaves no
NULL), and DuckDB then refuses any INSERT or UPDATE that would break it. A query on a
connection kept for many queries (a service's) reads the constraints of the table it
aggregates from the catalogue (once per connection: a DuckDB file cannot change under an open
read-only connection; a fresh connection's first catalogue read costs more than the per-row
bound saves on one query) and drops the per-row bound only for the copies whose constraints
are exactly the declared ones: same column, same grid range, NOT NULL
where the filter would also leave NULL out. A store registered before, a table replaced
without them, a looser range or a dropped NOT NULL: the query bounds the rows as before. Which
form runs depends on the declaration and the catalogue, never on the data.

>>> import duckdb
>>> from infodp.curator.declaration.schema import ColumnSpec, DatasetSchema
>>> s = DatasetSchema("t", "row", (ColumnSpec("x", "int", bounds=(0.0, 10.0)),))
>>> column_constraints(s)
{'__bnd_x': 'NOT NULL CHECK ("__bnd_x" BETWEEN 0 AND 10)'}
>>> con = duckdb.connect()
>>> _ = con.execute('CREATE TABLE t (x BIGINT, "__bnd_x" BIGINT NOT NULL '
...                 'CHECK ("__bnd_x" BETWEEN 0 AND 10))')
>>> enforced_bounds(con, "t", s)
frozenset({'x'})
>>> _ = con.execute('CREATE TABLE u (x BIGINT, '
...                 '"__bnd_x" BIGINT CHECK ("__bnd_x" BETWEEN 0 AND 99))')
>>> enforced_bounds(con, "u", s)
frozenset()
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence

import duckdb
import sqlglot
from sqlglot import exp

from infodp.curator.backends.bounding import bounded_column, copy_range
from infodp.curator.declaration.schema import ColumnSpec, DatasetSchema
from infodp.curator.plan.grid import column_grid

__all__ = ["column_constraints", "enforced_bounds", "registered_bounds"]

#: The constraints of a table, as the catalogue lists them (type, columns, CHECK expression).
_CONSTRAINTS = (
    "SELECT constraint_type, constraint_column_names, expression FROM duckdb_constraints() "
    "WHERE database_name = current_database() AND schema_name = current_schema() "
    "AND table_name = ?"
)


def _bounded(schema: DatasetSchema) -> list[ColumnSpec]:
    """The columns with a bounded copy in a stored table (none in a derived relation)."""
    if schema.source_sql is not None:
        return []
    return [c for c in schema.columns if c.has_bounded_copy]


def column_constraints(schema: DatasetSchema) -> dict[str, str]:
    """Each bounded copy's column constraint (DuckDB SQL), for the CREATE TABLE of registration."""
    out: dict[str, str] = {}
    for col in _bounded(schema):
        check = f"CHECK ({copy_range(col).sql()})"
        out[bounded_column(col.name)] = f"NOT NULL {check}" if col.nulls.leaves_no_null else check
    return out


def registered_bounds(schema: DatasetSchema) -> frozenset[str]:
    """The columns whose bounds registration leaves to DuckDB's constraints: the form of the
    statements a query runs on a table registered by this version (what the data-free check of
    its SQL binds; a table without them runs the same statements with the per-row bounds)."""
    return frozenset(c.name for c in _bounded(schema))


def _number(e: exp.Expr) -> int | None:
    """An integer literal's value (``-5`` is a negation of 5), else None."""
    sign = 1
    if isinstance(e, exp.Neg):
        sign, e = -1, e.this
    if isinstance(e, exp.Literal) and e.is_int:
        return sign * int(e.this)
    return None


def _is_range(text: str | None, col: ColumnSpec) -> bool:
    """``text`` (a CHECK expression as the catalogue prints it) is exactly the column's range."""
    if text is None:
        return False
    try:
        tree = sqlglot.parse_one(text, read="duckdb")
    except sqlglot.errors.ParseError:
        return False
    tree = tree.unnest() if isinstance(tree, exp.Paren) else tree
    if not isinstance(tree, exp.Between) or not isinstance(tree.this, exp.Column):
        return False
    grid = column_grid(col)
    return (
        tree.this.name == bounded_column(col.name)
        and not tree.this.table
        and _number(tree.args["low"]) == grid.lo
        and _number(tree.args["high"]) == grid.hi
    )


def _enforced(
    rows: Sequence[tuple[str, list[str], str | None]], schema: DatasetSchema
) -> frozenset[str]:
    checked: dict[str, list[str | None]] = {}
    not_null: set[str] = set()
    for kind, names, text in rows:
        if len(names) != 1:
            continue
        if kind == "CHECK":
            checked.setdefault(names[0], []).append(text)
        elif kind == "NOT NULL":
            not_null.add(names[0])
    out: set[str] = set()
    for col in _bounded(schema):
        name = bounded_column(col.name)
        if any(_is_range(t, col) for t in checked.get(name, ())) and (
            name in not_null or not col.nulls.leaves_no_null
        ):
            out.add(col.name)
    return frozenset(out)


_LOCK = threading.Lock()
#: Per open connection, per (table, declaration): the columns it keeps bounded. A DuckDB file
#: cannot change under an open read-only connection, and the curator queries on no connection
#: it registers with.
_READ: weakref.WeakKeyDictionary[
    duckdb.DuckDBPyConnection, dict[tuple[str, DatasetSchema], frozenset[str]]
] = weakref.WeakKeyDictionary()


def enforced_bounds(
    con: duckdb.DuckDBPyConnection, table: str, schema: DatasetSchema
) -> frozenset[str]:
    """The declared columns of ``schema`` whose bounded copy in ``table`` DuckDB keeps within
    its grid range (and free of NULL where the per-row bound would drop NULL): their per-row
    bound can be left out of a query on ``con``."""
    if not _bounded(schema):
        return frozenset()
    key = (table, schema)
    with _LOCK:
        known = _READ.get(con, {}).get(key)
    if known is not None:
        return known
    rows = con.execute(_CONSTRAINTS, [table]).fetchall()
    found = _enforced([(str(k), list(n), e) for k, n, e in rows], schema)
    with _LOCK:
        _READ.setdefault(con, {})[key] = found
    return found
