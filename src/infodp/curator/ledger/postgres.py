"""The ledger's storage layer on PostgreSQL: one ledger shared by a fleet of servers.

A ledger named by a URL (``postgresql://user@host:port/dbname``) lives in a PostgreSQL
database instead of a SQLite file; everything above the storage layer (schema version,
seals, hash chain, reservations, settlements, budget groups, ``infodp ledger verify``) is
the same code. The seam is small: :class:`PgDatabase` has the interface of
:class:`~infodp.curator.ledger.storage.Database` (transactions, guarded writes, group
commit), and its connections are :class:`PgConnection` adapters that speak the handful of
SQLite dialect the ledger's modules use (``?`` placeholders, ``INSERT OR IGNORE/REPLACE``,
``PRAGMA table_info/quick_check``, ``sqlite_master``, ``json_each``, the scalar ``max``,
the column types, rows read by name or position, ``lastrowid``) — see :func:`translate`.
A URL may name a schema with ``?options=-csearch_path%3DNAME``: one ledger per schema.

How charges serialise across servers. Every write transaction (a group of charges,
settlements, grants) starts with ``pg_advisory_xact_lock`` on one key of the ledger
(its schema): the PostgreSQL equivalent of SQLite's ``BEGIN IMMEDIATE`` writer lock, held
until COMMIT or ROLLBACK, at isolation READ COMMITTED (every statement after the lock sees
every commit made before it). Row locks on the analyst's or group's account row
(``SELECT … FOR UPDATE``) would not be enough: each entry carries a hash link to the one
before it (:func:`~infodp.curator.ledger.integrity.chain`), so every append, whatever its
analyst, reads and moves the one head of the chain: charges of different analysts
conflict on it anyway. SERIALIZABLE with retry would abort all but one of every set of
concurrent charges (they all read the head) and retry them, with no bound on the retries
under load; one lock queues them instead, in arrival order, and one group commit per
process shares each lock among up to 64 writes. Commits are durable when
``synchronous_commit`` is ``on`` (PostgreSQL's default; ``docs/deployment.md``).

>>> print(translate("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)"))  # doctest: +ELLIPSIS
INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = ...
>>> is_url("postgresql://ledger@127.0.0.1:5432/infodp"), is_url("s.duckdb.ledger")
(True, False)
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sqlite3
import urllib.parse
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from infodp._retry import retry
from infodp.curator.ledger.storage import Database, is_url
from infodp.errors import InternalError, LedgerError, ParameterError

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "LedgerUnreachable",
    "PgConnection",
    "PgDatabase",
    "Row",
    "Unreachable",
    "is_url",
    "redact",
    "translate",
]

#: The primary key of each table an ``INSERT OR REPLACE`` writes (its conflict target).
_KEYS = {
    "meta": "key",
    "unit_sketches": "dataset",
    "key_revocations": "analyst",
    "sqlite_sequence": "name",
}

#: SQLite's ``sqlite_sequence`` (AUTOINCREMENT's highest id ever used), kept by a trigger:
#: the charge reads it to number the next entry (ids are never reused).
SEQUENCE_DDL = (
    "CREATE TABLE IF NOT EXISTS sqlite_sequence (name TEXT PRIMARY KEY, seq BIGINT NOT NULL)",
    "CREATE OR REPLACE FUNCTION infodp_entry_seq() RETURNS trigger AS $$ BEGIN "
    "INSERT INTO sqlite_sequence (name, seq) VALUES ('entries', NEW.id) "
    "ON CONFLICT (name) DO UPDATE SET seq = GREATEST(sqlite_sequence.seq, EXCLUDED.seq); "
    "RETURN NEW; END $$ LANGUAGE plpgsql",
    "DROP TRIGGER IF EXISTS infodp_entry_seq ON entries",
    "CREATE TRIGGER infodp_entry_seq AFTER INSERT ON entries "
    "FOR EACH ROW EXECUTE FUNCTION infodp_entry_seq()",
)


def redact(url: str) -> str:
    """``url`` without its password (for messages and logs).

    >>> redact("postgresql://ledger:secret@db.internal:5432/infodp")
    'postgresql://ledger@db.internal:5432/infodp'
    """
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    return urllib.parse.urlunsplit((parts.scheme, user + host, parts.path, "", ""))


@functools.lru_cache(maxsize=512)
def translate(sql: str) -> str:
    """The PostgreSQL text of one statement of the ledger's SQLite dialect."""
    s = sql.strip().rstrip(";")
    upper = s.upper()
    if upper.startswith("PRAGMA"):
        return _pragma(s)
    s = s.replace("%", "%%").replace("?", "%s")
    if upper.startswith(("CREATE TABLE", "ALTER TABLE")):
        s = re.sub(r"\bINTEGER PRIMARY KEY AUTOINCREMENT\b", "BIGINT PRIMARY KEY", s)
        s = re.sub(r"\bINTEGER\b", "BIGINT", s)
        s = re.sub(r"\bREAL\b", "DOUBLE PRECISION", s)  # PostgreSQL's REAL is 4 bytes
        s = re.sub(r"\bBLOB\b", "BYTEA", s)
    s = s.replace(
        "SELECT name FROM sqlite_master WHERE type='table'",
        "SELECT table_name AS name FROM information_schema.tables "
        "WHERE table_schema = current_schema()",
    )
    s = re.sub(r"json_each\((\w+\.\w+)\)", r"json_array_elements_text(\1::json) AS j(value)", s)
    s = s.replace("max(0, ", "GREATEST(0, ")
    m = re.match(r"INSERT OR (IGNORE|REPLACE) INTO (\w+) \(([^)]*)\)", s, flags=re.IGNORECASE)
    if m is None:
        return s
    kind, table, columns = m.group(1).upper(), m.group(2), m.group(3)
    s = "INSERT INTO" + s[len("INSERT OR ") + len(kind) + len(" INTO") :]
    if kind == "IGNORE":
        return s + " ON CONFLICT DO NOTHING"
    key = _KEYS.get(table)
    if key is None:
        raise InternalError(f"no conflict target known for INSERT OR REPLACE INTO {table}")
    rest = [c.strip() for c in columns.split(",") if c.strip() != key]
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in rest)
    return s + f" ON CONFLICT ({key}) DO " + (f"UPDATE SET {updates}" if rest else "NOTHING")


