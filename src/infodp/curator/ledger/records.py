"""Typed records of the ledger's rows, read by column name.

Amounts are exact fractions stored as text "p/q" (:func:`frac` parses each distinct text once
per process). Every budget figure a record shows is its accountant's own where the currency
has one (:attr:`Budget.remaining_delta` of an approx budget is the accountant's δ left, not
the simple sum).

>>> b = Budget("alice", "t", Fraction(1), Fraction(0), Fraction(1, 4), Fraction(0))
>>> b.currency, str(b.remaining_epsilon)
('basic', '3/4')
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, TypeVar, cast

from infodp._exact import float_down, float_up
from infodp.curator.ledger.accounts import accountant_of, can_spend, remaining_of
from infodp.curator.ledger.groups import COVERS
from infodp.units import nats_to_bits

if TYPE_CHECKING:
    from infodp._jsonable import JsonObject, JsonValue

__all__ = [
    "BUDGET_COLUMNS",
    "DATASET_COLUMNS",
    "ENTRY_COLUMNS",
    "GROUP_BUDGETS",
    "SCHEMA",
    "Budget",
    "DatasetRecord",
    "Entry",
    "KeyRecord",
    "frac",
    "text",
    "to_budget",
    "to_dataset",
    "to_entry",
]

_FRACS: dict[str, Fraction] = {}


def frac(value: str) -> Fraction:
    """The exact value of a stored "p/q" text (parsed once per distinct text in a process:
    a Fraction is immutable, and :func:`text` records the texts this process writes).

    >>> frac("3/4") + frac("1/4")
    Fraction(1, 1)
    """
    out = _FRACS.get(value)
    if out is None:
        out = Fraction(value)
        _remember(value, out)
    return out


def text(value: Fraction) -> str:
    """``str(value)``, remembered by :func:`frac` (the next read of it is not parsed).

    >>> text(Fraction(1, 3))
    '1/3'
    """
    out = str(value)
    _remember(out, value)
    return out


def _remember(key: str, value: Fraction) -> None:
    if len(_FRACS) >= 4096:
        _FRACS.clear()
    _FRACS[key] = value


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

        rows: list[tuple[str, str | Fraction]] = [
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
        return str(accountant_of(self.accountant_json).budget.currency)

    @property
    def remaining_epsilon(self) -> Fraction:
        """ε left (never negative): for an approx budget the budget's ε less the ε(δ) its
        accountant certifies for the spends so far; else the ε not yet declared."""
        left = self._approx_left()
        if left is not None:
            return left[0]
        return max(Fraction(0), self.epsilon - self.spent_epsilon)

    @property
    def remaining_delta(self) -> Fraction:
        """δ left (never negative): for an approx budget the accountant's δ left at the
        budget's ε (tight composition); else the δ not yet declared."""
        left = self._approx_left()
        if left is not None:
            return left[1]
        return max(Fraction(0), self.delta - self.spent_delta)

    def can_spend(self, profile_spec: str | None, epsilon: Fraction, delta: Fraction) -> bool:
        """Whether a query of this privacy profile (its spec as JSON text) and exact declared
        (ε, δ) fits what is left, by the accountant's dry run in every currency
        (:meth:`infodp.accounting.Accountant.can_spend`; the ledger's charge runs the same
        check). The dataset's caps, shared by all analysts, are checked by the charge only.

        >>> b = Budget("alice", "t", Fraction(1), Fraction(0), Fraction(3, 4), Fraction(0))
        >>> b.can_spend(None, Fraction(1, 4), Fraction(0)), b.can_spend(None, Fraction(1, 3), 0)
        (True, False)
        """
        sums = (self.epsilon, self.delta, self.spent_epsilon, self.spent_delta)
        state = self.accountant_json
        return can_spend(state, sums if state is None else None, profile_spec, epsilon, delta)

    def _approx_left(self) -> tuple[Fraction, Fraction] | None:
        if self.accountant_json is None or self.currency != "approx":
            return None
        shown = remaining_of(self.accountant_json)
        if not isinstance(shown, dict):
            return None
        left = cast("dict[str, float]", shown)  # approx: {"delta": ..., "epsilon_spent": ...}
        spent = float(left["epsilon_spent"])
        eps = (
            Fraction(0)
            if not math.isfinite(spent)
            else max(Fraction(0), self.epsilon - Fraction(spent))
        )
        return eps, Fraction(float(left["delta"]))

    def to_dict(self) -> JsonObject:
        """JSON-ready numbers (floats rounded *down* for remaining, *up* for spent)."""
        out: JsonObject = {
            "analyst": self.analyst,
            "dataset": self.dataset,
            "currency": self.currency,
            "epsilon": float(self.epsilon),
            "delta": float(self.delta),
            "spent_epsilon": float_up(self.spent_epsilon),
            "spent_delta": float_up(self.spent_delta),
            "remaining_epsilon": float_down(self.remaining_epsilon),
            "remaining_delta": float_down(self.remaining_delta),
            "exact": {
                "epsilon": str(self.epsilon),
                "delta": str(self.delta),
                "spent_epsilon": str(self.spent_epsilon),
                "spent_delta": str(self.spent_delta),
            },
        }
        if self.accountant_json is not None:
            acc = accountant_of(self.accountant_json)
            out["accountant"] = {
                "budget": acc.budget.to_dict(),
                "remaining": _json_keys(remaining_of(self.accountant_json)),
                "note": "the accountant's currency is enforced; spent_epsilon/spent_delta above "
                "are the basic-composition totals, for information",
            }
        return out


