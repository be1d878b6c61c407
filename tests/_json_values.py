"""Comparing JSON texts by value, for the tests of the answer and ledger renderings."""

from __future__ import annotations

import json
import math
from typing import Any


def strict_json(text: str) -> Any:
    """``json.loads`` that refuses the non-standard literals NaN, Infinity and -Infinity."""

    def refuse(token: str) -> Any:
        raise AssertionError(f"non-standard JSON literal {token}")

    return json.loads(text, parse_constant=refuse)


def same_json(a: Any, b: Any, *, key_order: bool = False) -> bool:
    """Equal JSON values, floats compared bit for bit (1.0 and 1 differ, so do 0.0 and −0.0;
    NaN equals NaN); with ``key_order`` objects must also list their keys in the same order."""
    if isinstance(a, float) or isinstance(b, float):
        if type(a) is not type(b):
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(
            same_json(x, y, key_order=key_order) for x, y in zip(a, b, strict=True)
        )
    if isinstance(a, dict) and isinstance(b, dict):
        keys_agree = list(a) == list(b) if key_order else a.keys() == b.keys()
        return keys_agree and all(same_json(a[k], b[k], key_order=key_order) for k in a)
    return type(a) is type(b) and a == b
