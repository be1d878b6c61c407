"""A store and its ledger belong together: one store id, private files, explicit re-initialisation.

A store is a DuckDB file (the data owner's bounded copies of the sensitive tables) plus its
ledger ``<store>.ledger`` (budgets, entries, keys; :class:`~infodp.curator.ledger.Ledger`).
Both carry the same random store id, written in both when the store is created: the DuckDB
file in table ``_infodp_store``, the ledger in its ``meta`` table. :func:`open_store` refuses
(:class:`~infodp.errors.LedgerError`, exit status 2 in the CLI) a ledger that is missing,
empty, corrupt, or whose id is not the store's — a deleted or swapped ledger would otherwise
silently reset every budget. Only :func:`reinit_ledger` (``infodp ledger reinit --db S
--yes``, run by the data owner) starts a new ledger, and it says that all budgets are
forgotten. The store also keeps each dataset's declaration (``_infodp_datasets``), so a
re-initialised ledger knows the registered datasets again, with nothing spent and no
analysts.

Every file is created with mode 0600 (owner only): the process umask is tightened while
DuckDB or SQLite create files, and the files are chmod-ed afterwards.

>>> import tempfile, os
>>> from infodp.curator.backends.duckdb import DuckDBBackend
>>> db = os.path.join(tempfile.mkdtemp(), "s.duckdb")
>>> led = open_store(db, DuckDBBackend(db))
>>> led.store_id == read_store_id(DuckDBBackend(db))
True
>>> oct(os.stat(db).st_mode & 0o777), oct(os.stat(db + ".ledger").st_mode & 0o777)
('0o600', '0o600')
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import duckdb

from infodp.curator.backends.duckdb import DuckDBBackend, bounded_column
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.ledger import Ledger
from infodp.curator.ledger.storage import is_url
from infodp.curator.store.ledger_location import (
    chosen_ledger,
    default_ledger,
    ensure_settings,
    remember_ledger,
    stored_ledger,
)
from infodp.curator.store.private_files import private_files
from infodp.errors import LedgerError, ParameterError

if TYPE_CHECKING:
    from infodp._jsonable import JsonObject

__all__ = [
    "NEW_TABLE_PREFIX",
    "Reinitialised",
    "catalogue",
    "commit_tables",
    "connect_to_read",
    "fingerprint",
    "forget_tables",
    "ledger_of",
    "ledger_path",
    "open_for_queries",
    "open_store",
    "read_store_id",
    "record_dataset",
    "reinit_ledger",
    "store_tables",
    "sweep_and_list",
    "sweep_registrations",
]

_STORE_TABLE = "_infodp_store"
_DATASETS_TABLE = "_infodp_datasets"

#: The tables a registration copies into are named ``_infodp_new_<pid>_<token>_<i>`` until
#: the copy is complete; they take their stored names, and the dataset its catalogue record,
#: in one transaction (:func:`commit_tables`). A process killed before that leaves only
#: tables under this prefix, which :func:`sweep_registrations` removes.
NEW_TABLE_PREFIX = "_infodp_new_"


def ledger_path(db: str | os.PathLike[str]) -> Path:
    """The ledger of store ``db`` (``<db>.ledger``).

    >>> ledger_path("data/s.duckdb").name
    's.duckdb.ledger'
    """
    return Path(str(db) + ".ledger")


def _chmod_private(db: Path) -> None:
    for path in (db, Path(str(db) + ".wal")):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(path, 0o600)


def read_store_id(
    backend: DuckDBBackend, con: duckdb.DuckDBPyConnection | None = None
) -> str | None:
    """The store id written in the DuckDB file (None for a store without one).

    ``con``: an open connection to the store to read it with (left open); by default one is
    opened and closed (opening a store costs about as much as a small aggregate, so a
    one-shot query reads the id on the connection it answers with).
    """
    own = con is None
    if con is None:
        con = connect_to_read(backend)
    try:
        # One lookup, no catalog scan: a missing table is a catalog error at bind time.
        row = con.execute(f"SELECT store_id FROM {_STORE_TABLE} LIMIT 1").fetchone()
    except duckdb.CatalogException:
        return None
    finally:
        if own:
            con.close()
    return None if row is None else str(row[0])


def connect_to_read(backend: DuckDBBackend) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the store (:class:`~infodp.errors.LedgerError` when the file
    is not a DuckDB database)."""
    try:
        return backend.connect(read_only=True)
    except duckdb.Error as err:
        raise LedgerError(
            f"the store {backend.path.name} cannot be opened as a DuckDB file "
            f"({type(err).__name__})"
        ) from None


