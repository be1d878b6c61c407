"""Strict-JSON conversion shared by every layer that prints or stores JSON.

>>> to_jsonable({"x": float("inf"), "y": (1, 2.5)})
{'x': 'inf', 'y': [1, 2.5]}
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, TypeAlias

__all__ = ["FieldsJSON", "JsonObject", "JsonValue", "json_key", "to_jsonable"]

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


def json_key(key: str) -> dict[str, str]:
    """Field metadata naming a field's JSON key in :class:`FieldsJSON` (as dataclasses-json's
    ``config(field_name=…)``): ``x: float = field(metadata=json_key("x_nats"))``."""
    return {"json_key": key}


class FieldsJSON:
    """Mixin for a frozen result dataclass whose ``to_dict`` lists every field, in order.

    Each field appears under its own name, or the key its :func:`json_key` metadata gives; a
    nested result by its own ``to_dict``, a tuple or an array as a list; other values as they
    are (floats stay floats: :func:`to_jsonable` makes them strict JSON at the edge).

    >>> @dataclasses.dataclass(frozen=True)
    ... class Pair(FieldsJSON):
    ...     lo: float = dataclasses.field(metadata=json_key("lower"))
    ...     hi: tuple[int, int] = (1, 2)
    >>> Pair(0.5).to_dict()
    {'lower': 0.5, 'hi': [1, 2]}
    """

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            f.metadata.get("json_key", f.name): _plain(getattr(self, f.name))
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
        }


def _plain(value: Any) -> Any:
    if isinstance(value, FieldsJSON):
        return value.to_dict()
    if isinstance(value, tuple):
        return list(value)
    if getattr(value, "ndim", 0):  # a numpy array (a numpy scalar stays what it is)
        return value.tolist()
    return value
