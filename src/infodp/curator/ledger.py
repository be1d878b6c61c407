"""The durable privacy ledger: the only writer of budget state.

Design: budget state lives in a SQLite database next to the DuckDB store
(``<store>.ledger``) in WAL mode with ``synchronous=FULL``, so every commit is fsync'd before
it returns. Each write is one ``BEGIN IMMEDIATE`` transaction: the check "cost ≤ remaining" and
the debit happen under SQLite's single-writer lock, so two processes can never overspend;
``busy_timeout`` plus a retry loop makes a second writer wait instead of failing with a lock
error. The DuckDB file is only ever opened for reading by queries, so it never blocks the ledger.

Life of a query's entry::

    reserve  -> 'reserved'   cost debited and durable, before the data is touched or noise drawn
    cancel   -> 'cancelled'  failure *before* the data was touched: the cost is refunded
    fail     -> 'failed'     failure after the data was touched: the cost stays spent
    complete -> 'released'   the noisy answer left; it is stored with the entry (at once, or
                             held and written shortly after: :meth:`Ledger.complete_later`)

A process killed after ``reserve`` leaves a 'reserved' entry: the budget is lost, privacy is
not. Budgets are exact fractions (ε and δ under basic sequential composition, Dwork & Roth
2014, Thm 3.16, or another currency), stored as text "p/q", so they never drift; every
currency is enforced by :class:`infodp.accounting.Accountant`, whose parsed state is kept in
memory by its exact stored text (never stale: another process's charge is another text).
API keys are 256-bit secrets of which only a salted SHA-256 is stored (a key this long
cannot be brute-forced, so a slow password hash would add nothing).

The ledger belongs to its store: both carry one store id (``meta.store_id`` here, a table in
the DuckDB file, see :mod:`infodp.curator.store`). Opening checks the store id, a SHA-256
hash chain over the entries (each entry's ``chain`` hashes the previous one and its own
immutable fields, so an edited, dropped or corrupted entry breaks it), the head of the chain
and that the stored spends equal the entries' sums — from a verified checkpoint on, so its
cost does not grow with the history (:meth:`Ledger.verify` checks everything and moves the
checkpoint; SQLite's ``quick_check`` runs at open on ledgers up to 4 MiB); any failure raises
:class:`~infodp.errors.LedgerError`. Each reservation re-checks that the file on disk is
still the one opened and carries the same store id, so a ledger deleted or replaced while a
service runs cannot swallow charges. All key state (issued keys, revocations) lives here too,
and the file is created with mode 0600.

>>> import tempfile, os
>>> led = Ledger(os.path.join(tempfile.mkdtemp(), "s.ledger"))
>>> led.register_dataset("t", '{"table": "t"}', rows=10, source="-")
>>> key = led.add_analyst("alice", "t", Fraction(1), Fraction(0))
>>> led.verify_key("alice", key)
True
>>> e = led.reserve("alice", "t", "SELECT COUNT(*) FROM t", Fraction(1, 4), Fraction(0), 0.5)
>>> str(led.budget("alice", "t").remaining_epsilon)
'3/4'
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import datetime as _dt
import hashlib
import hmac
import json
import math
import os
import secrets
import sqlite3
import threading
import time
import urllib.parse
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from infodp._exact import float_down as _float_down
from infodp._exact import float_up as _float_up
from infodp._exact import format_fraction
from infodp._retry import retry
from infodp.errors import (
    BudgetExceeded,
    InfodpError,
    InternalError,
    LedgerError,
    ParameterError,
)

__all__ = [
    "KEY_PREFIX",
    "STATUSES",
    "Budget",
    "DatasetRecord",
    "DeclarationChanged",
    "Entry",
    "KeyRecord",
    "Ledger",
    "format_fraction",
]

#: Prefix of issued server keys (``idp_<16 hex key id>.<secret>``).
KEY_PREFIX = "idp_"

#: Entry states (see the module docstring).
STATUSES: tuple[str, ...] = ("reserved", "released", "failed", "cancelled")
_SPENDING = ("reserved", "released", "failed")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS keys (
    key_id TEXT PRIMARY KEY, analyst TEXT NOT NULL, salt TEXT NOT NULL, hash TEXT NOT NULL,
    created TEXT NOT NULL, revoked TEXT);
CREATE TABLE IF NOT EXISTS key_revocations (analyst TEXT PRIMARY KEY, revoked TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS datasets (
    name TEXT PRIMARY KEY, schema_json TEXT NOT NULL, rows INTEGER NOT NULL,
    source TEXT NOT NULL, info_cap_bits REAL, info_spent_nats REAL NOT NULL DEFAULT 0,
    unit_rows_ok INTEGER NOT NULL DEFAULT 0, created TEXT NOT NULL,
    max_epsilon TEXT, max_delta TEXT, spent_epsilon TEXT NOT NULL DEFAULT '0',
    spent_delta TEXT NOT NULL DEFAULT '0', fingerprint TEXT);
CREATE TABLE IF NOT EXISTS analysts (
    name TEXT NOT NULL, dataset TEXT NOT NULL REFERENCES datasets(name),
    key_salt TEXT NOT NULL, key_hash TEXT NOT NULL,
    epsilon TEXT NOT NULL, delta TEXT NOT NULL,
    spent_epsilon TEXT NOT NULL DEFAULT '0', spent_delta TEXT NOT NULL DEFAULT '0',
    created TEXT NOT NULL, accountant_json TEXT, budget_json TEXT,
    PRIMARY KEY (name, dataset));
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT, analyst TEXT NOT NULL, dataset TEXT NOT NULL,
    sql TEXT NOT NULL, epsilon TEXT NOT NULL, delta TEXT NOT NULL, info_nats REAL NOT NULL,
    status TEXT NOT NULL, created TEXT NOT NULL, finished TEXT, pid INTEGER,
    result_json TEXT, error TEXT, profile_json TEXT, chain TEXT);
CREATE TABLE IF NOT EXISTS synopses (
    name TEXT NOT NULL, dataset TEXT NOT NULL, analyst TEXT NOT NULL,
    entry_id INTEGER NOT NULL, spec_json TEXT NOT NULL, data_json TEXT NOT NULL,
    created TEXT NOT NULL, PRIMARY KEY (dataset, name));
"""


class _Refused(Exception):
    """Carries a refused write out of its transaction, which is then rolled back."""

    def __init__(self, error: InfodpError) -> None:
        super().__init__(str(error))
        self.error = error


class DeclarationChanged(InfodpError):
    """A reservation was refused because the dataset's declaration (schema, unit_rows_ok)
    in the ledger is not the one its query was priced with; nothing was charged."""


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def _frac(text: str) -> Fraction:
    """The exact value of a stored "p/q" text (parsed once per distinct text in a process:
    a Fraction is immutable, and :func:`_text` records the texts this process writes)."""
    value = _FRACS.get(text)
    if value is None:
        value = Fraction(text)
        _remember_text(text, value)
    return value


def _text(value: Fraction) -> str:
    """``str(value)``, remembered by :func:`_frac` (the next read of it is not parsed)."""
    text = str(value)
    _remember_text(text, value)
    return text


def _remember_text(text: str, value: Fraction) -> None:
    if len(_FRACS) >= 4096:
        _FRACS.clear()
    _FRACS[text] = value


_FRACS: dict[str, Fraction] = {}


@dataclass(frozen=True, slots=True)
class Budget:
    """An analyst's budget on one dataset (exact fractions)."""

    analyst: str
    dataset: str
    epsilon: Fraction
    delta: Fraction
    spent_epsilon: Fraction
    spent_delta: Fraction
    accountant_json: str | None = None

    def _repr_html_(self) -> str:
        """The notebook view: who, on what, the budget, what is spent and what is left."""
        from infodp._report import summary_table

        rows: list[tuple[str, Any]] = [
            ("analyst", self.analyst),
            ("dataset", self.dataset),
            ("currency", self.currency),
            ("ε", self.epsilon),
            ("ε spent", self.spent_epsilon),
            ("ε left", self.remaining_epsilon),
            ("δ", self.delta),
            ("δ spent", self.spent_delta),
            ("δ left", self.remaining_delta),
        ]
        return summary_table("Budget", rows)

    @property
    def currency(self) -> str:
        """``basic`` (exact ε, δ sums) or the accountant's currency (pure/approx/rdp/nats)."""
        if self.accountant_json is None:
            return "basic"
        return str(_accountant_of(self.accountant_json).budget.currency)

    @property
    def remaining_epsilon(self) -> Fraction:
        """ε left (never negative)."""
        return max(Fraction(0), self.epsilon - self.spent_epsilon)

    @property
    def remaining_delta(self) -> Fraction:
        """δ left (never negative)."""
        return max(Fraction(0), self.delta - self.spent_delta)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready numbers (floats rounded *down* for remaining, *up* for spent)."""
        out: dict[str, Any] = {
            "analyst": self.analyst,
            "dataset": self.dataset,
            "currency": self.currency,
            "epsilon": float(self.epsilon),
            "delta": float(self.delta),
            "spent_epsilon": _float_up(self.spent_epsilon),
            "spent_delta": _float_up(self.spent_delta),
            "remaining_epsilon": _float_down(self.remaining_epsilon),
            "remaining_delta": _float_down(self.remaining_delta),
            "exact": {
                "epsilon": str(self.epsilon),
                "delta": str(self.delta),
                "spent_epsilon": str(self.spent_epsilon),
                "spent_delta": str(self.spent_delta),
            },
        }
        if self.accountant_json is not None:
            acc = _accountant_of(self.accountant_json)
            out["accountant"] = {
                "budget": acc.budget.to_dict(),
                "remaining": acc.remaining(),
                "note": "the accountant's currency is enforced; epsilon/delta above are the "
                "basic-composition totals, for information",
            }
        return out


@dataclass(frozen=True, slots=True)
class DatasetRecord:
    """A registered dataset: its schema (JSON), public row count and information budget."""

    name: str
    schema_json: str
    rows: int
    source: str
    info_cap_bits: float | None
    info_spent_nats: float
    unit_rows_ok: bool
    created: str
    #: Caps on the (ε, δ) spent by all analysts together (None: no cap), and the totals.
    max_epsilon: Fraction | None = None
    max_delta: Fraction | None = None
    spent_epsilon: Fraction = Fraction(0)
    spent_delta: Fraction = Fraction(0)
    fingerprint: str | None = None


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """A server key as the admin sees it (never the secret or its hash).

    >>> sorted(KeyRecord("0123456789abcdef", "alice", "2026-01-01", None).to_dict())
    ['analyst', 'created', 'key_id', 'revoked']
    """

    key_id: str
    analyst: str
    created: str
    revoked: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view."""
        return {
            "key_id": self.key_id,
            "analyst": self.analyst,
            "created": self.created,
            "revoked": self.revoked,
        }


