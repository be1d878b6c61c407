"""A query is planned in time linear in its size, and refused by its declared caps
(:mod:`infodp.curator.sql.limits`) fast, for free and the same whatever the data.

Regression: a 1,000-value IN list took ~55 s to plan on a population (its text rendered once
per value), a refused 300-value list 17 s; CASE branches and AND/OR chains the same.
Timings are of the call alone, after one warm-up with a query of the same size (different
values, so no cached plan is reused); the 1 s bound is ~50x below the old figure.
"""

from __future__ import annotations

import gc
import itertools
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _stores import TEXT, ints, population, private
from infodp.curator.engine import Curator
from infodp.curator.sql.limits import MAX_CASE_BRANCHES, MAX_EXPRESSION_DEPTH, MAX_IN_LIST
from infodp.errors import ParameterError

POPULATION = population(
    "pid",
    {
        "people": private(1, pid=TEXT, age=ints(0, 100)),
        "visits": private(12, pid=TEXT, cost=ints(0, 1000)),
    },
)
TABLE = """
table: t
privacy_unit: row
columns:
  age: {type: int, bounds: [0, 100]}
"""
#: FROM clauses: the single table, and the population's join.
FROMS = {"table": "t", "population": "people JOIN visits USING (pid)"}


def _people() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    ids = [f"p{i}" for i in range(200)]
    return pd.DataFrame({"pid": ids, "age": rng.integers(0, 101, len(ids))})


def _visits() -> pd.DataFrame:
    ids = [f"p{i}" for i in range(200)]
    return pd.DataFrame({"pid": np.repeat(ids, 2), "cost": np.arange(400) % 1001})


@pytest.fixture(scope="module")
def cur(tmp_path_factory: pytest.TempPathFactory) -> Curator:
    c = Curator(Path(tmp_path_factory.mktemp("size")) / "s.duckdb")
    c.register_dataset("pop", {"people": _people(), "visits": _visits()}, POPULATION)
    c.register_dataset("t", _people()[["age"]], TABLE)
    c.add_analyst("a", "pop", epsilon=1000)
    c.add_analyst("a", "t", epsilon=1000)
    return c


def _name(value: object) -> str:
    """A stable test id (a function's name; never its address, which differs per process)."""
    return str(getattr(value, "__name__", value))


def _in(n: int, shift: int, where: str) -> str:
    values = ", ".join(str((i * 7 + shift) % 5000) for i in range(n))
    return f"SELECT COUNT(*) FROM {where} WHERE age IN ({values})"


def _case(n: int, shift: int, where: str) -> str:
    ifs = " ".join(f"WHEN age={i + shift} THEN {i % 7}" for i in range(n))
    return f"SELECT SUM(CASE {ifs} ELSE 0 END) FROM {where}"


def _and(n: int, shift: int, where: str) -> str:
    return f"SELECT COUNT(*) FROM {where} WHERE " + " AND ".join(
        f"age <> {i + shift}" for i in range(n)
    )


def _or(n: int, shift: int, where: str) -> str:
    return f"SELECT COUNT(*) FROM {where} WHERE " + " OR ".join(
        f"age = {i + shift}" for i in range(n)
    )


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


@pytest.mark.slow  # timing: meaningful on an idle machine only
@pytest.mark.parametrize("where", sorted(FROMS))
@pytest.mark.parametrize(
    ("make", "n"), [(_in, 1000), (_case, 250), (_and, 1000), (_or, 1000)], ids=_name
)
def test_long_queries_are_estimated_and_answered_within_a_second(
    cur: Curator, where: str, make: Callable[[int, int, str], str], n: int
) -> None:
    cur.estimate(make(n, 1, FROMS[where]), epsilon=1)  # warm-up: imports, connection
    sql = make(n, 2, FROMS[where])
    # An IN list: within a second (the stated bound; it takes ~0.04 s). The other shapes
    # take ~0.3 s on a population, so under a loaded test run they get 3 s: still 20x below
    # what quadratic planning took (a 100-term AND chain alone took 0.65 s before).
    bound = 1.0 if make is _in else 3.0
    assert _timed(lambda: cur.estimate(sql, epsilon=1)) < bound
    if make is _in:  # the stated acceptance: released within a second too
        released = make(n, 3, FROMS[where])
        assert _timed(lambda: cur.query("a", released, epsilon=1)) < 1.0


