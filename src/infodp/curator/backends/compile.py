"""The query compiler: a plan and its schema in, sqlglot trees out, rendered per dialect.

One visitor over the plan (:class:`~infodp.curator.plan.nodes.PlanVisitor`) builds every statement
a backend runs for a query, as a sqlglot tree:

- the **bounded source rows** (``WITH __base ... __src``): the WHERE filter, the bounded copy
  of each value column bounded again by the statement itself (:func:`snapped`), the declared
  keys, a per-unit row window when the table was registered before registration cut units to
  their row limit, and the per-unit group limit ranked by a 64-bit hash with a per-query
  secret salt; or, when the rows need nothing but a filter, one flat statement;
- the **aggregate statement**: one reduction per measurement (:data:`REDUCTIONS`, the
  compiler's whole vocabulary: count rows, count values, sum, centred sum, centred sum of
  squares) per group;
- one **quantile histogram** statement per quantile measurement: per group, the count of each
  grid value (the exponential mechanism's candidates).

The registration expressions (clamp, null policy and snap to the grid, the per-unit cut) are
in :mod:`infodp.curator.backends.bounding`. Where the engines' SQL would mean different
things, the compiler asks the dialect table (:mod:`infodp.curator.backends.dialects`);
sqlglot renders the tree in the engine's dialect. A third engine is one dialect entry (and its
entry in the engine registry ``infodp._engines``) plus a
backend class (connect/register/check/aggregate running these statements), judged by the
contract suite ``tests/curator/backends/``.

Rendering is pure Python on the query's path (benchmarks/curator.py), so the rendered text is
memoised per (plan, schema, measurements, unit_rows_ok, dialect, source): plans and schemas
are frozen values. The per-query salt is filled into the memoised text afresh on every call.
The compiled text depends on the query and the schema only.

>>> from infodp.curator.declaration.source import load_schema
>>> from infodp.curator.sql.parse import parse_query
>>> from infodp.curator.rules import measurements
>>> from infodp.curator.backends.dialects import SPARK
>>> s = load_schema({"table": "t", "privacy_unit": "row",
...                  "columns": {"x": {"type": "int", "bounds": [0, 10]}}})
>>> p = parse_query("SELECT SUM(x) FROM t WHERE x > 2", s)
>>> print(compiled_statements(p, s, measurements(p), unit_rows_ok=True)[0])
SELECT SUM("__bnd_x") AS m0 FROM "t" WHERE ("x" > 2) AND ("__bnd_x" BETWEEN 0 AND 10)
>>> print(compiled_statements(p, s, measurements(p), unit_rows_ok=True, dialect=SPARK)[0])
SELECT SUM(`__bnd_x`) AS m0 FROM `t` WHERE (`x` > 2) AND (`__bnd_x` BETWEEN 0 AND 10)
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Mapping, Sequence

import sqlglot
from sqlglot import exp

from infodp.curator.backends.bounding import (
    category,
    column,
    counted_value,
    empty_relation_tree,
    ident,
    literal,
    snap_expression,
    snapped,
)
from infodp.curator.backends.dialects import DUCKDB, SqlDialect
from infodp.curator.backends.keys import key_expression
from infodp.curator.backends.reductions import (
    REDUCTIONS,
    counts_values,
    reads_stored,
    stored_columns_read,
    value_columns,
)
from infodp.curator.backends.trees import (
    COMPARISONS as _COMPARISONS,
)
from infodp.curator.backends.trees import (
    at_most as _at_most,
)
from infodp.curator.backends.trees import (
    chain as _chain,
)
from infodp.curator.backends.trees import (
    last_table as _table,
)
from infodp.curator.backends.trees import (
    name as _name,
)
from infodp.curator.backends.trees import (
    named as _named,
)
from infodp.curator.backends.trees import (
    number as _number,
)
from infodp.curator.backends.trees import (
    paren as _paren,
)
from infodp.curator.backends.trees import (
    select as _select,
)
from infodp.curator.backends.trees import (
    where as _where,
)
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.plan.grid import ColumnGrid, column_grid, quantile_grid
from infodp.curator.plan.nodes import (
    Aggregate,
    GroupKey,
    Measurement,
    Output,
    Predicate,
    QueryPlan,
)
from infodp.errors import InternalError

__all__ = [
    "REDUCTIONS",
    "compiled_statements",
    "relation_text",
    "with_salt",
]

#: Replaced by a fresh secret salt in every compiled statement (the memoised text holds it).
_SALT = "__infodp_salt_" + secrets.token_hex(8)
#: Stands for the relation read (the table, a view, the empty relation) in the memoised text.
_SOURCE = "__infodp_source_" + secrets.token_hex(8)


class _Rows:
    """Builds the bounded source rows of a plan (a :class:`PlanVisitor` of expressions).

    After :meth:`visit_query_plan`, ``keys`` and ``values`` are the expressions the outer
    SELECT reads for the GROUP BY keys and each value column, ``raw`` for each column a
    distinct count reads (as stored) and ``conditions`` for each aggregate's FILTER.
    """

    def __init__(
        self,
        schema: DatasetSchema,
        value_columns: Sequence[str],
        *,
        unit_rows_ok: bool,
        dialect: SqlDialect,
        source: exp.Expr,
        allow_flat: bool,
        raw_columns: Sequence[str] = (),
        filters: Sequence[Predicate] = (),
        finer: Mapping[str, ColumnGrid] | None = None,
        enforced: frozenset[str] = frozenset(),
    ) -> None:
        self.schema = schema
        self.enforced = enforced
        self.value_columns = value_columns
        self.finer = finer or {}
        self.raw_columns = raw_columns
        self.filters = filters
        self.unit_rows_ok = unit_rows_ok
        self.dialect = dialect
        self.source = source
        self.allow_flat = allow_flat
        self.keys: list[exp.Expr] = []
        self.values: list[exp.Expr] = []
        self.raw: list[exp.Expr] = []
        self.conditions: list[exp.Expr] = []

    # -- the plan's nodes ---------------------------------------------------------------------

    def visit_predicate(self, node: Predicate) -> exp.Expr:
        """A WHERE node as a parenthesised condition."""
        if node.op in ("and", "or"):
            join = exp.and_ if node.op == "and" else exp.or_
            return _paren(join(*(a.accept(self) for a in node.args), copy=False))
        if node.op == "not":
            return _paren(exp.Not(this=node.args[0].accept(self)))
        if node.column is None:
            raise InternalError(f"predicate {node.op} without a column")
        col = self.schema.column(node.column)
        c: exp.Expr = column(col.name)
        values: list[float | int | str] = list(node.values)
        if col.type in ("category", "text"):
            c = exp.cast(c, "VARCHAR")
            values = [str(v) for v in node.values]
        if col.type == "bool":  # compared as false = 0 < 1 = true, as the engines order them
            c = exp.cast(c, "BIGINT")
            values = [int(v) for v in node.values]
        return _paren(_condition(node.op, c, values))

    def visit_group_key(self, node: GroupKey) -> exp.Expr:
        """The key's value (its null replacement filled in; a derived key's expression)."""
        if node.derived is not None:
            return key_expression(node, self.schema, self.dialect, lambda p: p.accept(self))
        return category(self.schema.column(node.column))

    def visit_output(self, node: Output) -> exp.Expr:
        """Outputs are compiled as their measurements (:data:`REDUCTIONS`)."""
        raise InternalError("outputs are compiled through their measurements")

    def visit_aggregate(self, node: Aggregate) -> exp.Expr:
        """Aggregates are compiled as their measurements (:data:`REDUCTIONS`)."""
        raise InternalError("aggregates are compiled through their measurements")

    def visit_query_plan(self, node: QueryPlan) -> exp.Select:
        """``SELECT FROM source WHERE ...`` (flat) or ``WITH ... __src SELECT FROM __src``."""
        window_rows, group_limit = self._limits(node)
        bounded = [snapped(self.schema.column(c), c in self.enforced) for c in self.value_columns]
        values = [self._value(c, v) for c, (v, _) in zip(self.value_columns, bounded, strict=True)]
        filters = self._row_filters(node, bounded)
        key_filters = self._key_filters(node, window_rows or group_limit)
        key_exprs = [g.accept(self) for g in node.group_by]
        raw, conditions = self._extras()
        if self._flat(bounded, bool(key_filters) or window_rows or group_limit):
            self.keys, self.values = key_exprs, values
            self.raw, self.conditions = raw, conditions
            return _where(_select([], self.source), filters)
        items = self._items(key_exprs, values, window_rows)
        items += [*_aliased(raw, "__d"), *_aliased(conditions, "__f")]
        base = _where(_select(items, self.source), filters)
        ctes = [("__base", base)]
        if key_filters:
            ctes.append(("__keyed", _where(_select([exp.Star()], _table(ctes)), key_filters)))
        self._limit_steps(ctes, len(node.group_by), window_rows, group_limit)
        self.keys, self.values = _named("__g", len(key_exprs)), _named("__v", len(values))
        self.raw, self.conditions = _named("__d", len(raw)), _named("__f", len(conditions))
        return _chain(ctes)

    def _value(self, name: str, bounded: exp.Expr) -> exp.Expr:
        """A value column as read: its bounded copy, or (a column in ``finer``) its stored
        value clamped and snapped to that finer grid as registration snaps it, in the rows
        where the bounded copy is present (the same rows, at a finer resolution)."""
        grid = self.finer.get(name)
        if grid is None:
            return bounded
        fine = snap_expression(self.schema.column(name), self.dialect, grid)
        missing = exp.Is(this=bounded, expression=exp.Null())
        return exp.Case(ifs=[exp.If(this=missing, true=exp.Null())], default=fine)

    def _extras(self) -> tuple[list[exp.Expr], list[exp.Expr]]:
        """The stored columns the distinct counts read, and each FILTER's condition."""
        return [column(c) for c in self.raw_columns], [f.accept(self) for f in self.filters]

    def _limits(self, node: QueryPlan) -> tuple[bool, bool]:
        """(a per-unit row window, a per-unit group limit) is needed."""
        s = self.schema
        unit = not s.unit_is_row
        group_limit = unit and bool(node.group_by) and s.group_limit < s.max_rows_per_unit
        return unit and not self.unit_rows_ok, group_limit

    def _flat(self, bounded: Sequence[tuple[exp.Expr, exp.Expr | None]], steps: bool) -> bool:
        """One flat statement: no step after the row filter, every value read as stored
        (bounded by the filter or by the store's constraints, not by a CASE)."""
        return self.allow_flat and not steps and all(isinstance(v, exp.Column) for v, _ in bounded)

    def _limit_steps(
        self, ctes: list[tuple[str, exp.Select]], ng: int, window_rows: bool, group_limit: bool
    ) -> None:
        """The per-unit row window and the per-unit group limit, appended to ``ctes``."""
        if window_rows:
            limit = self.schema.max_rows_per_unit
            ctes.append(("__rows", _at_most(_table(ctes), "row_number", _name("__r"), limit)))
        if group_limit:
            keys = [_name(f"__g{i}") for i in range(ng)]
            order = self.dialect.hash64([*keys, _name(_SALT)])
            limit = self.schema.group_limit
            ctes.append(("__groups", _at_most(_table(ctes), "dense_rank", order, limit)))

    def _row_filters(
        self, node: QueryPlan, bounded: Sequence[tuple[exp.Expr, exp.Expr | None]]
    ) -> list[exp.Expr]:
        """The WHERE filter and every value's bounds filter."""
        filters = [] if node.where is None else [node.where.accept(self)]
        return filters + [keep for _, keep in bounded if keep is not None]

    def _items(
        self, keys: Sequence[exp.Expr], values: Sequence[exp.Expr], window_rows: bool
    ) -> list[exp.Expr]:
        """The base rows' items: the unit, ``__g{i}`` keys, ``__v{j}`` values and, for a row
        window, a random order (which rows a unit keeps: a data-independent choice)."""
        items = [exp.alias_(k, f"__g{i}", copy=False) for i, k in enumerate(keys)]
        items += [exp.alias_(v, f"__v{j}", copy=False) for j, v in enumerate(values)]
        if not self.schema.unit_is_row:
            items.insert(0, exp.alias_(column(self.schema.privacy_unit), "__u", copy=False))
        if window_rows:
            items.append(exp.alias_(exp.Anonymous(this="random"), "__r", copy=False))
        return items or [exp.alias_(literal(1), "__one", copy=False)]

    def _key_filters(self, plan: QueryPlan, bounding: bool) -> list[exp.Expr]:
        """Keys outside a declared domain never form a released group: with partition
        selection the engine releases whatever key tuples survive, and a per-unit limit
        could count them; otherwise their groups are simply never read. A derived key is in
        its domain by construction, so only its NULL (no branch taken) is left out."""
        declared = bounding or plan.needs_partition_selection
        out: list[exp.Expr] = []
        for i, g in enumerate(plan.group_by):
            key = _name(f"__g{i}")
            if g.categories is None or (declared and g.derived is not None):
                out.append(_paren(exp.Not(this=exp.Is(this=key, expression=exp.Null()))))
            elif declared and self.schema.column(g.column).type == "int":
                low, high = g.categories[0], g.categories[-1]
                out.append(_paren(exp.Between(this=key, low=_number(low), high=_number(high))))
            elif declared:
                out.append(_paren(exp.In(this=key, expressions=[literal(k) for k in g.categories])))
        return out


