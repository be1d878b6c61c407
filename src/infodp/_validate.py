"""Argument validation shared by every module.

Each checker either returns the value in canonical form or raises
:class:`~infodp.errors.ParameterError` naming the argument, the value and what is allowed.
Privacy parameters never become NaN: NaN is rejected everywhere.
"""

from __future__ import annotations

import math
import re
from typing import Any

from infodp._lazy import loaded
from infodp._np import np, npt  # scalar checks never import numpy
from infodp.errors import ParameterError

__all__ = [
    "ANALYST_NAME_RULE",
    "as_alpha",
    "as_alphas",
    "as_analyst_name",
    "as_nonnegative",
    "as_positive",
    "as_positive_int",
    "as_probability",
    "as_probability_vector",
    "as_real",
    "check_distribution",
]

# Tolerance for "sums to one" checks on probability vectors and channel rows.
SUM_TOLERANCE = 1e-9


def as_real(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """A finite real number (or ±inf when ``allow_inf``); never NaN, never bool."""
    if isinstance(value, bool):
        raise ParameterError(name, value, "a real number")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ParameterError(name, value, "a real number") from None
    if math.isnan(x) or (math.isinf(x) and not allow_inf):
        allowed = "a real number (not NaN)" if allow_inf else "a finite real number"
        raise ParameterError(name, value, allowed)
    return x


def as_positive(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """A real number > 0."""
    x = as_real(name, value, allow_inf=allow_inf)
    if not x > 0:
        raise ParameterError(name, value, "a positive number (> 0)")
    return x


def as_nonnegative(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """A real number >= 0."""
    x = as_real(name, value, allow_inf=allow_inf)
    if not x >= 0:
        raise ParameterError(name, value, "a non-negative number (>= 0)")
    return x


def as_probability(
    name: str, value: Any, *, open_low: bool = False, open_high: bool = False
) -> float:
    """A number in [0, 1] (ends excluded on request)."""
    x = as_real(name, value)
    low_ok = x > 0 if open_low else x >= 0
    high_ok = x < 1 if open_high else x <= 1
    if not (low_ok and high_ok):
        interval = ("(" if open_low else "[") + "0, 1" + (")" if open_high else "]")
        raise ParameterError(name, value, f"a probability in {interval}")
    return x


#: What an analyst name may be (said in every refusal).
ANALYST_NAME_RULE = (
    "1 to 64 characters: ASCII letters, digits and . _ @ - (starting with a letter or digit)"
)
_ANALYST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


def as_analyst_name(name: str, value: Any) -> str:
    """An analyst name from a safe character set (no spaces, newlines or markup).

    A name is printed in listings, ledgers and logs: a newline in it could forge a line,
    markup could run in a page that shows it.

    >>> as_analyst_name("name", "alice.smith@example")
    'alice.smith@example'
    >>> as_analyst_name("name", "eve\\nalice 1.0")
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: name must be 1 to 64 characters: ASCII letters, digits and . _ @ - (starting with a letter or digit); got 'eve\\nalice 1.0'.
    """  # noqa: E501
    if not isinstance(value, str) or _ANALYST_NAME.fullmatch(value) is None:
        shown = value[:80] if isinstance(value, str) else value
        raise ParameterError(name, shown, ANALYST_NAME_RULE)
    return value


def as_positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (bools and non-integral floats refused)."""
    if isinstance(value, bool):
        raise ParameterError(name, value, f"an integer >= {minimum}")
    if _is_integer(value) or (_is_float(value) and float(value).is_integer()):
        n = int(value)
    else:
        raise ParameterError(name, value, f"an integer >= {minimum}")
    if n < minimum:
        raise ParameterError(name, value, f"an integer >= {minimum}")
    return n


def _is_integer(value: Any) -> bool:
    numpy = loaded("numpy")  # only a loaded numpy can have made a numpy integer
    return isinstance(value, int) or (numpy is not None and isinstance(value, numpy.integer))


def _is_float(value: Any) -> bool:
    numpy = loaded("numpy")
    return isinstance(value, float) or (numpy is not None and isinstance(value, numpy.floating))


def as_alpha(name: str, value: Any, *, minimum: float = 0.0) -> float:
    """A Rényi order in [minimum, inf]; ``float('inf')`` is the exact max-divergence order."""
    x = as_real(name, value, allow_inf=True)
    if not x >= minimum:
        raise ParameterError(name, value, f"a Rényi order in [{minimum:g}, inf]")
    return x


def as_alphas(name: str, value: Any, *, minimum: float = 0.0) -> npt.NDArray[np.float64]:
    """One or more Rényi orders as a float64 array (shape kept; scalars become 0-d)."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(name, value, f"Rényi orders in [{minimum:g}, inf]") from None
    if np.isnan(arr).any() or (arr < minimum).any():
        raise ParameterError(name, value, f"Rényi orders in [{minimum:g}, inf] (no NaN)")
    return arr


def as_probability_vector(name: str, value: Any) -> npt.NDArray[np.float64]:
    """A 1-d float64 probability vector: finite, non-negative, summing to 1 within 1e-9."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(name, "<non-numeric>", "a vector of probabilities") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(name, f"array of shape {arr.shape}", "a non-empty 1-d vector")
    check_distribution(name, arr)
    return arr


def check_distribution(name: str, arr: npt.NDArray[np.float64], *, show_min: bool = False) -> float:
    """Raise unless ``arr`` is finite, non-negative and sums to 1 within ``SUM_TOLERANCE``;
    returns the sum. The message names a negative entry, or with ``show_min`` the least one.

    >>> check_distribution("p", np.array([0.25, 0.75]))
    1.0
    """
    if not np.isfinite(arr).all():
        raise ParameterError(f"{name} must contain only finite numbers; found NaN or inf.")
    if (arr < 0).any():
        found = repr(float(arr.min())) if show_min else "a negative entry"
        raise ParameterError(f"{name} must be non-negative; found {found}.")
    total = float(arr.sum())
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise ParameterError(
            f"{name} must sum to 1 (within {SUM_TOLERANCE:g}); it sums to {total!r}."
        )
    return total
