"""Registration never harms what is already registered, and is atomic: stored names that would
take another dataset's table are refused before anything is made, a refused or failed
registration removes only what it made, and a registration killed at any moment leaves the
ledger, the store's catalogue and its tables agreeing."""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tests.curator.test_populations import CLINIC, clinic_frames

from _stores import TEXT, floats, one_table
from infodp.cli import main
from infodp.curator.declaration.schema import stored_name
from infodp.curator.declaration.source import load_schema
from infodp.curator.engine import Curator
from infodp.curator.store.database import (
    NEW_TABLE_PREFIX,
    catalogue,
    store_tables,
    sweep_registrations,
)
from infodp.errors import ParameterError

VISITS = one_table("v", {"cost": floats(0, 9)})
ONE_TABLE = {"visits": {"columns": {"person_id": {"type": "text"}}}}
SMALL_POPULATION = {"privacy_unit": "person_id", "tables": ONE_TABLE}


def _visits_count(cur: Curator, table: str) -> int:
    """COUNT(*) of a registered table, answered through the DP path (charged to analyst a)."""
    result = cur.query("a", f"SELECT COUNT(*) FROM {table}", epsilon="0.25")
    assert len(result.rows) == 1  # an answer, not a failure
    return int(cur.exact_aggregates(f"SELECT COUNT(*) FROM {table}").values[()][0])


@pytest.mark.slow
def test_a_dataset_named_like_a_population_table_is_refused_and_harms_nothing(
    tmp_path: Path,
) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    cur.register_dataset("clinic", clinic_frames(), CLINIC)
    cur.add_analyst("a", "clinic", epsilon=10)
    with pytest.raises(ParameterError, match=r"clinic__visits .*dataset clinic"):
        cur.register_dataset("clinic__visits", pd.DataFrame({"cost": [1.0, 2.0]}), VISITS)
    assert _visits_count(cur, "clinic.visits") == len(clinic_frames()["visits"])
    assert [d.name for d in cur.ledger.datasets()] == ["clinic"]


@pytest.mark.slow
def test_a_population_whose_table_would_take_a_dataset_name_is_refused(tmp_path: Path) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    cur.register_dataset("clinic__visits", pd.DataFrame({"cost": [1.0, 2.0, 3.0]}), VISITS)
    cur.add_analyst("a", "clinic__visits", epsilon=10)
    frames = {"visits": clinic_frames()["visits"][["person_id"]]}
    with pytest.raises(ParameterError, match=r"clinic__visits .*dataset clinic__visits"):
        cur.register_dataset("clinic", frames, SMALL_POPULATION)
    assert _visits_count(cur, "clinic__visits") == 3
    assert [d.name for d in cur.ledger.datasets()] == ["clinic__visits"]


@pytest.mark.slow
def test_a_name_of_the_stores_own_tables_is_refused_and_they_stay(tmp_path: Path) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    cur.register_dataset("t", pd.DataFrame({"cost": [1.0]}), VISITS)
    with pytest.raises(ParameterError, match="_infodp_datasets"):
        cur.register_dataset("_infodp_datasets", pd.DataFrame({"cost": [2.0]}), VISITS)
    cur.close()
    again = Curator(tmp_path / "s.duckdb")
    again.add_analyst("a", "t", epsilon=1)
    assert _visits_count(again, "t") == 1


@pytest.mark.slow
def test_a_failed_registration_removes_only_its_own_tables(tmp_path: Path) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    cur.register_dataset("clinic", clinic_frames(), CLINIC)
    frames = clinic_frames(seed=3)
    frames["visits"]["cost"] = None  # refused after the people were copied
    with pytest.raises(ParameterError, match="cost"):
        cur.register_dataset("trial", frames, CLINIC)
    con = cur.backend.connect(read_only=True)
    try:
        rows = con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        names = {r[0] for r in rows}
    finally:
        con.close()
    assert {stored_name("clinic", t) for t in ("people", "visits", "regions")} <= names
    assert not [n for n in names if n.startswith(("trial", "_infodp_new_"))]
    cur.register_dataset("trial", clinic_frames(seed=3), CLINIC, independent=True)  # name free


