"""The compiler's statements, checked against a brute-force oracle and across dialects.

The oracle is plain Python over the same rows: the null policy, clamping to the declared
bounds, the release grid (step 1 for small int bounds, :func:`infodp.curator.plan.grid.grid_step`),
then the count, sum, centred sum and centred sum of squares of each declared group (the
measurements of a SUM / AVG / VARIANCE, Wilson et al. 2020, "Differentially private SQL with
bounded user contribution", section 3: clamp, then sum). DuckDB runs the compiled SQL on a
registered store; nothing of the compiler's own output is used as the expectation.
"""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _stores import cats, ints, one_table
from infodp.curator.backends.compile import compiled_statements
from infodp.curator.backends.dialects import DUCKDB, SPARK
from infodp.curator.backends.duckdb import DuckDBBackend
from infodp.curator.declaration.source import load_schema
from infodp.curator.rules import measurements
from infodp.curator.sql.parse import parse_query

LOW, HIGH = -5, 20

SCHEMA = one_table(
    "t",
    {
        "g": cats("a", "b", "c"),
        "x": {"type": "int", "bounds": [LOW, HIGH], "nulls": "drop"},
        "y": {"type": "int", "bounds": [LOW, HIGH], "nulls": {"replace": 7}},
    },
)

GROUPED = one_table(
    "t",
    {"g": cats("a", "b"), "x": ints(0, 10)},
    unit="pid",
    max_rows_per_unit=4,
    max_groups_per_unit=1,
)

ROWS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.one_of(st.none(), st.integers(-40, 60)),
        st.one_of(st.none(), st.integers(-40, 60)),
    ),
    min_size=1,
    max_size=30,
)


#: The grid's centre: the midpoint (LOW + HIGH) / 2 = 7.5 rounded half away from zero.
CENTER = math.floor((LOW + HIGH) / 2 + 0.5)


def _oracle(
    rows: list[tuple[str, int | None, int | None]], column: int, fill: int | None
) -> dict[str, list[int]]:
    """Per group: (count of values, sum, centred sum, centred sum of squares) by hand."""
    out: dict[str, list[int]] = {}
    for row in rows:
        value = row[column] if row[column] is not None else fill
        cell = out.setdefault(row[0], [0, 0, 0, 0])
        if value is None:
            continue  # dropped by the null policy: counts nowhere
        v = min(max(value, LOW), HIGH)
        cell[0] += 1
        cell[1] += v
        cell[2] += v - CENTER
        cell[3] += (v - CENTER) ** 2
    return out


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(ROWS)
def test_compiled_aggregates_equal_a_brute_force_oracle(
    rows: list[tuple[str, int | None, int | None]],
) -> None:
    schema = load_schema(SCHEMA)
    backend = DuckDBBackend(":memory:")
    frame = pd.DataFrame(rows, columns=["g", "x", "y"]).astype({"x": "Int64", "y": "Int64"})
    backend.register("t", frame, schema)
    con = backend.connect(read_only=True)
    for name, index, fill in (("x", 1, None), ("y", 2, 7)):
        plan = parse_query(f"SELECT g, SUM({name}), VARIANCE({name}) FROM t GROUP BY g", schema)
        ms = measurements(plan)
        got = backend.aggregate(con, plan, schema, ms, unit_rows_ok=True).values
        want = _oracle(rows, index, fill)
        by_kind = {m.kind: i for i, m in enumerate(ms)}
        for key, cell in want.items():
            values = got[(key,)]
            assert values[by_kind["count"]] == cell[0]
            assert values[by_kind["sum"]] == cell[1]
            assert values[by_kind["csum"]] == cell[2]
            assert values[by_kind["csumsq"]] == cell[3]
        assert {k[0] for k in got} == set(want)


def test_the_text_is_the_same_for_every_call_but_the_group_limit_salt() -> None:
    """The statements depend on the query and the schema only; the group limit's salt is
    drawn afresh for every query (62 random bits: two draws differ)."""
    schema = load_schema(GROUPED)
    plan = parse_query("SELECT g, COUNT(*) FROM t GROUP BY g", schema)
    ms = measurements(plan)
    first, second = (compiled_statements(plan, schema, ms, unit_rows_ok=True) for _ in range(2))
    salt = re.compile(r"hash\(__g0, (\d+)\)")
    salts = [salt.search(s[0]) for s in (first, second)]
    assert all(salts) and salts[0].group(1) != salts[1].group(1)  # type: ignore[union-attr]
    assert [salt.sub("", s) for s in first] == [salt.sub("", s) for s in second]
    templates = compiled_statements(plan, schema, ms, unit_rows_ok=True, salted=False)
    assert len({t for t in templates if "hash(__g0, " in t}) == 1


def test_the_dialect_table_chooses_what_differs() -> None:
    """Spark sums squares in DECIMAL(38, 0) (DuckDB widens BIGINT sums to HUGEINT by itself),
    hashes with a 64-bit hash and filters windows without QUALIFY."""
    schema = load_schema(GROUPED)
    plan = parse_query("SELECT g, VARIANCE(x) FROM t GROUP BY g", schema)
    ms = measurements(plan)
    duck = " ".join(compiled_statements(plan, schema, ms, unit_rows_ok=True, dialect=DUCKDB))
    spark = " ".join(compiled_statements(plan, schema, ms, unit_rows_ok=True, dialect=SPARK))
    assert "QUALIFY" in duck and "hash(__g0, " in duck and "DECIMAL" not in duck
    assert "QUALIFY" not in spark and "XXHASH64(__g0, " in spark
    assert re.search(r"SUM\(CAST\(\(__v0 - 5\) \* \(__v0 - 5\) AS DECIMAL\(38, 0\)\)\)", spark)
