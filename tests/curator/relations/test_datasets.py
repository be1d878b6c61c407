"""Which dataset a query reads, by the names it writes (infodp.curator.relations.datasets), through
a
curator holding a single-table dataset and a population that share a table's name."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from _stores import ints, one_table, population, private
from infodp.curator.engine import Curator
from infodp.curator.relations.datasets import find_dataset
from infodp.errors import ParameterError

PEOPLE = one_table("people", {"age": ints(0, 100)})
PID = {"type": "int"}
CLINIC = population(
    "pid",
    {
        "people": private(1, pid=PID, age=ints(0, 100)),
        "visits": private(3, pid=PID, cost=ints(0, 50)),
    },
)


def _frames() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(4242)
    people = pd.DataFrame({"age": rng.integers(0, 100, 500)})
    members = pd.DataFrame({"pid": np.arange(300), "age": rng.integers(0, 100, 300)})
    visits = pd.DataFrame({"pid": np.repeat(np.arange(300), 2), "cost": rng.integers(0, 50, 600)})
    return people, members, visits


@pytest.fixture(scope="module")
def curator(tmp_path_factory: pytest.TempPathFactory) -> Curator:
    people, members, visits = _frames()
    cur = Curator(tmp_path_factory.mktemp("names") / "s.duckdb")
    cur.register_dataset("people", people, PEOPLE, independent=True)
    cur.register_dataset("clinic", {"people": members, "visits": visits}, CLINIC, independent=True)
    cur.add_analyst("a", "people", epsilon=10**6)
    cur.add_analyst("a", "clinic", epsilon=10**6)
    return cur


def test_a_single_table_dataset_is_also_dataset_dot_table() -> None:
    tables = {"PUMS": (), "clinic": ("people", "visits")}
    for name in ("PUMS.PUMS", "pums.pums", "PUMS", "pums"):
        assert find_dataset((name,), tables) == "PUMS"
    with pytest.raises(KeyError):
        find_dataset(("PUMS.other",), tables)


def test_the_other_tables_settle_a_shared_name() -> None:
    tables = {"people": (), "clinic": ("people", "visits")}
    assert find_dataset(("people",), tables) == "people"  # its own name comes first
    assert find_dataset(("people", "visits"), tables) == "clinic"
    assert find_dataset(("clinic.people", "visits"), tables) == "clinic"


def test_tables_of_two_datasets_say_how_to_qualify() -> None:
    tables = {"people": (), "clinic": ("visits",), "trial": ("visits", "arms")}
    with pytest.raises(ParameterError) as err:
        find_dataset(("people", "arms"), tables)
    text = str(err.value)
    assert "tables of one dataset" in text and "query each separately" in text
    assert "qualify a population's table as population.table, as in trial.arms" in text


@pytest.mark.slow
def test_a_join_of_the_population_is_answered(curator: Curator) -> None:
    """FROM people JOIN visits reads clinic (people alone is also a dataset's name)."""
    sql = "SELECT COUNT(*) AS n, SUM(cost) AS s FROM people JOIN visits USING (pid)"
    r = curator.query("a", sql, epsilon=1000)
    _, members, visits = _frames()
    con = duckdb.connect()
    con.register("people", members)
    con.register("visits", visits)
    n, s = con.execute(sql).fetchone()
    assert r.rows[0][0] == pytest.approx(n, abs=5)
    assert r.rows[0][1] == pytest.approx(s, rel=0.01)


def test_parenthesised_joins_mean_the_join(curator: Curator) -> None:
    plain = "SELECT SUM(cost) FROM clinic.people JOIN clinic.visits USING (pid)"
    forms = [
        "SELECT SUM(cost) FROM (clinic.people JOIN clinic.visits USING (pid))",
        "SELECT SUM(cost) FROM (clinic.people JOIN clinic.visits USING (pid)) AS q",
        "SELECT SUM(q.cost) FROM (SELECT * FROM (people JOIN visits USING (pid)) AS j) AS q",
        "SELECT SUM(v.cost) FROM (clinic.visits) AS v JOIN people USING (pid)",
    ]
    want = curator.exact_aggregates(plain)
    for sql in forms:
        assert curator.exact_aggregates(sql) == want, sql
        curator.query("a", sql, epsilon=1)


def test_a_single_table_dataset_by_its_qualified_name(curator: Curator) -> None:
    r = curator.query("a", "SELECT COUNT(*) FROM people.people", epsilon=1000)
    people, _, _ = _frames()
    assert r.rows[0][0] == pytest.approx(len(people), abs=5)
    r = curator.query("a", "SELECT AVG(age) FROM PEOPLE.People", epsilon=1000)
    assert r.rows[0][0] == pytest.approx(people["age"].mean(), rel=0.02)


def test_an_unknown_table_of_a_known_dataset_names_its_tables(curator: Curator) -> None:
    with pytest.raises(ParameterError) as err:
        curator.query("a", "SELECT COUNT(*) FROM clinic.nothing", epsilon=1)
    assert "unknown table 'clinic.nothing'; clinic's tables: people, visits." in str(err.value)
    with pytest.raises(ParameterError) as err:
        curator.query("a", "SELECT COUNT(*) FROM people.nothing", epsilon=1)
    text = str(err.value)
    assert "unknown table 'people.nothing'; dataset 'people' is one table, read as people" in text


def test_unknown_names_in_a_session_name_its_table(tmp_path: Path) -> None:
    from infodp import Session

    people, members, visits = _frames()
    s = Session(people, PEOPLE, epsilon=1)
    with pytest.raises(ParameterError, match="unknown table 'peple'; the session's table is "):
        s.query("SELECT COUNT(*) FROM peple", epsilon=0.1)
    with pytest.raises(ParameterError, match="unknown table 'peple'; the session's table is "):
        s.estimate("SELECT COUNT(*) FROM peple", epsilon=0.1)
    assert s.remaining_epsilon == 1
    p = Session({"people": members, "visits": visits}, dict(CLINIC, table="clinic"), epsilon=1)
    with pytest.raises(ParameterError) as err:
        p.query("SELECT COUNT(*) FROM vists", epsilon=0.1)
    assert "unknown table 'vists'; the session's tables: people, visits" in str(err.value)
