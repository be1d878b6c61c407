"""The end of an entry's life: failed, or released with its answer (at once or held).

A completion is not fsync'd on its own: if its commit is lost the entry stays 'reserved'
(spent), never refunded. It shares the group commit of the reservations running meanwhile.
:meth:`Completions.hold` keeps an answer to write it later (:mod:`.flusher`), in one
transaction with the others held by then.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable

from infodp.curator.ledger import flusher
from infodp.curator.ledger.charging import now
from infodp.curator.ledger.storage import Database
from infodp.errors import InternalError

__all__ = ["Completions"]

Text = str | Callable[[], str]


class Completions:
    """The completions of one ledger object, written through its database's group commit."""

    def __init__(self, db: Database) -> None:
        self.db = db
        #: Completions not written yet: entry id -> (finished time, text or its renderer).
        self._later: dict[int, tuple[str, Text]] = {}
        self._pid = os.getpid()
        self._lock = threading.RLock()
        self._flush_lock = threading.RLock()

    def hold(self, entry_id: int, text: Text) -> None:
        """Write ``entry_id``'s release later (see :meth:`Ledger.complete_later`)."""
        with self._lock:
            if self._pid != os.getpid():  # forked: the parent writes its own
                self._later, self._pid = {}, os.getpid()
            if entry_id in self._later:
                raise InternalError(f"entry {entry_id} finished twice (released -> released)")
            self._later[entry_id] = (now(), text)
        flusher.hold(self)

    def flush(self) -> None:
        """Write every completion still held (one transaction).

        One flush at a time (a reader's flush waits for the one in flight, so it then sees
        every completion held before it); :meth:`hold` never waits for a flush, which
        renders and writes its batch outside the lock of the held completions.
        """
        if self._pid != os.getpid():
            return  # a forked child: the parent writes its own (its locks may be held here)
        with self._flush_lock:
            with self._lock:
                if not self._later or self._pid != os.getpid():
                    return
                items, self._later = self._later, {}
            try:
                self._write(items)
            except InternalError:
                raise  # a bug (an entry finished twice): not retried
            except BaseException:
                with self._lock:
                    self._later = {**items, **self._later}  # kept for the next flush
                raise

    def _write(self, items: dict[int, tuple[str, Text]]) -> None:
        rows = _render(items)
        twice: list[int] = []

        def work(conn: sqlite3.Connection) -> None:
            twice.clear()  # (a retried transaction starts afresh)
            for entry_id, finished, text in rows:
                cur = conn.execute(
                    "UPDATE entries SET status = 'released', finished = ?, result_json = ? "
                    "WHERE id = ? AND status = 'reserved'",
                    (finished, text, entry_id),
                )
                if cur.rowcount != 1:
                    twice.append(entry_id)  # the others are still written

        self.db.submit(work, guarded=False)
        if twice:
            raise InternalError(f"entries {twice} finished twice (-> released)")

    def finish(self, entry_id: int, status: str, result: str | None, error: str | None) -> None:
        """Mark a reserved entry ``status`` now (released with ``result``, or failed)."""
        with self._lock:
            if entry_id in self._later:
                raise InternalError(f"entry {entry_id} finished twice (released -> {status})")
        finished = now()

        def work(conn: sqlite3.Connection) -> None:
            row = conn.execute("SELECT status FROM entries WHERE id = ?", (entry_id,)).fetchone()
            if row is None:
                raise InternalError(f"no ledger entry {entry_id}")
            if row["status"] != "reserved":
                raise InternalError(
                    f"entry {entry_id} finished twice ({row['status']} -> {status})"
                )
            conn.execute(
                "UPDATE entries SET status = ?, finished = ?, result_json = ?, error = ? "
                "WHERE id = ?",
                (status, finished, result, error, entry_id),
            )

        self.db.submit(work, guarded=False)


def _render(items: dict[int, tuple[str, Text]]) -> list[tuple[int, str, str]]:
    rows: list[tuple[int, str, str]] = []
    for entry_id, (finished, text) in items.items():
        if not isinstance(text, str):
            try:
                text = text()
            except Exception:  # a bug: the entry stays 'reserved' (spent, no answer kept)
                continue
            items[entry_id] = (finished, text)  # rendered once, even if written later
            # Let a waiting thread (a query's critical path) take the interpreter lock between
            # two renderings, instead of after the whole batch (up to the switch interval).
            time.sleep(0)
        rows.append((entry_id, finished, text))
    return rows
