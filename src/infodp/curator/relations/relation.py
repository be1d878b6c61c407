"""A relation built from a FROM clause: row-level projections and per-unit aggregations.

Both are emitted as a registered table is stored (:func:`~.values.column_items`): the unit,
each column's stored value under its name, and beside each bounded numeric column its bounded
copy ``__bnd_<name>``, so a relation reads like a stored table wherever it is used (a
subquery in FROM, or the relation the outer query aggregates).

A **per-unit aggregation** (``SELECT unit, SUM(cost) AS total FROM visits GROUP BY unit``)
aggregates the bounded values of each unit's rows, and the result's bounds follow from the
per-unit row bound m (McSherry 2009, §4): SUM in [m·min(lo, 0), m·max(hi, 0)], COUNT and
COUNT(DISTINCT) in [0, m], AVG, MIN and MAX in [lo, hi]. Grouped by the unit alone a unit has
one row; grouped by the unit and other keys, at most its m rows. A GROUP BY without the unit
would mix units in one row, and is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlglot import exp

from infodp.curator.backends.bounding import ident
from infodp.curator.declaration.schema import ColumnSpec
from infodp.curator.relations import boxes
from infodp.curator.relations.expressions import condition, value
from infodp.curator.relations.joins import Scope, scope_of
from infodp.curator.relations.pushdown import push_filters
from infodp.curator.relations.sources import Source
from infodp.curator.relations.tables import check_clauses
from infodp.curator.relations.values import Value, as_number, column_items, refuse
from infodp.errors import ParameterError

__all__ = ["Relation", "project", "subquery_source"]


@dataclass(frozen=True, slots=True)
class Relation:
    """A derived relation: its SELECT, its columns' declarations and its bounds per unit."""

    select: exp.Select
    columns: tuple[ColumnSpec, ...]
    unit: str | None
    rows: int
    groups: int


def project(
    scope: Scope,
    items: Sequence[tuple[str, Value]],
    where: Value | None,
    *,
    group: Sequence[exp.Expr] = (),
    having: Value | None = None,
    rows: int | None = None,
) -> Relation:
    """``SELECT unit, items... FROM scope [WHERE] [GROUP BY] [HAVING]`` as a relation (the
    unit first, each item as :func:`~.values.column_items` stores it).

    >>> import sqlglot
    >>> from infodp.curator.declaration.source import load_schema
    >>> from infodp.curator.relations.sources import table_source
    >>> s = load_schema({"table": "t", "privacy_unit": "pid",
    ...     "columns": {"x": {"type": "int", "bounds": [0, 9]}}})
    >>> scope = scope_of(sqlglot.parse_one("SELECT 1 FROM t"), lambda t: table_source(t, s))
    >>> project(scope, [("x", scope.value(sqlglot.parse_one("x")))], None).select.sql()
    'SELECT "t"."pid" AS "pid", "t"."x" AS "x", "t"."__bnd_x" AS "__bnd_x" FROM "t" AS "t"'
    """
    select = scope.from_()
    specs: list[ColumnSpec] = []
    out: list[exp.Expr] = []
    unit = scope.unit
    named: list[tuple[str, Value]] = []
    unit_name = None
    if unit is not None:
        unit_name = scope.sources[unit[0]].unit
        named.append((str(unit_name), scope.sources[unit[0]].value(unit[1])))
    for name, v in items:
        if unit_name is not None and name.lower() == unit_name.lower():
            if v.raw.sql() != named[0][1].raw.sql():
                raise refuse(f"a column named {name!r}", "that is the privacy unit's name")
            continue
        named.append((name, v))
    seen: set[str] = set()
    for name, v in named:
        if name.lower() in seen:
            raise ParameterError(f"two columns are named {name!r}; rename one with AS.")
        seen.add(name.lower())
        spec, sql = column_items(name, v)
        specs.append(spec)
        out.extend(sql)
    select.set("expressions", out)
    if where is not None:
        select.set("where", exp.Where(this=where.raw.copy()))
    if group:
        select.set("group", exp.Group(expressions=[g.copy() for g in group]))
    if having is not None:
        select.set("having", exp.Having(this=having.raw.copy()))
    push_filters(select, {s.alias.lower(): s.nullable for s in scope.sources})
    m = scope.rows if rows is None else rows
    return Relation(select, tuple(specs), unit_name, m, min(scope.groups, m))


