"""The DuckDB backend: connect, register, check and aggregate on one DuckDB file.

The statements are compiled by :mod:`infodp.curator.backends.compile` (DuckDB's entry of the
dialect table): contribution bounding runs *inside* DuckDB as part of the same SQL that
aggregates: values are cleaned by their declared null policy, clamped to their declared bounds
and snapped to a power-of-two grid (as integers), each privacy unit keeps at most
``max_rows_per_unit`` rows and at most ``max_groups_per_unit`` groups, rows outside the
declared categories are dropped, and only the bounded integer aggregates leave the database.

Concurrency: the store is opened read-only by queries (many processes may read at once) and
read-write only, briefly, to register a dataset; a connection that meets another process's lock
waits and retries with jittered exponential backoff instead of failing.

>>> from infodp.curator.declaration.source import load_schema
>>> from infodp.curator.sql.parse import parse_query
>>> from infodp.curator.rules import measurements
>>> s = load_schema({"table": "t", "privacy_unit": "row",
...                  "columns": {"x": {"type": "int", "bounds": [0, 10]}}})
>>> p = parse_query("SELECT SUM(x) FROM t WHERE x > 2", s)
>>> backend = DuckDBBackend(":memory:")
>>> backend.check(p, s, measurements(p), unit_rows_ok=True)  # binds on no data: no refusal
"""

from __future__ import annotations

import atexit
import contextlib
import heapq
import math
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path

import duckdb
from sqlglot import exp

from infodp._np import np
from infodp._per_process import PerProcess
from infodp._retry import retry
from infodp.curator.backends.base import (
    ExactAggregates,
    QueryDeadline,
    ReadConnection,
    Registered,
    StoreInUse,
    add_histograms,
    sorted_histograms,
    values_by_key,
)
from infodp.curator.backends.bound_checks import enforced_bounds, registered_bounds
from infodp.curator.backends.bounding import (
    bounded_column,
    empty_relation,
)
from infodp.curator.backends.compile import (
    compiled_statements,
    with_salt,
)
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.plan.grid import ColumnGrid, column_grid
from infodp.curator.plan.nodes import Measurement, QueryPlan
from infodp.errors import InternalError, ParameterError

__all__ = [
    "ColumnGrid",
    "DuckDBBackend",
    "ExactAggregates",
    "QueryDeadline",
    "bounded_column",
    "column_grid",
    "compiled_statements",
    "empty_relation",
    "sorted_histograms",
]


#: Every connection plans from the SQL and the schema alone. DuckDB's optimisers that read the
#: stored column statistics (min/max, string lengths, row-group zone maps) would otherwise
#: choose the plan from the data: a perfect-hash GROUP BY, compressed keys, a sum proved not to
#: overflow, a bound filter proved always true, row groups skipped by a filter; one person's
#: value could then change the plan and its run time. Without them a query costs a little
#: more per row (BENCHMARKS.md, curator); the filter is evaluated on every row instead of
#: pushed into the scan, so no row group is skipped. A derived relation's joins run as written
#: (hash joins, the right side built): the join order, the build side and the choice of a
#: merge or nested-loop join would otherwise follow the tables' row counts, which are private
#: (one person more flipped the plan of a three-table join in
#: tests/curator/test_population_neighbours.py); as written costs the benchmark's join ~20%.
_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "disabled_optimizers": (
        "statistics_propagation,compressed_materialization,row_group_pruner,filter_pushdown,"
        "join_order,filter_pullup,build_side_probe_side"
    ),
    "merge_join_threshold": 0,
    "nested_loop_join_threshold": 0,
}


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql(tree: exp.Expr) -> str:
    """DuckDB's SQL of a tree (sqlglot's generic dialect: no dialect to import)."""
    return str(tree.sql(normalize_functions=False))