@pytest.mark.slow
@pytest.mark.parametrize("where", sorted(FROMS))
def test_a_long_refused_list_is_refused_within_a_second(cur: Curator, where: str) -> None:
    def refused(shift: int) -> None:
        values = ", ".join(str(i + shift) for i in range(299))
        with pytest.raises(ParameterError, match=r"number|numeric"):
            cur.estimate(
                f"SELECT COUNT(*) FROM {FROMS[where]} WHERE age IN ({values}, 'x')", epsilon=1
            )

    refused(0)
    assert _timed(lambda: refused(1)) < 1.0


_SHIFTS = itertools.count(1000)


def _best(cur: Curator, make: Callable[[int, int, str], str], n: int, where: str) -> float:
    # New text each time (a shift never used before): no plan is reused from a cache.
    sqls = [make(n, next(_SHIFTS), where) for _ in range(3)]
    # The cyclic collector's pauses grow with everything else the process holds (doubling an
    # OR chain measured 1.97x with it off, 2.6-3.2x with it on): it is off while timing, so the
    # growth measured is the planner's own.
    gc.collect()
    gc.disable()
    try:
        return min(_timed(lambda s=s: cur.estimate(s, epsilon=1)) for s in sqls)
    finally:
        gc.enable()


@pytest.mark.slow  # timing: meaningful on an idle machine only
@pytest.mark.parametrize(
    ("make", "n"), [(_in, 500), (_in, 1000), (_or, 400), (_case, 200)], ids=_name
)
def test_planning_time_grows_linearly(
    cur: Curator, make: Callable[[int, int, str], str], n: int
) -> None:
    # Doubling the size must not quadruple the time (quadratic); best of 3 against noise.
    where = FROMS["population"]
    cur.estimate(make(n, 7, where), epsilon=1)
    small, large = _best(cur, make, n, where), _best(cur, make, 2 * n, where)
    assert large < 3 * small + 0.05, (small, large)


@pytest.mark.parametrize("where", sorted(FROMS))
def test_long_in_lists_give_the_plain_answer(cur: Curator, where: str) -> None:
    values = sorted({(i * 13) % 150 for i in range(1000)})
    text = ", ".join(str(v) for v in values)
    sql = f"SELECT COUNT(*), SUM(age) FROM {FROMS[where]} WHERE age IN ({text})"
    people = _people()
    kept = people[people["age"].isin(values)]
    if where == "population":
        kept = kept.merge(_visits(), on="pid")
    got = cur.exact_aggregates(sql).values[()]
    assert [float(g) for g in got] == [len(kept), float(kept["age"].sum())]


DEEP = {
    "parentheses": "SELECT COUNT(*) FROM t WHERE " + "(" * 9000 + "age = 1" + ")" * 9000,
    "not": "SELECT COUNT(*) FROM t WHERE " + "NOT " * 4000 + "age = 1",
    "case": "SELECT SUM("
    + "CASE WHEN age > 1 THEN " * (MAX_EXPRESSION_DEPTH * 2)
    + "1"
    + " END" * (MAX_EXPRESSION_DEPTH * 2)
    + ") FROM t",
    "in-list": "SELECT COUNT(*) FROM t WHERE age IN (" + ",".join(["1"] * (MAX_IN_LIST + 1)) + ")",
    "case-branches": "SELECT SUM(CASE "
    + "WHEN age=1 THEN 1 " * (MAX_CASE_BRANCHES + 1)
    + "END) FROM t",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DEEP))
def test_queries_beyond_the_caps_are_refused_fast_and_free(cur: Curator, name: str) -> None:
    spent = cur.ledger.budget("a", "t").spent_epsilon
    started = time.perf_counter()
    with pytest.raises(ParameterError) as err:
        cur.query("a", DEEP[name], epsilon=1)
    # 0.05-0.15 s alone (sqlglot's parse); 1.34 s was seen under a loaded parallel run, so
    # the bound is 3 s as for the chains above: a stall (tens of seconds) still fails it.
    assert time.perf_counter() - started < 3.0
    assert "must be" in str(err.value) and "at most" in str(err.value)
    assert cur.ledger.budget("a", "t").spent_epsilon == spent
    # The same refusal for the estimate, and whatever the data: the SQL alone decides.
    with pytest.raises(ParameterError) as again:
        cur.estimate(DEEP[name], epsilon=1)
    assert str(again.value) == str(err.value)
