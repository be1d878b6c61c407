"""Derived values: SQL expressions over a relation's columns, typed and bounded.

:func:`value` reads an expression the analyst wrote (in SELECT, WHERE, an aggregate's
argument, GROUP BY or a join's ON) into a :class:`~infodp.curator.relations.values.Value`: its
stored value, its bounded value and the bounds of the latter by interval arithmetic (Moore
1966; :mod:`infodp.curator.relations.boxes`) from the declared bounds, never from the data.
Accepted:
``+ - * /``, unary minus, CASE (searched and simple), COALESCE, FLOOR, CEIL, ROUND, ABS, LEAST,
GREATEST, CAST to int, float or text, comparisons, IN lists, BETWEEN, IS [NOT] NULL and
AND/OR/NOT (a condition inside an aggregate or arithmetic counts as 1 or 0).

Arithmetic is computed in DOUBLE on every engine and a division by 0 is NULL (so no stored
value can make a statement fail on an overflow or a zero denominator: what a query does
depends on the query and the declaration only).
A quotient has bounds only when its denominator's bounds exclude 0: dividing by a value that
may be 0 is refused when it is aggregated; write ``x / GREATEST(y, c)`` with c > 0 (or
declare bounds that exclude 0).

>>> from infodp.curator.declaration.schema import ColumnSpec
>>> from infodp.curator.relations.values import stored_value
>>> cols = {"income": stored_value("p", ColumnSpec("income", "float", bounds=(0.0, 1e5)),
...                                grid=True)}
>>> import sqlglot
>>> v = value(sqlglot.parse_one("CASE WHEN income > 50000 THEN 1 ELSE 0 END"),
...           lambda c: cols[c.name])
>>> (v.type, v.box)
('int', (0.0, 1.0))
>>> value(sqlglot.parse_one("income * 1.1"), lambda c: cols[c.name]).box
(0.0, 110000.00000000004)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from fractions import Fraction

from sqlglot import exp

from infodp._exact import parse_exact
from infodp.curator.backends.bounding import literal
from infodp.curator.relations import boxes, conditions
from infodp.curator.relations.values import (
    STRING,
    Said,
    Value,
    as_number,
    cast_categories,
    refuse,
    said,
)

__all__ = ["ALLOWED", "Aggregates", "Columns", "condition", "value"]

#: What a derived value may be made of (named in refusals).
ALLOWED = (
    "+ - * /, unary minus, CASE, COALESCE, FLOOR, CEIL, ROUND, ABS, LEAST, GREATEST, "
    "CAST to int/float/text, comparisons, IN, BETWEEN, IS [NOT] NULL, AND/OR/NOT"
)

#: How a column reference is read, and an aggregate call (None: not allowed here).
Columns = Callable[[exp.Column], Value]
Aggregates = Callable[[exp.Expr], Value | None]

_INT64 = (-(2**63), 2**63 - 1)
_DOUBLE_MAX = Fraction(sys.float_info.max)
_ARITHMETIC: dict[type[exp.Expr], Callable[[boxes.Box, boxes.Box], boxes.Box | None]] = {
    exp.Add: boxes.add,
    exp.Sub: boxes.sub,
    exp.Mul: boxes.mul,
    exp.Div: boxes.div,
}
_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)
_INT_TYPES = {"INT", "BIGINT", "SMALLINT", "TINYINT", "INTEGER", "HUGEINT", "UBIGINT", "UINT"}
_FLOAT_TYPES = {"DOUBLE", "FLOAT", "REAL", "DECIMAL"}
_TEXT_TYPES = {"VARCHAR", "TEXT", "CHAR", "NVARCHAR", "NCHAR", "STRING"}


def value(node: exp.Expr, columns: Columns, aggregates: Aggregates | None = None) -> Value:
    """The value expression ``node`` computes per row (refusing what is not derivable)."""
    return _Reader(columns, aggregates).read(node)


def condition(node: exp.Expr, columns: Columns, where: str) -> Value:
    """A condition (WHERE, ON, a FILTER): refused unless ``node`` is true or false per row.

    >>> import sqlglot
    >>> from infodp.curator.declaration.schema import ColumnSpec
    >>> from infodp.curator.relations.values import stored_value
    >>> age = stored_value("p", ColumnSpec("age", "int", bounds=(0.0, 99.0)), grid=True)
    >>> condition(sqlglot.parse_one("age + 1 > 30"), lambda c: age, "WHERE").raw.sql()
    'CAST("p"."age" AS DOUBLE) + CAST(1 AS DOUBLE) > 30'
    """
    v = value(node, columns)
    if v.type != "bool":
        raise refuse(f"{where} {said(node)!r}", "a condition is needed (a comparison, IN, ...)")
    return v


class _Reader:
    def __init__(self, columns: Columns, aggregates: Aggregates | None) -> None:
        self.columns = columns
        self.aggregates = aggregates

    def read(self, node: exp.Expr) -> Value:
        if isinstance(node, exp.Paren):
            return self.read(node.this)
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            return _owned(self.columns(node))
        if isinstance(node, (exp.AggFunc, exp.Filter, exp.WithinGroup)):
            got = None if self.aggregates is None else self.aggregates(node)
            if got is None:
                raise refuse(
                    f"aggregate {said(node)!r} here",
                    "aggregates are released by the outer SELECT, or computed per unit in a "
                    "subquery in FROM grouped by the privacy unit",
                )
            return _owned(got)
        if isinstance(node, (exp.Subquery, exp.Select, exp.Exists)):
            raise refuse("subquery outside FROM", "only a subquery in FROM is read")
        reader = _READERS.get(type(node))
        if reader is None:
            raise refuse(f"{node.key.upper()} in an expression ({said(node)!r})", ALLOWED)
        return reader(self, node)

    def number(self, node: exp.Expr) -> Value:
        return as_number(self.read(node), node)

    # -- leaves -----------------------------------------------------------------------------

    def literal(self, node: exp.Expr) -> Value:
        assert isinstance(node, exp.Literal)
        if node.is_string:
            text = str(node.this)
            lit = literal(text)
            return Value(lit, lit.copy(), "category", None, (text,), False)
        frac = parse_exact("number", str(node.this))
        if abs(frac) > _DOUBLE_MAX:
            raise refuse(f"number {node.this[:40]}", "beyond the largest finite double")
        integral = frac.denominator == 1 and _INT64[0] <= frac.numerator <= _INT64[1]
        lit = literal(frac.numerator if integral else float(frac))
        v = float(frac)
        box = (math.nextafter(v, -math.inf), math.nextafter(v, math.inf))
        if float(frac) == frac:
            box = (v, v)
        return Value(lit, lit.copy(), "int" if integral else "float", box, None, False)

    def null(self, node: exp.Expr) -> Value:
        return Value(exp.Null(), exp.Null(), "null", None, None, True)

    def boolean(self, node: exp.Expr) -> Value:
        return Value(node.copy(), node.copy(), "bool", None, None, False)

    # -- arithmetic -------------------------------------------------------------------------

    def arithmetic(self, node: exp.Expr) -> Value:
        a, b = self.number(node.this), self.number(node.args["expression"])
        op = type(node)
        box = None
        why = a.why or b.why
        if a.box is not None and b.box is not None:
            box = _ARITHMETIC[op](a.box, b.box)
            if box is None:
                why = (
                    f"{said(node)}: the bounds of {said(node.args['expression'])} contain 0; "
                    "divide by GREATEST(value, c) with c > 0, or declare bounds excluding 0"
                )
        kind = "int" if a.type == b.type == "int" and op is not exp.Div else "float"
        raw_b, bounded_b = _double(b.raw), _paren(b.bounded)
        if op is exp.Div:
            # x / 0 is NULL on every engine (DuckDB would give ±inf, ANSI Spark an error: a
            # failure a stored value could cause).
            raw_b, bounded_b = _nonzero(raw_b), _nonzero(bounded_b)
        return Value(
            op(this=_double(a.raw), expression=raw_b),
            op(this=_paren(a.bounded), expression=bounded_b),
            kind,
            box,
            None,
            a.nullable or b.nullable,
            why=why,
        )

    def negative(self, node: exp.Expr) -> Value:
        a = self.number(node.this)
        box = None if a.box is None else boxes.neg(a.box)
        return _unary(a, lambda e: exp.Neg(this=_paren(e)), a.type, box)

    def monotone(self, node: exp.Expr) -> Value:
        extra = node.args.get("decimals") is not None or node.args.get("to") is not None
        if extra and not isinstance(node, exp.Round):
            raise refuse(f"{said(node)}", "FLOOR and CEIL take one argument")
        a = self.number(node.this)
        if isinstance(node, exp.Abs):
            box = None if a.box is None else boxes.absolute(a.box)
            return _unary(a, lambda e: exp.Abs(this=e), a.type, box)
        if isinstance(node, exp.Round):
            return _rounded(a, node.args.get("decimals"))
        fn = exp.Floor if isinstance(node, exp.Floor) else exp.Ceil
        op = boxes.floor if isinstance(node, exp.Floor) else boxes.ceil
        box = None if a.box is None else op(a.box)
        return _unary(a, lambda e: fn(this=e), "int", box)

    def extreme(self, node: exp.Expr) -> Value:
        args = [self.number(a) for a in [node.this, *node.expressions]]
        fn = type(node)
        kind = "int" if all(a.type == "int" for a in args) else "float"
        box = _extreme_box(fn is exp.Least, args)
        return Value(
            fn(this=args[0].raw, expressions=[a.raw for a in args[1:]]),
            fn(this=args[0].bounded, expressions=[a.bounded for a in args[1:]]),
            kind,
            box,
            None,
            all(a.nullable for a in args),
            why=next((a.why for a in args if a.why), ""),
        )

    def cast(self, node: exp.Expr) -> Value:
        target = node.args["to"].this.name.upper()
        a = self.read(node.this)
        if a.type == "bool":
            a = as_number(a, node.this)
        if target in _TEXT_TYPES:
            return _as_text(a)
        if target not in _INT_TYPES | _FLOAT_TYPES:
            raise refuse(f"CAST to {target}", "cast to int, float or text")
        kind = "int" if target in _INT_TYPES else "float"
        sql = "BIGINT" if kind == "int" else "DOUBLE"
        if not a.numeric:  # text read as a number: NULL where it is not one; no bounds
            raw = exp.TryCast(this=a.raw, to=exp.DataType.build(sql))
            why = f"{said(node)} reads text as a number: it has no declared bounds"
            return Value(raw, raw.copy(), kind, None, None, True, why=why)
        box = a.box
        if kind == "int" and box is not None:
            box = (float(math.floor(box[0])), float(math.ceil(box[1])))
        return Value(
            exp.TryCast(this=_double(a.raw), to=exp.DataType.build(sql)),
            exp.TryCast(this=_paren(a.bounded), to=exp.DataType.build(sql)),
            kind,
            box,
            None,
            True,
            why=a.why,
        )

    # -- choices ----------------------------------------------------------------------------

    def case(self, node: exp.Expr) -> Value:
        branches = node.args.get("ifs") or []
        subject = None if node.this is None else self.read(node.this)
        if subject is not None and subject.type == "bool":
            subject = as_number(subject, node.this)
        # CASE x WHEN v ...: x is read once and written once (a searched CASE would repeat
        # it in every branch); each v is compared with it as in x = v.
        tests = [self.read(b.this) for b in branches]
        simple = subject is not None
        if subject is None:
            tests = [conditions.truth_of(t, b.this) for t, b in zip(tests, branches, strict=True)]
        else:
            pairs = [conditions.comparable(subject, t, node) for t in tests]
            tests = [v for _, v in pairs]
            if any(x is not subject for x, _ in pairs):
                # A number literal compared with text is read as text: x = v per branch.
                tests = [conditions.compare_values(exp.EQ, _owned(x), v) for x, v in pairs]
                simple = False
        results = [_plain(self.read(b.args["true"]), node) for b in branches]
        default = node.args.get("default")
        other = self.read(default) if default is not None else self.null(exp.Null())
        other = _plain(other, node)
        merged = _unify([*results, other], node)

        def build(side: Callable[[Value], exp.Expr]) -> exp.Expr:
            ifs = [exp.If(this=side(c), true=side(r)) for c, r in zip(tests, results, strict=True)]
            this = exp.Paren(this=side(subject)) if simple and subject is not None else None
            return exp.Case(this=this, ifs=ifs, default=side(other))

        return _with(merged, build(_raw), build(_bounded))

    def coalesce(self, node: exp.Expr) -> Value:
        args = [_plain(self.read(a), node) for a in [node.this, *node.expressions]]
        merged = _unify(args, node)
        nullable = all(a.nullable for a in args)
        raw = exp.Coalesce(this=args[0].raw, expressions=[a.raw for a in args[1:]])
        bounded = exp.Coalesce(this=args[0].bounded, expressions=[a.bounded for a in args[1:]])
        out = _with(merged, raw, bounded)
        return Value(out.raw, out.bounded, out.type, out.box, out.categories, nullable, why=out.why)


_READERS: dict[type[exp.Expr], Callable[[_Reader, exp.Expr], Value]] = {
    exp.Literal: _Reader.literal,
    exp.Null: _Reader.null,
    exp.Boolean: _Reader.boolean,
    **{op: _Reader.arithmetic for op in _ARITHMETIC},
    exp.Neg: _Reader.negative,
    exp.Abs: _Reader.monotone,
    exp.Floor: _Reader.monotone,
    exp.Ceil: _Reader.monotone,
    exp.Round: _Reader.monotone,
    exp.Least: _Reader.extreme,
    exp.Greatest: _Reader.extreme,
    exp.Cast: _Reader.cast,
    exp.TryCast: _Reader.cast,
    exp.Case: _Reader.case,
    exp.Coalesce: _Reader.coalesce,
    **{op: conditions.compare for op in _COMPARISONS},
    exp.In: conditions.within,
    exp.Between: conditions.between,
    exp.Is: conditions.is_null,
    exp.Not: conditions.logical,
    exp.And: conditions.logical,
    exp.Or: conditions.logical,
}


# A value read here owns its trees (:func:`_owned`): each is used once, by the expression
# built over it, and never copied again. Copying at every level would cost the size of the
# subtree per level, the square of a deep expression's size.


def _owned(v: Value) -> Value:
    """``v`` with trees of its own: a column's or an aggregate's value (shared by every
    reference), or one more use of a value (CASE x WHEN ... read as x = v per branch)."""
    return replace(v, raw=v.raw.copy(), bounded=v.bounded.copy())


def _paren(e: exp.Expr) -> exp.Expr:
    return exp.Paren(this=e)


def _nonzero(e: exp.Expr) -> exp.Expr:
    return exp.Nullif(this=e, expression=literal(0))


def _double(e: exp.Expr) -> exp.Expr:
    return exp.cast(e, "DOUBLE", copy=False)


def _raw(v: Value) -> exp.Expr:
    return v.raw


def _bounded(v: Value) -> exp.Expr:
    return v.bounded


def _digits(node: exp.Expr | None) -> int:
    if node is None:
        return 0
    inner = node.this if isinstance(node, exp.Neg) else node
    if not isinstance(inner, exp.Literal) or inner.is_string or not str(inner.this).isdigit():
        raise refuse(f"ROUND digits {said(node)!r}", "an integer literal")
    return -int(inner.this) if isinstance(node, exp.Neg) else int(inner.this)


def _extreme_box(least: bool, args: Sequence[Value]) -> boxes.Box | None:
    """The bounds of LEAST (``least``) or GREATEST of ``args``; None if one is unbounded."""
    every = [a.box for a in args if a.box is not None]
    if len(every) != len(args):
        return None
    sure = [a.box for a in args if a.box is not None and not a.nullable]
    # LEAST and GREATEST skip NULLs: an argument that may be NULL may be left out,
    # so only the arguments that are never NULL tighten the far end.
    if least:
        high = boxes.least(*sure)[1] if sure else boxes.hull(*every)[1]
        return (boxes.least(*every)[0], high)
    low = boxes.greatest(*sure)[0] if sure else boxes.hull(*every)[0]
    return (low, boxes.greatest(*every)[1])


def _rounded(a: Value, decimals: exp.Expr | None) -> Value:
    """ROUND(a, decimals): an int when it rounds to a whole number or coarser."""
    digits = _digits(decimals)
    box = None if a.box is None else boxes.round_to(a.box, digits)
    kind = "int" if digits <= 0 else "float"
    dec = literal(digits)
    return _unary(a, lambda e: exp.Round(this=e, decimals=dec.copy()), kind, box)


def _as_text(a: Value) -> Value:
    """CAST(a AS text): categories where ``a`` has them (:func:`cast_categories`)."""
    raw = a.raw
    if a.type == "int":
        raw = exp.TryCast(this=raw, to=exp.DataType.build("BIGINT"))
    text = exp.cast(raw, "VARCHAR", copy=False)
    cats = cast_categories(a)
    return Value(text, text.copy(), "category" if cats else "text", None, cats, True)


def _unary(a: Value, fn: Callable[[exp.Expr], exp.Expr], kind: str, box: boxes.Box | None) -> Value:
    # In DOUBLE: -x and ABS(x) of the least BIGINT would overflow, an error a stored value
    # could cause.
    raw = fn(_double(a.raw))
    return Value(raw, fn(a.bounded), kind, box, None, a.nullable, why=a.why)


def _unify(values: Sequence[Value], text: Said) -> Value:
    """The type, bounds and categories of a value that is one of ``values`` (CASE branches,
    COALESCE arguments): the hull of their bounds (Moore 1966), the union of their
    categories; a NULL branch adds nothing but NULL."""
    real = [as_number(v, text) if v.type == "bool" else v for v in values if v.type != "null"]
    if not real:
        return Value(exp.Null(), exp.Null(), "null", None, None, True)
    if all(v.numeric for v in real):
        return _number_union(real)
    if all(v.type in STRING for v in real):
        return _text_union(real)
    raise refuse(f"{text!r}", "its branches mix numbers and text; CAST one of them")


def _number_union(real: Sequence[Value]) -> Value:
    """One of the numbers ``real``: the hull of their bounds, unbounded if one is."""
    kind = "int" if all(v.type == "int" for v in real) else "float"
    bounded = [v.box for v in real if v.box is not None]
    box = boxes.hull(*bounded) if len(bounded) == len(real) else None
    why = next((v.why for v in real if v.why), "")
    return Value(exp.Null(), exp.Null(), kind, box, None, True, why=why)


def _text_union(real: Sequence[Value]) -> Value:
    """One of the texts ``real``: the union of their categories, free text if one is."""
    cats: list[str] | None = []
    for v in real:
        if v.categories is None or cats is None:
            cats = None
        else:
            cats.extend(c for c in v.categories if c not in cats)
    kind = "text" if cats is None else "category"
    return Value(exp.Null(), exp.Null(), kind, None, None if cats is None else tuple(cats))


def _plain(v: Value, text: Said) -> Value:
    """A CASE result or COALESCE argument: a condition counts as 1 or 0."""
    return as_number(v, text) if v.type == "bool" else v


def _with(shape: Value, raw: exp.Expr, bounded: exp.Expr) -> Value:
    return Value(raw, bounded, shape.type, shape.box, shape.categories, True, why=shape.why)