@pytest.mark.slow
@pytest.mark.parametrize("population_first", [True, False])
def test_the_cli_refuses_a_colliding_name_and_the_earlier_dataset_still_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], population_first: bool
) -> None:
    db = str(tmp_path / "s.duckdb")
    (tmp_path / "clinic.yaml").write_text(json.dumps(SMALL_POPULATION))
    (tmp_path / "visits.yaml").write_text(json.dumps(VISITS))
    clinic_frames()["visits"][["person_id"]].to_csv(tmp_path / "people.csv", index=False)
    pd.DataFrame({"cost": [1.0, 2.0, 3.0]}).to_csv(tmp_path / "costs.csv", index=False)
    population = ["--name", "clinic", "--schema", str(tmp_path / "clinic.yaml")]
    population += ["--source", f"visits={tmp_path / 'people.csv'}"]
    single = ["--name", "clinic__visits", "--schema", str(tmp_path / "visits.yaml")]
    single += ["--source", str(tmp_path / "costs.csv")]
    first, second = (population, single) if population_first else (single, population)
    assert main(["dataset", "register", "--db", db, *first]) == 0
    capsys.readouterr()
    table = "clinic.visits" if population_first else "clinic__visits"
    before = Curator(db)
    expected = before.exact_aggregates(f"SELECT COUNT(*) FROM {table}").values[()][0]
    before.close()
    assert main(["dataset", "register", "--db", db, *second]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "clinic__visits" in err
    cur = Curator(db)
    dataset = "clinic" if population_first else "clinic__visits"
    cur.add_analyst("a", dataset, epsilon=1)
    assert _visits_count(cur, table) == expected


# -- killed at any moment -----------------------------------------------------------------------

KILLED = one_table("big", {"pid": TEXT, "x": floats(0, 100)}, unit="pid", max_rows_per_unit=3)

REGISTER = textwrap.dedent(
    """
    import sys, json
    from infodp.curator.engine import Curator
    cur = Curator(sys.argv[1])
    cur.register_dataset("big", sys.argv[2], json.loads(sys.argv[3]))
    print("REGISTERED")
    """
)


def _register_in_child(db: Path, source: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", REGISTER, str(db), str(source), json.dumps(KILLED)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _agreement(db: Path) -> set[str]:
    """The datasets the ledger, the store's catalogue and its tables all hold (asserting that
    they agree and no temporary table is left); after a sweep."""
    cur = Curator(db)
    try:
        sweep_registrations(cur.backend, cur.ledger)
        in_ledger = {d.name for d in cur.ledger.datasets()}
        con = cur.backend.connect(read_only=True)
        try:
            records = catalogue(cur.backend, con)
            tables = set(store_tables(con))
        finally:
            con.close()
        assert not [n for n, m in records.items() if "pending" in m]
        assert set(records) == in_ledger
        assert not [t for t in tables if t.startswith(NEW_TABLE_PREFIX)]
        assert tables - {"_infodp_store", "_infodp_datasets", "_infodp_settings"} == in_ledger
        return in_ledger
    finally:
        cur.close()


@pytest.mark.slow
def test_a_registration_killed_at_any_moment_leaves_the_store_agreeing(tmp_path: Path) -> None:
    n = 600_000
    rng = np.random.default_rng(0)
    source = tmp_path / "big.parquet"
    pd.DataFrame(
        {"pid": [f"p{i}" for i in rng.integers(0, n // 2, n)], "x": rng.uniform(0, 100, n)}
    ).to_parquet(source)
    small = pd.DataFrame({"cost": [1.0, 2.0, 3.0]})
    # Every case starts from a copy of one store holding "small" (copying both files costs
    # far less than registering it again: the store and its ledger keep their one store id).
    prepared = tmp_path / "prepared" / "s.duckdb"
    prepared.parent.mkdir()
    cur = Curator(prepared)
    cur.register_dataset("small", small, VISITS)
    cur.close()

    def _store(name: str) -> Path:
        shutil.copytree(prepared.parent, tmp_path / name)
        return tmp_path / name / "s.duckdb"

    # How long a whole registration takes in a child (start-up included): the kills fall in it.
    timed = _store("timed")
    start = time.monotonic()
    child = _register_in_child(timed, source)
    out, err = child.communicate(timeout=300)
    assert "REGISTERED" in out, err
    took = time.monotonic() - start
    delays = sorted(random.Random(1).uniform(0.3 * took, 1.05 * took) for _ in range(10))
    outcomes = []
    for i, delay in enumerate(delays):
        db = _store(f"k{i}")
        child = _register_in_child(db, source)
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)
        registered = _agreement(db)
        assert "small" in registered
        outcomes.append("big" in registered)
        cur = Curator(db)
        if "big" not in registered:
            cur.register_dataset("big", source, KILLED)  # a retry succeeds
        else:
            with pytest.raises(ParameterError, match="not registered yet"):
                cur.register_dataset("big", source, KILLED)
        cur.add_analyst("a", "big", epsilon=1)
        cur.add_analyst("b", "small", epsilon=1)
        assert len(cur.query("a", "SELECT COUNT(*) FROM big", epsilon="0.25").rows) == 1
        assert len(cur.query("b", "SELECT COUNT(*) FROM small", epsilon="0.25").rows) == 1
        cur.close()
        assert _agreement(db) == {"small", "big"}
    assert False in outcomes  # some kills fell inside the registration


# -- malformed sources and schemas ----------------------------------------------------------------

SECRET = "s3cr3t-value"


def _malformed(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / ("src.parquet" if kind == "truncated" else "src.csv")
    if kind == "truncated":
        pd.DataFrame({"cost": [1.0] * 1000}).to_parquet(path)
        path.write_bytes(path.read_bytes()[:300])
    elif kind == "undecodable":
        path.write_bytes(b"cost\n1.0\n\xff\xfe" + SECRET.encode() + b"\n")
    elif kind == "missing":
        pass
    return path


@pytest.mark.parametrize("kind", ["truncated", "undecodable", "missing"])
def test_a_malformed_source_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    source = _malformed(tmp_path, kind)
    (tmp_path / "v.json").write_text(json.dumps(VISITS))
    db = str(tmp_path / "s.duckdb")
    args = ["dataset", "register", "--db", db, "--name", "v", "--schema"]
    assert main([*args, str(tmp_path / "v.json"), "--source", str(source)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"got {str(source)[:30]!r}"[:-1] in err and "source must be" in err and SECRET not in err


def test_the_demo_refuses_a_file_that_is_not_a_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "passwd"
    other.write_text("root:x:0:0:root:/root:/bin/bash\n")
    assert main(["demo", "--db", str(other)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--db must be" in err and str(other)[:40] in err
    assert "root:x" not in err and other.read_text().startswith("root:x")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (
            "privacy_unit: p\ntables:\n  visits: {columns: {p: {type: text}}}\n"
            "  visits: {columns: {p: {type: int}}}\n",
            "visits",
        ),
        ("table: t\nprivacy_unit: row\ncolumns:\n  x: {type: int}\n  x: {type: text}\n", "x"),
    ],
)
def test_a_key_given_twice_in_a_schema_is_refused_naming_it(text: str, key: str) -> None:
    with pytest.raises(ParameterError, match=f"each key once.*got '{key}'"):
        load_schema(text)


@pytest.mark.slow
@pytest.mark.parametrize("bad", [float("inf"), float("-inf")])
def test_a_non_finite_public_value_is_refused_naming_its_column(tmp_path: Path, bad: float) -> None:
    frames = clinic_frames()
    frames["regions"].loc[0, "weight"] = bad
    cur = Curator(tmp_path / "s.duckdb")
    with pytest.raises(ParameterError, match=r"'weight' of public table 'regions'"):
        cur.register_dataset("clinic", frames, CLINIC)
    cur.register_dataset("clinic", clinic_frames(), CLINIC)  # nothing was left behind
