"""A derived relation answers the same on Spark as on DuckDB: the statements compiled for
each engine (the relation's SQL rendered per dialect) give identical exact aggregates on
the same stored tables, including values no stored value may make fail (a zero
denominator, a text read as a number) under Spark's ANSI mode."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from _clinic import clinic_store, schema
from infodp.curator.backends.compile import compiled_statements, relation_text
from infodp.curator.backends.dialects import SPARK
from infodp.curator.relations import resolve
from infodp.curator.rules import measurements
from infodp.curator.sql.parse import parse_query

# Every test here starts a local Spark session: the quick tier leaves them out (-m "not spark").
pytestmark = pytest.mark.spark

QUERIES = [
    "SELECT country, COUNT(*), SUM(income) FROM people p JOIN regions r "
    "ON p.region = r.region GROUP BY country",
    "SELECT kind, SUM(cost * 1.1), AVG(CASE WHEN income > 300 THEN 1 ELSE 0 END) "
    "FROM people LEFT JOIN visits USING (pid) GROUP BY kind",
    "SELECT AVG(total), SUM(n) FROM (SELECT pid, SUM(cost) AS total, COUNT(*) AS n "
    "FROM visits GROUP BY pid) t JOIN people USING (pid) WHERE total / income < 1",
    "SELECT CASE WHEN age + 5 < 40 THEN 'young' ELSE 'old' END AS band, "
    "SUM(LEAST(age, 60) / GREATEST(cost, 1)), COUNT(*) FILTER (WHERE CAST(region AS INT) > 0) "
    "FROM people JOIN visits USING (pid) GROUP BY band",
]


@pytest.fixture(scope="module")
def ansi_spark(spark: Any) -> Iterator[Any]:
    """The process's shared session (tests/_spark.py; stopping a session of its own
    here stopped the shared one's context under the next Spark module), ANSI SQL on."""
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    yield spark
    spark.conf.set("spark.sql.ansi.enabled", before)


def test_spark_and_duckdb_agree_on_derived_relations(ansi_spark: Any) -> None:
    spark = ansi_spark
    backend = clinic_store()
    con = backend.connect(read_only=True)
    for table in ("clinic__people", "clinic__visits", "clinic__regions"):
        frame = con.execute(f'SELECT * FROM "{table}"').df()
        spark.createDataFrame(frame).createOrReplaceTempView(table)
        spark.createDataFrame(frame).createOrReplaceTempView(f"copy_{table}")
    for sql in QUERIES:
        r = resolve(sql, schema())
        plan = parse_query(r.sql, r.schema)
        ms = measurements(plan)
        duck = compiled_statements(plan, r.schema, ms, unit_rows_ok=True)[0]
        text = compiled_statements(plan, r.schema, ms, unit_rows_ok=True, dialect=SPARK)[0]
        want = sorted(map(tuple, con.execute(duck).fetchall()), key=repr)
        got = sorted((tuple(row) for row in spark.sql(text).collect()), key=repr)
        assert got == want, sql
        # the same through a view of the relation over renamed stored tables (as a Spark
        # store names its bounded copies)
        renamed = {t: f"copy_{t}" for t in ("clinic__people", "clinic__visits", "clinic__regions")}
        spark.sql("CREATE OR REPLACE TEMP VIEW rel AS " + relation_text(r.schema, SPARK, renamed))
        text = compiled_statements(
            plan, r.schema, ms, unit_rows_ok=True, dialect=SPARK, relation="rel"
        )[0]
        assert sorted((tuple(row) for row in spark.sql(text).collect()), key=repr) == want
    con.close()
