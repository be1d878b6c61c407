"""Intervals for values computed from released values: interval arithmetic (Moore 1966,
:mod:`infodp.curator.relations.boxes`).

:func:`enclose` returns a box holding a term's value whenever every released input lies in its
own interval. Each input's interval holds with probability at least 1 − β, so by Boole's
inequality the box holds with probability at least 1 − k·β for k noisy inputs; the answer says
so. No box is formed (None) when a denominator's interval contains 0, when an input has no
numeric interval (a quantile's rank error) or for a predicate.

>>> from infodp.curator.sql.post.terms import Term
>>> ratio = Term("/", (Term("ref", value=0), Term("ref", value=1)))
>>> enclose(ratio, [100, 20], [[90, 110], [18, 22]])
(4.090909090909091, 6.111111111111112)
>>> enclose(ratio, [100, 2], [[90, 110], [-1, 5]]) is None
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeAlias

from infodp.curator.relations import boxes
from infodp.curator.relations.boxes import Box
from infodp.curator.sql.post.terms import Term, Value, as_number

__all__ = ["Box", "Interval", "enclose"]

#: A released interval as the answer carries it: [low, high], a quantile's rank error, or None
#: (a released group key, exact).
Interval: TypeAlias = Sequence[float] | Mapping[str, object] | None


def _ref(term: Term, values: Sequence[Value], intervals: Sequence[Interval]) -> Box | None:
    i = int(term.value or 0)
    got = intervals[i]
    if got is None:  # a released group key: exact
        v = as_number(values[i])
        return None if v is None else (float(v), float(v))
    if isinstance(got, list) and len(got) == 2:
        return float(got[0]), float(got[1])
    return None


def _const(term: Term, values: Sequence[Value], intervals: Sequence[Interval]) -> Box | None:
    v = as_number(term.value)
    return None if v is None else (float(v), float(v))


#: Operations on boxes (:mod:`infodp.curator.relations.boxes`): binary ones take two boxes, the
#: others
#: one.
_BINARY: dict[str, Callable[[Box, Box], Box | None]] = {
    "+": boxes.add,
    "-": boxes.sub,
    "*": boxes.mul,
    "/": boxes.div,
}
_UNARY: dict[str, Callable[[Box], Box | None]] = {
    "neg": boxes.neg,
    "ABS": boxes.absolute,
    "SQRT": boxes.sqrt,
    "FLOOR": boxes.floor,
    "CEIL": boxes.ceil,
}


def _operation(term: Term, values: Sequence[Value], intervals: Sequence[Interval]) -> Box | None:
    inner = [enclose(a, values, intervals) for a in term.args]
    if any(b is None for b in inner):
        return None
    args = [b for b in inner if b is not None]
    if term.op in _BINARY:
        return _BINARY[term.op](args[0], args[1])
    if term.op in _UNARY:
        return _UNARY[term.op](args[0])
    if term.op == "POWER":
        return _power(args[0], args[1])
    if term.op == "cast":
        if term.value == "text":
            return None
        return args[0] if term.value == "float" else boxes.round_to(args[0], 0)
    if term.op == "ROUND":
        return boxes.round_to(args[0], int(args[1][0]) if len(args) > 1 else 0)
    return (boxes.least if term.op == "LEAST" else boxes.greatest)(*args)


def _power(base: Box, exponent: Box) -> Box | None:
    """x^n for a whole exponent 0 <= n <= 64 as n - 1 products (each an enclosure; an even
    power is at least 0), else None."""
    n = exponent[0]
    if exponent[0] != exponent[1] or not float(n).is_integer() or not 0 <= n <= 64:
        return None
    box: Box = (1.0, 1.0)
    for _ in range(int(n)):
        box = boxes.mul(box, base)
    return (max(box[0], 0.0), box[1]) if int(n) % 2 == 0 else box


_ENCLOSERS: dict[str, Callable[[Term, Sequence[Value], Sequence[Interval]], Box | None]] = {
    "ref": _ref,
    "const": _const,
    **{op: _operation for op in [*_BINARY, *_UNARY, "ROUND", "LEAST", "GREATEST", "POWER", "cast"]},
}


def enclose(term: Term, values: Sequence[Value], intervals: Sequence[Interval]) -> Box | None:
    """A box holding ``term``'s value whenever each input lies in its interval, or None."""
    enclose_one = _ENCLOSERS.get(term.op)
    return None if enclose_one is None else enclose_one(term, values, intervals)
