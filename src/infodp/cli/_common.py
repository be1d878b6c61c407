"""Helpers shared by the CLI sub-commands: JSON output, number lists, error lines."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from typing import Any

import click

from infodp.errors import ParameterError

#: Exit statuses of every sub-command: 0 success, 2 bad input (one line on stderr),
#: 3 a privacy budget would be exceeded (nothing released), 4 an audit found a violation.
EXIT_USAGE = 2
EXIT_BUDGET = 3
EXIT_VIOLATION = 4

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print exactly one JSON object on stdout."
)


def fail(message: str) -> None:
    """Print a one-line error on stderr."""
    click.echo(f"infodp: error: {message}", err=True)


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


def emit(payload: dict[str, Any], as_json: bool, render: Callable[[dict[str, Any]], None]) -> None:
    """Print ``payload`` as one JSON object, or hand it to ``render`` for people."""
    if as_json:
        sys.stdout.write(json.dumps(to_jsonable(payload), allow_nan=False) + "\n")
    else:
        render(payload)


def parse_floats(name: str, text: str) -> list[float]:
    """Parse a comma-separated list of numbers given to option ``name``."""
    try:
        return [float(part) for part in text.split(",") if part.strip() != ""]
    except ValueError:
        raise ParameterError(name, text, "a comma-separated list of numbers") from None
