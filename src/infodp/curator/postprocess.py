"""Post-processing of released values: HAVING, ORDER BY, LIMIT/OFFSET and arithmetic between
aggregates, applied after the noise and free.

Whatever is computed from released values alone costs nothing more: post-processing (Dwork &
Roth 2014, Prop. 2.1). A query using these clauses is split in two by :func:`split_query`:

- the **inner query**, an ordinary aggregate query that the SQL parser prices and the backend
  answers; it measures every aggregate the outer clauses mention, once (an aggregate named only
  in HAVING or ORDER BY is measured and charged like one in SELECT, since its noisy value is
  what the filter reads);
- a :class:`PostProcess`, applied to the released table by :meth:`PostProcess.apply`: the
  SELECT items computed from the released columns, the HAVING filter, the order, the limit.

Intervals follow the values where they honestly can: an item that is one released column keeps
its interval; an item computed from released values gets the interval-arithmetic enclosure of
its inputs' intervals (Moore 1966), which holds whenever every input's interval does, so with
probability at least 1 − k·β for k noisy inputs at level 1 − β each (Boole's inequality) — the
answer's notes say so for each such column. A division whose denominator's interval contains 0,
or an input with no numeric interval (a quantile's rank error), gives no interval rather than a
wrong one.

>>> post = split_query(
...     "SELECT g, SUM(v) / COUNT(*) AS mean FROM t GROUP BY g HAVING COUNT(*) > 10 "
...     "ORDER BY mean DESC LIMIT 1")
>>> post.inner_sql
'SELECT g, SUM(v) AS __pp0, COUNT(*) AS __pp1 FROM t GROUP BY g'
>>> split_query("SELECT COUNT(*) FROM t") is None
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp

from infodp.errors import ParameterError

if TYPE_CHECKING:
    from infodp.curator.result import Released

__all__ = ["MAX_LIMIT", "PostProcess", "Term", "split_query"]

#: Largest LIMIT or OFFSET accepted.
MAX_LIMIT = 1_000_000

#: A released value: a group key (text or integer), a noisy number, or NULL.
Value = float | int | str | None
#: A released interval as the answer carries it: [low, high], or a quantile's rank error.
Interval = list[float | int] | dict[str, object] | None

#: Prefix of the inner query's hidden output names (refused in an analyst's aliases).
_HIDDEN = "__pp"

_ARITHMETIC: dict[type[exp.Expr], str] = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
}
_COMPARISONS: dict[type[exp.Expr], str] = {
    exp.EQ: "=",
    exp.NEQ: "<>",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
}
#: Functions of released values accepted in SELECT, HAVING and ORDER BY (one or two arguments).
_FUNCTIONS = ("ABS", "ROUND", "FLOOR", "CEIL", "SQRT", "LEAST", "GREATEST", "COALESCE")


@dataclass(frozen=True, slots=True)
class Term:
    """A node of a post-processing expression over the inner query's released columns.

    ``op``: ``ref`` (released column ``value``), ``const`` (``value``), ``+ - * /``, ``neg``,
    a function name of :data:`_FUNCTIONS`, a comparison ``= <> < <= > >=``, ``and``, ``or``,
    ``not``, ``is null``, ``between``, ``in``; ``args`` are its operands.
    """

    op: str
    args: tuple[Term, ...] = ()
    value: Value = None

    def refs(self) -> frozenset[int]:
        """The released columns this term reads."""
        if self.op == "ref":
            return frozenset({int(self.value or 0)})
        return frozenset().union(*(a.refs() for a in self.args))


@dataclass(frozen=True, slots=True)
class Item:
    """One output column: its name (None: the inner column's own name) and its term."""

    name: str | None
    term: Term


@dataclass(frozen=True, slots=True)
class Ordering:
    """One ORDER BY key."""

    term: Term
    descending: bool
    nulls_first: bool


@dataclass(frozen=True, slots=True)
class PostProcess:
    """The free part of a query: what is computed from the released table, and how."""

    #: The aggregate query that is priced, charged and answered.
    inner_sql: str
    items: tuple[Item, ...]
    having: Term | None = None
    order: tuple[Ordering, ...] = ()
    limit: int | None = None
    offset: int = 0
    #: The inner columns that are noisy aggregates (the others are released group keys).
    noisy: frozenset[int] = frozenset()

    def apply(self, released: Released, confidence: float) -> Released:
        """The released table after this post-processing (values, intervals, notes, rows)."""
        from infodp.curator.result import Released

        rows = list(range(len(released.rows)))
        if self.having is not None:
            having = self.having
            rows = [r for r in rows if _evaluate(having, released.rows[r]) is True]
        for key in reversed(self.order):  # stable sorts, last key first
            rows.sort(key=functools.partial(_sort_key, key, released.rows), reverse=key.descending)
        rows = rows[self.offset :]
        if self.limit is not None:
            rows = rows[: self.limit]
        beta = 1.0 - confidence
        names = tuple(
            released.columns[int(i.term.value or 0)] if i.name is None else i.name
            for i in self.items
        )
        out_rows: list[tuple[Value, ...]] = []
        out_intervals: list[tuple[Interval, ...]] = []
        for r in rows:
            values, intervals = released.rows[r], released.intervals[r]
            out_rows.append(tuple(_evaluate(i.term, values) for i in self.items))
            out_intervals.append(tuple(_interval_of(i.term, values, intervals) for i in self.items))
        notes = [*released.notes, *self._notes(names, beta)]
        return Released(
            names,
            tuple(out_rows),
            tuple(out_intervals),
            tuple(notes),
            tuple(released.noisy[r] for r in rows) if released.noisy else (),
        )

    def _notes(self, names: Sequence[str], beta: float) -> list[str]:
        notes = []
        clauses = [
            name
            for name, used in (
                ("HAVING", self.having is not None),
                ("ORDER BY", bool(self.order)),
                ("LIMIT/OFFSET", self.limit is not None or self.offset > 0),
            )
            if used
        ]
        if clauses:
            notes.append(
                f"{', '.join(clauses)} applied to the released (noisy) values after the noise: "
                "post-processing, at no further privacy cost"
            )
        for name, item in zip(names, self.items, strict=True):
            if item.term.op == "ref":
                continue
            k = len(item.term.refs() & self.noisy)
            level = max(0.0, 1.0 - k * beta)
            notes.append(
                f"{name} is computed from {k} released value(s) after the noise (free); its "
                f"interval, where given, is the interval-arithmetic enclosure of theirs and "
                f"holds with probability at least 1 − {k}·β = {level:.6g} (a union bound), not "
                "at the stated confidence; none is given when a denominator's interval "
                "contains 0 or an input has no numeric interval"
            )
        return notes


# -- evaluation (SQL NULL semantics) ---------------------------------------------------------


def _number(v: Value) -> float | int | None:
    if v is None or isinstance(v, str):
        return None
    return v


def _arith(op: str, a: Value, b: Value) -> Value:
    x, y = _number(a), _number(b)
    if x is None or y is None:
        return None
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    return None if y == 0 else x / y  # division in floating point; by zero: NULL


def _function(name: str, args: list[Value]) -> Value:
    if name == "COALESCE":
        return next((a for a in args if a is not None), None)
    nums = [_number(a) for a in args]
    if any(n is None for n in nums):
        return None
    x = nums[0]
    assert x is not None
    if name == "ABS":
        return abs(x)
    if name == "ROUND":
        digits = int(nums[1] or 0) if len(nums) > 1 else 0
        return round(x, digits) if isinstance(x, float) else x
    if name == "FLOOR":
        return math.floor(x)
    if name == "CEIL":
        return math.ceil(x)
    if name == "SQRT":
        return math.sqrt(x) if x >= 0 else None
    clean = [n for n in nums if n is not None]
    return min(clean) if name == "LEAST" else max(clean)


def _evaluate(term: Term, row: Sequence[Value]) -> Value | bool:
    op = term.op
    if op == "ref":
        return row[int(term.value or 0)]
    if op == "const":
        return term.value
    if op in ("and", "or", "not"):
        return _logic(term, row)
    values = [_evaluate(a, row) for a in term.args]
    if op in _COMPARISONS.values():
        return _compare(op, values[0], values[1])
    if op == "is null":
        return values[0] is None
    if op == "between":
        x, lo, hi = values
        if x is None or lo is None or hi is None:
            return None
        return bool(lo <= x <= hi)  # type: ignore[operator]
    if op == "in":
        x = values[0]
        return None if x is None else x in values[1:]
    if op == "neg":
        n = _number(values[0])
        return None if n is None else -n
    if op in _ARITHMETIC.values():
        return _arith(op, values[0], values[1])
    return _function(op, values)


def _as_number(v: Value | bool) -> float | int | None:
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            try:
                return float(v)
            except ValueError:
                return None
    return None if v is None else v


def _compare(op: str, a: Value | bool, b: Value | bool) -> bool | None:
    """SQL comparison: NULL (None) when either side is NULL or the types do not compare."""
    if a is None or b is None:
        return None
    if isinstance(a, str) != isinstance(b, str):
        # A released group key is text; an int key compares with a number as that number.
        a, b = _as_number(a), _as_number(b)
        if a is None or b is None:
            return None
    if op == "=":
        return a == b
    if op == "<>":
        return a != b
    x, y = (a, b) if isinstance(a, str) and isinstance(b, str) else (_number(a), _number(b))
    if x is None or y is None:
        return None
    return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]  # type: ignore[operator]