def _write_store_id(backend: DuckDBBackend, store_id: str | None = None) -> str:
    """Give the store an id (kept if it has one already); returns it."""
    with private_files(), contextlib.closing(backend.connect(read_only=False)) as con:
        kept = _ensure_store_id(con, store_id)
        con.execute("CHECKPOINT")
    _chmod_private(backend.path)
    return kept


def _ensure_store_id(con: duckdb.DuckDBPyConnection, store_id: str | None = None) -> str:
    """:func:`_write_store_id` on an open writable connection (its caller checkpoints)."""
    con.execute(f"CREATE TABLE IF NOT EXISTS {_STORE_TABLE} (store_id VARCHAR NOT NULL)")
    row = con.execute(f"SELECT store_id FROM {_STORE_TABLE}").fetchone()
    if row is None:
        row = (store_id or secrets.token_hex(16),)
        con.execute(f"INSERT INTO {_STORE_TABLE} VALUES (?)", [row[0]])
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {_DATASETS_TABLE} "
        "(name VARCHAR PRIMARY KEY, meta_json VARCHAR NOT NULL)"
    )
    ensure_settings(con)
    return str(row[0])


def open_for_queries(
    db: str | os.PathLike[str],
    backend: DuckDBBackend,
    *,
    timeout: float,
    ledger: str | os.PathLike[str] | None,
    one_shot: bool,
) -> tuple[Ledger, duckdb.DuckDBPyConnection | None, dict[str, JsonObject] | None]:
    """:func:`open_store` for a curator: (the ledger, the read connection a one-shot process
    keeps, the catalogue when it was read on the way).

    ``db=":memory:"`` keeps the store and (unless ``ledger`` names a file) the ledger in
    memory; ``ledger`` overrides the default ``<db>.ledger`` next to the store. Every DuckDB
    open costs about as much as a small aggregate (benchmarks/cli_startup.py), so an existing
    store is opened once here: a one-shot process (``infodp query``, ``one_shot``) that only
    reads keeps that connection for its answer; otherwise one short read connection reads the
    store's id, where its ledger is and its catalogue. Not kept by default: a read connection
    held from the start would conflict with this process's writes.
    """
    path = Path(db)
    existing = ledger is None and str(db) != ":memory:" and path.is_file()
    kept = backend.connect(read_only=True) if one_shot and existing else None
    brief = connect_to_read(backend) if existing and kept is None else None
    known: dict[str, JsonObject] | None = None
    try:
        opened = open_store(db, backend, timeout=timeout, ledger=ledger, con=kept or brief)
        if brief is not None:
            try:
                known = catalogue(backend, brief)
            except Exception:  # read again (and refused there) at the first query
                known = None
    except BaseException:
        if kept is not None:
            kept.close()
        raise
    finally:
        if brief is not None:
            brief.close()
    return opened, kept, known


