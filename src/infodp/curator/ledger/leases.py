"""Reservations whose server is gone, settled by the others after a lease.

On one host a process killed after its reservation leaves the entry 'reserved' for good: the
cost stays spent, nothing else changes. In a fleet (:mod:`.postgres`) the other servers
settle such an entry once it is older than the *lease*: it becomes 'failed' with its cost
still spent (privacy is never given back: the dead server may have drawn its noise and even
sent the answer), and says so in its error column. The lease must exceed everything a live
server may still do with a reservation — the query timeout, the worker kill that backs it,
and the delay of a held completion (:data:`.flusher.FLUSH_AFTER`) — so that only the
entries of a dead server are settled; :func:`lease_for` gives that, and
docs/deployment.md states it. A live server that finishes an entry after it was settled is
told so (the entry was finished twice) and the cost is spent once.

>>> lease_for(30.0)
90.0
"""

from __future__ import annotations

import datetime as _dt
import sqlite3

from infodp.curator.ledger.charging import now
from infodp.curator.ledger.storage import Database

__all__ = ["SETTLED", "lease_for", "settle_expired"]

#: The error an entry settled by the fleet carries (the ledger's own record, never shown).
SETTLED = "settled by the fleet: its server stopped before finishing it (lease expired)"


def lease_for(query_timeout: float) -> float:
    """The lease for servers whose queries stop after ``query_timeout`` seconds: twice it
    (the timeout, then the worker kill that backs it and the wait for a free worker),
    plus half a minute of margin."""
    return 2 * query_timeout + 30.0


def settle_expired(db: Database, lease: float) -> int:
    """Settle every entry still 'reserved' after ``lease`` seconds; returns how many."""
    cutoff = (_dt.datetime.now(_dt.UTC) - _dt.timedelta(seconds=lease)).isoformat(
        timespec="milliseconds"
    )

    def work(conn: sqlite3.Connection) -> int:
        cur = conn.execute(
            "UPDATE entries SET status = 'failed', finished = ?, error = ? "
            "WHERE status = 'reserved' AND created < ?",
            (now(), SETTLED, cutoff),
        )
        return int(cur.rowcount)

    return db.submit(work, guarded=False) or 0
