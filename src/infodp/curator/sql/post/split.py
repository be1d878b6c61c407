"""Splitting a query into its inner aggregate query and its free post-processing.

:func:`split_query` reads the SELECT with sqlglot. When it uses HAVING, ORDER BY, LIMIT/OFFSET
or SELECT items computed from aggregates, every aggregate those clauses mention becomes an item
of the **inner query** (a hidden ``__ppN`` column when it is not already selected as it is), and
the clauses become :class:`~infodp.curator.sql.post.terms.Term` expressions over the inner query's
released columns. Only released values may appear there: aggregates, GROUP BY columns and
SELECT aliases; anything else is refused before anything is spent.

>>> post = split_query("SELECT g, SUM(v) / COUNT(*) AS mean FROM t GROUP BY g ORDER BY mean")
>>> post.inner_sql
'SELECT g, SUM(v) AS __pp0, COUNT(*) AS __pp1 FROM t GROUP BY g'
>>> split_query("SELECT COUNT(*) FROM t") is None
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlglot import exp

from infodp._lazy import lazy_module
from infodp.curator.sql.limits import check_sql_text
from infodp.curator.sql.parse import COMPARISONS, parse_statement
from infodp.errors import ParameterError

if TYPE_CHECKING:
    from infodp.curator.sql.post import process as _process
    from infodp.curator.sql.post import terms as _terms
    from infodp.curator.sql.post.process import Item, Ordering, PostProcess
    from infodp.curator.sql.post.terms import Term
else:
    # Imported on first use (infodp._lazy): a query without HAVING, ORDER BY, LIMIT or
    # computed items stops at _needs_post and never builds a term.
    _process = lazy_module("infodp.curator.sql.post.process")
    _terms = lazy_module("infodp.curator.sql.post.terms")

__all__ = ["MAX_LIMIT", "inner_sql", "split_query"]

#: Largest LIMIT or OFFSET accepted.
MAX_LIMIT = 1_000_000

#: Prefix of the inner query's hidden output names (refused in an analyst's aliases).
HIDDEN = "__pp"

_BINARY: dict[type[exp.Expr], str] = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.And: "and",
    exp.Or: "or",
    **COMPARISONS,
}
#: sqlglot's function nodes accepted on released values, by the name a Term uses.
_FUNCTION_NODES: dict[type[exp.Expr], str] = {
    exp.Abs: "ABS",
    exp.Round: "ROUND",
    exp.Floor: "FLOOR",
    exp.Ceil: "CEIL",
    exp.Sqrt: "SQRT",
    exp.Least: "LEAST",
    exp.Greatest: "GREATEST",
    exp.Coalesce: "COALESCE",
    exp.Pow: "POWER",
    exp.Exp: "EXP",
    exp.Ln: "LN",
    exp.Sign: "SIGN",
}
#: How many values the functions of a fixed arity take.
_ARITY = {"POWER": 2, "EXP": 1, "LN": 1, "SIGN": 1, "ABS": 1, "SQRT": 1, "FLOOR": 1, "CEIL": 1}
#: The arguments besides ``this`` and ``expressions`` a function node is read with.
_MORE_ARGS = {"ROUND": ("decimals",), "POWER": ("expression",)}
#: CAST targets on released values, by the type's name (sqlglot's), and what each reads as.
_CAST_TYPES = {
    **dict.fromkeys(("INT", "BIGINT", "SMALLINT", "TINYINT", "HUGEINT", "UBIGINT"), "int"),
    **dict.fromkeys(("DOUBLE", "FLOAT", "DECIMAL"), "float"),
    **dict.fromkeys(("VARCHAR", "TEXT", "CHAR", "NVARCHAR"), "text"),
}
#: Why a random number is not part of a query (what RAND() and RANDOM() are refused with).
RANDOM_REFUSED = (
    "a random number is not a released value and is never drawn by the curator beside the "
    "charged noise; draw it yourself from the answer"
)


def _allowed() -> str:
    """What a clause on released values may use (the refusals' last words)."""
    return "on released values: + - * /, comparisons, AND/OR/NOT, BETWEEN, IN, IS NULL, " + (
        ", ".join([*_terms.FUNCTIONS, "COALESCE", "PI", "CAST AS INTEGER/DOUBLE/VARCHAR"])
    )


def _refuse(construct: str, detail: str) -> ParameterError:
    return ParameterError(f"refused SQL construct: {construct} ({detail}).")


def is_aggregate(node: exp.Expr) -> bool:
    """Whether ``node`` is an aggregate call (what the inner query measures)."""
    if isinstance(node, (exp.AggFunc, exp.WithinGroup, exp.Filter)):
        return True
    return isinstance(node, exp.Anonymous) and node.name.upper() in (
        "QUANTILE_CONT",
        "QUANTILE_DISC",
    )


def _contains_aggregate(node: exp.Expr) -> bool:
    return any(is_aggregate(n) for n in node.walk())


def _bare(node: exp.Expr) -> bool:
    """A column or a single aggregate call: what the SQL parser answers as it is."""
    if isinstance(node, exp.Column):
        return True
    if isinstance(node, exp.Filter):
        node = node.this  # an aggregate's own FILTER (WHERE ...) is part of the call
    return is_aggregate(node) and not any(is_aggregate(n) for n in node.walk() if n is not node)


class _Splitter:
    """The inner query's items and the outer terms of one SELECT."""

    def __init__(self, select: exp.Select) -> None:
        group = select.args.get("group")
        self.group_columns = {g.name.lower() for g in (group.expressions if group else [])}
        self.inner: list[exp.Expr] = []
        self.by_text: dict[str, int] = {}
        #: Inner columns that are noisy aggregates (the others are released group keys).
        self.noisy: set[int] = set()
        self.aliases: dict[str, Term] = {}
        self.hidden_count = 0
        self.handlers: dict[type[exp.Expr], Callable[[exp.Expr, str], Term]] = {
            exp.Paren: lambda n, c: self.term(n.this, c),
            exp.Column: self._column,
            exp.Literal: self._literal,
            exp.Null: lambda n, c: _terms.Term("const"),
            exp.Boolean: lambda n, c: _terms.Term("const", value=int(bool(n.this))),
            exp.Neg: lambda n, c: _terms.Term("neg", (self.term(n.this, c),)),
            exp.Not: lambda n, c: _terms.Term("not", (self.term(n.this, c),)),
            exp.Is: self._is,
            exp.Between: self._between,
            exp.In: self._in,
            **{kind: self._binary for kind in _BINARY},
            **{kind: self._function for kind in _FUNCTION_NODES},
            exp.Log: self._log,
            exp.Pi: lambda n, c: _terms.Term("const", value=math.pi),
            exp.Cast: self._cast,
            exp.TryCast: self._cast,
            exp.Rand: self._random,
        }

    def _add(self, node: exp.Expr, *, hidden: bool) -> int:
        index = len(self.inner)
        if hidden:
            node = exp.alias_(node.copy(), f"{HIDDEN}{self.hidden_count}")
            self.hidden_count += 1
        self.inner.append(node.copy() if not hidden else node)
        inner = node.this if isinstance(node, exp.Alias) else node
        self.by_text.setdefault(inner.sql(), index)
        if _contains_aggregate(inner):
            self.noisy.add(index)
        return index

    def reference(self, node: exp.Expr) -> Term:
        """A reference to an aggregate or group column, measured once in the inner query."""
        known = self.by_text.get(node.sql())
        return _terms.Term("ref", value=self._add(node, hidden=True) if known is None else known)

    def visible(self, item: exp.Expr) -> Term:
        """A bare aggregate or column kept as the inner query has it (the same output name)."""
        return _terms.Term("ref", value=self._add(item, hidden=False))

    def term(self, node: exp.Expr, clause: str) -> Term:
        """The term of an expression over released values (refusing anything else)."""
        if is_aggregate(node):
            return self.reference(node)
        handler = self.handlers.get(type(node))
        if handler is None:
            raise _refuse(f"{node.sql()!r} in {clause}", _allowed())
        return handler(node, clause)

    def _column(self, node: exp.Expr, clause: str) -> Term:
        qualified = isinstance(node, exp.Column) and bool(node.table)
        # A SELECT alias first (as DuckDB resolves ORDER BY): GROUP BY may name a derived
        # key by its alias, which the inner query knows only as that SELECT item.
        if node.name in self.aliases and clause != "SELECT" and not qualified:
            return self.aliases[node.name]
        if node.name.lower() in self.group_columns and not qualified:
            return self.reference(node)
        raise _refuse(
            f"column {node.name!r} in {clause}",
            "after the noise only released values are available: aggregates, GROUP BY "
            f"columns and SELECT aliases; to use {node.name} here, add it to GROUP BY "
            f"(GROUP BY ..., {node.name})",
        )

    def _literal(self, node: exp.Expr, clause: str) -> Term:
        if node.is_string:
            return _terms.Term("const", value=str(node.this))
        number = float(node.this)
        return _terms.Term("const", value=int(number) if number.is_integer() else number)

    def _binary(self, node: exp.Expr, clause: str) -> Term:
        pair = (self.term(node.this, clause), self.term(node.expression, clause))
        return _terms.Term(_BINARY[type(node)], pair)

    def _is(self, node: exp.Expr, clause: str) -> Term:
        if not isinstance(node.expression, exp.Null):
            raise _refuse(f"IS {node.expression.sql()}", "only IS [NOT] NULL")
        return _terms.Term("is null", (self.term(node.this, clause),))

    def _between(self, node: exp.Expr, clause: str) -> Term:
        parts = (node.this, node.args["low"], node.args["high"])
        return _terms.Term("between", tuple(self.term(n, clause) for n in parts))

    def _in(self, node: exp.Expr, clause: str) -> Term:
        if node.args.get("query"):
            raise _refuse("subquery", "IN takes a list of values")
        listed = (self.term(v, clause) for v in node.expressions)
        return _terms.Term("in", (self.term(node.this, clause), *listed))

    def _log(self, node: exp.Expr, clause: str) -> Term:
        # LOG(x) and LOG10(x) (read as LOG(10, x)) are the base-10 logarithm, as in DuckDB;
        # another base is refused (write LN(x) / LN(b)).
        value = node.args.get("expression")
        if value is None:
            return _terms.Term("LOG10", (self.term(node.this, clause),))
        base = node.this
        if not (isinstance(base, exp.Literal) and base.this == "10"):
            raise _refuse(f"{node.sql()!r} in {clause}", _allowed())
        return _terms.Term("LOG10", (self.term(value, clause),))

    def _cast(self, node: exp.Expr, clause: str) -> Term:
        to = node.args["to"]
        kind = _CAST_TYPES.get(str(to.this.name))
        if kind is None or to.expressions:
            raise _refuse(f"{node.sql()!r} in {clause}", _allowed())
        return _terms.Term("cast", (self.term(node.this, clause),), value=kind)

    def _random(self, node: exp.Expr, clause: str) -> Term:
        raise _refuse(f"{node.sql()!r} in {clause}", RANDOM_REFUSED)

    def _function(self, node: exp.Expr, clause: str) -> Term:
        args = [node.this, *node.expressions]
        if isinstance(node, exp.Round) and node.args.get("decimals") is not None:
            args.append(node.args["decimals"])
        if isinstance(node, exp.Pow):
            args.append(node.expression)
        name = _FUNCTION_NODES[type(node)]
        read = {"this", "expressions", *_MORE_ARGS.get(name, ())}
        # Any other argument sqlglot kept (FLOOR(x, 3), ...) would be dropped: refused.
        unread = [k for k, v in node.args.items() if k not in read and v not in (None, [], False)]
        terms = tuple(self.term(a, clause) for a in args if a is not None)
        if unread or len(terms) != _ARITY.get(name, len(terms)):
            arity = _ARITY.get(name)
            said = "" if arity is None else f"{arity} value{'s' if arity > 1 else ''}: "
            raise _refuse(f"{node.sql()!r} in {clause}", f"{name} takes {said}{_allowed()}")
        return _terms.Term(name, terms)


def _distinct_as_group(select: exp.Select) -> exp.Select | None:
    """``SELECT DISTINCT a, b FROM ...`` (plain columns, no GROUP BY) as ``SELECT a, b FROM
    ... GROUP BY a, b``: the same key set, released as a GROUP BY without an aggregate is
    (declared keys for free, else partition selection); None for any other statement.

    >>> from infodp.curator.sql.parse import parse_statement
    >>> _distinct_as_group(parse_statement("SELECT DISTINCT g AS k FROM t")).sql()
    'SELECT g AS k FROM t GROUP BY g'
    """
    distinct = select.args.get("distinct")
    if not isinstance(distinct, exp.Distinct) or distinct.args.get("on"):
        return None
    if select.args.get("group"):
        return None  # refused by the SQL parser, with its own message
    nodes = [i.this if isinstance(i, exp.Alias) else i for i in select.expressions]
    if not nodes or not all(
        isinstance(n, exp.Column) and not isinstance(n.this, exp.Star) for n in nodes
    ):
        return None
    out = select.copy()
    out.set("distinct", None)
    out.set("group", exp.Group(expressions=[n.copy() for n in nodes]))
    return out


def _needs_post(select: exp.Select) -> bool:
    if any(select.args.get(k) for k in ("having", "order", "limit", "offset")):
        return True
    seen: set[str] = set()
    for item in select.expressions:
        node = item.this if isinstance(item, exp.Alias) else item
        if not _bare(node) and _contains_aggregate(node):
            return True
        if _constant(node) or node.sql() in seen:
            return True  # a constant, or an item repeated (measured once, shown twice)
        seen.add(node.sql())
    return False


def _constant(node: exp.Expr) -> bool:
    """An item that reads no column and no aggregate (``3``, ``PI()``, ``2 * 3``): computed
    after the noise, from nothing private."""
    reads = (exp.Column, exp.Star, exp.Select, exp.Subquery)
    return not any(isinstance(n, reads) for n in node.walk()) and not _contains_aggregate(node)


def _count(node: exp.Expr, clause: str) -> int:
    value = node.expression
    if not isinstance(value, exp.Literal) or value.is_string or not value.this.isdigit():
        raise ParameterError(clause, None if value is None else value.sql(), "a whole number")
    n = int(value.this)
    if n > MAX_LIMIT:
        raise ParameterError(clause, n, f"at most {MAX_LIMIT}")
    return n


def _items(select: exp.Select, split: _Splitter) -> tuple[Item, ...]:
    items: list[Item] = []
    for item in select.expressions:
        alias = item.alias if isinstance(item, exp.Alias) else None
        if alias and alias.startswith("__"):
            raise ParameterError("alias", alias, "a name that does not start with '__'")
        node = item.this if isinstance(item, exp.Alias) else item
        if _bare(node) and node.sql() in split.by_text:
            # Repeated: measured (and charged) once, shown again under its own name.
            items.append(_process.Item(alias, split.reference(node)))
        elif _constant(node):
            items.append(_process.Item(alias or node.sql(), split.term(node, "SELECT")))
        elif _bare(node) or not _contains_aggregate(node):
            # A column or an aggregate, or what the SQL parser judges (and may refuse).
            items.append(_process.Item(None, split.visible(item)))
        else:
            items.append(_process.Item(alias or node.sql(), split.term(node, "SELECT")))
        if alias:
            split.aliases[alias] = items[-1].term
    return tuple(items)


def _ordering(
    select: exp.Select, split: _Splitter, items: tuple[Item, ...]
) -> tuple[Ordering, ...]:
    order_node = select.args.get("order")
    out: list[Ordering] = []
    for ordered in [] if order_node is None else order_node.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit():
            position = int(key.this)
            if not 1 <= position <= len(items):
                raise ParameterError("ORDER BY", position, f"a position in 1..{len(items)}")
            term = items[position - 1].term
        else:
            term = split.term(key, "ORDER BY")
        desc, nulls_first = bool(ordered.args.get("desc")), bool(ordered.args.get("nulls_first"))
        out.append(_process.Ordering(term, desc, nulls_first))
    return tuple(out)


@functools.lru_cache(maxsize=512)
def split_query(sql: str) -> PostProcess | None:
    """The inner query and the post-processing of ``sql``; None when it needs none (or is
    not a SELECT this step reads: the SQL parser then says what it refuses).

    >>> split_query("SELECT COUNT(*) AS n FROM t ORDER BY n DESC LIMIT 3").limit
    3
    """
    # Every query path splits the analyst's statement first: its length is checked here, on
    # the text as written (what the curator rewrites from it may be longer).
    check_sql_text(sql)
    try:
        # The SQL parser's own cached, size-checked parse: the statement is parsed once.
        select = parse_statement(sql)
    except ParameterError:
        return None  # the SQL parser refuses it again, with its own message
    if not isinstance(select, exp.Select):
        return None
    grouped = _distinct_as_group(select)
    if grouped is not None:
        select = grouped
    elif not _needs_post(select):
        return None
    if any(select.args.get(k) for k in ("distinct", "with", "with_")):
        return None  # refused by the SQL parser, with its own message
    split = _Splitter(select)
    items = _items(select, split)
    having = select.args.get("having")
    having_term = None if having is None else split.term(having.this, "HAVING")
    order = _ordering(select, split, items)
    limit = None if select.args.get("limit") is None else _count(select.args["limit"], "LIMIT")
    offset = 0 if select.args.get("offset") is None else _count(select.args["offset"], "OFFSET")
    if not split.inner:
        return None  # constants only: the SQL parser refuses a SELECT without an aggregate
    inner = select.copy()
    for key in ("having", "order", "limit", "offset"):
        inner.set(key, None)
    inner.set("expressions", split.inner)
    return _process.PostProcess(
        inner.sql(),
        items,
        having_term,
        order,
        limit,
        offset,
        frozenset(split.noisy),
    )


def inner_sql(sql: str) -> str:
    """The aggregate query ``sql`` measures: itself, or its inner query when it has a free
    post-processing part.

    >>> inner_sql("SELECT COUNT(*) AS n FROM t ORDER BY n")
    'SELECT COUNT(*) AS n FROM t'
    """
    post = split_query(sql) if isinstance(sql, str) else None
    return sql if post is None else post.inner_sql
