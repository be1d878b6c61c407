"""Grants: registering a dataset (with its caps) and giving an analyst a budget on it.

Each grant is written with its seal (:mod:`.integrity`) in the same transaction, computed
from the row as stored, so a later hand edit of a budget or a cap is detected.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Mapping
from fractions import Fraction
from typing import TypedDict

from infodp.curator.ledger import integrity, keys
from infodp.curator.ledger.charging import now
from infodp.curator.ledger.storage import Database
from infodp.errors import ParameterError

__all__ = ["DatasetRow", "add_analyst", "register_dataset"]


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


def register_dataset(db: Database, store_id: str, row: DatasetRow) -> None:
    """Insert a datasets row (the caller's columns plus ``created``) and its seal."""
    with db.guarded() as conn:
        _refuse_duplicate(conn, row["name"], row["fingerprint"])
        _insert(conn, "datasets", {**row, "created": now()})
        stored = conn.execute("SELECT * FROM datasets WHERE name = ?", (row["name"],)).fetchone()
        _seal(conn, "datasets", stored, integrity.dataset_seal(store_id, stored))


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
        if conn.execute(
            "SELECT 1 FROM analysts WHERE name = ? AND dataset = ?", (name, dataset)
        ).fetchone():
            raise ParameterError("name", name, f"an analyst without a budget on {dataset!r} yet")
        row = {
            "name": name,
            "dataset": dataset,
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
            "SELECT * FROM analysts WHERE name = ? AND dataset = ?", (name, dataset)
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
