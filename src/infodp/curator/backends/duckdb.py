"""The DuckDB backend: one visitor that compiles a plan into one bounded SQL query.

Contribution bounding runs *inside* DuckDB as part of the same SQL that aggregates: values are
cleaned by their declared null policy, clamped to their declared bounds and snapped to a
power-of-two grid (as integers), each privacy unit keeps at most ``max_rows_per_unit`` rows and
at most ``max_groups_per_unit`` groups, rows outside the declared categories are dropped, and
only the bounded integer aggregates leave the database.

Concurrency: the store is opened read-only by queries (many processes may read at once) and
read-write only, briefly, to register a dataset; a connection that meets another process's lock
waits and retries with jittered exponential backoff instead of failing.

>>> from infodp.curator.schema import load_schema
>>> from infodp.curator.sql import parse_query
>>> from infodp.curator.plan import measurements
>>> s = load_schema({"table": "t", "privacy_unit": "row",
...                  "columns": {"x": {"type": "int", "bounds": [0, 10]}}})
>>> p = parse_query("SELECT SUM(x) FROM t WHERE x > 2", s)
>>> print(compile_aggregate(p, s, measurements(p), unit_rows_ok=True))
SELECT sum("__bnd_x") AS m0 FROM "t" WHERE ("x" > 2) AND ("__bnd_x" BETWEEN 0 AND 10)
"""

from __future__ import annotations

import atexit
import heapq
import math
import os
import secrets
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from infodp._lazy import lazy_module
from infodp._retry import retry
from infodp.curator.backends.base import ExactAggregates, QueryDeadline
from infodp.curator.grid import ColumnGrid, column_grid
from infodp.curator.plan import Measurement, Predicate, QueryPlan
from infodp.curator.schema import ColumnSpec, DatasetSchema
from infodp.errors import InternalError, ParameterError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
else:
    np = lazy_module("numpy")  # imported on first use: a Laplace query never needs it

__all__ = [
    "ColumnGrid",
    "DuckDBBackend",
    "ExactAggregates",
    "QueryDeadline",
    "bounded_column",
    "column_grid",
    "compile_aggregate",
    "compile_histogram",
    "compiled_statements",
    "empty_relation",
    "sorted_histograms",
]


#: Every connection plans from the SQL and the schema alone. DuckDB's optimisers that read the
#: stored column statistics (min/max, string lengths, row-group zone maps) would otherwise
#: choose the plan from the data: a perfect-hash GROUP BY, compressed keys, a sum proved not to
#: overflow, a bound filter proved always true, row groups skipped by a filter; one person's
#: value could then change the plan and its run time. Without them a query costs about 1 ms
#: more per million rows (GROUP BY AVG over 600 000 rows: 1.7 ms to 2.6 ms); the filter is
#: evaluated on every row instead of pushed into the scan, so no row group is skipped.
_CONFIG: dict[str, Any] = {
    "disabled_optimizers": (
        "statistics_propagation,compressed_materialization,row_group_pruner,filter_pushdown"
    )
}


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(value: float | int | str) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bool):
        raise InternalError("bool literal")
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        raise ParameterError("literal", value, "a finite number")
    return repr(float(value))


def _clean(col: ColumnSpec, *, assume_clean: bool = True) -> str:
    """The cleaned, clamped value of a numeric column (NULL when the policy drops it).

    Registration guarantees that a column with the default policy ``error`` holds no NULL,
    NaN or ±inf, so with ``assume_clean`` only columns with a ``drop``/``replace`` policy pay
    for the CASE.
    """
    c = _ident(col.name)
    if col.bounds is None:
        raise InternalError(f"column {col.name} has no bounds")
    low, high = col.bounds
    if col.type == "int":
        clamped = f"least(greatest({c}, {int(low)}), {int(high)})"
    else:
        clamped = f"least(greatest({c}, {_lit(low)}), {_lit(high)})"
    if col.nulls.action == "error" and assume_clean:
        return clamped
    repl = "NULL" if col.nulls.action != "replace" else _lit(float(col.nulls.value))  # type: ignore[arg-type]
    bad = f"{c} IS NULL" if col.type == "int" else f"{c} IS NULL OR NOT isfinite({c})"
    return f"CASE WHEN {bad} THEN {repl} ELSE {clamped} END"


def bounded_column(name: str) -> str:
    """Name of the materialised bounded copy of numeric column ``name`` (see ``register``)."""
    return f"__bnd_{name}"


def _snap_expression(col: ColumnSpec) -> str:
    """Clamp to the bounds, apply the null policy, snap to the grid, as a BIGINT (SQL)."""
    grid = column_grid(col)
    inner = _clean(col, assume_clean=False)
    if grid.step == 1.0:
        return f"CAST(round({inner}) AS BIGINT)"
    # g is a power of two: multiplying by 1/g is exact and faster than dividing.
    return f"CAST(round(({inner}) * {_lit(1.0 / grid.step)}) AS BIGINT)"


