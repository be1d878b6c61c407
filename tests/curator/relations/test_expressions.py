"""Derived values (infodp.curator.relations.expressions): exact answers equal plain SQL on
the same bounded data; the derived bounds hold the value DuckDB computes on any in-bound
inputs (interval arithmetic, Moore 1966: the inclusion property); what cannot be bounded is
refused when aggregated, naming it."""

from __future__ import annotations

import duckdb
import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

from _clinic import answers, frames, plain, schema, store
from infodp.curator.declaration.schema import ColumnSpec
from infodp.curator.relations import resolve
from infodp.curator.relations.expressions import value
from infodp.curator.relations.values import stored_value
from infodp.curator.sql.parse import parse_query
from infodp.errors import ParameterError


def test_derived_where_equals_plain_sql(clinic):
    got = answers(clinic, "SELECT COUNT(*) FROM people WHERE age * 10 > income OR age > 80")
    want = plain(clinic, "SELECT COUNT(*) FROM clinic__people WHERE age * 10 > income OR age > 80")
    assert got[()]["count(*)"] == want[0][0] == 3


def test_derived_values_inside_aggregates_equal_plain_sql(clinic):
    got = answers(
        clinic,
        "SELECT AVG(CASE WHEN income > 300 THEN 1 ELSE 0 END) AS rich, SUM(age + 1), "
        "SUM(cost * 1.1) FROM people JOIN visits USING (pid)",
    )[()]
    want = plain(
        clinic,
        "SELECT SUM(CASE WHEN income > 300 THEN 1 ELSE 0 END), COUNT(*), SUM(age + 1), "
        "SUM(cost * 1.1) FROM clinic__people JOIN clinic__visits USING (pid)",
    )[0]
    assert got["sum(CASE WHEN income > 300 THEN 1 ELSE 0 END)"] == want[0]
    assert got["count(CASE WHEN income > 300 THEN 1 ELSE 0 END)"] == want[1]
    assert got["sum(age + 1)"] == want[2]
    # cost · 1.1 is snapped to its grid (step 2^-15): at most half a step per row
    assert got["sum(cost * 1.1)"] == pytest.approx(want[3], abs=7 * 2**-16)


def test_lifted_group_keys_equal_plain_sql(clinic):
    sql = (
        "SELECT CASE WHEN age + 5 < 40 THEN 'young' ELSE 'old' END AS band, "
        "LEAST(age, 60) AS capped, COUNT(*) FROM people GROUP BY band, capped"
    )
    r = resolve(sql, schema())
    assert r.schema.column("band").categories == ("young", "old")
    assert r.schema.column("capped").bounds == (0.0, 60.0)  # an int key over 0..60
    got = answers(clinic, sql)
    want = plain(
        clinic,
        "SELECT CASE WHEN age + 5 < 40 THEN 'young' ELSE 'old' END, LEAST(age, 60), COUNT(*) "
        "FROM clinic__people GROUP BY ALL",
    )
    # every declared cell is released, present in the data or not
    keys = parse_query(r.sql, r.schema).group_by
    assert [len(k.categories or ()) for k in keys] == [2, 61]
    for band, capped, n in want:
        assert got[(band, str(capped))]["count(*)"] == n
    assert sum(c["count(*)"] for c in got.values()) == 5


def test_bins_stay_with_the_derived_key_parser(clinic):
    r = resolve(
        "SELECT FLOOR(age / 10) * 10 AS decade, COUNT(*) FROM people p "
        "JOIN visits v ON p.pid = v.pid GROUP BY decade",
        schema(),
    )
    assert "FLOOR" in r.sql  # read by curator.derived as bins (its domain: the 10 bins)
    assert parse_query(r.sql, r.schema).group_by[0].categories == tuple(
        str(10 * i) for i in range(10)
    )
    got = answers(
        clinic,
        "SELECT FLOOR(age / 10) * 10 AS decade, COUNT(*) FROM people p "
        "JOIN visits v ON p.pid = v.pid GROUP BY decade",
    )
    assert got == {(k,): {"count(*)": n} for k, n in [("20", 2), ("30", 1), ("50", 3), ("90", 1)]}


def test_out_of_bound_values_are_clamped_before_the_expression():
    people, visits = frames(
        [("p1", 150, 2000.0, "n"), ("p2", -5, 10.0, "s")],
        [("p1", 80.0, "a"), ("p2", -1.0, "b")],
    )
    backend = store(people, visits)
    got = answers(backend, "SELECT SUM(age * 2 + cost) FROM people JOIN visits USING (pid)")
    want = plain(
        backend,
        "SELECT SUM(LEAST(GREATEST(age, 0), 99) * 2 + LEAST(GREATEST(cost, 0), 50)) "
        "FROM clinic__people JOIN clinic__visits USING (pid)",
    )
    assert got[()]["sum(age * 2 + cost)"] == want[0][0] == 99 * 2 + 50 + 0
    # filters read stored values: the stored 150 passes, a clamped 99 would not
    got = answers(backend, "SELECT COUNT(*) FROM people WHERE age - 100 > 40")
    assert got[()]["count(*)"] == 1


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        (
            "SELECT SUM(cost / age) FROM people JOIN visits USING (pid)",
            ["cost / age", "contain 0", "GREATEST(value, c)"],
        ),
        ("SELECT SUM(SQRT(cost)) FROM visits", ["SQRT", "CASE, COALESCE"]),
        ("SELECT SUM(region + 1) FROM people", ["arithmetic on", "only numbers"]),
        ("SELECT SUM(CAST(region AS INT)) FROM people", ["no finite bounds", "reads text"]),
        ("SELECT COUNT(*) FROM people WHERE age = region", ["compares a number with a text"]),
        ("SELECT SUM(CASE WHEN age > 3 THEN 'a' ELSE 1 END) FROM people", ["mix numbers"]),
        ("SELECT COUNT(*) FROM people WHERE age + 1", ["a condition is needed"]),
        ("SELECT SUM(COUNT(*)) FROM people", ["aggregate", "grouped by the privacy unit"]),
        (
            "SELECT cost / 2 AS h, COUNT(*) FROM visits GROUP BY h",
            ["GROUP BY the derived float value 'h'", "CAST it to INT"],
        ),
    ],
)
def test_refusals_name_the_value_and_the_way_out(sql, says):
    with pytest.raises(ParameterError) as err:
        resolve(sql, schema())
    for text in says:
        assert text in str(err.value)


