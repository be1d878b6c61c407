"""Piped CLI output is not wrapped in the middle of a record.

rich lays text out for 80 columns when stdout is not a terminal; a wide answer then broke
each row over several lines, which `grep`, `cut` and readers of a log cannot follow. Piped,
every table row and every line of text must be one line (pytest's captured stdout is not a
terminal, as a pipe is not).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from _cli_store import RegisterStore
from infodp.cli import main

ROOT = Path(__file__).resolve().parents[2]
WIDE = (
    "SELECT region, COUNT(*), AVG(income), STDDEV(income), SUM(income), AVG(age), "
    "QUANTILE(income, 0.5), VARIANCE(age) FROM people GROUP BY region"
)


@pytest.mark.slow
def test_a_wide_answer_keeps_each_row_on_one_line(
    registered_store: RegisterStore, capsys: pytest.CaptureFixture[str]
) -> None:
    examples = ROOT / "examples"
    db = registered_store(
        analysts={"a": ["--epsilon", "5"]},
        schema=(examples / "people.yaml").read_text(),
        source=examples / "people.csv",
    ).db
    assert main(["query", "--db", db, "--analyst", "a", "--epsilon", "1", WIDE]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if "region" in line)
    for name in ("COUNT(*)", "STDDEV(income)", "QUANTILE(income, 0.5)", "VARIANCE(age)"):
        assert name in header
    for region in ("north", "south", "east", "west"):
        (row,) = [line for line in lines if f" {region} " in line]
        # 7 answers and their 7 intervals beside the key: 15 cells, 14 separators.
        assert row.count("│") == 14, row
    assert len(max(lines, key=len)) > 80  # the layout used the width it needed


def test_explain_text_lines_are_not_wrapped(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--epsilon", "1", "--delta", "1e-6"]) == 0
    out = capsys.readouterr().out
    (warning,) = [line for line in out.splitlines() if line.startswith("Warning:")]
    assert warning.endswith("privacy').")  # the whole sentence on its line
