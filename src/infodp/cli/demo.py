"""``infodp demo``: the main job, on real numbers (placeholder until the features land)."""

from __future__ import annotations

from typing import Any

import click

from infodp.cli._common import emit, json_option


@click.command()
@json_option
def demo(as_json: bool) -> None:
    """Demonstrate infodp's information and accounting features."""
    payload: dict[str, Any] = {"status": "infodp is being built"}
    emit(payload, as_json, lambda p: click.echo(p["status"]))


COMMANDS: list[click.Command] = [demo]
