"""The :class:`Ledger` façade: one object per ledger file, delegating to the package's
modules (catalog, storage, integrity, charging, records, keys, synopses, completions)."""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING

from infodp._lazy import lazy_module
from infodp.curator.ledger import integrity
from infodp.curator.ledger.catalog import Catalog
from infodp.curator.ledger.charging import Charge, charge, missing_budget, now, refund
from infodp.curator.ledger.completions import Completions
from infodp.curator.ledger.records import (
    ENTRY_COLUMNS,
    GROUP_BUDGETS,
    SCHEMA,
    Budget,
    Entry,
    KeyRecord,
    to_budget,
    to_entry,
)
from infodp.curator.ledger.storage import Database, is_url

if TYPE_CHECKING:
    from infodp._jsonable import JsonObject
    from infodp.curator.ledger import keys, leases, synopses
    from infodp.curator.ledger.synopses import SynopsisListing
else:  # imported on first use: a query makes no key, settles no lease, stores no synopsis
    keys = lazy_module("infodp.curator.ledger.keys")
    leases = lazy_module("infodp.curator.ledger.leases")
    synopses = lazy_module("infodp.curator.ledger.synopses")
from infodp.errors import InternalError, LedgerError, ParameterError

__all__ = ["Ledger"]

#: Open runs SQLite's quick_check (linear in the file) only on ledgers up to this size; larger
#: ones are checked when the verified checkpoint moves and by ``infodp ledger verify``.
QUICK_CHECK_BYTES = 4 << 20
#: Open moves the verified checkpoint once it has verified this many entries after it.
CHECKPOINT_EVERY = 64

_REINIT = (
    "Restore it from a backup, or (data owner) run 'infodp ledger reinit --db STORE --yes', "
    "which forgets all budgets."
)


