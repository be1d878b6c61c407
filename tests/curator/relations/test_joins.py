"""Joins (infodp.curator.relations.joins): exact answers on bounded data equal plain SQL on
the same data; the derived row bound m' equals its closed form (m1·m2 for private ⋈ private
on the unit, m·M for private ⋈ public; McSherry 2009, §4); every other join is refused,
saying why and what is allowed."""

from __future__ import annotations

import pytest

from _clinic import answers, plain, schema
from _stores import TEXT, population, private
from infodp.curator.relations import resolve
from infodp.errors import ParameterError


# The key by its column, its position and its SELECT alias (infodp.curator.sql.dialect rewrites
# a position before the join is resolved).
@pytest.mark.parametrize("group_by", ["r.country", "1", "c"])
def test_private_join_public_counts_equal_plain_sql(clinic, group_by):
    sql = (
        "SELECT r.country AS c, COUNT(*) AS n, SUM(income) FROM people p "
        f"JOIN regions r ON p.region = r.region GROUP BY {group_by}"
    )
    got = answers(clinic, sql)
    want = plain(
        clinic,
        "SELECT r.country, COUNT(*), SUM(p.income) FROM clinic__people p "
        "JOIN clinic__regions r ON p.region = r.region GROUP BY r.country",
    )
    # Every public country is a declared key (no partition selection); absent ones count 0.
    assert set(got) == {("x",), ("y",), ("z",)}
    for country, n, total in want:
        assert got[(country,)]["count(*)"] == n
        assert got[(country,)]["sum(income)"] == pytest.approx(total or 0)


def test_private_join_private_on_the_unit_equals_plain_sql(clinic):
    sql = (
        "SELECT kind, SUM(cost), COUNT(*) FROM people p JOIN visits v ON p.pid = v.pid "
        "WHERE p.age >= 35 GROUP BY kind"
    )
    got = answers(clinic, sql)
    want = plain(
        clinic,
        "SELECT v.kind, SUM(v.cost), COUNT(*) FROM clinic__people p JOIN clinic__visits v "
        "ON p.pid = v.pid WHERE p.age >= 35 GROUP BY v.kind",
    )
    assert len(want) == 2
    for kind, total, n in want:
        assert got[(kind,)]["count(*)"] == n
        assert got[(kind,)]["sum(cost)"] == pytest.approx(total)


def test_left_join_keeps_unmatched_private_rows(clinic):
    got = answers(clinic, "SELECT COUNT(*), COUNT(cost) FROM people LEFT JOIN visits USING (pid)")
    want = plain(
        clinic,
        "SELECT COUNT(*), COUNT(v.cost) FROM clinic__people p "
        "LEFT JOIN clinic__visits v ON p.pid = v.pid",
    )
    assert (got[()]["count(*)"], got[()]["count(cost)"]) == want[0] == (8, 7)


def test_chain_private_private_public_equals_plain_sql(clinic):
    sql = (
        "SELECT country, SUM(v.cost) AS spent FROM visits v JOIN people p USING (pid) "
        "JOIN regions r ON r.region = p.region GROUP BY country"
    )
    got = answers(clinic, sql)
    want = plain(
        clinic,
        "SELECT r.country, SUM(v.cost) FROM clinic__visits v JOIN clinic__people p "
        "ON v.pid = p.pid JOIN clinic__regions r ON r.region = p.region GROUP BY r.country",
    )
    for country, total in want:
        assert got[(country,)]["sum(cost)"] == pytest.approx(total)


def test_public_table_first_joins_inner(clinic):
    sql = "SELECT COUNT(*) FROM regions r JOIN people p ON r.region = p.region"
    assert (
        answers(clinic, sql)[()]["count(*)"]
        == plain(
            clinic,
            "SELECT COUNT(*) FROM clinic__regions r JOIN clinic__people p ON r.region = p.region",
        )[0][0]
    )


@pytest.mark.parametrize(
    ("sql", "rows"),
    [
        # private ⋈ private on the unit: m1·m2
        ("SELECT COUNT(*) FROM people JOIN visits USING (pid)", 1 * 3),
        ("SELECT COUNT(*) FROM visits a JOIN visits b ON a.pid = b.pid", 3 * 3),
        ("SELECT COUNT(*) FROM people p LEFT JOIN visits v ON p.pid = v.pid", 1 * 3),
        # private ⋈ public: m·M, M = the key column's multiplicity (region: 2 rows share 'e')
        (
            "SELECT COUNT(*) FROM visits v JOIN people p USING (pid) "
            "JOIN regions r ON p.region = r.region",
            3 * 2,
        ),
        # two keys: the least multiplicity (country 'x' twice, region 'e' twice... min = 2)
        (
            "SELECT COUNT(*) FROM people p JOIN regions r ON p.region = r.region "
            "AND p.region = r.country",
            2,
        ),
    ],
)
def test_row_bound_is_the_closed_form(sql, rows):
    assert resolve(sql, schema()).schema.max_rows_per_unit == rows


