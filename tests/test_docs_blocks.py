"""Every code block in README.md and docs/ runs.

```python blocks run in order, one namespace per file (tutorials build up); ```console blocks
run each ``$ infodp …`` line through the CLI's ``main`` and expect status 0 (or the status
named in a trailing ``# exit N`` comment). Both run in an empty directory that sees the
repository's ``examples/``. ```bash blocks are the set-up commands, which CI itself runs
(``scripts/test.sh``); the test checks there is exactly one such block, in the README.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from pathlib import Path

import pytest

from infodp.cli import main

ROOT = Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _blocks(path: Path) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(path.read_text())]


def _commands(console: str) -> list[tuple[list[str], int]]:
    out: list[tuple[list[str], int]] = []
    joined = re.sub(r"\\\n\s*", " ", console)
    for line in joined.splitlines():
        if not line.startswith("$ "):
            continue
        status = re.search(r"#\s*exit (\d)", line)
        argv = shlex.split(line[2:], comments=True)
        assert argv[0] == "infodp", line
        out.append((argv[1:], int(status.group(1)) if status else 0))
    return out


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _starts_spark(path: Path) -> bool:
    """A page whose blocks register a dataset on Spark starts a local Spark when run."""
    return any("--backend spark" in code or '"spark"' in code for _, code in _blocks(path))


@pytest.mark.slow  # runs every tutorial and the README tour
@pytest.mark.parametrize(
    "path",
    [pytest.param(f, marks=pytest.mark.spark) if _starts_spark(f) else f for f in FILES],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_code_blocks_run(path: Path, sandbox: Path, request: pytest.FixtureRequest) -> None:
    if _starts_spark(path):
        # The process's one Spark session (tests/_spark.py): a documented registration on
        # Spark finds it running, as in a notebook, instead of starting a JVM of its own.
        request.getfixturevalue("spark")
    namespace: dict[str, object] = {"__name__": "__docs__"}
    ran = 0
    for lang, code in _blocks(path):
        if lang == "python":
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(code, f"{path.name}:python", "exec"), namespace)
            ran += 1
        elif lang == "console":
            for argv, status in _commands(code):
                with contextlib.redirect_stdout(io.StringIO()):
                    assert main(argv) == status, " ".join(argv)
                ran += 1
    languages = {lang for lang, _ in _blocks(path)}
    if languages & {"python", "console"}:
        assert ran > 0
    assert os.getcwd() == str(sandbox)


def test_only_the_readme_has_setup_commands() -> None:
    bash = [(p, code) for p in FILES for lang, code in _blocks(p) if lang in ("bash", "sh")]
    assert [p.name for p, _ in bash] == ["README.md"]
    lines = [line.split("#")[0].strip() for line in bash[0][1].strip().splitlines()]
    assert lines == ["python3 -m pip install . && infodp demo", "bash scripts/test.sh"]


def test_readme_names_no_path_outside_the_repository() -> None:
    text = (ROOT / "README.md").read_text()
    assert "../" not in text
    for target in re.findall(r"`((?:docs|examples|scripts|benchmarks)/[^`\s]+)`", text):
        assert (ROOT / target).exists(), target


def test_examples_ship_the_readme_dataset() -> None:
    csv = ROOT / "examples/people.csv"
    assert csv.stat().st_size <= 100_000
    assert (ROOT / "examples/people.yaml").is_file()
    ignored = (ROOT / ".gitignore").read_text().split()
    assert {"*.ledger", "*.duckdb", "*.keys"} <= set(ignored)
