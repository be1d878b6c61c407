"""Derived GROUP BY keys (infodp.curator.sql.derived): domains from the declaration, answers on
the bounded rows, refusals for free, and the per-unit group limit on neighbours.

The domains are checked against brute force over the declared range (every grid value of
the bounded copy put through ``floor(v / w) * m`` in exact arithmetic); the exact answers
against plain DuckDB SQL on the clamped data.
"""

from __future__ import annotations

import math
import shutil
from fractions import Fraction
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _stores import TEXT, cats, floats, ints, one_table
from infodp.curator.declaration.schema import ColumnSpec
from infodp.curator.declaration.source import load_schema
from infodp.curator.engine import Curator
from infodp.curator.plan.grid import column_grid
from infodp.curator.plan.nodes import Bands, Bins
from infodp.curator.price.cost import MAX_CELLS
from infodp.curator.sql.derived import bins_domain
from infodp.curator.sql.parse import parse_query
from infodp.errors import ParameterError

SCHEMA = one_table(
    "people",
    {
        "pid": TEXT,
        "age": ints(0, 120),
        "income": floats(0, 1000, "drop"),
        "region": cats("north", "south"),
        "city": TEXT,
        "n": {"type": "int"},
    },
    unit="pid",
    max_rows_per_unit=3,
    max_groups_per_unit=2,
)
DECADE = "SELECT FLOOR(age / 10) * 10 AS decade, COUNT(*) FROM people GROUP BY decade"
BAND = (
    "SELECT CASE WHEN age < 18 THEN 'minor' WHEN age < 65 THEN 'adult' ELSE 'senior' END "
    "AS band, AVG(income) FROM people GROUP BY band"
)


def _brute(col: ColumnSpec, width: int, scale: int) -> list[str]:
    grid = column_grid(col)
    step = Fraction(grid.step)
    keys = (math.floor(v * step / width) * scale for v in range(grid.lo, grid.hi + 1))
    return list(dict.fromkeys(str(k) for k in keys))


@settings(max_examples=100, deadline=None)
@given(
    low=st.integers(-300, 300),
    span=st.integers(0, 400),
    width=st.integers(1, 40),
    scale=st.integers(-5, 12),
)
def test_bins_of_an_int_column_are_every_bin_the_bounds_reach(
    low: int, span: int, width: int, scale: int
) -> None:
    col = ColumnSpec("x", "int", bounds=(float(low), float(low + span)))
    domain = bins_domain(col, width, scale)
    assert set(domain) == set(_brute(col, width, scale))
    assert len(domain) == len(set(domain))


@settings(max_examples=30, deadline=None)
@given(low=st.integers(-400, 400), span=st.integers(0, 80), width=st.integers(1, 9))
def test_bins_of_a_float_column_are_every_bin_the_grid_reaches(
    low: int, span: int, width: int
) -> None:
    # Bounds off the integers (multiples of 1/8); every grid value of the bounded copy, in
    # floating point (numpy) against the domain's exact arithmetic.
    col = ColumnSpec("x", "float", bounds=(low / 8, (low + span) / 8))
    grid = column_grid(col)
    values = np.arange(grid.lo, grid.hi + 1, dtype=np.float64) * grid.step
    brute = [str(int(k)) for k in np.unique(np.floor(values / width))]
    assert list(bins_domain(col, width, 1)) == brute


def test_parsed_keys_and_their_output_names() -> None:
    s = load_schema(SCHEMA)
    p = parse_query(DECADE, s)
    assert p.group_by[0].derived == Bins("age", 10, 10)
    assert p.group_by[0].categories == tuple(str(10 * k) for k in range(13))
    assert (p.outputs[0].name, p.outputs[0].group_column) == ("decade", "decade")
    assert not p.needs_partition_selection
    same = parse_query(
        "SELECT FLOOR(age / 10) * 10, COUNT(*) FROM people GROUP BY FLOOR(age / 10) * 10", s
    )
    assert same.group_by[0].categories == p.group_by[0].categories
    plain = parse_query("SELECT 10 * FLOOR(age / 25) AS b, COUNT(*) FROM people GROUP BY b", s)
    assert plain.group_by[0].categories == ("0", "10", "20", "30", "40")
    bands = parse_query(BAND, s)
    assert isinstance(bands.group_by[0].derived, Bands)
    assert bands.group_by[0].categories == ("minor", "adult", "senior")
    no_else = parse_query(
        "SELECT CASE WHEN region = 'north' THEN 1 WHEN age > 3 THEN 2 END AS k, COUNT(*) "
        "FROM people GROUP BY k, region",
        s,
    )
    assert no_else.group_by[0].categories == ("1", "2")


