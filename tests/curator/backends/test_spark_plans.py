"""Spark's plans of a population's query do not follow the private tables' sizes.

Two Spark stores hold neighbouring populations (one person added: his row in people, his
visits). Spark's own defaults choose joins by the size estimates of the Parquet copies (a
side under ``spark.sql.autoBroadcastJoinThreshold`` is broadcast) and re-plan at run time
(adaptive execution): with the threshold between the two neighbours' estimates, the same
query gets a different physical plan on each (shown first, so the check below is not
vacuous). infodp's session pins those settings (:data:`PINNED`), and there the plans are
identical once expression ids and the copies' names and paths are stripped: sort-merge joins
between private tables, no adaptive plan, and the public table broadcast by its hint.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _stores import TEXT, ints, make_store, population, private, public
from infodp.curator.backends.compile import compiled_statements
from infodp.curator.backends.dialects import SPARK
from infodp.curator.backends.spark import SparkBackend
from infodp.curator.backends.spark.settings import PINNED
from infodp.curator.engine import Curator
from infodp.curator.rules import measurements

pytestmark = pytest.mark.spark

PID = {"type": "int"}
SCHEMA = population(
    "pid",
    {
        "people": private(1, pid=PID, region=TEXT),
        "visits": private(3, pid=PID, cost=ints(0, 1000)),
        "regions": public(region=TEXT, country=TEXT),
    },
)

SQL = (
    "SELECT r.country, COUNT(*), SUM(v.cost) FROM people p JOIN visits v ON p.pid = v.pid "
    "JOIN regions r ON p.region = r.region GROUP BY r.country"
)


def _frames(extra: bool) -> dict[str, pd.DataFrame]:
    n = 300
    pids = list(range(n)) + ([n] if extra else [])
    people = pd.DataFrame({"pid": pids, "region": [f"r{p % 5}" for p in pids]})
    visits = pd.DataFrame(
        {"pid": [p for p in pids for _ in range(2)], "cost": [(p * 37) % 1001 for p in pids] * 2}
    )
    regions = pd.DataFrame(
        {"region": [f"r{i}" for i in range(5)], "country": ["a", "b"] * 2 + ["c"]}
    )
    return {"people": people, "visits": visits, "regions": regions}


def _store(root: Path, extra: bool) -> str:
    root.mkdir(parents=True)
    return make_store(root, "clinic", _frames(extra), SCHEMA, budget=None, backend="spark").db


@pytest.fixture(scope="module")
def pair(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Curator]]:
    root = tmp_path_factory.mktemp("plans")
    curators = [
        Curator(_store(root / name, extra)) for name, extra in (("bob", True), ("no", False))
    ]
    yield curators
    for cur in curators:
        cur.close()


def _statement(cur: Curator) -> tuple[SparkBackend, str]:
    """infodp's backend of ``cur`` and the statement it runs for SQL (as aggregate() does)."""
    plan, schema, _, unit_ok = cur.plan(SQL)
    backend = cur._connections.engine(plan.table)
    assert isinstance(backend, SparkBackend)
    view = backend._relation_view(schema)
    sql = compiled_statements(
        plan, schema, measurements(plan), unit_rows_ok=True, dialect=SPARK, relation=view
    )[0]
    del unit_ok
    return backend, sql


def _physical(session: Any, sql: str) -> str:
    """The physical plan, without what differs between any two stores: expression ids, the
    copies' view names and paths, and the plan ids of exchanges."""
    text = str(session.sql("EXPLAIN " + sql).collect()[0][0])
    text = re.sub(r"#\d+L?", "", text)
    text = re.sub(r"__infodp_\w+", "VIEW", text)
    text = re.sub(r"\[file:[^\]]*\]", "[PATH]", text)
    return re.sub(r"plan_id=\d+", "", text)


def _sizes(session: Any, sql: str) -> set[int]:
    """Every size estimate in the optimised plan of ``sql`` (the numbers a size-driven choice
    compares with a threshold)."""
    plan = session.sql(sql)._jdf.queryExecution().optimizedPlan()
    out: set[int] = set()
    todo = [plan]
    while todo:
        node = todo.pop()
        out.add(int(str(node.stats().sizeInBytes())))
        children = node.children()
        todo.extend(children.apply(i) for i in range(children.size()))
    return out


def test_spark_defaults_would_plan_neighbours_differently(pair: list[Curator]) -> None:
    statements = [_statement(cur) for cur in pair]
    sizes = sorted(set.union(*(_sizes(b.session(), sql) for b, sql in statements)))
    found = None
    try:
        for threshold in sizes:
            plans = []
            for backend, sql in statements:
                session = backend.session()
                session.conf.set("spark.sql.adaptive.enabled", "true")
                session.conf.set("spark.sql.autoBroadcastJoinThreshold", str(threshold))
                plans.append(_physical(session, sql))
            if plans[0] != plans[1]:
                found = threshold
                break
    finally:
        for backend, _ in statements:
            for key, value in PINNED.items():
                backend.session().conf.set(key, value)
    assert found is not None, "no broadcast threshold tells the neighbours apart"
    assert "AdaptiveSparkPlan" in plans[0]


def test_pinned_plans_are_identical_across_neighbours(pair: list[Curator]) -> None:
    plans = [_physical(backend.session(), sql) for backend, sql in map(_statement, pair)]
    assert plans[0] == plans[1]
    assert "AdaptiveSparkPlan" not in plans[0]
    assert "SortMergeJoin" in plans[0]  # private ⋈ private, whatever their sizes
    # the public table only is broadcast (its hint): one broadcast, a hash join on it
    assert plans[0].count("BroadcastExchange") == 1
    assert plans[0].count("BroadcastHashJoin") == 1
    # and the answers are the exact ones (the pinned session answers as before)
    exact = [cur.exact_aggregates(SQL).values for cur in pair]
    assert sum(v[0] for v in exact[0].values()) == sum(v[0] for v in exact[1].values()) + 2
