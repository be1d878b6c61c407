"""The Spark backend: sessions, datasets attached to their bounded copies, check and aggregate.

Queries read only the bounded copy (:mod:`.writer`); the statements are the compiler's
(:mod:`infodp.curator.backends.compile`) rendered in Spark's entry of the dialect table, with
the per-unit *group* limit in each query's SQL exactly as on DuckDB. Only the integer
aggregates reach the driver. Sessions are created on demand (:mod:`.settings`); deadlines
cancel the query's Spark job group.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from infodp._np import np
from infodp.curator.backends.base import (
    ExactAggregates,
    QueryDeadline,
    ReadConnection,
    Registered,
    add_histograms,
    values_by_key,
)
from infodp.curator.backends.bounding import bounded_column, stored_columns
from infodp.curator.backends.compile import compiled_statements, relation_text
from infodp.curator.backends.dialects import SPARK
from infodp.curator.backends.duckdb import DuckDBBackend
from infodp.curator.backends.spark.progress import StageProgress, quiet_query_context_loggers
from infodp.curator.backends.spark.settings import PINNED, require_spark, spark_settings
from infodp.curator.backends.spark.writer import Written, is_uri, source_frame, write_copy
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.plan.nodes import Measurement, QueryPlan
from infodp.errors import InternalError, ParameterError

if TYPE_CHECKING:
    from pyspark.sql import Row, SparkSession

__all__ = ["SparkBackend", "SparkHandle"]

_T = TypeVar("_T")


def _view_name(kind: str, key: str) -> str:
    return f"__infodp_{kind}_" + hashlib.sha256(key.encode()).hexdigest()[:20]


class SparkHandle:
    """What :meth:`SparkBackend.connect` hands out: the session, nothing to close."""

    def __init__(self, backend: SparkBackend) -> None:
        self.backend = backend

    def close(self) -> None:
        """Nothing to close (the session is shared)."""
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
        # Stored names of public tables: their sizes are public, so joins broadcast them by
        # an explicit hint (the pinned settings broadcast nothing by size).
        self._public: set[str] = set()
        self._fingerprints: dict[str, str] = {}
        self._lock = threading.Lock()
        # Temporary views this backend made, per session (a view is a catalogue lookup away
        # otherwise: one JVM round trip per query), and the Spark SQL texts the analyser
        # accepted on an empty view (a data-independent outcome: the same text binds the same
        # way against the same columns), so a repeated query is analysed once.
        self._views: dict[str, SparkSession] = {}
        self._checked: dict[str, SparkSession] = {}
        # The running session infodp's own was made on, and infodp's own (see session()).
        self._parent: SparkSession | None = None
        self._own: SparkSession | None = None
        # The same pre-reservation validation as DuckDB's (its empty in-memory table).
        self._duck = DuckDBBackend(":memory:")

    # -- session ---------------------------------------------------------------------------

    def session(self) -> SparkSession:
        """infodp's SparkSession: a session of its own (``newSession()``: its own SQL
        settings and views, the same SparkContext) on the running one if any (a notebook's, a
        test's), else on a new one from
        :func:`~infodp.curator.backends.spark.settings.spark_settings`, with the settings of
        :data:`~infodp.curator.backends.spark.settings.PINNED` set in it, so that no plan of
        a private table follows its private size whatever the running session allows (and
        that session keeps its own settings)."""
        from pyspark.sql import SparkSession

        with self._lock:
            active = SparkSession.getActiveSession()
            if active is None or active is not self._parent:
                active = self._running(active)
            if active is self._parent and self._own is not None:
                return self._own
            own = active.newSession()
            for key, value in PINNED.items():
                own.conf.set(key, value)
            self._parent, self._own = active, own
            return own

    def running_session(self) -> SparkSession:
        """The running SparkSession (made from the settings if none): registration reads its
        sources there (a notebook's temporary views included). Registration is the data
        owner's, who sees the data; queries run in :meth:`session`."""
        with self._lock:
            return self._running(None)

    def _running(self, active: SparkSession | None) -> SparkSession:
        from pyspark.sql import SparkSession

        quiet_query_context_loggers()
        active = active or SparkSession.getActiveSession()
        if active is None:
            builder = SparkSession.builder.master(self.master).appName("infodp")
            for key, value in self.settings.items():
                builder = builder.config(key, value)
            active = builder.getOrCreate()
            # The JVM logs failing tasks (with values) to stderr: nothing but the constant
            # error may reach an analyst after the reservation.
            active.sparkContext.setLogLevel("OFF")
        return active

    def connect(self, *, read_only: bool) -> SparkHandle:
        """A handle for :meth:`aggregate` (the session is shared; closing does nothing)."""
        return SparkHandle(self)

    def attach(self, name: str, bounded_path: str, *, public: Sequence[str] = ()) -> None:
        """Make dataset ``name`` read from its bounded copy at ``bounded_path``; ``public``:
        the stored names of its public tables (a population's), broadcast where joined."""
        self._paths[name] = bounded_path
        self._public.update(public)

    def bounded_path(self, name: str) -> str:
        """The bounded copy of dataset ``name`` (attached or written by this backend); a
        population's table ``NAME__table`` is ``<NAME's copy>/table``."""
        path = self._paths.get(name)
        population, _, table = name.partition("__")
        if path is None and table and population in self._paths:
            path = f"{self._paths[population].rstrip('/')}/{table}"
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

    def register(
        self,
        name: str,
        source: object,
        schema: DatasetSchema,
        *,
        bounded_path: str | os.PathLike[str] | None = None,
    ) -> Registered:
        """Write the bounded copy of ``source`` (Parquet) and attach it; (rows, True,
        rows without an id left out under the id column's ``nulls: drop``).

        The copy keeps at most ``max_rows_per_unit`` rows per unit, so every later query sees
        units within their limit (the second value is always True). Refusals (missing or
        mistyped columns, values the null policy forbids, NULL units) name the column and
        never a value.
        """
        raw_target = str(bounded_path) if bounded_path is not None else str(self.default_path(name))
        remote = is_uri(raw_target)
        # A URI (hdfs://, s3a://, abfss://...) is written by Spark as given (it refuses an
        # existing path itself); a local path is made absolute and kept owner-only.
        target = raw_target if remote else str(Path(raw_target).resolve())
        if not remote and Path(target).exists():
            raise ParameterError("bounded_path", target, "a path that does not exist yet")
        spark = self.running_session()
        try:
            frame = source_frame(spark, source)
            raw_view = _view_name("raw", name + secrets.token_hex(8))
            views = (raw_view, raw_view + "_typed")
            written = write_copy(
                spark, frame, schema, target, views=views, run=self._in_job_group(spark)
            )
        except Exception as err:
            if not type(err).__module__.startswith(("pyspark", "py4j")):
                raise
            # The data owner's own error (registration is never an analyst's): the engine's
            # first line, so a broken source or a storage problem can be fixed.
            first = (str(err).strip().splitlines() or [""])[0][:300]
            raise ParameterError(
                f"Spark could not register the source ({type(err).__name__}: {first})"
            ) from None
        self._fingerprints[name] = written.fingerprint
        self.attach(name, target)
        return Registered(written.rows, True, written.dropped)

    def register_population(
        self,
        name: str,
        sources: Mapping[str, object],
        schema: DatasetSchema,
        *,
        bounded_path: str | os.PathLike[str] | None = None,
    ) -> tuple[DatasetSchema, int, list[str], int]:
        """Write the bounded copy of every table of population ``name`` under one directory
        (:mod:`infodp.curator.backends.spark.population`); (the schema with its public facts,
        the private rows, what to drop if the registration fails later, the rows without an
        id left out)."""
        from infodp.curator.backends.spark.population import register_population

        raw = str(bounded_path) if bounded_path is not None else str(self.default_path(name))
        target = raw if is_uri(raw) else str(Path(raw).resolve())
        if not is_uri(target) and Path(target).exists():
            raise ParameterError("bounded_path", target, "a path that does not exist yet")
        filled, rows, made, dropped = register_population(self, name, sources, schema, target)
        return filled, rows, [*made, name], dropped

    def duckdb_scratch(self) -> DuckDBBackend:
        """This backend's private in-memory DuckDB store (public tables are copied and
        measured there before Spark reads them)."""
        return self._duck

    def _in_job_group(self, spark: SparkSession) -> Callable[[Callable[[], Written]], Written]:
        def run(work: Callable[[], Written]) -> Written:
            return self._run(spark, lambda _: work(), None)

        return run

    def fingerprint(self, name: str, schema: DatasetSchema) -> str:
        """SHA-256 of the content of dataset ``name`` as registered by this backend (row
        order ignored), computed in the registration's validating pass.

        The same idea as :func:`infodp.curator.store.database.fingerprint` (a sum of per-row hashes
        of
        the unit and the bounded columns, before any per-unit row limit) with Spark's 64-bit
        hash, so fingerprints compare between Spark datasets, not with DuckDB ones.
        """
        text = self._fingerprints.get(name)
        if text is None:
            raise InternalError(f"dataset {name} was not registered by this backend")
        return text

    def drop(self, name: str) -> None:
        """Delete the bounded copy of ``name`` (a registration that failed after writing it)."""
        import shutil

        path = self._paths.pop(name, None)
        if path is None:
            return
        self._views.pop(_view_name("bnd", path), None)
        with contextlib.suppress(Exception):
            self.session().catalog.dropTempView(_view_name("bnd", path))
        if not is_uri(path):
            shutil.rmtree(path, ignore_errors=True)

    # -- queries ---------------------------------------------------------------------------

    def _view(self, table: str) -> str:
        path = self.bounded_path(table)
        view = _view_name("bnd", path)
        spark = self.session()
        if self._views.get(view) is spark:
            return view
        if not spark.catalog.tableExists(view):
            if not is_uri(path) and not Path(path).exists():
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

    def _relation_view(self, schema: DatasetSchema) -> str:
        """A view of a derived relation (:mod:`infodp.curator.relations`): its SELECT with
        each stored table it reads replaced by the view of that table's bounded copy."""
        import sqlglot
        from sqlglot import exp

        tree = sqlglot.parse_one(schema.source_sql or "")
        names = dict.fromkeys(t.name for t in tree.find_all(exp.Table))
        public = [name for name in names if name in self._public]
        text = relation_text(schema, SPARK, {name: self._view(name) for name in names}, public)
        view = _view_name("rel", text)
        spark = self.session()
        if self._views.get(view) is not spark:
            spark.sql(text).createOrReplaceTempView(view)
            self._views[view] = spark
        return view

    def _empty_view(self, schema: DatasetSchema) -> str:
        """An empty view with the bounded copy's columns (for :meth:`check`)."""
        from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

        view = _view_name("empty", schema.to_json())
        spark = self.session()
        if self._views.get(view) is spark:
            return view
        if not spark.catalog.tableExists(view):
            types = {"BIGINT": LongType(), "DOUBLE": DoubleType(), "VARCHAR": StringType()}
            fields = [StructField(n, types[t]) for n, t in stored_columns(schema)]
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
        derived = schema.source_sql is not None  # a population's relation: its own row cut
        unit_ok = unit_rows_ok or not derived
        self._duck.check(plan, schema, ms, unit_rows_ok=unit_ok)
        spark = self.session()
        if derived:  # the empty relation of the derived columns (no stored table is named)
            texts = compiled_statements(
                plan, schema, ms, unit_rows_ok=unit_ok, dialect=SPARK, empty=True
            )
        else:
            texts = compiled_statements(
                plan,
                schema,
                ms,
                unit_rows_ok=True,
                dialect=SPARK,
                relation=self._empty_view(schema),
            )
        try:
            for text in texts:
                if self._checked.get(text) is spark:
                    continue
                spark.sql(text)
                if len(self._checked) >= 512:
                    self._checked.clear()
                self._checked[text] = spark
        except Exception as err:
            if type(err).__module__.startswith(("pyspark", "py4j")):
                raise ParameterError(
                    "sql",
                    plan.sql[:80],
                    "a query the engine can compile (it was refused at bind time)",
                ) from None
            raise

    def aggregate(
        self,
        con: ReadConnection,
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
        derived = schema.source_sql is not None  # a population's relation: a view of it
        view = self._relation_view(schema) if derived else self._view(plan.table)
        sqls = compiled_statements(
            plan,
            schema,
            ms,
            unit_rows_ok=unit_rows_ok or not derived,
            dialect=SPARK,
            relation=view,
        )
        results = self._run(spark, lambda fired: _collect(spark, sqls, fired), deadline)
        return _assemble(len(plan.group_by), ms, results)

    def _run(
        self,
        spark: SparkSession,
        work: Callable[[threading.Event], _T],
        deadline: float | None,
    ) -> _T:
        """``work(fired)`` inside its own job group: cancelled at the deadline (``fired`` set
        then), with progress."""
        sc = spark.sparkContext
        group = "infodp-" + secrets.token_hex(8)
        fired = threading.Event()
        sc.setJobGroup(group, "infodp", interruptOnCancel=True)
        try:
            with (
                _cancel_at(deadline, fired, lambda: sc.cancelJobGroup(group)),
                self._bar(spark, group),
            ):
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
            sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]

    @contextlib.contextmanager
    def _bar(self, spark: SparkSession, group: str) -> Iterator[None]:
        if not (self.progress and sys.stderr.isatty()):
            yield
            return
        bar = StageProgress(spark.sparkContext, group)
        bar.start()
        try:
            yield
        finally:
            bar.stop()


@contextlib.contextmanager
def _cancel_at(
    deadline: float | None, fired: threading.Event, cancel: Callable[[], None]
) -> Iterator[None]:
    """Set ``fired`` and call ``cancel`` after ``deadline`` seconds (None: never)."""
    if deadline is None:
        yield
        return

    def fire() -> None:
        fired.set()
        cancel()

    timer = threading.Timer(deadline, fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _collect(spark: SparkSession, sqls: Sequence[str], fired: threading.Event) -> list[list[Row]]:
    """Run the statements in turn; none starts after the deadline (a job group cancels only
    the jobs running when it is cancelled)."""
    out = []
    for sql in sqls:
        if fired.is_set():
            raise QueryDeadline("the query ran past its deadline")
        out.append(spark.sql(sql).collect())
    return out


def _assemble(ng: int, ms: Sequence[Measurement], results: list[list[Row]]) -> ExactAggregates:
    """ExactAggregates from the collected rows (the layout every backend gives)."""
    it = iter(results)
    out = ExactAggregates({}, {})
    if any(not m.kind.histogram for m in ms):
        out.values.update(values_by_key(next(it), ng, ms))
    for i, m in enumerate(ms):
        if not m.kind.histogram or m.column is None:
            continue
        rows = next(it)  # keys, __bin, n, __gid
        columns = list(zip(*rows, strict=True)) if rows else [() for _ in range(ng + 3)]
        add_histograms(
            out,
            i,
            len(ms),
            [list(c) for c in columns[:ng]],
            np.array(columns[ng + 2], dtype=np.int64),
            np.array(columns[ng], dtype=np.int64),
            np.array(columns[ng + 1], dtype=np.int64),
        )
    return out
