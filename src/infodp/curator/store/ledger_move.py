"""Moving a store's ledger from its SQLite file into PostgreSQL (``infodp ledger migrate --to``):
copied and verified on both sides (:mod:`infodp.curator.ledger.migration`), then recorded as the
store's ledger (:mod:`infodp.curator.store.ledger_location`)."""

from __future__ import annotations

import os
from pathlib import Path

from infodp.curator.store.ledger_location import remember_ledger, stored_ledger

__all__ = ["move_ledger"]


def move_ledger(db: str | os.PathLike[str], url: str, *, timeout: float = 120.0) -> int:
    """Move store ``db``'s SQLite ledger into PostgreSQL at ``url`` (verified on both sides,
    :mod:`infodp.curator.ledger.migration`) and record ``url`` as the store's ledger;
    returns the number of entries moved."""
    from infodp.curator.backends.duckdb import DuckDBBackend
    from infodp.curator.ledger.migration import copy_to_postgres
    from infodp.curator.store.database import read_store_id
    from infodp.errors import ParameterError

    path = Path(db)
    if not path.is_file():
        raise ParameterError("--db", str(db), "an existing infodp store")
    backend = DuckDBBackend(path, timeout=timeout)
    if stored_ledger(backend) is not None:
        raise ParameterError("--db", str(db), "a store whose ledger is still its SQLite file")
    store_id = read_store_id(backend)
    if store_id is None:
        raise ParameterError("--db", str(db), "a store with a store id")
    moved = copy_to_postgres(Path(str(db) + ".ledger"), url, store_id=store_id, timeout=timeout)
    remember_ledger(backend, url)
    return moved
