"""Which store a running ``infodp serve`` holds, so a write to it is refused at once.

``infodp serve`` keeps the store open (DuckDB's file lock) for as long as it runs, so
``infodp dataset register`` on the same store would wait for the lock until its deadline (two
minutes) and then fail. While serving, the server leaves a small marker next to the store
(``<db>.serving``, its process id); a write command that finds the marker of a live process
*and* the store locked says so in one line at once. After a full wait, when no marker explains
the lock, the message is :class:`~infodp.curator.backends.base.StoreInUse`'s.

>>> import tempfile, os
>>> db = os.path.join(tempfile.mkdtemp(), "s.duckdb")
>>> with serving(db):
...     server_pid(db) == os.getpid()
True
>>> server_pid(db) is None
True
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

from infodp.errors import ParameterError

__all__ = ["marker_path", "refuse_while_served", "server_pid", "serving"]


def marker_path(db: str | os.PathLike[str]) -> Path:
    """Where a server serving ``db`` leaves its process id.

    >>> marker_path("data/s.duckdb").name
    's.duckdb.serving'
    """
    return Path(str(db) + ".serving")


@contextlib.contextmanager
def serving(db: str | os.PathLike[str]) -> Iterator[None]:
    """Leave this process's id in :func:`marker_path` while the block runs (best effort: a
    store in a read-only directory gets no marker).

    uvicorn ends a server stopped by SIGTERM by raising the signal again once it has shut
    down, under the handler that was in place before it started: that handler (installed
    here) removes the marker first, then lets the signal end the process as before.
    """
    path = marker_path(db)
    mine = str(os.getpid())

    def remove() -> None:  # only this process's marker (not one a later server left)
        with contextlib.suppress(OSError):
            if path.read_text().strip() == mine == str(os.getpid()):
                path.unlink()

    def on_term(signum: int, _frame: object) -> None:
        remove()
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)

    with contextlib.suppress(OSError):
        path.write_text(mine + "\n")
    main = threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGTERM, on_term) if main else None
    try:
        yield
    finally:
        if main:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if before is None else before)
        remove()


def server_pid(db: str | os.PathLike[str]) -> int | None:
    """The process id in ``db``'s marker when that process is alive (None otherwise)."""
    try:
        pid = int(marker_path(db).read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid  # alive, owned by someone else
    except OSError:
        return None
    return pid


def refuse_while_served(db: str) -> None:
    """Refuse (exit status 2, one line) to write to a store that a live ``infodp serve``
    holds locked; a marker whose server has let go of the store (``--open-per-query``) or
    died is ignored."""
    pid = server_pid(db)
    if pid is None or not Path(db).is_file():
        return
    import duckdb

    try:
        con = duckdb.connect(db, read_only=False)
    except duckdb.IOException as err:
        if "lock" not in str(err).lower():
            return  # not a lock: the command itself reports what is wrong
        raise ParameterError(
            f"the store {Path(db).name} is in use by another process (infodp serve, process "
            f"{pid}, is serving it): stop the server and retry, or register datasets before "
            "serving"
        ) from None
    con.close()
