"""The bounded exact-number parser (infodp._exact), checked against Python's own parsers."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infodp._exact import (
    MAX_DECIMAL_EXPONENT,
    MAX_NUMBER_CHARS,
    float_down,
    float_up,
    number_shape,
    parse_exact,
)
from infodp.errors import ParameterError


@st.composite
def decimal_texts(draw: st.DrawFn) -> str:
    sign = draw(st.sampled_from(["", "-", "+"]))
    whole = draw(st.text("0123456789", max_size=20))
    frac = draw(st.none() | st.text("0123456789", max_size=20))
    if not whole and not frac:
        whole = "0"
    text = sign + whole + ("" if frac is None else "." + frac)
    if draw(st.booleans()):
        text += draw(st.sampled_from(["e", "E"])) + str(draw(st.integers(-300, 300)))
    return text


@given(decimal_texts())
def test_agrees_with_fraction_and_decimal(text: str) -> None:
    # Two independent readings of the same decimal text: Fraction's own string parser and
    # Decimal; the exponent is Decimal's adjusted() (position of the leading digit).
    value = parse_exact("x", text)
    assert value == Fraction(text) == Fraction(Decimal(text))
    shape = number_shape(text)
    assert shape is not None
    if value != 0:
        assert shape[1] == Decimal(text).adjusted()


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_floats_are_read_through_their_shortest_repr(x: float) -> None:
    assert parse_exact("x", x) == Fraction(repr(x))


@pytest.mark.parametrize(
    "value",
    [
        "1e-10000000",
        "1e10000000",
        "1e" + "9" * 50,
        f"1e{MAX_DECIMAL_EXPONENT + 1}",
        f"0.{'0' * MAX_DECIMAL_EXPONENT}1",
        "9" * (MAX_NUMBER_CHARS + 1),
        "0_1",
        "\u0661",
        "\uff11",
        "inf",
        "nan",
        "0x10",
        "1e",
        ".",
        "",
        "1/2",
        True,
        False,
        float("inf"),
        float("nan"),
        Decimal("NaN"),
        2 ** (8 * MAX_NUMBER_CHARS),
        None,
        [1],
    ],
)
def test_refusals_name_the_argument(value: object) -> None:
    with pytest.raises(ParameterError, match=r"^epsilon must be"):
        parse_exact("epsilon", value)


def test_extremes_inside_the_bounds_are_exact() -> None:
    assert parse_exact("x", f"1e{MAX_DECIMAL_EXPONENT}") == 10**MAX_DECIMAL_EXPONENT
    assert parse_exact("x", f"1e-{MAX_DECIMAL_EXPONENT}") == Fraction(1, 10**MAX_DECIMAL_EXPONENT)
    assert parse_exact("x", " 0.25 ") == Fraction(1, 4)
    assert parse_exact("x", Decimal("2.5")) == Fraction(5, 2)
    assert parse_exact("x", Fraction(1, 3)) == Fraction(1, 3)


@given(st.fractions(max_denominator=10**30) | st.integers(-(10**400), 10**400).map(Fraction))
def test_float_up_and_down_are_the_tightest_floats_on_each_side(x: Fraction) -> None:
    # Directed rounding of an exact rational (IEEE 754-2008 §4.3.2, roundTowardPositive and
    # roundTowardNegative), checked by exact comparison with the neighbouring floats.
    up, down = float_up(x), float_down(x)
    assert Fraction(up) >= x if math.isfinite(up) else up == math.inf and x > 0
    assert Fraction(down) <= x if math.isfinite(down) else down == -math.inf and x < 0
    if math.isfinite(up):
        below = math.nextafter(up, -math.inf)
        assert below == -math.inf or Fraction(below) < x
    if math.isfinite(down):
        above = math.nextafter(down, math.inf)
        assert above == math.inf or Fraction(above) > x


@pytest.mark.parametrize("text", ["abc", "1,5", "0.5x", "inf", "nan", "", "--1", "1_0"])
def test_text_that_is_not_a_number_is_told_what_a_number_looks_like(text: str) -> None:
    # The exponent bound is about numbers; "abc" is not one, and the message says so.
    with pytest.raises(ParameterError) as err:
        parse_exact("epsilon", text)
    message = str(err.value)
    assert "such as 0.5" in message
    assert "exponent" not in message


@pytest.mark.slow
def test_cli_epsilon_abc_names_numbers_not_exponents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from _server_harness import build_store
    from infodp.cli import main

    db, _ = build_store(tmp_path, [("a", "people", 1)], rows=10)
    sql = "SELECT COUNT(*) FROM people"
    status = main(["query", "--db", db, "--analyst", "a", "--epsilon", "abc", sql])
    err = capsys.readouterr().err
    assert status == 2
    assert "number written with digits" in err and "exponent" not in err
