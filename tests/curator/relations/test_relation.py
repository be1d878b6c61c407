"""Subqueries in FROM (infodp.curator.relations.relation): row-level and per-unit
aggregations give the answers plain SQL gives on the same bounded data; a per-unit
result's bounds are the closed forms of McSherry 2009, §4 (SUM of m values in [lo, hi]:
[m·min(lo, 0), m·max(hi, 0)]; COUNT in [0, m]); what would mix units is refused."""

from __future__ import annotations

import pytest

from _clinic import answers, plain, schema
from _stores import TEXT, floats, ints, population, private
from infodp.curator.declaration.source import load_schema
from infodp.curator.relations import resolve
from infodp.errors import ParameterError

PER_UNIT = "SELECT pid, SUM(cost) AS total, COUNT(*) AS n FROM visits GROUP BY pid"


def test_per_unit_aggregation_equals_plain_sql(clinic):
    got = answers(clinic, f"SELECT AVG(total), SUM(n), COUNT(*) FROM ({PER_UNIT}) t")[()]
    want = plain(
        clinic,
        "SELECT SUM(total), COUNT(total), SUM(n), COUNT(*) FROM "
        "(SELECT pid, SUM(cost) AS total, COUNT(*) AS n FROM clinic__visits GROUP BY pid)",
    )[0]
    assert got["sum(total)"] == pytest.approx(want[0])
    assert (got["count(total)"], got["sum(n)"], got["count(*)"]) == want[1:] == (4, 7, 4)


def test_per_unit_result_joined_back_and_grouped(clinic):
    sql = (
        f"SELECT r.country, SUM(t.total) FROM ({PER_UNIT}) t JOIN people p ON p.pid = t.pid "
        "JOIN regions r ON r.region = p.region WHERE t.n >= 1 GROUP BY r.country"
    )
    got = answers(clinic, sql)
    want = plain(
        clinic,
        "SELECT r.country, SUM(t.total) FROM (SELECT pid, SUM(cost) AS total FROM "
        "clinic__visits GROUP BY pid) t JOIN clinic__people p ON p.pid = t.pid "
        "JOIN clinic__regions r ON r.region = p.region GROUP BY r.country",
    )
    for country, total in want:
        assert got[(country,)]["sum(total)"] == pytest.approx(total)


def test_row_level_subquery_equals_plain_sql(clinic):
    sql = (
        "SELECT band, SUM(spend) FROM (SELECT v.pid, CASE WHEN age < 40 THEN 'young' "
        "ELSE 'old' END AS band, cost * 2 AS spend FROM visits v JOIN people p "
        "USING (pid) WHERE kind = 'a') s GROUP BY band"
    )
    got = answers(clinic, sql)
    want = plain(
        clinic,
        "SELECT CASE WHEN age < 40 THEN 'young' ELSE 'old' END, SUM(cost * 2) FROM "
        "clinic__visits v JOIN clinic__people p USING (pid) WHERE kind = 'a' GROUP BY 1",
    )
    assert {k[0] for k in got} == {b for b, _ in want}
    for band, total in want:
        assert got[(band,)]["sum(spend)"] == pytest.approx(total)


def test_per_unit_bounds_are_the_closed_forms():
    visits = private(20, pid=TEXT, cost=floats(0, 5000), day=ints(1, 7))
    s = load_schema(population("pid", {"visits": visits}, table="clinic"))
    r = resolve(
        "SELECT AVG(total) FROM (SELECT pid, SUM(cost) AS total, COUNT(*) AS n, "
        "AVG(cost) AS mean, MAX(day) AS last, COUNT(DISTINCT day) AS days "
        "FROM visits GROUP BY pid) t",
        s,
    )
    c = r.schema.column
    assert c("total").bounds == (0.0, 20 * 5000.0)
    assert c("n").bounds == c("days").bounds == (0.0, 20.0)
    assert c("mean").bounds == (0.0, 5000.0)
    assert (c("last").type, c("last").bounds) == ("int", (1.0, 7.0))
    assert r.schema.max_rows_per_unit == 1  # one row per unit
    # grouped by the unit and a key: a unit has at most its m rows
    r = resolve(
        "SELECT AVG(total) FROM (SELECT pid, day, SUM(cost) AS total FROM visits "
        "GROUP BY pid, day) t",
        s,
    )
    assert r.schema.max_rows_per_unit == 20
    assert r.schema.column("total").bounds == (0.0, 100_000.0)


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        (
            "SELECT AVG(s) FROM (SELECT kind, SUM(cost) AS s FROM visits GROUP BY kind) t",
            ["not grouped by the privacy unit", "aggregate per unit, then aggregate across"],
        ),
        (
            "SELECT AVG(s) FROM (SELECT SUM(cost) AS s FROM visits) t",
            ["not grouped by the privacy unit"],
        ),
        (
            "SELECT COUNT(*) FROM (SELECT pid FROM visits ORDER BY cost LIMIT 3) t",
            ["ORDER BY in a subquery", "filter with WHERE"],
        ),
        ("SELECT COUNT(*) FROM (SELECT pid, cost + 1 FROM visits) t", ["name it"]),
        (
            "SELECT COUNT(*) FROM people WHERE pid IN (SELECT pid FROM visits)",
            ["subquery outside FROM", "aggregate per unit in a subquery in FROM"],
        ),
        (
            "SELECT COUNT(*) FROM people WHERE EXISTS (SELECT 1 FROM visits)",
            ["subquery outside FROM"],
        ),
        ("SELECT SUM((SELECT MAX(cost) FROM visits)) FROM people", ["subquery outside FROM"]),
        (
            "SELECT AVG(s) FROM (SELECT pid, SUM(region) AS s FROM people GROUP BY pid) t",
            ["SUM(region)", "not a bounded number"],
        ),
        (
            "SELECT AVG(s) FROM (SELECT pid, cost, SUM(cost) AS s FROM visits GROUP BY pid) t",
            ["column 'cost' in a per-unit subquery"],
        ),
        (
            "SELECT AVG(m) FROM (SELECT pid, MEDIAN(cost) AS m FROM visits GROUP BY pid) t",
            ["allowed there: COUNT"],
        ),
        ("SELECT COUNT(*) FROM (SELECT * FROM regions) t", ["reads no private table"]),
    ],
)
def test_refused_subqueries_say_why(sql, says):
    with pytest.raises(ParameterError) as err:
        resolve(sql, schema())
    for text in says:
        assert text in str(err.value)


def test_having_in_a_per_unit_subquery_filters_units(clinic):
    got = answers(clinic, f"SELECT COUNT(*) FROM ({PER_UNIT} HAVING COUNT(*) >= 2) t")
    assert got[()]["count(*)"] == 2  # p1 (2 visits) and p3 (3)