REFUSED = [
    "SELECT FLOOR(city / 10) AS b, COUNT(*) FROM people GROUP BY b",
    "SELECT FLOOR(n / 10) AS b, COUNT(*) FROM people GROUP BY b",
    "SELECT FLOOR(age / 0) AS b, COUNT(*) FROM people GROUP BY b",
    "SELECT FLOOR(age / -5) AS b, COUNT(*) FROM people GROUP BY b",
    "SELECT CASE WHEN age < 18 THEN city ELSE 'x' END AS b, COUNT(*) FROM people GROUP BY b",
    "SELECT CASE WHEN age < 18 THEN 'a' ELSE age END AS b, COUNT(*) FROM people GROUP BY b",
    "SELECT CASE WHEN LENGTH(city) > 3 THEN 'a' END AS b, COUNT(*) FROM people GROUP BY b",
    "SELECT FLOOR(pid / 1) AS b, COUNT(*) FROM people GROUP BY b",
]


#: Keys that are not bins or bands of literals, read as derived columns of a relation
#: (infodp.curator.relations): each with a finite domain derived from the declaration (the
#: integer range of its interval-arithmetic bounds, or the CASE's literals).
LIFTED = [
    ("SELECT FLOOR(age / 2.5) AS b, COUNT(*) FROM people GROUP BY b", range(0, 49)),
    ("SELECT FLOOR(age / 10) * age AS b, COUNT(*) FROM people GROUP BY b", range(0, 1441)),
    ("SELECT age + 1 AS b, COUNT(*) FROM people GROUP BY b", range(1, 122)),
    ("SELECT CASE age WHEN 1 THEN 'a' END AS b, COUNT(*) FROM people GROUP BY b", ["a"]),
]


@pytest.mark.slow
@pytest.mark.parametrize(("sql", "domain"), LIFTED)
def test_other_derived_keys_get_a_declared_domain_and_no_partition_selection(
    people_store: Path, tmp_path: Path, sql: str, domain: object
) -> None:
    cur = _people(people_store, tmp_path)
    try:
        result = cur.query("a", sql, epsilon=1)  # δ = 0: no partition selection is needed
        keys = {str(k) for k in result.to_pandas()["b"]}
        assert keys <= {str(v) for v in domain}  # type: ignore[attr-defined]
        assert cur.ledger.budget("a", "people").spent_epsilon == 1
    finally:
        cur.close()


@pytest.mark.slow
@pytest.mark.parametrize("sql", REFUSED)
def test_unsupported_derived_keys_are_refused_for_free(
    people_store: Path, tmp_path: Path, sql: str
) -> None:
    cur = _people(people_store, tmp_path)
    try:
        with pytest.raises(ParameterError):
            cur.query("a", sql, epsilon=1)
        budget = cur.ledger.budget("a", "people")
        assert (budget.spent_epsilon, len(cur.ledger.entries())) == (0, 0)
    finally:
        cur.close()


def test_too_many_bins_are_refused() -> None:
    s = load_schema(one_table("t", {"v": ints(0, 10**9)}))
    with pytest.raises(ParameterError, match=f"at most {MAX_CELLS} bins"):
        parse_query("SELECT FLOOR(v / 7) AS b, COUNT(*) FROM t GROUP BY b", s)


def _frame(units: int = 60, seed: int = 3) -> pd.DataFrame:
    """Units of 1 to 5 rows (the limit is 3, at most 2 groups), ages beyond the bounds."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(units):
        for _ in range(int(rng.integers(1, 6))):
            age = int(rng.integers(-10, 140))
            income = None if rng.random() < 0.1 else float(rng.uniform(-50, 1100))
            region = str(rng.choice(["north", "south"]))
            rows.append((f"p{u}", age, income, region, "c", 1))
    return pd.DataFrame(rows, columns=["pid", "age", "income", "region", "city", "n"])


@pytest.fixture(scope="module")
def people_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store of ``_frame()`` under SCHEMA with analyst ``a`` (ε 10), built once; each
    test charges its own copy (``_people``)."""
    db = tmp_path_factory.mktemp("people") / "s.duckdb"
    cur = Curator(db)
    try:
        cur.register_dataset("people", _frame(), SCHEMA)
        cur.add_analyst("a", "people", epsilon=10)
    finally:
        cur.close()
    return db


def _people(store: Path, directory: Path) -> Curator:
    """A curator over a copy of ``store`` (its DuckDB file and the ledger next to it)."""
    db = directory / "s.duckdb"
    shutil.copyfile(store, db)
    shutil.copyfile(f"{store}.ledger", f"{db}.ledger")
    return Curator(db)


