"""freeze_heap: start-up objects leave the collector's full passes; garbage does not stay; what
queries import lazily is imported before a server's first request (infodp.server.pool._WARM)."""

from __future__ import annotations

import gc
import sys
import weakref
from pathlib import Path

import pytest

from infodp.server._heap import freeze_heap


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_garbage_cycles_are_collected_before_the_heap_is_frozen() -> None:
    a, b = _Node(), _Node()
    a.other, b.other = b, a  # a cycle only the cyclic collector can free
    gone = weakref.ref(a)
    del a, b
    freeze_heap()
    try:
        assert gone() is None  # collected, not frozen for ever
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


@pytest.mark.slow
def test_the_named_modules_are_imported_before_freezing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "heap_probe_module.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "heap_probe_module" not in sys.modules
    freeze_heap("heap_probe_module")
    try:
        assert sys.modules["heap_probe_module"].VALUE == 1
    finally:
        gc.unfreeze()
        del sys.modules["heap_probe_module"]


@pytest.mark.slow
def test_a_full_pass_after_freezing_scans_only_what_came_later() -> None:
    freeze_heap()
    try:
        alive = [object() for _ in range(10)]  # untracked: nothing new to scan
        assert len(gc.get_objects(generation=2)) < gc.get_freeze_count()
        del alive
    finally:
        gc.unfreeze()


#: A fresh server process answers one query of each kind: every module the answers need was
#: imported before the first request (infodp.server.pool._WARM), so none is at request time.
_FIRST_QUERIES = r"""
import json, sys, tempfile
from pathlib import Path
from fastapi.testclient import TestClient
from infodp.curator import Curator
from infodp.curator.demo import CENSUS_SCHEMA, census_frame
from infodp.server.app import ServerSettings, create_app
from infodp.server.auth import KeyStore

db = str(Path(tempfile.mkdtemp()) / "s.duckdb")
cur = Curator(db)
cur.register_dataset("census", census_frame(500), CENSUS_SCHEMA)
cur.add_analyst("a", "census", epsilon=100)
cur.close()
headers = {"Authorization": "Bearer " + KeyStore(db).issue("a")}
app = create_app(ServerSettings(db))
asked = [
    ("/v1/query", "SELECT COUNT(*) FROM census"),
    ("/v1/query", "SELECT region, COUNT(*), AVG(income) FROM census GROUP BY region"),
    ("/v1/query", "SELECT region, COUNT(*) AS n FROM census GROUP BY 1 HAVING n > 3 ORDER BY n"),
    ("/v1/query", "SELECT VARIANCE(income), MEDIAN(age) FROM census"),
    ("/v1/estimate", "SELECT SUM(income) FROM census"),
]
late = {}
with TestClient(app) as client:
    for route, sql in asked:
        before = set(sys.modules)
        r = client.post(route, json={"sql": sql, "epsilon": 0.1}, headers=headers)
        assert r.status_code == 200, r.text
        late[sql] = sorted(m for m in set(sys.modules) - before if m.startswith("infodp"))
print(json.dumps(late))
"""


@pytest.mark.slow  # a fresh process (a pytest worker has imported everything already)
def test_a_servers_first_queries_import_nothing_at_request_time() -> None:
    import json
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", _FIRST_QUERIES], capture_output=True, text=True, check=True
    )
    late = json.loads(out.stdout.splitlines()[-1])
    assert late and all(modules == [] for modules in late.values()), late