class DuckDBBackend:
    """Datasets in one DuckDB file; read-only short-lived connections for queries."""

    def __init__(
        self, path: str | Path, *, timeout: float = 120.0, threads: int | None = None
    ) -> None:
        self.path = Path(path)
        self.timeout = timeout
        # DuckDB worker threads per read connection (None: DuckDB's default, all cores). A
        # shared service gives each query fewer, so one analyst's heavy query cannot take
        # every core from the others.
        self.threads = threads
        #: ``":memory:"``: one private in-memory database for the life of this object; each
        #: :meth:`connect` is a cursor on it (nothing is written to disk).
        self._memory: duckdb.DuckDBPyConnection | None = (
            duckdb.connect(":memory:", config=dict(_CONFIG)) if str(path) == ":memory:" else None
        )
        #: Read connections kept for many queries (:meth:`keep`).
        self._kept: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()

    def keep(self, con: duckdb.DuckDBPyConnection) -> None:
        """Mark ``con`` as a read connection kept for many queries (a service's): its queries
        read the table's constraints from the catalogue once and, where they keep the declared
        bounds, leave out the per-row bound (:mod:`~infodp.curator.backends.bound_checks`).
        A connection opened for one query keeps the per-row bound: the catalogue's first read
        on a fresh connection (~5 ms) costs more than the bound on tables below ~10M rows."""
        self._kept.add(con)

    def connect(self, *, read_only: bool) -> duckdb.DuckDBPyConnection:
        """A connection, waiting (with backoff) while another process holds a conflicting lock."""
        if self._memory is not None:
            return self._memory.cursor()

        def attempt() -> duckdb.DuckDBPyConnection:
            if read_only and not self.path.exists():
                # No path in the message: it can reach an analyst through the service.
                raise ParameterError(
                    "the store is missing (it was moved or deleted); nothing was released."
                )
            config = dict(_CONFIG)
            if read_only and self.threads is not None:
                config["threads"] = self.threads
            return duckdb.connect(str(self.path), read_only=read_only, config=config)

        return retry(
            attempt,
            retryable=lambda err: (
                isinstance(err, duckdb.IOException) and "lock" in str(err).lower()
            ),
            deadline=time.monotonic() + self.timeout,
            cap=0.25,
            timed_out=lambda _err: StoreInUse(self.timeout),  # not DuckDB's text: it has the path
        )

    # -- registration (data owner side) --------------------------------------------------------

    def register(self, name: str, source: object, schema: DatasetSchema) -> Registered:
        """Copy the declared columns of ``source`` into table ``name``; returns (rows,
        unit_ok, dropped).

        ``source``: a CSV or Parquet path, or a pandas / polars / Arrow frame. The data owner's
        data are checked against the declaration (column presence and types, null policy
        ``error``). The stored table keeps at most ``max_rows_per_unit`` rows of each unit, cut
        here whatever the data, so ``unit_ok`` is always True: no query applies (or skips) a
        row-limit step, and no query's plan or work depends on how many rows a unit had.
        Rows whose id is NULL are left out when the id column declares ``nulls: drop``
        (``dropped`` counts them, ``rows`` counts the rows kept).
        """
        con = self.connect(read_only=False)
        try:
            with _readable(source):
                return self._copy(con, name, source, schema)
        finally:
            con.close()

    def _copy(
        self, con: duckdb.DuckDBPyConnection, name: str, source: object, schema: DatasetSchema
    ) -> Registered:
        """:meth:`register` on connection ``con``."""
        from infodp.curator.backends.duckdb_copy import copy_table  # the owner's step only

        relation = self._relation(con, source)
        copied = copy_table(con, name, relation.columns, schema)
        con.execute("CHECKPOINT")
        return copied

    def register_public(self, name: str, source: object, member: DatasetSchema) -> DatasetSchema:
        """Copy a population's public table into table ``name``; returns ``member`` with the
        public facts measured on it (:mod:`infodp.curator.backends.public`)."""
        con = self.connect(read_only=False)
        try:
            with _readable(source):
                return self._copy_public(con, name, source, member)
        finally:
            con.close()

    def _copy_public(
        self, con: duckdb.DuckDBPyConnection, name: str, source: object, member: DatasetSchema
    ) -> DatasetSchema:
        """:meth:`register_public` on connection ``con``."""
        from infodp.curator.backends.public import copy_public  # the owner's step only

        self._relation(con, source)
        if con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE lower(table_name) = lower(?)",
            [name],
        ).fetchone() != (0,):
            raise ParameterError("name", name, "a table name not yet in the store")
        facts = copy_public(con, "__source", name, member)
        con.execute("CHECKPOINT")
        return facts

    @staticmethod
    def _relation(con: duckdb.DuckDBPyConnection, source: object) -> duckdb.DuckDBPyRelation:
        if isinstance(source, (str, Path)):
            path = Path(source)
            if not path.is_file():
                raise ParameterError("source", str(source), "an existing CSV or Parquet file")
            suffix = path.suffix.lower()
            if suffix == ".parquet":
                rel = con.read_parquet(str(path))
            elif suffix in (".csv", ".tsv", ".txt", ".gz"):
                rel = con.read_csv(str(path))
            else:
                raise ParameterError("source", str(source), "a .csv or .parquet file")
        else:
            module = type(source).__module__.split(".")[0]
            if module not in ("pandas", "polars", "pyarrow"):
                raise ParameterError(
                    "source", type(source).__name__, "a path, or a pandas / polars / Arrow frame"
                )
            con.register("__frame", source)
            rel = con.table("__frame")
        con.execute("CREATE TEMP VIEW __source AS SELECT * FROM " + _relation_sql(rel))
        return con.table("__source")

    def has_table(self, name: str) -> bool:
        """Whether the store holds a table ``name`` (case-insensitively, as SQL names it)."""
        con = self.connect(read_only=False)
        try:
            row = con.execute(
                "SELECT count(*) FROM information_schema.tables WHERE lower(table_name) = lower(?)",
                [name],
            ).fetchone()
        finally:
            con.close()
        return row != (0,)

    def drop(self, name: str) -> None:
        """Remove a table (used when a registration fails after the copy)."""
        con = self.connect(read_only=False)
        try:
            con.execute(f"DROP TABLE IF EXISTS {_ident(name)}")
        finally:
            con.close()

    # -- queries -------------------------------------------------------------------------------

    def check(
        self,
        plan: QueryPlan,
        schema: DatasetSchema,
        ms: Sequence[Measurement],
        *,
        unit_rows_ok: bool,
        con: duckdb.DuckDBPyConnection | None = None,
    ) -> None:
        """Bind and run the compiled SQL against an *empty* relation of the table's columns.

        Run before the budget is reserved: whatever DuckDB refuses at bind or constant-folding
        time is refused here, with a data-free message, at no cost. The statements read
        :func:`empty_relation` (typed NULL columns, no rows) instead of the table, so they
        touch no stored data and no table statistics: the outcome depends on the query and the
        declared schema only, on whichever connection runs them. ``con``: a connection to run
        them on (a one-shot process passes the one it answers with, instead of starting an
        in-memory DuckDB); by default an in-memory DuckDB from a shared free list,
        which remembers the statements that passed on it.
        """
        # The statements as a query on a table registered by this version runs them (its
        # bounds kept by the table's constraints); one on an older table adds only the
        # per-row bounds, which bind on the same BIGINT columns.
        templates = tuple(
            compiled_statements(
                plan,
                schema,
                ms,
                unit_rows_ok=unit_rows_ok,
                empty=True,
                salted=False,
                enforced=registered_bounds(schema),
            )
        )
        statements = tuple(with_salt(t) for t in templates)
        if con is not None:
            _run_check(con, statements, plan.sql)
            return
        checkers = _checkers()
        checker = checkers.take()
        try:
            passed = checker[1]
            if templates in passed:
                # The same statements (but for the salt, which changes no binding) already ran
                # without error on no data: running them again is deterministic, so the
                # refusal could not differ.
                return
            _run_check(checker[0], statements, plan.sql)
            if len(passed) >= _PASSED_MAX:
                passed.clear()
            passed.add(templates)
        finally:
            checkers.give(checker)

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
        """Run the bounded aggregation (and quantile histograms) on an open connection.

        ``deadline``: seconds after which the running statement is interrupted
        (``con.interrupt()``) and :class:`QueryDeadline` is raised.
        """
        if not isinstance(con, duckdb.DuckDBPyConnection):  # a handle of another backend
            raise InternalError(f"DuckDBBackend.aggregate got a {type(con).__name__} handle")
        with _Deadline(con, deadline) as watch:
            try:
                kept = con in self._kept
                enforced = enforced_bounds(con, plan.table, schema) if kept else frozenset()
                statements = compiled_statements(
                    plan, schema, ms, unit_rows_ok=unit_rows_ok, enforced=enforced
                )
                result = _collect(con, statements, ms, len(plan.group_by))
            except duckdb.Error:
                if watch.fired:
                    raise QueryDeadline(f"the query ran longer than {deadline} s") from None
                raise
        if watch.fired:
            # Past the deadline even if the last statement finished first: the same failure
            # (and the caller drops the connection, which may hold a pending interrupt).
            raise QueryDeadline(f"the query ran longer than {deadline} s")
        return result


