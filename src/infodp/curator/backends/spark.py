"""The Apache Spark backend: the same plans and bounds as DuckDB, run by Spark on Parquet.

A dataset registered with ``backend="spark"`` has a *source* (a Parquet file or directory, or
a table of Spark's catalogue) and a *bounded copy* that Spark writes as Parquet at
registration, once: every declared column typed, every bounded numeric column cleaned by its
null policy, clamped and snapped to its release grid (the very expression the DuckDB backend
uses, :func:`~infodp.curator.backends.duckdb.compiled_statements` and its helpers, transpiled
by sqlglot), and every privacy unit cut to at most ``max_rows_per_unit`` rows, chosen by a
secret salted hash of the unit and the row (a per-unit ``row_number`` whose order nobody can
predict). Queries then read only the bounded copy; the per-unit *group* limit, which depends
on the query's GROUP BY, stays in each query's SQL exactly as on DuckDB. Only the integer
aggregates reach the driver.

Sessions are created on demand (``local[*]`` unless ``master``, ``INFODP_SPARK_MASTER`` or the
store's ``<store>.spark.toml`` says otherwise); deadlines cancel the query's Spark job group.
Without pyspark or Java, :class:`SparkUnavailable` says exactly what to install.

>>> print(to_spark_sql('SELECT isfinite(x), hash(a, 7) FROM "people"', "people", "v"))
SELECT ABS(x) < CAST('Infinity' AS DOUBLE), XXHASH64(a, 7) FROM v
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import secrets
import shutil
import sys
import threading
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlglot
from sqlglot import exp

from infodp.curator.backends.base import ExactAggregates, QueryDeadline
from infodp.curator.backends.duckdb import (
    DuckDBBackend,
    _snap_expression,
    bounded_column,
    compiled_statements,
    sorted_histograms,
)
from infodp.curator.grid import column_grid
from infodp.curator.plan import Measurement, QueryPlan
from infodp.curator.schema import ColumnSpec, DatasetSchema
from infodp.errors import InfodpError, InternalError, ParameterError

__all__ = [
    "MASTER_ENV",
    "SparkBackend",
    "SparkUnavailable",
    "config_path",
    "require_spark",
    "spark_settings",
    "to_spark_sql",
]

#: The environment variable naming the Spark master (``--spark-master`` wins over it).
MASTER_ENV = "INFODP_SPARK_MASTER"

#: Settings every infodp session starts from (the config file and ``--spark-conf`` win).
_DEFAULTS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    # The bounded copies are private files (0600), like the DuckDB store.
    "spark.hadoop.fs.permissions.umask-mode": "077",
    # infodp draws its own progress bar (and none under --json).
    "spark.ui.showConsoleProgress": "false",
}


class SparkUnavailable(InfodpError):
    """pyspark or Java is missing: the message names what to install."""


def require_spark() -> None:
    """Raise :class:`SparkUnavailable` unless pyspark and a Java runtime are installed."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkUnavailable(
            "the Spark backend needs pyspark 4 (which needs Java 17+): pip install 'infodp[spark]'"
        ) from None
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return
    if shutil.which("java") is None:
        raise SparkUnavailable(
            "the Spark backend needs a Java 17+ runtime and found no 'java' on PATH or in "
            "JAVA_HOME: install one (Debian/Ubuntu: apt-get install default-jre-headless)"
        )


def config_path(store: str | os.PathLike[str]) -> Path:
    """The Spark settings file of a store: ``<store>.spark.toml``.

    >>> config_path("data/s.duckdb").name
    's.duckdb.spark.toml'
    """
    return Path(str(store) + ".spark.toml")


