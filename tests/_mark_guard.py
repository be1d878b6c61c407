"""The guard of the suite's tiers: a test that starts Spark carries the ``spark`` mark and a
test that starts PostgreSQL the ``postgres`` mark, so the quick tier (``-m "not slow and not
spark and not postgres"``) never starts either.

Two checks, which tests/conftest.py takes in:

- at collection (``check_marks``), a test that asks for a fixture that starts one of them
  (``spark``, ``pg_cluster``) without its mark stops the run with one line per test;
- at run time, a test without the ``spark`` mark during whose set-up or call a Spark context
  starts (a session built by hand, or a store registered with ``backend="spark"``) errors.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterable
from typing import Any

import pytest

#: The fixtures that start an engine, and the mark a test that asks for one must carry.
STARTERS = {"spark": "spark", "pg_cluster": "postgres"}


def unmarked(items: Iterable[Any]) -> list[str]:
    """One line per test that asks for a starting fixture without its mark."""
    out = []
    for item in items:
        for fixture, mark in STARTERS.items():
            if fixture in getattr(item, "fixturenames", ()) and not item.get_closest_marker(mark):
                out.append(f"{item.nodeid} uses the {fixture} fixture without @pytest.mark.{mark}")
    return out


def spark_running() -> bool:
    """Whether a Spark context is active in this process (pyspark not imported: no)."""
    pyspark = sys.modules.get("pyspark")
    context = getattr(pyspark, "SparkContext", None)
    return getattr(context, "_active_spark_context", None) is not None


def check_marks(items: Iterable[Any]) -> None:
    """Stop the run (a usage error) when a collected test lacks the mark of what it starts."""
    offenders = unmarked(items)
    if offenders:
        raise pytest.UsageError("\n".join(offenders))


def _guarded(item: pytest.Item) -> Generator[None, Any, Any]:
    before = spark_running()
    result = yield
    if not before and spark_running() and item.get_closest_marker("spark") is None:
        pytest.fail(f"{item.nodeid} started Spark without @pytest.mark.spark", pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _guarded(item))
