"""Expressions over released values and their evaluation with SQL's NULL semantics.

A :class:`Term` is a node of an expression the post-processing step computes from the
released table (never from the data): a released column, a constant, arithmetic, a function, a
comparison or a logical connective. Evaluation follows SQL: NULL (None) propagates through
arithmetic and functions, comparisons with NULL are unknown, AND/OR/NOT are three-valued, and a
division by zero is NULL.

>>> t = Term("/", (Term("ref", value=0), Term("ref", value=1)))
>>> evaluate(t, [10, 4]), evaluate(t, [10, 0]), evaluate(t, [None, 4])
(2.5, None, None)
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "ARITHMETIC",
    "CASTS",
    "COMPARISONS",
    "FUNCTIONS",
    "Term",
    "Value",
    "as_number",
    "evaluate",
]

#: A released value: a group key (text or integer), a noisy number, or NULL.
Value = float | int | str | None
#: What a term evaluates to: a value, or a truth value of a predicate.
Result = Value | bool
Row = Sequence[Value]

#: Arithmetic on released values (division in floating point; by zero: NULL).
ARITHMETIC: dict[str, Callable[[float, float], float | None]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": lambda x, y: None if y == 0 else x / y,
}
#: Comparisons (None when either side is NULL or the two do not compare).
COMPARISONS: dict[str, Callable[[object, object], bool]] = {
    "=": operator.eq,
    "<>": operator.ne,
    "<": lambda a, b: a < b,  # type: ignore[operator]
    "<=": lambda a, b: a <= b,  # type: ignore[operator]
    ">": lambda a, b: a > b,  # type: ignore[operator]
    ">=": lambda a, b: a >= b,  # type: ignore[operator]
}


def _round(args: list[float]) -> float:
    return round(args[0], int(args[1]) if len(args) > 1 else 0)


def _power(args: list[float]) -> float | None:
    """x^y as SQL's POWER, or NULL where it has no real value or overflows."""
    x, y = args[0], args[1]
    if x == 0 and y < 0:
        return None
    if x < 0 and not float(y).is_integer():
        return None
    try:
        return float(math.pow(x, y))
    except (OverflowError, ValueError):
        return None


def _log(f: Callable[[float], float]) -> Callable[[list[float]], float | None]:
    return lambda a: f(a[0]) if a[0] > 0 else None


def _exp(args: list[float]) -> float | None:
    try:
        return math.exp(args[0])
    except OverflowError:
        return None


#: Functions of released numbers (every argument non-NULL; COALESCE is handled apart).
FUNCTIONS: dict[str, Callable[[list[float]], float | None]] = {
    "ABS": lambda a: abs(a[0]),
    "ROUND": _round,
    "FLOOR": lambda a: math.floor(a[0]),
    "CEIL": lambda a: math.ceil(a[0]),
    "SQRT": lambda a: math.sqrt(a[0]) if a[0] >= 0 else None,
    "LEAST": min,
    "GREATEST": max,
    "POWER": _power,
    "EXP": _exp,
    "LN": _log(math.log),
    "LOG10": _log(math.log10),
    "SIGN": lambda a: (a[0] > 0) - (a[0] < 0),
}
#: CAST targets on released values: a group key (released as text) read as a number, a
#: number as text, as SQL's CAST does (to an integer: rounded half away from zero, as DuckDB).
CASTS = ("int", "float", "text")


@dataclass(frozen=True, slots=True)
class Term:
    """A node of a post-processing expression over the inner query's released columns.

    ``op``: ``ref`` (released column ``value``), ``const`` (``value``), ``+ - * /``, ``neg``,
    a name of :data:`FUNCTIONS` or ``COALESCE``, ``cast`` (to ``value``, one of
    :data:`CASTS`), a comparison ``= <> < <= > >=``, ``and``,
    ``or``, ``not``, ``is null``, ``between``, ``in``; ``args`` are its operands.
    """

    op: str
    args: tuple[Term, ...] = ()
    value: Value = None

    def refs(self) -> frozenset[int]:
        """The released columns this term reads.

        >>> Term("+", (Term("ref", value=2), Term("const", value=1))).refs()
        frozenset({2})
        """
        if self.op == "ref":
            return frozenset({int(self.value or 0)})
        return frozenset().union(*(a.refs() for a in self.args))