def _snapped(col: ColumnSpec) -> tuple[str, str | None]:
    """The bounded copy made at registration, bounded again by the aggregating SQL itself:
    (value expression, row filter or None).

    Registration already clamps and snaps (bounds are fixed by the schema); bounding once more
    here keeps contribution bounding inside the very statement that aggregates, so a store
    edited after registration still cannot contribute beyond the declared bounds.

    A column that registration guarantees to hold no NULL (null policy ``error`` or
    ``replace``) is bounded by a row filter, ``v BETWEEN lo AND hi``: a row whose stored value
    left the grid's range after registration is left out of the query (it contributes
    nothing, which is as bounded as clamping it). Plans are made without the column
    statistics (``_CONFIG``), so the filter is evaluated on every row, like a clamping CASE
    (about 1 ms per million rows). A column whose dropped values are NULL keeps the CASE,
    which keeps NULL NULL.
    """
    grid = column_grid(col)
    v = _ident(bounded_column(col.name))
    if col.nulls.action in ("error", "replace"):
        return v, f"({v} BETWEEN {grid.lo} AND {grid.hi})"
    case = (
        f"CASE WHEN {v} < {grid.lo} THEN {grid.lo} WHEN {v} > {grid.hi} THEN {grid.hi} ELSE {v} END"
    )
    return case, None


def _category(col: ColumnSpec) -> str:
    c = _ident(col.name)
    if col.type == "float":
        raise InternalError("float group key")
    # Registration stores an int key as BIGINT (keys are compared as integers and named in
    # Python) and every other key as VARCHAR (``register``): no cast is needed, and a no-op
    # cast still costs DuckDB a projection per row.
    expr = c
    if col.nulls.action == "replace":
        fill = int(float(col.nulls.value)) if col.type == "int" else str(col.nulls.value)  # type: ignore[arg-type]
        expr = f"coalesce({expr}, {_lit(fill)})"
    return expr


def _predicate(p: Predicate, schema: DatasetSchema) -> str:
    if p.op == "and":
        return "(" + " AND ".join(_predicate(a, schema) for a in p.args) + ")"
    if p.op == "or":
        return "(" + " OR ".join(_predicate(a, schema) for a in p.args) + ")"
    if p.op == "not":
        return f"(NOT {_predicate(p.args[0], schema)})"
    if p.column is None:
        raise InternalError(f"predicate {p.op} without a column")
    col = schema.column(p.column)
    c = _ident(col.name)
    vals: list[float | int | str] = list(p.values)
    if col.type in ("category", "text"):
        c = f"{c}::VARCHAR"
        vals = [str(v) for v in p.values]
    if p.op in ("=", "<>", "<", "<=", ">", ">="):
        return f"({c} {p.op} {_lit(vals[0])})"
    if p.op == "in":
        return f"({c} IN ({', '.join(_lit(v) for v in vals)}))"
    if p.op == "between":
        return f"({c} BETWEEN {_lit(vals[0])} AND {_lit(vals[1])})"
    if p.op == "is null":
        return f"({c} IS NULL)"
    if p.op == "is not null":
        return f"({c} IS NOT NULL)"
    raise InternalError(f"unknown predicate {p.op}")


