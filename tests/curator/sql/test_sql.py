"""The safe SQL subset: accepted forms become plans; every unsafe construct is refused by name.

Source of the list: the design ("Everything else — joins with private tables, subqueries, window
functions, raw column selection, multiple statements — is refused with an error that names the
construct").
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from _stores import TEXT, cats, floats, ints, one_table
from infodp.curator.declaration.source import load_schema
from infodp.curator.rules import measurements
from infodp.curator.sql.parse import parse_query, referenced_table
from infodp.errors import ParameterError

SCHEMA = load_schema(
    one_table(
        "people",
        {
            "age": ints(0, 120),
            "income": floats(0, 500000, "drop"),
            "height": {"type": "float"},
            "region": cats("north", "south", "east", "west"),
            "city": TEXT,
        },
        unit="person_id",
        max_rows_per_unit=2,
    )
)


@pytest.mark.parametrize(
    ("sql", "construct"),
    [
        ("SELECT COUNT(*) FROM people a JOIN people b ON a.age = b.age", "JOIN"),
        ("SELECT COUNT(*) FROM people, other", "JOIN"),
        ("SELECT COUNT(*) FROM (SELECT * FROM people)", "subquery"),
        ("SELECT COUNT(*) FROM people WHERE age IN (SELECT age FROM people)", "subquery"),
        ("SELECT COUNT(*) FROM people WHERE age > (SELECT 1)", "subquery"),
        ("SELECT SUM(age) OVER (PARTITION BY region) FROM people", "window function"),
        ("SELECT age FROM people", "raw column selection"),
        ("SELECT * FROM people", "raw column selection"),
        ("SELECT COUNT(*) FROM people; SELECT COUNT(*) FROM people", "multiple statements"),
        ("DROP TABLE people", "DROP statement"),
        ("INSERT INTO people VALUES (1)", "INSERT statement"),
        ("WITH x AS (SELECT 1) SELECT COUNT(*) FROM people", "WITH"),
        ("SELECT COUNT(*) FROM people UNION SELECT COUNT(*) FROM people", "UNION"),
        ("SELECT AVG(DISTINCT age) FROM people", "DISTINCT"),  # COUNT(DISTINCT) only
        ("SELECT DISTINCT region, COUNT(*) FROM people GROUP BY region", "DISTINCT"),
        ("SELECT region, COUNT(*) FROM people GROUP BY region HAVING COUNT(*) > 3", "HAVING"),
        ("SELECT COUNT(*) FROM people ORDER BY 1", "ORDER BY"),
        ("SELECT COUNT(*) FROM people LIMIT 1", "LIMIT"),
        ("SELECT ARRAY_AGG(age) FROM people", "aggregate function ARRAYAGG"),
        ("SELECT SUM(age + 1) FROM people", "only plain column names"),
        ("SELECT COUNT(*) + 1 FROM people", "in SELECT"),
        ("SELECT person_id, COUNT(*) FROM people GROUP BY person_id", "privacy unit"),
        ("SELECT COUNT(*) FROM people WHERE age > income", "literal"),
        ("SELECT income, COUNT(*) FROM people GROUP BY income", "GROUP BY float"),
    ],
)
def test_unsafe_sql_is_refused_naming_the_construct(sql: str, construct: str) -> None:
    with pytest.raises(ParameterError, match="refused SQL construct") as info:
        parse_query(sql, SCHEMA)
    assert construct.lower() in str(info.value).lower()


def test_unknown_table_and_column_name_them() -> None:
    with pytest.raises(ParameterError, match="unknown table 'nope'"):
        parse_query("SELECT COUNT(*) FROM nope", SCHEMA)
    with pytest.raises(ParameterError, match=r"unknown column .salary..*declared columns"):
        parse_query("SELECT SUM(salary) FROM people", SCHEMA)


def test_missing_bounds_names_the_declaration() -> None:
    with pytest.raises(ParameterError) as info:
        parse_query("SELECT AVG(height) FROM people", SCHEMA)
    text = str(info.value)
    assert "bounds: [low, high]" in text and "height" in text and "never computed" in text


def test_sum_over_category_is_refused() -> None:
    with pytest.raises(ParameterError, match="numeric column"):
        parse_query("SELECT SUM(region) FROM people", SCHEMA)


def test_issue_query_becomes_histogram_plan() -> None:
    sql = "SELECT region, COUNT(*), AVG(income) FROM people GROUP BY region"
    plan = parse_query(sql, SCHEMA)
    assert [o.name for o in plan.outputs] == ["region", "COUNT(*)", "AVG(income)"]
    assert plan.group_by[0].categories == ("north", "south", "east", "west")
    assert not plan.needs_partition_selection
    keys = [m.key for m in measurements(plan)]
    assert keys == ["count(*)", "csum(income)", "count(income)"]


def test_quantile_forms_and_partition_selection() -> None:
    plan = parse_query(
        "SELECT city, MEDIAN(age), QUANTILE(age, 0.9), QUANTILE_CONT(income, 0.25) "
        "FROM people WHERE region IN ('north', 'south') AND NOT age BETWEEN 1 AND 2 "
        "GROUP BY city",
        SCHEMA,
    )
    qs = [a.q for a in plan.aggregates]
    assert qs == [Fraction(1, 2), Fraction(9, 10), Fraction(1, 4)]
    assert plan.needs_partition_selection
    # partition selection always measures COUNT(*) first (it decides which groups are shown)
    assert measurements(plan)[0].key == "count(*)"


def test_plans_are_immutable() -> None:
    plan = parse_query("SELECT COUNT(*) FROM people", SCHEMA)
    with pytest.raises(AttributeError):
        plan.table = "other"  # type: ignore[misc]


def test_referenced_table_and_parse_errors() -> None:
    assert referenced_table("SELECT COUNT(*) FROM people p WHERE p.age > 3") == "people"
    with pytest.raises(ParameterError, match="could not be parsed"):
        referenced_table("SELECT COUNT(* FROM")
    with pytest.raises(ParameterError, match="non-empty"):
        referenced_table("  ")


def test_output_names_match_duckdb_printing() -> None:
    # Unaliased aggregates are named as sqlglot's DuckDB generator prints them (the engine
    # avoids loading that dialect per query; this checks the names did not change).
    # Each aggregate's rule names its unaliased output (infodp.curator.rules).
    import sqlglot

    from infodp.curator.declaration.source import load_schema

    schema = load_schema(one_table("t", {"x": ints(0, 9)}))
    items = [
        "COUNT(*)", "COUNT(x)", "SUM(x)", "AVG(x)", "MEDIAN(x)", "QUANTILE(x, 0.9)",
        "QUANTILE_CONT(x, 0.25)", "QUANTILE_DISC(x, 0.1)", "APPROX_QUANTILE(x, 0.5)", "STDDEV(x)",
        "STDDEV_POP(x)", "STDDEV_SAMP(x)", "VARIANCE(x)", "VAR_POP(x)", "VAR_SAMP(x)", "MIN(x)",
        "MAX(x)",
    ]  # fmt: skip
    for item in items:
        (ours,) = parse_query(f"SELECT {item} FROM t", schema).outputs
        (duck,) = sqlglot.parse_one(f"SELECT {item} FROM t", read="duckdb").expressions
        assert ours.name == duck.sql(dialect="duckdb")