def _aliased(exprs: Sequence[exp.Expr], prefix: str) -> list[exp.Expr]:
    """``expr AS prefix0``, ``expr AS prefix1``, ..."""
    return [exp.alias_(e, f"{prefix}{i}", copy=False) for i, e in enumerate(exprs)]


def _condition(op: str, c: exp.Expr, values: Sequence[float | int | str]) -> exp.Expr:
    if op in _COMPARISONS:
        return _COMPARISONS[op](this=c, expression=literal(values[0]))
    if op == "in":
        return exp.In(this=c, expressions=[literal(v) for v in values])
    if op == "between":
        return exp.Between(this=c, low=literal(values[0]), high=literal(values[1]))
    if op == "is null":
        return exp.Is(this=c, expression=exp.Null())
    if op == "is not null":
        return exp.Not(this=exp.Is(this=c, expression=exp.Null()))
    raise InternalError(f"unknown predicate {op}")


def _filters(ms: Sequence[Measurement]) -> list[Predicate]:
    """The distinct FILTER conditions of the measurements, in first-use order."""
    return list(dict.fromkeys(m.where for m in ms if m.where is not None))


def _source(plan: QueryPlan, schema: DatasetSchema, relation: str | None, empty: bool) -> exp.Expr:
    """The relation a plan reads: the empty relation of the schema's columns (a check),
    ``relation`` (a view the caller made: of the stored table, or of a derived relation),
    a derived relation's SELECT over the stored tables (``schema.source_sql``,
    :mod:`infodp.curator.relations`) aliased as the table, or the stored table."""
    if empty:
        return empty_relation_tree(schema)
    if relation is None and schema.source_sql is not None:
        return exp.Subquery(
            this=_derived(schema.source_sql, ()), alias=exp.TableAlias(this=ident(schema.table))
        )
    return exp.Table(this=ident(relation or plan.table))


