"""The CLI contract shared by every sub-command (DESIGN.md, "Contracts that cross modules")."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from infodp.cli import cli, main


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "infodp.cli", *args], capture_output=True, text=True, check=False
    )


def test_unknown_option_is_one_line_exit_2() -> None:
    proc = run("--no-such-flag")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr
    assert "--no-such-flag" in proc.stderr


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_subcommand_accepts_json(name: str) -> None:
    command = cli.commands[name]
    flags = {opt for param in command.params for opt in getattr(param, "opts", [])}
    assert "--json" in flags, f"infodp {name} lacks --json"


def test_demo_json_is_one_object(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert isinstance(json.loads(out), dict)
