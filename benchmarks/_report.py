"""Write one benchmark's section of BENCHMARKS.md.

Each benchmark script owns one section, delimited by HTML comments, and rewrites only that
section, so scripts can be re-run independently. Every section records the command that
produced it, the date and the machine.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS_MD = ROOT / "BENCHMARKS.md"
_HEADER = (
    "# Benchmarks\n\n"
    "Every number here was written by a script under `benchmarks/`; each section names the\n"
    "command that produced it. Peers run in the same process and the same run as infodp.\n"
)


def machine() -> str:
    """A one-line description of the machine the numbers come from."""
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def write_section(name: str, command: str, body: str) -> None:
    """Replace (or append) the section ``name`` of BENCHMARKS.md."""
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    section = (
        f"<!-- begin {name} -->\n"
        f"## {name}\n\n"
        f"Produced by `{command}` on {stamp} ({machine()}).\n\n"
        f"{body.strip()}\n"
        f"<!-- end {name} -->\n"
    )
    text = BENCHMARKS_MD.read_text() if BENCHMARKS_MD.exists() else _HEADER
    pattern = re.compile(
        rf"<!-- begin {re.escape(name)} -->\n.*?<!-- end {re.escape(name)} -->\n", re.DOTALL
    )
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    BENCHMARKS_MD.write_text(text)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