@dataclass(frozen=True, slots=True)
class Entry:
    """One ledger line: who asked what, when, at which cost, and what happened."""

    id: int
    analyst: str
    dataset: str
    sql: str
    epsilon: Fraction
    delta: Fraction
    info_nats: float
    status: str
    created: str
    finished: str | None
    pid: int | None
    result_json: str | None
    error: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready view (cost as floats rounded up, plus exact fractions)."""
        return {
            "id": self.id,
            "analyst": self.analyst,
            "dataset": self.dataset,
            "sql": self.sql,
            "epsilon": _float_up(self.epsilon),
            "delta": _float_up(self.delta),
            "epsilon_exact": str(self.epsilon),
            "delta_exact": str(self.delta),
            "information_nats": self.info_nats,
            "status": self.status,
            "created": self.created,
            "finished": self.finished,
            "has_result": self.result_json is not None,
            "error": self.error,
        }


class Ledger:
    """The SQLite ledger next to a store (see the module docstring for the protocol)."""

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
        #: ``":memory:"``: a private in-memory ledger (one connection, nothing written to disk;
        #: the budget lives as long as this object — :class:`infodp.Session` uses it).
        self.in_memory = str(path) == ":memory:"
        self.path = Path(path)
        self._absolute = str(self.path.absolute())
        #: This ledger's group commit and writers' lock (see _group and _writers).
        self._held_group: tuple[tuple[Any, ...], _GroupCommit] | None = None
        self._held_writers: tuple[tuple[Any, ...], _Writers] | None = None
        self.timeout = timeout
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._lock = threading.RLock()
        self._identity: tuple[int, int] | None = None
        #: The WAL file of this process's connection, opened by :meth:`sync` (see there).
        self._wal: _WalFile | None = None
        self._wal_lock = threading.Lock()
        #: Completions not written yet (see :meth:`complete_later`): entry id -> (time, text).
        self._later: dict[int, tuple[str, str | Callable[[], str]]] = {}
        self._later_pid = os.getpid()
        self._later_lock = threading.RLock()
        self._flush_lock = threading.RLock()
        #: The budget each reservation of this object left, by entry id (see budget_after).
        self._left: dict[int, Budget] = {}
        #: Whether this process's connection runs in WAL mode (deferred durability needs it).
        self._wal_mode = False
        #: The connection's synchronous level: True FULL, False NORMAL (None: unknown).
        self._full: bool | None = True
        if self.in_memory:
            self._open(store_id, new=True)
            return
        fresh = not self.path.exists()
        if fresh and not create:
            raise LedgerError(
                f"the ledger {self.path.name} of this store is missing: every budget and entry "
                "would be lost. Restore it from a backup, or (data owner) start a new one with "
                "'infodp ledger reinit --db STORE --yes', which forgets all budgets."
            )
        if fresh:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _create_private(self.path)
        elif self.path.stat().st_size == 0 and not create:
            raise LedgerError(
                f"the ledger {self.path.name} of this store is empty (truncated?): restore it "
                "from a backup, or (data owner) run 'infodp ledger reinit --db STORE --yes', "
                "which forgets all budgets."
            )
        try:
            self._open(store_id, new=fresh or self.path.stat().st_size == 0)
        except sqlite3.DatabaseError as err:
            self.close()
            raise LedgerError(
                f"the ledger {self.path.name} is corrupt ({err}); restore it from a backup, or "
                "(data owner) run 'infodp ledger reinit --db STORE --yes', which forgets all "
                "budgets."
            ) from None
        except LedgerError:
            self.close()
            raise
        st = self.path.stat()
        self._identity = (st.st_dev, st.st_ino)

    def _open(self, store_id: str | None, *, new: bool) -> None:
        if new:
            with self._transaction() as conn:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('store_id', ?), "
                    "('created', ?), ('format', '2')",
                    (store_id or secrets.token_hex(16), _now()),
                )
        conn = self._connection()
        if self.in_memory or self.path.stat().st_size <= _QUICK_CHECK_BYTES:
            self._quick_check(conn)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" not in tables:
            raise LedgerError(
                f"{self.path.name} is not an infodp ledger of this format (no store id); "
                "(data owner) run 'infodp ledger reinit --db STORE --yes' to start a new one, "
                "which forgets all budgets."
            )
        row = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        if row is None:
            raise LedgerError(f"the ledger {self.path.name} carries no store id")
        self.store_id: str = str(row[0])
        if store_id is not None and self.store_id != store_id:
            raise LedgerError(
                f"the ledger {self.path.name} belongs to another store (store id "
                f"{self.store_id[:8]}…, this store is {store_id[:8]}…): it was copied or "
                "swapped. Restore this store's own ledger, or (data owner) run 'infodp ledger "
                "reinit --db STORE --yes', which forgets all budgets."
            )
        problems, unverified, last = self._verify(full=False)
        if problems:
            raise self._inconsistent(problems)
        if unverified >= _CHECKPOINT_EVERY:
            self._advance_checkpoint(last)

    def _inconsistent(self, problems: list[str]) -> LedgerError:
        return LedgerError(
            f"the ledger {self.path.name} is inconsistent ({'; '.join(problems[:3])}): "
            "it was edited or corrupted. Restore it from a backup, or (data owner) run "
            "'infodp ledger reinit --db STORE --yes', which forgets all budgets."
        )

    def _quick_check(self, conn: sqlite3.Connection) -> None:
        bad = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
        if bad != ["ok"]:
            raise LedgerError(
                f"the ledger {self.path.name} failed SQLite's integrity check "
                f"({'; '.join(str(b) for b in bad[:3])}); restore it from a backup, or (data "
                "owner) run 'infodp ledger reinit --db STORE --yes', which forgets all budgets."
            )

    def verify(self) -> list[str]:
        """Full integrity check (empty when sound): SQLite's quick_check, the whole hash chain
        of the entries, the head, the spends against the entries' sums (:meth:`check`) and
        every accountant state against a replay of its entries.

        Read in one transaction, so a concurrent writer cannot make a sound ledger look
        inconsistent. When sound, the verified checkpoint moves to the head, so the next
        opens only verify the entries written after it (``infodp ledger verify``).
        """
        self.flush()
        with self._lock:
            bad = [r[0] for r in self._connection().execute("PRAGMA quick_check").fetchall()]
        if bad != ["ok"]:
            return [f"SQLite's integrity check: {'; '.join(str(b) for b in bad[:3])}"]
        problems, _, last = self._verify(full=True)
        if not problems:
            self._advance_checkpoint(last)
        return problems

    def _verify(self, *, full: bool) -> tuple[list[str], int, Any]:
        """(problems, entries verified, last verified (id, chain) or None) from the checkpoint
        (``full``: from the start) on.

        Open runs this with ``full=False``: its cost is the number of entries written since
        the verified checkpoint, not the length of the history (see docs/curator.md).
        """
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN")
            try:
                return self._verify_in(conn, full)
            finally:
                conn.execute("COMMIT")

    def _verify_in(self, conn: sqlite3.Connection, full: bool) -> tuple[list[str], int, Any]:
        problems: list[str] = []
        cp = None if full else _load_checkpoint(conn)
        prev, start = "", 0
        if cp is not None:
            row = conn.execute("SELECT chain FROM entries WHERE id = ?", (cp.id,)).fetchone()
            if row is None or row[0] != cp.chain:
                return [f"the verified entry {cp.id} is missing or was altered"], 0, None
            prev, start = cp.chain, cp.id
        rows = conn.execute(
            "SELECT id, analyst, dataset, sql, epsilon, delta, info_nats, created, chain, status "
            "FROM entries WHERE id > ? ORDER BY id",
            (start,),
        ).fetchall()
        for row in rows:
            want = _chain(prev, self.store_id, row[:8])
            if row[8] != want:
                problems.append(f"entry {row[0]} does not match the hash chain")
                return problems, len(rows), None
            prev = want
        head = conn.execute("SELECT value FROM meta WHERE key = 'head'").fetchone()
        last = conn.execute("SELECT id, chain FROM entries ORDER BY id DESC LIMIT 1").fetchone()
        if head is not None and json.loads(head[0]) != ([] if last is None else list(last)):
            problems.append("the last entries are missing (the head of the chain moved back)")
        problems += self._check_sums(conn, cp, rows)
        if full:
            problems += self._check_accountants(conn)
        return problems, len(rows), None if last is None else (last[0], last[1])

    def _check_sums(
        self, conn: sqlite3.Connection, cp: _Checkpoint | None, rows: list[Any]
    ) -> list[str]:
        """Stored spends equal the checkpoint's sums plus the spending entries after it."""
        if cp is None:
            return self._check(conn)
        per_analyst: dict[str, list[Fraction]] = {}
        per_dataset: dict[str, list[Fraction]] = {}
        for k, v in cp.analysts.items():
            per_analyst[k] = [_frac(v[0]), _frac(v[1])]
        for k, v in cp.datasets.items():
            per_dataset[k] = [_frac(v[0]), _frac(v[1])]
        for row in rows:
            if row[9] not in _SPENDING:
                continue
            eps, dlt = _frac(row[4]), _frac(row[5])
            for table, key in ((per_analyst, _pair_key(row[1], row[2])), (per_dataset, row[2])):
                t = table.setdefault(key, [Fraction(0), Fraction(0)])
                t[0] += eps
                t[1] += dlt
        problems: list[str] = []
        for b in self._budgets_in(conn):
            want = per_analyst.get(_pair_key(b.analyst, b.dataset), [Fraction(0), Fraction(0)])
            if [b.spent_epsilon, b.spent_delta] != want:
                problems.append(f"{b.analyst}/{b.dataset}: spent {b.spent_epsilon} != {want[0]}")
            if b.currency == "basic" and (b.spent_epsilon > b.epsilon or b.spent_delta > b.delta):
                problems.append(f"{b.analyst}/{b.dataset}: overspent")
        for name, spent_eps, spent_dlt in conn.execute(
            "SELECT name, spent_epsilon, spent_delta FROM datasets"
        ).fetchall():
            want = per_dataset.get(name, [Fraction(0), Fraction(0)])
            if [_frac(spent_eps), _frac(spent_dlt)] != want:
                problems.append(f"dataset {name}: spent {spent_eps} != {want[0]}")
        return problems

    def _check_accountants(self, conn: sqlite3.Connection) -> list[str]:
        """Every stored accountant state equals the replay of its spending entries."""
        from infodp.accounting.accountant import Accountant

        problems: list[str] = []
        for b in self._budgets_in(conn):
            if b.accountant_json is None:
                continue
            row = conn.execute(
                "SELECT budget_json FROM analysts WHERE name = ? AND dataset = ?",
                (b.analyst, b.dataset),
            ).fetchone()
            try:
                stored = _accountant_of(b.accountant_json)
                budget = type(stored.budget).from_dict(json.loads(row[0]))
                replay = Accountant(budget)
                for spec, eps, dlt in conn.execute(
                    "SELECT profile_json, epsilon, delta FROM entries WHERE analyst = ? AND "
                    f"dataset = ? AND status IN {_SPENDING} ORDER BY id",
                    (b.analyst, b.dataset),
                ):
                    e, d = _frac(eps), _frac(dlt)
                    replay._add(_spend_profile(spec, e, d), (e, d), 1)
            except InfodpError as err:
                problems.append(f"{b.analyst}/{b.dataset}: accountant state unreadable ({err})")
                continue
            if replay.to_json() != stored.to_json():
                problems.append(f"{b.analyst}/{b.dataset}: accountant state != its entries")
        return problems

    def _advance_checkpoint(self, verified: Any) -> None:
        """Move the verified checkpoint to the head (after a sound verification).

        ``verified``: the (id, chain) of the last entry the verification covered. Not
        fsync'd: losing it only means the next open verifies more. It moves only if no entry
        was written since (the head is still ``verified``), and the sums it records are the
        stored spends, which the verification found equal to the entries' sums (a cancel
        since then changed both alike). A ledger that cannot be written keeps its checkpoint.
        """
        if verified is None:
            return
        with contextlib.suppress(sqlite3.OperationalError, InternalError):
            if not self.in_memory and self.path.stat().st_size > _QUICK_CHECK_BYTES:
                self._quick_check(self._connection())  # pages checked once per checkpoint
            with self._transaction(durable=False) as conn:
                last = conn.execute(
                    "SELECT id, chain FROM entries ORDER BY id DESC LIMIT 1"
                ).fetchone()
                if last is None or (last[0], last[1]) != tuple(verified):
                    return
                cp = {
                    "id": last[0],
                    "chain": last[1],
                    "analysts": {
                        _pair_key(b.analyst, b.dataset): [str(b.spent_epsilon), str(b.spent_delta)]
                        for b in self._budgets_in(conn)
                    },
                    "datasets": {
                        r[0]: [r[1], r[2]]
                        for r in conn.execute(
                            "SELECT name, spent_epsilon, spent_delta FROM datasets"
                        ).fetchall()
                    },
                }
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('checkpoint', ?), "
                    "('head', ?)",
                    (json.dumps(cp), json.dumps(list(last))),
                )

    @staticmethod
    def _budgets_in(conn: sqlite3.Connection) -> list[Budget]:
        return [
            _to_budget(r[0], r[1], r[2:])
            for r in conn.execute(
                "SELECT name, dataset, epsilon, delta, spent_epsilon, spent_delta, accountant_json "
                "FROM analysts ORDER BY dataset, name"
            ).fetchall()
        ]

    def _still_mine(self, conn: sqlite3.Connection) -> None:
        """Refuse to write into a ledger file that was deleted, replaced or re-bound."""
        if self.in_memory:
            return  # no file that could be deleted or swapped
        try:
            st = self.path.stat()
        except FileNotFoundError:
            raise LedgerError(
                f"the ledger {self.path.name} was deleted while in use; nothing was charged. "
                "Restore it (or, data owner, run 'infodp ledger reinit --db STORE --yes') and "
                "restart."
            ) from None
        row = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        if (st.st_dev, st.st_ino) != self._identity or row is None or row[0] != self.store_id:
            raise LedgerError(
                f"the ledger {self.path.name} was replaced while in use; nothing was charged. "
                "Restart so that it is checked again."
            )

    # -- connections ---------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        # One connection per process (reopened after a fork); transactions serialise writers.
        # mode=rw: a ledger that disappeared is never silently recreated by SQLite.
        if self.in_memory:
            if self._conn is None:  # reopening would lose the in-memory database
                self._conn = sqlite3.connect(
                    ":memory:", isolation_level=None, check_same_thread=False
                )
            return self._conn
        if self._conn is None or self._pid != os.getpid():
            uri = "file:" + urllib.parse.quote(str(self.path.absolute())) + "?mode=rw"
            try:
                conn = sqlite3.connect(
                    uri,
                    timeout=self.timeout,
                    isolation_level=None,
                    check_same_thread=False,
                    uri=True,
                )
            except sqlite3.OperationalError as err:
                raise LedgerError(
                    f"the ledger {self.path.name} cannot be opened ({err}); was it deleted?"
                ) from None
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            conn.execute("PRAGMA synchronous = FULL")
            self._drop_wal()
            self._conn, self._pid = conn, os.getpid()
            self._full = True
            self._wal_mode = mode is not None and str(mode[0]).lower() == "wal"
        return self._conn

    def _drop_wal(self) -> None:
        with self._wal_lock:
            wal, self._wal = self._wal, None
            if wal is not None and wal.pid == os.getpid():
                with contextlib.suppress(OSError):
                    os.close(wal.fd)

    def sync(self) -> None:
        """Make every transaction this process has committed durable (fsync the WAL).

        A reservation made with ``durable=False`` (:meth:`reserve`) is committed to the WAL
        with ``synchronous=NORMAL``: it is in the file (the operating system's page cache)
        when the commit returns, so it survives the death of this process (SIGKILL, a
        crash), but a power loss could still undo it. This call is the fsync that
        ``synchronous=FULL`` would have made inside the commit (SQLite's WAL mode syncs the
        WAL file, and the directory once for a new WAL; Linux's ``fsync`` flushes the
        file's pages whichever descriptor wrote them), so nothing may be released for such
        a reservation before it returns. Raises :class:`OSError` when the fsync fails.
        """
        if self.in_memory:
            return
        with self._lock:
            self._connection()  # (re)opened after a fork: the WAL descriptor goes with it
            if not self._wal_mode:
                return  # nothing was deferred (see _deferrable): every commit was durable
        with self._wal_lock:  # close() waits: the descriptor is never closed mid-fsync
            if self._wal is None or self._wal.pid != os.getpid():
                self._wal = _WalFile.open(self.path)
            self._wal.sync()

    def _deferrable(self) -> bool:
        """Whether a reservation may commit without its fsync (WAL mode on a file)."""
        if self.in_memory:
            return False
        with self._lock:
            self._connection()
            return self._wal_mode

    def close(self) -> None:
        """Write the completions still pending, then close this process's connection (it
        reopens on next use)."""
        try:
            self.flush()
        finally:
            self._close()

    def _close(self) -> None:
        with self._lock:
            if self.in_memory:
                return  # closing would drop the in-memory budget state
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None
            self._drop_wal()

    @contextlib.contextmanager
    def _transaction(self, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One BEGIN IMMEDIATE ... COMMIT; waits for other writers instead of failing.

        ``durable`` commits with ``synchronous=FULL`` (fsync'd before returning); a
        non-durable commit may be rolled back by a power loss, which is only used where losing
        it is safe (marking a reserved entry as released: the cost stays spent either way).
        """
        with self._lock:
            deadline = time.monotonic() + self.timeout
            writers = _writers(self)
            if not writers.lock.acquire(timeout=self.timeout):
                raise InternalError(f"ledger {self.path} stayed locked for {self.timeout} s")
            try:
                conn = self._begin(deadline, durable)
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
            conn = self._connection()
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
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            yield self._connection()

    # -- datasets ------------------------------------------------------------------------------

    def register_dataset(
        self,
        name: str,
        schema_json: str,
        *,
        rows: int,
        source: str,
        info_cap_bits: float | None = None,
        unit_rows_ok: bool = False,
        max_epsilon: Fraction | None = None,
        max_delta: Fraction | None = None,
        fingerprint: str | None = None,
    ) -> None:
        """Record a dataset's metadata (refuses a name already registered, or content
        identical to a registered dataset: same ``fingerprint`` of the bounded table).

        ``max_epsilon``/``max_delta`` cap what all analysts together may spend on it.
        """
        with self._transaction() as conn:
            self._still_mine(conn)
            if conn.execute("SELECT 1 FROM datasets WHERE name = ?", (name,)).fetchone():
                raise ParameterError("name", name, "a dataset name not registered yet")
            if fingerprint is not None:
                same = conn.execute(
                    "SELECT name FROM datasets WHERE fingerprint = ?", (fingerprint,)
                ).fetchone()
                if same is not None:
                    raise ParameterError(
                        f"the data of {name!r} are identical to the registered dataset "
                        f"{same[0]!r} (same fingerprint of the bounded table): registering them "
                        "again would give every analyst a fresh budget on the same people. "
                        f"Grant budgets on {same[0]!r} instead."
                    )
            conn.execute(
                "INSERT INTO datasets (name, schema_json, rows, source, info_cap_bits, "
                "unit_rows_ok, created, max_epsilon, max_delta, fingerprint) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    schema_json,
                    int(rows),
                    source,
                    info_cap_bits,
                    int(unit_rows_ok),
                    _now(),
                    None if max_epsilon is None else str(max_epsilon),
                    None if max_delta is None else str(max_delta),
                    fingerprint,
                ),
            )

    def dataset(self, name: str) -> DatasetRecord:
        """The registered dataset ``name``."""
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_DATASET_COLUMNS} FROM datasets WHERE lower(name) = lower(?)", (name,)
            ).fetchone()
            if row is None:
                known = [r[0] for r in conn.execute("SELECT name FROM datasets ORDER BY name")]
                raise ParameterError(
                    f"unknown dataset {name!r}; registered: {', '.join(known) or 'none'}."
                )
        return _record(row)

    def dataset_declaration(self, name: str) -> tuple[str, str, bool]:
        """(name, schema JSON, unit_rows_ok) of a registered dataset: what pricing a query
        needs, without the spend totals :meth:`dataset` also reads and parses."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT name, schema_json, unit_rows_ok FROM datasets WHERE lower(name) = lower(?)",
                (name,),
            ).fetchone()
        if row is None:
            self.dataset(name)  # raises the error listing the registered datasets
            raise InternalError(f"dataset {name!r} vanished while being read")
        return str(row[0]), str(row[1]), bool(row[2])

    def datasets(self) -> list[DatasetRecord]:
        """Every registered dataset."""
        with self._read() as conn:
            rows = conn.execute(f"SELECT {_DATASET_COLUMNS} FROM datasets ORDER BY name").fetchall()
        return [_record(r) for r in rows]

    # -- analysts ------------------------------------------------------------------------------

    def add_analyst(
        self,
        name: str,
        dataset: str,
        epsilon: Fraction,
        delta: Fraction,
        *,
        accountant_json: str | None = None,
    ) -> str:
        """Give ``name`` a budget on ``dataset``; returns the API key (shown once).

        Without ``accountant_json`` the budget is (ε, δ) under basic composition, exact
        fractions. With it (the JSON state of a fresh :class:`infodp.accounting.Accountant`)
        the accountant's currency is enforced instead (pure ε, (ε, δ) with tight PLD
        composition, an RDP curve, or nats at level α), inside the same ledger transaction.
        """
        if epsilon < 0:
            raise ParameterError("epsilon", float(epsilon), "a non-negative number (>= 0)")
        if not 0 <= delta <= 1:
            raise ParameterError("delta", float(delta), "a probability in [0, 1]")
        self.dataset(dataset)
        key = secrets.token_urlsafe(32)
        salt = secrets.token_hex(16)
        digest = hashlib.sha256((salt + key).encode()).hexdigest()
        with self._transaction() as conn:
            self._still_mine(conn)
            if conn.execute(
                "SELECT 1 FROM analysts WHERE name = ? AND dataset = ?", (name, dataset)
            ).fetchone():
                raise ParameterError(
                    "name", name, f"an analyst without a budget on {dataset!r} yet"
                )
            conn.execute(
                "INSERT INTO analysts (name, dataset, key_salt, key_hash, epsilon, delta, created,"
                " accountant_json, budget_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    dataset,
                    salt,
                    digest,
                    str(epsilon),
                    str(delta),
                    _now(),
                    accountant_json,
                    None
                    if accountant_json is None
                    else json.dumps(json.loads(accountant_json)["budget"]),
                ),
            )
        return key

    def verify_key(self, name: str, key: str) -> bool:
        """True when ``key`` is one of the API keys issued to analyst ``name``, unrevoked."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT key_salt, key_hash FROM analysts WHERE name = ?", (name,)
            ).fetchall()
            revoked = conn.execute(
                "SELECT 1 FROM key_revocations WHERE analyst = ?", (name,)
            ).fetchone()
        matched = any(
            hmac.compare_digest(hashlib.sha256((salt + key).encode()).hexdigest(), digest)
            for salt, digest in rows
        )
        return matched and revoked is None

    # -- server keys and revocations (the one key system; key_id in clear, secret hashed) ----

    def issue_key(self, analyst: str) -> str:
        """A new key ``idp_<id>.<secret>`` for ``analyst`` (returned once; only a hash is kept).

        A revoked ledger key stays revoked; a new server key is the way back in.
        """
        if not isinstance(analyst, str) or not analyst.strip():
            raise ParameterError("analyst", analyst, "a non-empty analyst name")
        key_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        salt = secrets.token_hex(16)
        with self._transaction() as conn:
            self._still_mine(conn)
            conn.execute(
                "INSERT INTO keys (key_id, analyst, salt, hash, created) VALUES (?, ?, ?, ?, ?)",
                (key_id, analyst, salt, _digest(salt, secret), _now()),
            )
        return f"{KEY_PREFIX}{key_id}.{secret}"

    def revoke_keys(self, analyst: str, key_id: str | None = None) -> int:
        """Revoke ``analyst``'s server keys (or only ``key_id``) and, without ``key_id``, the
        keys ``add_analyst`` printed; returns how many server keys were newly revoked."""
        now = _now()
        with self._transaction() as conn:
            self._still_mine(conn)
            if key_id is None:
                cur = conn.execute(
                    "UPDATE keys SET revoked = ? WHERE analyst = ? AND revoked IS NULL",
                    (now, analyst),
                )
                conn.execute(
                    "INSERT OR REPLACE INTO key_revocations (analyst, revoked) VALUES (?, ?)",
                    (analyst, now),
                )
            else:
                cur = conn.execute(
                    "UPDATE keys SET revoked = ? WHERE analyst = ? AND key_id = ? "
                    "AND revoked IS NULL",
                    (now, analyst, key_id),
                )
        return int(cur.rowcount)

    def ledger_key_revoked(self, analyst: str) -> bool:
        """True when the keys ``add_analyst`` issued to ``analyst`` have been revoked."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT 1 FROM key_revocations WHERE analyst = ?", (analyst,)
            ).fetchone()
        return row is not None

    def key_records(self, analyst: str | None = None) -> list[KeyRecord]:
        """Issued server keys (ids and dates only), optionally of one analyst."""
        query = "SELECT key_id, analyst, created, revoked FROM keys"
        args: tuple[str, ...] = ()
        if analyst is not None:
            query += " WHERE analyst = ?"
            args = (analyst,)
        with self._read() as conn:
            rows = conn.execute(query + " ORDER BY created, key_id", args).fetchall()
        return [KeyRecord(*r) for r in rows]

    def verify_server_key(self, key_id: str, secret: str) -> str | None:
        """The analyst of a valid, unrevoked server key; None otherwise (constant-time)."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT analyst, salt, hash, revoked FROM keys WHERE key_id = ?", (key_id,)
            ).fetchone()
        if row is None:
            # Same work as a hit, so a miss does not answer faster.
            hmac.compare_digest(_digest("0" * 32, secret), "0" * 64)
            return None
        analyst, salt, digest, revoked = row
        ok = hmac.compare_digest(_digest(salt, secret), digest)
        return analyst if ok and revoked is None else None

    def budget(self, analyst: str, dataset: str) -> Budget:
        """The analyst's budget on ``dataset``."""
        with self._read() as conn:
            return self._budget(conn, analyst, dataset)

    def budget_after(self, entry_id: int) -> Budget | None:
        """The analyst's budget as reservation ``entry_id`` left it (the state its
        transaction committed), once, when this object made it; else None (read
        :meth:`budget`)."""
        return self._left.pop(entry_id, None)

    def budgets(self, analyst: str | None = None) -> list[Budget]:
        """Every (analyst, dataset) budget, or only ``analyst``'s."""
        query = (
            "SELECT name, dataset, epsilon, delta, spent_epsilon, spent_delta, accountant_json "
            "FROM analysts"
        )
        params: tuple[str, ...] = ()
        if analyst is not None:
            query, params = query + " WHERE name = ?", (analyst,)
        with self._read() as conn:
            rows = conn.execute(query + " ORDER BY dataset, name", params).fetchall()
        return [_to_budget(r[0], r[1], r[2:]) for r in rows]

    @staticmethod
    def _budget(conn: sqlite3.Connection, analyst: str, dataset: str) -> Budget:
        row = conn.execute(
            "SELECT epsilon, delta, spent_epsilon, spent_delta, accountant_json FROM analysts "
            "WHERE name = ? AND dataset = ?",
            (analyst, dataset),
        ).fetchone()
        if row is None:
            raise ParameterError(
                f"analyst {analyst!r} has no budget on dataset {dataset!r}; "
                f"add one with 'infodp analyst add --name {analyst} --dataset {dataset} ...'."
            )
        return _to_budget(analyst, dataset, row)

    # -- the reservation protocol --------------------------------------------------------------

    def reserve(
        self,
        analyst: str,
        dataset: str,
        sql: str,
        epsilon: Fraction,
        delta: Fraction,
        info_nats: float,
        profile_spec: dict[str, Any] | str | None = None,
        *,
        durable: bool = True,
        declaration: tuple[str, bool] | None = None,
    ) -> int:
        """Debit (ε, δ) and the information cost durably; returns the entry id.

        ``profile_spec`` (an ``infodp.accounting`` profile spec of the query, or its JSON text
        as the ledger stores it, ``json.dumps(spec)``) is spent by the analyst's accountant
        when their budget is in an accountant currency.

        ``durable=False``: the reservation is committed (checked, written, visible to every
        process, and kept if this process dies) but its fsync is left to :meth:`sync`, which
        the caller must call, successfully, before anything of the query is released. The
        query path uses this to run the fsync while DuckDB aggregates.

        ``declaration``: the dataset's (schema JSON, unit_rows_ok) the query was priced with;
        the transaction checks that the dataset still declares exactly that, and raises
        :class:`DeclarationChanged` (nothing charged) otherwise.

        Raises :class:`~infodp.errors.BudgetExceeded` (requested, remaining, gap) when the
        analyst's budget or the dataset's information cap would be exceeded; nothing changes.
        """
        if epsilon < 0 or delta < 0 or not info_nats >= 0:
            raise InternalError(f"negative cost ({epsilon}, {delta}, {info_nats})")
        args = (analyst, dataset, sql, epsilon, delta, info_nats, profile_spec, declaration)
        entry_id = _group(self).submit(
            _Pending(
                self,
                lambda conn: self._reserve_one(conn, *args),
                reservation=True,
                durable=durable,
            )
        )
        if entry_id is None:
            raise InternalError("the ledger did not return an entry id")
        return entry_id

    def _commit_group(self, batch: list[_Pending]) -> None:
        """Group commit: ``batch`` in arrival order, in one transaction with one fsync.

        Each reservation is checked against the budget left by the ones before it and each
        write runs inside its own SAVEPOINT, so a refused one (BudgetExceeded and other
        :class:`~infodp.errors.InfodpError`) undoes only its own changes. The transaction is
        durable (fsync'd) when it holds a reservation, and outcomes are handed out only after
        the COMMIT: a caller never draws noise for a reservation that could still be rolled
        back. Any other failure (the file check, SQLite) fails the whole batch, and nothing of
        it was charged.
        """
        outcomes: list[tuple[int | None, BaseException | None]] = []
        reserving = any(item.reservation for item in batch)
        # fsync'd here unless every reservation of the batch defers it to Ledger.sync.
        durable = any(item.reservation and item.durable for item in batch) or (
            reserving and not self._deferrable()
        )
        single = len(batch) == 1
        try:
            with self._transaction(durable=durable) as conn:
                swapped: LedgerError | None = None
                if reserving:
                    try:
                        self._still_mine(conn)
                    except LedgerError as err:
                        swapped = err  # no charge goes into a file that is not ours any more
                for item in batch:
                    if swapped is not None and item.reservation:
                        outcomes.append((None, copy.copy(swapped)))
                        continue
                    if single:
                        # The only write: a refusal rolls the whole transaction back, which
                        # holds nothing else (no SAVEPOINT: two statements fewer).
                        try:
                            outcomes.append((item.work(conn), None))
                        except InfodpError as err:
                            raise _Refused(err) from None
                        continue
                    conn.execute("SAVEPOINT reserve_one")
                    try:
                        outcomes.append((item.work(conn), None))
                    except InfodpError as err:
                        conn.execute("ROLLBACK TO reserve_one")
                        outcomes.append((None, err))
                    finally:
                        conn.execute("RELEASE reserve_one")
        except _Refused as refused:
            outcomes = [(None, refused.error)]
        for item, (entry_id, failure) in zip(batch, outcomes, strict=True):
            item.entry_id, item.error = entry_id, failure

    def _reserve_one(
        self,
        conn: sqlite3.Connection,
        analyst: str,
        dataset: str,
        sql: str,
        epsilon: Fraction,
        delta: Fraction,
        info_nats: float,
        profile_spec: dict[str, Any] | str | None,
        declaration: tuple[str, bool] | None = None,
    ) -> int:
        """One reservation inside an open write transaction (see :meth:`reserve`)."""
        # The analyst's budget, the dataset's totals and its declaration in one read.
        row = conn.execute(
            "SELECT a.epsilon, a.delta, a.spent_epsilon, a.spent_delta, a.accountant_json, "
            "d.info_cap_bits, d.info_spent_nats, d.max_epsilon, d.max_delta, d.spent_epsilon, "
            "d.spent_delta, d.schema_json, d.unit_rows_ok, "
            # The entry this one will follow: AUTOINCREMENT's next id and the last link.
            "(SELECT seq FROM sqlite_sequence WHERE name = 'entries'), "
            "(SELECT id FROM entries ORDER BY id DESC LIMIT 1), "
            "(SELECT chain FROM entries ORDER BY id DESC LIMIT 1) "
            "FROM analysts a JOIN datasets d ON d.name = a.dataset "
            "WHERE a.name = ? AND a.dataset = ?",
            (analyst, dataset),
        ).fetchone()
        if row is None:
            self._budget(conn, analyst, dataset)  # raises the error naming what is missing
            raise InternalError(f"dataset {dataset!r} of analyst {analyst!r} is not registered")
        if declaration is not None and (row[11], bool(row[12])) != declaration:
            raise DeclarationChanged(
                f"the declaration of dataset {dataset} changed since the query was priced; "
                "nothing was charged. Ask again."
            )
        b = _to_budget(analyst, dataset, row[:5])
        cap, spent, max_eps, max_dlt, d_eps, d_dlt = row[5:11]
        # Every currency, basic included, is enforced by the accountant; its state is taken
        # from the cache of parsed states when the stored text is the one cached (the text
        # is the whole state, so another process's charge shows as a different text and the
        # state is re-read: a cached state is never trusted beyond what is on disk).
        spec_text = profile_spec if not isinstance(profile_spec, dict) else json.dumps(profile_spec)
        new_state = _accountant_spend(b, spec_text, epsilon, delta)
        new_d_eps, new_d_dlt = _frac(d_eps) + epsilon, _frac(d_dlt) + delta
        over_eps = max_eps is not None and new_d_eps > _frac(max_eps)
        over_dlt = max_dlt is not None and new_d_dlt > _frac(max_dlt)
        if over_eps or over_dlt:
            # The dataset's cap, shared by all analysts (basic composition of every
            # analyst's spend on the same people, Dwork & Roth 2014, Thm 3.16).
            left_eps = _left(max_eps, d_eps)
            left_dlt = _left(max_dlt, d_dlt)
            gap_eps = Fraction(0) if left_eps is None else max(Fraction(0), epsilon - left_eps)
            gap_dlt = Fraction(0) if left_dlt is None else max(Fraction(0), delta - left_dlt)
            raise BudgetExceeded(
                f"epsilon={format_fraction(epsilon)}, delta={format_fraction(delta)}",
                f"epsilon={'unlimited' if left_eps is None else format_fraction(left_eps)}, "
                f"delta={'unlimited' if left_dlt is None else format_fraction(left_dlt)} "
                f"on dataset {dataset} (its cap, shared by all analysts)",
                f"epsilon={format_fraction(gap_eps)}, delta={format_fraction(gap_dlt)}",
            )
        new_spent = _add_up(spent, info_nats)
        if cap is not None and new_spent > cap * math.log(2):
            left = max(0.0, cap - spent / math.log(2))
            raise BudgetExceeded(
                f"{info_nats / math.log(2):.6g} bits of information about table {dataset}",
                f"{left:.6g} bits (dataset cap {cap:g} bits)",
                f"{info_nats / math.log(2) - left:.6g} bits",
            )
        conn.execute(
            "UPDATE analysts SET spent_epsilon = ?, spent_delta = ?, "
            "accountant_json = coalesce(?, accountant_json) WHERE name = ? AND dataset = ?",
            (
                _text(b.spent_epsilon + epsilon),
                _text(b.spent_delta + delta),
                new_state,
                analyst,
                dataset,
            ),
        )
        conn.execute(
            "UPDATE datasets SET info_spent_nats = ?, spent_epsilon = ?, spent_delta = ? "
            "WHERE name = ?",
            (new_spent, _text(new_d_eps), _text(new_d_dlt), dataset),
        )
        created = _now()
        # The immutable fields as stored (and read back by the verification): text, and the
        # information cost as a REAL, which holds a Python float exactly.
        fields = (analyst, dataset, sql, str(epsilon), str(delta), float(info_nats), created)
        # The id AUTOINCREMENT would give (one more than any id ever used), so that the entry
        # is written with its link in one statement; the link follows the last entry.
        entry_id = max(row[13] or 0, row[14] or 0) + 1
        link = _chain("" if row[14] is None else row[15], self.store_id, (entry_id, *fields))
        cur = conn.execute(
            "INSERT INTO entries (id, analyst, dataset, sql, epsilon, delta, info_nats, status, "
            "created, pid, profile_json, chain) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?, ?, ?)",
            (entry_id, *fields, os.getpid(), spec_text, link),
        )
        if cur.lastrowid != entry_id:
            raise InternalError("the ledger did not write the entry under its id")
        # The head of the chain: an open that finds fewer entries knows some were dropped.
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('head', ?)",
            (json.dumps([entry_id, link]),),
        )
        if len(self._left) >= 1024:
            self._left.clear()
        self._left[int(entry_id)] = Budget(
            analyst,
            dataset,
            b.epsilon,
            b.delta,
            b.spent_epsilon + epsilon,
            b.spent_delta + delta,
            b.accountant_json if new_state is None else new_state,
        )
        return int(entry_id)

    def cancel(self, entry_id: int, reason: str) -> None:
        """Refund a reservation whose query failed before touching the data."""
        with self._transaction() as conn:
            e = self._entry(conn, entry_id)
            if e.status != "reserved":
                raise InternalError(f"cancel of entry {entry_id} in state {e.status}")
            b = self._budget(conn, e.analyst, e.dataset)
            state = None
            if b.accountant_json is not None:
                # The refund is incremental: the accountant takes this one spend back out.
                row = conn.execute(
                    "SELECT profile_json FROM entries WHERE id = ?", (entry_id,)
                ).fetchone()
                state = _accountant_refund(b.accountant_json, row[0], e.epsilon, e.delta)
            conn.execute(
                "UPDATE analysts SET spent_epsilon = ?, spent_delta = ?, "
                "accountant_json = coalesce(?, accountant_json) WHERE name = ? AND dataset = ?",
                (
                    str(b.spent_epsilon - e.epsilon),
                    str(b.spent_delta - e.delta),
                    state,
                    e.analyst,
                    e.dataset,
                ),
            )
            d_eps, d_dlt = conn.execute(
                "SELECT spent_epsilon, spent_delta FROM datasets WHERE name = ?", (e.dataset,)
            ).fetchone()
            conn.execute(
                "UPDATE datasets SET spent_epsilon = ?, spent_delta = ? WHERE name = ?",
                (str(_frac(d_eps) - e.epsilon), str(_frac(d_dlt) - e.delta), e.dataset),
            )
            if math.isfinite(e.info_nats):
                # An unbounded (infinite) information cost cannot be subtracted (∞ − ∞): the
                # table's information total then stays where it is, which errs on the safe side.
                conn.execute(
                    "UPDATE datasets SET info_spent_nats = max(0, info_spent_nats - ?) "
                    "WHERE name = ?",
                    (e.info_nats, e.dataset),
                )
            conn.execute(
                "UPDATE entries SET status = 'cancelled', finished = ?, error = ? WHERE id = ?",
                (_now(), reason, entry_id),
            )
            _refund_checkpoint(conn, e)

    def fail(self, entry_id: int, reason: str) -> None:
        """Mark a query that failed after touching the data: its cost stays spent."""
        self._finish(entry_id, "failed", None, reason)

    def complete(self, entry_id: int, result: dict[str, Any] | str) -> None:
        """Record the released answer of a reserved entry (a mapping, or its JSON text)."""
        text = result if isinstance(result, str) else json.dumps(result, allow_nan=False)
        self._finish(entry_id, "released", text, None)

    def complete_later(self, entry_id: int, text: str | Callable[[], str]) -> None:
        """:meth:`complete`, written later (:meth:`flush`): by a background writer at most
        ``_FLUSH_AFTER`` (50 ms) later, in one transaction with the others held by then,
        and before any read of the entries through this object, at :meth:`close` and at
        exit.

        The reservation already charged the full cost, so until then the entry reads
        'reserved' (spent, no stored answer) to other processes; if this process dies first
        it stays so: budget recorded, privacy intact, only the stored copy of the answer is
        lost (as a non-fsync'd completion could always be lost to a power failure).
        ``text`` may be a function rendering it then (an entry whose rendering fails is left
        'reserved').
        """
        with self._later_lock:
            if self._later_pid != os.getpid():  # forked: the parent writes its own
                self._later, self._later_pid = {}, os.getpid()
            if entry_id in self._later:
                raise InternalError(f"entry {entry_id} finished twice (released -> released)")
            self._later[entry_id] = (_now(), text)
        _HOLDERS.add(self)
        _flusher().poke(self)

    def flush(self) -> None:
        """Write every completion :meth:`complete_later` still holds (one transaction).

        One flush at a time (a reader's flush waits for the one in flight, so it then sees
        every completion held before it); :meth:`complete_later` never waits for a flush,
        which renders and writes its batch outside the lock of the held completions.
        """
        if self._later_pid != os.getpid():
            return  # a forked child: the parent writes its own (its locks may be held here)
        with self._flush_lock:
            with self._later_lock:
                if not self._later or self._later_pid != os.getpid():
                    return
                items, self._later = self._later, {}
            try:
                self._write_completions(items)
            except InternalError:
                raise  # a bug (an entry finished twice): not retried
            except BaseException:
                with self._later_lock:
                    self._later = {**items, **self._later}  # kept for the next flush
                raise

    def _write_completions(self, items: dict[int, tuple[str, str | Callable[[], str]]]) -> None:
        rows: list[tuple[int, str, str]] = []
        for entry_id, (finished, text) in items.items():
            if not isinstance(text, str):
                try:
                    text = text()
                except Exception:  # a bug: the entry stays 'reserved' (spent, no answer kept)
                    continue
                items[entry_id] = (finished, text)  # rendered once, even if written later
                # Let a waiting thread (a query's critical path) take the interpreter lock
                # between two renderings, instead of after the whole batch (up to the switch
                # interval, 5 ms).
                time.sleep(0)
            rows.append((entry_id, finished, text))

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

        _group(self).submit(_Pending(self, work, reservation=False))
        if twice:
            raise InternalError(f"entries {twice} finished twice (-> released)")

    def _finish(
        self, entry_id: int, status: str, result_json: str | None, error: str | None
    ) -> None:
        # Not fsync'd on its own: if this commit is lost the entry stays 'reserved' (spent),
        # never refunded. It shares the group commit of the reservations running meanwhile.
        with self._later_lock:
            if entry_id in self._later:
                raise InternalError(f"entry {entry_id} finished twice (released -> {status})")
        finished = _now()

        def work(conn: sqlite3.Connection) -> None:
            e = self._entry(conn, entry_id)
            if e.status != "reserved":
                raise InternalError(f"entry {entry_id} finished twice ({e.status} -> {status})")
            conn.execute(
                "UPDATE entries SET status = ?, finished = ?, result_json = ?, error = ? "
                "WHERE id = ?",
                (status, finished, result_json, error, entry_id),
            )

        _group(self).submit(_Pending(self, work, reservation=False))

    # -- reading -------------------------------------------------------------------------------

    _ENTRY_COLUMNS = (
        "id, analyst, dataset, sql, epsilon, delta, info_nats, status, created, finished, pid, "
        "result_json, error"
    )

    def _entry(self, conn: sqlite3.Connection, entry_id: int) -> Entry:
        row = conn.execute(
            f"SELECT {self._ENTRY_COLUMNS} FROM entries WHERE id = ?", (entry_id,)
        ).fetchone()
        if row is None:
            raise InternalError(f"no ledger entry {entry_id}")
        return _to_entry(row)

    def entry_profile(self, entry_id: int) -> dict[str, Any] | None:
        """The privacy profile spec the entry was charged (``infodp.accounting.spec``)."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT profile_json FROM entries WHERE id = ?", (entry_id,)
            ).fetchone()
        if row is None:
            raise InternalError(f"no ledger entry {entry_id}")
        out: dict[str, Any] | None = None if row[0] is None else json.loads(row[0])
        return out

    def entry(self, entry_id: int) -> Entry:
        """One entry by id."""
        self.flush()
        with self._read() as conn:
            return self._entry(conn, entry_id)

    def entries(self, analyst: str | None = None, dataset: str | None = None) -> list[Entry]:
        """Entries, oldest first, optionally for one analyst and/or dataset."""
        self.flush()
        query = f"SELECT {self._ENTRY_COLUMNS} FROM entries WHERE 1=1"
        args: list[Any] = []
        if analyst is not None:
            query += " AND analyst = ?"
            args.append(analyst)
        if dataset is not None:
            query += " AND dataset = ?"
            args.append(dataset)
        with self._read() as conn:
            rows = conn.execute(query + " ORDER BY id", args).fetchall()
        return [_to_entry(r) for r in rows]

    def check(self) -> list[str]:
        """Consistency problems (empty when sound): stored spends equal the entries' sums."""
        self.flush()
        with self._read() as conn:
            return self._check(conn)

    @staticmethod
    def _check(conn: sqlite3.Connection) -> list[str]:
        problems: list[str] = []
        budgets = [
            _to_budget(r[0], r[1], r[2:])
            for r in conn.execute(
                "SELECT name, dataset, epsilon, delta, spent_epsilon, spent_delta, accountant_json "
                "FROM analysts ORDER BY dataset, name"
            ).fetchall()
        ]
        for b in budgets:
            rows = conn.execute(
                "SELECT epsilon, delta FROM entries WHERE analyst = ? AND dataset = ? "
                f"AND status IN {_SPENDING}",
                (b.analyst, b.dataset),
            ).fetchall()
            eps = sum((_frac(r[0]) for r in rows), Fraction(0))
            dlt = sum((_frac(r[1]) for r in rows), Fraction(0))
            if eps != b.spent_epsilon or dlt != b.spent_delta:
                problems.append(f"{b.analyst}/{b.dataset}: spent {b.spent_epsilon} != {eps}")
            basic = b.currency == "basic"  # else the accountant enforces its currency
            if basic and (b.spent_epsilon > b.epsilon or b.spent_delta > b.delta):
                problems.append(f"{b.analyst}/{b.dataset}: overspent")
        # The dataset totals (caps shared by all analysts) equal their entries' sums.
        for name, spent_eps, spent_dlt in conn.execute(
            "SELECT name, spent_epsilon, spent_delta FROM datasets"
        ).fetchall():
            rows = conn.execute(
                f"SELECT epsilon, delta FROM entries WHERE dataset = ? AND status IN {_SPENDING}",
                (name,),
            ).fetchall()
            eps = sum((_frac(r[0]) for r in rows), Fraction(0))
            dlt = sum((_frac(r[1]) for r in rows), Fraction(0))
            if eps != _frac(spent_eps) or dlt != _frac(spent_dlt):
                problems.append(f"dataset {name}: spent {spent_eps} != {eps}")
        return problems

    # -- synopses ------------------------------------------------------------------------------

    def save_synopsis(
        self,
        name: str,
        dataset: str,
        analyst: str,
        entry_id: int,
        spec: dict[str, Any],
        data: dict[str, Any],
    ) -> None:
        """Store a released synopsis (already paid for by ``entry_id``).

        Names are unique per dataset, so a collision says nothing about other datasets.
        """
        with self._transaction() as conn:
            if conn.execute(
                "SELECT 1 FROM synopses WHERE name = ? AND dataset = ?", (name, dataset)
            ).fetchone():
                raise ParameterError("name", name, f"a synopsis name not used yet on {dataset}")
            conn.execute(
                "INSERT INTO synopses (name, dataset, analyst, entry_id, spec_json, data_json, "
                "created) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (name, dataset, analyst, entry_id, json.dumps(spec), json.dumps(data), _now()),
            )

    def synopsis(
        self, name: str, dataset: str | None = None
    ) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
        """(dataset, analyst, spec, data) of a stored synopsis (of ``dataset`` when given).

        The error for an unknown name lists no other synopsis names.
        """
        query = "SELECT dataset, analyst, spec_json, data_json FROM synopses WHERE name = ?"
        args: tuple[str, ...] = (name,)
        if dataset is not None:
            query += " AND dataset = ?"
            args = (name, dataset)
        with self._read() as conn:
            rows = conn.execute(query, args).fetchall()
        if not rows:
            where = "" if dataset is None else f" on dataset {dataset!r}"
            raise ParameterError(f"unknown synopsis {name!r}{where}.")
        if len(rows) > 1:
            raise ParameterError(f"synopsis {name!r} exists on several datasets; name the dataset.")
        row = rows[0]
        return row[0], row[1], json.loads(row[2]), json.loads(row[3])

    def synopses(self) -> list[dict[str, Any]]:
        """Stored synopses (name, dataset, analyst, created)."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT name, dataset, analyst, created FROM synopses ORDER BY name"
            ).fetchall()
        return [dict(zip(("name", "dataset", "analyst", "created"), r, strict=True)) for r in rows]


def _add_up(a: float, b: float) -> float:
    """a + b rounded up (information spent is an upper bound and must not drift down)."""
    s = a + b
    return s if s == 0 else math.nextafter(s, math.inf)


def _to_entry(row: Any) -> Entry:
    return Entry(
        row[0],
        row[1],
        row[2],
        row[3],
        _frac(row[4]),
        _frac(row[5]),
        row[6],
        row[7],
        row[8],
        row[9],
        row[10],
        row[11],
        row[12],
    )


_DATASET_COLUMNS = (
    "name, schema_json, rows, source, info_cap_bits, info_spent_nats, unit_rows_ok, created, "
    "max_epsilon, max_delta, spent_epsilon, spent_delta, fingerprint"
)


def _record(row: Any) -> DatasetRecord:
    return DatasetRecord(
        row[0],
        row[1],
        int(row[2]),
        row[3],
        row[4],
        float(row[5]),
        bool(row[6]),
        row[7],
        None if row[8] is None else _frac(row[8]),
        None if row[9] is None else _frac(row[9]),
        _frac(row[10]),
        _frac(row[11]),
        row[12],
    )


def _left(cap: str | None, spent: str) -> Fraction | None:
    return None if cap is None else max(Fraction(0), _frac(cap) - _frac(spent))


def _create_private(path: Path) -> None:
    """Create an empty file readable and writable by its owner only (mode 0600)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    os.chmod(path, 0o600)


