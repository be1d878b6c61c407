"""The quick tier (``bash scripts/test.sh --quick``) still tests every subpackage.

It deselects the tests marked ``slow`` (and ``spark``, ``postgres``); this checks that what is
left has tests for each subpackage of ``src/infodp`` (its ``tests/<name>/`` directory) and for each
public top-level module, so a quick run never silently skips a part of the library.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "infodp"


def _quick_marker() -> str:
    script = (ROOT / "scripts" / "test.sh").read_text()
    found = re.search(r'-m "([^"]+)"', script[script.index("--quick") :])
    assert found is not None, "scripts/test.sh --quick names no marker expression"
    return found.group(1)


def test_the_quick_tier_starts_no_jvm_and_no_database() -> None:
    # Spark and PostgreSQL each take seconds to start on 2 cores: their tests are full-run only.
    assert set(_quick_marker().split(" and ")) == {"not slow", "not spark", "not postgres"}


# Collecting the whole suite in a second process takes a while: not part of the quick tier.
@pytest.mark.slow
def test_quick_tier_selects_tests_of_every_subpackage() -> None:
    marker = _quick_marker()
    assert "not slow" in marker
    # Collection runs no assertion and raises no late warning: --assert=plain skips rewriting
    # every module's asserts and no:unraisableexception its closing rounds of gc.collect (about
    # half the collection's time; the items collected are the same).
    collect = ["--collect-only", "-q", "-p", "no:cacheprovider", "-m", marker, "tests"]
    collect += ["--assert=plain", "-p", "no:unraisableexception"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *collect],
        cwd=ROOT,
        env={**os.environ, "HYPOTHESIS_PROFILE": "quick"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    per_dir = Counter(i.split("/")[1] for i in ids if i.startswith("tests/") and i.count("/") >= 2)
    subpackages = sorted(
        p.name for p in SRC.iterdir() if (p / "__init__.py").exists() and not p.name.startswith("_")
    )
    assert len(subpackages) >= 11
    thin = {name: per_dir.get(name, 0) for name in subpackages if per_dir.get(name, 0) < 5}
    assert thin == {}
    # The public top-level modules' own test files are in the quick tier too.
    for module in ("client", "errors", "testing"):
        assert any(i.startswith(f"tests/test_{module}.py::") for i in ids), module


def test_every_test_that_starts_spark_is_marked() -> None:
    # A Spark session costs a minute on 2 cores: a test module that starts one (or registers a
    # dataset with the Spark backend) carries the spark mark, so the quick tier leaves it out.
    starts = re.compile(r"SparkSession\.builder|backend=\"spark\"\)|\bspark_session\(")
    unmarked = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "tests").rglob("test_*.py"))
        if starts.search(text := p.read_text()) and "pytest.mark.spark" not in text
    ]
    assert unmarked == []


# -- the guard of the marks (tests/_mark_guard.py) ---------------------------------------------

GUARDED = """
import pytest
from _mark_guard import check_marks, pytest_runtest_call, pytest_runtest_setup


def pytest_configure(config):
    config.addinivalue_line("markers", "spark: starts Spark")
    config.addinivalue_line("markers", "postgres: starts PostgreSQL")


def pytest_collection_modifyitems(config, items):
    check_marks(items)


@pytest.fixture
def spark():
    return "a session"


@pytest.fixture
def pg_cluster():
    return "a cluster"
"""


def _run_guarded(directory: Path, tests: str) -> subprocess.CompletedProcess[str]:
    (directory / "conftest.py").write_text(GUARDED)
    (directory / "test_it.py").write_text(tests)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=directory,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT / "tests"),
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        },
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_test_asking_for_an_engine_without_its_mark_stops_the_run(tmp_path: Path) -> None:
    engines = [("spark", "spark"), ("pg_cluster", "postgres")]
    tests = "import pytest\n" + "".join(
        f"\n@pytest.mark.{mark}\ndef test_marked_{fixture}({fixture}):\n    pass\n"
        f"\ndef test_bare_{fixture}({fixture}):\n    pass\n"
        for fixture, mark in engines
    )
    proc = _run_guarded(tmp_path, tests)
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout + proc.stderr
    for fixture, mark in engines:
        line = f"test_bare_{fixture} uses the {fixture} fixture without @pytest.mark.{mark}"
        assert f"test_it.py::{line}" in proc.stderr
    assert "test_marked" not in proc.stderr


def test_a_test_that_starts_spark_without_the_mark_fails(tmp_path: Path) -> None:
    # A stand-in pyspark whose context "starts" in the test body: the guard reads only the
    # active context, so no JVM is needed to see it fail the unmarked test.
    tests = (
        "import sys, types\nimport pytest\n\n"
        "def _start():\n"
        "    context = type('SparkContext', (), {'_active_spark_context': object()})\n"
        "    sys.modules['pyspark'] = types.SimpleNamespace(SparkContext=context)\n\n"
        "def test_bare():\n    _start()\n\n"
        "@pytest.mark.spark\ndef test_marked():\n    _start()\n"
    )
    proc = _run_guarded(tmp_path, tests)
    assert proc.returncode == pytest.ExitCode.TESTS_FAILED, proc.stdout + proc.stderr
    assert "test_it.py::test_bare started Spark without @pytest.mark.spark" in proc.stdout
    assert "1 failed, 1 passed" in proc.stdout


def test_the_suite_has_no_test_that_asks_for_an_engine_without_its_mark(
    request: pytest.FixtureRequest,
) -> None:
    # The collection of this very run passed the same check (tests/conftest.py); here it is
    # asked of every test collected in this process, so a skipped check would show.
    from _mark_guard import unmarked

    assert unmarked(request.session.items) == []


def test_the_slow_doctests_named_in_conftest_exist_and_have_examples() -> None:
    # A renamed function would leave its name here and its (slow) doctest in the quick tier.
    import importlib

    from conftest import SLOW_DOCTESTS

    for name in sorted(SLOW_DOCTESTS):
        parts = name.split(".")
        obj: object = None
        for cut in range(len(parts), 0, -1):  # the longest importable prefix is the module
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            break
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        assert ">>>" in (obj.__doc__ or ""), name