def _logic(term: Term, row: Sequence[Value]) -> bool | None:
    """Three-valued AND, OR, NOT (None is unknown)."""
    values = [_evaluate(a, row) for a in term.args]
    if term.op == "not":
        v = values[0]
        return None if v is None else not v
    if term.op == "and":
        if any(v is False for v in values):
            return False
        return None if any(v is None for v in values) else True
    if any(v is True for v in values):
        return True
    return None if any(v is None for v in values) else False


def _sort_key(key: Ordering, rows: Sequence[Sequence[Value]], r: int) -> tuple[int, Value]:
    v = _evaluate(key.term, rows[r])
    # NULLs first or last whatever the direction (the sort is reversed for DESC).
    null_rank = 0 if key.nulls_first != key.descending else 2
    if v is None:
        return (null_rank, 0)
    return (1, v if not isinstance(v, bool) else int(v))


# -- intervals (interval arithmetic; Moore 1966) ---------------------------------------------


def _interval_of(term: Term, values: Sequence[Value], intervals: Sequence[Interval]) -> Interval:
    if term.op == "ref":
        return intervals[int(term.value or 0)]
    box = _enclose(term, values, intervals)
    return None if box is None else [box[0], box[1]]


def _enclose(
    term: Term, values: Sequence[Value], intervals: Sequence[Interval]
) -> tuple[float, float] | None:
    """An interval holding the term's value whenever every input lies in its interval."""
    op = term.op
    if op == "ref":
        i = int(term.value or 0)
        got = intervals[i]
        if got is None:  # a group key: released exactly
            v = _number(values[i])
            return None if v is None else (float(v), float(v))
        if isinstance(got, list) and len(got) == 2 and all(_number(x) is not None for x in got):
            return float(got[0]), float(got[1])
        return None
    if op == "const":
        v = _number(term.value)
        return None if v is None else (float(v), float(v))
    parts = [_enclose(a, values, intervals) for a in term.args]
    if any(p is None for p in parts):
        return None
    boxes = [p for p in parts if p is not None]
    if op == "neg":
        lo, hi = boxes[0]
        return -hi, -lo
    if op in ("+", "-", "*", "/"):
        return _box_arith(op, boxes[0], boxes[1])
    if op == "ABS":
        lo, hi = boxes[0]
        return (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))), max(abs(lo), abs(hi))
    if op in ("FLOOR", "CEIL", "ROUND", "SQRT"):
        return _monotone(op, term, boxes)
    if op in ("LEAST", "GREATEST"):
        pick = min if op == "LEAST" else max
        return pick(b[0] for b in boxes), pick(b[1] for b in boxes)
    return None