def _collect(
    con: duckdb.DuckDBPyConnection, statements: Sequence[str], ms: Sequence[Measurement], ng: int
) -> ExactAggregates:
    """Run ``statements`` in :func:`compiled_statements`' order (the aggregate when a
    measurement is not a quantile, then one histogram per quantile) and gather the exact
    values of ``ms`` per group (``ng`` group columns)."""
    texts = iter(statements)
    out = ExactAggregates({}, {})
    if any(not m.kind.histogram for m in ms):
        out.values.update(values_by_key(con.execute(next(texts)).fetchall(), ng, ms))
    for i, m in enumerate(ms):
        if not m.kind.histogram or m.column is None:
            continue
        res = con.execute(next(texts)).fetchnumpy()
        add_histograms(
            out,
            i,
            len(ms),
            [res[f"__g{j}"] for j in range(ng)],
            np.asarray(res["__gid"], dtype=np.int64),
            np.asarray(res["__bin"], dtype=np.int64),
            np.asarray(res["n"], dtype=np.int64),
        )
    return out


class _Deadline:
    """Interrupt ``con`` after ``seconds`` (``con.interrupt()`` from the shared watchdog)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, seconds: float | None) -> None:
        self.con: duckdb.DuckDBPyConnection | None = con
        self.seconds = seconds
        self.fired = False
        self._lock = threading.Lock()

    @property
    def over(self) -> bool:
        """True once the query is over: the deadline can no longer fire (it never becomes
        False again, so it may be read without the lock)."""
        return self.con is None

    def fire(self) -> None:
        with self._lock:
            if self.con is None:  # the query is over
                return
            self.fired = True
            self.con.interrupt()

    def __enter__(self) -> _Deadline:
        if self.seconds is not None:
            _watchdog().watch(time.monotonic() + self.seconds, self)
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.con = None  # not kept alive by the watchdog's heap until the deadline


class _Watchdog:
    """One daemon thread firing every query's deadline (a timer thread per query costs more).

    Deadlines wait in a heap. Those of finished queries at its top are dropped by the next
    :meth:`watch` (and by the thread before it waits), so the heap holds about the running
    queries, and the thread wakes when a running query's deadline comes, not once per
    finished query (all queries have the same timeout, so the oldest deadline is the first
    to be due and its query is usually long over). The thread is woken early only for a
    deadline before the time it sleeps until.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, _Deadline]] = []
        self._seq = 0
        #: When the thread wakes next (None: only when notified; -inf: it is awake).
        self._armed: float | None = -math.inf
        threading.Thread(target=self._run, name="infodp-deadlines", daemon=True).start()

    def _drop_over(self) -> None:
        heap = self._heap
        while heap and heap[0][2].over:
            heapq.heappop(heap)

    def watch(self, when: float, deadline: _Deadline) -> None:
        with self._cond:
            self._drop_over()
            self._seq += 1
            heapq.heappush(self._heap, (when, self._seq, deadline))
            if self._armed is None or when < self._armed:
                self._cond.notify()

    def pending(self) -> int:
        """How many deadlines the heap holds (running queries, and finished ones not yet
        dropped)."""
        with self._cond:
            return len(self._heap)

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    self._drop_over()
                    now = time.monotonic()
                    if self._heap and self._heap[0][0] <= now:
                        break
                    self._armed = self._heap[0][0] if self._heap else None
                    self._cond.wait(None if self._armed is None else self._armed - now)
                self._armed = -math.inf  # awake: the heap is read again before the next wait
                _, _, due = heapq.heappop(self._heap)
            due.fire()


