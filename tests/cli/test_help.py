"""Help texts are readable: no reST markup residue, and every option says what it does."""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest

from infodp.cli import cli

MARKUP = re.compile(r"``|:(?:func|class|meth|mod|attr):`")


def _walk(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        yield f"{prefix}{name}", command
        if isinstance(command, click.Group):
            yield from _walk(command, f"{prefix}{name} ")


COMMANDS = dict(_walk(cli))


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_has_no_markup_and_every_option_a_description(name: str) -> None:
    command = COMMANDS[name]
    with click.Context(command, info_name=f"infodp {name}") as ctx:
        text = command.get_help(ctx)
    assert not MARKUP.search(text), f"infodp {name} --help shows markup"
    undocumented = [
        p.opts[0]
        for p in command.params
        if isinstance(p, click.Option) and not p.hidden and not (p.help or "").strip()
    ]
    assert undocumented == [], f"infodp {name}: options without a description"


def test_walk_sees_nested_commands() -> None:
    assert {"analyst add", "analyst key", "dataset register", "query", "audit"} <= set(COMMANDS)
