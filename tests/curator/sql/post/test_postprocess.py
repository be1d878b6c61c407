"""Post-processing of released values (HAVING, ORDER BY, LIMIT, arithmetic between aggregates).

Checked against DuckDB running the same outer clauses over the released table (an independent
SQL engine as the oracle), against the SQL parser (the inner query measures exactly what the
plain query would), and the interval enclosure against brute force (Moore 1966: interval
arithmetic encloses the function over the box).
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _stores import cats, ints, one_table
from infodp.curator.answer.result import Released
from infodp.curator.declaration.source import load_schema
from infodp.curator.rules import measurements
from infodp.curator.sql.parse import parse_query
from infodp.curator.sql.post import split_query
from infodp.curator.sql.post.enclosure import enclose
from infodp.curator.sql.post.terms import Term, evaluate
from infodp.errors import ParameterError

SCHEMA = load_schema(one_table("t", {"g": cats("a", "b", "c", "d"), "v": ints(0, 100)}))


def test_plain_queries_need_no_post_processing() -> None:
    for sql in (
        "SELECT COUNT(*) FROM t",
        "SELECT g, SUM(v) AS s FROM t GROUP BY g",
        "SELECT MEDIAN(v) FROM t WHERE v > 3",
    ):
        assert split_query(sql) is None


@pytest.mark.parametrize(
    ("sql", "plain"),
    [
        (
            "SELECT g, SUM(v) / COUNT(*) AS mean FROM t GROUP BY g HAVING COUNT(*) > 3",
            "SELECT g, SUM(v), COUNT(*) FROM t GROUP BY g",
        ),
        ("SELECT COUNT(*) AS n FROM t ORDER BY n DESC LIMIT 2", "SELECT COUNT(*) FROM t"),
        (
            "SELECT g FROM t GROUP BY g HAVING AVG(v) > 10 ORDER BY SUM(v)",
            "SELECT g, AVG(v), SUM(v) FROM t GROUP BY g",
        ),
    ],
)
def test_inner_query_measures_what_the_plain_query_measures(sql: str, plain: str) -> None:
    post = split_query(sql)
    assert post is not None
    inner = parse_query(post.inner_sql, SCHEMA)
    expected = parse_query(plain, SCHEMA)
    assert measurements(inner) == measurements(expected)
    assert inner.group_by == expected.group_by and inner.where == expected.where


def _released(frame: pd.DataFrame) -> Released:
    """A released table with [v − 1, v + 1] intervals on the numeric columns."""
    rows = tuple(tuple(r) for r in frame.itertuples(index=False))
    intervals = tuple(
        tuple(None if isinstance(v, str) else [v - 1, v + 1] for v in row) for row in rows
    )
    noisy = tuple(tuple(int(v) for v in row if not isinstance(v, str)) for row in rows)
    return Released(tuple(frame.columns), rows, intervals, ("base note",), noisy)


OUTER = [
    # (our query, the same clauses over the released table for DuckDB)
    (
        "SELECT g, SUM(v) / COUNT(*) AS mean FROM t GROUP BY g HAVING COUNT(*) > 20 "
        "ORDER BY mean DESC LIMIT 2",
        "SELECT g, __pp0 / __pp1 AS mean FROM r WHERE __pp1 > 20 ORDER BY mean DESC LIMIT 2",
    ),
    (
        "SELECT g, COUNT(*) AS n, SUM(v) FROM t GROUP BY g ORDER BY 2, g DESC LIMIT 3 OFFSET 1",
        'SELECT g, n, "SUM(v)" FROM r ORDER BY 2, g DESC LIMIT 3 OFFSET 1',
    ),
    (
        "SELECT g, ABS(SUM(v) - 3 * COUNT(*)) AS d FROM t GROUP BY g "
        "HAVING SUM(v) BETWEEN 100 AND 4000 OR g IN ('a', 'b')",
        "SELECT g, abs(__pp0 - 3 * __pp1) AS d FROM r "
        "WHERE __pp0 BETWEEN 100 AND 4000 OR g IN ('a', 'b') ORDER BY g",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("sql", "oracle"), OUTER)
def test_post_processing_agrees_with_duckdb_over_the_released_table(sql: str, oracle: str) -> None:
    post = split_query(sql)
    assert post is not None
    inner = parse_query(post.inner_sql, SCHEMA)
    rng = random.Random(7)
    for _ in range(25):
        frame = pd.DataFrame(
            {
                o.name: (
                    ["a", "b", "c", "d"]
                    if o.aggregate is None
                    else [
                        rng.randint(-5, 60)
                        if "COUNT" in o.name or o.name == "n" or o.name == "__pp1"
                        else rng.randint(-50, 5000)
                        for _ in range(4)
                    ]
                )
                for o in inner.outputs
            }
        )
        got = post.apply(_released(frame), 0.95)
        con = duckdb.connect()
        con.register("r", frame)
        expected = con.execute(oracle).fetchall()
        con.close()
        if "ORDER BY g" in oracle and "LIMIT" not in oracle:  # no order asked: compare as sets
            assert sorted(got.rows) == sorted(expected)
        else:
            assert [tuple(r) for r in got.rows] == [tuple(r) for r in expected]


def test_columns_names_and_intervals() -> None:
    post = split_query(
        "SELECT g, SUM(v) AS s, SUM(v) / COUNT(*) AS mean FROM t GROUP BY g ORDER BY s DESC"
    )
    assert post is not None
    frame = pd.DataFrame({"g": ["a", "b"], "s": [100, 300], "__pp1": [10, 20]})
    got = post.apply(_released(frame), 0.9)
    assert got.columns == ("g", "s", "mean")
    assert got.rows == (("b", 300, 15.0), ("a", 100, 10.0))
    # One released column keeps its interval; the ratio gets the enclosure of both.
    assert got.intervals[0][1] == [299, 301]
    assert got.intervals[0][2] == pytest.approx([299 / 21, 301 / 19])
    assert got.noisy == ((300, 20), (100, 10))
    text = " ".join(got.notes)
    assert "ORDER BY applied" in text and "1 − 2·β = 0.8" in text


def test_a_denominator_that_may_be_zero_gets_no_interval() -> None:
    post = split_query("SELECT SUM(v) / COUNT(*) AS mean FROM t")
    assert post is not None
    frame = pd.DataFrame({"__pp0": [5], "__pp1": [0]})
    got = post.apply(_released(frame), 0.95)
    assert got.rows == ((None,),)  # division by zero is NULL, as in SQL engines
    assert got.intervals == ((None,),)


@pytest.mark.parametrize(
    ("sql", "needle"),
    [
        ("SELECT g, COUNT(*) FROM t GROUP BY g HAVING v > 3", "column 'v' in HAVING"),
        ("SELECT COUNT(*) AS n FROM t ORDER BY v", "column 'v' in ORDER BY"),
        ("SELECT COUNT(*) FROM t LIMIT 2.5", "LIMIT"),
        ("SELECT COUNT(*) AS n FROM t ORDER BY 3", "ORDER BY"),
        ("SELECT COUNT(*) AS __x FROM t ORDER BY 1", "alias"),
        ("SELECT COUNT(*) FROM t HAVING UPPER('x') = 'X'", "UPPER"),
    ],
)
def test_refusals_name_the_construct(sql: str, needle: str) -> None:
    with pytest.raises(ParameterError, match=needle):
        split_query(sql)


_BOX = st.tuples(st.floats(-1e3, 1e3, allow_nan=False), st.floats(0, 1e3, allow_nan=False)).map(
    lambda t: (t[0], t[0] + t[1])
)


@settings(max_examples=200, deadline=None)
@given(a=_BOX, b=_BOX, ua=st.floats(0, 1), ub=st.floats(0, 1), op=st.sampled_from("+-*/"))
def test_interval_arithmetic_encloses_the_value(
    a: tuple[float, float], b: tuple[float, float], ua: float, ub: float, op: str
) -> None:
    # Moore 1966: f(x, y) lies in the enclosure for every x in a, y in b.
    term = Term(op, (Term("ref", value=0), Term("ref", value=1)))
    x, y = a[0] + ua * (a[1] - a[0]), b[0] + ub * (b[1] - b[0])
    box = enclose(term, [x, y], [list(a), list(b)])
    value = evaluate(term, [x, y])
    if op == "/" and b[0] <= 0 <= b[1]:
        assert box is None
        return
    assert box is not None and isinstance(value, float)
    slack = 1e-9 * max(1.0, abs(value))
    assert box[0] - slack <= value <= box[1] + slack
    assert not math.isnan(box[0]) and not math.isnan(box[1])


# -- end to end: the curator answers the inner query and post-processes its release ---------------

PEOPLE = one_table("people", {"region": cats("n", "s", "e", "w"), "age": ints(0, 100)})
POST_QUERIES = [
    (
        "SELECT region, COUNT(*) AS n, SUM(age) / COUNT(*) AS mean FROM people "
        "GROUP BY region HAVING COUNT(*) > 40 ORDER BY mean DESC",
        "SELECT region, n, __pp0 / n AS mean FROM r WHERE n > 40 ORDER BY mean DESC",
    ),
    (
        "SELECT region, MEDIAN(age) AS med FROM people GROUP BY region ORDER BY med, region "
        "LIMIT 2",
        "SELECT region, med FROM r ORDER BY med, region LIMIT 2",
    ),
]


def _seeded(seed: int) -> Any:
    from infodp.mechanisms.sampling import InsecureSeededSource

    return InsecureSeededSource(seed, i_understand_this_is_not_private=True)


@pytest.mark.slow
@pytest.mark.parametrize(("sql", "oracle"), POST_QUERIES)
def test_curator_answer_is_the_inner_release_post_processed(
    tmp_path: Path, sql: str, oracle: str
) -> None:
    from infodp.curator.engine import Curator

    rng = random.Random(3)
    frame = pd.DataFrame(
        {
            "region": [rng.choice("nsew") for _ in range(400)],
            "age": [rng.randint(0, 100) for _ in range(400)],
        }
    )
    setup = Curator(tmp_path / "s.duckdb")
    setup.register_dataset("people", frame, PEOPLE)
    setup.add_analyst("a", "people", epsilon=100)
    setup.add_analyst("b", "people", epsilon=100)
    setup.close()
    post = split_query(sql)
    assert post is not None
    for seed in range(5):
        # One query each (as `infodp query`): one read connection serves the store's id and
        # the answer (keep_open with one_shot), not a DuckDB open for each.
        with_post = Curator(
            tmp_path / "s.duckdb", source=_seeded(seed), keep_open=True, one_shot=True
        )
        plain = Curator(tmp_path / "s.duckdb", source=_seeded(seed), keep_open=True, one_shot=True)
        got = with_post.query("a", sql, epsilon=1)
        inner = plain.query("b", post.inner_sql, epsilon=1)
        # The same measurements, the same cost: post-processing is free.
        assert got.cost == inner.cost
        con = duckdb.connect()
        con.register("r", pd.DataFrame(list(inner.rows), columns=list(inner.columns)))
        expected = con.execute(oracle).fetchall()
        con.close()
        assert [tuple(r) for r in got.rows] == [tuple(r) for r in expected]
        assert len(got.confidence_intervals) == len(got.rows)
        assert any("post-processing" in n for n in got.notes)
        with_post.close()
        plain.close()
    ledger = Curator(tmp_path / "s.duckdb")
    spent = {b.analyst: b.spent_epsilon for b in ledger.ledger.budgets()}
    assert spent["a"] == spent["b"] == 5
    ledger.close()


def test_session_and_estimate_read_the_inner_query() -> None:
    import infodp

    frame = pd.DataFrame({"region": list("nsewnsew"), "age": [1, 2, 3, 4, 5, 6, 7, 8]})
    session = infodp.Session(frame, PEOPLE, epsilon=10, source=_seeded(1))
    sql = "SELECT region, COUNT(*) AS n FROM people GROUP BY region ORDER BY n DESC LIMIT 3"
    est = session.estimate(sql, epsilon=1)
    assert [m["measurement"] for m in est.accuracy] == ["count(*)"]
    result = session.query(sql, epsilon=1)
    assert result.columns == ("region", "n") and len(result.rows) == 3
    counts = [row[1] for row in result.rows]
    assert counts == sorted(counts, reverse=True)