def _json_keys(left: float | dict[float, float] | dict[str, float]) -> JsonValue:
    """An accountant's figure left with its keys as JSON writes them (an RDP order 2.0 as
    "2.0")."""
    return {str(k): v for k, v in left.items()} if isinstance(left, dict) else left


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
    #: The dataset whose caps and budgets this one shares (None: its own; see
    #: :mod:`.groups`), and whether the owner declared it independent at registration.
    budget_group: str | None = None
    independent: bool = False

    @property
    def info_spent_bits(self) -> float:
        """The information released about the table, in bits (the unit of its cap)."""
        return nats_to_bits(self.info_spent_nats)


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

    def to_dict(self) -> JsonObject:
        """JSON-ready view (every field: all are text or None)."""
        return asdict(self)


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

    def to_dict(self) -> JsonObject:
        """JSON-ready view (cost as floats rounded up, plus exact fractions)."""
        return {
            "id": self.id,
            "analyst": self.analyst,
            "dataset": self.dataset,
            "sql": self.sql,
            "epsilon": float_up(self.epsilon),
            "delta": float_up(self.delta),
            "epsilon_exact": str(self.epsilon),
            "delta_exact": str(self.delta),
            "information_nats": self.info_nats,
            "status": self.status,
            "created": self.created,
            "finished": self.finished,
            "has_result": self.result_json is not None,
            "error": self.error,
        }


#: The ledger's tables (created by a new ledger; the layout every version reads).
SCHEMA = """
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
    spent_delta TEXT NOT NULL DEFAULT '0', fingerprint TEXT, budget_group TEXT,
    independent INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS unit_sketches (dataset TEXT PRIMARY KEY, sketch BLOB);
CREATE TABLE IF NOT EXISTS analysts (
    name TEXT NOT NULL, dataset TEXT NOT NULL REFERENCES datasets(name),
    key_salt TEXT NOT NULL, key_hash TEXT NOT NULL,
    epsilon TEXT NOT NULL, delta TEXT NOT NULL,
    spent_epsilon TEXT NOT NULL DEFAULT '0', spent_delta TEXT NOT NULL DEFAULT '0',
    created TEXT NOT NULL, accountant_json TEXT, budget_json TEXT, access TEXT,
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


#: The columns each record is read from (``SELECT {COLUMNS} FROM ...``).
ENTRY_COLUMNS = (
    "id, analyst, dataset, sql, epsilon, delta, info_nats, status, created, finished, pid, "
    "result_json, error"
)
DATASET_COLUMNS = (
    "name, schema_json, rows, source, info_cap_bits, info_spent_nats, unit_rows_ok, created, "
    "max_epsilon, max_delta, spent_epsilon, spent_delta, fingerprint, budget_group, independent"
)
BUDGET_COLUMNS = (
    "name AS analyst, dataset, epsilon, delta, spent_epsilon, spent_delta, accountant_json"
)
#: Every dataset's view of the budgets granted on it (the group root's ``analysts`` rows
#: whose access covers it, :mod:`.groups`), read as :data:`BUDGET_COLUMNS`:
#: ``SELECT {GROUP_BUDGETS} WHERE ...``. A grant on one dataset of a group is never
#: a budget on the group's others.
GROUP_BUDGETS = (
    "a.name AS analyst, q.name AS dataset, a.epsilon, a.delta, a.spent_epsilon, "
    "a.spent_delta, a.accountant_json FROM datasets q "
    f"JOIN analysts a ON a.dataset = coalesce(q.budget_group, q.name) AND ({COVERS})"
)


def _maybe(value: str | None) -> Fraction | None:
    return None if value is None else frac(value)


#: How a stored column becomes a record's field, by column name (any other: as stored).
#: Exact budgets are stored as fraction text (:func:`text`).
_READ: dict[str, Callable[[str], object]] = {
    "epsilon": frac,
    "delta": frac,
    "spent_epsilon": frac,
    "spent_delta": frac,
    "max_epsilon": _maybe,
    "max_delta": _maybe,
    "rows": int,
    "info_spent_nats": float,
    "unit_rows_ok": bool,
    "independent": bool,
}

_R = TypeVar("_R")


def _read(record: Callable[..., _R], row: sqlite3.Row) -> _R:
    """The record whose fields are ``row``'s columns of the same names (through :data:`_READ`)."""
    fields = zip(row.keys(), row, strict=True)
    return record(**{k: _READ[k](v) if k in _READ else v for k, v in fields})


def to_entry(row: sqlite3.Row) -> Entry:
    """The entry of a row read with :data:`ENTRY_COLUMNS`."""
    return _read(Entry, row)


def to_dataset(row: sqlite3.Row) -> DatasetRecord:
    """The dataset of a row read with :data:`DATASET_COLUMNS`."""
    return _read(DatasetRecord, row)


def to_budget(row: sqlite3.Row) -> Budget:
    """The budget of a row read with :data:`BUDGET_COLUMNS` (or the same names)."""
    return _read(Budget, row)