def _source_cte(
    plan: QueryPlan,
    schema: DatasetSchema,
    value_columns: Sequence[str],
    unit_rows_ok: bool,
    extra_items: Sequence[str] = (),
    source: str | None = None,
    flat: dict[str, str] | None = None,
) -> str:
    """``WITH ... __src AS (...)``: filtered, cleaned, bounded rows (one column per input).

    ``source``: the relation read instead of the table (:func:`empty_relation` for checks).
    ``unit_rows_ok``: the table was cut to ``max_rows_per_unit`` rows per unit at
    registration (every table registered by this version); False only for a table registered
    before registration did the cut, which every query then bounds with a per-unit window.
    ``flat``: when given and the rows need nothing after the row filter (no per-unit limit,
    no filter on the keys), ``""`` is returned and ``flat["where"]`` holds that filter.
    """
    items: list[str] = []
    unit_needed = not schema.unit_is_row
    if unit_needed:
        items.append(f"{_ident(schema.privacy_unit)} AS __u")
    for i, g in enumerate(plan.group_by):
        items.append(f"{_category(schema.column(g.column))} AS __g{i}")
    bound_filters: list[str] = []
    for i, name in enumerate(value_columns):
        expr, keep = _snapped(schema.column(name))
        items.append(f"{expr} AS __v{i}")
        if keep is not None:
            bound_filters.append(keep)
    items.extend(extra_items)
    if unit_needed and not unit_rows_ok:
        items.append("random() AS __r")  # which rows a unit keeps: a data-independent choice
    if not items:
        items.append("1 AS __one")
    row_filters = [] if plan.where is None else [_predicate(plan.where, schema)]
    row_filters.extend(bound_filters)
    # Rows outside the declared keys only matter when a per-unit limit could count them; with
    # no bounding step their groups are simply never read (the engine looks up declared keys).
    bounding = unit_needed and (
        not unit_rows_ok or (bool(plan.group_by) and schema.group_limit < schema.max_rows_per_unit)
    )
    # Keys outside a declared domain must never form a released group: with partition
    # selection the engine releases whatever key tuples survive, so filter them here too.
    filter_declared = bounding or plan.needs_partition_selection
    alias_filters: list[str] = []
    for i, g in enumerate(plan.group_by):
        if g.categories is None:
            alias_filters.append(f"(__g{i} IS NOT NULL)")
        elif filter_declared and schema.column(g.column).type == "int":
            alias_filters.append(f"(__g{i} BETWEEN {g.categories[0]} AND {g.categories[-1]})")
        elif filter_declared:
            keys = ", ".join(_lit(k) for k in g.categories)
            alias_filters.append(f"(__g{i} IN ({keys}))")
    base = f"SELECT {', '.join(items)} FROM {source or _ident(plan.table)}"
    if row_filters:
        base += " WHERE " + " AND ".join(row_filters)
    ctes = [f"__base AS ({base})"]
    current = "__base"
    if alias_filters:
        ctes.append(f"__keyed AS (SELECT * FROM {current} WHERE {' AND '.join(alias_filters)})")
        current = "__keyed"
    if unit_needed and not unit_rows_ok:
        m = schema.max_rows_per_unit
        ctes.append(
            f"__rows AS (SELECT * FROM {current} QUALIFY "
            f"row_number() OVER (PARTITION BY __u ORDER BY __r) <= {m})"
        )
        current = "__rows"
    if unit_needed and plan.group_by and schema.group_limit < schema.max_rows_per_unit:
        keys = ", ".join(f"__g{i}" for i in range(len(plan.group_by)))
        salt = secrets.randbits(62)
        ctes.append(
            f"__groups AS (SELECT * FROM {current} QUALIFY dense_rank() OVER "
            f"(PARTITION BY __u ORDER BY hash({keys}, {salt})) <= {schema.group_limit})"
        )
        current = "__groups"
    if flat is not None and len(ctes) == 1:
        # The rows need no step after the filter: one flat statement (compile_aggregate).
        flat["where"] = " AND ".join(row_filters)
        return ""
    ctes.append(f"__src AS (SELECT * FROM {current})")
    return "WITH " + ",\n".join(ctes)


def _value_columns(ms: Sequence[Measurement]) -> list[str]:
    cols: list[str] = []
    for m in ms:
        if m.column is not None and m.kind != "quantile" and m.column not in cols:
            cols.append(m.column)
    return cols


def compile_aggregate(
    plan: QueryPlan,
    schema: DatasetSchema,
    ms: Sequence[Measurement],
    *,
    unit_rows_ok: bool,
    source: str | None = None,
) -> str:
    """The one SQL statement computing every non-quantile measurement per group.

    When the bounded rows are the table's rows under one filter (row-level privacy, or units
    already within their row limit and no group limit to apply) and every value is bounded by
    that filter, the statement is flat: ``SELECT keys, aggregates FROM table WHERE filter
    GROUP BY keys``, the same rows and values as the ``WITH __base ... __src`` form, which
    costs DuckDB about 0.1 ms more to plan (benchmarks/curator.py).
    """
    value_cols = _value_columns(ms)
    values = [_snapped(schema.column(c)) for c in value_cols]
    flat: dict[str, str] | None = {} if all(keep is not None for _, keep in values) else None
    cte = _source_cte(plan, schema, value_cols, unit_rows_ok, source=source, flat=flat)
    if cte:
        flat = None
    exprs: list[str] = []
    for i, m in enumerate(ms):
        if m.kind == "quantile":
            continue
        if m.kind == "count_rows":
            exprs.append(f"count(*) AS m{i}")
            continue
        if m.column is None:
            raise InternalError(f"measurement {m.key} without a column")
        j = value_cols.index(m.column)
        v = f"__v{j}" if flat is None else values[j][0]
        if m.kind == "count":
            exprs.append(f"count({v}) AS m{i}")
        elif m.kind == "sum":
            exprs.append(f"sum({v}) AS m{i}")
        elif m.kind in ("csum", "csumsq"):
            center = column_grid(schema.column(m.column)).center
            d = f"({v} - {center})"
            exprs.append(f"sum({d}) AS m{i}" if m.kind == "csum" else f"sum({d} * {d}) AS m{i}")
        else:
            raise InternalError(f"unknown measurement {m.kind}")
    if not exprs:
        exprs.append("count(*) AS m_unused")
    if flat is not None:
        key_exprs = [_category(schema.column(g.column)) for g in plan.group_by]
        keys = [f"{k} AS __g{i}" for i, k in enumerate(key_exprs)]
        where = f" WHERE {flat['where']}" if flat["where"] else ""
        tail = f" GROUP BY {', '.join(key_exprs)}" if key_exprs else ""
        select = ", ".join([*keys, *exprs])
        return f"SELECT {select} FROM {source or _ident(plan.table)}{where}{tail}"
    keys = [f"__g{i}" for i in range(len(plan.group_by))]
    select = ", ".join([*keys, *exprs])
    tail = f" GROUP BY {', '.join(keys)}" if keys else ""
    return cte + f"\nSELECT {select} FROM __src{tail}"