def _flatten(table: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in table.items():
        if isinstance(value, Mapping):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def spark_settings(
    store: str | os.PathLike[str] | None = None,
    *,
    master: str | None = None,
    conf: Mapping[str, str] | Sequence[str] = (),
) -> tuple[str, dict[str, str]]:
    """(master, settings) from the defaults, ``<store>.spark.toml``, the environment and
    the arguments, later ones winning.

    The file holds ``master = "spark://host:7077"`` and ``spark.*`` keys (TOML dotted keys
    or a ``[spark]`` table); ``conf`` is a mapping or ``KEY=VALUE`` strings.

    >>> spark_settings(master="local[2]", conf=["spark.sql.shuffle.partitions=2"])[1][
    ...     "spark.sql.shuffle.partitions"]
    '2'
    """
    chosen = "local[*]"
    settings = dict(_DEFAULTS)
    if store is not None and str(store) != ":memory:" and config_path(store).is_file():
        path = config_path(store)
        try:
            data = tomllib.loads(path.read_text())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
            raise ParameterError(
                f'{path.name} is not valid TOML ({err}); it holds master = "..." and spark.* '
                "settings."
            ) from None
        for key, value in _flatten(data):
            if key == "master":
                chosen = str(value)
            elif key.startswith("spark."):
                settings[key] = str(value).lower() if isinstance(value, bool) else str(value)
            else:
                raise ParameterError(
                    f"{path.name}: key {key!r}", key, "'master' or a spark.* setting"
                )
    chosen = os.environ.get(MASTER_ENV) or chosen
    if master is not None and (not master.strip() or any(c.isspace() for c in master)):
        raise ParameterError(
            "--spark-master", master, "a Spark master URL (local[*], spark://HOST:PORT, yarn, …)"
        )
    if master:
        chosen = master
    items = conf.items() if isinstance(conf, Mapping) else (_pair(c) for c in conf)
    for key, value in items:
        if not key.startswith("spark."):
            raise ParameterError("--spark-conf", key, "a spark.* setting (KEY=VALUE)")
        settings[key] = value
    return chosen, settings


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ParameterError("--spark-conf", text, "KEY=VALUE (e.g. spark.executor.memory=4g)")
    return key.strip(), value.strip()


# -- SQL: DuckDB's compiled statements, transpiled ------------------------------------------


def _fix_node(table: str, view: str) -> Any:
    def fix(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Table) and not node.db and node.name == table:
            return exp.to_table(view)
        if isinstance(node, exp.Sum) and isinstance(node.this, exp.Mul):
            # A sum of squares (centred, VARIANCE/STDDEV): each term is below 2^42 on the
            # grid, so 2^21 rows could pass 2^63. DuckDB sums BIGINT into HUGEINT; Spark would
            # sum into BIGINT (and fail or wrap), so it sums DECIMAL(38, 0) here.
            node.set("this", exp.cast(node.this, "DECIMAL(38, 0)"))
            return node
        if isinstance(node, exp.Anonymous):
            name = str(node.this).lower()
            if name == "isfinite":
                # DuckDB's isfinite: neither ±inf nor NaN (NaN is above every value in Spark).
                return exp.LT(
                    this=exp.Abs(this=node.expressions[0]),
                    expression=exp.cast(exp.Literal.string("Infinity"), "DOUBLE"),
                )
            if name == "hash":
                # A 64-bit hash (Spark's HASH is 32-bit: collisions would merge groups).
                return exp.Anonymous(this="XXHASH64", expressions=node.expressions)
        return node

    return fix


def _double_division(node: exp.Expression) -> exp.Expression:
    # DuckDB divides in DOUBLE even when both sides are DECIMAL literals; Spark would divide
    # exactly in DECIMAL and put a value on a quantile bin's edge in the other bin.
    if isinstance(node, exp.Div):
        node.set("this", exp.cast(node.this, "DOUBLE"))
        node.set("expression", exp.cast(node.expression, "DOUBLE"))
    return node


@functools.lru_cache(maxsize=512)
def to_spark_sql(sql: str, table: str, view: str) -> str:
    """DuckDB SQL (as compiled for a plan) in Spark SQL, reading ``view`` for ``table``.

    A pure function of its arguments, memoised: a repeated query (the common case for a
    dashboard or a benchmark) skips sqlglot's parse and generation.
    """
    tree = sqlglot.parse_one(sql, read="duckdb")
    tree = tree.transform(_fix_node(table, view)).transform(_double_division)
    return str(tree.sql(dialect="spark"))


def _duck_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _spark_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _view_name(kind: str, key: str) -> str:
    return f"__infodp_{kind}_" + hashlib.sha256(key.encode()).hexdigest()[:20]


_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$")


class _Handle:
    """What :meth:`SparkBackend.connect` hands out: the session, nothing to close."""

    def __init__(self, backend: SparkBackend) -> None:
        self.backend = backend

    def close(self) -> None:
        return None


class SparkBackend:
    """Datasets as bounded Parquet copies, queried by a Spark session made on demand.

    ``store``: the DuckDB store whose catalogue records the datasets (its
    ``<store>.spark.toml`` is read, and bounded copies default to ``<store>.bounded/NAME``).
    ``progress``: draw a stage-progress bar on a terminal (stderr) while Spark works.
    """

    def __init__(
        self,
        store: str | os.PathLike[str] | None = None,
        *,
        master: str | None = None,
        conf: Mapping[str, str] | Sequence[str] = (),
        progress: bool = False,
    ) -> None:
        require_spark()
        self.store = None if store is None or str(store) == ":memory:" else Path(store)
        self.master, self.settings = spark_settings(store, master=master, conf=conf)
        self.progress = progress
        self._paths: dict[str, str] = {}
        self._fingerprints: dict[str, str] = {}
        self._lock = threading.Lock()
        # Temporary views this backend made, per session (a view is a catalogue lookup away
        # otherwise: one JVM round trip per query), and the Spark SQL texts the analyser
        # accepted on an empty view (a data-independent outcome: the same text binds the same
        # way against the same columns), so a repeated query is analysed once.
        self._views: dict[str, Any] = {}
        self._checked: dict[str, Any] = {}
        # The same pre-reservation validation as DuckDB's (its empty in-memory table).
        self._duck = DuckDBBackend(":memory:")

    # -- session ---------------------------------------------------------------------------

    def session(self) -> Any:
        """The SparkSession: the running one if any (a notebook's, a test's), else a new one
        from :func:`spark_settings`."""
        from pyspark.sql import SparkSession

        _quiet_query_context_loggers()
        with self._lock:
            active = SparkSession.getActiveSession()
            if active is not None:
                return active
            builder = SparkSession.builder.master(self.master).appName("infodp")
            for key, value in self.settings.items():
                builder = builder.config(key, value)
            spark = builder.getOrCreate()
            # The JVM logs failing tasks (with values) to stderr: nothing but the constant
            # error may reach an analyst after the reservation.
            spark.sparkContext.setLogLevel("OFF")
            return spark

    def connect(self, *, read_only: bool) -> _Handle:
        """A handle for :meth:`aggregate` (the session is shared; closing does nothing)."""
        return _Handle(self)

    def attach(self, name: str, bounded_path: str) -> None:
        """Make dataset ``name`` read from its bounded copy at ``bounded_path``."""
        self._paths[name] = bounded_path

    def bounded_path(self, name: str) -> str:
        """The bounded copy of dataset ``name`` (attached or written by this backend)."""
        path = self._paths.get(name)
        if path is None:
            raise InternalError(f"dataset {name} has no bounded copy attached")
        return path

    def default_path(self, name: str) -> Path:
        """Where the bounded copy of ``name`` goes by default: ``<store>.bounded/NAME``."""
        if self.store is None:
            raise ParameterError(
                "bounded_path", None, "given for a store in memory (where to write the copy)"
            )
        return Path(str(self.store) + ".bounded") / name

    # -- registration (data owner side) ----------------------------------------------------

    def _source_frame(self, spark: Any, source: Any) -> Any:
        if isinstance(source, (str, Path)):
            text = str(source)
            if _is_uri(text):
                return spark.read.parquet(text)  # a data lake's Parquet (s3a://, hdfs://, ...)
            path = Path(text)
            if path.exists():
                if path.is_file() and path.suffix.lower() in (".csv", ".tsv", ".txt"):
                    return spark.read.csv(text, header=True, inferSchema=True)
                return spark.read.parquet(str(path.resolve()))
            if isinstance(source, str) and _TABLE_NAME.match(text):
                if not spark.catalog.tableExists(text):
                    raise ParameterError(
                        "source", text, "a Parquet path or a table in Spark's catalogue"
                    )
                return spark.table(text)
            raise ParameterError("source", text, "a Parquet path or a table in Spark's catalogue")
        module = type(source).__module__.split(".")[0]
        if module == "pandas":
            return spark.createDataFrame(source)
        if module in ("polars", "pyarrow"):
            return spark.createDataFrame(source.to_pandas())
        raise ParameterError(
            "source", type(source).__name__, "a Parquet path, a Spark table name or a frame"
        )

    def register(
        self,
        name: str,
        source: Any,
        schema: DatasetSchema,
        *,
        bounded_path: str | os.PathLike[str] | None = None,
    ) -> tuple[int, bool]:
        """Write the bounded copy of ``source`` (Parquet) and attach it; (rows, True).

        The copy keeps at most ``max_rows_per_unit`` rows per unit, so every later query sees
        units within their limit (the second value is always True). Refusals (missing or
        mistyped columns, values the null policy forbids, NULL units) name the column and
        never a value.
        """
        raw_target = str(bounded_path) if bounded_path is not None else str(self.default_path(name))
        remote = _is_uri(raw_target)
        # A URI (hdfs://, s3a://, abfss://...) is written by Spark as given (it refuses an
        # existing path itself); a local path is made absolute and kept owner-only.
        target = raw_target if remote else str(Path(raw_target).resolve())
        if not remote and Path(target).exists():
            raise ParameterError("bounded_path", target, "a path that does not exist yet")
        spark = self.session()
        try:
            return self._register(spark, name, source, schema, target)
        except Exception as err:
            if not type(err).__module__.startswith(("pyspark", "py4j")):
                raise
            # The data owner's own error (registration is never an analyst's): the engine's
            # first line, so a broken source or a storage problem can be fixed.
            first = (str(err).strip().splitlines() or [""])[0][:300]
            raise ParameterError(
                f"Spark could not register the source ({type(err).__name__}: {first})"
            ) from None

    def _register(
        self, spark: Any, name: str, source: Any, schema: DatasetSchema, target: str
    ) -> tuple[int, bool]:
        from pyspark.sql.types import DecimalType, DoubleType, FloatType

        frame = self._source_frame(spark, source)
        available = {f.name.lower(): f for f in frame.schema.fields}
        names = ", ".join(f.name for f in frame.schema.fields)
        typed: list[tuple[str, str]] = []
        checks: list[tuple[str, str]] = []
        if not schema.unit_is_row:
            if schema.privacy_unit.lower() not in available:
                raise ParameterError(
                    f"privacy_unit column {schema.privacy_unit!r} is not in the source; "
                    f"source columns: {names}."
                )
            if schema.privacy_unit.lower() not in {c.name.lower() for c in schema.columns}:
                src = _duck_ident(available[schema.privacy_unit.lower()].name)
                typed.append((schema.privacy_unit, src))
        for col in schema.columns:
            field = available.get(col.name.lower())
            if field is None:
                raise ParameterError(
                    f"declared column {col.name!r} is not in the source; source columns: {names}."
                )
            src = _duck_ident(field.name)
            if col.type == "int":
                floating = isinstance(field.dataType, (DoubleType, FloatType, DecimalType))
                inner = f"round({src})" if floating else src
                expr = f"TRY_CAST({inner} AS BIGINT)"
            elif col.type == "float":
                expr = f"TRY_CAST({src} AS DOUBLE)"
            else:
                expr = f"{src}::VARCHAR"
            typed.append((col.name, expr))
            if col.is_numeric:
                checks.append(
                    (
                        f"declared {col.type} but some values are not numbers of that type",
                        f"{src} IS NOT NULL AND {expr} IS NULL",
                    )
                )
        select = ", ".join(f"{e} AS {_duck_ident(c)}" for c, e in typed)
        raw_view = _view_name("raw", name + secrets.token_hex(8))
        view = raw_view + "_typed"
        frame.createOrReplaceTempView(raw_view)
        try:
            typed_sql = to_spark_sql(f"SELECT {select} FROM __raw", "__raw", raw_view)
            spark.sql(typed_sql).createOrReplaceTempView(view)
            return self._run(  # type: ignore[no-any-return]
                spark,
                lambda _: self._write(spark, name, raw_view, view, schema, checks, target),
                None,
            )
        finally:
            spark.catalog.dropTempView(view)
            spark.catalog.dropTempView(raw_view)

    def _write(
        self,
        spark: Any,
        name: str,
        raw_view: str,
        view: str,
        schema: DatasetSchema,
        checks: list[tuple[str, str]],
        target: str,
    ) -> tuple[int, bool]:
        # Two passes for every refusal (mistyped values on the source; the null policy
        # ``error``, NULL units and the row count on the typed view), one for the unit limit.
        counters: list[tuple[str, str]] = []
        for i, (_, cond) in enumerate(checks):
            counters.append((f"bad{i}", f"count_if({to_spark_sql(cond, '', '')})"))
        for col in schema.columns:
            if col.nulls.action != "error":
                continue
            c = _spark_ident(col.name)
            bad = f"{c} IS NULL" + (
                f" OR NOT (abs({c}) < CAST('Infinity' AS DOUBLE))" if col.type == "float" else ""
            )
            counters.append((f"null_{col.name}", f"count_if({bad})"))
        if not schema.unit_is_row:
            counters.append(("null_unit", f"count_if({_spark_ident(schema.privacy_unit)} IS NULL)"))
        counters.append(("rows", "count(*)"))
        counters.append(
            (
                "fp",
                f"coalesce(sum(CAST(xxhash64({_fingerprint_items(schema)}) AS DECIMAL(38, 0))), 0)",
            )
        )
        # The typed columns come from the raw ones: check the casts against the raw view.
        cast_checks = [c for c in counters if c[0].startswith("bad")]
        other = [c for c in counters if not c[0].startswith("bad")]
        got: dict[str, int] = {}
        if cast_checks:
            sql = "SELECT " + ", ".join(f"{e} AS {k}" for k, e in cast_checks)
            got.update(spark.sql(f"{sql} FROM {raw_view}").collect()[0].asDict())
        sql = "SELECT " + ", ".join(f"{e} AS {_spark_ident(k)}" for k, e in other)
        got.update(spark.sql(f"{sql} FROM {view}").collect()[0].asDict())
        for i, (what, _) in enumerate(checks):
            if got[f"bad{i}"]:
                column = [c for c in schema.columns if c.is_numeric][i].name
                raise ParameterError(f"column {column!r} is {what}.")
        for col in schema.columns:
            if col.nulls.action == "error" and got[f"null_{col.name}"]:
                raise ParameterError(
                    f"column {col.name!r} holds NULL, NaN or infinite values and declares "
                    "no null policy; add 'nulls: drop' or 'nulls: {replace: VALUE}' to its "
                    "declaration (values are never imputed silently)."
                )
        if not schema.unit_is_row and got["null_unit"]:
            raise ParameterError(
                f"privacy_unit column {schema.privacy_unit!r} holds NULL values; every "
                "row must belong to an individual."
            )
        rows = int(got["rows"])
        self._fingerprints[name] = _fingerprint_text(schema, rows, got["fp"])
        unit_ok = True
        if not schema.unit_is_row:
            u = _spark_ident(schema.privacy_unit)
            most = spark.sql(
                f"SELECT coalesce(max(n), 0) AS m FROM "
                f"(SELECT count(*) AS n FROM {view} GROUP BY {u})"
            ).collect()[0][0]
            unit_ok = int(most) <= schema.max_rows_per_unit
        bounded = [
            f"CAST({to_spark_sql(_snap_expression(col), '', '')} AS {_stored_type(col)}) AS "
            f"{_spark_ident(bounded_column(col.name))}"
            for col in schema.columns
            if col.is_numeric and col.bounds is not None
        ]
        body = f"SELECT *{''.join(', ' + b for b in bounded)} FROM {view}"
        if not unit_ok:
            # Which rows a unit keeps: row_number over the unit, in the order of a salted
            # 64-bit hash of the row (the salt is secret and forgotten), so the choice is
            # fixed for the copy's life but nobody can predict or steer it.
            u = _spark_ident(schema.privacy_unit)
            cols = ", ".join(_spark_ident(c) for c in spark.table(view).columns)
            salt = secrets.randbits(62)
            body = (
                f"SELECT * EXCEPT (__rank) FROM (SELECT *, row_number() OVER (PARTITION BY "
                f"{u} ORDER BY xxhash64({salt}, {cols})) AS __rank FROM ({body})) "
                f"WHERE __rank <= {schema.max_rows_per_unit}"
            )
        local = None if _is_uri(target) else Path(target)
        if local is not None:
            local.parent.mkdir(parents=True, exist_ok=True)
        try:
            spark.sql(body).write.parquet(target)
        except BaseException:
            if local is not None:
                shutil.rmtree(local, ignore_errors=True)
            raise
        if local is not None:
            _chmod_private(local)
        self.attach(name, target)
        return rows, True

    def fingerprint(self, name: str, schema: DatasetSchema) -> str:
        """SHA-256 of the content of dataset ``name`` as registered by this backend (row
        order ignored), computed in the registration's validating pass.

        The same idea as :func:`infodp.curator.store.fingerprint` (a sum of per-row hashes of
        the unit and the bounded columns, before any per-unit row limit) with Spark's 64-bit
        hash, so fingerprints compare between Spark datasets, not with DuckDB ones.
        """
        text = self._fingerprints.get(name)
        if text is None:
            raise InternalError(f"dataset {name} was not registered by this backend")
        return text

    def drop(self, name: str) -> None:
        """Delete the bounded copy of ``name`` (a registration that failed after writing it)."""
        path = self._paths.pop(name, None)
        if path is None:
            return
        self._views.pop(_view_name("bnd", path), None)
        with contextlib.suppress(Exception):
            self.session().catalog.dropTempView(_view_name("bnd", path))
        if not _is_uri(path):
            shutil.rmtree(path, ignore_errors=True)

    # -- queries ---------------------------------------------------------------------------

    def _view(self, table: str) -> str:
        path = self.bounded_path(table)
        view = _view_name("bnd", path)
        spark = self.session()
        if self._views.get(view) is spark:
            return view
        if not spark.catalog.tableExists(view):
            if not _is_uri(path) and not Path(path).exists():
                # No path in the message: it can reach an analyst through the service.
                raise ParameterError(
                    "the bounded copy is missing (it was moved or deleted); nothing was released."
                )
            frame = spark.read.parquet(path)
            # Bounded columns are stored as INT when the grid fits (half the bytes to scan);
            # queries see BIGINT, as on DuckDB, so no sum or product is computed in 32 bits.
            widen = {
                f.name: frame[f.name].cast("bigint")
                for f in frame.schema.fields
                if f.name.startswith(bounded_column("")) and f.dataType.typeName() == "integer"
            }
            (frame.withColumns(widen) if widen else frame).createOrReplaceTempView(view)
        self._views[view] = spark
        return view

    def _empty_view(self, schema: DatasetSchema) -> str:
        """An empty view with the bounded copy's columns (for :meth:`check`)."""
        from pyspark.sql.types import (
            DoubleType,
            LongType,
            StringType,
            StructField,
            StructType,
        )

        view = _view_name("empty", schema.to_json())
        spark = self.session()
        if self._views.get(view) is spark:
            return view
        if spark.catalog.tableExists(view):
            self._views[view] = spark
            return view
        types = {"int": LongType(), "float": DoubleType()}
        fields = []
        names = {c.name.lower() for c in schema.columns}
        if not schema.unit_is_row and schema.privacy_unit.lower() not in names:
            fields.append(StructField(schema.privacy_unit, StringType()))
        for col in schema.columns:
            fields.append(StructField(col.name, types.get(col.type, StringType())))
        for col in schema.columns:
            if col.is_numeric and col.bounds is not None:
                fields.append(StructField(bounded_column(col.name), LongType()))
        spark.createDataFrame([], StructType(fields)).createOrReplaceTempView(view)
        self._views[view] = spark
        return view

    def check(
        self,
        plan: QueryPlan,
        schema: DatasetSchema,
        ms: Sequence[Measurement],
        *,
        unit_rows_ok: bool,
    ) -> None:
        """DuckDB's own check, then Spark's analyser on an empty view: nothing is read.

        The bounded copy holds units within their row limit, so ``unit_rows_ok`` is True for
        every Spark dataset whatever the caller passes.
        """
        self._duck.check(plan, schema, ms, unit_rows_ok=True)
        view = self._empty_view(schema)
        spark = self.session()
        try:
            for sql in compiled_statements(plan, schema, ms, unit_rows_ok=True):
                text = to_spark_sql(sql, plan.table, view)
                if self._checked.get(text) is spark:
                    continue
                spark.sql(text)
                if len(self._checked) >= 512:
                    self._checked.clear()
                self._checked[text] = spark
        except Exception as err:
            if type(err).__module__.startswith(("pyspark", "py4j", "sqlglot")):
                raise ParameterError(
                    "sql",
                    plan.sql[:80],
                    "a query the engine can compile (it was refused at bind time)",
                ) from None
            raise

    def aggregate(
        self,
        con: Any,
        plan: QueryPlan,
        schema: DatasetSchema,
        ms: Sequence[Measurement],
        *,
        unit_rows_ok: bool,
        deadline: float | None = None,
    ) -> ExactAggregates:
        """Run the plan on the bounded copy; only aggregates come back to the driver.

        ``deadline``: seconds after which the query's job group is cancelled and
        :class:`~infodp.curator.backends.base.QueryDeadline` is raised.
        """
        spark = self.session()
        view = self._view(plan.table)
        statements = compiled_statements(plan, schema, ms, unit_rows_ok=True)
        sqls = [to_spark_sql(s, plan.table, view) for s in statements]
        results = self._run(spark, lambda fired: _collect(spark, sqls, fired), deadline)
        return _assemble(plan, schema, ms, results)

    def _run(self, spark: Any, work: Any, deadline: float | None) -> Any:
        """``work()`` inside its own job group: cancelled at the deadline, with progress."""
        sc = spark.sparkContext
        group = "infodp-" + secrets.token_hex(8)
        fired = threading.Event()

        def cancel() -> None:
            fired.set()
            sc.cancelJobGroup(group)

        sc.setJobGroup(group, "infodp", interruptOnCancel=True)
        timer = threading.Timer(deadline, cancel) if deadline is not None else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        bar = _Progress(sc, group) if self.progress and sys.stderr.isatty() else None
        try:
            if bar is not None:
                bar.start()
            try:
                out = work(fired)
            except Exception:
                if fired.is_set():
                    raise QueryDeadline(f"the query ran longer than {deadline} s") from None
                raise
            if fired.is_set():
                raise QueryDeadline(f"the query ran longer than {deadline} s")
            return out
        finally:
            if timer is not None:
                timer.cancel()
            if bar is not None:
                bar.stop()
            sc.setLocalProperty("spark.jobGroup.id", None)


def _stored_type(col: ColumnSpec) -> str:
    """The Parquet type of a bounded column in the copy: INT when every grid value fits in
    32 bits (a scan reads half the bytes of BIGINT), else BIGINT.

    >>> from infodp.curator.schema import ColumnSpec
    >>> _stored_type(ColumnSpec("v", "float", bounds=(0.0, 1000.0)))
    'INT'
    """
    grid = column_grid(col)
    return "INT" if grid.lo >= -(2**31) and grid.hi < 2**31 else "BIGINT"


def _collect(spark: Any, sqls: Sequence[str], fired: threading.Event) -> list[Any]:
    """Run the statements in turn; none starts after the deadline (a job group cancels only
    the jobs running when it is cancelled)."""
    out = []
    for sql in sqls:
        if fired.is_set():
            raise QueryDeadline("the query ran past its deadline")
        out.append(spark.sql(sql).collect())
    return out


def _assemble(
    plan: QueryPlan, schema: DatasetSchema, ms: Sequence[Measurement], results: list[Any]
) -> ExactAggregates:
    """ExactAggregates from the collected rows (the layout of DuckDB's ``_aggregate``)."""
    values: dict[tuple[str, ...], tuple[int | None, ...]] = {}
    ng = len(plan.group_by)
    it_results = iter(results)
    if any(m.kind != "quantile" for m in ms):
        for row in next(it_results):
            if any(v is None for v in row[:ng]):
                continue  # a NULL key (dropped by its null policy) is never released
            key = tuple(str(v) for v in row[:ng])
            it = iter(row[ng:])
            values[key] = tuple(None if m.kind == "quantile" else int(next(it) or 0) for m in ms)
    histograms: dict[tuple[tuple[str, ...], int], npt.NDArray[np.int64]] = {}
    for i, m in enumerate(ms):
        if m.kind != "quantile" or m.column is None:
            continue
        groups: dict[tuple[str, ...], int] = {}
        gids: list[int] = []
        bins: list[int] = []
        counts: list[int] = []
        for row in next(it_results):
            raw = row[:ng]
            if any(v is None for v in raw):
                continue  # a NULL key (dropped by its null policy) is never released
            key = tuple(str(v) for v in raw)
            gids.append(groups.setdefault(key, len(groups) + 1))
            bins.append(int(row[ng]))
            counts.append(int(row[ng + 1]))
        per_group = sorted_histograms(
            np.array(gids, dtype=np.int64),
            np.array(bins, dtype=np.int64),
            np.array(counts, dtype=np.int64),
        )
        for key, hist in zip(groups, per_group, strict=True):
            histograms[(key, i)] = hist
            values.setdefault(key, tuple(None for _ in ms))
    return ExactAggregates(values, histograms)


def _fingerprint_items(schema: DatasetSchema) -> str:
    """The unit and every declared column (bounded numeric ones clamped and snapped), as the
    Spark SQL arguments of the per-row hash."""
    items: list[str] = []
    if not schema.unit_is_row:
        items.append(_spark_ident(schema.privacy_unit))
    for col in schema.columns:
        if col.name.lower() == schema.privacy_unit.lower():
            continue
        if col.is_numeric and col.bounds is not None:
            items.append(to_spark_sql(_snap_expression(col), "", ""))
        else:
            items.append(_spark_ident(col.name))
    return ", ".join(items)


def _fingerprint_text(schema: DatasetSchema, rows: int, total: Any) -> str:
    types = [c.type for c in schema.columns]
    text = json.dumps(["spark", rows, str(total), types])
    return hashlib.sha256(text.encode()).hexdigest()


def _quiet_query_context_loggers() -> None:
    """Silence pyspark's loggers that print a failing statement's error (with its values)
    to stderr: after the reservation a failure is one constant error, and nothing else may
    reach an analyst's terminal."""
    import logging

    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)


