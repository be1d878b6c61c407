"""The one renderer of an answer as JSON text: the CLI's ``--json``, the service (with or
without worker processes) and the copy the ledger stores all print :func:`answer_text`.

The text is the strict JSON (RFC 8259: no NaN or Infinity literals; +inf is the string
``"inf"``, see :func:`~infodp._jsonable.to_jsonable`) of ``to_jsonable(payload)``, compact and
in UTF-8. When the rows and intervals (the data-derived parts, possibly 100s of cells) hold
only text, None, ints and finite floats, orjson renders them: the same value with the same
shortest round-trip digits, several times faster than :mod:`json` (see BENCHMARKS.md,
curator_timeline); anything else takes :mod:`json` (and its errors).

>>> answer_text({"columns": ["n"], "rows": [[3]], "confidence_intervals": [[[1, 5]]],
...              "cost": {"information_nats": float("inf")}, "notes": ["ü"]})
'{"columns":["n"],"rows":[[3]],"confidence_intervals":[[[1,5]]],"cost":{"information_nats":"inf"},"notes":["ü"]}'
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from infodp._jsonable import to_jsonable

__all__ = ["answer_text"]

#: The parts of an answer that come from the data (rows, and per cell an interval).
_TABLES = ("rows", "confidence_intervals")


def answer_text(payload: Mapping[str, object]) -> str:
    """The strict JSON text of ``to_jsonable(payload)`` (compact, UTF-8)."""
    # The small parts (cost, remaining budget) may hold an infinite information cost.
    quick = {k: v if k in _TABLES else to_jsonable(v) for k, v in payload.items()}
    text = _orjson_text(quick)
    if text is not None:
        return text
    try:
        return _json(quick)
    except (TypeError, ValueError):  # a value of the tables that json takes only converted
        return _json(to_jsonable(dict(payload)))


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _orjson_text(payload: dict[str, object]) -> str | None:
    """orjson's text of ``payload`` when it renders the value ``json`` would, else None.

    The rows and intervals must hold only text, None, ints and finite floats
    (:func:`_plain_table`): orjson writes NaN and ±inf as null, and a UUID or a plain Enum
    (which ``json`` refuses) as a value. The rest is the library's metadata (numbers, text,
    StrEnums: subclasses of str and int are written by value by both); the passthrough
    options make orjson refuse a datetime or a dataclass there as ``json`` does, and any
    refusal (``orjson.JSONEncodeError`` is a TypeError: an int beyond 64 bits, a lone
    surrogate, a Fraction) returns None.
    """
    import orjson

    if not all(_plain_table(payload.get(k, ())) for k in _TABLES):
        return None
    try:
        refuse = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
        return orjson.dumps(payload, option=refuse).decode()
    except TypeError:
        return None


#: The exact types of a plain scalar besides a float (which must also be finite): a bool, an
#: Enum or a numpy number is not plain.
_PLAIN = frozenset({int, str, type(None)})
#: The exact types of a cell holding scalars (an interval).
_PAIRS = frozenset({list, tuple})


def _plain_table(rows: object) -> bool:
    """Whether ``rows`` (a list of rows, each a sequence of cells; a cell may be a list or
    tuple of scalars) holds only text, None, ints and finite floats."""
    if not isinstance(rows, list | tuple):
        return False
    finite = math.isfinite
    for row in rows:
        for v in row:
            kind = type(v)
            if kind in _PLAIN:
                continue
            if kind is float:
                if finite(v):
                    continue
                return False
            if kind not in _PAIRS or not _plain_cell(v):
                return False
    return True


def _plain_cell(cell: list[object] | tuple[object, ...]) -> bool:
    """Whether a cell of scalars (an interval) holds only text, None, ints and finite floats."""
    for x in cell:
        if type(x) is float:
            if not math.isfinite(x):
                return False
        elif type(x) not in _PLAIN:
            return False
    return True
