"""Which engine holds each dataset of a store, and the connections queries read with.

A store's datasets live in its DuckDB file, or as bounded Parquet copies that Spark reads (the
store's catalogue says which). Queries read DuckDB through short-lived read-only connections by
default, so that other processes can register datasets in between (a writer waits while any
reader is open), or through one kept connection for the life of a service (``keep_open``). A
connection that failed or was interrupted is never reused.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypedDict, TypeVar, cast, runtime_checkable

from infodp._engines import DEFAULT, SPARK, engine
from infodp.curator.backends.base import Backend, ReadConnection, Registered
from infodp.curator.backends.duckdb import DuckDBBackend
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.price.book import REMEMBERED
from infodp.curator.release.overlap import Job
from infodp.curator.request import Priced
from infodp.curator.store.database import catalogue
from infodp.errors import InternalError

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

    from infodp._jsonable import JsonObject
    from infodp.curator.backends.spark import SparkBackend
    from infodp.curator.declaration.schema import DatasetSchema
    from infodp.curator.plan.nodes import QueryPlan

__all__ = ["Connections", "ExternalBackend", "ReadConnection", "SparkOptions"]

_T = TypeVar("_T")


@runtime_checkable
class _Interruptible(Protocol):
    """A connection whose running statement can be interrupted (DuckDB's)."""

    def interrupt(self) -> None: ...


@runtime_checkable
class ExternalBackend(Backend, Protocol):
    """An engine whose bounded copy lives outside the store (its ``infodp._engines`` entry's
    ``in_store`` is False): it writes the copy at ``bounded_path`` and reads the one a
    dataset's catalogue entry names."""

    def register(
        self,
        name: str,
        source: object,
        schema: DatasetSchema,
        *,
        bounded_path: str | os.PathLike[str] | None = None,
    ) -> Registered:
        """Write the bounded copy of ``source`` (at ``bounded_path`` or the default place)."""
        ...

    def attach(self, name: str, bounded_path: str, *, public: Sequence[str] = ()) -> None:
        """Read dataset ``name`` from its copy at ``bounded_path``."""
        ...

    def bounded_path(self, name: str) -> str:
        """Where dataset ``name``'s copy is."""
        ...

    def register_population(
        self,
        name: str,
        sources: Mapping[str, object],
        schema: DatasetSchema,
        *,
        bounded_path: str | os.PathLike[str] | None = None,
    ) -> tuple[DatasetSchema, int, list[str], int]:
        """Write every table's copy of population ``name``; (schema, rows, tables, dropped)."""
        ...

    def fingerprint(self, name: str, schema: DatasetSchema) -> str:
        """The content fingerprint of dataset ``name`` as this engine registered it."""
        ...


class SparkOptions(TypedDict):
    """How the store's Spark backend is made (``Curator(spark_master=..., ...)``)."""

    master: str | None
    conf: Mapping[str, str] | Sequence[str]
    progress: bool


class Connections:
    """The engines and read connections of one store (see the module docstring)."""

    def __init__(
        self,
        db: Path,
        backend: DuckDBBackend,
        *,
        keep_open: bool,
        spark_options: SparkOptions,
    ) -> None:
        self.db, self.backend, self.keep_open = db, backend, keep_open
        #: The kept read-only DuckDB connection (``keep_open``, or a one-shot process's).
        self.kept: DuckDBPyConnection | None = None
        #: Each external engine's constructor options, and the engines made so far.
        self._options: dict[str, SparkOptions] = {SPARK.name: spark_options}
        self._external: dict[str, ExternalBackend] = {}
        # Which backend holds each dataset (the store's catalogue, read once and cached:
        # a dataset's backend never changes under its name).
        self._catalogue: dict[str, JsonObject] = {}
        # Statements that passed DuckDB's data-free check, by the identity of their plan and
        # schema, their measurements and the unit-rows flag (see check).
        self._checked: dict[tuple[object, ...], tuple[QueryPlan, DatasetSchema]] = {}

    def spark(self) -> SparkBackend:
        """The Spark backend of this store (made on first use; needs ``infodp[spark]``)."""
        return cast("SparkBackend", self.external(SPARK.name))

    def backend_for(self, name: str) -> Backend:
        """The backend of engine ``name`` for a new dataset: the store's own for the in-store
        engine, else the external engine's (made on first use)."""
        return self.backend if engine(name).in_store else self.external(name)

    def external(self, name: str) -> ExternalBackend:
        """The backend of the external engine ``name`` (``infodp._engines``), made on first
        use as ``Class(store, **options)`` with this store's options for it."""
        made = self._external.get(name)
        if made is None:
            entry = engine(name)
            if entry.in_store:
                raise InternalError(f"engine {name} keeps its copy in the store")
            module, _, cls = entry.backend.partition(":")
            options: Mapping[str, object] = self._options.get(name, {})
            made = getattr(importlib.import_module(module), cls)(self.db, **options)
            self._external[name] = made
        return made

    def remember(self, records: dict[str, JsonObject]) -> None:
        """Take the store's catalogue as read when the store was opened (a dataset missing
        from it is looked up again, as before the first read)."""
        if not self._catalogue:
            self._catalogue = dict(records)

    def record(self, dataset: str, where: JsonObject) -> None:
        """Remember where a dataset just registered lives (its catalogue entry)."""
        self._catalogue[dataset] = where

    def dataset_backend(self, dataset: str) -> str:
        """Which backend holds ``dataset``: ``"duckdb"`` or ``"spark"`` (the store's catalogue)."""
        meta = self._catalogue.get(dataset)
        if meta is None:
            self._catalogue = catalogue(self.backend, self.kept)
            meta = self._catalogue.setdefault(dataset, {})
        return str(meta.get("backend", DEFAULT.name))

    def engine(self, table: str) -> Backend:
        """The backend holding dataset ``table`` (DuckDB unless registered with Spark)."""
        entry = engine(self.dataset_backend(table))
        if entry.in_store:
            return self.backend
        outside = self.external(entry.name)
        meta = self._catalogue[table]
        public = meta.get("public_tables")  # a list of names in the catalogue's JSON
        names = [str(t) for t in public] if isinstance(public, list) else []
        outside.attach(table, str(meta["bounded_path"]), public=names)
        return outside

    def open(self, engine: Backend | None = None) -> ReadConnection:
        """A read connection to ``engine`` (the store's DuckDB by default)."""
        if engine is not None and engine is not self.backend:
            con: ReadConnection = engine.connect(read_only=True)
            return con
        if not self.keep_open:
            return self.backend.connect(read_only=True)
        if self.kept is None:
            self.kept = self.backend.connect(read_only=True)
            self.backend.keep(self.kept)
        return self.kept

    def done(self, con: ReadConnection) -> None:
        """A connection's query is over (closed unless kept)."""
        if not self.keep_open:
            con.close()

    def discard(self, con: ReadConnection) -> None:
        """After a failure or an interrupt the connection is not reused."""
        if con is self.kept and con is not None:
            self.kept = None
        with contextlib.suppress(Exception):  # closing a broken connection: best effort
            con.close()

    def abandon(self, con: ReadConnection, job: Job[_T]) -> None:
        """Stop using ``con``: interrupt what runs on it and close it once that has ended."""
        if con is self.kept:
            self.kept = None
        if isinstance(con, _Interruptible):
            with contextlib.suppress(Exception):  # an interrupt of a finished statement: harmless
                con.interrupt()
        job.add_done_callback(lambda: self.discard(con))

    def check(self, priced: Priced, *, on_kept: bool) -> None:
        """The engine's data-free check of a priced query's statements, before any charge.

        ``on_kept``: check on the kept connection (a one-shot process, no second open). The
        check reads no data, so its outcome for these statements never changes: once passed
        on DuckDB, it is not run again for these statements (the same plan priced at another
        ε included).
        """
        plan, schema, unit_ok = priced.plan, priced.schema, priced.unit_rows_ok
        ms = tuple(p.measurement for p in priced.cost.parts)
        engine = self.engine(plan.table)
        if engine is not self.backend:
            engine.check(plan, schema, ms, unit_rows_ok=unit_ok)
        else:
            # By the statements' inputs (one plan serves the prices of its text at every ε);
            # an entry holds its plan and schema, so their ids are not reused while it lasts.
            key = (id(plan), id(schema), ms, unit_ok)
            hit = self._checked.get(key)
            if hit is not None and hit[0] is plan and hit[1] is schema:
                return
            con = self.kept if on_kept else None
            self.backend.check(plan, schema, ms, unit_rows_ok=unit_ok, con=con)
            if len(self._checked) >= REMEMBERED:
                self._checked.clear()
            self._checked[key] = (plan, schema)

    def close(self) -> None:
        """Close the kept connection (before this process writes to the store, or at the end)."""
        if self.kept is not None:
            self.kept.close()
            self.kept = None