def _derived(
    source_sql: str, tables: Sequence[tuple[str, str]], broadcast: Sequence[str] = ()
) -> exp.Expr:
    """A derived relation's SELECT, each stored table named in ``tables`` read under its new
    name, each SELECT reading a table named in ``broadcast`` directly given a
    ``/*+ BROADCAST(alias) */`` hint for it. The text is sqlglot's generic dialect (as
    registration's own statements are, and valid DuckDB), read back the same way and rendered
    per engine by :func:`_render`."""
    tree = sqlglot.parse_one(source_sql)
    if broadcast:
        for select in list(tree.find_all(exp.Select)):
            hinted = [
                exp.to_identifier(t.alias_or_name, quoted=True)
                for t in select.find_all(exp.Table)
                if t.name in broadcast and t.parent_select is select
            ]
            if hinted:
                call = exp.Anonymous(this="BROADCAST", expressions=hinted)
                select.set("hint", exp.Hint(expressions=[call]))
    names = dict(tables)
    if names:
        for table in tree.find_all(exp.Table):
            if table.name in names:
                table.set("this", ident(names[table.name]))
    return tree


def relation_text(
    schema: DatasetSchema,
    dialect: SqlDialect = DUCKDB,
    tables: Mapping[str, str] | None = None,
    broadcast: Sequence[str] = (),
) -> str:
    """A derived relation's SELECT rendered for ``dialect``, each stored table in ``tables``
    read under the name given (a Spark view of its bounded copy, say), each stored table in
    ``broadcast`` (public tables, whose sizes are public) hinted to be broadcast where it is
    joined (Spark: the only broadcast joins its pinned settings make).

    >>> from infodp.curator.declaration.schema import DatasetSchema
    >>> from infodp.curator.backends.dialects import SPARK
    >>> s = DatasetSchema("c", "pid", (), source_sql='SELECT "v"."pid" AS "pid" FROM "c__v" AS "v"')
    >>> relation_text(s, SPARK, {"c__v": "view_1"})
    'SELECT `v`.`pid` AS `pid` FROM `view_1` AS `v`'
    >>> relation_text(s, SPARK, {"c__v": "view_1"}, broadcast=["c__v"])
    'SELECT /*+ BROADCAST(`v`) */ `v`.`pid` AS `pid` FROM `view_1` AS `v`'
    """
    if schema.source_sql is None:
        raise InternalError(f"{schema.table} is not a derived relation")
    pairs = tuple(sorted((tables or {}).items()))
    return _render(_derived(schema.source_sql, pairs, tuple(broadcast)), dialect)