def compile_histogram(
    plan: QueryPlan,
    schema: DatasetSchema,
    column: str,
    *,
    unit_rows_ok: bool,
    source: str | None = None,
) -> str:
    """SQL of the per-group counts of each snapped value of ``column`` (for quantiles).

    The values are the bounded copy on the column's grid (:func:`_snapped`, as every other
    aggregate reads them): one row per (group, distinct grid value) with its count, so the
    quantile can be answered at the grid's resolution (the grid points are the candidates).
    The statement's shape depends on the query and the schema only; its output has at most
    as many rows as the bounded rows, and a unit moves it by at most its row limit.
    """
    cte = _source_cte(plan, schema, [column], unit_rows_ok, source=source)
    keys = [f"__g{i}" for i in range(len(plan.group_by))]
    # __gid numbers the groups densely (1, 2, ...), so the engine can split the rows into
    # groups with vectorised numpy instead of a Python loop over rows.
    gid = f"dense_rank() OVER (ORDER BY {', '.join(keys)})" if keys else "1"
    select = ", ".join([*keys, "__v0 AS __bin", "count(*) AS n", f"{gid} AS __gid"])
    return (
        cte
        + f"\nSELECT {select} FROM __src WHERE __v0 IS NOT NULL "
        + f"GROUP BY {', '.join([*keys, '__v0'])}"
    )


def sorted_histograms(
    gids: npt.NDArray[np.int64], bins: npt.NDArray[np.int64], counts: npt.NDArray[np.int64]
) -> list[npt.NDArray[np.int64]]:
    """Per group id 1, 2, ...: a (2, d) array of its distinct values (ascending) and counts.

    The layout both backends give :class:`ExactAggregates` for a quantile measurement.

    >>> h = sorted_histograms(np.array([1, 2, 1]), np.array([7, 3, 5]), np.array([1, 2, 3]))
    >>> [x.tolist() for x in h]
    [[[5, 7], [3, 1]], [[3], [2]]]
    """
    if gids.size == 0:
        return []
    order = np.lexsort((bins, gids))
    g, v, c = gids[order], bins[order], counts[order]
    cuts = np.flatnonzero(np.diff(g)) + 1
    return [np.stack([vs, cs]) for vs, cs in zip(np.split(v, cuts), np.split(c, cuts), strict=True)]


