"""Grants: registering a dataset (with its caps) and giving an analyst a budget on it.

Each grant is written with its seal (:mod:`.integrity`) in the same transaction, computed
from the row as stored, so a later hand edit of a budget or a cap is detected. A dataset
joins a budget group (:mod:`.groups`) only when its owner declares it (``same_population_as``),
recorded and sealed in the transaction that registers it; the unit sketches stored at that
moment only advise: a dataset that looks like a copy of a registered one is refused until
the owner declares it either way. A budget given on any dataset of a group is the group's
(kept on its root) and covers the datasets it was given on, no others.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TypedDict

from infodp.curator.ledger import groups, integrity, keys
from infodp.curator.ledger.charging import now
from infodp.curator.ledger.storage import Database
from infodp.errors import ParameterError

__all__ = [
    "Chooser",
    "DatasetRow",
    "Joined",
    "LikelyCopy",
    "Sharing",
    "add_analyst",
    "register_dataset",
]


@dataclass(frozen=True, slots=True)
class Joined:
    """A budget group: its root and, for the data owner, the share of a dataset's units
    estimated to be in it (what a :data:`Chooser` found; 1 for a declared membership)."""

    group: str
    share: Fraction


#: Finds the group (root → its datasets' sketches) a dataset with this sketch looks like a
#: copy of, or None (:func:`infodp.curator.store.unit_overlap.closest_group` over decoded
#: sketches). Advice to the owner only: it never makes a membership.
Chooser = Callable[[bytes, dict[str, list[bytes]]], Joined | None]


@dataclass(frozen=True, slots=True)
class Sharing:
    """How a registration joins the budget groups.

    ``group``: the registered dataset whose group the owner declared it joins (or a
    membership restored as recorded); ``independent``: the owner's declaration that it
    shares nothing (recorded). ``sketch``: the dataset's unit sketch (None: nothing to
    compare, a ``row`` unit), kept; with neither declaration, ``choose`` checks it against
    the stored sketches and a likely copy is refused (:class:`LikelyCopy`).
    """

    sketch: bytes | None = None
    choose: Chooser | None = None
    independent: bool = False
    group: str | None = None


class DatasetRow(TypedDict):
    """The columns of a ``datasets`` row its registration writes (``created`` is added)."""

    name: str
    schema_json: str
    rows: int
    source: str
    info_cap_bits: float | None
    unit_rows_ok: int
    max_epsilon: str | None
    max_delta: str | None
    fingerprint: str | None


def register_dataset(
    db: Database, store_id: str, row: DatasetRow, sharing: Sharing | None = None
) -> Joined | None:
    """Insert a datasets row (the caller's columns plus ``created``), its seal, its sketch
    and its budget group; returns the group joined (None: its own)."""
    sharing = sharing or Sharing()
    with db.guarded() as conn:
        _refuse_duplicate(conn, row["name"], row["fingerprint"])
        joined = _group(conn, row["name"], sharing)
        if joined is not None:
            _refuse_own_caps(row, joined.group)
        _insert(
            conn,
            "datasets",
            {
                **row,
                "created": now(),
                "budget_group": None if joined is None else joined.group,
                "independent": int(sharing.independent),
            },
        )
        stored = conn.execute("SELECT * FROM datasets WHERE name = ?", (row["name"],)).fetchone()
        _seal(conn, "datasets", stored, integrity.dataset_seal(store_id, stored))
        if sharing.sketch is not None:
            groups.save_sketch(conn, row["name"], sharing.sketch)
    return joined


class LikelyCopy(ParameterError):
    """A registration refused: the new dataset's units look like a copy of a registered
    dataset's, and the owner declared neither that it shares its budgets nor that it is
    independent. Nothing was registered."""

    def __init__(self, name: str, group: str, percent: object) -> None:
        # Plain values only (the dataset's name, the group's, a rounded percentage), so the
        # error pickles faithfully across the service's worker processes.
        super().__init__(
            f"about {percent}% of the units of {name!r} are in dataset {group!r}: "
            f"declare it with --same-population-as {group} (same_population_as="
            f"{group!r}) to share its caps and budgets, or with --independent "
            "(independent=True) to give it its own; nothing was registered.",
        )
        self.group = group
        self.percent = percent


def _group(conn: sqlite3.Connection, name: str, sharing: Sharing) -> Joined | None:
    """The group the new dataset joins (the owner's declaration, read inside the
    registering transaction); :class:`LikelyCopy` when it looks like a copy and the owner
    declared nothing."""
    if sharing.group is not None:
        if sharing.independent:
            raise ParameterError(
                "independent", True, "left out when the dataset shares a registered one's budgets"
            )
        known = conn.execute(
            "SELECT name FROM datasets WHERE lower(name) = lower(?)", (sharing.group,)
        ).fetchone()
        if known is None:
            raise ParameterError("same_population_as", sharing.group, "a registered dataset")
        return Joined(groups.root_of(conn, str(known[0])), Fraction(1))
    if sharing.independent or sharing.sketch is None or sharing.choose is None:
        return None
    found = sharing.choose(sharing.sketch, groups.sketches(conn))
    if found is not None:
        raise LikelyCopy(name, found.group, round(100 * float(found.share)))
    return None


def _refuse_own_caps(row: DatasetRow, group: str) -> None:
    """A member's caps are its group's: caps declared for it would not be enforced."""
    for name in ("info_cap_bits", "max_epsilon", "max_delta"):
        value = row[name]
        if value is not None:
            raise ParameterError(
                name,
                value,
                f"left out: {row['name']!r} is declared to hold the people of dataset "
                f"{group!r} and shares its caps and budgets (declare it independent to give "
                "it its own)",
            )


def add_analyst(
    db: Database,
    store_id: str,
    name: str,
    dataset: str,
    budget: tuple[Fraction, Fraction],
    accountant_json: str | None,
) -> str | None:
    """Insert an analysts row and its seal; returns the analyst's new key (shown once).

    The row is the group root's and covers ``dataset`` only. When the analyst already holds
    the budget of ``dataset``'s group (granted on another of its datasets), the grant adds
    ``dataset`` to what that budget covers, resealed, and returns None (their key for it
    covers ``dataset`` now): one spend account for the same people, whatever copy is asked.
    It must then name the same budget: the group's is not changed by a grant.
    """
    budget_json = None
    if accountant_json is not None:
        budget_json = json.dumps(json.loads(accountant_json)["budget"])
    with db.guarded() as conn:
        group = groups.root_of(conn, dataset)  # a budget on a group member is the group's
        held = conn.execute(
            "SELECT * FROM analysts WHERE name = ? AND dataset = ?", (name, group)
        ).fetchone()
        if held is not None:
            _extend_access(conn, store_id, held, dataset, budget, budget_json)
            return None
        key = secrets.token_urlsafe(32)
        salt, hashed = keys.new_digest(key)
        row = {
            "name": name,
            "dataset": group,
            "key_salt": salt,
            "key_hash": hashed,
            "epsilon": str(budget[0]),
            "delta": str(budget[1]),
            "created": now(),
            "accountant_json": accountant_json,
            "budget_json": budget_json,
            "access": json.dumps([dataset]),
        }
        _insert(conn, "analysts", row)
        stored = conn.execute(
            "SELECT * FROM analysts WHERE name = ? AND dataset = ?", (name, group)
        ).fetchone()
        _seal(conn, "analysts", stored, integrity.analyst_seal(store_id, stored))
    return key


def _extend_access(
    conn: sqlite3.Connection,
    store_id: str,
    held: sqlite3.Row,
    dataset: str,
    budget: tuple[Fraction, Fraction],
    budget_json: str | None,
) -> None:
    """Add ``dataset`` to what the held grant of its group covers (resealed), or refuse."""
    name, group = str(held["name"]), str(held["dataset"])
    if integrity.analyst_seal(store_id, held) != _stored_seal(conn, held):
        raise ParameterError(
            f"the budget of {name} on {group} was edited outside infodp: run "
            "'infodp ledger verify', and restore the ledger from a backup."
        )
    access = groups.access_of(held["access"], group)
    if dataset in access:
        shared = "" if group == dataset else f" (it shares the budgets of {group!r})"
        raise ParameterError(
            "name", name, f"an analyst without a budget on {dataset!r} yet{shared}"
        )
    same = (
        held["epsilon"] == str(budget[0])
        and held["delta"] == str(budget[1])
        and held["budget_json"] == budget_json
    )
    if not same:
        raise ParameterError(
            f"{name} already holds a budget on {', '.join(access)}, which shares its caps "
            f"and budgets with {dataset!r}: one budget covers the group's people. Grant "
            f"{dataset!r} with the same budget (epsilon={held['epsilon']}, "
            f"delta={held['delta']}) to add it to that budget."
        )
    conn.execute(
        "UPDATE analysts SET access = ? WHERE name = ? AND dataset = ?",
        (json.dumps(sorted({*access, dataset})), name, group),
    )
    stored = conn.execute(
        "SELECT * FROM analysts WHERE name = ? AND dataset = ?", (name, group)
    ).fetchone()
    _seal(conn, "analysts", stored, integrity.analyst_seal(store_id, stored))


def _stored_seal(conn: sqlite3.Connection, row: sqlite3.Row) -> str | None:
    found = conn.execute(
        "SELECT value FROM meta WHERE key = ?", (integrity.seal_key("analysts", row),)
    ).fetchone()
    return None if found is None else str(found[0])


def _refuse_duplicate(conn: sqlite3.Connection, name: str, fingerprint: str | None) -> None:
    if conn.execute("SELECT 1 FROM datasets WHERE name = ?", (name,)).fetchone():
        raise ParameterError("name", name, "a dataset name not registered yet")
    if fingerprint is None:
        return
    same = conn.execute(
        "SELECT name FROM datasets WHERE fingerprint = ?", (fingerprint,)
    ).fetchone()
    if same is not None:
        raise ParameterError(
            f"the data of {name!r} are identical to the registered dataset {same[0]!r} (same "
            "fingerprint of the bounded table): registering them again would give every "
            f"analyst a fresh budget on the same people. Grant budgets on {same[0]!r} instead."
        )


def _insert(conn: sqlite3.Connection, table: str, row: Mapping[str, object]) -> None:
    """Insert ``row`` (column name → a value sqlite3 adapts) into ``table``."""
    columns = ", ".join(row)
    marks = ", ".join("?" * len(row))
    conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", tuple(row.values()))


def _seal(conn: sqlite3.Connection, table: str, row: sqlite3.Row, seal: str) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        (integrity.seal_key(table, row), seal),
    )