def _box_arith(
    op: str, a: tuple[float, float], b: tuple[float, float]
) -> tuple[float, float] | None:
    if op == "+":
        return a[0] + b[0], a[1] + b[1]
    if op == "-":
        return a[0] - b[1], a[1] - b[0]
    if op == "/":
        if b[0] <= 0 <= b[1]:
            return None  # the denominator may be 0: no honest interval
        b = (1.0 / b[1], 1.0 / b[0])
    products = [x * y for x in a for y in b]
    return min(products), max(products)


def _monotone(op: str, term: Term, boxes: list[tuple[float, float]]) -> tuple[float, float] | None:
    lo, hi = boxes[0]
    if op == "FLOOR":
        return float(math.floor(lo)), float(math.floor(hi))
    if op == "CEIL":
        return float(math.ceil(lo)), float(math.ceil(hi))
    if op == "SQRT":
        return None if lo < 0 else (math.sqrt(lo), math.sqrt(hi))
    digits = 0
    if len(term.args) > 1:
        d = _number(term.args[1].value)
        digits = int(d or 0)
    return round(lo, digits), round(hi, digits)


# -- splitting a query -----------------------------------------------------------------------


def _refuse(construct: str, detail: str) -> ParameterError:
    return ParameterError(f"refused SQL construct: {construct} ({detail}).")


