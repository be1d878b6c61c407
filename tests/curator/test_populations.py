"""Populations of several tables under one privacy unit: the declaration, registration through
the library, the CLI and a Session, and which dataset a query reads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import infodp
from infodp.cli import main
from infodp.curator.declaration.schema import DatasetSchema, stored_name
from infodp.curator.declaration.source import load_schema
from infodp.curator.engine import Curator
from infodp.curator.request import NoBudget
from infodp.errors import ParameterError

CLINIC = """
privacy_unit: person_id
tables:
  people:  {max_rows_per_unit: 1,  columns: {person_id: {type: text}, age: {type: int, bounds: [0, 120]}, region: {type: text}}}
  visits:  {max_rows_per_unit: 20, columns: {person_id: {type: text}, cost: {type: float, bounds: [0, 5000]}}}
  regions: {public: true, columns: {region: {type: text}, country: {type: text}, weight: {type: float}}}
"""  # noqa: E501


def clinic_frames(n: int = 300, seed: int = 0) -> dict[str, pd.DataFrame]:
    """People, their visits (0 to 5 each) and a public table of regions (one region twice)."""
    rng = np.random.default_rng(seed)
    ids = [f"p{i}" for i in range(n)]
    people = pd.DataFrame(
        {"person_id": ids, "age": rng.integers(0, 100, n), "region": rng.choice(["n", "s", "e"], n)}
    )
    per = rng.integers(0, 6, n)
    visits = pd.DataFrame(
        {"person_id": np.repeat(ids, per), "cost": rng.uniform(0, 900, int(per.sum())).round(2)}
    )
    regions = pd.DataFrame(
        {
            "region": ["n", "s", "e", "e"],
            "country": ["X", "Y", "Y", "Z"],
            "weight": [0.5, 1.5, 2.0, 2.5],
        }
    )
    return {"people": people, "visits": visits, "regions": regions}


@pytest.fixture
def clinic(tmp_path: Path) -> Curator:
    cur = Curator(tmp_path / "s.duckdb")
    cur.register_dataset("clinic", clinic_frames(), CLINIC)
    return cur


# -- the declaration ------------------------------------------------------------------------


def test_a_population_reads_back_from_its_stored_json() -> None:
    s = load_schema(CLINIC)
    back = DatasetSchema.from_dict(json.loads(s.to_json()))
    assert back.to_json() == s.to_json()
    assert [m.table for m in s.members] == ["people", "visits", "regions"]
    assert s.member("visits").max_rows_per_unit == 20
    assert s.member("regions").public


@pytest.mark.parametrize(
    ("tables", "named"),
    [
        ({"v": {"columns": {"cost": {"type": "float", "bounds": [0, 1]}}}}, "tables.v.columns"),
        ({"r": {"public": True, "columns": {"x": {"type": "text"}}}}, "tables"),
        ({"v": {"table": "v", "columns": {"pid": {"type": "text"}}}}, "tables.v.table"),
        ({"v": {"public": "yes", "columns": {"pid": {"type": "text"}}}}, "tables.v.public"),
        ({"r": {"public": True, "max_rows_per_unit": 2, "columns": {}}}, "tables.r"),
        ({}, "tables"),
    ],
)
def test_a_bad_population_is_refused_naming_the_key(tables: object, named: str) -> None:
    with pytest.raises(ParameterError) as err:
        load_schema({"privacy_unit": "pid", "tables": tables})
    assert str(err.value).startswith(named)


# -- registration -----------------------------------------------------------------------------


@pytest.mark.slow
def test_each_table_is_stored_and_the_public_facts_are_measured_on_the_public_rows(
    clinic: Curator,
) -> None:
    frames = clinic_frames()
    regions = clinic.schema("clinic").member("regions")
    # Independent of the store: the facts computed by pandas on the public frame.
    pub = frames["regions"]
    assert regions.public_rows == len(pub)
    for col in regions.columns:
        assert col.multiplicity == int(pub[col.name].value_counts().max())
    assert regions.column("region").categories == tuple(sorted(pub["region"].unique()))
    assert regions.column("weight").bounds == (pub["weight"].min(), pub["weight"].max())
    con = clinic.backend.connect(read_only=True)
    try:
        for table, frame in frames.items():
            got = con.execute(f'SELECT count(*) FROM "{stored_name("clinic", table)}"').fetchone()
            assert got == (len(frame),)
    finally:
        con.close()


def test_sources_must_name_each_table_once(tmp_path: Path) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    frames = clinic_frames()
    for bad in ({"people": frames["people"]}, {**frames, "extra": frames["people"]}, "x.csv"):
        with pytest.raises(ParameterError, match="each table of the population"):
            cur.register_dataset("clinic", bad, CLINIC)
    assert cur.ledger.datasets() == []


@pytest.mark.slow
def test_a_failed_registration_leaves_no_table_behind(tmp_path: Path) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    frames = clinic_frames()
    frames["visits"] = frames["visits"].drop(columns=["cost"])  # the second table fails
    with pytest.raises(ParameterError, match="'cost' is not in the source"):
        cur.register_dataset("clinic", frames, CLINIC)
    con = cur.backend.connect(read_only=True)
    try:
        left = con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'clinic%'"
        ).fetchall()
    finally:
        con.close()
    assert left == []
    cur.register_dataset("clinic", clinic_frames(), CLINIC)  # the name is free again


@pytest.mark.slow
def test_the_same_private_tables_are_refused_as_a_copy(clinic: Curator) -> None:
    frames = clinic_frames()
    frames["regions"] = frames["regions"].iloc[:2]  # another public table: the same people
    with pytest.raises(ParameterError, match="clinic"):
        clinic.register_dataset("clinic2", frames, CLINIC)


# -- which dataset a query reads -------------------------------------------------------------


@pytest.mark.slow
def test_a_population_is_read_by_its_tables_names_or_qualified(clinic: Curator) -> None:
    bare = clinic.exact_aggregates("SELECT COUNT(*) FROM visits")
    qualified = clinic.exact_aggregates("SELECT COUNT(*) FROM clinic.visits")
    assert bare.values == qualified.values == {(): (len(clinic_frames()["visits"]),)}


@pytest.mark.slow
def test_a_table_in_two_populations_must_be_qualified(clinic: Curator) -> None:
    # The clinic's ids p0...: another population, declared so.
    clinic.register_dataset("trial", clinic_frames(seed=1), CLINIC, independent=True)
    with pytest.raises(ParameterError, match=r"several datasets .*as in clinic\.visits"):
        clinic.exact_aggregates("SELECT COUNT(*) FROM visits")
    n = clinic.exact_aggregates("SELECT COUNT(*) FROM trial.visits").values[()][0]
    assert n == len(clinic_frames(seed=1)["visits"])


@pytest.mark.slow
def test_unknown_tables_are_refused(clinic: Curator) -> None:
    with pytest.raises(ParameterError, match="unknown dataset 'nothing'"):
        clinic.exact_aggregates("SELECT COUNT(*) FROM nothing")
    with pytest.raises(ParameterError, match=r"unknown table 'clinic\.nothing'"):
        clinic.exact_aggregates("SELECT COUNT(*) FROM clinic.nothing")
    with pytest.raises(ParameterError, match="one of the population's tables"):
        clinic.exact_aggregates("SELECT COUNT(*) FROM clinic")


@pytest.mark.slow
def test_an_analyst_without_a_budget_there_is_told_the_same_whether_it_exists(
    clinic: Curator,
) -> None:
    clinic.register_dataset(
        "other",
        clinic_frames(seed=2)["people"],
        dict(load_schema(CLINIC).member("people").to_dict(), table="other"),
        independent=True,  # the clinic's ids p0...: another population only if declared so
    )
    clinic.add_analyst("ana", "other", epsilon=1)
    for sql in ("SELECT COUNT(*) FROM visits", "SELECT COUNT(*) FROM nowhere"):
        with pytest.raises(NoBudget):
            clinic.budget_for("ana", sql)
    clinic.add_analyst("ana", "clinic", epsilon=1)
    assert clinic.budget_for("ana", "SELECT COUNT(*) FROM visits").dataset == "clinic"


# -- the CLI and a Session ----------------------------------------------------------------------


@pytest.mark.slow
def test_the_cli_registers_a_population_from_one_source_per_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "clinic.yaml").write_text(CLINIC)
    args = []
    for table, frame in clinic_frames().items():
        frame.to_csv(tmp_path / f"{table}.csv", index=False)
        args += ["--source", f"{table}={tmp_path / f'{table}.csv'}"]
    db = str(tmp_path / "s.duckdb")
    register = ["dataset", "register", "--db", db, "--schema", str(tmp_path / "clinic.yaml")]
    assert main([*register, "--name", "clinic", *args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["schema"]["tables"]) == {"people", "visits", "regions"}
    assert out["rows"] == sum(len(clinic_frames()[t]) for t in ("people", "visits"))
    bad = main([*register, "--name", "c2", "--source", "people", "--source", "visits=v.csv"])
    assert bad != 0 and "TABLE=PATH" in capsys.readouterr().err


@pytest.mark.slow
def test_a_session_over_a_population_resumes_only_with_the_same_tables(tmp_path: Path) -> None:
    ledger = tmp_path / "l.sqlite"
    frames = clinic_frames()
    s = infodp.Session(frames, CLINIC, epsilon=2, ledger=ledger, name="clinic")
    s.query("SELECT COUNT(*) FROM people", epsilon=1)
    s.close()
    again = infodp.Session(frames, CLINIC, epsilon=2, ledger=ledger, name="clinic")
    assert again.remaining_epsilon == 1
    again.close()
    changed = {**frames, "visits": frames["visits"].iloc[1:]}
    with pytest.raises(ParameterError, match="data recorded in the ledger"):
        infodp.Session(changed, CLINIC, epsilon=2, ledger=ledger, name="clinic")
    other_public = {**frames, "regions": frames["regions"].iloc[:3]}
    with pytest.raises(ParameterError, match="schema recorded in the ledger"):
        infodp.Session(other_public, CLINIC, epsilon=2, ledger=ledger, name="clinic")


@pytest.mark.slow
def test_a_synopsis_of_a_population_is_refused_for_free_naming_its_tables(
    clinic: Curator,
) -> None:
    clinic.add_analyst("ana", "clinic", epsilon=1)
    with pytest.raises(ParameterError, match=r"single-table dataset .*people, regions, visits"):
        clinic.release_synopsis("ana", "s", "clinic", ["kind"], epsilon="0.1")
    assert clinic.ledger.budget("ana", "clinic").spent_epsilon == 0
