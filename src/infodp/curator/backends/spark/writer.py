"""The bounded-copy writer: a source read by Spark, checked against its declaration and
written once as Parquet (every declared column typed, every bounded numeric column cleaned,
clamped and snapped to its grid, every unit cut to its row limit).

Refusals (missing or mistyped columns, values the null policy forbids, NULL units) name the
column and never a value. Which rows a unit keeps, when it has too many: ``row_number`` over
the unit in the order of a salted 64-bit hash of the row (the salt is secret and forgotten),
so the choice is fixed for the copy's life but nobody can predict or steer it.

>>> is_uri("s3a://lake/people"), is_uri("/data/people")
(True, False)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sqlglot import exp

from infodp.curator.backends.bounding import (
    bool_typing,
    bounded_column,
    ident,
    not_boolean_message,
    null_unit_message,
    snap_expression,
    unit_cut,
)
from infodp.curator.backends.dialects import SPARK
from infodp.curator.declaration.schema import ColumnSpec, DatasetSchema
from infodp.errors import ParameterError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructField

__all__ = ["Written", "chmod_private", "is_uri", "source_frame", "spark_ident", "write_copy"]

_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$")


def spark_ident(name: str) -> str:
    """A quoted Spark identifier.

    >>> spark_ident("a`b")
    '`a``b`'
    """
    return "`" + name.replace("`", "``") + "`"


def _spark(tree: exp.Expr) -> str:
    return str(tree.sql(dialect=SPARK.render, normalize_functions=False))


def is_uri(path: str) -> bool:
    """True for a storage URI (``s3a://b/k``), which only Spark can read or write."""
    return "://" in path


def chmod_private(root: Path) -> None:
    """Owner-only modes on the bounded copy (directories 0700, files 0600)."""
    for dirpath, _, files in os.walk(root):
        os.chmod(dirpath, 0o700)
        for f in files:
            os.chmod(os.path.join(dirpath, f), 0o600)


def _path_frame(spark: SparkSession, source: str | Path) -> DataFrame:
    text = str(source)
    if is_uri(text):
        return spark.read.parquet(text)  # a data lake's Parquet (s3a://, hdfs://, ...)
    path = Path(text)
    if path.exists():
        if path.is_file() and path.suffix.lower() in (".csv", ".tsv", ".txt"):
            return spark.read.csv(text, header=True, inferSchema=True)
        return spark.read.parquet(str(path.resolve()))
    if isinstance(source, str) and _TABLE_NAME.match(text) and spark.catalog.tableExists(text):
        return spark.table(text)
    raise ParameterError("source", text, "a Parquet path or a table in Spark's catalogue")


def source_frame(spark: SparkSession, source: object) -> DataFrame:
    """The source as a DataFrame: a Parquet path or URI, a CSV file, a catalogue table, or a
    pandas / polars / Arrow frame."""
    if isinstance(source, (str, Path)):
        return _path_frame(spark, source)
    module = type(source).__module__.split(".")[0]
    if module == "pandas":
        return spark.createDataFrame(source)
    if module in ("polars", "pyarrow"):
        return spark.createDataFrame(source.to_pandas())  # type: ignore[attr-defined]
    raise ParameterError(
        "source", type(source).__name__, "a Parquet path, a Spark table name or a frame"
    )


@dataclass(frozen=True, slots=True)
class _Typed:
    """The typing SELECT over the raw source, and one cast check per numeric column."""

    select: list[tuple[str, str]]
    checks: list[tuple[str, str, str]]  # (column, what is wrong, condition on the raw view)


def _typing(col: ColumnSpec, field: StructField) -> str:
    """The Spark SQL typing source column ``field`` as declared (an int read from a floating
    column is rounded first)."""
    from pyspark.sql.types import DecimalType, DoubleType, FloatType

    src = spark_ident(field.name)
    if col.type == "bool":
        return _spark(bool_typing(exp.Column(this=ident(field.name)))[0])
    if col.type == "int":
        floating = isinstance(field.dataType, (DoubleType, FloatType, DecimalType))
        return f"TRY_CAST({f'ROUND({src})' if floating else src} AS BIGINT)"
    if col.type == "float":
        return f"TRY_CAST({src} AS DOUBLE)"
    return f"CAST({src} AS STRING)"


def _typed(frame: DataFrame, schema: DatasetSchema) -> _Typed:
    available = {f.name.lower(): f for f in frame.schema.fields}
    names = ", ".join(f.name for f in frame.schema.fields)
    out = _Typed([], [])
    if not schema.unit_is_row:
        unit = available.get(schema.privacy_unit.lower())
        if unit is None:
            raise ParameterError(
                f"privacy_unit column {schema.privacy_unit!r} is not in the source; "
                f"source columns: {names}."
            )
        if schema.privacy_unit.lower() not in {c.name.lower() for c in schema.columns}:
            out.select.append((schema.privacy_unit, spark_ident(unit.name)))
    for col in schema.columns:
        field = available.get(col.name.lower())
        if field is None:
            raise ParameterError(
                f"declared column {col.name!r} is not in the source; source columns: {names}."
            )
        src = spark_ident(field.name)
        expr = _typing(col, field)
        out.select.append((col.name, expr))
        if col.type == "bool":
            bad = _spark(bool_typing(exp.Column(this=ident(field.name)))[1])
            out.checks.append((col.name, "", bad))
        elif col.is_numeric:
            what = f"declared {col.type} but some values are not numbers of that type"
            out.checks.append((col.name, what, f"{src} IS NOT NULL AND {expr} IS NULL"))
    return out


def _counters(schema: DatasetSchema) -> list[tuple[str, str]]:
    """(name, Spark SQL) of the counts on the typed view: forbidden NULLs per column, NULL
    units, rows, and the fingerprint's sum of row hashes."""
    counters: list[tuple[str, str]] = []
    for col in schema.columns:
        if col.nulls.action != "error":
            continue
        c = spark_ident(col.name)
        bad = f"{c} IS NULL" + (
            f" OR NOT (abs({c}) < CAST('Infinity' AS DOUBLE))" if col.type == "float" else ""
        )
        counters.append((f"null_{col.name}", f"count_if({bad})"))
    if not schema.unit_is_row:
        counters.append(("null_unit", f"count_if({spark_ident(schema.privacy_unit)} IS NULL)"))
    counters.append(("rows", "count(*)"))
    fp = f"coalesce(sum(CAST(xxhash64({_fingerprint_items(schema)}) AS DECIMAL(38, 0))), 0)"
    counters.append(("fp", fp))
    return counters


def _refuse(got: dict[str, int], schema: DatasetSchema, typed: _Typed) -> None:
    for i, (name, what, _) in enumerate(typed.checks):
        if got[f"bad{i}"]:
            raise ParameterError(
                f"column {name!r} is {what}." if what else not_boolean_message(name)
            )
    for col in schema.columns:
        if col.name.lower() == schema.privacy_unit.lower():
            continue  # a NULL id is refused below, naming the id column's own policy
        if col.nulls.action == "error" and got[f"null_{col.name}"]:
            raise ParameterError(
                f"column {col.name!r} holds NULL, NaN or infinite values and declares "
                "no null policy; add 'nulls: drop' or 'nulls: {replace: VALUE}' to its "
                "declaration (values are never imputed silently)."
            )
    if not schema.unit_is_row and got["null_unit"]:
        raise ParameterError(null_unit_message(schema.privacy_unit))


def _fingerprint_items(schema: DatasetSchema) -> str:
    """The unit and every declared column (bounded numeric ones clamped and snapped), as the
    Spark SQL arguments of the per-row hash."""
    items: list[str] = []
    if not schema.unit_is_row:
        items.append(spark_ident(schema.privacy_unit))
    for col in schema.columns:
        if col.name.lower() == schema.privacy_unit.lower():
            continue
        if col.has_bounded_copy:
            items.append(_spark(snap_expression(col, SPARK)))
        else:
            items.append(spark_ident(col.name))
    return ", ".join(items)


def _fingerprint_text(schema: DatasetSchema, rows: int, total: object) -> str:
    types = [c.type for c in schema.columns]
    text = json.dumps(["spark", rows, str(total), types])
    return hashlib.sha256(text.encode()).hexdigest()


def _bounded_sql(columns: Sequence[str], view: str, schema: DatasetSchema, unit_ok: bool) -> str:
    """The copy's SELECT: every typed column, each bounded copy stored in the dialect's
    type, each unit cut to its row limit unless every unit is within it."""
    bounded = [
        (bounded_column(col.name), exp.cast(snap_expression(col, SPARK), SPARK.stored_type(col)))
        for col in schema.columns
        if col.has_bounded_copy
    ]
    items = [exp.alias_(e, ident(n), copy=False) for n, e in bounded]
    body = exp.Select(expressions=[exp.Star(), *items]).from_(view, copy=False)
    if not unit_ok:
        out = [*columns, *(n for n, _ in bounded)]
        limit = schema.max_rows_per_unit
        salt = secrets.randbits(62)
        body = unit_cut(
            body, schema.privacy_unit, columns, limit, salt=salt, dialect=SPARK, columns=out
        )
    return _spark(body)


@dataclass(frozen=True, slots=True)
class Written:
    """What registration learnt: the rows kept, their content fingerprint, and how many rows
    without an id were left out (the id column's ``nulls: drop``)."""

    rows: int
    fingerprint: str
    dropped: int = 0


def _check_and_count(
    spark: SparkSession, raw_view: str, view: str, schema: DatasetSchema, typed: _Typed
) -> Written:
    # Two passes for every refusal (mistyped values on the source; the null policy
    # ``error``, NULL units and the row count on the typed view).
    got: dict[str, int] = {}
    if typed.checks:
        sql = ", ".join(
            f"count_if({cond}) AS bad{i}" for i, (_, _, cond) in enumerate(typed.checks)
        )
        got.update(spark.sql(f"SELECT {sql} FROM {raw_view}").collect()[0].asDict())
    sql = ", ".join(f"{e} AS {spark_ident(k)}" for k, e in _counters(schema))
    got.update(spark.sql(f"SELECT {sql} FROM {view}").collect()[0].asDict())
    _refuse(got, schema, typed)
    rows = int(got["rows"])
    return Written(rows, _fingerprint_text(schema, rows, got["fp"]))


def _units_within(spark: SparkSession, view: str, schema: DatasetSchema) -> bool:
    if schema.unit_is_row:
        return True
    u = spark_ident(schema.privacy_unit)
    most = spark.sql(
        f"SELECT coalesce(max(n), 0) AS m FROM (SELECT count(*) AS n FROM {view} GROUP BY {u})"
    ).collect()[0][0]
    return int(most) <= schema.max_rows_per_unit


def _write(spark: SparkSession, sql: str, target: str) -> None:
    local = None if is_uri(target) else Path(target)
    if local is not None:
        local.parent.mkdir(parents=True, exist_ok=True)
    try:
        spark.sql(sql).write.parquet(target)
    except BaseException:
        if local is not None:
            shutil.rmtree(local, ignore_errors=True)
        raise
    if local is not None:
        chmod_private(local)


def write_copy(
    spark: SparkSession,
    frame: DataFrame,
    schema: DatasetSchema,
    target: str,
    *,
    views: tuple[str, str],
    run: Callable[[Callable[[], Written]], Written],
) -> Written:
    """Check ``frame`` against ``schema`` and write its bounded copy to ``target``.

    ``views``: the names of the two temporary views (raw, typed) made here and dropped after;
    ``run``: runs the work in the backend's job group (with its progress bar).
    """
    typed = _typed(frame, schema)
    raw_view, view = views
    select = ", ".join(f"{e} AS {spark_ident(c)}" for c, e in typed.select)
    frame.createOrReplaceTempView(raw_view)
    try:
        typed_sql = f"SELECT {select} FROM {raw_view}"
        if schema.drops_null_units:  # the id column's nulls: drop
            typed_sql += f" WHERE {spark_ident(schema.privacy_unit)} IS NOT NULL"
        spark.sql(typed_sql).createOrReplaceTempView(view)

        def work() -> Written:
            written = _check_and_count(spark, raw_view, view, schema, typed)
            if schema.drops_null_units:
                u = schema.privacy_unit
                unit = next(e for c, e in typed.select if c.lower() == u.lower())
                row = spark.sql(f"SELECT count_if({unit} IS NULL) FROM {raw_view}").collect()
                written = replace(written, dropped=int(row[0][0]))
            unit_ok = _units_within(spark, view, schema)
            columns = list(spark.table(view).columns)
            _write(spark, _bounded_sql(columns, view, schema, unit_ok), target)
            return written

        return run(work)
    finally:
        spark.catalog.dropTempView(view)
        spark.catalog.dropTempView(raw_view)
