"""Which registered datasets this process cannot open (a fleet server's check at start).

In a fleet every server answers from the same registered data: the DuckDB store on shared
storage (each server opens it read-only), or the Parquet copies the Spark backend wrote at
registration. A server that cannot open one of them — a store copy that lacks its tables,
a Parquet directory not mounted on this host — says so at start (its log and
``/v1/health``), instead of failing each query on it.

>>> import tempfile, os
>>> from infodp.curator.backends.duckdb import DuckDBBackend
>>> from infodp.curator.store.database import record_dataset
>>> db = os.path.join(tempfile.mkdtemp(), "s.duckdb")
>>> record_dataset(DuckDBBackend(db), "t", {"backend": "spark", "bounded_path": "/nowhere/t"})
>>> unopenable(db)
{'t': 'its Parquet copy /nowhere/t is not on this host'}
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from infodp._engines import DEFAULT, engine
from infodp.curator.backends.duckdb import DuckDBBackend
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.store.database import catalogue, store_tables
from infodp.curator.store.registration import stored_tables

__all__ = ["unopenable"]


def unopenable(db: str | os.PathLike[str]) -> dict[str, str]:
    """Dataset name → why this process cannot open it (empty when it can open them all)."""
    backend = DuckDBBackend(Path(db))
    with contextlib.closing(backend.connect(read_only=True)) as con:
        records = catalogue(backend, con)
        tables = {t.lower() for t in store_tables(con)}
    problems: dict[str, str] = {}
    for name, meta in sorted(records.items()):
        if meta.get("pending"):
            continue  # a registration under way (or undone at the next sweep)
        if not engine(str(meta.get("backend", DEFAULT.name))).in_store:
            where = str(meta.get("bounded_path", ""))
            local = where.removeprefix("file://")
            if "://" not in local and not Path(local).exists():
                problems[name] = f"its Parquet copy {where} is not on this host"
            continue
        schema_json = meta.get("schema_json")
        if not isinstance(schema_json, str):
            continue
        declared = DatasetSchema.from_dict(json.loads(schema_json))
        missing = [t for t in stored_tables(name, declared) if t.lower() not in tables]
        if missing:
            problems[name] = f"the store lacks its table(s) {', '.join(missing)}"
    return problems