class Ledger(Catalog):
    """The ledger of a store: a SQLite file next to it, or a PostgreSQL database named by a
    ``postgresql://`` URL (:mod:`.postgres`); see the package docstring for the protocol."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 120.0,
        store_id: str | None = None,
        create: bool = True,
    ) -> None:
        """Open (or, with ``create`` and no file yet, create) the ledger at ``path``.

        ``store_id``: the id the ledger must carry (the store's); a new ledger gets it, or a
        fresh random id when None. Without ``create`` a missing or empty file is an error.
        Raises :class:`~infodp.errors.LedgerError` for a missing, empty, foreign or corrupt
        ledger.
        """
        self.db: Database
        if is_url(path):
            from infodp.curator.ledger.postgres import PgDatabase  # a file ledger never needs it

            self.db = PgDatabase(str(path), timeout=timeout)
        else:
            self.db = Database(path, timeout=timeout)
        #: ``":memory:"``: a private in-memory ledger (one connection, nothing written to disk;
        #: the budget lives as long as this object — :class:`infodp.Session` uses it).
        self.in_memory = self.db.in_memory
        self.path = self.db.path
        self.timeout = timeout
        self.db.guard = self._still_mine
        self._completions = Completions(self.db)
        #: The budget each reservation of this object left, by entry id (see budget_after).
        self._left: dict[int, Budget] = {}
        if self.in_memory:
            self._open(store_id, new=True)
            return
        fresh = not self.db.exists()
        self._refuse_missing(fresh, create)
        if fresh:
            self.db.make()
        try:
            self._open(store_id, new=fresh or self.db.size() == 0)
        except sqlite3.DatabaseError as err:
            self.close()
            raise LedgerError(f"the ledger {self.db.name} is corrupt ({err}); {_REINIT}") from None
        except LedgerError:
            self.close()
            raise
        self.db.pin()

    def _refuse_missing(self, fresh: bool, create: bool) -> None:
        if create:
            return
        if fresh:
            raise LedgerError(
                f"the ledger {self.db.name} of this store is missing: every budget and entry "
                "would be lost. Restore it from a backup, or (data owner) start a new one with "
                "'infodp ledger reinit --db STORE --yes', which forgets all budgets."
            )
        if self.db.size() == 0:
            raise LedgerError(
                f"the ledger {self.db.name} of this store is empty (truncated?): restore it "
                "from a backup, or (data owner) run 'infodp ledger reinit --db STORE --yes', "
                "which forgets all budgets."
            )

    def _open(self, store_id: str | None, *, new: bool) -> None:
        if new:
            self._create(store_id)
        conn = self.db.connection()
        if self.in_memory or self.db.size() <= QUICK_CHECK_BYTES:
            self._quick_check(conn)
        self.store_id: str = self._stored_id(conn, store_id)
        self.db.tag = self.store_id
        problems, unverified, last = self._verify(full=False)
        if problems:
            raise self._inconsistent(problems)
        if integrity.stored_format(conn) != integrity.FORMAT:
            with self.db.transaction() as conn:
                integrity.migrate(conn, self.store_id)
        if unverified >= CHECKPOINT_EVERY:
            self._advance_checkpoint(last)

    def _create(self, store_id: str | None) -> None:
        with self.db.transaction() as conn:
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            self.db.after_create(conn)
            conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('store_id', ?), "
                "('created', ?), ('format', ?)",
                (store_id or secrets.token_hex(16), now(), integrity.FORMAT),
            )

    def _stored_id(self, conn: sqlite3.Connection, store_id: str | None) -> str:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" not in tables:
            raise LedgerError(
                f"{self.db.name} is not an infodp ledger of this format (no store id); "
                "(data owner) run 'infodp ledger reinit --db STORE --yes' to start a new one, "
                "which forgets all budgets."
            )
        row = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        if row is None:
            raise LedgerError(f"the ledger {self.db.name} carries no store id")
        stored = str(row["value"])
        if store_id is not None and stored != store_id:
            raise LedgerError(
                f"the ledger {self.db.name} belongs to another store (store id "
                f"{stored[:8]}…, this store is {store_id[:8]}…): it was copied or "
                "swapped. Restore this store's own ledger, or (data owner) run 'infodp ledger "
                "reinit --db STORE --yes', which forgets all budgets."
            )
        return stored

    # -- integrity -----------------------------------------------------------------------------

    def _inconsistent(self, problems: list[str]) -> LedgerError:
        return LedgerError(
            f"the ledger {self.db.name} is inconsistent ({'; '.join(problems[:3])}): "
            f"it was edited or corrupted. {_REINIT}"
        )

    def _quick_check(self, conn: sqlite3.Connection) -> None:
        bad = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
        if bad != ["ok"]:
            raise LedgerError(
                f"the ledger {self.db.name} failed SQLite's integrity check "
                f"({'; '.join(' '.join(str(b).split()) for b in bad[:3])}); restore it from a "
                "backup, or (data owner) run 'infodp ledger reinit --db STORE --yes', which "
                "forgets all budgets."
            )

    def verify(self) -> list[str]:
        """Full integrity check (empty when sound): SQLite's quick_check, the whole hash chain
        of the entries, the head, the spends against the entries' sums (:meth:`check`), the
        seals of every granted budget and cap, and every accountant state against a replay
        of its entries.

        Read in one transaction, so a concurrent writer cannot make a sound ledger look
        inconsistent. When sound, the verified checkpoint moves to the head, so the next
        opens only verify the entries written after it (``infodp ledger verify``).
        """
        self.flush()
        with self.db.read() as conn:
            bad = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
        if bad != ["ok"]:
            return [f"SQLite's integrity check: {'; '.join(str(b) for b in bad[:3])}"]
        problems, _, last = self._verify(full=True)
        if not problems:
            self._advance_checkpoint(last)
        return problems

    def _verify(self, *, full: bool) -> tuple[list[str], int, integrity.Last]:
        """(problems, entries verified, last verified (id, chain) or None) from the checkpoint
        (``full``: from the start) on; its cost at open is the number of entries written
        since the verified checkpoint, not the length of the history."""
        with self.db.snapshot() as conn:
            return integrity.verify_entries(conn, self.store_id, full)

    def _advance_checkpoint(self, verified: integrity.Last) -> None:
        """Move the verified checkpoint to the head (after a sound verification).

        ``verified``: the (id, chain) of the last entry the verification covered. Not
        fsync'd: losing it only means the next open verifies more. It moves only if no entry
        was written since (the head is still ``verified``), and the sums it records are the
        stored spends, which the verification found equal to the entries' sums. A ledger
        that cannot be written keeps its checkpoint.
        """
        if verified is None:
            return
        try:
            if not self.in_memory and self.db.size() > QUICK_CHECK_BYTES:
                self._quick_check(self.db.connection())  # pages checked once per checkpoint
            with self.db.transaction(durable=False) as conn:
                last = conn.execute(
                    "SELECT id, chain FROM entries ORDER BY id DESC LIMIT 1"
                ).fetchone()
                if last is None or tuple(last) != tuple(verified):
                    return
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('checkpoint', ?), "
                    "('head', ?)",
                    (integrity.checkpoint_now(conn, last).to_json(), json.dumps(list(last))),
                )
        except (sqlite3.OperationalError, InternalError):
            return

    def _still_mine(self, conn: sqlite3.Connection) -> None:
        """Refuse to write into a ledger file that was deleted, replaced or re-bound."""
        if self.in_memory:
            return  # no file that could be deleted or swapped
        try:
            moved = self.db.moved()
        except FileNotFoundError:
            raise LedgerError(
                f"the ledger {self.db.name} was deleted while in use; nothing was charged. "
                "Restore it (or, data owner, run 'infodp ledger reinit --db STORE --yes') and "
                "restart."
            ) from None
        row = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        if moved or row is None or row["value"] != self.store_id:
            raise LedgerError(
                f"the ledger {self.db.name} was replaced while in use; nothing was charged. "
                "Restart so that it is checked again."
            )

    def check(self) -> list[str]:
        """Consistency problems (empty when sound): stored spends equal the entries' sums."""
        self.flush()
        with self.db.read() as conn:
            return integrity.check_totals(conn)

    # -- durability ----------------------------------------------------------------------------

    def sync(self) -> None:
        """Make every reservation this process has committed durable (fsync the WAL).

        A reservation made with ``durable=False`` (:meth:`reserve`) survives the death of
        this process but not yet a power loss; nothing may be released for it before this
        returns (see :meth:`Database.sync`). Raises :class:`OSError` when the fsync fails.
        """
        self.db.sync()

    def close(self) -> None:
        """Write the completions still pending, then close this process's connection (it
        reopens on next use)."""
        try:
            self.flush()
        finally:
            self.db.close()

    # -- analysts and keys ---------------------------------------------------------------------

    def add_analyst(
        self,
        name: str,
        dataset: str,
        epsilon: Fraction,
        delta: Fraction,
        *,
        accountant_json: str | None = None,
    ) -> str | None:
        """Give ``name`` a budget on ``dataset``; returns the API key (shown once).

        The budget covers ``dataset`` only, also in a budget group (:mod:`.groups`). When
        ``name`` already holds the budget of ``dataset``'s group, granted on another of its
        datasets, the same budget must be given: ``dataset`` is added to what it covers, and
        None is returned (the key of that budget covers ``dataset`` now).

        Without ``accountant_json`` the budget is (ε, δ) under basic composition, exact
        fractions. With it (the JSON state of a fresh :class:`infodp.accounting.Accountant`)
        the accountant's currency is enforced instead (pure ε, (ε, δ) with tight PLD
        composition, an RDP curve, or nats at level α), inside the same ledger transaction.
        The grant is sealed (:mod:`.integrity`): editing it by hand stops every charge.
        """
        if epsilon < 0:
            raise ParameterError("epsilon", float(epsilon), "a non-negative number (>= 0)")
        if not 0 <= delta <= 1:
            raise ParameterError("delta", float(delta), "a probability in [0, 1]")
        self.dataset(dataset)
        from infodp.curator.ledger import grants  # owner side: a query process never grants

        return grants.add_analyst(
            self.db, self.store_id, name, dataset, (epsilon, delta), accountant_json
        )

    def verify_key(self, name: str, key: str) -> bool:
        """True when ``key`` is one of the API keys issued to analyst ``name``, unrevoked."""
        return keys.verify_analyst(self.db, name, key)

    def issue_key(self, analyst: str) -> str:
        """A new key ``idp_<id>.<secret>`` for ``analyst`` (returned once; only a hash is kept).

        A revoked ledger key stays revoked; a new server key is the way back in.
        """
        return keys.issue(self.db, analyst)

    def revoke_keys(self, analyst: str, key_id: str | None = None) -> int:
        """Revoke ``analyst``'s server keys (or only ``key_id``) and, without ``key_id``, the
        keys ``add_analyst`` printed; returns how many server keys were newly revoked."""
        return keys.revoke(self.db, analyst, key_id)

    def ledger_key_revoked(self, analyst: str) -> bool:
        """True when the keys ``add_analyst`` issued to ``analyst`` have been revoked."""
        return keys.revoked_analyst(self.db, analyst)

    def key_records(self, analyst: str | None = None) -> list[KeyRecord]:
        """Issued server keys (ids and dates only), optionally of one analyst."""
        return keys.records(self.db, analyst)

    def verify_server_key(self, key_id: str, secret: str) -> str | None:
        """The analyst of a valid, unrevoked server key; None otherwise (constant-time)."""
        return keys.verify_server(self.db, key_id, secret)

    # -- budgets -------------------------------------------------------------------------------

    def budget(self, analyst: str, dataset: str) -> Budget:
        """The analyst's budget on ``dataset``."""
        with self.db.read() as conn:
            row = conn.execute(
                f"SELECT {GROUP_BUDGETS} WHERE a.name = ? AND q.name = ?", (analyst, dataset)
            ).fetchone()
            if row is None:
                raise missing_budget(conn, analyst, dataset)
        return to_budget(row)

    def budget_after(self, entry_id: int) -> Budget | None:
        """The analyst's budget as reservation ``entry_id`` left it (the state its
        transaction committed), once, when this object made it; else None (read
        :meth:`budget`)."""
        return self._left.pop(entry_id, None)

    def budgets(self, analyst: str | None = None) -> list[Budget]:
        """Every (analyst, dataset) budget, or only ``analyst``'s: one per dataset of a
        budget group, each the group's (the same figures, spent by a query on any of them)."""
        where, args = ("", ()) if analyst is None else (" WHERE a.name = ?", (analyst,))
        with self.db.read() as conn:
            rows = conn.execute(
                f"SELECT {GROUP_BUDGETS}{where} ORDER BY q.name, a.name", args
            ).fetchall()
        return [to_budget(r) for r in rows]

    # -- the reservation protocol --------------------------------------------------------------

    def reserve(
        self,
        analyst: str,
        dataset: str,
        sql: str,
        epsilon: Fraction,
        delta: Fraction,
        info_nats: float,
        profile_spec: JsonObject | str | None = None,
        *,
        durable: bool = True,
        declaration: tuple[str, bool] | None = None,
    ) -> int:
        """Debit (ε, δ) and the information cost durably; returns the entry id.

        ``profile_spec`` (an ``infodp.accounting`` profile spec of the query, or its JSON text
        as the ledger stores it, ``json.dumps(spec)``) is spent by the analyst's accountant.

        ``durable=False``: the reservation is committed (checked, written, visible to every
        process, and kept if this process dies) but its fsync is left to :meth:`sync`, which
        the caller must call, successfully, before anything of the query is released. The
        query path uses this to run the fsync while DuckDB aggregates.

        ``declaration``: the dataset's (schema JSON, unit_rows_ok) the query was priced with;
        the transaction checks that the dataset still declares exactly that, and raises
        :class:`DeclarationChanged` (nothing charged) otherwise.

        Raises :class:`~infodp.errors.BudgetExceeded` (requested, remaining, gap) when the
        analyst's budget or the dataset's information cap would be exceeded, and
        :class:`~infodp.errors.LedgerError` when the grant was edited; nothing changes.
        """
        if epsilon < 0 or delta < 0 or not info_nats >= 0:
            raise InternalError(f"negative cost ({epsilon}, {delta}, {info_nats})")
        request = Charge(
            analyst, dataset, sql, epsilon, delta, info_nats, profile_spec, declaration
        )
        entry_id = self.db.submit(
            lambda conn: self._reserve_in(conn, request), guarded=True, durable=durable
        )
        if entry_id is None:
            raise InternalError("the ledger did not return an entry id")
        return entry_id

    def _reserve_in(self, conn: sqlite3.Connection, request: Charge) -> int:
        entry_id, left = charge(conn, self.store_id, request, ledger=str(self.path))
        if len(self._left) >= 1024:
            self._left.clear()
        self._left[entry_id] = left
        return entry_id

    def cancel(self, entry_id: int, reason: str) -> None:
        """Refund a reservation whose query failed before touching the data."""
        with self.db.transaction() as conn:
            e = self._entry(conn, entry_id)
            if e.status != "reserved":
                raise InternalError(f"cancel of entry {entry_id} in state {e.status}")
            refund(conn, e)
            conn.execute(
                "UPDATE entries SET status = 'cancelled', finished = ?, error = ? WHERE id = ?",
                (now(), reason, entry_id),
            )

    def fail(self, entry_id: int, reason: str) -> None:
        """Mark a query that failed after touching the data: its cost stays spent."""
        self._completions.finish(entry_id, "failed", None, reason)

    def complete(self, entry_id: int, result: JsonObject | str) -> None:
        """Record the released answer of a reserved entry (a mapping, or its JSON text)."""
        text = result if isinstance(result, str) else json.dumps(result, allow_nan=False)
        self._completions.finish(entry_id, "released", text, None)

    def complete_later(self, entry_id: int, text: str | Callable[[], str]) -> None:
        """:meth:`complete`, written later (:meth:`flush`): by a background writer at most
        50 ms later (:data:`.flusher.FLUSH_AFTER`), in one transaction with the others held
        by then, and before any read of the entries through this object, at :meth:`close`
        and at exit.

        The reservation already charged the full cost, so until then the entry reads
        'reserved' (spent, no stored answer) to other processes; if this process dies first
        it stays so: budget recorded, privacy intact, only the stored copy of the answer is
        lost (as a non-fsync'd completion could always be lost to a power failure).
        ``text`` may be a function rendering it then (an entry whose rendering fails is left
        'reserved').
        """
        self._completions.hold(entry_id, text)

    def settle_expired(self, lease: float) -> int:
        """Settle the reservations still open after ``lease`` seconds (their server died):
        'failed', the cost spent (:mod:`.leases`); returns how many."""
        self.flush()
        return leases.settle_expired(self.db, lease)

    def flush(self) -> None:
        """Write every completion :meth:`complete_later` still holds (one transaction)."""
        self._completions.flush()

    # -- reading -------------------------------------------------------------------------------

    def _entry(self, conn: sqlite3.Connection, entry_id: int) -> Entry:
        row = conn.execute(
            f"SELECT {ENTRY_COLUMNS} FROM entries WHERE id = ?", (entry_id,)
        ).fetchone()
        if row is None:
            raise InternalError(f"no ledger entry {entry_id}")
        return to_entry(row)

    def entry_profile(self, entry_id: int) -> JsonObject | None:
        """The privacy profile spec the entry was charged (``infodp.accounting.spec``)."""
        with self.db.read() as conn:
            row = conn.execute(
                "SELECT profile_json FROM entries WHERE id = ?", (entry_id,)
            ).fetchone()
        if row is None:
            raise InternalError(f"no ledger entry {entry_id}")
        spec = row["profile_json"]
        out: JsonObject | None = None if spec is None else json.loads(spec)
        return out

    def entry(self, entry_id: int) -> Entry:
        """One entry by id."""
        self.flush()
        with self.db.read() as conn:
            return self._entry(conn, entry_id)

    def entries(self, analyst: str | None = None, dataset: str | None = None) -> list[Entry]:
        """Entries, oldest first, optionally for one analyst and/or dataset."""
        self.flush()
        rows = self._rows(
            f"SELECT {ENTRY_COLUMNS} FROM entries", "id", analyst=analyst, dataset=dataset
        )
        return [to_entry(r) for r in rows]

    def _rows(self, select: str, order: str, **where: str | None) -> list[sqlite3.Row]:
        """The rows of ``select`` in ``order`` whose columns equal the values given (None:
        any value); the column names are this module's, never the caller's."""
        given = {c: v for c, v in where.items() if v is not None}
        if given:
            select += " WHERE " + " AND ".join(f"{c} = ?" for c in given)
        with self.db.read() as conn:
            return conn.execute(f"{select} ORDER BY {order}", tuple(given.values())).fetchall()

    # -- synopses ------------------------------------------------------------------------------

    def save_synopsis(
        self,
        name: str,
        dataset: str,
        analyst: str,
        entry_id: int,
        spec: JsonObject,
        data: JsonObject,
    ) -> None:
        """Store a released synopsis (already paid for by ``entry_id``)."""
        synopses.save(self.db, name, dataset, analyst, entry_id, spec, data)

    def synopsis(
        self, name: str, dataset: str | None = None
    ) -> tuple[str, str, JsonObject, JsonObject]:
        """(dataset, analyst, spec, data) of a stored synopsis (of ``dataset`` when given)."""
        return synopses.load(self.db, name, dataset)

    def synopses(self) -> list[SynopsisListing]:
        """Stored synopses (name, dataset, analyst, created)."""
        return synopses.listing(self.db)