#: The clauses refused in a subquery, by sqlglot's name for them: each picks rows by
#: comparing individuals (an order, a cut, a dedup), so a unit's rows would depend on others'.
_CHOOSERS = {
    "order": "ORDER BY",
    "limit": "LIMIT",
    "offset": "OFFSET",
    "distinct": "SELECT DISTINCT",
    "with_": "WITH",
    "with": "WITH",
}


def subquery_source(node: exp.Subquery, read: Callable[[exp.Expr], Source]) -> Source:
    """A subquery in FROM as a source: row-level, or a per-unit aggregation.

    >>> import sqlglot
    >>> from infodp.curator.declaration.source import load_schema
    >>> from infodp.curator.relations.sources import table_source
    >>> s = load_schema({"table": "v", "privacy_unit": "pid", "max_rows_per_unit": 20,
    ...     "columns": {"cost": {"type": "float", "bounds": [0, 5000]}}})
    >>> q = sqlglot.parse_one("SELECT 1 FROM (SELECT pid, SUM(cost) AS t FROM v GROUP BY pid) u")
    >>> u = subquery_source(q.args["from_"].this, lambda t: table_source(t, s))
    >>> (u.rows, u.spec("t").bounds)
    (1, (0.0, 100000.0))
    """
    inner = node.this
    if not isinstance(inner, exp.Select):
        raise refuse(f"{inner.key.upper()} in FROM", "a subquery in FROM is one SELECT")
    alias = node.alias
    if not alias:
        raise refuse("subquery in FROM without an alias", "write (SELECT ...) AS name")
    for key, what in _CHOOSERS.items():
        if inner.args.get(key):
            raise refuse(
                f"{what} in a subquery",
                "it would choose rows across individuals; filter with WHERE instead",
            )
    qualify = inner.args.get("qualify")
    if qualify is not None:  # a declared per-unit truncation, read apart (never mutated)
        inner = inner.copy()
        inner.set("qualify", None)
    check_clauses(inner, outer=False)
    scope = scope_of(inner, read)
    grouped = inner.args.get("group") is not None or any(
        isinstance(n, exp.AggFunc) for item in inner.expressions for n in item.walk()
    )
    if qualify is not None and grouped:
        raise refuse("QUALIFY in a per-unit aggregation", _TRUNCATE)
    relation = _aggregation(inner, scope) if grouped else _rows(inner, scope)
    if qualify is not None:
        relation = truncated(relation, qualify.this, scope)
    sub = exp.Subquery(this=relation.select, alias=exp.TableAlias(this=ident(alias)))
    return Source(
        alias,
        alias,
        sub,
        relation.columns,
        False,
        relation.unit,
        relation.rows,
        relation.groups,
        work=scope.work,
        how=f"inside subquery {alias}: {scope.how}",
    )


#: The one QUALIFY a subquery may carry: a per-unit truncation.
_TRUNCATE = (
    "a per-unit truncation is QUALIFY ROW_NUMBER() OVER (PARTITION BY <privacy unit> "
    "[ORDER BY ...]) <= T in a row-level subquery, T a whole number of at least 1"
)


def truncated(relation: Relation, condition: exp.Expr, scope: Scope) -> Relation:
    """A row-level subquery cut to at most T rows per unit by a declared truncation,
    ``QUALIFY ROW_NUMBER() OVER (PARTITION BY unit [ORDER BY ...]) <= T``; its row bound is
    then min(m, T), a bound the relation holds by construction.

    Which rows a unit keeps depends on that unit's own rows only (its order, or a hash of each
    row's values when none is given), so removing a person still removes their rows only (add/remove
    neighbours, Dwork & Roth 2014, Def. 2.4): the truncation is the analyst's choice of the
    contribution bound, as Tumult Analytics' truncation of a private join is.

    >>> import sqlglot
    >>> from infodp.curator.declaration.source import load_schema
    >>> from infodp.curator.relations.sources import table_source
    >>> s = load_schema({"table": "v", "privacy_unit": "pid", "max_rows_per_unit": 20,
    ...     "columns": {"cost": {"type": "float", "bounds": [0, 5000]}}})
    >>> q = sqlglot.parse_one("SELECT 1 FROM (SELECT * FROM v "
    ...     "QUALIFY ROW_NUMBER() OVER (PARTITION BY pid ORDER BY cost DESC) <= 5) u")
    >>> subquery_source(q.args["from_"].this, lambda t: table_source(t, s)).rows
    5
    """
    limit = _limit(condition)
    window = condition.this
    parts = window.args.get("partition_by") or []
    unit = scope.unit
    if (
        unit is None
        or len(parts) != 1
        or not isinstance(parts[0], exp.Column)
        or scope.resolve(parts[0]) != unit
    ):
        raise refuse("QUALIFY partitioned by anything but the privacy unit", _TRUNCATE)
    order = window.args.get("order")
    keys = [] if order is None else list(order.expressions)
    ordered = [
        exp.Ordered(this=value(k.this, scope.value).raw, desc=k.args.get("desc")) for k in keys
    ] or [exp.Ordered(this=_row_hash(relation.select))]
    rank = exp.Window(
        this=exp.RowNumber(),
        partition_by=[scope.sources[unit[0]].value(unit[1]).raw],
        order=exp.Order(expressions=ordered),
    )
    select = relation.select.copy()
    select.set(
        "qualify", exp.Qualify(this=exp.LTE(this=rank, expression=exp.Literal.number(limit)))
    )
    rows = min(relation.rows, limit)
    return Relation(select, relation.columns, relation.unit, rows, min(relation.groups, rows))


