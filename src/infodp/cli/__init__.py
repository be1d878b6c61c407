"""The ``infodp`` command: one sub-command per capability, each with ``--json``.

The CLI is thin over the library. Errors a user can cause (:class:`~infodp.errors.InfodpError`
and bad flags) print one line on stderr and exit with status 2, never a traceback; 3 means a
privacy budget would be exceeded (nothing released), 4 that ``infodp audit`` found a violation.
With ``--json`` a sub-command prints exactly one JSON object on stdout, a failure included:
``{"error": {"kind": ..., "message": ..., "exit_status": ...}}``, with ``argument`` for a bad
parameter and ``requested``/``remaining``/``short_by`` for a refused spend; the error line
still goes to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from infodp import __version__
from infodp.cli._common import EXIT_BUDGET, EXIT_USAGE, fail, fail_json
from infodp.errors import BudgetExceeded, InfodpError, ParameterError

__all__ = ["LAZY_COMMANDS", "LazyGroup", "cli", "main"]


#: Sub-command → (module under infodp.cli, attribute, one-line help). Modules are imported
#: only when their command runs (or its own ``--help`` is asked), so ``infodp --help`` and the
#: start of every command stay fast; tests/cli/test_lazy.py checks the help lines against the
#: commands' own docstrings.
LAZY_COMMANDS: dict[str, tuple[str, str, str]] = {
    "account": (
        "accounting",
        "account",
        "Certified ε(δ) of a mechanism composed many times (tight PLD).",
    ),
    "analyst": ("curator", "analyst", "Give analysts budgets on datasets."),
    "attack": ("audit", "attack", "Run one of the published attacks and compare it to theory."),
    "audit": ("audit", "audit_command", "Audit a mechanism as a black box (lower bounds)."),
    "calibrate": ("mechanisms", "calibrate", "Noise parameters meeting a target (ε, δ)."),
    "capacity": ("channel", "capacity", "Certified capacity bracket of a channel, in nats."),
    "dataset": ("curator", "dataset", "Register and list sensitive datasets (data owner)."),
    "demo": ("demo", "demo", "Demonstrate infodp: ε as information, accounting, DP SQL."),
    "design": ("design", "design_command", "The least-leaking channel for a distortion budget."),
    "divergence": ("information", "divergence", "Rényi divergence D_α(P‖Q), in nats."),
    "explain": ("explain", "explain_command", "Explain what ε, δ or a mechanism leaks."),
    "local": ("local", "local", "Local DP: on-device randomizers and frequency estimates."),
    "ledger": ("curator", "ledger", "Show the privacy ledger: budgets and every query."),
    "query": ("query", "query", "Answer an aggregate SQL query with differential privacy."),
    "release": ("curator", "release", "Publish a DP histogram once; query it later for free."),
    "serve": ("server", "serve", "Serve the curator over HTTP (FastAPI on uvicorn)."),
    "synth": ("synthetic", "synth", "Release a DP synthetic table once; query it later for free."),
}


class LazyGroup(click.Group):
    """A click group whose sub-commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(LAZY_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = LAZY_COMMANDS.get(cmd_name)
        if spec is None:
            return None
        import importlib

        module = importlib.import_module(f"infodp.cli.{spec[0]}")
        if cmd_name == "analyst":
            importlib.import_module("infodp.cli.server")  # adds ``analyst key/revoke``
        if cmd_name == "ledger":
            importlib.import_module("infodp.cli.fleet")  # adds ``ledger migrate``
        command: click.Command = getattr(module, spec[1])
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # The listing uses the static help lines: no sub-command module is imported.
        rows = [(name, LAZY_COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=__version__, package_name="infodp")
def cli() -> None:
    """Differential privacy measured as information (nats per individual)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``infodp`` script; returns the exit status.

    Without ``argv`` it runs the process's own command line, and the process exits when it
    returns: the garbage collector is set for that (:mod:`infodp.cli._collector`).
    """
    if argv is not None:
        return _main(list(argv))
    from infodp.cli._collector import one_command

    with one_command():
        return _main(sys.argv[1:])


def _main(args: list[str]) -> int:
    # Options come before a "--" separator; after it, "--json" would be an argument's value.
    as_json = "--json" in (args[: args.index("--")] if "--" in args else args)
    try:
        status = cli.main(args=args, standalone_mode=False)
    except click.exceptions.Exit as done:
        return int(done.exit_code)
    except click.exceptions.Abort:
        return _failed(as_json, "aborted", "aborted", 1)
    except click.UsageError as err:
        # One line: click's message already names the option and the problem.
        return _failed(as_json, "usage", " ".join(err.format_message().split()), EXIT_USAGE)
    except click.ClickException as err:
        return _failed(as_json, "usage", " ".join(err.format_message().split()), EXIT_USAGE)
    except BudgetExceeded as err:
        extra = {"requested": err.requested, "remaining": err.remaining, "short_by": err.gap}
        return _failed(as_json, "budget_exceeded", str(err), EXIT_BUDGET, extra)
    except InfodpError as err:
        extra = {}
        if isinstance(err, ParameterError) and err.argument is not None:
            extra["argument"] = err.argument
        return _failed(as_json, _kind(err), str(err), EXIT_USAGE, extra)
    except (RecursionError, MemoryError, OverflowError, ValueError, ArithmeticError) as err:
        # Bad input caught late (it should have been refused by a validator): one line, never
        # a traceback, and never the exception text (it could quote data).
        message = f"invalid input ({type(err).__name__})"
        return _failed(as_json, "invalid_input", message, EXIT_USAGE)
    # A command that raised click's Exit (``infodp audit`` on a violation) returns its status.
    return status if isinstance(status, int) else 0


def _kind(err: InfodpError) -> str:
    """``ParameterError`` → ``"parameter"``, ``LedgerError`` → ``"ledger"``, …"""
    name = type(err).__name__
    for suffix in ("Error", "Exceeded"):
        name = name.removesuffix(suffix)
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_") or "error"


def _failed(
    as_json: bool, kind: str, message: str, status: int, extra: dict[str, Any] | None = None
) -> int:
    fail(message)
    if as_json:
        fail_json(kind, message, status, extra or {})
    return status
