"""Storage and durability of the ledger file, with no privacy accounting in it.

A :class:`Database` is one SQLite file (or a private in-memory database) in WAL mode with
``synchronous=FULL``: every durable commit is fsync'd before it returns. Each write is one
``BEGIN IMMEDIATE`` transaction under SQLite's single-writer lock; ``busy_timeout`` plus a
retry loop makes a second writer wait instead of failing with a lock error. Writes of one
file in one process queue in a leader/follower group commit (:class:`GroupCommit`): one
transaction and one fsync serve every write that arrived while the previous group committed.

A *guarded* write (the ledger's reservations) runs only after :attr:`Database.guard` has
accepted the open transaction, and makes the group's commit durable unless the caller defers
the fsync to :meth:`Database.sync`. Writes are refused one by one by raising
:class:`~infodp.errors.InfodpError` inside their own SAVEPOINT; anything else fails the
whole group, of which nothing is then committed.

>>> import tempfile, os
>>> db = Database(os.path.join(tempfile.mkdtemp(), "x.db"), create=True)
>>> with db.transaction() as conn:
...     _ = conn.execute("CREATE TABLE t (v INTEGER)")
>>> db.submit(lambda conn: conn.execute("INSERT INTO t VALUES (7)").lastrowid, guarded=True)
1
>>> with db.read() as conn:
...     conn.execute("SELECT v FROM t").fetchone()["v"]
7
>>> db.close()
"""

from __future__ import annotations

import contextlib
import copy
import os
import sqlite3
import threading
import time
import urllib.parse
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from infodp._retry import retry
from infodp.errors import InfodpError, InternalError, LedgerError

__all__ = [
    "Database",
    "GroupCommit",
    "Pending",
    "WalFile",
    "Writers",
    "create_private",
    "group_of",
    "is_url",
    "writers_of",
]

#: At most this many writes share one transaction (bounds how long the lock is held).
MAX_GROUP = 64

_SCHEMES = ("postgresql://", "postgres://")

Work = Callable[[sqlite3.Connection], int | None]


class _Refused(Exception):
    """Carries a refused write out of its transaction, which is then rolled back."""

    def __init__(self, error: InfodpError) -> None:
        super().__init__(str(error))
        self.error = error


