"""The entry point (infodp.curator.relations.resolve): a plain single-table query is left
as it is; a derived relation compiles on both dialects and binds on no data (the check
path); its SQL depends on the query and the declaration only; and, on two stores differing
in one person (removed from every table), each exact measurement moves by at most the
sensitivity its rule derives from the relation's declaration."""

from __future__ import annotations

import pytest

from _clinic import clinic_store, measure, schema
from _stores import cats, ints, one_table
from infodp.curator.backends.compile import compiled_statements
from infodp.curator.backends.dialects import SPARK
from infodp.curator.declaration.source import load_schema
from infodp.curator.relations import resolve
from infodp.curator.rules import measure_for, measurements
from infodp.curator.sql.parse import parse_query

SINGLE = load_schema(
    one_table(
        "people", {"age": ints(0, 99), "region": cats("n", "s")}, unit="pid", max_rows_per_unit=2
    )
)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT region, COUNT(*), AVG(age) FROM people WHERE age > 3 GROUP BY region",
        "SELECT FLOOR(age / 10) * 10 AS d, COUNT(*) FROM people GROUP BY d",
        "SELECT COUNT(*) FROM people p WHERE p.age BETWEEN 1 AND 5",
    ],
)
def test_a_plain_single_table_query_is_unchanged(sql):
    r = resolve(sql, SINGLE)
    assert r.sql is sql and r.schema is SINGLE and not r.row_cut


def test_a_single_table_query_with_derived_values_reads_a_relation():
    r = resolve("SELECT SUM(age * 2) FROM people WHERE age + 1 > 3", SINGLE)
    assert r.schema.source_sql is not None and '"people" AS "people"' in r.schema.source_sql
    assert r.schema.max_rows_per_unit == 2
    assert r.schema.column("age * 2").bounds == (0.0, 198.0)


def test_plain_refusals_keep_their_message():
    with pytest.raises(Exception, match="raw column selection"):
        resolve("SELECT age FROM people", SINGLE)


@pytest.mark.parametrize("dialect", [None, SPARK])
def test_relation_compiles_and_binds_on_no_data(dialect):
    from infodp.curator.backends.duckdb import DuckDBBackend

    sql = (
        "SELECT country, SUM(total * 1.5), COUNT(DISTINCT pid) FROM (SELECT pid, SUM(cost) "
        "AS total FROM visits GROUP BY pid) t JOIN people USING (pid) "
        "JOIN regions r ON r.region = people.region GROUP BY country"
    )
    r = resolve(sql, schema())
    plan = parse_query(r.sql, r.schema)
    ms = measurements(plan)
    if dialect is None:
        DuckDBBackend(":memory:").check(plan, r.schema, ms, unit_rows_ok=True)
        text = compiled_statements(plan, r.schema, ms, unit_rows_ok=True)[0]
        assert f'AS "{r.schema.table}"' in text and "clinic__visits" in text
    else:
        text = compiled_statements(plan, r.schema, ms, unit_rows_ok=True, dialect=dialect)[0]
        assert "`clinic__visits`" in text


def test_relation_sql_is_a_function_of_query_and_declaration():
    sql = "SELECT kind, AVG(cost * 2) FROM people JOIN visits USING (pid) GROUP BY kind"
    a = resolve(sql, schema())
    resolve.cache_clear()
    b = resolve(sql, schema())
    assert a == b


NEIGHBOUR_QUERIES = [
    # private ⋈ public, private ⋈ private, a chain
    "SELECT country, COUNT(*), SUM(income) FROM people p JOIN regions r "
    "ON p.region = r.region GROUP BY country",
    "SELECT kind, COUNT(*), SUM(cost), AVG(age) FROM people JOIN visits USING (pid) GROUP BY kind",
    "SELECT country, SUM(cost) FROM visits v JOIN people p USING (pid) "
    "JOIN regions r ON r.region = p.region GROUP BY country",
    # derived values in WHERE, in aggregates, in GROUP BY
    "SELECT COUNT(*), SUM(age * 2 - cost) FROM people JOIN visits USING (pid) WHERE cost * 2 > age",
    "SELECT CASE WHEN age + cost > 60 THEN 'hi' ELSE 'lo' END AS b, "
    "AVG(CASE WHEN income > 300 THEN 1 ELSE 0 END) FROM people JOIN visits USING (pid) "
    "GROUP BY b",
    # row-level and per-unit subqueries
    "SELECT SUM(c2) FROM (SELECT pid, cost * 2 AS c2 FROM visits WHERE kind = 'b') s",
    "SELECT AVG(total), SUM(n) FROM (SELECT pid, SUM(cost) AS total, COUNT(*) AS n "
    "FROM visits GROUP BY pid) t",
    "SELECT COUNT(DISTINCT pid) FROM people JOIN visits USING (pid)",
]


def _exact(backend, sql):
    r, ms, got = measure(backend, sql)
    return r.schema, ms, got.values


@pytest.mark.slow
@pytest.mark.parametrize("sql", NEIGHBOUR_QUERIES)
@pytest.mark.parametrize("removed", ["p1", "p3", "p5"])
def test_removing_one_person_moves_each_measurement_within_its_sensitivity(sql, removed):
    full = clinic_store()
    neighbour = clinic_store(without=removed)
    rel, ms, a = _exact(full, sql)
    _, _, b = _exact(neighbour, sql)
    for i, m in enumerate(ms):
        moved = sum(
            abs((a.get(k, [0] * len(ms))[i] or 0) - (b.get(k, [0] * len(ms))[i] or 0))
            for k in set(a) | set(b)
        )
        assert moved <= measure_for(m).sensitivity(m, rel), (m.key, moved)


def test_a_view_the_caller_names_is_read_in_place_of_the_relation_sql():
    r = resolve("SELECT SUM(cost * 2) FROM visits", schema())
    plan = parse_query(r.sql, r.schema)
    ms = measurements(plan)
    text = compiled_statements(plan, r.schema, ms, unit_rows_ok=True, relation="v_view")[0]
    assert '"v_view"' in text and "clinic__visits" not in text
    text = compiled_statements(plan, r.schema, ms, unit_rows_ok=True)[0]
    assert '"clinic__visits"' in text