class DuckDBBackend:
    """Datasets in one DuckDB file; read-only short-lived connections for queries."""

    def __init__(
        self, path: str | Path, *, timeout: float = 120.0, threads: int | None = None
    ) -> None:
        self.path = Path(path)
        self.timeout = timeout
        # DuckDB worker threads per read connection (None: DuckDB's default, all cores). A
        # shared service gives each query fewer, so one analyst's heavy query cannot take
        # every core from the others.
        self.threads = threads
        #: ``":memory:"``: one private in-memory database for the life of this object; each
        #: :meth:`connect` is a cursor on it (nothing is written to disk).
        self._memory: duckdb.DuckDBPyConnection | None = (
            duckdb.connect(":memory:", config=dict(_CONFIG)) if str(path) == ":memory:" else None
        )

    def connect(self, *, read_only: bool) -> duckdb.DuckDBPyConnection:
        """A connection, waiting (with backoff) while another process holds a conflicting lock."""
        if self._memory is not None:
            return self._memory.cursor()

        def attempt() -> duckdb.DuckDBPyConnection:
            if read_only and not self.path.exists():
                # No path in the message: it can reach an analyst through the service.
                raise ParameterError(
                    "the store is missing (it was moved or deleted); nothing was released."
                )
            config = dict(_CONFIG)
            if read_only and self.threads is not None:
                config["threads"] = self.threads
            return duckdb.connect(str(self.path), read_only=read_only, config=config)

        return retry(
            attempt,
            retryable=lambda err: (
                isinstance(err, duckdb.IOException) and "lock" in str(err).lower()
            ),
            deadline=time.monotonic() + self.timeout,
            cap=0.25,
        )

    # -- registration (data owner side) --------------------------------------------------------

    def register(self, name: str, source: Any, schema: DatasetSchema) -> tuple[int, bool]:
        """Copy the declared columns of ``source`` into table ``name``; returns (rows, unit_ok).

        ``source``: a CSV or Parquet path, or a pandas / polars / Arrow frame. The data owner's
        data are checked against the declaration (column presence and types, null policy
        ``error``). The stored table keeps at most ``max_rows_per_unit`` rows of each unit, cut
        here whatever the data, so ``unit_ok`` is always True: no query applies (or skips) a
        row-limit step, and no query's plan or work depends on how many rows a unit had.
        """
        con = self.connect(read_only=False)
        try:
            relation = self._relation(con, source)
            available = {c.lower(): c for c in relation.columns}
            wanted: list[tuple[str, str]] = []
            if not schema.unit_is_row:
                if schema.privacy_unit.lower() not in available:
                    raise ParameterError(
                        f"privacy_unit column {schema.privacy_unit!r} is not in the source; "
                        f"source columns: {', '.join(relation.columns)}."
                    )
                if schema.privacy_unit.lower() not in {c.name.lower() for c in schema.columns}:
                    wanted.append(
                        (schema.privacy_unit, f"{_ident(available[schema.privacy_unit.lower()])}")
                    )
            for col in schema.columns:
                if col.name.lower() not in available:
                    raise ParameterError(
                        f"declared column {col.name!r} is not in the source; source columns: "
                        f"{', '.join(relation.columns)}."
                    )
                src = _ident(available[col.name.lower()])
                cast = {"int": "BIGINT", "float": "DOUBLE"}.get(col.type, "VARCHAR")
                wanted.append(
                    (
                        col.name,
                        f"TRY_CAST({src} AS {cast})" if cast != "VARCHAR" else f"{src}::VARCHAR",
                    )
                )
                if cast != "VARCHAR":
                    bad = con.execute(
                        f"SELECT count(*) FROM __source WHERE {src} IS NOT NULL "
                        f"AND TRY_CAST({src} AS {cast}) IS NULL"
                    ).fetchone()
                    if bad is not None and bad[0] > 0:
                        raise ParameterError(
                            f"column {col.name!r} is declared {col.type} but some values are not "
                            f"numbers of that type."
                        )
            if con.execute(
                "SELECT count(*) FROM information_schema.tables WHERE lower(table_name) = lower(?)",
                [name],
            ).fetchone() != (0,):
                raise ParameterError("name", name, "a table name not yet in the store")
            select = ", ".join(f"{expr} AS {_ident(col)}" for col, expr in wanted)
            con.execute(f"CREATE TEMP TABLE __typed AS SELECT {select} FROM __source")
            # Clamping, the null policy and grid snapping of every bounded numeric column are
            # done here, once, inside DuckDB: the declared bounds are fixed for the table's
            # life, and queries then sum plain BIGINTs (the per-unit row and group limits stay
            # in each query's SQL, since they depend on the query's filter and groups).
            bounded = [
                f"{_snap_expression(col)} AS {_ident(bounded_column(col.name))}"
                for col in schema.columns
                if col.is_numeric and col.bounds is not None
            ]
            extra = "".join(", " + b for b in bounded)
            body = f"SELECT *{extra} FROM __typed"
            if not schema.unit_is_row:
                # Every unit keeps at most max_rows_per_unit rows, cut here, once, whatever the
                # data (as the Spark backend does): queries then read an already bounded table
                # with one plan that depends on the query and the schema only. Deciding from
                # the data whether the cut is needed (and skipping the per-unit window in every
                # query when it is not) made every query's run time tell whether one person
                # has too many rows: a timing channel of ε = ∞. Which rows a unit keeps:
                # row_number over the unit in the order of a hash of the whole row, a choice
                # of each unit's own rows only (so neighbours differ in one unit's rows), the
                # same for the same data (so fingerprints and re-registrations agree).
                u = _ident(schema.privacy_unit)
                cols = ", ".join(_ident(c) for c, _ in wanted)
                body += (
                    f" QUALIFY row_number() OVER (PARTITION BY {u} ORDER BY hash({cols})) "
                    f"<= {int(schema.max_rows_per_unit)}"
                )
            con.execute(f"CREATE TABLE {_ident(name)} AS {body}")
            try:
                for col in schema.columns:
                    if col.nulls.action != "error":
                        continue
                    c = _ident(col.name)
                    check = f"{c} IS NULL" + (
                        f" OR NOT isfinite({c})" if col.type == "float" else ""
                    )
                    row = con.execute(f"SELECT count(*) FROM __typed WHERE {check}").fetchone()
                    if row is not None and row[0] > 0:
                        raise ParameterError(
                            f"column {col.name!r} holds NULL, NaN or infinite values and declares "
                            "no null policy; add 'nulls: drop' or 'nulls: {replace: VALUE}' to its "
                            "declaration (values are never imputed silently)."
                        )
                if not schema.unit_is_row:
                    u = _ident(schema.privacy_unit)
                    nulls = con.execute(
                        f"SELECT count(*) FROM __typed WHERE {u} IS NULL"
                    ).fetchone()
                    if nulls is not None and nulls[0] > 0:
                        raise ParameterError(
                            f"privacy_unit column {schema.privacy_unit!r} holds NULL values; every "
                            "row must belong to an individual."
                        )
                # The source's row count (what a declared public_rows is checked against).
                count = con.execute("SELECT count(*) FROM __typed").fetchone()
                rows = 0 if count is None else int(count[0])
            except BaseException:
                con.execute(f"DROP TABLE {_ident(name)}")
                raise
            finally:
                con.execute("DROP TABLE IF EXISTS __typed")
            con.execute("CHECKPOINT")
            # The stored table is bounded by construction: every unit within its row limit.
            return rows, True
        finally:
            con.close()

    @staticmethod
    def _relation(con: duckdb.DuckDBPyConnection, source: Any) -> duckdb.DuckDBPyRelation:
        if isinstance(source, (str, Path)):
            path = Path(source)
            if not path.is_file():
                raise ParameterError("source", str(source), "an existing CSV or Parquet file")
            suffix = path.suffix.lower()
            if suffix == ".parquet":
                rel = con.read_parquet(str(path))
            elif suffix in (".csv", ".tsv", ".txt", ".gz"):
                rel = con.read_csv(str(path))
            else:
                raise ParameterError("source", str(source), "a .csv or .parquet file")
        else:
            module = type(source).__module__.split(".")[0]
            if module not in ("pandas", "polars", "pyarrow"):
                raise ParameterError(
                    "source", type(source).__name__, "a path, or a pandas / polars / Arrow frame"
                )
            con.register("__frame", source)
            rel = con.table("__frame")
        con.execute("CREATE TEMP VIEW __source AS SELECT * FROM " + _relation_sql(rel))
        return con.table("__source")

    def drop(self, name: str) -> None:
        """Remove a table (used when a registration fails after the copy)."""
        con = self.connect(read_only=False)
        try:
            con.execute(f"DROP TABLE IF EXISTS {_ident(name)}")
        finally:
            con.close()

    # -- queries -------------------------------------------------------------------------------

    def check(
        self,
        plan: QueryPlan,
        schema: DatasetSchema,
        ms: Sequence[Measurement],
        *,
        unit_rows_ok: bool,
        con: duckdb.DuckDBPyConnection | None = None,
    ) -> None:
        """Bind and run the compiled SQL against an *empty* relation of the table's columns.

        Run before the budget is reserved: whatever DuckDB refuses at bind or constant-folding
        time is refused here, with a data-free message, at no cost. The statements read
        :func:`empty_relation` (typed NULL columns, no rows) instead of the table, so they
        touch no stored data and no table statistics: the outcome depends on the query and the
        declared schema only, on whichever connection runs them. ``con``: a connection to run
        them on (a one-shot process passes the one it answers with, instead of starting an
        in-memory DuckDB, ~10-40 ms); by default an in-memory DuckDB from a shared free list,
        which remembers the statements that passed on it.
        """
        statements = tuple(
            compiled_statements(
                plan, schema, ms, unit_rows_ok=unit_rows_ok, source=empty_relation(schema)
            )
        )
        if con is not None:
            _run_check(con, statements, plan.sql)
            return
        checkers = _checkers()
        checker = checkers.take()
        try:
            passed = checker[1]
            if statements in passed:
                # The same statements already ran without error on no data: running them
                # again is deterministic, so the refusal could not differ.
                return
            _run_check(checker[0], statements, plan.sql)
            if len(passed) >= _PASSED_MAX:
                passed.clear()
            passed.add(statements)
        finally:
            checkers.give(checker)

    def aggregate(
        self,
        con: duckdb.DuckDBPyConnection,
        plan: QueryPlan,
        schema: DatasetSchema,
        ms: Sequence[Measurement],
        *,
        unit_rows_ok: bool,
        deadline: float | None = None,
    ) -> ExactAggregates:
        """Run the bounded aggregation (and quantile histograms) on an open connection.

        ``deadline``: seconds after which the running statement is interrupted
        (``con.interrupt()``) and :class:`QueryDeadline` is raised.
        """
        with _Deadline(con, deadline) as watch:
            try:
                result = self._aggregate(con, plan, schema, ms, unit_rows_ok=unit_rows_ok)
            except duckdb.Error:
                if watch.fired:
                    raise QueryDeadline(f"the query ran longer than {deadline} s") from None
                raise
        if watch.fired:
            # Past the deadline even if the last statement finished first: the same failure
            # (and the caller drops the connection, which may hold a pending interrupt).
            raise QueryDeadline(f"the query ran longer than {deadline} s")
        return result

    def _aggregate(
        self,
        con: duckdb.DuckDBPyConnection,
        plan: QueryPlan,
        schema: DatasetSchema,
        ms: Sequence[Measurement],
        *,
        unit_rows_ok: bool,
    ) -> ExactAggregates:
        values: dict[tuple[str, ...], tuple[int | None, ...]] = {}
        ng = len(plan.group_by)
        if any(m.kind != "quantile" for m in ms):
            sql = compile_aggregate(plan, schema, ms, unit_rows_ok=unit_rows_ok)
            plain = all(m.kind != "quantile" for m in ms)  # one result column per measurement
            rows = con.execute(sql).fetchall()
            if plain and rows:
                values = _by_key(rows, ng)
                rows = []
            for row in rows:
                key_values = row[:ng]
                if None in key_values:
                    continue  # a NULL key (dropped by its null policy) is never released
                key = tuple(map(str, key_values))
                if plain:
                    values[key] = tuple([int(v or 0) for v in row[ng:]])
                    continue
                it = iter(row[ng:])
                values[key] = tuple(
                    None if m.kind == "quantile" else int(next(it) or 0) for m in ms
                )
        histograms: dict[tuple[tuple[str, ...], int], npt.NDArray[np.int64]] = {}
        for i, m in enumerate(ms):
            if m.kind != "quantile" or m.column is None:
                continue
            sql = compile_histogram(plan, schema, m.column, unit_rows_ok=unit_rows_ok)
            res = con.execute(sql).fetchnumpy()
            gids = np.asarray(res["__gid"], dtype=np.int64)
            if gids.size == 0:
                continue
            per_group = sorted_histograms(
                gids, np.asarray(res["__bin"], dtype=np.int64), np.asarray(res["n"], dtype=np.int64)
            )
            _, first = np.unique(gids, return_index=True)
            key_cols = [np.ma.asarray(res[f"__g{j}"])[first].tolist() for j in range(ng)]
            for g in range(len(first)):
                raw = [col[g] for col in key_cols]
                if any(v is None for v in raw):
                    continue  # a NULL key (dropped by its null policy) is never released
                key = tuple(str(v) for v in raw)
                histograms[(key, i)] = per_group[g]
                values.setdefault(key, tuple(None for _ in ms))
        return ExactAggregates(values, histograms)


