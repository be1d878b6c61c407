"""The one parser of user-typed numbers: bounded text first, exact fraction second.

Every number an analyst types (ε and δ on the CLI and over HTTP, SQL literals, a quantile's
level) reaches :func:`parse_exact` before any exact conversion. Converting text straight to a
:class:`~fractions.Fraction` costs time and memory in the size of the *exponent* ("1e-10000000"
is 13 characters and a ten-million-digit denominator), so the text is checked first, in time
linear in its (bounded) length: at most :data:`MAX_NUMBER_CHARS` ASCII characters in the plain
decimal grammar ``[+-]digits[.digits][e[+-]digits]`` (no ``_`` separators, no non-ASCII
digits, no ``inf``/``nan``, no hexadecimal), and a decimal exponent of magnitude at most
:data:`MAX_DECIMAL_EXPONENT` once normalised. Python numbers are checked the same way (bool is
not a number; floats must be finite and are read through their shortest repr, so ``0.1``
means exactly 1/10).

>>> parse_exact("epsilon", "0.1"), parse_exact("epsilon", 0.1), parse_exact("q", "-2.5e-1")
(Fraction(1, 10), Fraction(1, 10), Fraction(-1, 4))
>>> parse_exact("epsilon", "1e-10000000")
Traceback (most recent call last):
...
infodp.errors.ParameterError: epsilon must be a decimal number of at most 100 characters whose decimal exponent is within ±400; got '1e-10000000'.
"""  # noqa: E501

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

from infodp.errors import ParameterError

__all__ = ["MAX_DECIMAL_EXPONENT", "MAX_NUMBER_CHARS", "number_shape", "parse_exact"]

#: Longest number text accepted (digits, sign, point and exponent together).
MAX_NUMBER_CHARS = 100
#: Largest magnitude of the normalised decimal exponent (1e-400 and 1e400 are the extremes).
MAX_DECIMAL_EXPONENT = 400

_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def _allowed() -> str:
    return (
        f"a decimal number of at most {MAX_NUMBER_CHARS} characters whose decimal exponent is "
        f"within ±{MAX_DECIMAL_EXPONENT}"
    )


def number_shape(text: str) -> tuple[bool, int] | None:
    """(is_integer_text, normalised decimal exponent) of a number text, or None if refused.

    Linear in ``len(text)`` and never converts the digits: the exponent is the position of the
    leading significant digit plus the written exponent (whose own length is bounded first).

    >>> number_shape("12.5e3"), number_shape("0.000"), number_shape("1_0"), number_shape("١")
    ((False, 4), (False, 0), None, None)
    """
    if not isinstance(text, str) or len(text) > MAX_NUMBER_CHARS or not text.isascii():
        return None
    if _NUMBER.fullmatch(text) is None:
        return None
    body = text.lstrip("+-")
    mantissa, _, exp_text = body.lower().partition("e")
    written = 0
    if exp_text:
        digits = exp_text.lstrip("+-").lstrip("0")
        if len(digits) > 6:
            return None
        written = int(exp_text)
    whole, _, frac = mantissa.partition(".")
    stripped = whole.lstrip("0")
    if stripped:
        lead = len(stripped) - 1
    else:
        nz = len(frac) - len(frac.lstrip("0"))
        lead = -(nz + 1) if frac.strip("0") else 0
    exponent = lead + written if (stripped or frac.strip("0")) else 0
    is_int = not exp_text and "." not in mantissa
    return is_int, exponent


def parse_exact(name: str, value: Any) -> Fraction:
    """``value`` (text, int, finite float, Fraction or Decimal) as an exact Fraction.

    Refusals raise :class:`~infodp.errors.ParameterError` naming ``name``, the value (cut to
    a readable length) and the grammar, in time bounded by :data:`MAX_NUMBER_CHARS`.

    >>> parse_exact("x", 3), parse_exact("x", "+7"), parse_exact("x", "1E2")
    (Fraction(3, 1), Fraction(7, 1), Fraction(100, 1))
    >>> parse_exact("epsilon", True)
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: epsilon must be a number (true/false is not a number); got True.
    """
    if isinstance(value, bool):
        raise ParameterError(name, value, "a number (true/false is not a number)")
    if isinstance(value, Fraction):
        return _check_fraction(name, value)
    if isinstance(value, int):
        if value.bit_length() > 4 * MAX_NUMBER_CHARS:
            raise ParameterError(name, f"<{value.bit_length()}-bit integer>", _allowed())
        return _check_fraction(name, Fraction(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ParameterError(name, value, "a finite number")
        value = repr(value)
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise ParameterError(name, str(value), "a finite number")
        value = str(value)
    if not isinstance(value, str):
        raise ParameterError(name, _shown(value), "a number or a decimal string")
    text = value.strip()
    shape = number_shape(text)
    if shape is None or abs(shape[1]) > MAX_DECIMAL_EXPONENT:
        raise ParameterError(name, _shown(value), _allowed())
    return Fraction(Decimal(text))


def _check_fraction(name: str, frac: Fraction) -> Fraction:
    limit = 4 * MAX_NUMBER_CHARS
    if frac.numerator.bit_length() > limit or frac.denominator.bit_length() > limit:
        raise ParameterError(name, "<a fraction with very large terms>", _allowed())
    return frac


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."