def _row_hash(select: exp.Select) -> exp.Expr:
    """``hash(every value of the row)``: without an ORDER BY a unit keeps the rows whose
    values hash lowest (a choice from its own rows only, the same for the same data, as
    registration cuts a unit's rows; ``hash`` is DuckDB's and Spark's)."""
    values = [e.this.copy() if isinstance(e, exp.Alias) else e.copy() for e in select.expressions]
    return exp.Anonymous(this="hash", expressions=values)


def _limit(condition: exp.Expr) -> int:
    """T of ``ROW_NUMBER() OVER (...) <= T`` (or ``< T + 1``), refused in any other form."""
    if not isinstance(condition, (exp.LTE, exp.LT)):
        raise refuse(f"QUALIFY {condition.sql()[:60]!r}", _TRUNCATE)
    window, bound = condition.this, condition.expression
    if not (
        isinstance(window, exp.Window)
        and isinstance(window.this, exp.RowNumber)
        and isinstance(bound, exp.Literal)
        and not bound.is_string
        and bound.this.isdigit()
        and len(bound.this) <= 9
    ):
        raise refuse(f"QUALIFY {condition.sql()[:60]!r}", _TRUNCATE)
    limit = int(bound.this) - (1 if isinstance(condition, exp.LT) else 0)
    if limit < 1:
        raise refuse(f"QUALIFY {condition.sql()[:60]!r}", _TRUNCATE)
    return limit


def _where(select: exp.Select, scope: Scope) -> Value | None:
    node = select.args.get("where")
    return None if node is None else condition(node.this, scope.value, "WHERE")


def _rows(select: exp.Select, scope: Scope) -> Relation:
    """A row-level subquery: columns and derived values of each row, filtered."""
    if select.args.get("having"):
        raise refuse("HAVING without GROUP BY", "filter rows with WHERE")
    items: list[tuple[str, Value]] = []
    for item in select.expressions:
        node = item.this if isinstance(item, exp.Alias) else item
        if isinstance(node, exp.Star) or (
            isinstance(node, exp.Column) and isinstance(node.this, exp.Star)
        ):
            items += _starred(node, scope)
            continue
        items.append((_item_name(item, node), value(node, scope.value)))
    return project(scope, items, _where(select, scope))


def _starred(node: exp.Expr, scope: Scope) -> list[tuple[str, Value]]:
    """The columns ``*`` (or ``alias.*``) selects."""
    qualifier = node.table if isinstance(node, exp.Column) else ""
    return [
        (n, scope.column_value(i, c))
        for n, i, c in scope.visible()
        if not qualifier or scope.sources[i].alias.lower() == qualifier.lower()
    ]


def _item_name(item: exp.Expr, node: exp.Expr) -> str:
    if isinstance(item, exp.Alias):
        return str(item.alias)
    if isinstance(node, exp.Column):
        return str(node.name)
    raise refuse(
        f"unnamed expression {node.sql()[:60]!r} in a subquery", "name it: expression AS name"
    )


_RULE = (
    "aggregate per unit, then aggregate across units: SELECT unit, SUM(x) AS s FROM t "
    "GROUP BY unit in FROM, and a DP aggregate of s outside"
)


