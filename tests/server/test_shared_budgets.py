"""What an analyst sees of shared budgets, over HTTP, on two stores that differ in one person.

Store A holds ``orig`` (1000 people) and its copy with one dummy row; store B the same
without person p0. Both copies share their original's caps and budgets. Everything the
analyst receives (budgets, dataset metadata, a released answer's cost and remaining budget,
a refusal) must be the same on both stores but for the noise, and neither the ledger's
secret salt, nor any hash of the unit sketches, nor the estimated share of common units
may appear in it.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _server_harness import ServerProcess, get_json
from infodp.curator.engine import Curator
from infodp.curator.unit_overlap import UnitSketch

SCHEMA = {
    "table": "t",
    "privacy_unit": "pid",
    "columns": {"pid": {"type": "text"}, "x": {"type": "int", "bounds": [0, 9]}},
}


def _store(directory: Path, first: int) -> tuple[Path, str, list[str]]:
    """(db, a's key, every secret of its ledger as text: the salt and the sketch hashes)."""
    directory.mkdir()
    db = directory / "s.duckdb"
    cur = Curator(db)
    orig = pd.DataFrame({"pid": [f"p{i}" for i in range(first, 1000)]})
    orig["x"] = range(len(orig))
    orig["x"] %= 10
    dummy = pd.DataFrame({"pid": ["dummy"], "x": [3]})
    cur.register_dataset("orig", orig, SCHEMA, max_epsilon=2)
    shared = cur.register_dataset("copy", pd.concat([orig, dummy]), SCHEMA)
    assert shared["shares_budgets_of"] == "orig"
    key = cur.add_analyst("a", "orig", epsilon=1)
    cur.close()
    conn = sqlite3.connect(str(db) + ".ledger")
    salt = conn.execute("SELECT value FROM meta WHERE key = 'unit_salt'").fetchone()[0]
    blobs = [r[0] for r in conn.execute("SELECT sketch FROM unit_sketches")]
    conn.close()
    hashes = {h for b in blobs for h in UnitSketch.from_bytes(b).hashes}
    return db, key, [salt, *(str(h) for h in hashes), *(f"{h:x}" for h in hashes)]


def _session(db: Path, key: str) -> list[tuple[int, dict[str, Any]]]:
    """What the analyst sees, in order (a released answer's noisy values left out)."""
    calls: list[tuple[str, str, Any]] = [
        ("GET", "/v1/budget", None),
        ("GET", "/v1/datasets", None),
        ("GET", "/v1/datasets/copy", None),
        ("POST", "/v1/query", {"sql": "SELECT COUNT(*) FROM copy", "epsilon": "0.75"}),
        ("POST", "/v1/query", {"sql": "SELECT COUNT(*) FROM orig", "epsilon": "0.5"}),
        ("GET", "/v1/budget", None),
    ]
    seen = []
    with ServerProcess(db, workers=1) as server:
        for method, path, body in calls:
            status, payload, _ = get_json(server.port, method, path, body, key=key)
            for noisy in ("rows", "confidence_intervals", "entry"):
                payload.pop(noisy, None)
            seen.append((status, payload))
    return seen


@pytest.mark.slow  # two servers
def test_an_analyst_sees_the_same_sharing_on_stores_differing_in_one_person(
    tmp_path: Path,
) -> None:
    db_a, key_a, secrets_a = _store(tmp_path / "a", first=0)
    db_b, key_b, secrets_b = _store(tmp_path / "b", first=1)
    seen_a, seen_b = _session(db_a, key_a), _session(db_b, key_b)
    assert seen_a == seen_b
    assert [s for s, _ in seen_a] == [200, 200, 200, 200, 409, 200]
    # The copy's budget is the original's: spent on the copy, refused on the original.
    assert seen_a[4][1]["error"]["remaining"] == "epsilon=0.25, delta=0"
    spent = {b["dataset"]: b["exact"]["spent_epsilon"] for b in seen_a[-1][1]["budgets"]}
    assert spent == {"copy": "3/4", "orig": "3/4"}
    text = json.dumps([seen_a, seen_b])
    for secret in (*secrets_a, *secrets_b):
        assert secret not in text
    assert "units are in" not in text and "%" not in text