def _rows_of(plan: QueryPlan, rows: _Rows) -> exp.Select:
    select = plan.accept(rows)
    if not isinstance(select, exp.Select):
        raise InternalError("a plan compiles to a SELECT")
    return select


def _reductions(
    schema: DatasetSchema, ms: Sequence[Measurement], rows: _Rows, dialect: SqlDialect
) -> list[exp.Expr]:
    """``REDUCTION AS m{i}`` of each non-quantile measurement i (``FILTER (WHERE ...)`` for a
    filtered one)."""
    exprs: list[exp.Expr] = []
    for i, m in enumerate(ms):
        if m.kind.histogram:
            continue
        if m.column is None and not m.kind.of_rows:
            raise InternalError(f"measurement {m.key} without a column")
        v, center = _operand(schema, m, rows, dialect)
        reduced = REDUCTIONS[m.kind](v, center, dialect)
        if m.where is not None:
            condition = rows.conditions[list(rows.filters).index(m.where)].copy()
            reduced = exp.Filter(this=reduced, expression=exp.Where(this=condition))
        exprs.append(exp.alias_(reduced, f"m{i}", copy=False))
    return exprs or [exp.alias_(exp.Count(this=exp.Star()), "m_unused", copy=False)]


def _operand(
    schema: DatasetSchema, m: Measurement, rows: _Rows, dialect: SqlDialect
) -> tuple[exp.Expr | None, int]:
    """What a measurement reduces (its bounded value, or the stored column a distinct count
    or a count without a bounded copy reads) and the centre of a centred sum."""
    if m.column is None:
        return None, 0
    if reads_stored(schema, m):
        stored = rows.raw[list(rows.raw_columns).index(m.column)].copy()
        if counts_values(m):
            return counted_value(schema, m.column, stored, dialect), 0
        return stored, 0
    v = rows.values[list(rows.value_columns).index(m.column)].copy()
    return v, column_grid(schema.column(m.column)).center