def open_store(
    db: str | os.PathLike[str],
    backend: DuckDBBackend,
    *,
    timeout: float = 120.0,
    ledger: str | os.PathLike[str] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> Ledger:
    """The ledger of store ``db``, checked to belong to it; a new store gets both files.

    ``ledger``: where the ledger lives instead of ``<db>.ledger`` (``":memory:"`` for a
    ledger that lives as long as the process). An in-memory store (``db=":memory:"``, rebuilt
    from the caller's data every time) takes its id from its ledger: a durable ledger is then
    checked for soundness, not for belonging to a store that no longer exists.

    Raises :class:`~infodp.errors.LedgerError` when the ledger is missing, empty, corrupt or
    foreign, or when a ledger exists without its store. ``con``: an open read-only
    connection to an existing store, used to read its id (see :func:`read_store_id`).
    """
    if str(db) == ":memory:" or str(ledger) == ":memory:":
        return _open_transient(db, backend, timeout=timeout, ledger=ledger)
    path = Path(db)
    if path.exists():
        target, store_id = ledger_of(path, backend, ledger=ledger, con=con)
        return Ledger(target, timeout=timeout, store_id=store_id, create=False)
    target = (chosen_ledger() or default_ledger(path)) if ledger is None else ledger
    if is_url(target):
        path.parent.mkdir(parents=True, exist_ok=True)
        store_id = _write_store_id(backend)
        remember_ledger(backend, str(target))
        return Ledger(target, timeout=timeout, store_id=store_id, create=True)
    lp = Path(target)
    if lp.exists():
        raise LedgerError(
            f"the ledger {lp.name} exists but its store {path.name} does not: restore the store "
            "file (or remove the orphaned ledger)."
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    store_id = _write_store_id(backend)
    return Ledger(lp, timeout=timeout, store_id=store_id, create=True)


def ledger_of(
    path: Path,
    backend: DuckDBBackend,
    *,
    ledger: str | os.PathLike[str] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> tuple[str | os.PathLike[str], str]:
    """(where the ledger of the existing store ``path`` is, the store's id): the ledger named,
    else the one the store records (a URL), else the file beside it (:func:`open_store`)."""
    named = ledger if ledger is not None else chosen_ledger()
    own = con is None and not named
    if own:
        # The id and the recorded ledger read on one connection: each DuckDB open costs
        # about as much as a small aggregate, and every Curator opens its store.
        con = connect_to_read(backend)
    try:
        store_id = read_store_id(backend, con)
        if store_id is None:
            raise LedgerError(
                f"the store {path.name} carries no store id (made by an older infodp, or not "
                "an infodp store); (data owner) run 'infodp ledger reinit --db STORE --yes' "
                "to bind a new ledger to it, which forgets all budgets."
            )
        chosen = named or stored_ledger(backend, con) or ledger_path(path)
        return (ledger if ledger is not None else chosen), store_id
    finally:
        if own and con is not None:
            con.close()


def _open_transient(
    db: str | os.PathLike[str],
    backend: DuckDBBackend,
    *,
    timeout: float,
    ledger: str | os.PathLike[str] | None,
) -> Ledger:
    """An in-memory store or an in-memory ledger (:class:`infodp.Session`, the demo)."""
    if str(db) != ":memory:":
        # A store on disk with a ledger in memory: the ledger takes the store's id.
        store_id = read_store_id(backend) if Path(db).exists() else None
        return Ledger(":memory:", timeout=timeout, store_id=store_id or _write_store_id(backend))
    if ledger is None or str(ledger) == ":memory:":
        led = Ledger(":memory:", timeout=timeout)
    else:
        led = Ledger(ledger, timeout=timeout, create=True)
    _write_store_id(backend, led.store_id)
    return led


def record_dataset(backend: DuckDBBackend, name: str, meta: JsonObject) -> None:
    """Keep a dataset's declaration in the store too (for :func:`reinit_ledger`).

    >>> import tempfile, os
    >>> db = os.path.join(tempfile.mkdtemp(), "s.duckdb")
    >>> record_dataset(DuckDBBackend(db), "t", {"schema_json": "{}", "rows": 0})
    >>> read_store_id(DuckDBBackend(db)) is not None
    True
    """
    # The id (kept if there) and the record on one connection: each open costs about as much
    # as a small aggregate.
    with private_files(), contextlib.closing(backend.connect(read_only=False)) as con:
        _ensure_store_id(con)
        con.execute(
            f"INSERT OR REPLACE INTO {_DATASETS_TABLE} VALUES (?, ?)",
            [name, json.dumps(meta, sort_keys=True)],
        )
        con.execute("CHECKPOINT")
    _chmod_private(backend.path)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def store_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The names of the store's tables (its own schema, not DuckDB's temporary one)."""
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_catalog = current_database() AND table_schema = 'main'"
    ).fetchall()
    return [str(r[0]) for r in rows]


def commit_tables(
    backend: DuckDBBackend, name: str, renames: list[tuple[str, str]], where: JsonObject
) -> None:
    """Give the copied tables their stored names and record dataset ``name`` as pending, in
    one transaction: after a kill the store holds either the new tables under their temporary
    names only, or the stored tables with a record saying which they are.

    The record stays pending (``{"pending": {"pid": ..., "tables": [...]}}`` next to
    ``where``) until :func:`record_dataset` replaces it once the ledger has the dataset;
    :func:`sweep_registrations` completes or undoes it after a kill. A stored name already
    taken (another process registered it meanwhile) fails the whole transaction.
    """
    mark: JsonObject = {"pid": os.getpid(), "tables": [new for _, new in renames]}
    pending = {**where, "pending": mark}
    with private_files(), contextlib.closing(backend.connect(read_only=False)) as con:
        _ensure_store_id(con)  # committed on its own, before the transaction, as it was
        con.execute("BEGIN TRANSACTION")
        try:
            for old, new in renames:
                con.execute(f"ALTER TABLE {_quoted(old)} RENAME TO {_quoted(new)}")
            con.execute(
                f"INSERT INTO {_DATASETS_TABLE} VALUES (?, ?)",
                [name, json.dumps(pending, sort_keys=True)],
            )
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("CHECKPOINT")
    _chmod_private(backend.path)


def forget_tables(backend: DuckDBBackend, name: str | None, tables: list[str]) -> None:
    """Drop ``tables`` (made by one registration, never anyone else's) and, when ``name`` is
    given, its catalogue record, in one transaction."""
    with private_files(), contextlib.closing(backend.connect(read_only=False)) as con:
        con.execute("BEGIN TRANSACTION")
        try:
            for table in tables:
                con.execute(f"DROP TABLE IF EXISTS {_quoted(table)}")
            if name is not None:
                with contextlib.suppress(duckdb.CatalogException):
                    con.execute(f"DELETE FROM {_DATASETS_TABLE} WHERE name = ?", [name])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("CHECKPOINT")


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (on this machine: the store is a local file)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # someone else's process: alive
        return True
    return True


def _pid_of(table: str) -> int | None:
    """The process that made temporary table ``table`` (None: not one of ours)."""
    if not table.lower().startswith(NEW_TABLE_PREFIX):
        return None
    pid = table[len(NEW_TABLE_PREFIX) :].partition("_")[0]
    return int(pid) if pid.isdigit() else None


def sweep_registrations(backend: DuckDBBackend, ledger: Ledger) -> list[str]:
    """Finish what registrations killed midway left behind; returns the datasets undone.

    Tables still under a temporary name whose process is gone are dropped. A pending
    catalogue record whose process is gone is completed from the ledger when the ledger has
    the dataset (the registration's commit point), or else undone: its tables are dropped
    with it. A registration still running in another process is left alone.
    """
    return sweep_and_list(backend, ledger)[0]


def sweep_and_list(backend: DuckDBBackend, ledger: Ledger) -> tuple[list[str], list[str] | None]:
    """:func:`sweep_registrations`, and the store's tables when the sweep changed nothing
    (read on the same connection; None when it changed something or there is no store yet)."""
    if str(backend.path) != ":memory:" and not backend.path.exists():
        return [], None
    undone: list[str] = []
    with contextlib.closing(backend.connect(read_only=True)) as con:
        present = store_tables(con)
        orphans = [t for t in present if (p := _pid_of(t)) is not None and not _alive(p)]
        records = catalogue(backend, con)
    pending: dict[str, tuple[JsonObject, list[str]]] = {}
    for n, meta in records.items():
        mark = meta.get("pending")
        if isinstance(mark, dict) and not _alive(int(str(mark.get("pid", 0)))):
            tables = mark.get("tables")
            made = [str(t) for t in tables] if isinstance(tables, list) else []
            pending[n] = ({k: v for k, v in meta.items() if k != "pending"}, made)
    if orphans:
        forget_tables(backend, None, orphans)
    if not pending:
        return undone, None if orphans else present
    known = {d.name: d for d in ledger.datasets()}
    for name, (where, made) in pending.items():
        record = known.get(name)
        if record is None:
            forget_tables(backend, name, made)
            undone.append(name)
            continue
        record_dataset(
            backend,
            name,
            {
                **where,
                "schema_json": record.schema_json,
                "rows": record.rows,
                "source": record.source,
                "info_cap_bits": record.info_cap_bits,
                "unit_rows_ok": record.unit_rows_ok,
                "max_epsilon": None if record.max_epsilon is None else str(record.max_epsilon),
                "max_delta": None if record.max_delta is None else str(record.max_delta),
                "fingerprint": record.fingerprint,
                "budget_group": record.budget_group,
                "independent": record.independent,
            },
        )
    return undone, None


def catalogue(
    backend: DuckDBBackend, con: duckdb.DuckDBPyConnection | None = None
) -> dict[str, JsonObject]:
    """Every dataset's record in the store (name → what :func:`record_dataset` kept).

    A record's ``backend`` is ``"duckdb"`` (the default, a table in this file) or ``"spark"``
    (``source`` and ``bounded_path``: the Parquet copy Spark wrote at registration).

    >>> import tempfile, os
    >>> db = os.path.join(tempfile.mkdtemp(), "s.duckdb")
    >>> record_dataset(DuckDBBackend(db), "t", {"backend": "spark", "bounded_path": "/b/t"})
    >>> catalogue(DuckDBBackend(db))["t"]["backend"]
    'spark'
    """
    own = con is None
    if con is None:
        con = backend.connect(read_only=True)
    try:
        rows = con.execute(f"SELECT name, meta_json FROM {_DATASETS_TABLE}").fetchall()
    except duckdb.CatalogException:
        return {}
    finally:
        if own:
            con.close()
    return {str(name): json.loads(meta) for name, meta in rows}


def fingerprint(
    backend: DuckDBBackend,
    table: str,
    schema: DatasetSchema,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
) -> str:
    """SHA-256 fingerprint of a bounded table's content (row order and names ignored).

    The privacy unit and every declared column (numeric ones as clamped and snapped to their
    grid) are hashed per row; the multiset of row hashes is summed, so the same people with
    the same values give the same fingerprint whatever the file, order or dataset name.

    >>> import tempfile, os, pandas as pd
    >>> from infodp.curator.engine import Curator
    >>> cur = Curator(os.path.join(tempfile.mkdtemp(), "s.duckdb"))
    >>> s = {"table": "t", "privacy_unit": "row",
    ...      "columns": {"x": {"type": "int", "bounds": [0, 9]}}}
    >>> info = cur.register_dataset("t", pd.DataFrame({"x": [1, 2, 30]}), s)
    >>> fingerprint(cur.backend, "t", cur.schema("t")) == info["fingerprint"]
    True
    """
    cols: list[str] = []
    if not schema.unit_is_row:
        cols.append(schema.privacy_unit)
    for col in schema.columns:
        if col.name.lower() == schema.privacy_unit.lower():
            continue
        cols.append(bounded_column(col.name) if col.has_bounded_copy else col.name)
    quoted = ", ".join('"' + c.replace('"', '""') + '"' for c in cols)
    tq = '"' + table.replace('"', '""') + '"'
    sql = f"SELECT count(*), coalesce(sum(hash({quoted})::HUGEINT), 0) FROM {tq}"
    if con is not None:  # the caller's open writable connection (left open)
        row = con.execute(sql).fetchone()
    else:
        with private_files(), contextlib.closing(backend.connect(read_only=False)) as own:
            row = own.execute(sql).fetchone()
    types = [c.type for c in schema.columns]
    text = json.dumps([row[0] if row else 0, str(row[1] if row else 0), types])
    return hashlib.sha256(text.encode()).hexdigest()


class Reinitialised(TypedDict):
    """What :func:`reinit_ledger` did: the store's id and the datasets restored (by name)."""

    store_id: str
    datasets: list[str]


def reinit_ledger(db: str | os.PathLike[str], *, timeout: float = 120.0) -> Reinitialised:
    """Start a new, empty ledger for store ``db`` (the data owner's explicit decision).

    Every budget, entry, key and synopsis of the old ledger is forgotten; the registered
    datasets are restored from the store's own record of them, with nothing spent, in their
    budget groups (their unit sketches are made again, under the new ledger's salt, at the
    next registration). Returns what was done (store id, datasets restored).

    >>> import tempfile, os, pandas as pd
    >>> from infodp.curator.engine import Curator
    >>> db = os.path.join(tempfile.mkdtemp(), "s.duckdb")
    >>> cur = Curator(db)
    >>> s = {"table": "t", "privacy_unit": "row",
    ...      "columns": {"x": {"type": "int", "bounds": [0, 9]}}}
    >>> _ = cur.register_dataset("t", pd.DataFrame({"x": [1, 2]}), s)
    >>> cur.close(); os.remove(db + ".ledger")
    >>> reinit_ledger(db)["datasets"]
    ['t']
    """
    path = Path(db)
    if not path.is_file():
        raise ParameterError("--db", str(db), "an existing infodp store")
    backend = DuckDBBackend(path, timeout=timeout)
    store_id = _write_store_id(backend)
    # A store on a PostgreSQL ledger starts again on a file (that database is left as it is).
    if stored_ledger(backend) is not None:
        remember_ledger(backend, None)
    lp = ledger_path(path)
    for p in (lp, Path(str(lp) + "-wal"), Path(str(lp) + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
    led = Ledger(lp, timeout=timeout, store_id=store_id, create=True)
    with contextlib.closing(backend.connect(read_only=True)) as con:
        rows = con.execute(
            f"SELECT name, meta_json FROM {_DATASETS_TABLE} ORDER BY name"
        ).fetchall()
    restored: list[str] = []
    # A budget group's root before its members, which are restored into it as recorded.
    # A pending record (a registration killed before the old ledger had it) is not restored;
    # the next registration's sweep removes it and its tables.
    found = [(n, json.loads(m)) for n, m in rows]
    records = sorted(
        ((n, m) for n, m in found if "pending" not in m),
        key=lambda r: r[1].get("budget_group") is not None,
    )
    from infodp.curator.ledger.grants import Sharing  # owner side: not on the query path

    for name, meta in records:
        group = meta.get("budget_group")
        led.register_dataset(
            name,
            meta["schema_json"],
            rows=int(meta["rows"]),
            source=str(meta.get("source", "-")),
            info_cap_bits=meta.get("info_cap_bits"),
            unit_rows_ok=bool(meta.get("unit_rows_ok", False)),
            max_epsilon=None if meta.get("max_epsilon") is None else Fraction(meta["max_epsilon"]),
            max_delta=None if meta.get("max_delta") is None else Fraction(meta["max_delta"]),
            fingerprint=meta.get("fingerprint"),
            sharing=Sharing(group=group, independent=bool(meta.get("independent", False))),
        )
        restored.append(name)
    led.close()
    return Reinitialised(store_id=store_id, datasets=restored)
