"""Conditions of a derived value: comparisons, IN, BETWEEN, IS [NOT] NULL, AND/OR/NOT.

A condition has a stored form (what WHERE, ON and FILTER read) and a bounded form (what a
condition inside an aggregate reads, over the bounded values); numbers are compared with
numbers and text with text (a number literal compared with a text column is read as its
text, as the SQL parser does), anything else is refused before it reaches an engine.

>>> import sqlglot
>>> from infodp.curator.relations.expressions import value
>>> from infodp.curator.relations.values import stored_value
>>> from infodp.curator.schema import ColumnSpec
>>> k = stored_value("t", ColumnSpec("k", "text"), grid=False)
>>> print(value(sqlglot.parse_one("k IN (1, 'b')"), lambda c: k).raw.sql())
"t"."k" IN ('1', 'b')
"""

from __future__ import annotations

from typing import Protocol

from sqlglot import exp

from infodp.curator.backends.bounding import literal
from infodp.curator.relations.values import NUMERIC, Value, as_number, refuse

__all__ = [
    "Reader",
    "between",
    "comparable",
    "compare",
    "condition_value",
    "is_null",
    "logical",
    "paren",
    "truth",
    "within",
]


class Reader(Protocol):
    """What reads the operands of a condition (:mod:`.expressions`)."""

    def read(self, node: exp.Expr) -> Value:
        """The value ``node`` computes."""
        ...


def _text(node: exp.Expr) -> str:
    return str(node.sql())[:80]


def paren(e: exp.Expr) -> exp.Expr:
    """``(e)``, a copy."""
    return exp.Paren(this=e.copy())


def truth(reader: Reader, node: exp.Expr) -> Value:
    v = reader.read(node)
    if v.type != "bool":
        raise refuse(f"condition {_text(node)!r}", "a comparison, IN, BETWEEN, IS NULL, ...")
    return v


def compare(reader: Reader, node: exp.Expr) -> Value:
    a, b = reader.read(node.this), reader.read(node.args["expression"])
    a, b = comparable(a, b, _text(node))
    op = type(node)
    return condition_value(
        op(this=a.raw.copy(), expression=b.raw.copy()),
        op(this=paren(a.bounded), expression=paren(b.bounded)),
        a.nullable or b.nullable,
    )


def within(reader: Reader, node: exp.Expr) -> Value:
    if node.args.get("query") or node.args.get("unnest"):
        raise refuse("subquery outside FROM", "IN takes a list of values")
    a = reader.read(node.this)
    items = [comparable(a, reader.read(e), _text(node))[1] for e in node.expressions]
    return condition_value(
        exp.In(this=a.raw.copy(), expressions=[i.raw.copy() for i in items]),
        exp.In(this=paren(a.bounded), expressions=[i.bounded.copy() for i in items]),
        a.nullable or any(i.nullable for i in items),
    )


def between(reader: Reader, node: exp.Expr) -> Value:
    a = reader.read(node.this)
    low = comparable(a, reader.read(node.args["low"]), _text(node))[1]
    high = comparable(a, reader.read(node.args["high"]), _text(node))[1]
    return condition_value(
        exp.Between(this=a.raw.copy(), low=low.raw.copy(), high=high.raw.copy()),
        exp.Between(this=paren(a.bounded), low=low.bounded.copy(), high=high.bounded.copy()),
        a.nullable or low.nullable or high.nullable,
    )


def is_null(reader: Reader, node: exp.Expr) -> Value:
    if not isinstance(node.args.get("expression"), exp.Null):
        raise refuse(f"IS {_text(node.args['expression'])}", "only IS [NOT] NULL")
    a = reader.read(node.this)
    return condition_value(
        exp.Is(this=a.raw.copy(), expression=exp.Null()),
        exp.Is(this=paren(a.bounded), expression=exp.Null()),
        False,
    )


def logical(reader: Reader, node: exp.Expr) -> Value:
    if isinstance(node, exp.Not):
        a = truth(reader, node.this)
        raw: exp.Expr = exp.Not(this=paren(a.raw))
        return condition_value(raw, exp.Not(this=paren(a.bounded)), a.nullable)
    a, b = truth(reader, node.this), truth(reader, node.args["expression"])
    op = type(node)
    return condition_value(
        op(this=paren(a.raw), expression=paren(b.raw)),
        op(this=paren(a.bounded), expression=paren(b.bounded)),
        a.nullable or b.nullable,
    )


def condition_value(raw: exp.Expr, bounded: exp.Expr, nullable: bool) -> Value:
    return Value(raw, bounded, "bool", None, None, nullable)


def comparable(a: Value, b: Value, text: str) -> tuple[Value, Value]:
    """Two sides of a comparison, refused when one is a number and the other text (a number
    literal compared with a text column is read as its text, as the SQL parser does)."""
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
    raise refuse(f"comparison {text!r}", f"it compares a number with a {other.type} value")
