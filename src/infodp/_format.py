"""The one number formatter for people: CLI output, reports and reprs all print through here.

One rule, so the same value always looks the same:

* integers (and floats of magnitude ≥ 1000 below 10^9) get thousands separators,
  ``200545 → 200,545``, ``155495.9 → 155,496``;
* other finite numbers get ``digits`` significant digits without trailing zeros
  (``0.693147 → 0.6931``), in scientific notation below 10^-4 or from 10^9 up (``1e-06``,
  ``9e-07``, ``1.2e+10``);
* ``inf`` is ``∞``, ``None`` is ``—`` (or the ``missing`` text the caller gives).

JSON output never goes through here: it carries the full-precision numbers.

>>> [format_number(v) for v in (200545, 155495.9, 1e4, 0.000001, 9e-07, 0.6931471, float("inf"))]
['200,545', '155,496', '10,000', '1e-06', '9e-07', '0.6931', '∞']
>>> format_interval(1.5, 2.25)
'[1.5, 2.25]'
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

__all__ = ["format_interval", "format_number", "format_value"]


def format_number(x: Any, digits: int = 4, *, missing: str = "—") -> str:
    """``x`` for people (see the module docstring for the rule).

    >>> format_number(-1234567), format_number(0.5), format_number(None, missing="unbounded")
    ('-1,234,567', '0.5', 'unbounded')
    """
    if x is None:
        return missing
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, Fraction):
        x = float(x)
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if v == 0:
        return "0"
    if 1000 <= abs(v) < 1e9:
        return f"{round(v):,}"
    return f"{v:.{digits}g}"


def format_interval(low: Any, high: Any, digits: int = 4) -> str:
    """A closed interval ``[low, high]`` with both ends formatted alike."""
    return f"[{format_number(low, digits)}, {format_number(high, digits)}]"


def format_value(v: Any, digits: int = 4) -> str:
    """A table cell: numbers by :func:`format_number`, pairs as intervals, text as is.

    >>> format_value([0.25, 1000.5]), format_value("north"), format_value(None)
    ('[0.25, 1,000]', 'north', '')
    """
    if v is None:
        return ""
    if isinstance(v, (list, tuple)) and len(v) == 2 and all(_is_num(x) for x in v):
        return format_interval(v[0], v[1], digits)
    if isinstance(v, dict) and "rank_error" in v:
        return f"rank ±{format_number(v['rank_error'], digits)}"
    if _is_num(v):
        return format_number(v, digits)
    return str(v)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float, Fraction)) and not isinstance(v, bool)
