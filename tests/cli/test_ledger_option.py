"""``--ledger URL`` on the commands that open a store: a new store starts on PostgreSQL and
remembers it; every later command (and server) finds it without being told.

The oracle is PostgreSQL itself (the rows read with psycopg) and the absence of a SQLite
ledger file beside the store.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from _cli_store import PeopleFiles
from infodp.cli import main
from infodp.curator.store.ledger_location import LEDGER_ENV

pytestmark = pytest.mark.postgres


def test_a_store_started_with_ledger_url_keeps_using_it(
    capsys: pytest.CaptureFixture[str],
    people_files: PeopleFiles,
    pg_cluster: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import psycopg

    # --ledger sets it for this process (and its children): restored afterwards.
    monkeypatch.setenv(LEDGER_ENV, "")
    url = pg_cluster.new_schema()
    db = people_files.db
    files = ["--source", people_files.source, "--schema", people_files.schema]
    register = ["dataset", "register", "--db", db, "--ledger", url, "--name", "people"]
    assert main([*register, *files]) == 0
    assert not os.environ.get(LEDGER_ENV)  # chosen for that command only
    add = ["analyst", "add", "--db", db, "--dataset", "people", "--epsilon", "1"]
    assert main([*add, "--name", "alice"]) == 0
    sql = "SELECT COUNT(*) FROM people"
    capsys.readouterr()
    query = ["query", "--db", db, "--analyst", "alice", "--epsilon", "0.25", sql, "--json"]
    assert main(query) == 0
    entry = json.loads(capsys.readouterr().out)["entry"]
    assert not Path(db + ".ledger").exists()
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT id, analyst, epsilon FROM entries").fetchall()
    assert rows == [(entry, "alice", "1/4")]
    assert main(["ledger", "verify", "--db", db]) == 0
    # reinit (data owner) starts the store again on a file; the database is left alone.
    assert main(["ledger", "reinit", "--db", db, "--yes"]) == 0
    assert Path(db + ".ledger").exists()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM entries").fetchone() == (1,)


def test_the_ledger_option_leaves_no_choice_behind() -> None:
    """(Runs after the test above in one process: its --ledger is not inherited.)"""
    assert not os.environ.get(LEDGER_ENV)
