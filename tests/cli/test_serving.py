"""Registering while ``infodp serve`` holds the store: one line and exit status 2, at once.

The server and the registration are real, separate processes (the lock is DuckDB's file lock
between processes); the message is checked word for word.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from _server_harness import ServerProcess
from _stores import ints, one_table
from infodp.cli._serving import marker_path
from infodp.curator.backends.base import StoreInUse
from infodp.curator.engine import Curator

# Each test runs real server processes and waits on the store's lock: slow.
pytestmark = pytest.mark.slow

SCHEMA = one_table("more", {"age": ints(0, 99)})


def _register(db: str, directory: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    csv = directory / "more.csv"
    csv.write_text("age\n1\n2\n3\n")
    schema = directory / "more.json"
    schema.write_text(json.dumps(SCHEMA))
    cmd = [sys.executable, "-m", "infodp.cli", "dataset", "register", "--db", db]
    cmd += ["--name", "more", "--source", str(csv), "--schema", str(schema), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def test_register_while_serving_says_the_store_is_in_use(
    copied_store: Callable[..., tuple[str, dict[str, str]]], tmp_path: Path
) -> None:
    db, _ = copied_store(tmp_path, [("alice", "people", 1)], rows=8)
    with ServerProcess(db, log_path=tmp_path / "server.log") as server:
        assert server.proc is not None
        started = time.monotonic()
        done = _register(db, tmp_path)
        took = time.monotonic() - started
        assert done.returncode == 2, done.stderr
        assert done.stderr == (
            "infodp: error: the store store.duckdb is in use by another process (infodp serve, "
            f"process {server.proc.pid}, is serving it): stop the server and retry, or register "
            "datasets before serving\n"
        )
        assert took < 60  # generous: the lock's wait (two minutes) is not sat out
        done = _register(db, tmp_path, "--json")
        assert done.returncode == 2
        assert "is in use by another process" in json.loads(done.stdout)["error"]["message"]
    # The server is gone, and its marker with it: the same registration now succeeds.
    assert not marker_path(db).exists()
    done = _register(db, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "registered more: 3 rows" in done.stdout


def test_a_dead_servers_marker_is_ignored(
    copied_store: Callable[..., tuple[str, dict[str, str]]], tmp_path: Path
) -> None:
    db, _ = copied_store(tmp_path, [("alice", "people", 1)], rows=8)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=60)
    marker_path(db).write_text(f"{gone.pid}\n")
    done = _register(db, tmp_path)
    assert done.returncode == 0, done.stderr


def test_the_library_says_the_store_is_in_use_after_its_wait(
    copied_store: Callable[..., tuple[str, dict[str, str]]], tmp_path: Path
) -> None:
    # Without the CLI's marker check, a writer waits for the lock until its deadline and
    # then says why in one line (not DuckDB's text, which holds the path).
    db, _ = copied_store(tmp_path, [("alice", "people", 1)], rows=8)
    csv = tmp_path / "more.csv"
    csv.write_text("age\n1\n2\n3\n")
    with ServerProcess(db, log_path=tmp_path / "server.log"):
        cur = Curator(db, timeout=1.0)
        try:
            with pytest.raises(StoreInUse) as caught:
                cur.register_dataset("more", str(csv), SCHEMA)
        finally:
            cur.close()
    assert str(caught.value) == (
        "the store is in use by another process (a running infodp serve?): it kept the "
        "store's lock for 1 s; stop that process and retry (register datasets before serving)"
    )
    assert str(tmp_path) not in str(caught.value)
