"""The CLI starts instantly: sub-command modules and heavy libraries load only when used."""

from __future__ import annotations

import subprocess
import sys

import click

from infodp.cli import LAZY_COMMANDS, cli

HEAVY = ("numpy", "scipy", "matplotlib", "duckdb", "pandas", "rich", "fastapi", "sqlglot")


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_help_imports_nothing_heavy() -> None:
    loaded = _modules_after(
        "from infodp.cli import main\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()): main(['--help'])"
    )
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}
    assert not {m for m in loaded if m.startswith("infodp.cli.") and m != "infodp.cli._common"}


def test_lazy_table_names_real_commands() -> None:
    ctx = click.Context(cli)
    for name, (_module, _attr, short) in LAZY_COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
        assert short.endswith(".") and len(short) <= 70
    assert cli.get_command(ctx, "no-such-command") is None


def test_help_lists_every_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "infodp.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for name, (_m, _a, short) in LAZY_COMMANDS.items():
        assert f"  {name}" in out and short in out
