"""Where a store's ledger lives: next to it (``<db>.ledger``), or in PostgreSQL.

A store whose ledger is a PostgreSQL database (:mod:`infodp.curator.ledger.postgres`)
records the ledger's URL in its settings (the ``_infodp_settings`` table of the DuckDB
file), so that every server and owner command that opens the store finds the same shared
ledger without being told (``--ledger`` still overrides it). ``infodp ledger migrate --to``
writes it there once the copy is verified.

>>> import tempfile, os
>>> from infodp.curator.backends.duckdb import DuckDBBackend
>>> b = DuckDBBackend(os.path.join(tempfile.mkdtemp(), "s.duckdb"))
>>> remember_ledger(b, "postgresql://ledger:pw@db.internal/infodp")
>>> stored_ledger(b)
'postgresql://ledger:pw@db.internal/infodp'
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

if TYPE_CHECKING:
    from infodp.curator.backends.duckdb import DuckDBBackend

__all__ = [
    "LEDGER_ENV",
    "chosen_ledger",
    "default_ledger",
    "ensure_settings",
    "remember_ledger",
    "stored_ledger",
    "use_ledger",
]

_SETTINGS_TABLE = "_infodp_settings"


#: The environment variable through which ``--ledger`` reaches this process and its children.
LEDGER_ENV = "INFODP_LEDGER"


def use_ledger(target: str) -> None:
    """Make ``target`` the ledger of every store this process (and its children) opens
    without naming one (``--ledger``; a path, or a ``postgresql://`` URL)."""
    os.environ[LEDGER_ENV] = target


def chosen_ledger() -> str | None:
    """The ledger ``--ledger`` (or ``INFODP_LEDGER``) chose, if any."""
    return os.environ.get(LEDGER_ENV) or None


def default_ledger(db: str | os.PathLike[str]) -> str | Path:
    """Where a new store's ledger goes when none is named: ``<db>.ledger``.

    >>> default_ledger("data/s.duckdb").name
    's.duckdb.ledger'
    """
    return Path(str(db) + ".ledger")


def stored_ledger(
    backend: DuckDBBackend, con: duckdb.DuckDBPyConnection | None = None
) -> str | None:
    """The ledger URL the store records (None: its ledger is the file next to it).

    ``con``: an open connection to the store to read it with (left open).
    """
    own = con is None
    if con is None:
        if not backend.path.exists():
            return None
        con = backend.connect(read_only=True)
    try:
        row = con.execute(f"SELECT value FROM {_SETTINGS_TABLE} WHERE key = 'ledger'").fetchone()
    except duckdb.CatalogException:
        return None
    finally:
        if own:
            con.close()
    return None if row is None else str(row[0])


def ensure_settings(con: duckdb.DuckDBPyConnection) -> None:
    """Make the store's settings table (empty: the ledger is the file next to the store) on a
    writable connection. Every new store has one: reading a table that is missing costs a
    freshly opened DuckDB about as much again as the read itself, and every curator reads
    the settings when it opens its store."""
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {_SETTINGS_TABLE} "
        "(key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)"
    )


def remember_ledger(backend: DuckDBBackend, url: str | None) -> None:
    """Record ``url`` as the store's ledger (None: back to the file next to it)."""
    from infodp.curator.store.private_files import private_files

    with private_files(), contextlib.closing(backend.connect(read_only=False)) as con:
        ensure_settings(con)
        con.execute(f"DELETE FROM {_SETTINGS_TABLE} WHERE key = 'ledger'")
        if url is not None:
            con.execute(f"INSERT INTO {_SETTINGS_TABLE} VALUES ('ledger', ?)", [url])
        con.execute("CHECKPOINT")
