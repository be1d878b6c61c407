"""Which tables a query reads (infodp.curator.relations.tables.tables_read)."""

from __future__ import annotations

import pytest

from infodp.curator.relations import tables_read
from infodp.errors import ParameterError


@pytest.mark.parametrize(
    ("sql", "tables"),
    [
        ("SELECT COUNT(*) FROM people", ("people",)),
        ("SELECT COUNT(*) FROM clinic.people", ("clinic.people",)),
        (
            "SELECT COUNT(*) FROM people p JOIN visits v USING (pid) "
            "LEFT JOIN regions r ON p.region = r.region",
            ("people", "visits", "regions"),
        ),
        (
            "SELECT AVG(t) FROM (SELECT pid, SUM(cost) AS t FROM clinic.visits GROUP BY pid) s "
            "JOIN people USING (pid)",
            ("clinic.visits", "people"),
        ),
        ("SELECT COUNT(*) FROM (SELECT * FROM (SELECT pid FROM a) x) y", ("a",)),
    ],
)
def test_every_table_as_written(sql, tables):
    assert tables_read(sql) == tables


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("SELECT COUNT(*) FROM t WHERE x IN (SELECT x FROM u)", "subquery outside FROM"),
        ("SELECT (SELECT COUNT(*) FROM u) FROM t", "subquery outside FROM"),
        ("SELECT COUNT(*) FROM t WHERE EXISTS (SELECT 1 FROM u)", "subquery outside FROM"),
        ("WITH u AS (SELECT 1) SELECT COUNT(*) FROM u", "WITH"),
        ("SELECT 1 FROM a UNION SELECT 1 FROM b", "set operation UNION"),
        ("DELETE FROM t", "only SELECT"),
        ("SELECT COUNT(*) FROM t; SELECT 1", "multiple statements"),
        ("SELECT COUNT(*) FROM read_csv('x.csv')", "read tables and subqueries only"),
    ],
)
def test_refusals(sql, says):
    with pytest.raises(ParameterError, match=says):
        tables_read(sql)


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("SELECT a, COUNT(*) FROM people GROUP BY ROLLUP (a)", "ROLLUP in GROUP BY"),
        ("SELECT a, COUNT(*) FROM people GROUP BY CUBE (a)", "CUBE in GROUP BY"),
        (
            "SELECT a, COUNT(*) FROM people GROUP BY GROUPING SETS ((a))",
            "GROUPING SETS in GROUP BY",
        ),
        ("SELECT a, COUNT(*) FROM people GROUP BY ALL", "ALL in GROUP BY"),
        (
            "SELECT SUM(age) OVER w FROM people WINDOW w AS (PARTITION BY region)",
            "WINDOWS in SELECT",
        ),
        (
            "SELECT COUNT(*) FROM (SELECT pid FROM visits WINDOW w AS (PARTITION BY pid)) t",
            "WINDOWS in SELECT",
        ),
    ],
)
def test_clauses_a_relation_would_not_carry_are_refused(sql, says):
    from _clinic import schema
    from infodp.curator.relations import resolve

    with pytest.raises(ParameterError, match=says):
        resolve(sql, schema())
