"""Test helpers: a clinic population stored by hand: people (one row each), visits (up
to 3 rows each) and a public regions table whose public facts are filled in as registration
measures them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pandas as pd

from _stores import clinic, floats, ints
from infodp.curator.backends.duckdb import DuckDBBackend
from infodp.curator.declaration.schema import ColumnSpec, DatasetSchema, stored_name
from infodp.curator.declaration.source import load_schema
from infodp.curator.plan.grid import column_grid
from infodp.curator.relations import resolve
from infodp.curator.rules import measurements
from infodp.curator.sql.parse import parse_query

DECLARATION = clinic(
    "pid",
    age=ints(0, 99),
    income=floats(0, 1000, "drop"),
    visits=3,
    cost=floats(0, 50),
    kinds=["a", "b"],
    area="country",
    table="clinic",
)

REGIONS = pd.DataFrame({"region": ["n", "s", "e", "e"], "country": ["x", "x", "y", "z"]})


def public_facts(schema: DatasetSchema, name: str, frame: pd.DataFrame) -> DatasetSchema:
    """The public member ``name`` with the facts registration measures from its data:
    each column's multiplicity, a text column's categories, the row count."""
    members = []
    for m in schema.members:
        if m.table != name:
            members.append(m)
            continue
        cols = tuple(
            ColumnSpec(
                c.name,
                "category",
                categories=tuple(sorted(str(v) for v in frame[c.name].dropna().unique())),
                multiplicity=int(frame[c.name].value_counts().max()),
            )
            for c in m.columns
        )
        members.append(dataclasses.replace(m, columns=cols, public_rows=len(frame)))
    return dataclasses.replace(schema, members=tuple(members))


def schema() -> DatasetSchema:
    return public_facts(load_schema(DECLARATION), "regions", REGIONS)


def store(
    people: pd.DataFrame, visits: pd.DataFrame, s: DatasetSchema | None = None
) -> DuckDBBackend:
    """An in-memory store holding the population's tables as registration stores them."""
    s = s or schema()
    backend = DuckDBBackend(":memory:")
    backend.register(stored_name(s.table, "people"), people, s.member("people"))
    backend.register(stored_name(s.table, "visits"), visits, s.member("visits"))
    con = backend.connect(read_only=False)
    con.register("__regions", REGIONS)
    con.execute(f'CREATE TABLE "{stored_name(s.table, "regions")}" AS SELECT * FROM __regions')
    con.close()
    return backend


def measure(backend: DuckDBBackend, sql: str, s: DatasetSchema | None = None) -> tuple[Any, ...]:
    """``sql`` resolved on the clinic's declaration, its measurements and their exact
    (pre-noise) aggregates on ``backend``: (the resolved relation, measurements, aggregates)."""
    resolved = resolve(sql, s or schema())
    plan = parse_query(resolved.sql, resolved.schema)
    ms = measurements(plan)
    con = backend.connect(read_only=True)
    try:
        got = backend.aggregate(con, plan, resolved.schema, ms, unit_rows_ok=not resolved.row_cut)
    finally:
        con.close()
    return resolved, ms, got


def exact(backend: DuckDBBackend, sql: str, s: DatasetSchema | None = None) -> dict:
    """The exact (pre-noise) measurements of ``sql``, by group key."""
    got = measure(backend, sql, s)[2]
    return {k: [None if v is None else float(v) for v in vs] for k, vs in got.values.items()}


def plain(backend: DuckDBBackend, sql: str) -> list[tuple[object, ...]]:
    con = backend.connect(read_only=True)
    try:
        return [tuple(r) for r in con.execute(sql).fetchall()]
    finally:
        con.close()


def frames(
    people: Sequence[tuple[str, int, float | None, str]],
    visits: Sequence[tuple[str, float, str]],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (
        pd.DataFrame(people, columns=["pid", "age", "income", "region"]),
        pd.DataFrame(visits, columns=["pid", "cost", "kind"]),
    )


def answers(backend: DuckDBBackend, sql: str, s: DatasetSchema | None = None) -> dict:
    """The exact measurements of ``sql`` in column units, by group key and measurement key
    (a centred sum read back as the plain sum ``sum(col)``)."""
    resolved, ms, got = measure(backend, sql, s)
    out: dict = {}
    for key, row in got.values.items():
        cell: dict[str, float | None] = {}
        for m, v in zip(ms, row, strict=True):
            cell[m.key] = None if v is None else float(v)
        for m, v in zip(ms, row, strict=True):
            if m.kind in ("sum", "csum") and v is not None and m.column is not None:
                g = column_grid(resolved.schema.column(m.column))
                total = float(v)
                if m.kind == "csum":
                    count = cell[m.key.replace("csum(", "count(", 1)]
                    total += g.center * (count or 0)
                cell[f"sum({m.column})"] = total * g.step
        out[tuple(key)] = cell
    return out


#: The clinic of the tests: five people (one without income, one without a region in the
#: public table, one without visits), seven visits.
PEOPLE = [
    ("p1", 20, 100.0, "n"),
    ("p2", 35, 900.0, "s"),
    ("p3", 50, None, "e"),
    ("p4", 70, 400.0, "w"),
    ("p5", 90, 50.0, "n"),
]
VISITS = [
    ("p1", 10.0, "a"),
    ("p1", 20.0, "b"),
    ("p2", 5.0, "a"),
    ("p3", 40.0, "b"),
    ("p3", 1.5, "a"),
    ("p3", 2.5, "a"),
    ("p5", 50.0, "b"),
]


def clinic_store(without: str | None = None) -> DuckDBBackend:
    """The clinic's store; ``without`` a person: its neighbour with that person removed from
    every private table (the public regions unchanged)."""
    people, visits = frames(PEOPLE, VISITS)
    if without is not None:
        people, visits = people[people.pid != without], visits[visits.pid != without]
    return store(people, visits)