def _by_key(rows: list[tuple[Any, ...]], ng: int) -> dict[tuple[str, ...], tuple[int | None, ...]]:
    """``{(str(key), ...): (int(value or 0), ...)}`` of aggregate rows with ``ng`` key
    columns, rows with a NULL key left out (dropped by its null policy, never released);
    column at a time (C-level ``zip``/``map``): a row at a time costs ~0.1 ms per 100
    groups, after DuckDB has finished and before anything can be released."""
    columns = list(zip(*rows, strict=True))
    keys_in = columns[:ng]
    if any(None in col for col in keys_in):
        rows = [row for row in rows if None not in row[:ng]]
        if not rows:
            return {}
        columns = list(zip(*rows, strict=True))
        keys_in = columns[:ng]
    keys: list[tuple[str, ...]] = (
        list(zip(*(map(str, col) for col in keys_in), strict=True)) if ng else [()] * len(rows)
    )
    measured = [
        list(map(int, col)) if None not in col else [int(v or 0) for v in col]
        for col in columns[ng:]
    ]
    return dict(zip(keys, zip(*measured, strict=True), strict=True))


class _Deadline:
    """Interrupt ``con`` after ``seconds`` (``con.interrupt()`` from the shared watchdog)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, seconds: float | None) -> None:
        self.con: duckdb.DuckDBPyConnection | None = con
        self.seconds = seconds
        self.fired = False
        self._lock = threading.Lock()

    def fire(self) -> None:
        with self._lock:
            if self.con is None:  # the query is over
                return
            self.fired = True
            self.con.interrupt()

    def __enter__(self) -> _Deadline:
        if self.seconds is not None:
            _watchdog().watch(time.monotonic() + self.seconds, self)
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.con = None  # not kept alive by the watchdog's heap until the deadline


class _Watchdog:
    """One daemon thread firing every query's deadline (a thread per query cost ~1-2 ms).

    Deadlines wait in a heap; a finished query's entry stays until its time comes and is then
    dropped (its ``fire`` does nothing once done).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, _Deadline]] = []
        self._seq = 0
        self.pid = os.getpid()
        threading.Thread(target=self._run, name="infodp-deadlines", daemon=True).start()

    def watch(self, when: float, deadline: _Deadline) -> None:
        with self._cond:
            self._seq += 1
            heapq.heappush(self._heap, (when, self._seq, deadline))
            if self._heap[0][2] is deadline:
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    wait = None if not self._heap else self._heap[0][0] - time.monotonic()
                    self._cond.wait(wait)
                _, _, due = heapq.heappop(self._heap)
            due.fire()


