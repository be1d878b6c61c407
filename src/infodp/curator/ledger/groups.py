"""Budget groups: datasets the owner declared to hold the same people share one set of
caps and one spend account per analyst.

A dataset registered with ``same_population_as`` a registered one is a *member* of that
dataset's budget group: its ``datasets.budget_group`` names the group's first dataset (the
*root*), which holds the group's caps, spend totals and every analyst's budget (``analysts``
rows are the root's). A charge on any member is checked and debited there, in the same
transaction; the entry keeps the dataset actually queried. ``independent`` records the
owner's explicit opt-out at registration. Both are sealed with the dataset's grant
(:mod:`.integrity`).

A group shares accounting, never access: an analysts row lists in ``access`` (JSON, sealed
with the grant) the datasets of the group it was granted on, and covers those only
(:data:`COVERS`). A row of a ledger before format 5 has no list and covers the dataset it is
stored on, the root.

The sketches of the datasets' salted unit ids live in ``unit_sketches`` and the salt in
``meta.unit_salt``: owner-side only, never read by anything an analyst calls, and never
deciding anything: they only advise the owner at registration.

>>> import sqlite3
>>> from infodp.curator.ledger.records import SCHEMA
>>> conn = sqlite3.connect(":memory:")
>>> conn.row_factory = sqlite3.Row
>>> _ = conn.executescript(SCHEMA)
>>> _ = conn.execute("INSERT INTO datasets (name, schema_json, rows, source, created) "
...                  "VALUES ('t', '{}', 1, '-', ''), ('c', '{}', 1, '-', '')")
>>> _ = conn.execute("UPDATE datasets SET budget_group = 't' WHERE name = 'c'")
>>> sorted(roots(conn).items())
[('c', 't'), ('t', 't')]
>>> members(conn, "t")
['c', 't']
"""

from __future__ import annotations

import functools
import json
import secrets
import sqlite3

from infodp.errors import ParameterError

__all__ = [
    "COLUMNS",
    "COVERS",
    "access_of",
    "covers",
    "has_groups",
    "members",
    "migrate",
    "root_of",
    "roots",
    "save_sketch",
    "sketches",
    "unit_salt",
]

#: The columns a ledger of format 4 adds to ``datasets`` (with their declarations).
COLUMNS = {"budget_group": "TEXT", "independent": "INTEGER NOT NULL DEFAULT 0"}
#: The SQL condition under which the analysts row ``a`` covers the dataset ``q`` (a row of
#: ``q``'s group): ``q`` is in its access list, or it has none and is stored on ``q``.
COVERS = (
    "CASE WHEN a.access IS NULL THEN a.dataset = q.name "
    "ELSE EXISTS (SELECT 1 FROM json_each(a.access) WHERE value = q.name) END"
)
_SKETCHES = "CREATE TABLE IF NOT EXISTS unit_sketches (dataset TEXT PRIMARY KEY, sketch BLOB)"


def has_groups(conn: sqlite3.Connection) -> bool:
    """Whether the ledger has the group columns (format 4; older ones before migrating)."""
    cols = {str(r[1]) for r in conn.execute("PRAGMA table_info(datasets)")}
    return "budget_group" in cols


def migrate(conn: sqlite3.Connection) -> None:
    """Add the group columns, the sketches' table and the grants' access lists (inside a
    write transaction). Every dataset of a ledger before format 4 is then its own group,
    with no sketch yet; every grant before format 5 covers the dataset it is stored on."""
    cols = {str(r[1]) for r in conn.execute("PRAGMA table_info(datasets)")}
    for name, decl in COLUMNS.items():
        if name not in cols:
            conn.execute(f"ALTER TABLE datasets ADD COLUMN {name} {decl}")
    conn.execute(_SKETCHES)
    if "access" not in {str(r[1]) for r in conn.execute("PRAGMA table_info(analysts)")}:
        conn.execute("ALTER TABLE analysts ADD COLUMN access TEXT")


def access_of(stored: str | None, row_dataset: str) -> list[str]:
    """The datasets an analysts row covers: its ``access`` list, or (a grant before format
    5) the dataset it is stored on.

    >>> access_of(None, "t"), access_of('["c", "t"]', "t")
    (['t'], ['c', 't'])
    """
    return [row_dataset] if stored is None else [str(d) for d in json.loads(stored)]


def covers(stored: str | None, row_dataset: str, dataset: str) -> bool:
    """Whether an analysts row (its ``access``, stored on ``row_dataset``) covers ``dataset``.

    >>> covers(None, "t", "t"), covers(None, "t", "c"), covers('["c"]', "t", "c")
    (True, False, True)
    """
    if stored is None:
        return dataset == row_dataset
    return dataset in _listed(stored)


@functools.lru_cache(maxsize=1024)
def _listed(stored: str) -> frozenset[str]:
    """The datasets of a stored access list (parsed once per distinct text: every charge
    reads it)."""
    return frozenset(str(d) for d in json.loads(stored))


def roots(conn: sqlite3.Connection) -> dict[str, str]:
    """Every dataset's group root (a dataset of no group is its own; every dataset of a
    ledger not yet migrated too)."""
    if not has_groups(conn):
        return {str(r[0]): str(r[0]) for r in conn.execute("SELECT name FROM datasets")}
    rows = conn.execute("SELECT name, coalesce(budget_group, name) FROM datasets")
    return {str(r[0]): str(r[1]) for r in rows}


def root_of(conn: sqlite3.Connection, dataset: str) -> str:
    """The group root of ``dataset`` (``dataset`` itself when it is not registered: the
    caller's own lookup then reports it missing)."""
    row = conn.execute(
        "SELECT coalesce(budget_group, name) FROM datasets WHERE name = ?", (dataset,)
    ).fetchone()
    return dataset if row is None else str(row[0])


def members(conn: sqlite3.Connection, root: str) -> list[str]:
    """The datasets of ``root``'s group, by name (the root included)."""
    rows = conn.execute(
        "SELECT name FROM datasets WHERE coalesce(budget_group, name) = ? ORDER BY name",
        (root,),
    )
    return [str(r[0]) for r in rows]


def unit_salt(conn: sqlite3.Connection) -> str:
    """The ledger's secret salt of unit hashes, made on first use (inside a write
    transaction). Never shown: a sketch without it cannot be matched against ids."""
    conn.execute(
        "INSERT OR IGNORE INTO meta (key, value) VALUES ('unit_salt', ?)",
        (secrets.token_hex(16),),
    )
    row = conn.execute("SELECT value FROM meta WHERE key = 'unit_salt'").fetchone()
    return str(row[0])


def sketches(conn: sqlite3.Connection) -> dict[str, list[bytes]]:
    """Every stored sketch by group root (the group's datasets' sketches)."""
    out: dict[str, list[bytes]] = {}
    for r in conn.execute(
        "SELECT coalesce(d.budget_group, d.name), s.sketch FROM unit_sketches s "
        "JOIN datasets d ON d.name = s.dataset ORDER BY d.name"
    ):
        out.setdefault(str(r[0]), []).append(bytes(r[1]))
    return out


def save_sketch(conn: sqlite3.Connection, dataset: str, sketch: bytes) -> None:
    """Keep ``dataset``'s sketch (replacing one made with another salt)."""
    if conn.execute("SELECT 1 FROM datasets WHERE name = ?", (dataset,)).fetchone() is None:
        raise ParameterError("dataset", dataset, "a registered dataset")
    conn.execute(
        "INSERT OR REPLACE INTO unit_sketches (dataset, sketch) VALUES (?, ?)", (dataset, sketch)
    )