def _aggregation(select: exp.Select, scope: Scope) -> Relation:
    """A per-unit aggregation subquery (see the module docstring)."""
    unit, resolved = _unit_keys(select, scope)
    key_values = [scope.column_value(i, c) for i, c in resolved]
    m = scope.rows

    def grouped_column(node: exp.Column) -> Value:
        if scope.resolve(node) not in resolved:
            raise refuse(
                f"column {node.sql()!r} in a per-unit subquery",
                "select GROUP BY columns and aggregates of the others",
            )
        return scope.value(node)

    def aggregate(node: exp.Expr) -> Value:
        return _aggregate(node, scope, m)

    items = [
        (
            _item_name(item, item.this if isinstance(item, exp.Alias) else item),
            value(item.this if isinstance(item, exp.Alias) else item, grouped_column, aggregate),
        )
        for item in select.expressions
    ]
    having_node = select.args.get("having")
    having = None
    if having_node is not None:
        having = value(having_node.this, grouped_column, aggregate)
        if having.type != "bool":
            raise refuse("HAVING without a condition", "write a comparison")
    rows = 1 if len(set(resolved)) == 1 else m
    unique = _group_by([scope.sources[unit[0]].value(unit[1]), *key_values])
    return project(scope, items, _where(select, scope), group=unique, having=having, rows=rows)


def _unit_keys(select: exp.Select, scope: Scope) -> tuple[tuple[int, str], list[tuple[int, str]]]:
    """The privacy unit and the (source, column) of each GROUP BY key of a per-unit
    subquery, refused unless they are columns, the unit among them."""
    unit = scope.unit
    group_node = select.args.get("group")
    keys = [] if group_node is None else list(group_node.expressions)
    resolved = [scope.resolve(k) for k in keys if isinstance(k, exp.Column)]
    if len(resolved) != len(keys):
        raise refuse("GROUP BY an expression in a subquery", "group by columns")
    if unit is None or unit not in resolved:
        raise refuse("aggregation in a subquery not grouped by the privacy unit", _RULE)
    return unit, resolved


def _group_by(keys: Sequence[Value]) -> list[exp.Expr]:
    """The GROUP BY of a per-unit subquery: each key as stored, with its grid value or
    bounded copy where it has one (so those may be selected), each expression once."""
    group: list[exp.Expr] = []
    for v in keys:
        group.append(v.raw)
        if v.grid is not None:
            group.append(v.grid)
        elif v.numeric and v.box is not None:
            group.append(v.bounded)
    return list({g.sql(): g for g in group}.values())


def _count(node: exp.Count, scope: Scope, m: int) -> Value:
    """COUNT(*), COUNT(DISTINCT ...) or COUNT(x) of one unit's rows: between 0 and m."""
    arg = node.this
    if isinstance(arg, exp.Star):
        expr: exp.Expr = exp.Count(this=exp.Star())
    elif isinstance(arg, exp.Distinct):
        inner = [value(e, scope.value).raw for e in arg.expressions]
        expr = exp.Count(this=exp.Distinct(expressions=inner))
    else:
        v = value(arg, scope.value)
        expr = exp.Count(this=v.bounded if v.numeric else v.raw)
    return Value(expr, expr.copy(), "int", (0.0, float(m)), None, False)


def _aggregate(node: exp.Expr, scope: Scope, m: int) -> Value:
    """One aggregate of a unit's bounded values, with its bounds from m rows."""
    if not isinstance(node, (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max)):
        raise refuse(
            f"aggregate {node.sql()[:60]!r} in a per-unit subquery",
            "allowed there: COUNT, COUNT(DISTINCT), SUM, AVG, MIN, MAX",
        )
    if isinstance(node, exp.Count):
        return _count(node, scope, m)
    arg = node.this
    v = value(arg, scope.value)
    if v.type == "bool":
        v = as_number(v, arg.sql())
    if not v.numeric or v.box is None:
        why = v.why or f"{arg.sql()} is not a bounded number"
        raise refuse(f"{node.sql()[:60]!r} in a per-unit subquery", why)
    fn = type(node)
    expr = fn(this=v.bounded.copy())
    if fn is exp.Sum:
        return Value(expr, expr.copy(), v.type, boxes.sum_of(v.box, m), None, v.nullable)
    kind = "float" if fn is exp.Avg else v.type
    return Value(expr, expr.copy(), kind, v.box, None, v.nullable)
