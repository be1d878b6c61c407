"""The CLI contract shared by every sub-command (docs/architecture.md, "Contracts that cross
modules")."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import click
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


def _leaf_commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    # The top group is lazy: resolve every listed name (this imports the sub-command modules).
    ctx = click.Context(group)
    leaves: dict[str, click.Command] = {}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            leaves.update(_leaf_commands(command, f"{prefix}{name} "))
        else:
            leaves[f"{prefix}{name}"] = command
    return leaves


LEAVES = _leaf_commands(cli)


@pytest.mark.parametrize("name", sorted(LEAVES))
def test_every_subcommand_accepts_json(name: str) -> None:
    # docs/architecture.md: every CLI sub-command accepts --json and then prints one JSON object.
    flags = {opt for param in LEAVES[name].params for opt in getattr(param, "opts", [])}
    assert "--json" in flags, f"infodp {name} lacks --json"


@pytest.mark.slow
def test_demo_json_is_one_object(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = str(tmp_path / "demo.duckdb")
    assert main(["demo", "--json", "--db", db, "--rows", "2000"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    payload = json.loads(out)
    # the classic coin-flip coin-flip scheme is ε = ln 3; its Shannon capacity has the closed form
    # log 2 − h(1/4) nats (binary symmetric channel with crossover 1/4).
    info = payload["information"]
    assert info["pure_epsilon"] == pytest.approx(math.log(3))
    h = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    lo, hi = info["capacity_nats"]["1"]
    assert lo <= math.log(2) - h + 1e-12 and hi >= math.log(2) - h - 1e-12 and hi - lo <= 1e-9
    # The curator act ends with a refused over-budget query (exit status 3 in the CLI).
    assert payload["curator"]["refused"]["exit_status"] == 3


@pytest.mark.slow
def test_demo_human_output_reuses_the_cached_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = str(tmp_path / "demo.duckdb")
    assert main(["demo", "--db", db, "--rows", "2000"]) == 0
    first = capsys.readouterr().out
    assert "ε is an amount of information" in first and "created the synthetic census" in first
    assert main(["demo", "--db", db, "--rows", "2000"]) == 0
    assert "using the cached census" in capsys.readouterr().out


def test_demo_in_a_missing_directory_is_refused_without_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "no" / "such" / "demo.duckdb"
    assert main(["demo", "--db", str(db), "--rows", "2000"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--db" in err and "existing directory" in err
    assert not (tmp_path / "no").exists()