_WATCHDOG: list[_Watchdog] = []
_WATCHDOG_LOCK = threading.Lock()


def _watchdog() -> _Watchdog:
    with _WATCHDOG_LOCK:
        if not _WATCHDOG or _WATCHDOG[0].pid != os.getpid():  # none yet, or forked
            _WATCHDOG[:] = [_Watchdog()]
        return _WATCHDOG[0]


def compiled_statements(
    plan: QueryPlan,
    schema: DatasetSchema,
    ms: Sequence[Measurement],
    *,
    unit_rows_ok: bool,
    source: str | None = None,
) -> list[str]:
    """Every SQL statement :meth:`DuckDBBackend.aggregate` runs for ``plan`` (in order);
    ``source`` replaces the table (see :func:`empty_relation`)."""
    out: list[str] = []
    if any(m.kind != "quantile" for m in ms):
        out.append(compile_aggregate(plan, schema, ms, unit_rows_ok=unit_rows_ok, source=source))
    for m in ms:
        if m.kind == "quantile" and m.column is not None:
            out.append(
                compile_histogram(plan, schema, m.column, unit_rows_ok=unit_rows_ok, source=source)
            )
    return out


#: Statements remembered per checker as having passed :meth:`DuckDBBackend.check`.
_PASSED_MAX = 1024