def _aggregate_tree(
    plan: QueryPlan,
    schema: DatasetSchema,
    ms: Sequence[Measurement],
    unit_rows_ok: bool,
    dialect: SqlDialect,
    source: exp.Expr,
    enforced: frozenset[str] = frozenset(),
) -> exp.Select:
    """The one statement computing every non-quantile measurement per group.

    When the bounded rows are the table's rows under one filter (row-level privacy, or units
    already within their row limit and no group limit to apply) and every value is bounded by
    that filter, the statement is flat: ``SELECT keys, aggregates FROM table WHERE filter
    GROUP BY keys``, the same rows and values as the ``WITH __base ... __src`` form, which
    costs DuckDB more to plan.
    """
    rows = _Rows(
        schema,
        value_columns(schema, ms),
        unit_rows_ok=unit_rows_ok,
        dialect=dialect,
        source=source,
        allow_flat=True,
        raw_columns=stored_columns_read(schema, ms),
        filters=_filters(ms),
        enforced=enforced,
    )
    select = _rows_of(plan, rows)
    exprs = _reductions(schema, ms, rows, dialect)
    keys = [
        k.copy() if k.name == f"__g{i}" else exp.alias_(k.copy(), f"__g{i}", copy=False)
        for i, k in enumerate(rows.keys)
    ]
    select.set("expressions", [*keys, *exprs])
    if rows.keys:
        select.set("group", exp.Group(expressions=[k.copy() for k in rows.keys]))
    return select


