"""The declared bound on the work one person can cause: every relation a query builds holds at
most ``max_derived_rows_per_unit`` rows of one unit, derived from the declaration alone.

The bound of each amplifier is checked against its closed form (m·M^j for j public joins on
a key shared by M rows, m^(k+1) for k self-joins on the unit, m·M for one heavy key;
McSherry 2009, §4: a unit's contribution through a join is its rows times the rows each meets),
the refusal names the limit, the bound and the factors, and a declared limit moves the line.
Filters on one table are applied before its joins (Haeberlen, Pierce & Narayan 2011, §5: the
work of a query must not grow with one person's rows that a filter throws away), with the
same rows as plain SQL.
"""

from __future__ import annotations

import re

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _amplifiers import chain, declaration, heavy, self_join, tables
from _stores import TEXT, one_table
from infodp.curator.declaration.schema import DEFAULT_MAX_DERIVED_ROWS_PER_UNIT, DatasetSchema
from infodp.curator.declaration.source import load_schema
from infodp.curator.engine import Curator
from infodp.curator.relations import resolve
from infodp.errors import ParameterError


def _schema(limit: int | None = None, heavy_rows: int = 5000) -> DatasetSchema:
    """The amplifiers' population with the public facts registration measures."""
    s = load_schema(declaration(limit))
    data = tables("with", heavy_rows)
    members = []
    for m in s.members:
        if m.public:
            counts = data[m.table]["k"].value_counts()
            col = m.columns[0]
            col = type(col)(col.name, col.type, multiplicity=int(counts.max()))
            m = type(m)(m.table, m.privacy_unit, (col,), public=True)
        members.append(m)
    return type(s)(
        s.table, s.privacy_unit, (), members=tuple(members), max_derived_rows_per_unit=limit
    )


def _bound(err: ParameterError) -> int:
    found = re.search(r"up to (\d+) rows", str(err))
    assert found is not None, str(err)
    return int(found.group(1))


@pytest.mark.parametrize(
    ("sql", "bound"),
    [
        (chain(5), 3 * 4**6),
        (chain(10), 3 * 4**11),
        (self_join(8), 3**9),
        (self_join(14), 3**15),
        (heavy(), 3 * 5000),
    ],
    ids=["chain-5", "chain-10", "self-join-8", "self-join-14", "heavy-key"],
)
def test_each_amplifier_is_refused_at_the_default_limit_naming_its_closed_form_bound(
    sql: str, bound: int
) -> None:
    with pytest.raises(ParameterError) as err:
        resolve(sql, _schema())
    text = str(err.value)
    assert _bound(err.value) == bound
    assert f"limit of {DEFAULT_MAX_DERIVED_ROWS_PER_UNIT} rows" in text
    assert "max_derived_rows_per_unit" in text and "\n" not in text
    assert "max_rows_per_unit 3" in text  # how it arose: the visits' declared m ...
    if "keys" in sql or "heavy" in sql:
        assert "rows share one key" in text  # ... times the public key's multiplicity


@given(k=st.integers(0, 12), limit=st.integers(1, 10**7))
@settings(max_examples=40, deadline=None)
def test_a_public_chain_is_answered_exactly_when_its_bound_is_within_a_declared_limit(
    k: int, limit: int
) -> None:
    bound = 3 * 4 ** (k + 1)
    schema = _schema(limit=max(limit, 3))
    if bound <= schema.work_limit:
        assert resolve(chain(k), schema).schema.max_rows_per_unit == bound
    else:
        with pytest.raises(ParameterError) as err:
            resolve(chain(k), schema)
        assert _bound(err.value) == bound


def test_the_bound_inside_a_subquery_counts_even_when_the_outer_relation_is_small() -> None:
    # A per-unit aggregation leaves one row per person, but builds 3^9 rows of them first.
    inner = self_join(8).replace("SELECT COUNT(*)", "SELECT v0.person_id, COUNT(*) AS n")
    sql = f"SELECT SUM(n) FROM ({inner} GROUP BY v0.person_id) u"
    with pytest.raises(ParameterError) as err:
        resolve(sql, _schema())
    assert _bound(err.value) == 3**9 and "inside subquery u" in str(err.value)
    assert resolve(sql, _schema(limit=3**9)).schema.max_rows_per_unit == 1


def test_a_long_chain_gives_a_short_message() -> None:
    with pytest.raises(ParameterError) as err:
        resolve(chain(200), _schema())
    assert "more factors" in str(err.value) and len(str(err.value)) < 1000


