"""What servers sharing one PostgreSQL ledger share besides the budgets: limits and leases.

When the store's ledger is a PostgreSQL database (:mod:`infodp.curator.ledger.postgres`),
every server of the fleet enforces the same per-analyst limits together:

* the rate limit (:class:`FleetLimiter`): one token bucket per analyst in the table
  ``fleet_buckets``, read and written under a row lock (``SELECT … FOR UPDATE``) with the
  database's clock, so an analyst gets ``rate`` requests per second from the whole fleet,
  not from each server (Turner 1986, as :class:`~infodp.server.limits.RateLimiter`);
* the per-analyst concurrency of heavy requests (:class:`FleetSlots`): slot ``i`` of an
  analyst is the session-level advisory lock ``(hashtext(analyst), i)``; a server holds it
  on its own connection while the request runs, and PostgreSQL releases it when the server
  dies or loses its connection, so a dead server's slots come back with no lease;
* the settlement of a dead server's reservations (:class:`Settler`): every server settles
  the entries left 'reserved' longer than the lease (:mod:`infodp.curator.ledger.leases`).

While PostgreSQL is unreachable (a restart), both limits fall back to this server's own
(:class:`~infodp.server.limits.RateLimiter`, :class:`~infodp.server.limits.KeySlots`): a
fleet of N servers then admits up to N times the limits until it is back. Charges never
fall back: no query is answered without its reservation in the shared ledger.

>>> fleet_parts(None, rate=1.0, burst=1, limit=1, lease=60.0) is None
True
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import weakref
from collections.abc import AsyncIterator
from typing import Any

from infodp.server.limits import KeySlots, RateLimiter, SlotsBusy

__all__ = ["FleetLimiter", "FleetSlots", "Settler", "fleet_parts"]

_log = logging.getLogger("infodp.server")

_BUCKETS = (
    "CREATE TABLE IF NOT EXISTS fleet_buckets "
    "(name TEXT PRIMARY KEY, tokens DOUBLE PRECISION NOT NULL, at DOUBLE PRECISION NOT NULL)"
)


class _Conn:
    """One autocommit connection of this process to the ledger's database (reopened when
    lost), used under a lock."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.lock = threading.Lock()
        self._raw: Any = None
        self.generation = 0

    def get(self) -> Any:
        import psycopg

        if self._raw is None or self._raw.closed or self._raw.broken:
            self._raw = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
            self.generation += 1
            weakref.finalize(self, _close_quietly, self._raw, os.getpid())  # closed with it
        return self._raw

    def drop(self) -> None:
        if self._raw is not None:
            _close_quietly(self._raw)
        self._raw = None


def _close_quietly(conn: Any, pid: int | None = None) -> None:
    if pid is not None and pid != os.getpid():
        return  # inherited through a fork: closing it would end the parent's session
    with contextlib.suppress(Exception):
        conn.close()


class FleetLimiter:
    """Token buckets by name in the shared database (see the module doc); thread-safe."""

    def __init__(self, url: str, rate: float, burst: int) -> None:
        self.local = RateLimiter(rate, burst)
        self.rate, self.burst = self.local.rate, self.local.burst
        self._conn = _Conn(url)
        self._made = False

    def acquire(self, key: str) -> float:
        """Take one token for ``key``: 0.0 when allowed, else the seconds to wait (> 0)."""
        try:
            with self._conn.lock:
                return self._acquire(self._conn.get(), key)
        except Exception as err:  # the database is away: this server's own bucket
            self._conn.drop()
            _log.warning("fleet rate limit unavailable (%s): local limit", type(err).__name__)
            return self.local.acquire(key)

    def _acquire(self, conn: Any, key: str) -> float:
        if not self._made:
            conn.execute(_BUCKETS)
            self._made = True
        with conn.transaction():
            conn.execute(
                "INSERT INTO fleet_buckets VALUES (%s, %s, "
                "extract(epoch FROM clock_timestamp())) ON CONFLICT DO NOTHING",
                (key, float(self.burst)),
            )
            tokens, at, now = conn.execute(
                "SELECT tokens, at, extract(epoch FROM clock_timestamp())::float8 "
                "FROM fleet_buckets WHERE name = %s FOR UPDATE",
                (key,),
            ).fetchone()
            tokens = min(float(self.burst), tokens + max(0.0, now - at) * self.rate)
            allowed = tokens >= 1.0
            conn.execute(
                "UPDATE fleet_buckets SET tokens = %s, at = %s WHERE name = %s",
                (tokens - 1.0 if allowed else tokens, now, key),
            )
        return 0.0 if allowed else (1.0 - tokens) / self.rate


