"""A population's tables on Spark: each private table bounded as a single table is, each
public table copied with its public facts (measured as on DuckDB), all under one directory.

The bounded copy of a population ``NAME`` is a directory holding one Parquet copy per table
(``<dir>/<table>``); the stored name of a table (``NAME__table``) reads ``<dir>/<table>``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from infodp.curator.backends.public import copy_public
from infodp.curator.schema import DatasetSchema, stored_name
from infodp.errors import ParameterError

if TYPE_CHECKING:
    from infodp.curator.backends.spark.backend import SparkBackend

__all__ = ["register_population"]

_SPARK_TYPES = {"int": "bigint", "float": "double"}


def register_population(
    backend: SparkBackend,
    name: str,
    sources: Mapping[str, object],
    schema: DatasetSchema,
    target: str,
) -> tuple[DatasetSchema, int, list[str]]:
    """Copy every table of population ``name`` under ``target``; (the schema with its public
    facts, the private rows, the stored names made)."""
    made: list[str] = []
    members = []
    rows = 0
    try:
        for member in schema.members:
            table = stored_name(name, member.table)
            path = f"{target.rstrip('/')}/{member.table}"
            made.append(table)
            if member.public:
                members.append(_public(backend, table, sources[member.table], member, path))
                continue
            n, _ = backend.register(table, sources[member.table], member, bounded_path=path)
            rows += n
            members.append(member)
    except BaseException:
        for table in made:
            backend.drop(table)
        raise
    backend.attach(name, target)
    return dataclasses.replace(schema, members=tuple(members)), rows, made


def _public(
    backend: SparkBackend, table: str, source: object, member: DatasetSchema, path: str
) -> DatasetSchema:
    """A public table: its facts measured by DuckDB on the source's rows, its typed copy
    written by Spark as Parquet at ``path`` (public rows: nothing to bound)."""
    from infodp.curator.backends.spark.writer import source_frame

    spark = backend.session()
    frame = source_frame(spark, source).toPandas()
    con = backend.duckdb_scratch()
    try:
        con.register("__public_source", frame)
        facts = copy_public(con, "__public_source", table, member)
        typed = con.execute(f'SELECT * FROM "{table}"').df()
    finally:
        with contextlib.suppress(Exception):
            con.execute(f'DROP TABLE IF EXISTS "{table}"')
        con.close()
    ddl = ", ".join(f"`{c.name}` {_SPARK_TYPES.get(c.type, 'string')}" for c in member.columns)
    out = spark.createDataFrame(typed.astype(object).where(typed.notna(), None), schema=ddl)
    if not path.startswith(("hdfs:", "s3", "abfs", "gs:", "file:")) and Path(path).exists():
        raise ParameterError("bounded_path", path, "a path that does not exist yet")
    out.write.parquet(path)
    backend.attach(table, path)
    return facts