def _is_aggregate(node: exp.Expr) -> bool:
    if isinstance(node, (exp.AggFunc, exp.WithinGroup, exp.Filter)):
        return True
    return isinstance(node, exp.Anonymous) and node.name.upper() in (
        "QUANTILE_CONT",
        "QUANTILE_DISC",
    )


def _contains_aggregate(node: exp.Expr) -> bool:
    return any(_is_aggregate(n) for n in node.walk())


class _Splitter:
    """Builds the inner query's items and the outer terms of one SELECT."""

    def __init__(self, select: exp.Select) -> None:
        self.select = select
        group = select.args.get("group")
        self.group_columns = {
            g.name.lower(): g for g in (group.expressions if group is not None else [])
        }
        self.inner: list[exp.Expr] = []
        self.by_text: dict[str, int] = {}
        #: Inner columns that are aggregates (noisy), not group keys.
        self.noisy: set[int] = set()
        self.hidden_count = 0
        self.aliases: dict[str, Term] = {}

    def hidden(self, node: exp.Expr) -> Term:
        """A reference to ``node`` (an aggregate or a group column) in the inner query."""
        text = node.sql()
        known = self.by_text.get(text)
        if known is None:
            known = self.by_text[text] = len(self.inner)
            self.inner.append(exp.alias_(node.copy(), f"{_HIDDEN}{self.hidden_count}"))
            self.hidden_count += 1
            if _is_aggregate(node):
                self.noisy.add(known)
        return Term("ref", value=known)

    def visible(self, item: exp.Expr) -> Term:
        """A bare aggregate or group column kept as the inner query has it (same name)."""
        node = item.this if isinstance(item, exp.Alias) else item
        self.inner.append(item.copy())
        index = len(self.inner) - 1
        self.by_text.setdefault(node.sql(), index)
        if _contains_aggregate(node):
            self.noisy.add(index)
        return Term("ref", value=index)

    def term(self, node: exp.Expr, clause: str) -> Term:
        """The term of an expression over released values (refusing anything else)."""
        if isinstance(node, exp.Paren):
            return self.term(node.this, clause)
        if _is_aggregate(node):
            return self.hidden(node)
        if isinstance(node, exp.Column):
            if node.name.lower() in self.group_columns and not node.table:
                return self.hidden(node)
            if node.name in self.aliases and clause != "SELECT":
                return self.aliases[node.name]
            raise _refuse(
                f"column {node.name!r} in {clause}",
                "after the noise only released values are available: aggregates, GROUP BY "
                "columns and SELECT aliases",
            )
        if isinstance(node, exp.Literal):
            if node.is_string:
                return Term("const", value=str(node.this))
            number = float(node.this)
            return Term("const", value=int(number) if number.is_integer() else number)
        if isinstance(node, exp.Null):
            return Term("const")
        if isinstance(node, exp.Boolean):
            return Term("const", value=int(bool(node.this)))
        return self._operator(node, clause)

    def _operator(self, node: exp.Expr, clause: str) -> Term:
        kind = type(node)
        if kind in _ARITHMETIC:
            return Term(
                _ARITHMETIC[kind],
                (self.term(node.this, clause), self.term(node.expression, clause)),
            )
        if kind in _COMPARISONS:
            return Term(
                _COMPARISONS[kind],
                (self.term(node.this, clause), self.term(node.expression, clause)),
            )
        if isinstance(node, exp.Neg):
            return Term("neg", (self.term(node.this, clause),))
        if isinstance(node, (exp.And, exp.Or)):
            return Term(
                node.key, (self.term(node.this, clause), self.term(node.expression, clause))
            )
        if isinstance(node, exp.Not):
            return Term("not", (self.term(node.this, clause),))
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            return Term("is null", (self.term(node.this, clause),))
        if isinstance(node, exp.Between):
            return Term(
                "between",
                tuple(
                    self.term(n, clause) for n in (node.this, node.args["low"], node.args["high"])
                ),
            )
        if isinstance(node, exp.In) and not node.args.get("query"):
            return Term(
                "in",
                (self.term(node.this, clause), *(self.term(v, clause) for v in node.expressions)),
            )
        return self._function(node, clause)

    def _function(self, node: exp.Expr, clause: str) -> Term:
        name = type(node).__name__.upper() if not isinstance(node, exp.Anonymous) else node.name
        name = {"CEILING": "CEIL"}.get(name.upper(), name.upper())
        if name not in _FUNCTIONS:
            raise _refuse(
                f"{node.sql()!r} in {clause}",
                "on released values: + - * /, comparisons, AND/OR/NOT, BETWEEN, IN, IS NULL, "
                + ", ".join(_FUNCTIONS),
            )
        args = [node.this, *node.expressions]
        if isinstance(node, exp.Round) and node.args.get("decimals") is not None:
            args.append(node.args["decimals"])
        return Term(name, tuple(self.term(a, clause) for a in args if a is not None))