class FleetSlots:
    """At most ``limit`` heavy requests per analyst across the fleet (see the module doc).

    The interface of :class:`~infodp.server.limits.KeySlots`: a request waits (polling, in
    the event loop) up to ``wait_timeout`` seconds for a free slot, at most ``max_waiting``
    of one analyst per server; beyond that :meth:`hold` raises
    :class:`~infodp.server.limits.SlotsBusy`.
    """

    def __init__(
        self, url: str, limit: int, *, max_waiting: int = 64, wait_timeout: float = 60.0
    ) -> None:
        self.local = KeySlots(limit, max_waiting=max_waiting, wait_timeout=wait_timeout)
        self.limit = self.local.limit
        self.max_waiting, self.wait_timeout = max_waiting, wait_timeout
        self._conn = _Conn(url)
        self._held: set[tuple[str, int]] = set()  # session locks are re-entrant: ours
        self._waiting: dict[str, int] = {}

    def _try(self, key: str) -> tuple[int, int] | None:
        """(slot, connection generation) taken, or None when all are busy."""
        with self._conn.lock:
            conn = self._conn.get()
            for i in range(self.limit):
                if (key, i) in self._held:
                    continue
                row = conn.execute(
                    "SELECT pg_try_advisory_lock(hashtext(%s), %s)", ("slot " + key, i)
                ).fetchone()
                if row is not None and row[0]:
                    self._held.add((key, i))
                    return i, self._conn.generation
        return None

    def _release(self, key: str, slot: int, generation: int) -> None:
        with self._conn.lock:
            self._held.discard((key, slot))
            if generation != self._conn.generation:
                return  # that session is gone, and its locks with it
            with contextlib.suppress(Exception):
                self._conn.get().execute(
                    "SELECT pg_advisory_unlock(hashtext(%s), %s)", ("slot " + key, slot)
                )

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Run the body holding one of ``key``'s fleet-wide slots (waiting if need be)."""
        loop = asyncio.get_running_loop()
        try:
            taken = await asyncio.to_thread(self._try, key)
        except Exception:  # the database is away: this server's own slots
            with self._conn.lock:
                self._conn.drop()
                self._held.clear()
            async with self.local.hold(key):
                yield
            return
        if taken is None:
            if self._waiting.get(key, 0) >= self.max_waiting:
                raise SlotsBusy(self.limit)
            self._waiting[key] = self._waiting.get(key, 0) + 1
            try:
                deadline = loop.time() + self.wait_timeout
                while taken is None:
                    if loop.time() >= deadline:
                        raise SlotsBusy(self.limit)
                    await asyncio.sleep(0.02)
                    with contextlib.suppress(Exception):
                        taken = await asyncio.to_thread(self._try, key)
            finally:
                self._waiting[key] -= 1
        try:
            yield
        finally:
            await asyncio.to_thread(self._release, key, *taken)


class Settler:
    """A daemon thread settling expired reservations every ``lease / 4`` seconds."""

    def __init__(self, ledger: Any, lease: float) -> None:
        self.ledger, self.lease = ledger, lease
        self._stop = threading.Event()
        self.settled = 0
        self._thread = threading.Thread(target=self._run, name="infodp-settler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(max(0.5, self.lease / 4)):
            try:
                n = self.ledger.settle_expired(self.lease)
            except Exception as err:  # the database is away: the next round tries again
                _log.warning("settling expired reservations failed (%s)", type(err).__name__)
                continue
            if n:
                self.settled += n
                _log.warning("settled %d reservation(s) of a stopped server", n)

    def stop(self) -> None:
        """Stop the thread (it finishes its current round)."""
        self._stop.set()
        self._thread.join(timeout=30)


def fleet_parts(
    ledger: Any, *, rate: float, burst: int, limit: int, lease: float
) -> tuple[FleetLimiter, FleetSlots, Settler] | None:
    """The fleet-wide limiter, slots and settler of a server whose ``ledger`` is PostgreSQL
    (None for a SQLite ledger: its limits are this server's own)."""
    from infodp.curator.ledger.postgres import PgDatabase

    db = getattr(ledger, "db", None)
    if not isinstance(db, PgDatabase):
        return None
    return (
        FleetLimiter(db.url, rate, burst),
        FleetSlots(db.url, limit),
        Settler(ledger, lease),
    )
