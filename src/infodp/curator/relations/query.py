"""The outer aggregate query, rewritten to read one derived relation.

The relation offers every column of the tables the query joins (named as
:mod:`~infodp.curator.relations.joins` names them) and each derived value the query computes:
an aggregate's argument (``SUM(cost * 1.1)``, ``AVG(CASE WHEN income > 50000 THEN 1 ELSE 0
END)``), a GROUP BY key that :mod:`infodp.curator.sql.derived` does not take (its domain derived
when finite: an int with bounds spanning at most 10,000 values, the branch values of a
CASE; otherwise partition selection), a FILTER condition beyond the WHERE grammar. The
query's WHERE filters the relation's rows. The rewritten query names those columns and keeps
the analyst's output names, so parsing, pricing, compiling and answering it are unchanged.

Filters, join keys and group keys read stored values; aggregates read bounded values (each
input's bounded copy, the expression over them clamped into the derived bounds and snapped
to the derived column's grid), as for a single table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sqlglot import exp

from infodp.curator.backends.bounding import ident
from infodp.curator.relations.expressions import condition, value
from infodp.curator.relations.joins import Scope
from infodp.curator.relations.relation import Relation, project
from infodp.curator.relations.tables import check_clauses
from infodp.curator.relations.values import Value, as_number, refuse
from infodp.curator.sql.limits import chained

__all__ = ["outer_query"]

#: Aggregates that read no bound (any value can be counted).
_COUNTS = ("COUNT",)


def outer_query(select: exp.Select, scope: Scope, table: str) -> tuple[exp.Select, Relation]:
    """The query rewritten over the relation named ``table``, and that relation.

    >>> import sqlglot
    >>> from infodp.curator.declaration.source import load_schema
    >>> from infodp.curator.relations.joins import scope_of
    >>> from infodp.curator.relations.sources import table_source
    >>> s = load_schema({"table": "t", "privacy_unit": "row",
    ...     "columns": {"x": {"type": "int", "bounds": [0, 9]}}})
    >>> q = sqlglot.parse_one("SELECT AVG(x * 2) FROM t")
    >>> out, rel = outer_query(q, scope_of(q, lambda n: table_source(n, s)), "t")
    >>> (out.sql(), rel.columns[-1].bounds)
    ('SELECT AVG("x * 2") AS "AVG(x * 2)" FROM "t"', (0.0, 18.0))
    """
    check_clauses(select, outer=True)
    lifter = _Lifter(scope)
    items = [lifter.item(item) for item in select.expressions]
    group_node = select.args.get("group")
    out = exp.Select(expressions=items).from_(exp.Table(this=ident(table)), copy=False)
    if group_node is not None:
        aliases = {
            str(i.alias).lower(): (i, n)
            for i, n in zip(select.expressions, items, strict=True)
            if isinstance(i, exp.Alias)
        }
        keys = [lifter.key(lifter.group(g, aliases, select)) for g in group_node.expressions]
        out.set("group", exp.Group(expressions=keys))
    for key in ("having", "order", "limit", "offset", "distinct", "qualify"):
        if select.args.get(key) is not None:
            out.set(key, select.args[key].copy())  # refused by the SQL parser, as ever
    where_node = select.args.get("where")
    where = None if where_node is None else condition(where_node.this, scope.value, "WHERE")
    columns = [(name, scope.column_value(i, c)) for name, i, c in scope.visible()]
    return out, project(scope, columns + lifter.lifted, where)


class _Lifter:
    """Rewrites the outer query's expressions over the relation's columns, lifting each
    derived value into a relation column of its own."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.lifted: list[tuple[str, Value]] = []
        self.by_text: dict[str, str] = {}
        self.taken = {n.lower() for n, _, _ in scope.visible()}

    def rename(self, node: exp.Expr) -> exp.Expr:
        """``node`` with every column reference renamed to the relation's column."""

        def put(n: exp.Expr) -> exp.Expr:
            if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
                return exp.Column(this=ident(self.scope.name(n)))
            return n

        return node.copy().transform(put, copy=False)

    def lift(self, node: exp.Expr, hint: str | None, bounded_for: str | None) -> exp.Column:
        """A relation column holding ``node``'s value (``bounded_for``: the aggregate that
        needs its bounds)."""
        text = str(node.sql())
        if text in self.by_text:
            return exp.Column(this=ident(self.by_text[text]))
        v = value(node, self.scope.value)
        if v.type == "bool":
            v = as_number(v, text)
        if bounded_for is not None:
            _check_bounded(v, text, bounded_for)
        name = self.fresh(hint, text)
        self.by_text[text] = name
        self.lifted.append((name, v))
        return exp.Column(this=ident(name))

    def fresh(self, hint: str | None, text: str) -> str:
        """A relation column name not yet taken: ``hint`` if free, else ``text`` (padded)."""
        name = hint if hint and hint.lower() not in self.taken else text
        while name.lower() in self.taken:
            name = f"{name} "
        self.taken.add(name.lower())
        return name

    def key(self, node: exp.Expr) -> exp.Expr:
        """A GROUP BY key, refused when it is a lifted float value (no finite domain)."""
        if isinstance(node, exp.Column):
            lifted = dict(self.lifted).get(node.name)
            if lifted is not None and lifted.type == "float":
                raise refuse(
                    f"GROUP BY the derived float value {node.name[:60]!r}",
                    "bin it, FLOOR(x / w) * w, or CAST it to INT",
                )
        return node

    def item(self, item: exp.Expr) -> exp.Expr:
        alias = str(item.alias) if isinstance(item, exp.Alias) else None
        node = item.this if isinstance(item, exp.Alias) else item
        new, original = self.rewritten(node, alias)
        name = alias or original
        if new.sql() == node.sql() and alias is None:
            return new
        if isinstance(new, exp.Column) and new.name == name:
            return new
        return exp.alias_(new, ident(name), copy=False)

    def rewritten(self, node: exp.Expr, alias: str | None) -> tuple[exp.Expr, str]:
        """A SELECT item's expression over the relation, and the name it had."""
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            return self.rename(node), node.name
        if _is_aggregate(node):
            return self.aggregate(node), str(node.sql())
        if isinstance(node, exp.Star) or _derived_form(node):
            return self.rename(node), str(node.sql())
        return self.lift(node, alias, None), str(node.sql())

    def aggregate(self, node: exp.Expr) -> exp.Expr:
        node = node.copy()
        if isinstance(node, exp.Filter):
            return self.filtered(node)
        if isinstance(node, exp.WithinGroup):
            return self.within_group(node)
        func = node.name.upper() if isinstance(node, exp.Anonymous) else node.key.upper()
        arg = node.this
        if isinstance(arg, exp.Distinct):
            arg.set("expressions", [self.slot(e, "COUNT") for e in arg.expressions])
        elif isinstance(arg, exp.Expr) and not isinstance(arg, exp.Star):
            node.set("this", self.slot(arg, func))
        if isinstance(node, exp.Anonymous) and node.expressions:
            first, *rest = node.expressions
            node.set("expressions", [self.slot(first, func), *rest])
        return node

    def within_group(self, node: exp.WithinGroup) -> exp.Expr:
        """``PERCENTILE_CONT(p) WITHIN GROUP (ORDER BY x)``: the ordered values slotted."""
        func = node.this.key.upper()
        for ordered in node.args["expression"].expressions:
            ordered.set("this", self.slot(ordered.this, func))
        return node

    def filtered(self, node: exp.Filter) -> exp.Expr:
        """``AGG(...) FILTER (WHERE cond)``: a plain condition renamed, any other lifted
        into a 0/1 column."""
        node.set("this", self.aggregate(node.this))
        where = node.args["expression"]
        cond = where.this
        if _plain_condition(cond):
            where.set("this", self.rename(cond))
        else:
            col = self.lift(cond, None, None)
            where.set("this", exp.EQ(this=col, expression=exp.Literal.number(1)))
        return node

    def slot(self, node: exp.Expr, func: str) -> exp.Expr:
        """An aggregate's argument: a column renamed, a literal kept, a derived value lifted."""
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            return self.rename(node)
        if isinstance(node, (exp.Literal, exp.Star)):
            return node
        return self.lift(node, None, None if func in _COUNTS else func)

    def group(
        self,
        g: exp.Expr,
        aliases: Mapping[str, tuple[exp.Expr, exp.Expr]],
        select: exp.Select,
    ) -> exp.Expr:
        if isinstance(g, exp.Column):
            return self.grouped_column(g, aliases)
        for item in select.expressions:
            node = item.this if isinstance(item, exp.Alias) else item
            if node.sql() == g.sql():
                lifted: exp.Expr = self.item(exp.alias_(g.copy(), "__k")).this
                return lifted
        if _derived_form(g):
            return self.rename(g)
        return self.lift(g, None, None)

    def grouped_column(
        self, g: exp.Column, aliases: Mapping[str, tuple[exp.Expr, exp.Expr]]
    ) -> exp.Expr:
        """GROUP BY a name: a relation column, or a SELECT alias no column shadows."""
        visible = {n.lower() for n, _, _ in self.scope.visible()}
        if not g.table and g.name.lower() in aliases and g.name.lower() not in visible:
            # A SELECT alias: the lifted column it names, or the alias of a bins/bands key.
            _, new = aliases[g.name.lower()]
            inner = new.this if isinstance(new, exp.Alias) else new
            if isinstance(inner, exp.Column):
                return inner.copy()
            return exp.Column(this=ident(g.name))
        return self.rename(g)


