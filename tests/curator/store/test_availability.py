"""A server that cannot open a registered dataset says so (infodp.curator.store.availability).

The oracle is the store as DuckDB itself sees it: a table dropped behind the store's back,
and a Spark dataset whose Parquet copy is on no path of this host.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from _asgi import call
from _stores import ints, one_table
from infodp.curator.backends.duckdb import DuckDBBackend
from infodp.curator.engine import Curator
from infodp.curator.store.availability import unopenable
from infodp.curator.store.database import record_dataset

SCHEMA = one_table("t", {"x": ints(0, 9)})


def _store(tmp_path: Path) -> Path:
    db = tmp_path / "s.duckdb"
    cur = Curator(db)
    for name, xs in (("kept", [1, 2, 3]), ("gone", [4, 5])):
        cur.register_dataset(name, pd.DataFrame({"x": xs}), {**SCHEMA, "table": name})
    cur.close()
    return db


@pytest.mark.slow
def test_a_store_whose_datasets_all_open_reports_nothing(tmp_path: Path) -> None:
    assert unopenable(_store(tmp_path)) == {}


@pytest.mark.slow
def test_missing_tables_and_parquet_copies_are_named_with_the_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = _store(tmp_path)
    with contextlib.closing(duckdb.connect(str(db))) as con:
        con.execute("DROP TABLE gone")  # this host's copy of the store lacks it
    where = tmp_path / "not-mounted" / "sp"
    record_dataset(DuckDBBackend(db), "sp", {"backend": "spark", "bounded_path": str(where)})
    expected = {
        "gone": "the store lacks its table(s) gone",
        "sp": f"its Parquet copy {where} is not on this host",
    }
    assert unopenable(db) == expected

    from infodp.server.app import ServerSettings, create_app

    with caplog.at_level(logging.WARNING, logger="infodp.server"):
        app = create_app(ServerSettings(str(db)))
    try:
        assert "dataset gone cannot be opened on this server: the store lacks" in caplog.text
        r = call(app, "GET", "/v1/health")
        assert r.status_code == 200 and r.json()["unavailable_datasets"] == expected
    finally:
        app.state.service.close()
