"""Helpers shared by the CLI sub-commands: JSON output, number lists, error lines."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from infodp._jsonable import to_jsonable
from infodp.errors import ParameterError

#: Exit statuses of every sub-command: 0 success, 2 bad input (one line on stderr),
#: 3 a privacy budget would be exceeded (nothing released), 4 an audit found a violation.
EXIT_USAGE = 2
EXIT_BUDGET = 3
EXIT_VIOLATION = 4

#: Columns a piped (non-terminal) console may use: wide enough that no table row or line of
#: text is wrapped in the middle of a record (tables still take only the width they need).
PIPED_WIDTH = 4096
#: Width of section rules when piped (a rule spans the whole console otherwise).
RULE_WIDTH = 100


def output_console() -> Any:
    """A rich Console on stdout: the terminal's width on a terminal; when piped, lines are
    not wrapped (rich's 80-column default cut results in the middle of a row)."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console(file=sys.stdout, highlight=False)
    return Console(file=sys.stdout, highlight=False, width=PIPED_WIDTH, soft_wrap=True)


json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print exactly one JSON object on stdout."
)


def spark_options(command: Any) -> Any:
    """``--spark-master`` and ``--spark-conf KEY=VALUE`` (for datasets on the Spark backend), with
    the meaning of :func:`infodp.curator.backends.spark.spark_settings`: ``dataset register``,
    ``query`` and ``serve``."""
    command = click.option(
        "--spark-conf",
        "spark_conf",
        multiple=True,
        help="A spark.* setting KEY=VALUE for the Spark session (repeatable; wins over "
        "<db>.spark.toml).",
    )(command)
    return click.option(
        "--spark-master",
        "spark_master",
        default=None,
        help="Spark master URL for datasets on the Spark backend (default: $INFODP_SPARK_MASTER, "
        "the master in <db>.spark.toml, else local[*]).",
    )(command)


def command_line(name: str, skip: tuple[str, ...] = ("html_path", "as_json")) -> str:
    """The current sub-command as ``infodp NAME --option value …`` (for report footers)."""
    ctx = click.get_current_context()
    options = " ".join(
        f"--{k.replace('_', '-')} {v}"
        for k, v in ctx.params.items()
        if v not in (None, False, ()) and k not in skip
    )
    return f"infodp {name} {options}".strip()


def fail(message: str) -> None:
    """Print a one-line error on stderr."""
    click.echo(f"infodp: error: {message}", err=True)


def fail_json(kind: str, message: str, status: int, extra: dict[str, Any]) -> None:
    """The one JSON object of a failed ``--json`` command: what :func:`fail` says, typed."""
    error = {"kind": kind, "message": message, "exit_status": status, **extra}
    sys.stdout.write(json.dumps({"error": error}, allow_nan=False, ensure_ascii=False) + "\n")


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


def parse_alpha(text: str) -> float:
    """A Rényi order given to ``--alpha``: a number, ``inf`` or ``∞``.

    >>> parse_alpha(" ∞ "), parse_alpha("2")
    (inf, 2.0)
    """
    from infodp._validate import as_alpha

    cleaned = text.strip()
    if cleaned in {"∞", "+∞"}:
        cleaned = "inf"
    return as_alpha("--alpha", cleaned)
