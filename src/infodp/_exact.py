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
import sys
from decimal import Decimal
from fractions import Fraction
from typing import Any

from infodp.errors import ParameterError

__all__ = [
    "MAX_DECIMAL_EXPONENT",
    "MAX_NUMBER_CHARS",
    "float_down",
    "float_up",
    "format_fraction",
    "number_shape",
    "parse_exact",
    "parse_ratio",
    "split_share",
]

#: Longest number text accepted (digits, sign, point and exponent together).
MAX_NUMBER_CHARS = 100
#: Largest magnitude of the normalised decimal exponent (1e-400 and 1e400 are the extremes).
MAX_DECIMAL_EXPONENT = 400

_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


#: What a number looks like, for text that is not one.
_NOT_A_NUMBER = "a number written with digits, such as 0.5, 3 or 1e-6"


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
    >>> parse_exact("epsilon", "abc")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: epsilon must be a number written with digits, such as 0.5, ...
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
    if shape is None and _NUMBER.fullmatch(text) is None:
        # Not a number at all ("abc", "1,5", "inf"): say what a number looks like; the
        # exponent limit only matters for text that is a number.
        raise ParameterError(name, _shown(value), _NOT_A_NUMBER)
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


_RATIO = re.compile(r"[0-9]{1,400}/[1-9][0-9]{0,399}", re.ASCII)


def parse_ratio(name: str, value: Any) -> Fraction:
    """An exact value as written back by infodp: a decimal (:func:`parse_exact`) or "p/q".

    Stored budgets and totals that are not finite decimals (a third, say) are kept as "p/q"
    text; this reads them back with the same bounds on length as :func:`parse_exact`.

    >>> parse_ratio("epsilon", "1/3"), parse_ratio("epsilon", "0.25"), parse_ratio("x", 2)
    (Fraction(1, 3), Fraction(1, 4), Fraction(2, 1))
    """
    if isinstance(value, str) and _RATIO.fullmatch(value.strip()):
        return Fraction(value.strip())
    return parse_exact(name, value)


def format_fraction(x: Fraction) -> str:
    """A fraction as a short decimal when exact, else "p/q" with its decimal value.

    >>> format_fraction(Fraction(1, 10)), format_fraction(Fraction(1, 3))
    ('0.1', '1/3 (≈0.333333)')
    """
    if _is_decimal(x.denominator):
        return _decimal(x)
    return f"{x.numerator}/{x.denominator} (≈{float(x):.6g})"


def _is_decimal(d: int) -> bool:
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d == 1


def _decimal(x: Fraction) -> str:
    # Exact decimal expansion of a fraction whose denominator is 2^a 5^b. In lowest terms,
    # x·10^k is an integer exactly when 2^a and 5^b divide 10^k: k = max(a, b) digits.
    d = x.denominator
    twos = (d & -d).bit_length() - 1
    fives, rest = 0, d >> twos
    while rest % 5 == 0:
        rest //= 5
        fives += 1
    digits = max(twos, fives)
    if digits == 0:
        return str(x.numerator)
    scaled = abs(x.numerator) * 10**digits // d
    text = str(scaled).rjust(digits + 1, "0")
    sign = "-" if x < 0 else ""
    return f"{sign}{text[:-digits]}.{text[-digits:]}".rstrip("0").rstrip(".")


def float_up(x: Fraction) -> float:
    """The smallest float ≥ the exact rational ``x``: ε and δ must never round down.

    >>> float_up(Fraction(1, 10)) >= Fraction(1, 10), float_up(Fraction(10**400))
    (True, inf)
    """
    try:
        f = float(x)
    except OverflowError:
        return math.inf if x > 0 else -sys.float_info.max
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def float_down(x: Fraction) -> float:
    """The largest float ≤ the exact rational ``x`` (a remaining budget never rounds up).

    >>> float_down(Fraction(1, 10)) <= Fraction(1, 10), float_down(-Fraction(10**400))
    (True, -inf)
    """
    try:
        f = float(x)
    except OverflowError:
        return sys.float_info.max if x > 0 else -math.inf
    return f if Fraction(f) <= x else math.nextafter(f, -math.inf)


def split_share(whole: Fraction, parts: int) -> Fraction:
    """The share of each of ``parts`` equal parts of a non-negative budget ``whole``: a float
    (an exact dyadic fraction) whose ``parts`` copies sum, exactly and in floats, to at most
    ``whole``.

    A share of ε or δ reaches the mechanisms and their privacy profiles as a float; an exact
    share such as 1/3 would be rounded up there, and three of them then add to more than the
    whole. A float share is carried through every later rounding unchanged (Δ/scale ≤ share
    rounds up to at most the share), so the parts never exceed what the query is charged.

    >>> s = split_share(Fraction(1), 3)
    >>> s == Fraction(float(s)), 3 * s <= 1, sum([float(s)] * 3) <= 1
    (True, True, True)
    >>> split_share(Fraction(1, 2), 2), split_share(Fraction(0), 5)
    (Fraction(1, 4), Fraction(0, 1))
    """
    if parts < 1 or whole < 0:
        raise ParameterError("parts", parts, "a positive number of parts of a budget >= 0")
    share = float_down(whole / parts)
    while share > 0 and not _sums_within([share] * parts, whole):
        share = math.nextafter(share, 0.0)
    return Fraction(share)


def _sums_within(values: list[float], whole: Fraction) -> bool:
    """Whether ``values`` add to at most ``whole`` exactly, left to right and correctly rounded."""
    running = 0.0
    for v in values:
        running += v
    return (
        _exact_sum(values) <= whole
        and Fraction(running) <= whole
        and Fraction(math.fsum(values)) <= whole
    )


def _exact_sum(values: list[float]) -> Fraction:
    """The exact rational sum of floats, on integers: each float is n/2^e (its integer ratio has
    a power-of-two denominator), so over the largest denominator the sum is one integer sum —
    the same Fraction as adding Fraction(v) one by one, without a gcd per term.

    >>> _exact_sum([0.1, 0.2]) == Fraction(0.1) + Fraction(0.2), _exact_sum([])
    (True, Fraction(0, 1))
    """
    ratios = [v.as_integer_ratio() for v in values]
    if not ratios:
        return Fraction(0)
    den = max(d for _, d in ratios)
    return Fraction(sum(n * (den // d) for n, d in ratios), den)