def test_declarations_keep_each_table_within_the_limit() -> None:
    decl = declaration(None)
    decl["tables"]["visits"]["max_rows_per_unit"] = DEFAULT_MAX_DERIVED_ROWS_PER_UNIT + 1  # type: ignore[index]
    with pytest.raises(ParameterError, match=r"tables\.visits\.max_rows_per_unit must be at most"):
        load_schema(decl)
    decl["max_derived_rows_per_unit"] = DEFAULT_MAX_DERIVED_ROWS_PER_UNIT + 1
    assert load_schema(decl).work_limit == DEFAULT_MAX_DERIVED_ROWS_PER_UNIT + 1
    single = one_table(
        "t", {"pid": TEXT}, unit="pid", max_rows_per_unit=50, max_derived_rows_per_unit=49
    )
    with pytest.raises(ParameterError, match=r"max_rows_per_unit must be at most"):
        load_schema(single)
    member = declaration(None)
    member["tables"]["visits"]["max_derived_rows_per_unit"] = 5  # type: ignore[index]
    with pytest.raises(ParameterError, match="declared once, for the population"):
        load_schema(member)
    for bad in (0, -1, 1.5, "many", True):
        with pytest.raises(ParameterError, match="max_derived_rows_per_unit"):
            load_schema({**declaration(None), "max_derived_rows_per_unit": bad})


def test_the_declared_limit_round_trips_and_old_declarations_keep_their_text() -> None:
    s = load_schema(declaration(123))
    assert DatasetSchema.from_dict(s.to_dict()) == s and s.work_limit == 123
    # A declaration without the key (every store registered before it existed) reads back
    # to the same JSON text, so a resumed session still recognises its declaration.
    plain = load_schema(declaration(None))
    assert "max_derived_rows_per_unit" not in plain.to_json()


# -- filters before joins ---------------------------------------------------------------------

FILTERED = [
    "SELECT COUNT(*) FROM visits v JOIN people p ON v.person_id = p.person_id "
    "AND v.cost > 20 WHERE p.age < 50",
    "SELECT COUNT(*) FROM people p LEFT JOIN visits v ON v.person_id = p.person_id AND v.cost > 20",
    "SELECT COUNT(*) FROM people p LEFT JOIN visits v ON v.person_id = p.person_id "
    "WHERE v.cost > 20 OR p.age > 90",
    "SELECT COUNT(*) FROM people p LEFT JOIN visits v ON v.person_id = p.person_id AND p.age > 30",
    "SELECT SUM(v.cost) FROM visits v JOIN keys k ON v.tag = k.k AND v.cost < 40 "
    "JOIN people p ON p.person_id = v.person_id WHERE p.age BETWEEN 10 AND 60",
]


@pytest.fixture(scope="module")
def pushdown_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The clinic of 5 000 visits registered once: the tests below only read it."""
    db = str(tmp_path_factory.mktemp("pushdown") / "store.duckdb")
    cur = Curator(db)
    try:
        cur.register_dataset("clinic", tables("with", 5000), declaration(None))
    finally:
        cur.close()
    return db


@pytest.mark.slow
@pytest.mark.parametrize("sql", FILTERED, ids=range(len(FILTERED)))
def test_filters_move_before_the_joins_and_the_rows_stay_those_of_plain_sql(
    sql: str, pushdown_store: str
) -> None:
    resolved = resolve(sql, _schema())
    source = resolved.schema.source_sql or ""
    # A filter on one table reads that table before the join (a subquery with its WHERE).
    if ("v.cost > 20" in sql and "LEFT" not in sql) or "v.cost < 40" in sql:
        assert re.search(r'\(SELECT \* FROM "clinic__visits" AS "v" WHERE', source), source
    if "p.age > 30" in sql:  # a LEFT JOIN's ON test of its left side filters nothing
        assert 'FROM "clinic__people" AS "p" WHERE' not in source
    # The answer's exact value equals plain SQL on the same tables.
    cur = Curator(pushdown_store)
    try:
        got = cur.exact_aggregates(sql).values[()][0]
    finally:
        cur.close()
    con = duckdb.connect()
    for name, frame in tables("with", 5000).items():
        con.register(name, frame)
    want = con.execute(sql).fetchone()[0]  # type: ignore[index]
    assert got == (round(want) if want is not None else 0), (got, want)
