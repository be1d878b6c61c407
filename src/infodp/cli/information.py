"""CLI sub-commands (placeholder until the feature lands)."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