def _histogram_tree(
    plan: QueryPlan,
    schema: DatasetSchema,
    m: Measurement,
    unit_rows_ok: bool,
    dialect: SqlDialect,
    source: exp.Expr,
    enforced: frozenset[str] = frozenset(),
) -> exp.Select:
    """The per-group counts of each snapped value of ``m``'s column (for quantiles).

    The values are on the quantile's grid (:func:`~infodp.curator.plan.grid.quantile_grid`): the
    bounded copy on the column's grid (:func:`snapped`, as every other aggregate reads it),
    or, for a finer quantile grid, the stored value snapped to it in the same rows. One row
    per (group, distinct grid value) with its count, so the quantile can be answered at the
    grid's resolution (the grid points are the candidates). The statement's shape depends on
    the query and the schema only; its output has at most as many rows as the bounded rows,
    and a unit moves it by at most its row limit.
    """
    name = m.column or ""
    col = schema.column(name)
    grid = quantile_grid(col, m.q)
    finer = {name: grid} if grid.step != column_grid(col).step else None
    rows = _Rows(
        schema,
        [name],
        unit_rows_ok=unit_rows_ok,
        dialect=dialect,
        source=source,
        allow_flat=False,
        finer=finer,
        enforced=enforced,
    )
    select = _rows_of(plan, rows)
    keys = rows.keys
    # __gid numbers the groups densely (1, 2, ...), so the engine can split the rows into
    # groups with vectorised numpy instead of a Python loop over rows.
    gid: exp.Expr = literal(1)
    if keys:
        order = exp.Order(expressions=[exp.Ordered(this=k.copy()) for k in keys])
        gid = exp.Window(this=exp.Anonymous(this="dense_rank"), order=order)
    v = rows.values[0]
    select.set(
        "expressions",
        [
            *(k.copy() for k in keys),
            exp.alias_(v.copy(), "__bin", copy=False),
            exp.alias_(exp.Count(this=exp.Star()), "n", copy=False),
            exp.alias_(gid, "__gid", copy=False),
        ],
    )
    _where(select, [exp.Not(this=exp.Is(this=v.copy(), expression=exp.Null()))])
    select.set("group", exp.Group(expressions=[*(k.copy() for k in keys), v.copy()]))
    return select


def _render(tree: exp.Expr, dialect: SqlDialect) -> str:
    if not dialect.qualify:
        from sqlglot.transforms import eliminate_qualify

        tree = tree.transform(eliminate_qualify, copy=False)
    return str(tree.sql(dialect=dialect.render, normalize_functions=False))


@functools.lru_cache(maxsize=1024)
def _templates(
    plan: QueryPlan,
    schema: DatasetSchema,
    ms: tuple[Measurement, ...],
    unit_rows_ok: bool,
    dialect: SqlDialect,
    enforced: frozenset[str],
) -> tuple[str, ...]:
    """The rendered statements, the relation they read and the salt not yet filled in (a
    check and the aggregation share one rendering)."""
    source = exp.Table(this=exp.to_identifier(_SOURCE))
    out: list[str] = []
    if any(not m.kind.histogram for m in ms):
        tree = _aggregate_tree(plan, schema, ms, unit_rows_ok, dialect, source.copy(), enforced)
        out.append(_render(tree, dialect))
    for m in ms:
        if m.kind.histogram and m.column is not None:
            tree = _histogram_tree(plan, schema, m, unit_rows_ok, dialect, source.copy(), enforced)
            out.append(_render(tree, dialect))
    return tuple(out)


@functools.lru_cache(maxsize=256)
def _source_text(
    plan: QueryPlan, schema: DatasetSchema, dialect: SqlDialect, relation: str | None, empty: bool
) -> str:
    return _render(_source(plan, schema, relation, empty), dialect)


def with_salt(text: str) -> str:
    """A compiled statement template with a fresh secret group-limit salt filled in."""
    return text.replace(_SALT, str(secrets.randbits(62))) if _SALT in text else text


def compiled_statements(
    plan: QueryPlan,
    schema: DatasetSchema,
    ms: Sequence[Measurement],
    *,
    unit_rows_ok: bool,
    dialect: SqlDialect = DUCKDB,
    relation: str | None = None,
    empty: bool = False,
    salted: bool = True,
    enforced: frozenset[str] = frozenset(),
) -> list[str]:
    """Every statement a backend runs for ``plan``, in order: the aggregate statement (when
    a measurement is not a quantile), then one histogram per quantile measurement.

    ``relation``: the relation read instead of the plan's table (a Spark view); ``empty``:
    read :func:`~infodp.curator.backends.bounding.empty_relation` (a check). Each call draws
    a fresh group-limit salt; ``salted=False`` gives the templates before it is filled in
    (:func:`with_salt`): equal templates bind the same way, whatever the salt (a check can
    remember them). ``enforced``: the value columns whose bounds the table's own constraints
    keep (:mod:`~infodp.curator.backends.bound_checks`), read without a per-row bound.
    """
    source = _source_text(plan, schema, dialect, relation, empty)
    templates = _templates(plan, schema, tuple(ms), unit_rows_ok, dialect, enforced)
    texts = [t.replace(_SOURCE, source) for t in templates]
    return [with_salt(t) for t in texts] if salted else texts
