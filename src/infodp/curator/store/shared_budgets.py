"""A registration's budget group: the owner's declaration, and the sketch that advises it.

The glue between :mod:`infodp.curator.store.unit_overlap` (sketches and containment) and the
ledger's budget groups (:mod:`infodp.curator.ledger.groups`). Sharing is the owner's
declaration (``same_population_as``, or ``independent``), recorded and sealed by the
ledger. The new dataset's sketch of salted unit ids is computed in the database (a Spark
dataset's from its local Parquet copy, read by DuckDB, so that every sketch uses the same
hash), datasets registered before sketches were kept get theirs first, and, when the owner
declared neither, the ledger refuses inside the registering transaction a dataset that looks
like a copy of a registered one (:class:`~infodp.curator.ledger.grants.LikelyCopy`, naming
the estimated overlap and both declarations). The sketch never decides a membership.

What the owner is told (:func:`owner_note`) names the group; the sketch, the salt and the
estimate stay in the owner's ledger and registration output, never in anything an analyst
sees.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from infodp._engines import DEFAULT, engine
from infodp._jsonable import JsonObject
from infodp.curator.declaration.schema import DatasetSchema, stored_name
from infodp.curator.declaration.source import load_schema
from infodp.curator.ledger.grants import Joined, Sharing
from infodp.curator.store.database import catalogue
from infodp.curator.store.private_files import private_files
from infodp.curator.store.unit_overlap import UnitSketch, closest_group, sketch_units

if TYPE_CHECKING:
    from infodp.curator.backends.duckdb import DuckDBBackend
    from infodp.curator.ledger import Ledger

__all__ = ["choose", "owner_note", "registration_sharing", "unit_relations"]


def unit_relations(
    name: str, schema: DatasetSchema, bounded_path: str | None = None
) -> list[tuple[str, str]]:
    """(relation, unit column) of every private table of dataset ``name`` as stored: the
    table itself, a population's private tables, or a Spark copy's Parquet files (empty
    for a ``row`` unit, or a copy DuckDB cannot read: a remote URI).

    >>> s = load_schema({"table": "t", "privacy_unit": "pid", "columns": {"pid": {"type": "text"}}})
    >>> unit_relations("t", s)
    [('"t"', 'pid')]
    >>> p = load_schema({"privacy_unit": "pid", "tables": {
    ...     "people": {"columns": {"pid": {"type": "text"}}},
    ...     "regions": {"public": True, "columns": {"region": {"type": "text"}}}}})
    >>> unit_relations("clinic", p)
    [('"clinic__people"', 'pid')]
    """
    if schema.unit_is_row:
        return []
    tables = [m.table for m in schema.members if not m.public] if schema.is_population else []
    if bounded_path is not None:
        return _parquet_relations(bounded_path, tables, schema.privacy_unit)
    stored = [stored_name(name, t) for t in tables] or [name]
    return [(_quote(t), schema.privacy_unit) for t in stored]


def _parquet_relations(bounded_path: str, tables: list[str], unit: str) -> list[tuple[str, str]]:
    """A Spark copy's Parquet files as DuckDB reads them (none for a remote URI)."""
    if "://" in bounded_path:
        return []
    # A Spark population's tables are copied under one directory, each in its own.
    dirs = [Path(bounded_path) / t for t in tables] or [Path(bounded_path)]
    globs = [str(d / "**" / "*.parquet").replace("'", "''") for d in dirs]
    return [(f"read_parquet('{g}')", unit) for g in globs]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def choose(sketch: bytes, groups: dict[str, list[bytes]]) -> Joined | None:
    """The ledger's adviser: the group in which the new sketch's units are most contained,
    at or above :data:`~infodp.curator.store.unit_overlap.SHARE_THRESHOLD` (the owner is asked to
    declare; nothing is decided by it)."""
    found = closest_group(
        UnitSketch.from_bytes(sketch),
        {g: [UnitSketch.from_bytes(s) for s in blobs] for g, blobs in groups.items()},
    )
    if found is None or found[1].estimate is None:
        return None
    return Joined(found[0], found[1].estimate)


def _sketch(
    con: duckdb.DuckDBPyConnection, relations: Sequence[tuple[str, str]], salt: str
) -> bytes | None:
    return sketch_units(con, relations, salt).to_bytes() if relations else None


def registration_sharing(
    ledger: Ledger,
    store: DuckDBBackend,
    schema: DatasetSchema,
    copy: str | None,
    alone: bool,
    same_as: str | None = None,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
) -> Sharing:
    """The owner's declaration (``same_as``: the registered dataset whose budgets it
    shares; ``alone``: independent) with the new dataset's sketch and adviser, after giving
    a sketch to every registered dataset that has none yet (registered before sketches were
    kept, or before a ledger re-initialisation, which makes a new salt). ``con``: an open
    writable connection to the store to read the tables with (left open)."""
    salt = ledger.unit_salt()
    if con is not None:  # the caller's open writable connection (left open)
        _backfill(ledger, store, con, salt)
        mine = _sketch(con, unit_relations(schema.table, schema, copy), salt)
    else:
        with private_files(), contextlib.closing(store.connect(read_only=False)) as own:
            _backfill(ledger, store, own, salt)
            mine = _sketch(own, unit_relations(schema.table, schema, copy), salt)
    return Sharing(sketch=mine, choose=choose, independent=alone, group=same_as)


def _in_store(meta: JsonObject) -> bool:
    """True when a catalogue entry's dataset is a table of the store (its engine's entry)."""
    return engine(str(meta.get("backend", DEFAULT.name))).in_store


def _backfill(
    ledger: Ledger, store: DuckDBBackend, con: duckdb.DuckDBPyConnection, salt: str
) -> None:
    missing = ledger.unsketched()
    if not missing:
        return
    where = catalogue(store, con)
    for record in missing:
        meta = where.get(record.name, {})
        path = None if _in_store(meta) else meta.get("bounded_path")
        schema = load_schema(record.schema_json)
        relations = unit_relations(record.name, schema, None if path is None else str(path))
        # A copy moved away or unreadable: that dataset stays without a sketch (the owner's
        # files; it is tried again at the next registration).
        with contextlib.suppress(duckdb.Error, OSError):
            sketch = _sketch(con, relations, salt)
            if sketch is not None:
                ledger.save_unit_sketch(record.name, sketch)


def owner_note(name: str, joined: Joined | None, independent: bool) -> str | None:
    """What the owner is told about the new dataset's budgets (None: nothing to say).

    >>> from fractions import Fraction
    >>> owner_note("copy", Joined("people", Fraction(1)), False)
    'copy shares the caps and budgets of dataset people, as declared (a budget covers only the datasets it is granted on)'
    """  # noqa: E501
    if joined is not None:
        return (
            f"{name} shares the caps and budgets of dataset {joined.group}, as declared (a "
            "budget covers only the datasets it is granted on)"
        )
    if independent:
        return f"{name} is declared independent: its caps and budgets are its own"
    return None
