"""Grants: registering a dataset (with its caps) and giving an analyst a budget on it.

Each grant is written with its seal (:mod:`.integrity`) in the same transaction, computed
from the row as stored, so a later hand edit of a budget or a cap is detected. A dataset
joins a budget group (:mod:`.groups`) in the transaction that registers it, decided against
the sketches stored at that moment, and a budget given on any dataset of a group is the
group's (given on its root).
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

__all__ = ["Chooser", "DatasetRow", "Joined", "Sharing", "add_analyst", "register_dataset"]


@dataclass(frozen=True, slots=True)
class Joined:
    """What a :data:`Chooser` decided: the group root to join and, for the data owner,
    the share of the new dataset's units estimated to be in that group."""

    group: str
    share: Fraction


#: Picks the group (root → its datasets' sketches) a dataset with this sketch joins, or
#: None (:func:`infodp.curator.unit_overlap.closest_group` over decoded sketches).
Chooser = Callable[[bytes, dict[str, list[bytes]]], Joined | None]


@dataclass(frozen=True, slots=True)
class Sharing:
    """How a registration joined the budget groups.

    ``sketch``: the dataset's unit sketch (None: nothing to compare, a ``row`` unit);
    ``choose`` decides against the stored sketches unless ``independent`` (the owner's
    opt-out, recorded) or ``group`` (a membership restored as recorded) is given.
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
        joined = _group(conn, sharing)
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


def _group(conn: sqlite3.Connection, sharing: Sharing) -> Joined | None:
    """The group the new dataset joins (decided inside the registering transaction)."""
    if sharing.group is not None:
        return Joined(groups.root_of(conn, sharing.group), Fraction(1))
    if sharing.independent or sharing.sketch is None or sharing.choose is None:
        return None
    return sharing.choose(sharing.sketch, groups.sketches(conn))


def _refuse_own_caps(row: DatasetRow, group: str) -> None:
    """A member's caps are its group's: caps declared for it would not be enforced."""
    for name in ("info_cap_bits", "max_epsilon", "max_delta"):
        value = row[name]
        if value is not None:
            raise ParameterError(
                name,
                value,
                f"left out: {row['name']!r} holds mostly the people of dataset {group!r} and "
                f"shares its caps and budgets; register it independent to give it its own",
            )


def add_analyst(
    db: Database,
    store_id: str,
    name: str,
    dataset: str,
    budget: tuple[Fraction, Fraction],
    accountant_json: str | None,
) -> str:
    """Insert an analysts row and its seal; returns the analyst's new key (shown once)."""
    key = secrets.token_urlsafe(32)
    salt, hashed = keys.new_digest(key)
    budget_json = None
    if accountant_json is not None:
        budget_json = json.dumps(json.loads(accountant_json)["budget"])
    with db.guarded() as conn:
        group = groups.root_of(conn, dataset)  # a budget on a group member is the group's
        if conn.execute(
            "SELECT 1 FROM analysts WHERE name = ? AND dataset = ?", (name, group)
        ).fetchone():
            shared = "" if group == dataset else f" (it shares the budgets of {group!r})"
            raise ParameterError(
                "name", name, f"an analyst without a budget on {dataset!r} yet{shared}"
            )
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
        }
        _insert(conn, "analysts", row)
        stored = conn.execute(
            "SELECT * FROM analysts WHERE name = ? AND dataset = ?", (name, group)
        ).fetchone()
        _seal(conn, "analysts", stored, integrity.analyst_seal(store_id, stored))
    return key


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
