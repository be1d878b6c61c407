"""Interval arithmetic (infodp.curator.relations.boxes): the inclusion property of Moore 1966 (ch.
2):
for inputs in their boxes, every operation's value lies in the result's box, checked on
exact rationals so that float rounding cannot hide a box that is too narrow."""

from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from infodp.curator.relations import boxes

_finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@st.composite
def box_and_point(draw: st.DrawFn) -> tuple[boxes.Box, float]:
    a, b = sorted((draw(_finite), draw(_finite)))
    t = draw(st.floats(0, 1))
    x = min(max(a + (b - a) * t, a), b)
    return (a, b), x


def _inside(box: boxes.Box | None, value: Fraction) -> bool:
    assert box is not None
    return Fraction(box[0]) <= value <= Fraction(box[1])


@given(box_and_point(), box_and_point())
def test_arithmetic_encloses_the_exact_value(p: tuple, q: tuple) -> None:
    (a, x), (b, y) = p, q
    fx, fy = Fraction(x), Fraction(y)
    assert _inside(boxes.add(a, b), fx + fy)
    assert _inside(boxes.sub(a, b), fx - fy)
    assert _inside(boxes.mul(a, b), fx * fy)
    quotient = boxes.div(a, b)
    if b[0] <= 0 <= b[1]:
        assert quotient is None  # a denominator that may be 0: no box (Moore 1966, eq. 2.3)
    else:
        assert _inside(quotient, fx / fy)


@given(box_and_point(), st.integers(-3, 3))
def test_monotone_functions_enclose_the_value(p: tuple, digits: int) -> None:
    a, x = p
    assert _inside(boxes.neg(a), -Fraction(x))
    assert _inside(boxes.absolute(a), abs(Fraction(x)))
    assert _inside(boxes.floor(a), Fraction(math.floor(x)))
    assert _inside(boxes.ceil(a), Fraction(math.ceil(x)))
    # DuckDB rounds halves away from zero, Python to even: the box holds both.
    s = Fraction(10) ** digits
    scaled = Fraction(x) * s
    for r in (math.floor(scaled), math.ceil(scaled)):
        if abs(scaled - r) <= Fraction(1, 2):
            assert _inside(boxes.round_to(a, digits), r / s)
    if a[0] >= 0:
        root = boxes.sqrt(a)
        assert root is not None and root[0] <= math.sqrt(x) <= root[1]


@given(box_and_point(), box_and_point(), st.integers(0, 50))
def test_choices_and_sums_enclose_the_value(p: tuple, q: tuple, rows: int) -> None:
    (a, x), (b, y) = p, q
    assert _inside(boxes.least(a, b), Fraction(min(x, y)))
    assert _inside(boxes.greatest(a, b), Fraction(max(x, y)))
    assert _inside(boxes.hull(a, b), Fraction(x)) and _inside(boxes.hull(a, b), Fraction(y))
    # any k ≤ rows values of a sum into sum_of(a, rows) (McSherry 2009, §4)
    for k in (0, rows // 2, rows):
        assert _inside(boxes.sum_of(a, rows), k * Fraction(x))


def test_sum_of_per_unit_rows_is_the_closed_form() -> None:
    # 20 visits of cost in [0, 5000]: [0, 20·5000]; signed bounds [−3, 2] over 4 rows.
    assert boxes.sum_of((0.0, 5000.0), 20) == (0.0, 100_000.0)
    assert boxes.sum_of((-3.0, 2.0), 4) == (-12.0, 8.0)


def test_endpoints_round_outward() -> None:
    low, high = boxes.div((1.0, 1.0), (3.0, 3.0)) or (0.0, 0.0)
    assert Fraction(low) < Fraction(1, 3) < Fraction(high)
    assert boxes.add((0.1, 0.1), (0.2, 0.2))[1] >= 0.3
