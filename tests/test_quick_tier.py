"""The quick tier (``bash scripts/test.sh --quick``) still tests every subpackage.

It deselects the tests marked ``slow`` (and ``spark``); this checks that what is left has
tests for each subpackage of ``src/infodp`` (its ``tests/<name>/`` directory) and for each
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


# Collecting the whole suite in a second process takes a while: not part of the quick tier.
@pytest.mark.slow
def test_quick_tier_selects_tests_of_every_subpackage() -> None:
    marker = _quick_marker()
    assert "not slow" in marker
    collect = ["--collect-only", "-q", "-p", "no:cacheprovider", "-m", marker, "tests"]
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
