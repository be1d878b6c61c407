"""Registering a dataset: the owner's caps checked, the bounded copy made, the ledger told.

The data owner's side of the curator. A registration validates the caps the owner declares
(an information cap needs a public row bound; (ε, δ) caps are exact fractions), has the backend
make the bounded copy, checks the declared public facts against it (the owner sees that
refusal, nobody else), fingerprints the content, sketches its units (a dataset shares a
registered one's caps and budgets only when the owner declares it; one that looks like a
copy of a registered one is refused until the owner declares it either way:
:mod:`infodp.curator.store.shared_budgets`) and records the dataset in the ledger and in the
store's catalogue. Any failure after the copy removes it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import cast

import duckdb

from infodp._engines import DEFAULT
from infodp._exact import float_up
from infodp._jsonable import JsonObject, JsonValue
from infodp.curator.backends.base import Backend
from infodp.curator.backends.duckdb import DuckDBBackend
from infodp.curator.declaration.schema import DatasetSchema, stored_name
from infodp.curator.ledger import Ledger
from infodp.curator.price.cost import as_budget_fraction
from infodp.curator.store.connections import ExternalBackend
from infodp.curator.store.database import (
    NEW_TABLE_PREFIX,
    commit_tables,
    fingerprint,
    forget_tables,
    record_dataset,
    store_tables,
    sweep_and_list,
)
from infodp.curator.store.private_files import private_files
from infodp.errors import ParameterError

__all__ = [
    "Caps",
    "Copied",
    "content_fingerprint",
    "copy_population",
    "parse_caps",
    "population_sources",
    "refuse_taken_names",
    "register_dataset",
    "stored_tables",
]


@dataclass(frozen=True, slots=True)
class Caps:
    """What all analysts together may spend on a dataset (None: no cap); the owner's
    declaration of its budgets: ``same_population_as`` a registered dataset (shares its
    caps and budgets), or ``independent`` (its own even when its units look like a
    registered dataset's)."""

    info_cap_bits: float | None = None
    max_epsilon: Fraction | None = None
    max_delta: Fraction | None = None
    independent: bool = False
    same_population_as: str | None = None


def parse_caps(
    schema: DatasetSchema, info_cap_bits: object, max_epsilon: object, max_delta: object
) -> Caps:
    """The owner's caps, validated (before anything is copied).

    >>> from infodp.curator.declaration.source import load_schema
    >>> s = load_schema({"table": "t", "privacy_unit": "row", "columns": {"x": {"type": "int"}}})
    >>> parse_caps(s, None, "0.5", None).max_epsilon
    Fraction(1, 2)
    >>> parse_caps(s, 8, None, None)
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: info_cap_bits must be given only with a declared public row count or bound (public_rows or public_max_rows in the schema): the information about the whole table depends on it; got 8.0.
    """  # noqa: E501
    bits: float | None = None
    if info_cap_bits is not None:
        if not isinstance(info_cap_bits, (int, float, str, Fraction)):
            raise ParameterError("info_cap_bits", info_cap_bits, "a non-negative finite number")
        bits = float(info_cap_bits)
        if not (math.isfinite(bits) and bits >= 0):
            raise ParameterError("info_cap_bits", bits, "a non-negative finite number")
        if schema.row_bound is None:
            raise ParameterError(
                "info_cap_bits",
                bits,
                "given only with a declared public row count or bound (public_rows or "
                "public_max_rows in the schema): the information about the whole table "
                "depends on it",
            )
    eps = None if max_epsilon is None else as_budget_fraction("max_epsilon", max_epsilon)
    dlt = None if max_delta is None else as_budget_fraction("max_delta", max_delta, allow_zero=True)
    if dlt is not None and dlt > 1:
        raise ParameterError("max_delta", max_delta, "a probability in [0, 1]")
    return Caps(bits, eps, dlt)


def _check_public_facts(schema: DatasetSchema, rows: int) -> None:
    """The declared public facts must be true: the owner sees this refusal, nobody else."""
    if schema.public_rows is not None and rows != schema.public_rows:
        raise ParameterError("public_rows", schema.public_rows, f"the table's row count ({rows})")
    if schema.public_max_rows is not None and rows > schema.public_max_rows:
        raise ParameterError(
            "public_max_rows", schema.public_max_rows, f"at least the table's row count ({rows})"
        )


def _outside(store: DuckDBBackend, engine: Backend) -> ExternalBackend | None:
    """``engine`` when it is an external engine (not the store's own backend), else None."""
    return None if engine is store else cast("ExternalBackend", engine)


def register_dataset(
    ledger: Ledger,
    store: DuckDBBackend,
    engine: Backend,
    name: str,
    source: object,
    schema: DatasetSchema,
    caps: Caps,
    *,
    engine_name: str = DEFAULT.name,
    bounded_path: str | Path | None = None,
) -> tuple[JsonObject, JsonObject]:
    """Copy ``source`` as dataset ``name`` on ``engine`` (``store`` itself, or the backend of
    the external engine ``engine_name``) and record it; (what the owner is shown, the
    catalogue entry naming the backend).

    ``schema`` is already named ``name``; the caller checked the name and the caps. A
    population (``schema.is_population``) takes ``source`` as a mapping from each of its
    tables to that table's source (:func:`copy_population`).
    """
    # Imported here: budget sharing (unit sketches, grants) is the owner's, not a query's.
    from infodp.curator.store.shared_budgets import owner_note, registration_sharing

    outside = _outside(store, engine)  # an external engine's copy (infodp._engines)
    _, tables = sweep_and_list(store, ledger)  # the tables too, when the sweep changed none
    refuse_taken_names(ledger, store, name, schema, tables=tables)
    where: JsonObject = {}
    # The DuckDB copies are made under names no one else uses (never a name that existed
    # before), so that a failure removes only what this registration made; they take their
    # stored names, with the catalogue record, in one transaction (store.commit_tables).
    temporary = f"{NEW_TABLE_PREFIX}{os.getpid()}_{secrets.token_hex(6)}_"
    copied = Copied(schema, 0, True, [], [])
    committed = False
    try:
        with private_files():
            if schema.is_population:
                copied = copy_population(
                    store, engine, name, source, schema, bounded_path, temporary=temporary
                )
            elif outside is not None:
                copied.tables.append(name)  # an external backend drops only a copy it wrote
                got = outside.register(name, source, schema, bounded_path=bounded_path)
                copied = Copied(schema, got.rows, got.unit_ok, [name], [name], got.dropped)
            else:
                copied.tables.append(temporary + "0")
                got = engine.register(temporary + "0", source, schema)
                copied = Copied(schema, got.rows, got.unit_ok, [temporary + "0"], [name])
                copied.dropped = got.dropped
        schema = copied.schema
        rows, unit_ok = copied.rows, copied.unit_ok
        if not schema.is_population:
            _check_public_facts(schema, rows)
        if outside is not None:
            where = {"backend": engine_name, "bounded_path": outside.bounded_path(name)}
            if any(m.public for m in schema.members):
                # Public tables' sizes are public: Spark broadcasts them where they are joined.
                where["public_tables"] = [
                    stored_name(name, m.table) for m in schema.members if m.public
                ]
        renames = (
            [] if outside is not None else list(zip(copied.tables, copied.stored, strict=True))
        )
        commit_tables(store, name, renames, where)
        committed = True
        shown_source = _shown_source(source)
        copy = None if outside is None else outside.bounded_path(name)
        # The fingerprint and the sketches on one connection (each DuckDB open costs about as
        # much as a small aggregate), closed before the ledger records the dataset.
        with private_files(), contextlib.closing(store.connect(read_only=False)) as con:
            fp = content_fingerprint(store, engine, name, schema, con=con)
            sharing = registration_sharing(
                ledger, store, schema, copy, caps.independent, caps.same_population_as, con=con
            )
        joined = ledger.register_dataset(
            name,
            schema.to_json(),
            rows=rows,
            source=shown_source,
            info_cap_bits=caps.info_cap_bits,
            unit_rows_ok=unit_ok,
            max_epsilon=caps.max_epsilon,
            max_delta=caps.max_delta,
            fingerprint=fp,
            sharing=sharing,
        )
    except BaseException:
        with private_files():
            if outside is not None:
                for table in copied.tables:
                    outside.drop(table)
            if committed:
                forget_tables(store, name, [] if outside is not None else copied.stored)
            elif outside is None:
                forget_tables(store, None, copied.tables)
        raise
    exact = {
        "max_epsilon": None if caps.max_epsilon is None else str(caps.max_epsilon),
        "max_delta": None if caps.max_delta is None else str(caps.max_delta),
    }
    record_dataset(
        store,
        name,
        {
            **where,
            "schema_json": schema.to_json(),
            "rows": rows,
            "source": shown_source,
            "info_cap_bits": caps.info_cap_bits,
            "unit_rows_ok": unit_ok,
            **exact,
            "fingerprint": fp,
            "budget_group": None if joined is None else joined.group,
            "independent": caps.independent,
        },
    )
    shown: JsonObject = {
        "name": name,
        "rows": rows,
        "schema": cast("JsonValue", schema.to_dict()),  # JSON (what to_json writes)
        "info_cap_bits": caps.info_cap_bits,
        "max_epsilon": None if caps.max_epsilon is None else float_up(caps.max_epsilon),
        "max_delta": None if caps.max_delta is None else float_up(caps.max_delta),
        "fingerprint": fp,
        "shares_budgets_of": None if joined is None else joined.group,
        "independent": caps.independent,
        "budgets": owner_note(name, joined, caps.independent),
        # The owner's own data: rows left out for a NULL id (the id column's nulls: drop).
        "null_ids_dropped": copied.dropped,
    }
    return shown, where


@dataclass(slots=True)
class Copied:
    """What a registration copied: the schema (a population's public facts filled in), the
    private row count, whether every unit is within its row limit, the tables made."""

    schema: DatasetSchema
    rows: int
    unit_ok: bool
    #: The tables made (under their temporary names, if any), and the stored name of each.
    tables: list[str]
    stored: list[str]
    #: Rows left out because their id is NULL (the id column's ``nulls: drop``).
    dropped: int = 0


def stored_tables(name: str, schema: DatasetSchema) -> list[str]:
    """The tables dataset ``name`` is stored as: itself, or a population's ``name__table``.

    >>> from infodp.curator.declaration.source import load_schema
    >>> stored_tables("clinic", load_schema({"privacy_unit": "pid", "tables": {
    ...     "visits": {"columns": {"pid": {"type": "text"}}}}}))
    ['clinic__visits']
    """
    if schema.is_population:
        return [stored_name(name, m.table) for m in schema.members]
    return [name]


def refuse_taken_names(
    ledger: Ledger,
    store: DuckDBBackend,
    name: str,
    schema: DatasetSchema,
    *,
    tables: list[str] | None = None,
) -> None:
    """Refuse, before anything is made, a dataset one of whose stored tables would take the
    name of a table already in the store or of another dataset's table (a dataset named
    ``clinic__visits`` and population ``clinic``'s table ``visits``), naming it. ``tables``:
    the store's tables as just read (by default they are read here).

    >>> import tempfile, os
    >>> from infodp.curator.engine import Curator
    >>> from infodp.curator.declaration.source import load_schema
    >>> cur = Curator(os.path.join(tempfile.mkdtemp(), "s.duckdb"))
    >>> refuse_taken_names(cur.ledger, cur.backend, "_infodp_store", load_schema(
    ...     {"table": "t", "privacy_unit": "row", "columns": {"x": {"type": "int"}}}))
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: name must be a dataset name whose stored table _infodp_store is not taken (a table already in the store); got '_infodp_store'.
    """  # noqa: E501
    taken: dict[str, str] = {}
    if tables is None and (str(store.path) == ":memory:" or store.path.exists()):
        with contextlib.closing(store.connect(read_only=True)) as con:
            tables = store_tables(con)
    taken.update({t.lower(): "a table already in the store" for t in tables or ()})
    for record in ledger.datasets():
        declared = DatasetSchema.from_dict(json.loads(record.schema_json))
        for table in stored_tables(record.name, declared):
            taken[table.lower()] = f"a table of dataset {record.name}"
    for table in stored_tables(name, schema):
        if table.lower().startswith("_infodp"):
            taken.setdefault(table.lower(), "the store's own tables start with _infodp")
        owner = taken.get(table.lower())
        if owner is not None:
            raise ParameterError(
                "name", name, f"a dataset name whose stored table {table} is not taken ({owner})"
            )


def _shown_source(source: object) -> str:
    """The source as the owner is shown it (a path, a frame's type, or one per table)."""
    if isinstance(source, Mapping):
        return ", ".join(f"{k}={_shown_source(v)}" for k, v in source.items())
    return str(source) if isinstance(source, (str, Path)) else type(source).__name__


def population_sources(schema: DatasetSchema, source: object) -> dict[str, object]:
    """A population's sources by table: a mapping naming each of its tables exactly once.

    >>> from infodp.curator.declaration.source import load_schema
    >>> s = load_schema({"privacy_unit": "pid", "tables": {
    ...     "a": {"columns": {"pid": {"type": "text"}}}}})
    >>> population_sources(s, {"b": "b.csv"})
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: source must be a mapping from each table of the population (a) to its source; got ['b'].
    """  # noqa: E501
    names = [m.table for m in schema.members]
    if not isinstance(source, Mapping):
        raise ParameterError(
            "source",
            type(source).__name__,
            f"a mapping from each table of the population ({', '.join(names)}) to its source",
        )
    given = {str(k).lower(): v for k, v in source.items()}
    if sorted(given) != sorted(n.lower() for n in names) or len(given) != len(source):
        raise ParameterError(
            "source",
            sorted(str(k) for k in source),
            f"a mapping from each table of the population ({', '.join(names)}) to its source",
        )
    return {n: given[n.lower()] for n in names}


def copy_population(
    store: DuckDBBackend,
    engine: Backend,
    name: str,
    source: object,
    schema: DatasetSchema,
    bounded_path: str | Path | None,
    *,
    temporary: str | None = None,
) -> Copied:
    """Copy every table of a population (each private table bounded as a single table is,
    each public table as it is with its public facts), stored as ``name__table``.

    ``temporary``: on DuckDB, table ``i`` is made as ``temporary + str(i)`` instead (a
    registration renames them when all are made); a failure drops only the tables made here.

    The row count shown to the owner is the private tables' total; the declared public facts
    of each private table are checked against its own count.
    """
    sources = population_sources(schema, source)
    outside = _outside(store, engine)
    if outside is not None:  # an external engine: one directory of copies
        filled, rows, made, dropped = outside.register_population(
            name, sources, schema, bounded_path=bounded_path
        )
        return Copied(filled, rows, True, made, list(made), dropped)
    copied = Copied(schema, 0, True, [], [])
    members = []
    try:
        for i, member in enumerate(schema.members):
            final = stored_name(name, member.table)
            table = final if temporary is None else f"{temporary}{i}"
            if store.has_table(table):  # never drop a table that existed before
                raise ParameterError("name", name, f"a name whose table {final} is not taken")
            copied.tables.append(table)
            copied.stored.append(final)
            if member.public:
                members.append(store.register_public(table, sources[member.table], member))
                continue
            got = store.register(table, sources[member.table], member)
            _check_public_facts(member, got.rows)
            copied.rows += got.rows
            copied.unit_ok = copied.unit_ok and got.unit_ok
            copied.dropped += got.dropped
            members.append(member)
    except BaseException:
        for table in copied.tables:  # made here (checked absent just before): dropped if made
            store.drop(table)
        raise
    copied.schema = dataclasses.replace(schema, members=tuple(members))
    return copied


def content_fingerprint(
    store: DuckDBBackend,
    engine: Backend,
    name: str,
    schema: DatasetSchema,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
) -> str:
    """The content fingerprint: of the table, or of a population's tables together
    (``con``: an open writable connection to the store to read them with, left open)."""
    outside = _outside(store, engine)
    if not schema.is_population:
        if outside is not None:
            return str(outside.fingerprint(name, schema))
        return fingerprint(store, name, schema, con=con)
    parts = []
    for member in schema.members:
        if member.public:
            continue  # the private tables are the population's content
        table = stored_name(name, member.table)
        if outside is not None:
            parts.append(f"{member.table}:{outside.fingerprint(table, member)}")
        else:
            parts.append(f"{member.table}:{fingerprint(store, table, member, con=con)}")
    return hashlib.sha256("\n".join(sorted(parts)).encode()).hexdigest()
