"""The ledger belongs to its store (task "the curator leaks through side doors", item 4).

A deleted, empty, truncated, foreign or corrupted ledger used to be recreated empty — every
budget silently reset. Each damage below must now stop the library, the CLI (one line, exit
2) and the service at start-up, until the data owner runs ``infodp ledger reinit --yes``. A
ledger deleted or replaced while a curator runs must refuse later charges; key revocations
live in the ledger, so no other file can revive a key; every file is created 0600 and the
admin token must be private.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

import _stores
from _asgi import call
from _cli_errors import json_error
from _stores import BuiltOnce, ints, one_table
from infodp.cli import main
from infodp.curator.engine import Curator
from infodp.curator.store.database import ledger_path
from infodp.errors import BudgetExceeded, LedgerError, ParameterError
from infodp.server.app import (
    ADMIN_TOKEN_ENV,
    ServerSettings,
    admin_token_hash,
    admin_token_hash_from_env,
    create_app,
)
from infodp.server.auth import KeyStore, key_store_path

SCHEMA = one_table("t", {"x": ints(0, 9)})


#: Each store built so far, by its number of answers (analyst a's key). The tests damage
#: their stores, so each gets a copy of the files; stores with different numbers of answers
#: are different stores (their own store ids).
_BUILT = BuiltOnce[str]("built")
_built_folder = _BUILT.fixture()


def make_store(directory: Path, *, queries: int = 6) -> tuple[Path, str]:
    """A store with dataset t, analyst a (ε = 10) and ``queries`` released answers: a copy of
    the one built for ``queries`` in this module (copying costs far less than building)."""
    key = _BUILT.copy(queries, lambda folder: build_store(folder, queries=queries)[1], directory)
    return directory / "store.duckdb", key


def build_store(directory: Path, *, queries: int) -> tuple[Path, str]:
    """:func:`make_store`, built anew in ``directory``."""
    frame = pd.DataFrame({"x": list(range(10)) * 5})
    store = _stores.make_store(directory, "t", frame, SCHEMA, budget={"epsilon": 10})
    db, key = Path(store.db), store.key
    cur = Curator(db)
    for _ in range(queries):
        cur.query("a", "SELECT COUNT(*), SUM(x) FROM t", epsilon="0.25")
    cur.close()  # the last connection checkpoints the WAL into the ledger file
    return db, key


def _wal_files(db: Path) -> list[Path]:
    lp = ledger_path(db)
    return [Path(str(lp) + "-wal"), Path(str(lp) + "-shm")]


def _delete(db: Path, _tmp: Path) -> None:
    ledger_path(db).unlink()


def _empty(db: Path, _tmp: Path) -> None:
    ledger_path(db).write_bytes(b"")


def _truncate(db: Path, _tmp: Path) -> None:
    lp = ledger_path(db)
    data = lp.read_bytes()
    lp.write_bytes(data[: len(data) // 2])


def _foreign(db: Path, tmp: Path) -> None:
    other = tmp / "other"
    other.mkdir()
    odb, _ = make_store(other, queries=1)
    shutil.copyfile(ledger_path(odb), ledger_path(db))


def _garbage(db: Path, _tmp: Path) -> None:
    lp = ledger_path(db)
    data = bytearray(lp.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 3000] = os.urandom(3000)
    lp.write_bytes(bytes(data))


def _edit_entry(db: Path, _tmp: Path) -> None:
    # A consistent-looking edit: one entry's ε and the analyst's total both lowered.
    conn = sqlite3.connect(ledger_path(db))
    conn.execute("UPDATE entries SET epsilon = '1/100' WHERE id = 2")
    conn.execute("UPDATE analysts SET spent_epsilon = '151/100'")
    conn.execute("UPDATE datasets SET spent_epsilon = '151/100'")
    conn.commit()
    conn.close()


def _drop_last_entry(db: Path, _tmp: Path) -> None:
    conn = sqlite3.connect(ledger_path(db))
    conn.execute("DELETE FROM entries WHERE id = (SELECT max(id) FROM entries)")
    conn.commit()
    conn.close()


DAMAGE: dict[str, Callable[[Path, Path], None]] = {
    "deleted": _delete,
    "empty": _empty,
    "truncated": _truncate,
    "foreign": _foreign,
    "garbage in the middle": _garbage,
    "edited entry": _edit_entry,
    "dropped entry": _drop_last_entry,
}


@pytest.mark.slow
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_ledger_stops_every_command(
    damage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = make_store(tmp_path)
    for p in _wal_files(db):
        assert not p.exists()  # everything is in the ledger file itself
    DAMAGE[damage](db, tmp_path)
    size = ledger_path(db).stat().st_size if ledger_path(db).exists() else None
    with pytest.raises(LedgerError, match="ledger"):
        Curator(db)
    with pytest.raises(LedgerError):
        create_app(ServerSettings(str(db)))
    with pytest.raises(LedgerError):
        KeyStore(key_store_path(db))
    capsys.readouterr()
    for argv in (
        ["ledger", "--db", str(db), "--json"],
        ["query", "--db", str(db), "--analyst", "a", "--epsilon", "0.1", "SELECT COUNT(*) FROM t"],
        ["analyst", "list", "--db", str(db)],
        ["serve", "--db", str(db)],
    ):
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert err.count("\n") == 1 and "ledger" in err, (argv, err)
        assert "Traceback" not in err
        if "--json" in argv:  # the failure as one JSON object too
            assert json_error(out, err, 2)["kind"] == "ledger"
        else:
            assert out == ""
    # Nothing was silently recreated or repaired.
    now = ledger_path(db).stat().st_size if ledger_path(db).exists() else None
    assert now == size


@pytest.mark.slow
def test_reinit_is_explicit_and_says_it_forgets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, key = make_store(tmp_path)
    _delete(db, tmp_path)
    capsys.readouterr()
    assert main(["ledger", "reinit", "--db", str(db), "--json"]) == 2
    assert "--yes" in capsys.readouterr().err
    assert main(["ledger", "reinit", "--db", str(db), "--yes", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["datasets"] == ["t"] and "all budgets" in out["forgotten"]
    cur = Curator(db)
    assert [d.name for d in cur.ledger.datasets()] == ["t"]  # kept from the store's record
    assert cur.ledger.budgets() == [] and cur.ledger.entries() == []
    assert not cur.ledger.verify_key("a", key)
    # The re-initialised ledger is bound to the store again: a fresh budget works.
    cur.add_analyst("a", "t", epsilon=1)
    assert cur.query("a", "SELECT COUNT(*) FROM t", epsilon="0.5").cost.epsilon == 0.5
    # A foreign ledger is also replaced by reinit, never adopted.
    assert Curator(db).ledger.store_id == cur.ledger.store_id


@pytest.mark.slow
def test_a_store_without_its_ledger_or_a_ledger_without_its_store(tmp_path: Path) -> None:
    db, _ = make_store(tmp_path)
    moved = tmp_path / "elsewhere.duckdb"
    db.rename(moved)
    with pytest.raises(LedgerError, match="store"):
        Curator(db)  # the orphaned ledger is not paired with a fresh store
    assert not db.exists()
    with pytest.raises(LedgerError, match="missing"):
        Curator(moved)  # the store is not paired with a fresh ledger


@pytest.mark.slow
def test_ledger_deleted_or_replaced_while_in_use_refuses_charges(tmp_path: Path) -> None:
    db, _ = make_store(tmp_path, queries=1)
    cur = Curator(db)
    spent = cur.ledger.budget("a", "t").spent_epsilon
    ledger_path(db).unlink()
    for p in _wal_files(db):
        p.unlink(missing_ok=True)
    with pytest.raises(LedgerError, match="deleted"):
        cur.query("a", "SELECT COUNT(*) FROM t", epsilon="0.25")
    # A different ledger put in its place (e.g. an old backup or another store's) is refused too.
    other = tmp_path / "o"
    other.mkdir()
    odb, _ = make_store(other, queries=0)
    cur.ledger.close()
    shutil.copyfile(ledger_path(odb), ledger_path(db))
    with pytest.raises(LedgerError):
        cur.query("a", "SELECT COUNT(*) FROM t", epsilon="0.25")
    assert spent == 0.25


@pytest.mark.slow
def test_service_refuses_charges_once_its_ledger_is_gone(tmp_path: Path) -> None:
    db, key = make_store(tmp_path, queries=0)
    app = create_app(ServerSettings(str(db)))
    body = {"sql": "SELECT COUNT(*) FROM t", "epsilon": 0.25}
    assert call(app, "POST", "/v1/query", body, key=key).status_code == 200
    ledger_path(db).unlink()
    r = call(app, "POST", "/v1/query", body, key=key)
    assert r.status_code == 500 and "rows" not in r.json()
    assert str(tmp_path) not in r.text


@pytest.mark.slow
def test_keys_and_revocations_live_in_the_ledger(tmp_path: Path) -> None:
    db, ledger_key = make_store(tmp_path, queries=0)
    ks = KeyStore(key_store_path(db))
    assert ks.path == ledger_path(db)
    server_key = ks.issue("a")
    assert ks.verify(server_key) is not None
    # An old-format '<store>.keys' file holding the key unrevoked (e.g. restored from a
    # backup) is not read by anything: revocation stays.
    old = sqlite3.connect(str(db) + ".keys")
    old.execute(
        "CREATE TABLE keys (key_id TEXT PRIMARY KEY, analyst TEXT, salt TEXT, hash TEXT, "
        "created TEXT, revoked TEXT)"
    )
    live = sqlite3.connect(ledger_path(db))
    rows = live.execute("SELECT * FROM keys").fetchall()
    old.executemany("INSERT INTO keys VALUES (?, ?, ?, ?, ?, ?)", rows)
    live.close()
    old.commit()
    old.close()
    assert ks.revoke("a") == 1
    for fresh in (KeyStore(key_store_path(db)), KeyStore(db)):
        assert fresh.verify(server_key) is None
        assert fresh.ledger_key_revoked("a")
        assert not fresh.ledger.verify_key("a", ledger_key)
    app = create_app(ServerSettings(str(db)))
    for key in (server_key, ledger_key):
        assert call(app, "GET", "/v1/budget", key=key).status_code == 401


def _modes(paths: list[Path]) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in paths if p.exists()}


@pytest.mark.slow
def test_every_file_is_created_private(tmp_path: Path) -> None:
    old = os.umask(0o022)  # a typical permissive umask
    try:
        db, _ = build_store(tmp_path, queries=2)  # made under this umask, not copied
        KeyStore(key_store_path(db)).issue("a")
        cur = Curator(db)
        cur.register_dataset("u", pd.DataFrame({"x": [1, 2, 3]}), {**SCHEMA, "table": "u"})
        files = [p for p in tmp_path.iterdir() if p.name.startswith("store.duckdb")]
        modes = _modes(files)
    finally:
        os.umask(old)
    assert "store.duckdb" in modes and "store.duckdb.ledger" in modes
    assert modes == dict.fromkeys(modes, 0o600), modes


def test_admin_token_must_be_private_or_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    token = tmp_path / "admin.token"
    token.write_text("a-long-enough-admin-token\n")
    for mode in (0o644, 0o640, 0o604):
        token.chmod(mode)
        with pytest.raises(ParameterError, match="owner only"):
            admin_token_hash(token)
    token.chmod(0o600)
    assert len(admin_token_hash(token)) == 64
    db, _ = make_store(tmp_path, queries=0)
    token.chmod(0o644)
    capsys.readouterr()
    assert main(["serve", "--db", str(db), "--admin-token-file", str(token)]) == 2
    assert "chmod 600" in capsys.readouterr().err
    monkeypatch.delenv(ADMIN_TOKEN_ENV, raising=False)
    assert admin_token_hash_from_env() is None
    monkeypatch.setenv(ADMIN_TOKEN_ENV, "short")
    with pytest.raises(ParameterError, match="16 characters"):
        admin_token_hash_from_env()
    monkeypatch.setenv(ADMIN_TOKEN_ENV, "a-long-enough-admin-token")
    token.chmod(0o600)
    assert admin_token_hash_from_env() == admin_token_hash(token)


@pytest.mark.slow
def test_integrity_checks_leave_a_sound_ledger_alone(tmp_path: Path) -> None:
    db, _ = make_store(tmp_path, queries=5)
    cur = Curator(db)
    assert cur.ledger.verify() == []
    with pytest.raises(BudgetExceeded):
        cur.query("a", "SELECT COUNT(*) FROM t", epsilon="100")
    assert Curator(db).ledger.verify() == []