def test_categories_of_case_and_coalesce():
    r = resolve("SELECT COALESCE(kind, 'none') AS k, COUNT(*) FROM visits GROUP BY k", schema())
    assert r.schema.column("k").categories == ("a", "b", "none")
    r = resolve(
        "SELECT CASE kind WHEN 'a' THEN 'first' END AS k, COUNT(*) FROM visits GROUP BY k",
        schema(),
    )
    assert r.schema.column("k").categories == ("first",)  # NULL rows are no cell


# -- the interval-arithmetic law, on DuckDB's own evaluation ---------------------------------

_COLUMNS = {
    "a": ColumnSpec("a", "int", bounds=(-7.0, 12.0)),
    "b": ColumnSpec("b", "float", bounds=(0.5, 3.25)),
}
_LEAVES = st.sampled_from(["a", "b", "2", "-3", "0.5"])


def _expressions(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, st.sampled_from(["+", "-", "*", "/"]), children).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        children.map(lambda x: f"-({x})"),
        st.tuples(st.sampled_from(["ABS", "FLOOR", "CEIL", "ROUND"]), children).map(
            lambda t: f"{t[0]}({t[1]})"
        ),
        st.tuples(st.sampled_from(["LEAST", "GREATEST", "COALESCE"]), children, children).map(
            lambda t: f"{t[0]}({t[1]}, {t[2]})"
        ),
        st.tuples(children, children, children).map(
            lambda t: f"CASE WHEN {t[0]} > b THEN {t[1]} ELSE {t[2]} END"
        ),
        children.map(lambda x: f"CAST({x} AS INT)"),
        children.map(lambda x: f"({x} >= 1)"),
    )


_CON = duckdb.connect()


@settings(max_examples=150, deadline=None)
@given(
    st.recursive(_LEAVES, _expressions, max_leaves=6),
    st.floats(-7, 12),
    st.floats(0.5, 3.25),
)
def test_derived_bounds_hold_the_value_on_in_bound_inputs(text, a, b):
    cols = {n: stored_value("t", spec, grid=False) for n, spec in _COLUMNS.items()}
    v = value(sqlglot.parse_one(text), lambda c: cols[c.name])
    if v.type == "bool" or v.box is None:
        return  # a condition, or a quotient whose denominator may be 0 (no box: refused)
    bounded = v.bounded.sql()
    got = _CON.execute(f"SELECT {bounded} FROM (SELECT {round(a)} AS a, {b!r} AS b) AS t")
    row = got.fetchone()
    assert row is not None
    if row[0] is not None:
        assert v.box[0] <= row[0] <= v.box[1], (text, v.box, row[0])


def test_filter_conditions_and_quantile_arguments_may_be_derived(clinic):
    sql = (
        "SELECT COUNT(*) FILTER (WHERE cost * 2 > age) AS over, MEDIAN(cost + 1) AS mid "
        "FROM people JOIN visits USING (pid)"
    )
    r = resolve(sql, schema())
    assert r.schema.column("cost + 1").bounds == (1.0, 51.0)
    got = answers(clinic, sql)[()]
    want = plain(
        clinic,
        "SELECT COUNT(*) FILTER (WHERE cost * 2 > age) FROM clinic__people "
        "JOIN clinic__visits USING (pid)",
    )
    assert got["count(*) filter(where cost * 2 > age = 1)"] == want[0][0] == 3


def test_no_stored_value_makes_the_statement_fail():
    # The least BIGINT, a huge value and a zero denominator: negating, ABS, arithmetic and
    # casts are computed in DOUBLE or TRY_CAST, so the outcome never depends on a stored value.
    people, visits = frames(
        [("p1", -(2**63), 1.0, "n"), ("p2", 2**62, 0.0, "s")], [("p1", 0.0, "a")]
    )
    backend = store(people, visits)
    got = answers(
        backend,
        "SELECT COUNT(*) FILTER (WHERE -age > 0), COUNT(*) FILTER (WHERE ABS(age) > 5), "
        "COUNT(*) FILTER (WHERE CAST(age * age AS INT) > 0), "
        "COUNT(*) FILTER (WHERE 1 / income > 0) FROM people",
    )
    # 1 / 0 is NULL (on every engine), so that row is not counted
    assert list(got[()].values()) == [1.0, 2.0, 0.0, 1.0]
