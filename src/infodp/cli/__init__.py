"""The ``infodp`` command: one sub-command per capability, each with ``--json``.

The CLI is thin over the library. Errors a user can cause (:class:`~infodp.errors.InfodpError`
and bad flags) print one line on stderr and exit with status 2, never a traceback. With
``--json`` a sub-command prints exactly one JSON object on stdout.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from infodp.cli._common import EXIT_USAGE, fail
from infodp.errors import BudgetExceeded, InfodpError

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="infodp")
def cli() -> None:
    """Differential privacy measured as information (nats per individual)."""


def _register() -> None:
    # Each module adds its commands to ``cli``; imported here so ``infodp --help`` lists all.
    from infodp.cli import (
        accounting,
        audit,
        channel,
        curator,
        demo,
        design,
        explain,
        information,
        local,
        mechanisms,
        server,
    )

    for module in (
        information,
        channel,
        accounting,
        mechanisms,
        explain,
        curator,
        audit,
        demo,
        server,
        design,
        local,
    ):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()

EXIT_BUDGET = 3


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``infodp`` script; returns the exit status."""
    try:
        cli.main(args=list(argv) if argv is not None else None, standalone_mode=False)
    except click.exceptions.Exit as done:
        return int(done.exit_code)
    except click.exceptions.Abort:
        fail("aborted")
        return 1
    except click.UsageError as err:
        # One line: click's message already names the option and the problem.
        fail(err.format_message().replace("\n", " "))
        return EXIT_USAGE
    except click.ClickException as err:
        fail(err.format_message().replace("\n", " "))
        return EXIT_USAGE
    except BudgetExceeded as err:
        fail(str(err))
        return EXIT_BUDGET
    except InfodpError as err:
        fail(str(err))
        return EXIT_USAGE
    return 0