def _pragma(s: str) -> str:
    m = re.match(r"PRAGMA\s+table_info\((\w+)\)", s, flags=re.IGNORECASE)
    if m is not None:
        return (
            "SELECT ordinal_position - 1 AS cid, column_name AS name "
            "FROM information_schema.columns WHERE table_schema = current_schema() "
            f"AND table_name = '{m.group(1)}' ORDER BY ordinal_position"
        )
    # quick_check: PostgreSQL checks its own pages (data checksums); other PRAGMAs tune
    # SQLite only.
    return "SELECT 'ok' AS quick_check"


class Row:
    """A row read by column name or position, like :class:`sqlite3.Row`.

    >>> r = Row(("id", "chain"), {"id": 0, "chain": 1}, (7, "ab"))
    >>> r["chain"], r[0], tuple(r), r.keys()
    ('ab', 7, (7, 'ab'), ['id', 'chain'])
    """

    __slots__ = ("_index", "_names", "_values")

    def __init__(self, names: tuple[str, ...], index: dict[str, int], values: Sequence[object]):
        self._names, self._index, self._values = names, index, tuple(values)

    def __getitem__(self, key: int | str) -> object:
        if isinstance(key, str):
            return self._values[self._index[key]]
        return self._values[key]

    def __iter__(self) -> Iterator[object]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        """The column names, in order."""
        return list(self._names)


class _Column(Protocol):
    @property
    def name(self) -> str: ...


class _Described(Protocol):
    """What the row factory reads of a psycopg cursor: its result's column names."""

    @property
    def description(self) -> Sequence[_Column] | None: ...


def _rows(cursor: _Described) -> Callable[[Sequence[object]], Row]:
    names = tuple(c.name for c in cursor.description or ())
    index = {n: i for i, n in enumerate(names)}
    return lambda values: Row(names, index, values)


def _param(value: object) -> object:
    # SQLite stores booleans as integers; the ledger's flag columns are BIGINT here too.
    return int(value) if isinstance(value, bool) else value


