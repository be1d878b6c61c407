"""Conditions of a derived value: comparisons, IN, BETWEEN, IS [NOT] NULL, AND/OR/NOT.

A condition has a stored form (what WHERE, ON and FILTER read) and a bounded form (what a
condition inside an aggregate reads, over the bounded values); numbers are compared with
numbers and text with text (a number literal compared with a text column is read as its
text, as the SQL parser does), anything else is refused before it reaches an engine.

>>> import sqlglot
>>> from infodp.curator.relations.expressions import value
>>> from infodp.curator.relations.values import stored_value
>>> from infodp.curator.declaration.schema import ColumnSpec
>>> k = stored_value("t", ColumnSpec("k", "text"), grid=False)
>>> print(value(sqlglot.parse_one("k IN (1, 'b')"), lambda c: k).raw.sql())
"t"."k" IN ('1', 'b')
"""

from __future__ import annotations

from typing import Protocol

from sqlglot import exp

from infodp.curator.backends.bounding import literal
from infodp.curator.relations.values import NUMERIC, Said, Value, as_number, refuse, said
from infodp.curator.sql.dialect import boolean_on_text
from infodp.curator.sql.limits import chained

__all__ = [
    "Reader",
    "between",
    "comparable",
    "compare",
    "compare_values",
    "condition_value",
    "is_null",
    "logical",
    "paren",
    "truth",
    "truth_of",
    "within",
]


class Reader(Protocol):
    """What reads the operands of a condition (:mod:`.expressions`)."""

    def read(self, node: exp.Expr) -> Value:
        """The value ``node`` computes."""
        ...


def paren(e: exp.Expr) -> exp.Expr:
    """``(e)``, over ``e`` itself: the values read here own their trees
    (:mod:`.expressions`), each used once."""
    return exp.Paren(this=e)


def truth(reader: Reader, node: exp.Expr) -> Value:
    return truth_of(reader.read(node), node)


def truth_of(v: Value, node: exp.Expr) -> Value:
    """``v``, the value of ``node``, refused unless it is a condition."""
    if v.type != "bool":
        raise refuse(f"condition {said(node)!r}", "a comparison, IN, BETWEEN, IS NULL, ...")
    return v


def compare(reader: Reader, node: exp.Expr) -> Value:
    a, b = reader.read(node.this), reader.read(node.args["expression"])
    a, b = comparable(a, b, node)
    return compare_values(type(node), a, b)


def compare_values(op: type[exp.Expr], a: Value, b: Value) -> Value:
    """``a op b`` of two comparable values (:func:`comparable`)."""
    return condition_value(
        op(this=a.raw, expression=b.raw),
        op(this=paren(a.bounded), expression=paren(b.bounded)),
        a.nullable or b.nullable,
    )


def within(reader: Reader, node: exp.Expr) -> Value:
    if node.args.get("query") or node.args.get("unnest"):
        raise refuse("subquery outside FROM", "IN takes a list of values")
    a = reader.read(node.this)
    items = [comparable(a, reader.read(e), node)[1] for e in node.expressions]
    return condition_value(
        exp.In(this=a.raw, expressions=[i.raw for i in items]),
        exp.In(this=paren(a.bounded), expressions=[i.bounded for i in items]),
        a.nullable or any(i.nullable for i in items),
    )


def between(reader: Reader, node: exp.Expr) -> Value:
    a = reader.read(node.this)
    low = comparable(a, reader.read(node.args["low"]), node)[1]
    high = comparable(a, reader.read(node.args["high"]), node)[1]
    return condition_value(
        exp.Between(this=a.raw, low=low.raw, high=high.raw),
        exp.Between(this=paren(a.bounded), low=low.bounded, high=high.bounded),
        a.nullable or low.nullable or high.nullable,
    )


def is_null(reader: Reader, node: exp.Expr) -> Value:
    if not isinstance(node.args.get("expression"), exp.Null):
        raise refuse(f"IS {said(node.args['expression'])}", "only IS [NOT] NULL")
    a = reader.read(node.this)
    return condition_value(
        exp.Is(this=a.raw, expression=exp.Null()),
        exp.Is(this=paren(a.bounded), expression=exp.Null()),
        False,
    )


def logical(reader: Reader, node: exp.Expr) -> Value:
    if isinstance(node, exp.Not):
        a = truth(reader, node.this)
        raw: exp.Expr = exp.Not(this=paren(a.raw))
        return condition_value(raw, exp.Not(this=paren(a.bounded)), a.nullable)
    # A chain a AND b AND c ... is read term by term and rebuilt once, left to right as
    # parsed: reading it as nested pairs would recurse once per term and copy the growing
    # left side at each.
    op = type(node)
    terms = [truth(reader, t) for t in chained(node)]
    raws = [paren(t.raw) for t in terms]
    bounded = [paren(t.bounded) for t in terms]
    return condition_value(_fold(op, raws), _fold(op, bounded), any(t.nullable for t in terms))


def _fold(op: type[exp.Expr], terms: list[exp.Expr]) -> exp.Expr:
    out = terms[0]
    for t in terms[1:]:
        out = op(this=out, expression=t)
    return out


def condition_value(raw: exp.Expr, bounded: exp.Expr, nullable: bool) -> Value:
    return Value(raw, bounded, "bool", None, None, nullable)


def comparable(a: Value, b: Value, text: Said) -> tuple[Value, Value]:
    """Two sides of a comparison, refused when one is a number and the other text (a number
    literal compared with a text column is read as its text, as the SQL parser does)."""
    for side, rest in ((a, b), (b, a)):
        if isinstance(side.raw, exp.Boolean) and rest.type not in (*NUMERIC, "bool", "null"):
            raise boolean_on_text(bool(side.raw.this), said(text))
    if a.type == "bool" or b.type == "bool":
        a, b = as_number(a, text), as_number(b, text)
    if a.type == "null" or b.type == "null":
        return a, b
    if (a.type in NUMERIC) == (b.type in NUMERIC):
        return a, b
    num, other = (a, b) if a.type in NUMERIC else (b, a)
    if isinstance(num.raw, exp.Literal):
        lit = literal(str(num.raw.this))
        as_text = Value(lit, lit.copy(), "category", None, (str(num.raw.this),), False)
        return (as_text, b) if num is a else (a, as_text)
    raise refuse(f"comparison {said(text)!r}", f"it compares a number with a {other.type} value")
