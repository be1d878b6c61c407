"""Interval arithmetic on closed boxes [low, high] (Moore 1966), rounded outward.

One copy of the box operations for everything that bounds a computed value: the derived
columns of a query (:mod:`infodp.curator.relations`) get their declared bounds from their
inputs' bounds, and post-processed released values (:mod:`infodp.curator.sql.post.enclosure`)
their intervals from their inputs' intervals. The law every operation keeps (Moore 1966,
*Interval Analysis*, ch. 2, the inclusion property): if each input lies in its box, the result
lies in the result's box. Endpoints are computed exactly (as fractions of the float inputs)
and rounded outward to floats, so floating-point rounding never makes a box too narrow.

>>> add((0.0, 120.0), (1.0, 2.0))
(1.0, 122.0)
>>> mul((-1.0, 2.0), (3.0, 4.0))
(-4.0, 8.0)
>>> div((1.0, 2.0), (-1.0, 1.0)) is None
True
>>> third = div((1.0, 1.0), (3.0, 3.0))
>>> Fraction(third[0]) < Fraction(1, 3) < Fraction(third[1])
True
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = [
    "Box",
    "absolute",
    "add",
    "ceil",
    "div",
    "floor",
    "greatest",
    "hull",
    "least",
    "mul",
    "neg",
    "point",
    "round_to",
    "sqrt",
    "sub",
    "sum_of",
]

#: A closed interval [low, high] (low ≤ high).
Box = tuple[float, float]


def _down(q: Fraction) -> float:
    """The largest float ≤ q (−inf beyond the float range)."""
    try:
        f = float(q)
    except OverflowError:
        return -math.inf if q < 0 else math.nextafter(math.inf, 0.0)
    return math.nextafter(f, -math.inf) if Fraction(f) > q else f


def _up(q: Fraction) -> float:
    """The smallest float ≥ q (+inf beyond the float range)."""
    try:
        f = float(q)
    except OverflowError:
        return math.inf if q > 0 else math.nextafter(-math.inf, 0.0)
    return math.nextafter(f, math.inf) if Fraction(f) < q else f


def _exact(a: Box) -> tuple[Fraction, Fraction] | None:
    """The endpoints as exact fractions (None when one is infinite or NaN)."""
    if not all(math.isfinite(x) for x in a):
        return None
    return Fraction(a[0]), Fraction(a[1])


def _outward(values: list[Fraction]) -> Box:
    return _down(min(values)), _up(max(values))


def point(value: float) -> Box:
    """The box of one number.

    >>> point(3)
    (3.0, 3.0)
    """
    return float(value), float(value)


def add(a: Box, b: Box) -> Box:
    """[a0 + b0, a1 + b1] (Moore 1966, eq. 2.3)."""
    x, y = _exact(a), _exact(b)
    if x is None or y is None:
        return a[0] + b[0], a[1] + b[1]
    return _down(x[0] + y[0]), _up(x[1] + y[1])


def sub(a: Box, b: Box) -> Box:
    """[a0 − b1, a1 − b0] (Moore 1966, eq. 2.3)."""
    return add(a, neg(b))


def mul(a: Box, b: Box) -> Box:
    """The least and greatest of the four endpoint products (Moore 1966, eq. 2.3)."""
    x, y = _exact(a), _exact(b)
    if x is None or y is None:
        ends = [p * q for p in a for q in b if not math.isnan(p * q)]
        return min(ends, default=-math.inf), max(ends, default=math.inf)
    return _outward([p * q for p in x for q in y])


def div(a: Box, b: Box) -> Box | None:
    """a · [1/b1, 1/b0], or None when b contains 0 (no finite box; Moore 1966, eq. 2.3)."""
    if b[0] <= 0 <= b[1]:
        return None
    x, y = _exact(a), _exact(b)
    if x is None or y is None:
        return mul(a, (1.0 / b[1], 1.0 / b[0]))
    return _outward([p / q for p in x for q in y])


def neg(a: Box) -> Box:
    """[−a1, −a0]."""
    return -a[1], -a[0]


def absolute(a: Box) -> Box:
    """|x| for x in a: 0 is the least value when a holds it."""
    low = 0.0 if a[0] <= 0 <= a[1] else min(abs(a[0]), abs(a[1]))
    return low, max(abs(a[0]), abs(a[1]))


def sqrt(a: Box) -> Box | None:
    """√x for x in a (None when a holds a negative number)."""
    if a[0] < 0:
        return None
    low, high = math.sqrt(a[0]), math.sqrt(a[1])
    return math.nextafter(low, -math.inf) if low > 0 else 0.0, math.nextafter(high, math.inf)


def floor(a: Box) -> Box:
    """FLOOR is monotone: its box is the endpoints' floors."""
    return float(math.floor(a[0])), float(math.floor(a[1]))


def ceil(a: Box) -> Box:
    """CEIL is monotone: its box is the endpoints' ceilings."""
    return float(math.ceil(a[0])), float(math.ceil(a[1]))


def round_to(a: Box, digits: int = 0) -> Box:
    """ROUND(x, digits) for x in a, whichever way halves are rounded: between the low end
    rounded down and the high end rounded up at that many decimal digits.

    >>> round_to((0.25, 1.75))
    (0.0, 2.0)
    """
    x = _exact(a)
    if x is None:
        return a
    s = Fraction(10) ** digits
    return _down(Fraction(math.floor(x[0] * s)) / s), _up(Fraction(math.ceil(x[1] * s)) / s)


def least(*boxes: Box) -> Box:
    """LEAST of values each in its box: [min of lows, min of highs]."""
    return min(b[0] for b in boxes), min(b[1] for b in boxes)


def greatest(*boxes: Box) -> Box:
    """GREATEST of values each in its box: [max of lows, max of highs]."""
    return max(b[0] for b in boxes), max(b[1] for b in boxes)


def hull(*boxes: Box) -> Box:
    """The smallest box holding every box (a value that is one of several: CASE, COALESCE).

    >>> hull((0.0, 1.0), (5.0, 6.0))
    (0.0, 6.0)
    """
    return min(b[0] for b in boxes), max(b[1] for b in boxes)


def sum_of(a: Box, rows: int) -> Box:
    """The sum of at most ``rows`` values each in a (and of none, 0):
    [rows · min(a0, 0), rows · max(a1, 0)] (McSherry 2009, §4: a unit's rows bound its sum).

    >>> sum_of((0.0, 5000.0), 20)
    (0.0, 100000.0)
    """
    low, high = (min(a[0], 0.0), 0.0), (0.0, max(a[1], 0.0))
    return mul(hull(low, high), point(rows))