def _bare(node: exp.Expr) -> bool:
    return _is_aggregate(node) and not any(_is_aggregate(n) for n in node.walk() if n is not node)


def _needs_post(select: exp.Select) -> bool:
    if any(select.args.get(k) for k in ("having", "order", "limit", "offset")):
        return True
    for item in select.expressions:
        node = item.this if isinstance(item, exp.Alias) else item
        if isinstance(node, exp.Column) or _bare(node):
            continue
        if _contains_aggregate(node):
            return True
    return False


def _count(node: exp.Expr | None, clause: str) -> int:
    value = node.expression if node is not None else None
    if not isinstance(value, exp.Literal) or value.is_string or not value.this.isdigit():
        raise ParameterError(clause, None if value is None else value.sql(), "a whole number")
    n = int(value.this)
    if n > MAX_LIMIT:
        raise ParameterError(clause, n, f"at most {MAX_LIMIT}")
    return n


@functools.lru_cache(maxsize=512)
def split_query(sql: str) -> PostProcess | None:
    """The inner query and the post-processing of ``sql``; None when it needs none (or is
    not a SELECT this layer reads: the SQL parser then says what it refuses).

    >>> split_query("SELECT COUNT(*) AS n FROM t ORDER BY n DESC LIMIT 3").limit
    3
    """
    if not isinstance(sql, str):
        return None
    try:
        select = sqlglot.parse_one(sql)
    except (sqlglot.errors.SqlglotError, RecursionError, ValueError):
        return None
    if not isinstance(select, exp.Select) or not _needs_post(select):
        return None
    if select.args.get("distinct") or select.args.get("with_") or select.args.get("with"):
        return None  # refused by the SQL parser, with its own message
    split = _Splitter(select)
    items: list[Item] = []
    for item in select.expressions:
        alias = item.alias if isinstance(item, exp.Alias) else None
        if alias and alias.startswith("__"):
            raise ParameterError("alias", alias, "a name that does not start with '__'")
        node = item.this if isinstance(item, exp.Alias) else item
        if isinstance(node, exp.Column) or _bare(node) or not _contains_aggregate(node):
            # A column, an aggregate, or what the SQL parser judges (and may refuse).
            items.append(Item(None, split.visible(item)))
        else:
            items.append(Item(alias or node.sql(), split.term(node, "SELECT")))
        if alias:
            split.aliases[alias] = items[-1].term
    having_node = select.args.get("having")
    having = None if having_node is None else split.term(having_node.this, "HAVING")
    order: list[Ordering] = []
    order_node = select.args.get("order")
    for ordered in [] if order_node is None else order_node.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit():
            position = int(key.this)
            if not 1 <= position <= len(items):
                raise ParameterError("ORDER BY", position, f"a position in 1..{len(items)}")
            term = items[position - 1].term
        else:
            term = split.term(key, "ORDER BY")
        order.append(
            Ordering(term, bool(ordered.args.get("desc")), bool(ordered.args.get("nulls_first")))
        )
    limit = None if select.args.get("limit") is None else _count(select.args["limit"], "LIMIT")
    offset = 0 if select.args.get("offset") is None else _count(select.args["offset"], "OFFSET")
    inner = select.copy()
    for key in ("having", "order", "limit", "offset"):
        inner.set(key, None)
    inner.set("expressions", split.inner)
    return PostProcess(
        inner.sql(), tuple(items), having, tuple(order), limit, offset, frozenset(split.noisy)
    )
