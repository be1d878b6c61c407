"""``infodp local``: local differential privacy (placeholder)."""

from __future__ import annotations

import click

__all__ = ["COMMANDS"]

COMMANDS: list[click.Command] = []