def _chain(prev: str, store_id: str, fields: Any) -> str:
    """SHA-256 link of an entry: the previous link, the store id and its immutable fields."""
    text = json.dumps([prev, store_id, *[str(f) for f in fields]], ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _digest(salt: str, secret: str) -> str:
    return hashlib.sha256((salt + secret).encode()).hexdigest()


class _ParsedStates:
    """Parsed accountant states by their exact JSON text (a small LRU shared in a process).

    The text is the whole state, so a cached parse can never be stale: a state another
    process advanced is a different text and is parsed (and validated) afresh.
    """

    def __init__(self, size: int = 256) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._size = size

    def get(self, text: str) -> Any:
        from infodp.accounting.accountant import Accountant

        with self._lock:
            acc = self._items.get(text)
            if acc is not None:
                self._items.move_to_end(text)
                return acc
        acc = Accountant.from_json(text)
        self.put(text, acc)
        return acc

    def put(self, text: str, acc: Any) -> None:
        with self._lock:
            self._items[text] = acc
            self._items.move_to_end(text)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


_STATES = _ParsedStates()


def _accountant_of(text: str) -> Any:
    """The (shared, read-only) accountant of a stored state text."""
    return _STATES.get(text)


def _spend_profile(
    profile_spec: dict[str, Any] | str | None, epsilon: Fraction, delta: Fraction
) -> Any:
    from infodp.accounting.accountant import _guarantee_profile
    from infodp.accounting.spec import profile_from_spec

    if profile_spec is None:
        return _guarantee_profile(epsilon, delta)
    if isinstance(profile_spec, str):
        # Profiles are immutable values: one parse per distinct spec text (a repeated
        # query's spend is read once).
        with _PROFILES_LOCK:
            cached = _PROFILES.get(profile_spec)
        if cached is None:
            cached = profile_from_spec(json.loads(profile_spec))
            with _PROFILES_LOCK:
                if len(_PROFILES) >= 256:
                    _PROFILES.clear()
                _PROFILES[profile_spec] = cached
        return cached
    return profile_from_spec(profile_spec)


_PROFILES: dict[str, Any] = {}
_PROFILES_LOCK = threading.Lock()


def _basic_spend(profile_spec: str | None, epsilon: Fraction, delta: Fraction) -> Any:
    """What a basic budget's accountant spends for a query: the (ε, δ) guarantee profile of
    its exact declared (ε, δ), once the accountant has checked that the query's own profile
    meets that declaration.

    Basic composition adds the declared (ε, δ) only (Dwork & Roth 2014, Thm 3.16), so the
    verdict is the same as spending the query's profile; the check that the profile meets
    its declaration (:meth:`Accountant.spend` raises ParameterError otherwise) is a function
    of (spec, ε, δ), made once per distinct triple in a process instead of per reservation
    (it evaluates the composed profile's pure ε exactly, most of a reservation's CPU).
    """
    from infodp.accounting.accountant import Accountant, _guarantee_profile

    key = (profile_spec, epsilon, delta)
    with _PROFILES_LOCK:
        hit = _BASIC.get(key)
    if hit is not None:
        return hit
    if profile_spec is not None:
        # A fresh budget of exactly the declared (ε, δ): only the declaration check can fail.
        check = Accountant.basic(epsilon, delta, (Fraction(0), Fraction(0)))
        check.spend(_spend_profile(profile_spec, epsilon, delta), epsilon=epsilon, delta=delta)
    hit = _guarantee_profile(epsilon, delta)
    with _PROFILES_LOCK:
        if len(_BASIC) >= 256:
            _BASIC.clear()
        _BASIC[key] = hit
    return hit


_BASIC: dict[tuple[str | None, Fraction, Fraction], Any] = {}


def _accountant_spend(
    b: Budget, profile_spec: str | None, epsilon: Fraction, delta: Fraction
) -> str | None:
    """The accountant state after spending the query's profile (BudgetExceeded if it can't).

    The query's exact (ε, δ) is declared with it, so pure-ε sums stay exact in every currency.
    A basic budget (no stored state) is an accountant rebuilt from its exact sums; its new
    state is those sums, kept in the analysts row (None is returned).
    """
    from infodp.accounting.accountant import Accountant

    if b.accountant_json is None:
        basic = Accountant.basic(b.epsilon, b.delta, (b.spent_epsilon, b.spent_delta))
        basic.spend(_basic_spend(profile_spec, epsilon, delta), epsilon=epsilon, delta=delta)
        return None
    profile = _spend_profile(profile_spec, epsilon, delta)
    if profile_spec is None:
        raise InternalError("an accountant budget needs the query's privacy profile")
    acc = _accountant_of(b.accountant_json).copy()
    acc.spend(profile, epsilon=epsilon, delta=delta)
    text: str = acc.to_json()
    _STATES.put(text, acc)
    return text


def _accountant_refund(
    state: str, profile_json: str | None, epsilon: Fraction, delta: Fraction
) -> str:
    """The accountant state with one spend (an entry being cancelled) taken back out."""
    if profile_json is None:
        raise InternalError("a spending entry without its privacy profile")
    acc = _accountant_of(state).copy()
    acc.refund(_spend_profile(profile_json, epsilon, delta), epsilon=epsilon, delta=delta)
    text: str = acc.to_json()
    _STATES.put(text, acc)
    return text


#: Open runs SQLite's quick_check (linear in the file) only on ledgers up to this size; larger
#: ones are checked when the verified checkpoint moves and by ``infodp ledger verify``.
_QUICK_CHECK_BYTES = 4 << 20
#: Open moves the verified checkpoint once it has verified this many entries after it.
_CHECKPOINT_EVERY = 64


@dataclass(frozen=True, slots=True)
class _Checkpoint:
    """Entries up to ``id`` were verified (``chain`` is that entry's link) and the spends
    they add up to, per analyst/dataset and per dataset, as exact text."""

    id: int
    chain: str
    analysts: dict[str, list[str]]
    datasets: dict[str, list[str]]


def _pair_key(analyst: str, dataset: str) -> str:
    return json.dumps([analyst, dataset])


def _load_checkpoint(conn: sqlite3.Connection) -> _Checkpoint | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'checkpoint'").fetchone()
    if row is None:
        return None
    try:
        obj = json.loads(row[0])
        return _Checkpoint(
            int(obj["id"]), str(obj["chain"]), dict(obj["analysts"]), dict(obj["datasets"])
        )
    except (TypeError, ValueError, KeyError):
        raise LedgerError(
            "the ledger's verified checkpoint is unreadable: it was edited or corrupted. "
            "Restore it from a backup, or (data owner) run 'infodp ledger reinit --db STORE "
            "--yes', which forgets all budgets."
        ) from None


def _refund_checkpoint(conn: sqlite3.Connection, e: Entry) -> None:
    """A cancelled entry at or before the checkpoint leaves the checkpoint's sums."""
    cp = _load_checkpoint(conn)
    if cp is None or e.id > cp.id:
        return
    for table, key in ((cp.analysts, _pair_key(e.analyst, e.dataset)), (cp.datasets, e.dataset)):
        eps, dlt = table.get(key, ["0", "0"])
        table[key] = [str(_frac(eps) - e.epsilon), str(_frac(dlt) - e.delta)]
    conn.execute(
        "UPDATE meta SET value = ? WHERE key = 'checkpoint'",
        (
            json.dumps(
                {"id": cp.id, "chain": cp.chain, "analysts": cp.analysts, "datasets": cp.datasets}
            ),
        ),
    )


def _to_budget(analyst: str, dataset: str, row: Any) -> Budget:
    return Budget(
        analyst, dataset, _frac(row[0]), _frac(row[1]), _frac(row[2]), _frac(row[3]), row[4]
    )


#: A completion held by Ledger.complete_later is written at the latest this long after.
_FLUSH_AFTER = 0.05


class _Flusher:
    """One daemon thread writing held completions of idle ledgers (:meth:`Ledger.flush`),
    and at interpreter exit those still held."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._cond = threading.Condition(threading.Lock())
        self._waiting: dict[int, Ledger] = {}  # strong references until written
        threading.Thread(target=self._run, name="infodp-ledger-flush", daemon=True).start()

    def poke(self, ledger: Ledger) -> None:
        with self._cond:
            if id(ledger) not in self._waiting:
                self._waiting[id(ledger)] = ledger
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._waiting:
                    self._cond.wait()
            time.sleep(_FLUSH_AFTER)
            self.flush_all()

    def flush_all(self) -> None:
        with self._cond:
            waiting, self._waiting = self._waiting, {}
        for ledger in waiting.values():
            with contextlib.suppress(Exception):  # kept by the ledger for its next flush
                ledger.flush()


_FLUSHER: list[_Flusher] = []
_FLUSHER_LOCK = threading.Lock()


def _flusher() -> _Flusher:
    with _FLUSHER_LOCK:
        if not _FLUSHER or _FLUSHER[0].pid != os.getpid():  # none yet, or forked
            _FLUSHER[:] = [_Flusher()]
        return _FLUSHER[0]


#: Every ledger that has held a completion in this process (weakly: a ledger collected
#: with completions still held loses them, and its entries stay 'reserved').
_HOLDERS: weakref.WeakSet[Ledger] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    # Each flush waits for one the background writer may have in progress (the ledger's
    # lock), then writes what is still held.
    for ledger in list(_HOLDERS):
        with contextlib.suppress(Exception):  # kept 'reserved': charged, no answer stored
            ledger.flush()


class _WalFile:
    """A descriptor on a ledger's WAL file, for :meth:`Ledger.sync` (one per connection).

    Opening it fsyncs the directory once, as SQLite does for a new WAL (the file's name must
    survive a power loss too). If the WAL file was replaced since (SQLite deletes it when the
    last connection closes), :meth:`sync` also syncs the new one and the database file.
    """

    __slots__ = ("db", "fd", "ino", "path", "pid")

    def __init__(self, db: Path, path: Path, fd: int) -> None:
        self.db, self.path, self.fd, self.pid = db, path, fd, os.getpid()
        self.ino = os.fstat(fd).st_ino

    @classmethod
    def open(cls, db: Path) -> _WalFile:
        path = db.with_name(db.name + "-wal")
        fd = os.open(path, os.O_RDONLY)
        try:
            _fsync_dir(db.parent)
            return cls(db, path, fd)
        except BaseException:
            os.close(fd)
            raise

    def sync(self) -> None:
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


# -- group commit of concurrent reservations ---------------------------------------------------


class _Pending:
    """One write (a reservation or a completion) waiting for its group's transaction."""

    __slots__ = (
        "durable",
        "entry_id",
        "error",
        "finished",
        "lead",
        "ledger",
        "reservation",
        "work",
    )

    def __init__(
        self,
        ledger: Ledger,
        work: Callable[[sqlite3.Connection], int | None],
        *,
        reservation: bool,
        durable: bool = True,
    ) -> None:
        self.ledger = ledger
        self.work = work
        self.reservation = reservation
        #: A reservation whose commit must be fsync'd (False: the caller calls Ledger.sync).
        self.durable = durable
        self.entry_id: int | None = None
        self.error: BaseException | None = None
        self.finished = False
        self.lead = False

    def outcome(self) -> int | None:
        if self.error is not None:
            raise self.error
        return self.entry_id


#: At most this many reservations share one transaction (bounds how long the lock is held).
_MAX_GROUP = 64


class _GroupCommit:
    """Leader/follower group commit of the writes of one ledger file in one process.

    Reservations and completions queue here. The first caller becomes the leader and commits
    every write queued so far in one transaction (one fsync when it holds a reservation);
    the others wait. When the leader is done it hands leadership to the oldest write that
    arrived meanwhile, so each caller commits at most one group and waits for at most the one
    in flight. Across processes nothing changes: each group is one ``BEGIN IMMEDIATE``
    transaction under SQLite's single-writer lock.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._queue: list[_Pending] = []
        self._busy = False

    def submit(self, item: _Pending) -> int | None:
        with self._cond:
            self._queue.append(item)
            while self._busy and not item.finished and not item.lead:
                self._cond.wait()
            if item.finished:
                return item.outcome()
            self._busy = True
            batch, self._queue = self._queue[:_MAX_GROUP], self._queue[_MAX_GROUP:]
        try:
            item.ledger._commit_group(batch)
        except BaseException as err:
            for other in batch:
                # The same failure for everyone in the group (nothing of it was charged).
                other.entry_id, other.error = None, copy.copy(err)
        finally:
            with self._cond:
                for other in batch:
                    other.finished = True
                if self._queue:
                    self._queue[0].lead = True
                else:
                    self._busy = False
                self._cond.notify_all()
        return item.outcome()


class _Writers:
    """The process-wide lock of one ledger file's writers.

    Threads of one process queue here (woken as soon as the writer before them commits)
    instead of in SQLite's busy handler, which polls with sleeps of up to 100 ms.
    """

    __slots__ = ("__weakref__", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()


# Weak values: an entry lives while someone uses it (a ledger in a transaction, a caller in
# a group), so closed in-memory ledgers and files no longer used leave nothing behind.
_GROUPS: weakref.WeakValueDictionary[tuple[Any, ...], _GroupCommit] = weakref.WeakValueDictionary()
_WRITERS: weakref.WeakValueDictionary[tuple[Any, ...], _Writers] = weakref.WeakValueDictionary()
_REGISTRY_LOCK = threading.Lock()


def _file_key(ledger: Ledger) -> tuple[Any, ...]:
    """Which ledger objects share a group: same process, same file, same identity."""
    if ledger.in_memory:
        return (os.getpid(), id(ledger))
    return (os.getpid(), ledger._identity, ledger.store_id, ledger._absolute)


def _group(ledger: Ledger) -> _GroupCommit:
    key = _file_key(ledger)
    # The ledger holds its group (the registry's values are weak: without this reference
    # each query would make a new one, ~10 us).
    held = ledger._held_group
    if held is not None and held[0] == key:
        return held[1]
    with _REGISTRY_LOCK:
        group = _GROUPS.get(key)
        if group is None:
            group = _GroupCommit()
            _GROUPS[key] = group
    ledger._held_group = (key, group)
    return group


def _writers(ledger: Ledger) -> _Writers:
    """The writers' lock of ``ledger``'s file in this process (see :class:`_Writers`)."""
    key: tuple[Any, ...] = (os.getpid(), id(ledger))
    if not ledger.in_memory:
        key = (os.getpid(), ledger._absolute)
    held = ledger._held_writers  # held by the ledger, as its group (see _group)
    if held is not None and held[0] == key:
        return held[1]
    with _REGISTRY_LOCK:
        writers = _WRITERS.get(key)
        if writers is None:
            writers = _Writers()
            _WRITERS[key] = writers
    ledger._held_writers = (key, writers)
    return writers