def as_number(v: Result) -> float | int | None:
    """A released value as a number: numbers as they are, a numeric group key (released as
    text) as its number, anything else None.

    >>> as_number("42"), as_number("north"), as_number(2.5)
    (42, None, 2.5)
    """
    if isinstance(v, str):
        for kind in (int, float):
            try:
                return kind(v)
            except ValueError:
                continue
        return None
    return None if v is None else v


def _numeric(v: Result) -> float | int | None:
    return None if isinstance(v, str) else v


def _cast(term: Term, row: Row) -> Result:
    v = evaluate(term.args[0], row)
    if v is None:
        return None
    if term.value == "text":
        return str(int(v)) if isinstance(v, bool) else str(v)
    number = as_number(v)
    if number is None or (isinstance(number, float) and not math.isfinite(number)):
        return None
    if term.value == "float":
        return float(number)
    whole = math.floor(abs(number) + 0.5)
    return int(whole if number >= 0 else -whole)


def _ref(term: Term, row: Row) -> Result:
    return row[int(term.value or 0)]


def _const(term: Term, row: Row) -> Result:
    return term.value


def _logic(term: Term, row: Row) -> bool | None:
    values = [evaluate(a, row) for a in term.args]
    if term.op == "not":
        return None if values[0] is None else not values[0]
    decisive = term.op == "or"  # True decides an OR, False an AND
    if any(v is decisive for v in values):
        return decisive
    return None if any(v is None for v in values) else not decisive


def _compare(term: Term, row: Row) -> bool | None:
    a, b = (evaluate(x, row) for x in term.args)
    if isinstance(a, str) != isinstance(b, str):
        # A released group key is text; an int key compares with a number as that number.
        a, b = as_number(a), as_number(b)
    if a is None or b is None:
        return None
    return COMPARISONS[term.op](a, b)


def _is_null(term: Term, row: Row) -> bool:
    return evaluate(term.args[0], row) is None


def _between(term: Term, row: Row) -> bool | None:
    low, high = Term(">=", term.args[:2]), Term("<=", (term.args[0], term.args[2]))
    return _logic(Term("and", (low, high)), row)


def _in(term: Term, row: Row) -> bool | None:
    found = [_compare(Term("=", (term.args[0], v)), row) for v in term.args[1:]]
    if any(f is True for f in found):
        return True
    return None if None in found else False


def _arith(term: Term, row: Row) -> Result:
    if term.op == "neg":
        x = _numeric(evaluate(term.args[0], row))
        return None if x is None else -x
    x, y = (_numeric(evaluate(a, row)) for a in term.args)
    return None if x is None or y is None else ARITHMETIC[term.op](x, y)


def _function(term: Term, row: Row) -> Result:
    values = [evaluate(a, row) for a in term.args]
    if term.op == "COALESCE":
        return next((v for v in values if v is not None), None)
    numbers = [_numeric(v) for v in values]
    if any(n is None for n in numbers):
        return None
    return FUNCTIONS[term.op]([n for n in numbers if n is not None])


_EVALUATORS: dict[str, Callable[[Term, Row], Result]] = {
    "ref": _ref,
    "const": _const,
    "and": _logic,
    "or": _logic,
    "not": _logic,
    "is null": _is_null,
    "between": _between,
    "in": _in,
    "neg": _arith,
    "cast": _cast,
    **{op: _compare for op in COMPARISONS},
    **{op: _arith for op in ARITHMETIC},
    **{name: _function for name in [*FUNCTIONS, "COALESCE"]},
}


def evaluate(term: Term, row: Row) -> Result:
    """The value of ``term`` on one released row (SQL NULL semantics)."""
    return _EVALUATORS[term.op](term, row)
