"""Ledger helpers for suites that run on both storages (SQLite and PostgreSQL).

A store's ledger is the file beside it or the PostgreSQL ledger its settings record
(:mod:`infodp.curator.store.ledger_location`); these open and read it whichever it is.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from infodp.curator.backends.duckdb import DuckDBBackend
from infodp.curator.ledger import Ledger
from infodp.curator.store.ledger_location import stored_ledger

#: The ``ledger_at`` fixture: where a test's ledger goes (a path, or a PostgreSQL URL).
LedgerAt = Callable[[Path], "str | Path"]


def ledger_of(db: str | os.PathLike[str]) -> str:
    """Where store ``db``'s ledger is: its recorded URL, or the file beside it."""
    return stored_ledger(DuckDBBackend(db)) or f"{db}.ledger"


def store_ledger(db: str | os.PathLike[str], **kwargs: Any) -> Ledger:
    """The ledger of store ``db``, opened on its own (as another process would)."""
    return Ledger(ledger_of(db), **kwargs)


def rows(db: str | os.PathLike[str], sql: str) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` in store ``db``'s ledger, read by a connection of its own."""
    led = store_ledger(db, create=False)
    try:
        with led.db.read() as conn:
            return [tuple(r) for r in conn.execute(sql).fetchall()]
    finally:
        led.db.close()


def dump(led: Ledger) -> str:
    """Every value of every table of ``led``, as text (what a copy of its storage holds)."""
    with led.db.read() as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return "\n".join(
            repr(tuple(r)) for t in tables for r in conn.execute(f"SELECT * FROM {t}").fetchall()
        )


def sqlite_only(why: str) -> pytest.MarkDecorator:
    """Run a test of something only a ledger file has (``why``) on SQLite alone: it is not
    parametrised over PostgreSQL at all (instead of a PostgreSQL case that would be skipped)."""
    assert why
    return pytest.mark.parametrize("ledger_kind", ["sqlite"])


def edit(target: str | os.PathLike[str], *statements: str) -> None:
    """Run ``statements`` on the ledger at ``target`` behind its back (a file, or a URL):
    what someone editing the storage by hand does."""
    text = str(target)
    if text.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(text, autocommit=True) as conn:
            for st in statements:
                conn.execute(st)  # type: ignore[arg-type]  # the test's own statements
        return
    import sqlite3

    conn3 = sqlite3.connect(text)
    for st in statements:
        conn3.execute(st)
    conn3.commit()
    conn3.close()


def run(target: str | os.PathLike[str], statement: str, *args: object) -> None:
    """Run one ``statement`` with ``?`` parameters ``args`` on the ledger at ``target``
    behind its back (see :func:`edit`)."""
    text = str(target)
    if text.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(text, autocommit=True) as conn:
            sql = statement.replace("%", "%%").replace("?", "%s")
            conn.execute(sql, args)  # type: ignore[arg-type]
        return
    import sqlite3

    conn3 = sqlite3.connect(text)
    with conn3:
        conn3.execute(statement, args)
    conn3.close()


def raw_rows(target: str | os.PathLike[str], sql: str) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` read from the ledger's storage directly (sqlite3 or psycopg)."""
    text = str(target)
    if text.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(text) as conn:
            return [tuple(r) for r in conn.execute(sql).fetchall()]  # type: ignore[arg-type]
    import sqlite3

    conn3 = sqlite3.connect(text)
    try:
        return [tuple(r) for r in conn3.execute(sql).fetchall()]
    finally:
        conn3.close()