ROW_SCHEMA = dict(SCHEMA, privacy_unit="row", max_rows_per_unit=1, max_groups_per_unit=1)
#: A derived-key query and the same question in plain DuckDB SQL over the clamped frame.
PLAIN = [
    (
        DECADE,
        "SELECT CAST(FLOOR(LEAST(GREATEST(age, 0), 120) / 10) AS BIGINT) * 10, COUNT(*) "
        "FROM f GROUP BY 1",
    ),
    (
        "SELECT region, FLOOR(age / 25) AS q, COUNT(*), SUM(age) FROM people GROUP BY region, q",
        "SELECT region, CAST(FLOOR(LEAST(GREATEST(age, 0), 120) / 25) AS BIGINT), COUNT(*), "
        "SUM(LEAST(GREATEST(age, 0), 120)) FROM f GROUP BY 1, 2",
    ),
    (
        "SELECT FLOOR(income / 300) AS b, COUNT(*) FROM people GROUP BY b",
        "SELECT CAST(FLOOR(LEAST(GREATEST(income, 0), 1000) / 300) AS BIGINT), COUNT(*) "
        "FROM f WHERE income IS NOT NULL GROUP BY 1",
    ),
    (
        "SELECT CASE WHEN age < 18 THEN 'minor' WHEN age < 65 THEN 'adult' ELSE 'senior' END "
        "AS band, COUNT(*), SUM(age) FROM people GROUP BY band",
        "SELECT CASE WHEN age < 18 THEN 'minor' WHEN age < 65 THEN 'adult' ELSE 'senior' END, "
        "COUNT(*), SUM(LEAST(GREATEST(age, 0), 120)) FROM f GROUP BY 1",
    ),
    (
        "SELECT CASE WHEN region = 'north' AND age > 40 THEN 'old north' WHEN age < 10 THEN 7 "
        "END AS k, COUNT(*) FROM people GROUP BY k",
        "SELECT * FROM (SELECT CASE WHEN region = 'north' AND age > 40 THEN 'old north' "
        "WHEN age < 10 THEN '7' END AS k, COUNT(*) FROM f GROUP BY 1) WHERE k IS NOT NULL",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("sql", "plain"), PLAIN)
def test_exact_answers_equal_plain_sql_on_the_clamped_rows(
    tmp_path: Path, sql: str, plain: str
) -> None:
    frame = _frame()
    cur = Curator(tmp_path / "s.duckdb")
    try:
        cur.register_dataset("people", frame, ROW_SCHEMA)
        got = cur.exact_aggregates(sql)
        plan = cur.plan(sql)[0]
    finally:
        cur.close()
    con = duckdb.connect()
    try:
        con.register("f", frame)
        rows = con.execute(plain).fetchall()
    finally:
        con.close()
    keys = len(plan.group_by)
    want = {tuple(str(k) for k in r[:keys]): tuple(r[keys:]) for r in rows}
    assert {k: v for k, v in got.values.items() if v != (0,) * len(v)} == want
    for pos, g in enumerate(plan.group_by):
        assert {k[pos] for k in want} <= set(g.categories or ())


@pytest.mark.slow
def test_a_session_releases_the_declared_bins(people_store: Path, tmp_path: Path) -> None:
    cur = _people(people_store, tmp_path)
    try:
        r = cur.query("a", DECADE, epsilon=1)
        band = cur.query("a", BAND, epsilon=1)
        ordered = cur.query("a", f"{BAND} ORDER BY band DESC LIMIT 2", epsilon=1)
    finally:
        cur.close()
    # ORDER BY names the derived key by its alias (free post-processing of the text keys).
    assert [row[0] for row in ordered.rows] == ["senior", "minor"]
    assert [row[0] for row in r.rows] == [str(10 * k) for k in range(13)]
    assert [row[0] for row in band.rows] == ["minor", "adult", "senior"]


@pytest.mark.slow
def test_one_unit_moves_at_most_its_rows_in_at_most_its_groups(tmp_path: Path) -> None:
    """Neighbours (one unit added): the bounded counts per bin differ in at most
    ``max_groups_per_unit`` = 2 cells and by at most ``max_rows_per_unit`` = 3 in all, the
    bound the count's sensitivity is priced on, as for a declared column key. The other
    units are within both limits, so what they contribute does not depend on a draw."""
    rng = np.random.default_rng(9)
    rows = []
    for u in range(30):
        ages = rng.choice([5, 15, 25, 35], 2, replace=False)
        rows += [(f"p{u}", int(a), 1.0, "north", "c", 1) for a in rng.choice(ages, 3)]
    columns = ["pid", "age", "income", "region", "city", "n"]
    counts = []
    added = [(5, 15, 25, 35, 150), (150, 140, 121, 7, 8), (44, 44, 44, 44, 45)]
    for i, ages in enumerate([None, *added]):  # the unit: five rows over up to five bins
        extra = [] if ages is None else [("new", a, 1.0, "north", "c", 1) for a in ages]
        cur = Curator(tmp_path / f"{i}.duckdb")
        try:
            cur.register_dataset("people", pd.DataFrame(rows + extra, columns=columns), SCHEMA)
            counts.append({k: v[0] or 0 for k, v in cur.exact_aggregates(DECADE).values.items()})
        finally:
            cur.close()
    base = counts[0]
    for other in counts[1:]:
        diff = [abs(other.get(k, 0) - base.get(k, 0)) for k in set(base) | set(other)]
        assert 1 <= sum(diff) <= 3  # at most 3 rows kept, in at most 2 declared bins
        assert sum(1 for d in diff if d) <= 2
