"""The privacy unit's id column and NULL: refused by default (the message names the policy to
declare), left out under ``nulls: drop`` with their number told to the owner; replacing an id
is refused. Oracles: the frame's own NULL count and plain DuckDB on its rows with an id."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _stores import ints, one_table
from infodp.curator.declaration.source import load_schema
from infodp.curator.engine import Curator
from infodp.errors import ParameterError

REFUSED = (
    "privacy_unit column 'pid' holds NULL values; every row must belong to an individual. "
    "Declare the id column's null policy 'nulls: drop' (columns: pid: {type: ..., nulls: "
    "drop}) to leave the rows without an id out at registration (their number is reported), "
    "or give every row an id."
)


def _schema(id_nulls: object = None) -> dict[str, object]:
    pid: dict[str, object] = {"type": "text"}
    if id_nulls is not None:
        pid["nulls"] = id_nulls
    return one_table("t", {"pid": pid, "x": ints(0, 10)}, unit="pid", max_rows_per_unit=2)


def _frame(n: int = 300, missing: int = 17, draw: int = 5) -> pd.DataFrame:
    """Ids of at most two rows each, ``missing`` of them NULL (and those rows hold x = 10)."""
    rng = np.random.default_rng(draw)
    pid = pd.Series([f"p{i // 2}" for i in range(n)], dtype=object)
    gone = rng.choice(n, missing, replace=False)
    pid[gone] = None
    x = rng.integers(0, 10, n)
    x[gone] = 10
    return pd.DataFrame({"pid": pid, "x": x})


def test_rows_without_an_id_are_dropped_and_counted(tmp_path: Path) -> None:
    frame = _frame()
    cur = Curator(tmp_path / "s.duckdb")
    try:
        shown = cur.register_dataset("t", frame, _schema("drop"))
        kept = frame[frame["pid"].notna()]
        assert shown["null_ids_dropped"] == int(frame["pid"].isna().sum()) == 17
        assert shown["rows"] == len(kept)
        assert shown["schema"]["columns"]["pid"] == {"type": "text", "nulls": "drop"}
        got = cur.exact_aggregates("SELECT COUNT(*), SUM(x) FROM t").values
        assert got == {(): (len(kept), int(kept["x"].sum()))}  # no x = 10 of a NULL id
    finally:
        cur.close()


def test_a_null_id_is_refused_by_default_naming_the_policy(tmp_path: Path) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    try:
        with pytest.raises(ParameterError) as err:
            cur.register_dataset("t", _frame(), _schema())
        assert cur.ledger.datasets() == []
        assert str(err.value) == REFUSED
        # An undeclared id column is refused the same way.
        undeclared = _schema()
        del undeclared["columns"]["pid"]  # type: ignore[attr-defined]
        with pytest.raises(ParameterError) as err:
            cur.register_dataset("t", _frame(), undeclared)
        assert str(err.value) == REFUSED
    finally:
        cur.close()


def test_without_a_null_id_nothing_is_dropped(tmp_path: Path) -> None:
    frame = _frame(missing=0)
    cur = Curator(tmp_path / "s.duckdb")
    try:
        shown = cur.register_dataset("t", frame, _schema("drop"))
    finally:
        cur.close()
    assert (shown["null_ids_dropped"], shown["rows"]) == (0, len(frame))


def test_replacing_an_id_is_refused() -> None:
    with pytest.raises(ParameterError) as err:
        load_schema(_schema({"replace": "nobody"}))
    assert str(err.value) == (
        "columns.pid.nulls must be 'error' (the default: a NULL id refuses the registration) "
        "or 'drop' (rows without an id are left out at registration) for the privacy unit's "
        "id column: a replaced id would make one individual of everyone without an id; got "
        "{'replace': 'nobody'}."
    )


@pytest.mark.slow
def test_a_populations_tables_drop_their_own_null_ids(tmp_path: Path) -> None:
    a, b = _frame(draw=1), _frame(missing=4, draw=2)
    member = {k: v for k, v in _schema("drop").items() if k not in ("table", "privacy_unit")}
    decl = {"privacy_unit": "pid", "tables": {"a": member, "b": member}}
    cur = Curator(tmp_path / "s.duckdb")
    try:
        shown = cur.register_dataset("pop", {"a": a, "b": b}, decl)
    finally:
        cur.close()
    assert shown["null_ids_dropped"] == 17 + 4
    assert shown["rows"] == len(a) + len(b) - 21


@pytest.mark.spark
@pytest.mark.usefixtures("spark")  # the process's one session (tests/_spark.py)
def test_spark_drops_and_refuses_null_ids_as_duckdb_does(tmp_path: Path) -> None:
    frame = _frame()
    frame.to_parquet(tmp_path / "t.parquet")
    cur = Curator(tmp_path / "s.duckdb")
    try:
        with pytest.raises(ParameterError) as err:
            cur.register_dataset("t", str(tmp_path / "t.parquet"), _schema(), backend="spark")
        assert str(err.value) == REFUSED
        shown = cur.register_dataset(
            "t2", str(tmp_path / "t.parquet"), _schema("drop"), backend="spark"
        )
        kept = frame[frame["pid"].notna()]
        assert (shown["null_ids_dropped"], shown["rows"]) == (17, len(kept))
        got = cur.exact_aggregates("SELECT COUNT(*), SUM(x) FROM t2").values
        assert got == {(): (len(kept), int(kept["x"].sum()))}
    finally:
        cur.close()
