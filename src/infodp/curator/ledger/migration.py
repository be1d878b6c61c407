"""Moving a store's SQLite ledger into PostgreSQL (``infodp ledger migrate --to URL``).

The source is opened as a ledger (which brings an older format to this one, checking its
seals first) and verified in full; every row of every table is then copied as stored —
entry ids, hash links, the head, the checkpoint, seals, keys, spends, accountant states,
budget groups and SQLite's ``sqlite_sequence`` — into an empty PostgreSQL ledger in one
transaction, which is then opened and verified in full from the start of its chain. Only
then does the store record the URL as its ledger (:mod:`infodp.curator.store.ledger_location`):
a copy that does not verify leaves the store on its SQLite file. The file itself is left in
place (the data owner archives it); the store no longer reads it.

>>> COPIED[0], COPIED[-1]
('meta', 'sqlite_sequence')
"""

from __future__ import annotations

import os

from infodp.curator.ledger.facade import Ledger
from infodp.curator.ledger.postgres import PgDatabase, is_url, redact
from infodp.curator.ledger.records import SCHEMA
from infodp.errors import LedgerError, ParameterError

__all__ = ["COPIED", "copy_to_postgres"]

#: The tables copied, in an order their references allow (then AUTOINCREMENT's counter).
COPIED = (
    "meta",
    "keys",
    "key_revocations",
    "datasets",
    "unit_sketches",
    "analysts",
    "entries",
    "synopses",
    "sqlite_sequence",
)


def copy_to_postgres(
    source: str | os.PathLike[str], url: str, *, store_id: str, timeout: float = 120.0
) -> int:
    """Copy the SQLite ledger at ``source`` (of store ``store_id``) into ``url``, verified
    on both sides; returns the number of entries copied.

    Raises :class:`~infodp.errors.ParameterError` for a ``url`` that is not a PostgreSQL
    URL, :class:`~infodp.errors.LedgerError` when the source does not verify, when ``url``
    already holds a ledger, or when the copy does not verify.
    """
    if not is_url(url):
        raise ParameterError("--to", url, "a postgresql:// URL")
    src = Ledger(source, timeout=timeout, store_id=store_id, create=False)
    try:
        problems = src.verify()
        if problems:
            raise LedgerError(
                f"the ledger {src.db.name} does not verify ({'; '.join(problems[:3])}); "
                "nothing was copied"
            )
        target = PgDatabase(url, timeout=timeout)
        try:
            if target.exists():
                raise LedgerError(
                    f"{redact(url)} already holds a ledger; nothing was copied (migrate into "
                    "an empty database or schema)"
                )
            copied = _copy(src, target)
        finally:
            target.close()
    finally:
        src.close()
    copy = Ledger(url, timeout=timeout, store_id=store_id, create=False)
    try:
        problems = copy.verify()
    finally:
        copy.close()
    if problems:
        raise LedgerError(
            f"the copy in {redact(url)} does not verify ({'; '.join(problems[:3])}); the store "
            "keeps its SQLite ledger"
        )
    return copied


def _copy(src: Ledger, target: PgDatabase) -> int:
    with src.db.snapshot() as read, target.transaction() as write:
        for statement in SCHEMA.split(";"):
            if statement.strip():
                write.execute(statement)
        target.after_create(write)
        for table in COPIED:
            rows = read.execute(f"SELECT * FROM {table}").fetchall()
            if not rows:
                continue
            columns = rows[0].keys()
            insert = (
                f"INSERT INTO {table} ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' for _ in columns)})"
            )
            if table == "sqlite_sequence":  # the trigger wrote the entries' ids already
                write.execute("DELETE FROM sqlite_sequence")
            for row in rows:
                write.execute(insert, tuple(row))
        count = read.execute("SELECT count(*) FROM entries").fetchone()
    return int(count[0]) if count is not None else 0
