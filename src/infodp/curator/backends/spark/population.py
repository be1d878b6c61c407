"""A population's tables on Spark: each private table bounded as a single table is, each
public table copied with its public facts (measured as on DuckDB), all under one directory.

The bounded copy of a population ``NAME`` is a directory holding one Parquet copy per table
(``<dir>/<table>``); the stored name of a table (``NAME__table``) reads ``<dir>/<table>``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from infodp.curator.backends.spark.writer import is_uri
from infodp.curator.declaration.schema import DatasetSchema, stored_name
from infodp.errors import ParameterError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from infodp.curator.backends.base import Registered
    from infodp.curator.backends.duckdb import DuckDBBackend

__all__ = ["SparkWriter", "register_population"]


class SparkWriter(Protocol):
    """What copying a population needs of the Spark backend (it calls this module, so this
    module names the backend's methods, not its class: the import graph stays one-way)."""

    def register(
        self,
        name: str,
        source: object,
        schema: DatasetSchema,
        *,
        bounded_path: str | os.PathLike[str] | None = None,
    ) -> Registered: ...

    def drop(self, name: str) -> None: ...

    def attach(self, name: str, bounded_path: str, *, public: Sequence[str] = ()) -> None: ...

    def duckdb_scratch(self) -> DuckDBBackend: ...

    def running_session(self) -> SparkSession: ...


def register_population(
    backend: SparkWriter,
    name: str,
    sources: Mapping[str, object],
    schema: DatasetSchema,
    target: str,
) -> tuple[DatasetSchema, int, list[str], int]:
    """Copy every table of population ``name`` under ``target``; (the schema with its public
    facts, the private rows, the stored names made, the rows without an id left out)."""
    made: list[str] = []
    members = []
    rows = dropped = 0
    try:
        for member in schema.members:
            table = stored_name(name, member.table)
            path = f"{target.rstrip('/')}/{member.table}"
            made.append(table)
            if member.public:
                members.append(_public(backend, table, sources[member.table], member, path))
                continue
            got = backend.register(table, sources[member.table], member, bounded_path=path)
            rows += got.rows
            dropped += got.dropped
            members.append(member)
    except BaseException:
        for table in made:
            backend.drop(table)
        raise
    backend.attach(name, target)
    return dataclasses.replace(schema, members=tuple(members)), rows, made, dropped


def _public(
    backend: SparkWriter, table: str, source: object, member: DatasetSchema, path: str
) -> DatasetSchema:
    """A public table: copied and measured by the backend's own in-memory DuckDB (as a DuckDB
    store copies one), then written as Parquet at ``path`` for Spark to read; nothing passes
    through pandas (a path or a frame is read by DuckDB directly)."""
    duck = backend.duckdb_scratch()
    facts = duck.register_public(table, source, member)
    con = duck.connect(read_only=False)
    try:
        if is_uri(path):  # DuckDB writes locally; Spark moves the copy to the data lake
            with tempfile.TemporaryDirectory() as scratch:
                local = str(Path(scratch) / "copy.parquet")
                con.execute(f"COPY {_q(table)} TO '{_quoted(local)}' (FORMAT PARQUET)")
                backend.running_session().read.parquet(local).write.parquet(path)
        else:
            if Path(path).exists():
                raise ParameterError("bounded_path", path, "a path that does not exist yet")
            Path(path).mkdir(parents=True)
            target = str(Path(path) / "part-0.parquet")
            con.execute(f"COPY {_q(table)} TO '{_quoted(target)}' (FORMAT PARQUET)")
    finally:
        with contextlib.suppress(Exception):
            con.execute(f"DROP TABLE IF EXISTS {_q(table)}")
        con.close()
    backend.attach(table, path, public=[table])
    return facts


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quoted(text: str) -> str:
    return text.replace("'", "''")
