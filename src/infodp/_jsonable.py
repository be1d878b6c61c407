"""Strict-JSON conversion shared by every layer that prints or stores JSON.

>>> to_jsonable({"x": float("inf"), "y": (1, 2.5)})
{'x': 'inf', 'y': [1, 2.5]}
"""

from __future__ import annotations

import math
from typing import Any, TypeAlias

__all__ = ["JsonObject", "JsonValue", "to_jsonable"]

#: A JSON document as Python values: what :func:`json.loads` returns and :func:`to_jsonable`
#: produces (a tuple is written as a JSON array too, but is read back as a list).
JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None
#: A JSON object (an answer, an estimate, a stored record).
JsonObject: TypeAlias = dict[str, JsonValue]


def to_jsonable(value: Any) -> Any:
    """Convert numpy scalars/arrays and non-finite floats into strict JSON values.

    Infinity has no JSON literal: it is written as ``null`` only where the caller says so;
    here +inf becomes the string ``"inf"`` so that it is never confused with a missing value.
    """
    kind = type(value)
    # Exact types first (the bulk of a large answer), without an isinstance chain.
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        return (
            value
            if math.isfinite(value)
            else ("inf" if value > 0 else ("-inf" if value < 0 else None))
        )
    if kind is list or kind is tuple:
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if type(value).__module__ == "numpy":  # numpy is not imported just to test for it
        if getattr(value, "ndim", 0):
            return [to_jsonable(v) for v in value.tolist()]
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else ("-inf" if value < 0 else None)
    return value
