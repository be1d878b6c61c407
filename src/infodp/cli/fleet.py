"""``infodp ledger migrate``: a store's ledger moved into PostgreSQL, for a fleet of servers.

After it, every command and server that opens the store uses the PostgreSQL ledger (the store
records its URL); see docs/deployment.md.
"""

from __future__ import annotations

import click

from infodp.cli._common import emit, json_option
from infodp.cli.curator import db_option, ledger

__all__ = ["migrate"]


@ledger.command("migrate")
@db_option
@click.option("--to", "url", required=True, help="The PostgreSQL ledger: a postgresql:// URL.")
@json_option
def migrate(db: str, url: str, as_json: bool) -> None:
    """Move the store's SQLite ledger into PostgreSQL, its hash chain intact, and verify it."""
    from infodp.curator.ledger.postgres import redact
    from infodp.curator.store.ledger_move import move_ledger

    moved = move_ledger(db, url)
    payload = {"db": db, "ledger": redact(url), "entries": moved, "verified": True}
    emit(
        payload,
        as_json,
        lambda p: click.echo(
            f"ledger of {p['db']} moved to {p['ledger']}: {p['entries']} entries, verified; "
            "the store now uses it (the old file is no longer read)"
        ),
    )
