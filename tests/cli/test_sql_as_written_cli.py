"""``infodp query`` reads a single-table dataset as ``dataset.table`` and T-SQL's TOP, as the
library does (infodp.curator.relations.datasets, infodp.curator.sql.dialect)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from _cli_store import RegisterStore
from infodp.cli import main


@pytest.mark.slow
def test_dataset_dot_table_and_top_on_the_command_line(
    capsys: pytest.CaptureFixture[str], registered_store: RegisterStore
) -> None:
    store = registered_store(analysts={"A": ["--epsilon", "10"]})
    people = pd.read_csv(store.source)
    ask = ["query", "--db", store.db, "--analyst", "A", "--epsilon", "1", "--json"]
    for sql in ("SELECT COUNT(*) FROM people.people", "SELECT COUNT(*) FROM PEOPLE.People"):
        code = main([*ask, sql])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert json.loads(out)["rows"][0][0] == pytest.approx(len(people), abs=30)
    code = main([*ask, "SELECT TOP 2 region, COUNT(*) FROM people GROUP BY region ORDER BY region"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert [r[0] for r in rows] == sorted(people["region"].unique())[:2]
    code = main([*ask, "SELECT COUNT(*) FROM people.peeple"])
    _, err = capsys.readouterr()
    assert code != 0
    assert "unknown table 'people.peeple'; dataset 'people' is one table, read as people" in err