def test_columns_named_as_the_analyst_recognises_them():
    r = resolve(
        "SELECT COUNT(*) FROM visits a JOIN visits b ON a.pid = b.pid WHERE a.cost > b.cost",
        schema(),
    )
    names = [c.name for c in r.schema.columns]
    assert names[0] == "pid"  # the unit, once
    assert {"a.cost", "b.cost", "a.kind", "b.kind"} <= set(names)
    r = resolve(
        "SELECT region, COUNT(*) FROM people JOIN regions USING (region) GROUP BY region", schema()
    )
    assert [c.name for c in r.schema.columns].count("region") == 1  # a shared key: one column


@pytest.mark.parametrize(
    ("sql", "construct", "allowed"),
    [
        ("SELECT COUNT(*) FROM people CROSS JOIN visits", "CROSS JOIN", "ON a.key = b.key"),
        ("SELECT COUNT(*) FROM people, visits", "cross join", "ON a.key = b.key"),
        (
            "SELECT COUNT(*) FROM people p JOIN visits v ON p.age > v.cost",
            "without an equality on the privacy unit",
            "a.pid = b.pid",
        ),
        (
            "SELECT COUNT(*) FROM visits a JOIN visits b ON a.kind = b.kind",
            "private self-join on a key other than the privacy unit",
            "a.pid = b.pid",
        ),
        (
            "SELECT COUNT(*) FROM people p JOIN visits v ON p.region = v.kind",
            "join of private tables on a key other than the privacy unit",
            "a.pid = b.pid",
        ),
        (
            "SELECT COUNT(*) FROM people p RIGHT JOIN visits v ON p.pid = v.pid",
            "RIGHT JOIN",
            "LEFT JOIN with the tables swapped",
        ),
        (
            "SELECT COUNT(*) FROM people p FULL JOIN visits v ON p.pid = v.pid",
            "FULL JOIN",
            "LEFT JOIN with the tables swapped",
        ),
        (
            "SELECT COUNT(*) FROM people p JOIN regions r ON p.age = r.region",
            "join key p.age = r.region",
            "numbers with numbers",
        ),
        ("SELECT COUNT(*) FROM regions", "reads no private table", "nothing to protect"),
        (
            "SELECT COUNT(*) FROM regions a JOIN regions b ON a.region = b.region",
            "reads no private table",
            "list a private table first",
        ),
        (
            "SELECT COUNT(*) FROM regions r LEFT JOIN people p ON r.region = p.region",
            "LEFT JOIN that keeps a public table's rows",
            "list a private table first",
        ),
        (
            "SELECT COUNT(*) FROM people p JOIN regions r ON p.age > 3",
            "without an equality on its columns",
            "private.col = public.col",
        ),
    ],
)
def test_refused_joins_say_why_and_what_is_allowed(sql, construct, allowed):
    with pytest.raises(ParameterError) as err:
        resolve(sql, schema())
    assert construct in str(err.value)
    assert allowed in str(err.value)


def test_private_join_when_each_row_is_a_unit_is_refused():
    from infodp.curator.declaration.source import load_schema

    tables = {"a": private(None, k=TEXT), "b": private(None, k=TEXT)}
    rows = load_schema(population("row", tables, table="d"))
    with pytest.raises(ParameterError, match=r"each row is its own unit.*privacy-unit column"):
        resolve("SELECT COUNT(*) FROM a JOIN b ON a.k = b.k", rows)


def test_unknown_table_names_the_population():
    with pytest.raises(ParameterError, match="people, visits, regions"):
        resolve("SELECT COUNT(*) FROM people JOIN doctors USING (pid)", schema())
    with pytest.raises(ParameterError, match="unknown dataset 'other'"):
        resolve("SELECT COUNT(*) FROM other.people", schema())


def test_ambiguous_column_is_refused_with_the_qualified_names():
    with pytest.raises(ParameterError, match=r"ambiguous; write a\.cost or b\.cost"):
        resolve("SELECT SUM(cost) FROM visits a JOIN visits b ON a.pid = b.pid", schema())
