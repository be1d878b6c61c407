"""``infodp query`` starts numpy's import early exactly for the queries whose release uses it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from infodp.cli._prefetch import BLAS_THREADS, needs_numpy, prefetch_numpy

SCHEMA = {
    "table": "t",
    "privacy_unit": "row",
    "columns": {
        "g": {"type": "category", "categories": ["a", "b"]},
        "v": {"type": "float", "bounds": [0, 1000]},
    },
}

QUERIES = {
    "count": "SELECT g, COUNT(*) FROM t GROUP BY g",
    "sum": "SELECT SUM(v) FROM t",
    "count_distinct": "SELECT COUNT(DISTINCT g) FROM t",
    "ratio": "SELECT SUM(v) / COUNT(*) FROM t",
    "avg": "SELECT g, COUNT(*), AVG(v) FROM t GROUP BY g",
    "var_pop": "SELECT VAR_POP(v) FROM t",
    "stddev": "select stddev(v) from t",
    "median": "SELECT MEDIAN(v) FROM t",
    "max": "SELECT MAX (v) FROM t",
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from infodp.curator import Curator

    where = tmp_path_factory.mktemp("prefetch")
    csv = where / "t.csv"
    csv.write_text("g,v\n" + "".join(f"{'ab'[i % 2]},{i * 37 % 1000}\n" for i in range(400)))
    db = where / "s.duckdb"
    cur = Curator(db)
    cur.register_dataset("t", str(csv), SCHEMA)
    cur.add_analyst("a", "t", epsilon=100)
    cur.close()
    return db


def _run(code: str, env: dict[str, str] | None = None) -> str:
    full = dict(os.environ) if env is None else env
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=full
    )
    return out.stdout.strip()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_the_text_test_agrees_with_what_the_release_imports(store: Path, name: str) -> None:
    """The oracle: a fresh process answers the query through the library (no prefetch) and
    reports whether numpy got imported."""
    sql = QUERIES[name]
    imported = _run(
        "import sys\n"
        "from infodp.curator import Curator\n"
        f"cur = Curator({str(store)!r})\n"
        f"cur.query('a', {sql!r}, epsilon=1)\n"
        "cur.close()\n"
        "print('numpy' in sys.modules)"
    )
    assert needs_numpy(sql) is (imported == "True")


def test_names_that_only_look_like_aggregates_start_nothing() -> None:
    assert not needs_numpy("SELECT COUNT(*) FROM t WHERE average > 3 AND maxed = 1")
    assert not needs_numpy("SELECT SUM(std_income), COUNT(min_age) FROM t")
    assert needs_numpy("SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY v) FROM t")
    assert needs_numpy("SELECT VARP(v), STDEVP(v) FROM t")


def test_a_fresh_process_imports_numpy_on_a_helper_thread_with_one_blas_thread() -> None:
    env = {k: v for k, v in os.environ.items() if k != BLAS_THREADS}
    got = _run(
        "import os, sys, threading\n"
        "from infodp.cli._prefetch import prefetch_numpy\n"
        "t = prefetch_numpy('SELECT AVG(v) FROM t')\n"
        "assert t is not None and t is not threading.current_thread() and not t.daemon\n"
        "t.join()\n"
        f"print('numpy' in sys.modules, os.environ.get({BLAS_THREADS!r}))",
        env,
    )
    assert got == "True 1"


def test_the_environment_s_blas_threads_are_kept() -> None:
    env = {**os.environ, BLAS_THREADS: "3"}
    got = _run(
        "import os\n"
        "from infodp.cli._prefetch import prefetch_numpy\n"
        "prefetch_numpy('SELECT MEDIAN(v) FROM t').join()\n"
        f"print(os.environ[{BLAS_THREADS!r}])",
        env,
    )
    assert got == "3"


def test_a_query_without_such_aggregates_imports_nothing() -> None:
    got = _run(
        "import sys\n"
        "from infodp.cli._prefetch import prefetch_numpy\n"
        "print(prefetch_numpy('SELECT g, COUNT(*) FROM t GROUP BY g'), 'numpy' in sys.modules)"
    )
    assert got == "None False"


def test_a_process_that_holds_numpy_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy  # noqa: F401 - the state under test

    monkeypatch.delenv(BLAS_THREADS, raising=False)
    assert prefetch_numpy("SELECT AVG(v) FROM t") is None
    assert BLAS_THREADS not in os.environ


@pytest.mark.slow
def test_the_cli_answers_an_avg_with_the_prefetch(store: Path) -> None:
    import json

    out = _run(
        "from infodp.cli import main\n"
        f"main(['query', '--db', {str(store)!r}, '--analyst', 'a', '--epsilon', '1',"
        f" {QUERIES['avg']!r}, '--json'])"
    )
    answer = json.loads(out)
    assert [r[0] for r in answer["rows"]] == ["a", "b"]
    for row, cis in zip(answer["rows"], answer["confidence_intervals"], strict=True):
        low, high = cis[2]
        assert 0 <= low <= row[2] <= high <= 1000