def _check_bounded(v: Value, text: str, bounded_for: str) -> None:
    """Refuse to aggregate (``bounded_for``) a derived value without finite bounds."""
    if not v.numeric or v.box is None:
        why = v.why or (f"{text} is {v.type}" if not v.numeric else "no finite bounds")
        raise refuse(
            f"{bounded_for}({text[:60]})",
            f"the derived value has no finite bounds to aggregate: {why}",
        )


def _is_aggregate(node: exp.Expr) -> bool:
    return isinstance(node, (exp.AggFunc, exp.Filter, exp.WithinGroup, exp.Anonymous))


def _unparen(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _is_int(node: exp.Expr) -> bool:
    node = _unparen(node)
    if isinstance(node, exp.Neg):
        node = node.this
    return isinstance(node, exp.Literal) and not node.is_string and str(node.this).isdigit()


def _is_literal(node: exp.Expr) -> bool:
    node = _unparen(node)
    if isinstance(node, exp.Neg):
        node = node.this
    return isinstance(node, exp.Literal)


def _is_column(node: exp.Expr) -> bool:
    return isinstance(node, exp.Column) and not isinstance(node.this, exp.Star)


def _derived_form(node: exp.Expr) -> bool:
    """A GROUP BY key :mod:`infodp.curator.sql.derived` takes as written: ``FLOOR(col / w)
    [* m]`` bins or a ``CASE WHEN`` band of literals over WHERE-grammar conditions."""
    node = _unparen(node)
    if isinstance(node, exp.Mul):
        a, b = node.this, node.args["expression"]
        floor = a if isinstance(_unparen(a), exp.Floor) else b
        other = b if floor is a else a
        return _is_int(other) and _bins(floor)
    if isinstance(node, exp.Floor):
        return _bins(node)
    if isinstance(node, exp.Case) and node.this is None:
        return _bands(node)
    return False


def _bands(node: exp.Case) -> bool:
    """``CASE WHEN cond THEN literal ... [ELSE literal | NULL] END`` over plain conditions."""
    default = node.args.get("default")
    return all(
        _plain_condition(b.this) and _is_literal(b.args["true"]) for b in node.args.get("ifs") or []
    ) and (default is None or isinstance(default, exp.Null) or _is_literal(default))


def _bins(node: exp.Expr) -> bool:
    node = _unparen(node)
    if not isinstance(node, exp.Floor) or node.args.get("decimals") is not None:
        return False
    div = _unparen(node.this)
    return isinstance(div, exp.Div) and _is_column(div.this) and _is_int(div.args["expression"])


_SIDES: dict[type[exp.Expr], Callable[[exp.Expr], list[exp.Expr]]] = {
    exp.In: lambda n: [n.this, *n.expressions],
    exp.Between: lambda n: [n.this, n.args["low"], n.args["high"]],
    exp.Is: lambda n: [n.this, n.args["expression"]],
}


def _plain_condition(node: exp.Expr) -> bool:
    """A condition in the SQL parser's WHERE grammar: a column compared with literals,
    joined by AND/OR/NOT."""
    node = _unparen(node)
    if isinstance(node, (exp.And, exp.Or)):
        return all(_plain_condition(t) for t in chained(node))
    if isinstance(node, exp.Not):
        return _plain_condition(node.this)
    if isinstance(node, (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)):
        a, b = node.this, node.args["expression"]
        return (_is_column(a) and _is_literal(b)) or (_is_column(b) and _is_literal(a))
    return _plain_test(node)


def _plain_test(node: exp.Expr) -> bool:
    """IN, BETWEEN or IS of a column against literals (no subquery)."""
    sides = _SIDES.get(type(node))
    if sides is None:
        return False
    first, *rest = sides(node)
    if node.args.get("query"):
        return False
    return _is_column(first) and all(_is_literal(r) or isinstance(r, exp.Null) for r in rest)
