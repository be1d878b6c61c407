"""Released synopses, stored with the entry that paid for them.

Names are unique per dataset, so a collision says nothing about other datasets, and the
error for an unknown name lists no other synopsis names.

>>> db = Database(":memory:")
>>> with db.transaction() as conn:
...     _ = conn.execute(
...         "CREATE TABLE synopses (name TEXT, dataset TEXT, analyst TEXT, entry_id INTEGER, "
...         "spec_json TEXT, data_json TEXT, created TEXT)")
>>> save(db, "s", "t", "alice", 1, {"k": 1}, {"v": [2]})
>>> load(db, "s")
('t', 'alice', {'k': 1}, {'v': [2]})
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TypedDict

from infodp.curator.ledger.charging import now
from infodp.curator.ledger.storage import Database
from infodp.errors import ParameterError

if TYPE_CHECKING:
    from infodp._jsonable import JsonObject

__all__ = ["SynopsisListing", "listing", "load", "save"]


class SynopsisListing(TypedDict):
    """A stored synopsis as :func:`listing` shows it (no spec, no counts)."""

    name: str
    dataset: str
    analyst: str
    created: str


def save(
    db: Database,
    name: str,
    dataset: str,
    analyst: str,
    entry_id: int,
    spec: JsonObject,
    data: JsonObject,
) -> None:
    """Store a released synopsis (already paid for by ``entry_id``)."""
    with db.transaction() as conn:
        if conn.execute(
            "SELECT 1 FROM synopses WHERE name = ? AND dataset = ?", (name, dataset)
        ).fetchone():
            raise ParameterError("name", name, f"a synopsis name not used yet on {dataset}")
        conn.execute(
            "INSERT INTO synopses (name, dataset, analyst, entry_id, spec_json, data_json, "
            "created) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (name, dataset, analyst, entry_id, json.dumps(spec), json.dumps(data), now()),
        )


def load(
    db: Database, name: str, dataset: str | None = None
) -> tuple[str, str, JsonObject, JsonObject]:
    """(dataset, analyst, spec, data) of a stored synopsis (of ``dataset`` when given)."""
    query = "SELECT dataset, analyst, spec_json, data_json FROM synopses WHERE name = ?"
    args: tuple[str, ...] = (name,)
    if dataset is not None:
        query, args = query + " AND dataset = ?", (name, dataset)
    with db.read() as conn:
        rows = conn.execute(query, args).fetchall()
    if not rows:
        where = "" if dataset is None else f" on dataset {dataset!r}"
        raise ParameterError(f"unknown synopsis {name!r}{where}.")
    if len(rows) > 1:
        raise ParameterError(f"synopsis {name!r} exists on several datasets; name the dataset.")
    row = rows[0]
    return (
        row["dataset"],
        row["analyst"],
        json.loads(row["spec_json"]),
        json.loads(row["data_json"]),
    )


def listing(db: Database) -> list[SynopsisListing]:
    """Stored synopses (name, dataset, analyst, created)."""
    with db.read() as conn:
        rows = conn.execute(
            "SELECT name, dataset, analyst, created FROM synopses ORDER BY name"
        ).fetchall()
    return [
        SynopsisListing(
            name=r["name"], dataset=r["dataset"], analyst=r["analyst"], created=r["created"]
        )
        for r in rows
    ]