_watchdog = PerProcess(_Watchdog)


#: Statements remembered per checker as having passed :meth:`DuckDBBackend.check`.
_PASSED_MAX = 1024

_Checker = tuple[duckdb.DuckDBPyConnection, set[tuple[str, ...]]]  # statement templates


class _Checkers:
    """In-memory DuckDBs for checks, each with the statement tuples that already ran on it
    without error; a check takes one (one statement at a time per connection) and gives it
    back.

    They are owned here rather than by each thread: a thread's own connection is destroyed
    when that thread ends, and a thread ending while the interpreter exits (a worker thread
    of a server stopped just before) makes DuckDB's destructor abort the process ("FATAL:
    exception not rethrown", status 134). Here they are dropped at exit by the exiting
    thread, and a forked child starts its own.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list[_Checker] = []

    def take(self) -> _Checker:
        with self._lock:
            if self._free:
                return self._free.pop()
        return duckdb.connect(":memory:"), set()

    def give(self, checker: _Checker) -> None:
        with self._lock:
            self._free.append(checker)

    def drop(self) -> None:
        with self._lock:
            self._free.clear()


_checkers = PerProcess(_Checkers)


@atexit.register
def _drop_checkers() -> None:
    checkers = _checkers.made()
    if checkers is not None:
        checkers.drop()


def _run_check(con: duckdb.DuckDBPyConnection, statements: tuple[str, ...], sql: str) -> None:
    try:
        for statement in statements:
            con.execute(statement).fetchall()
    except duckdb.Error:
        raise ParameterError(
            "sql", sql[:80], "a query the engine can compile (it was refused at bind time)"
        ) from None


@contextlib.contextmanager
def _readable(source: object) -> Iterator[None]:
    """A source DuckDB cannot read (a truncated Parquet file, a CSV with a ragged row or
    bytes that are not UTF-8, a value that is not of its column's type) is refused in one line
    naming the source; DuckDB's message is not shown, since it can quote the file's content."""
    try:
        yield
    except duckdb.Error as err:
        shown = str(source) if isinstance(source, (str, Path)) else type(source).__name__
        raise ParameterError(
            "source",
            shown,
            f"a well-formed CSV (UTF-8, the same number of fields on every row) or Parquet "
            f"file or frame whose declared columns hold their declared types (reading it "
            f"failed: {type(err).__name__})",
        ) from None


def _relation_sql(rel: duckdb.DuckDBPyRelation) -> str:
    return "(" + rel.sql_query() + ")"