def _is_uri(path: str) -> bool:
    """True for a storage URI (``s3a://b/k``), which only Spark can read or write.

    >>> _is_uri("s3a://lake/people"), _is_uri("/data/people")
    (True, False)
    """
    return "://" in path


def _chmod_private(root: Path) -> None:
    """Owner-only modes on the bounded copy (directories 0700, files 0600)."""
    for dirpath, _, files in os.walk(root):
        os.chmod(dirpath, 0o700)
        for f in files:
            os.chmod(os.path.join(dirpath, f), 0o600)


class _Progress:
    """A rich progress bar of the job group's stage progress (as a percentage only: task
    counts follow the size of the data, which an analyst must not read off a terminal)."""

    def __init__(self, sc: Any, group: str) -> None:
        self.sc = sc
        self.group = group
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name="infodp-spark-progress", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def _fraction(self) -> float:
        tracker = self.sc.statusTracker()
        done = total = 0
        for job in tracker.getJobIdsForGroup(self.group):
            info = tracker.getJobInfo(job)
            if info is None:
                continue
            for stage in info.stageIds:
                s = tracker.getStageInfo(stage)
                if s is not None:
                    done += s.numCompletedTasks
                    total += s.numTasks
        return done / total if total else 0.0

    def _loop(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn

        with Progress(
            TextColumn("Spark"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            console=Console(stderr=True),
            transient=True,
        ) as bar:
            task = bar.add_task("spark", total=1.0)
            while not self._stop.wait(0.25):
                with contextlib.suppress(Exception):
                    bar.update(task, completed=self._fraction())