class Unreachable(sqlite3.OperationalError):
    """The ledger's database could not be reached, or dropped the connection."""


class LedgerUnreachable(LedgerError):
    """No connection to the ledger's database could be opened (it is down or restarting)."""


class PgCursor:
    """The results of one statement (the part of :class:`sqlite3.Cursor` the ledger uses)."""

    def __init__(self, cur: psycopg.Cursor[Row], lastrowid: int | None) -> None:
        self._cur = cur
        self.rowcount = cur.rowcount
        self.lastrowid = lastrowid

    def fetchone(self) -> Row | None:
        """The next row, or None."""
        return self._cur.fetchone() if self._cur.description else None

    def fetchall(self) -> list[Row]:
        """Every row left."""
        return self._cur.fetchall() if self._cur.description else []

    def __iter__(self) -> Iterator[Row]:
        return iter(self.fetchall())


class PgConnection:
    """A psycopg connection that runs the ledger's SQLite dialect (module doc).

    Autocommit: ``BEGIN``/``COMMIT``/``SAVEPOINT`` are sent as the ledger's modules write
    them. psycopg's errors come out as :mod:`sqlite3`'s (integrity, operational, other),
    which the ledger already handles.
    """

    def __init__(
        self,
        conn: psycopg.Connection[Row],
        reopen: Callable[[], psycopg.Connection[Row]] | None = None,
    ) -> None:
        self.raw = conn
        self._reopen = reopen

    def execute(self, sql: str, params: Sequence[object] = ()) -> PgCursor:
        """Run one statement (translated) with ``params``.

        A statement sent outside a transaction on a connection the server dropped (it
        restarted) is sent once more on a new connection: nothing of it had run.
        """
        import psycopg
        from psycopg.pq import TransactionStatus

        text = translate(sql)
        entries = re.match(r"\s*INSERT INTO entries\b", text) is not None
        if entries:
            text += " RETURNING id"
        args = tuple(_param(p) for p in params)
        idle = self.raw.info.transaction_status == TransactionStatus.IDLE
        try:
            try:
                cur = self.raw.execute(text, args)
            except psycopg.OperationalError:
                if not (idle and self.broken and self._reopen is not None):
                    raise
                self.raw = self._reopen()
                cur = self.raw.execute(text, args)
            lastrowid = None
            if entries:
                row = cur.fetchone()
                if row is not None:
                    if not isinstance(row[0], int):  # RETURNING id of a BIGINT column
                        raise InternalError("INSERT INTO entries returned a non-integer id")
                    lastrowid = row[0]
            return PgCursor(cur, lastrowid)
        except psycopg.errors.IntegrityError as err:
            raise sqlite3.IntegrityError(_first_line(err)) from None
        except psycopg.errors.LockNotAvailable as err:
            raise sqlite3.OperationalError(_first_line(err)) from None
        except psycopg.OperationalError as err:
            raise Unreachable(_first_line(err)) from None
        except LedgerUnreachable as err:
            raise Unreachable(str(err)) from None
        except psycopg.Error as err:
            raise sqlite3.DatabaseError(_first_line(err)) from None

    def close(self) -> None:
        """Close the connection."""
        self.raw.close()

    @property
    def broken(self) -> bool:
        """Whether the connection was closed or lost (the server restarted, say)."""
        return bool(self.raw.closed or self.raw.broken)


def _close_quietly(conn: psycopg.Connection[Row], pid: int | None = None) -> None:
    if pid is not None and pid != os.getpid():
        return  # inherited through a fork: closing it would end the parent's session
    with contextlib.suppress(Exception):
        conn.close()


def _first_line(err: Exception) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


class _Location:
    """What the ledger's messages call the ledger: the URL without its password."""

    def __init__(self, url: str) -> None:
        self.name = redact(url)

    def __str__(self) -> str:
        return self.name