_Checker = tuple[duckdb.DuckDBPyConnection, set[tuple[str, ...]]]


class _Checkers:
    """In-memory DuckDBs for checks, each with the statement tuples that already ran on it
    without error; a check takes one (one statement at a time per connection) and gives it
    back.

    They are owned here rather than by each thread: a thread's own connection is destroyed
    when that thread ends, and a thread ending while the interpreter exits (a worker thread
    of a server stopped just before) makes DuckDB's destructor abort the process ("FATAL:
    exception not rethrown", status 134). Here they are dropped at exit by the exiting
    thread, and a forked child starts its own.
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._free: list[_Checker] = []

    def take(self) -> _Checker:
        with self._lock:
            if self._free:
                return self._free.pop()
        return duckdb.connect(":memory:"), set()

    def give(self, checker: _Checker) -> None:
        with self._lock:
            self._free.append(checker)

    def drop(self) -> None:
        with self._lock:
            self._free.clear()


_CHECKERS: list[_Checkers] = []
_CHECKERS_LOCK = threading.Lock()


def _checkers() -> _Checkers:
    with _CHECKERS_LOCK:
        if not _CHECKERS or _CHECKERS[0].pid != os.getpid():  # none yet, or forked
            _CHECKERS[:] = [_Checkers()]
        return _CHECKERS[0]


@atexit.register
def _drop_checkers() -> None:
    for checkers in _CHECKERS:
        checkers.drop()


def _run_check(con: duckdb.DuckDBPyConnection, statements: tuple[str, ...], sql: str) -> None:
    try:
        for statement in statements:
            con.execute(statement).fetchall()
    except duckdb.Error:
        raise ParameterError(
            "sql", sql[:80], "a query the engine can compile (it was refused at bind time)"
        ) from None


def empty_relation(schema: DatasetSchema) -> str:
    """A relation with the stored table's columns and types and no rows (SQL).

    Every declared column (BIGINT, DOUBLE or VARCHAR, as registration stores them), the
    privacy unit when it is not declared, and the bounded copy of each bounded numeric column;
    aliased as the table. A constant: no stored data or statistics behind it.

    >>> from infodp.curator.schema import load_schema
    >>> s = load_schema({"table": "t", "privacy_unit": "row",
    ...                  "columns": {"x": {"type": "int", "bounds": [0, 10]}}})
    >>> empty_relation(s)
    '(SELECT CAST(NULL AS BIGINT) AS "x", CAST(NULL AS BIGINT) AS "__bnd_x" LIMIT 0) AS "t"'
    """
    cols: list[tuple[str, str]] = []
    names = {c.name.lower() for c in schema.columns}
    if not schema.unit_is_row and schema.privacy_unit.lower() not in names:
        cols.append((schema.privacy_unit, "VARCHAR"))
    for col in schema.columns:
        cols.append((col.name, _TYPES.get(col.type, "VARCHAR")))
    for col in schema.columns:
        if col.is_numeric and col.bounds is not None:
            cols.append((bounded_column(col.name), "BIGINT"))
    select = ", ".join(f"CAST(NULL AS {t}) AS {_ident(n)}" for n, t in cols)
    return f"(SELECT {select} LIMIT 0) AS {_ident(schema.table)}"


_TYPES = {"int": "BIGINT", "float": "DOUBLE"}


def _relation_sql(rel: duckdb.DuckDBPyRelation) -> str:
    return "(" + rel.sql_query() + ")"