class Database:
    """One SQLite file with durable transactions and group commit (see the module doc)."""

    def __init__(
        self, path: str | os.PathLike[str], *, timeout: float = 120.0, create: bool = False
    ) -> None:
        #: ``":memory:"``: one private connection, nothing written to disk.
        self.in_memory = str(path) == ":memory:"
        self.path = Path(path)
        self.absolute = str(self.path.absolute())
        self.timeout = timeout
        #: (st_dev, st_ino) of the file as opened (see :meth:`pin`).
        self.identity: tuple[int, int] | None = None
        #: Names which objects on one file may share a group (the ledger sets its store id).
        self.tag: str | None = None
        #: Called with the open transaction before the guarded writes of a group; raising
        #: :class:`~infodp.errors.InfodpError` refuses every guarded write of it.
        self.guard: Callable[[sqlite3.Connection], None] | None = None
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self.lock = threading.RLock()
        self._wal: WalFile | None = None
        self._wal_lock = threading.Lock()
        #: Whether this process's connection runs in WAL mode (deferred durability needs it).
        self._wal_mode = False
        #: The connection's synchronous level: True FULL, False NORMAL (None: unknown).
        self._full: bool | None = True
        self._held_group: tuple[tuple[object, ...], GroupCommit] | None = None
        self._held_writers: tuple[tuple[object, ...], Writers] | None = None
        if create and not self.in_memory and not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            create_private(self.path)

    @property
    def name(self) -> str:
        """The ledger as messages name it (the file's name)."""
        return self.path.name

    def exists(self) -> bool:
        """Whether the file exists (an in-memory database: never before it is made)."""
        return not self.in_memory and self.path.exists()

    def size(self) -> int:
        """The file's size in bytes (0: empty, a ledger still to be made)."""
        return 0 if self.in_memory else self.path.stat().st_size

    def make(self) -> None:
        """Create the empty file (owner-only), and its directory."""
        if not self.in_memory:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            create_private(self.path)

    def after_create(self, conn: sqlite3.Connection) -> None:
        """Anything the storage needs once the ledger's tables exist (nothing, on SQLite)."""

    def pin(self) -> None:
        """Remember the file's identity: :meth:`moved` then tells a deleted/replaced file."""
        st = self.path.stat()
        self.identity = (st.st_dev, st.st_ino)

    def moved(self) -> bool:
        """True when the file is no longer the one pinned (raises FileNotFoundError if gone)."""
        st = self.path.stat()
        return (st.st_dev, st.st_ino) != self.identity

    # -- connections ---------------------------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        """This process's connection (one per process, reopened after a fork).

        ``mode=rw``: a file that disappeared is never silently recreated by SQLite. Rows read
        through it are :class:`sqlite3.Row` (read by column name).
        """
        if self.in_memory:
            if self._conn is None:  # reopening would lose the in-memory database
                self._conn = sqlite3.connect(
                    ":memory:", isolation_level=None, check_same_thread=False
                )
                self._conn.row_factory = sqlite3.Row
            return self._conn
        if self._conn is None or self._pid != os.getpid():
            conn = self._connect()
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            conn.execute("PRAGMA synchronous = FULL")
            self._drop_wal()
            self._conn, self._pid = conn, os.getpid()
            self._full = True
            self._wal_mode = mode is not None and str(mode[0]).lower() == "wal"
        return self._conn

    def _connect(self) -> sqlite3.Connection:
        uri = "file:" + urllib.parse.quote(self.absolute) + "?mode=rw"
        try:
            return sqlite3.connect(
                uri, timeout=self.timeout, isolation_level=None, check_same_thread=False, uri=True
            )
        except sqlite3.OperationalError as err:
            raise LedgerError(
                f"the ledger {self.path.name} cannot be opened ({err}); was it deleted?"
            ) from None

    def _drop_wal(self) -> None:
        with self._wal_lock:
            wal, self._wal = self._wal, None
            if wal is not None and wal.pid == os.getpid():
                with contextlib.suppress(OSError):
                    os.close(wal.fd)

    def sync(self) -> None:
        """Make every transaction this process has committed durable (fsync the WAL).

        A commit made with ``durable=False`` is in the WAL (the operating system's page
        cache) when it returns, so it survives the death of this process, but a power loss
        could still undo it. This is the fsync ``synchronous=FULL`` would have made inside
        the commit (SQLite's WAL mode syncs the WAL file, and the directory once for a new
        WAL; Linux's ``fsync`` flushes the file's pages whichever descriptor wrote them).
        Raises :class:`OSError` when the fsync fails.
        """
        if self.in_memory:
            return
        with self.lock:
            self.connection()  # (re)opened after a fork: the WAL descriptor goes with it
            if not self._wal_mode:
                return  # nothing was deferred (see deferrable): every commit was durable
        with self._wal_lock:  # close() waits: the descriptor is never closed mid-fsync
            if self._wal is None or self._wal.pid != os.getpid():
                self._wal = WalFile.open(self.path)
            self._wal.sync()

    def deferrable(self) -> bool:
        """Whether a commit may leave its fsync to :meth:`sync` (WAL mode on a file)."""
        if self.in_memory:
            return False
        with self.lock:
            self.connection()
            return self._wal_mode

    def close(self) -> None:
        """Close this process's connection (it reopens on next use)."""
        with self.lock:
            if self.in_memory:
                return  # closing would drop the in-memory database
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None
            self._drop_wal()

    # -- transactions --------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One BEGIN IMMEDIATE ... COMMIT; waits for other writers instead of failing.

        ``durable`` commits with ``synchronous=FULL`` (fsync'd before returning); a
        non-durable commit may be rolled back by a power loss.
        """
        with self.lock:
            writers = writers_of(self)
            if not writers.lock.acquire(timeout=self.timeout):
                raise InternalError(f"ledger {self.path} stayed locked for {self.timeout} s")
            try:
                conn = self._begin(time.monotonic() + self.timeout, durable)
            except BaseException:
                writers.lock.release()
                raise
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
            finally:
                writers.lock.release()

    def _begin(self, deadline: float, durable: bool) -> sqlite3.Connection:
        def attempt() -> sqlite3.Connection:
            conn = self.connection()
            if self._full != durable:
                # The level stays set for the next transactions (every write goes through
                # here, and reads do not depend on it): set only when it changes.
                self._full = None  # unknown until the statement has run
                conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
                self._full = durable
            conn.execute("BEGIN IMMEDIATE")
            return conn

        def locked(err: Exception) -> bool:
            text = str(err)
            return isinstance(err, sqlite3.OperationalError) and (
                "locked" in text or "busy" in text
            )

        return retry(
            attempt,
            retryable=locked,
            deadline=deadline,
            cap=0.2,
            timed_out=lambda err: InternalError(
                f"ledger {self.path} stayed locked for {self.timeout} s"
            ),
        )

    @contextlib.contextmanager
    def guarded(self) -> Iterator[sqlite3.Connection]:
        """A durable write transaction that :attr:`guard` has accepted."""
        with self.transaction() as conn:
            if self.guard is not None:
                self.guard(conn)
            yield conn

    @contextlib.contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """The connection, for reads (autocommit: each statement sees the latest commit)."""
        with self.lock:
            yield self.connection()

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every statement inside sees one consistent state."""
        with self.lock:
            conn = self.connection()
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    # -- group commit --------------------------------------------------------------------------

    def submit(self, work: Work, *, guarded: bool, durable: bool = True) -> int | None:
        """Run ``work`` in the next group's transaction; returns what it returned.

        ``guarded`` writes are checked by :attr:`guard` first; ``durable=False`` leaves the
        fsync of a guarded write to :meth:`sync` (which must then be called before anything
        depending on it leaves the process).
        """
        return group_of(self).submit(Pending(self, work, guarded=guarded, durable=durable))

    def commit_group(self, batch: list[Pending]) -> None:
        """Group commit: ``batch`` in arrival order, in one transaction with one fsync.

        Each write runs inside its own SAVEPOINT, so a refused one (an
        :class:`~infodp.errors.InfodpError`) undoes only its own changes, and each sees the
        state the ones before it left. The transaction is durable when it holds a guarded
        write that asked for it (or the file cannot defer), and outcomes are handed out only
        after the COMMIT: no caller acts on a write that could still be rolled back.
        """
        guarded = any(item.guarded for item in batch)
        durable = any(item.guarded and item.durable for item in batch) or (
            guarded and not self.deferrable()
        )
        try:
            with self.transaction(durable=durable) as conn:
                outcomes = self._run_batch(conn, batch, guarded)
        except _Refused as refused:
            outcomes = [(None, refused.error)]
        for item, (value, failure) in zip(batch, outcomes, strict=True):
            item.value, item.error = value, failure

    def _run_batch(
        self, conn: sqlite3.Connection, batch: list[Pending], guarded: bool
    ) -> list[tuple[int | None, BaseException | None]]:
        refusal: InfodpError | None = None
        if guarded and self.guard is not None:
            try:
                self.guard(conn)
            except InfodpError as err:
                refusal = err  # nothing guarded goes into a file that is not ours any more
        outcomes: list[tuple[int | None, BaseException | None]] = []
        for item in batch:
            if refusal is not None and item.guarded:
                outcomes.append((None, copy.copy(refusal)))
            elif len(batch) == 1:
                # The only write: a refusal rolls the whole transaction back, which holds
                # nothing else (no SAVEPOINT: two statements fewer).
                try:
                    outcomes.append((item.work(conn), None))
                except InfodpError as err:
                    raise _Refused(err) from None
            else:
                outcomes.append(_in_savepoint(conn, item.work))
        return outcomes


def _in_savepoint(conn: sqlite3.Connection, work: Work) -> tuple[int | None, BaseException | None]:
    conn.execute("SAVEPOINT write_one")
    try:
        return work(conn), None
    except InfodpError as err:
        conn.execute("ROLLBACK TO write_one")
        return None, err
    finally:
        conn.execute("RELEASE write_one")


def is_url(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL ledger (a ``postgresql://`` URL), served by
    :mod:`infodp.curator.ledger.postgres` (imported only then), rather than a file.

    >>> is_url("postgresql://ledger@db.internal/infodp"), is_url("store.duckdb.ledger")
    (True, False)
    """
    return isinstance(target, str) and target.startswith(_SCHEMES)


def create_private(path: Path) -> None:
    """Create an empty file readable and writable by its owner only (mode 0600)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    os.chmod(path, 0o600)


class WalFile:
    """A descriptor on a database's WAL file, for :meth:`Database.sync` (one per connection).

    Opening it fsyncs the directory once, as SQLite does for a new WAL (the file's name must
    survive a power loss too). If the WAL file was replaced since (SQLite deletes it when the
    last connection closes), :meth:`sync` also syncs the new one and the database file.
    """

    __slots__ = ("db", "fd", "ino", "path", "pid")

    def __init__(self, db: Path, path: Path, fd: int) -> None:
        self.db, self.path, self.fd, self.pid = db, path, fd, os.getpid()
        self.ino = os.fstat(fd).st_ino

    @classmethod
    def open(cls, db: Path) -> WalFile:
        """The WAL of ``db`` (which must exist: a committed write made it)."""
        path = db.with_name(db.name + "-wal")
        fd = os.open(path, os.O_RDONLY)
        try:
            _fsync_dir(db.parent)
            return cls(db, path, fd)
        except BaseException:
            os.close(fd)
            raise

    def sync(self) -> None:
        """fsync the WAL (and everything, if the WAL file was replaced since opening)."""
        os.fsync(self.fd)
        try:
            same = os.stat(self.path).st_ino == self.ino
        except FileNotFoundError:
            same = False
        if not same:  # everything went through another file: sync them all
            _fsync_path(self.db)
            with contextlib.suppress(FileNotFoundError):
                _fsync_path(self.path)
            _fsync_dir(self.db.parent)


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    if os.name == "posix":  # directories cannot be opened (nor need syncing) on Windows
        _fsync_path(path)


class Pending:
    """One write waiting for its group's transaction."""

    __slots__ = ("db", "durable", "error", "finished", "guarded", "lead", "value", "work")

    def __init__(self, db: Database, work: Work, *, guarded: bool, durable: bool = True) -> None:
        self.db = db
        self.work = work
        self.guarded = guarded
        #: A guarded write whose commit must be fsync'd (False: the caller calls sync).
        self.durable = durable
        self.value: int | None = None
        self.error: BaseException | None = None
        self.finished = False
        self.lead = False

    def outcome(self) -> int | None:
        """What the work returned, or its error raised again."""
        if self.error is not None:
            raise self.error
        return self.value


class GroupCommit:
    """Leader/follower group commit of the writes of one file in one process.

    Writes queue here. The first caller becomes the leader and commits every write queued so
    far in one transaction; the others wait. When the leader is done it hands leadership to
    the oldest write that arrived meanwhile, so each caller commits at most one group and
    waits for at most the one in flight. Across processes nothing changes: each group is one
    ``BEGIN IMMEDIATE`` transaction under SQLite's single-writer lock.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._queue: list[Pending] = []
        self._busy = False

    def submit(self, item: Pending) -> int | None:
        """Queue ``item``, commit a group if it leads, and return its outcome."""
        with self._cond:
            self._queue.append(item)
            while self._busy and not item.finished and not item.lead:
                self._cond.wait()
            if item.finished:
                return item.outcome()
            self._busy = True
            batch, self._queue = self._queue[:MAX_GROUP], self._queue[MAX_GROUP:]
        try:
            item.db.commit_group(batch)
        except BaseException as err:
            for other in batch:
                # The same failure for everyone in the group (nothing of it was committed).
                other.value, other.error = None, copy.copy(err)
        finally:
            self._hand_over(batch)
        return item.outcome()

    def _hand_over(self, batch: list[Pending]) -> None:
        with self._cond:
            for other in batch:
                other.finished = True
            if self._queue:
                self._queue[0].lead = True
            else:
                self._busy = False
            self._cond.notify_all()


class Writers:
    """The process-wide lock of one file's writers.

    Threads of one process queue here (woken as soon as the writer before them commits)
    instead of in SQLite's busy handler, which polls with sleeps of up to 100 ms.
    """

    __slots__ = ("__weakref__", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()


# Weak values: an entry lives while someone uses it (a database in a transaction, a caller
# in a group), so closed in-memory databases and files no longer used leave nothing behind.
_GROUPS: weakref.WeakValueDictionary[tuple[object, ...], GroupCommit] = (
    weakref.WeakValueDictionary()
)
_WRITERS: weakref.WeakValueDictionary[tuple[object, ...], Writers] = weakref.WeakValueDictionary()
_REGISTRY_LOCK = threading.Lock()


def group_of(db: Database) -> GroupCommit:
    """The group commit ``db`` shares with the objects on the same file, identity and tag."""
    key: tuple[object, ...] = (os.getpid(), id(db))
    if not db.in_memory:
        key = (os.getpid(), db.identity, db.tag, db.absolute)
    # The database holds its group (the registry's values are weak: without this reference
    # each write would make a new one, ~10 us).
    db._held_group = _held(db._held_group, key, _GROUPS, GroupCommit)
    return db._held_group[1]


def writers_of(db: Database) -> Writers:
    """The writers' lock of ``db``'s file in this process (see :class:`Writers`)."""
    key: tuple[object, ...] = (os.getpid(), id(db))
    if not db.in_memory:
        key = (os.getpid(), db.absolute)
    # Held by the database, as its group (see group_of).
    db._held_writers = _held(db._held_writers, key, _WRITERS, Writers)
    return db._held_writers[1]


_Shared = TypeVar("_Shared", GroupCommit, Writers)


def _held(
    held: tuple[tuple[object, ...], _Shared] | None,
    key: tuple[object, ...],
    registry: weakref.WeakValueDictionary[tuple[object, ...], _Shared],
    make: Callable[[], _Shared],
) -> tuple[tuple[object, ...], _Shared]:
    """(``key``, its shared object): ``held`` when it is ``key``'s, else the registry's (made
    when there is none)."""
    if held is not None and held[0] == key:
        return held
    with _REGISTRY_LOCK:
        shared = registry.get(key)
        if shared is None:
            shared = registry[key] = make()
    return (key, shared)