class PgDatabase(Database):
    """A PostgreSQL ledger with :class:`~infodp.curator.ledger.storage.Database`'s interface.

    One connection per process (reopened after a fork, or when the server dropped it);
    every write transaction holds the ledger's advisory lock (module doc). A lost connection
    is reopened before a transaction begins, so writers wait out a PostgreSQL restart up to
    ``timeout`` seconds; a commit whose outcome is unknown (the connection dropped during
    COMMIT) fails, as it would on SQLite.
    """

    def __init__(self, url: str, *, timeout: float = 120.0) -> None:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise ParameterError(
                f"--ledger {redact(url)}: a PostgreSQL ledger needs psycopg; install "
                "infodp[postgres]"
            ) from None
        super().__init__(":memory:", timeout=timeout)
        self.in_memory = False
        self.url = url
        self.path = cast(Path, _Location(url))
        # What names this ledger among the process's (group commit, writers' lock): the URL
        # without its password, with its options (one schema is one ledger).
        self.absolute = redact(url) + "?" + urllib.parse.urlsplit(url).query
        self._pg: PgConnection | None = None

    @property
    def name(self) -> str:
        """The ledger as messages name it (the URL without its password)."""
        return redact(self.url)

    def exists(self) -> bool:
        """Whether the database holds a ledger (its ``meta`` table)."""
        with self.read() as conn:
            row = conn.execute(
                "SELECT count(*) AS n FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND table_name = 'meta'"
            ).fetchone()
        return row is not None and int(row["n"]) > 0

    def size(self) -> int:
        """1: a database is never an empty file (a ledger missing its tables is not there)."""
        return 1

    def make(self) -> None:
        """Nothing to make: the tables are created in the database the URL names."""

    def pin(self) -> None:
        """Nothing to pin: the ledger is a database, not a file (its store id is checked)."""

    def moved(self) -> bool:
        """Never: a database cannot be replaced under its URL like a file (see pin)."""
        return False

    def connection(self) -> sqlite3.Connection:
        """This process's connection (see the class doc)."""
        if self._pg is None or self._pid != os.getpid() or self._pg.broken:
            self._pg, self._pid = self._connect_pg(), os.getpid()
        return cast(sqlite3.Connection, self._pg)

    def _connect_pg(self) -> PgConnection:
        return PgConnection(self._open_raw(), self._open_raw)

    def _open_raw(self) -> psycopg.Connection[Row]:
        import psycopg

        try:
            raw = psycopg.connect(self.url, autocommit=True, row_factory=_rows, connect_timeout=10)
        except psycopg.Error as err:
            raise LedgerUnreachable(
                f"the ledger {self.name} cannot be reached ({_first_line(err)})"
            ) from None
        raw.execute(f"SET lock_timeout = {int(self.timeout * 1000)}")
        # Closed with the database object at the latest (a ledger nobody closed).
        weakref.finalize(self, _close_quietly, raw, os.getpid())
        return raw

    def sync(self) -> None:
        """Nothing deferred: every guarded commit waited for the server's durable commit."""

    def deferrable(self) -> bool:
        """Never: the server's commit is the durable one (``synchronous_commit``)."""
        return False

    def close(self) -> None:
        """Close this process's connection (it reopens on next use)."""
        with self.lock:
            if self._pg is not None and self._pid == os.getpid():
                with contextlib.suppress(Exception):
                    self._pg.close()
            self._pg = None

    def _begin(self, deadline: float, durable: bool) -> sqlite3.Connection:
        del durable  # every commit is the server's durable commit

        def attempt() -> sqlite3.Connection:
            try:
                conn = self.connection()
            except LedgerError as err:
                raise Unreachable(str(err)) from None
            conn.execute("BEGIN")
            try:
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(current_schema()))")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
            return conn

        def lost(err: Exception) -> bool:
            if isinstance(err, sqlite3.OperationalError):
                self.close()  # reconnect on the next try
                return True
            return False

        return retry(
            attempt,
            retryable=lost,
            deadline=deadline,
            cap=0.5,
            timed_out=lambda err: InternalError(
                f"ledger {self.name} stayed locked or unreachable for {self.timeout} s"
            ),
        )

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every statement sees one snapshot (REPEATABLE READ)."""
        with self.lock:
            conn = self.connection()
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield conn
            finally:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("COMMIT")

    def after_create(self, conn: sqlite3.Connection) -> None:
        """Make the ledger's ``sqlite_sequence`` (see :data:`SEQUENCE_DDL`)."""
        for statement in SEQUENCE_DDL:
            conn.execute(statement)
