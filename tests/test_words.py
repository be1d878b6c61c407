"""Users never meet internal names for the sources: the papers are cited, the ideas named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Whitespace (also a line break inside a docstring) may separate the words.
# Tracker references ("issue 6", "the bar") are internal too.
PATTERN = re.compile(
    r"seed\s*0{2}[0-4]|seed\s+article|seeds/|\bissue\s*\d|\bthe\s+issue\b|issue's",
    re.IGNORECASE,
)


def _user_facing() -> list[Path]:
    files = [p for p in (ROOT / "src").rglob("*.py") if "__pycache__" not in p.parts]
    files += [*(ROOT / "docs").rglob("*.md"), ROOT / "README.md", ROOT / "docs/openapi.json"]
    files += list((ROOT / "examples").rglob("*.ipynb"))
    # Benchmark scripts write BENCHMARKS.md, which users read.
    files += [*(ROOT / "benchmarks").rglob("*.py"), ROOT / "BENCHMARKS.md"]
    return files


@pytest.mark.slow
def test_no_internal_source_names_in_user_facing_text() -> None:
    hits = [
        f"{p.relative_to(ROOT)}: {m.group(0)!r}"
        for p in _user_facing()
        for m in PATTERN.finditer(p.read_text())
    ]
    assert hits == []


# The development notes beside the repository are not part of it: code, tests and docs cite
# docs/architecture.md (which ships) or the paper, never a file a reader cannot open.
NOTES = re.compile(r"\b(?:DESIGN|STYLE|REFERENCES)\.md\b")


def test_nothing_cites_the_development_notes() -> None:
    files = [
        *_user_facing(),
        *(p for p in (ROOT / "tests").rglob("*.py") if p.name != "test_words.py"),
    ]
    hits = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in files
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if NOTES.search(line)
    ]
    assert hits == []
