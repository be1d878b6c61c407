"""Conditions of derived values (infodp.curator.relations.conditions): SQL's three-valued
logic kept (a condition on a NULL is NULL, counted as neither 1 nor 0), and comparisons of
a number with text refused before any engine sees them."""

from __future__ import annotations

import duckdb
import pytest
import sqlglot

from infodp.curator.declaration.schema import ColumnSpec, NullPolicy
from infodp.curator.relations.expressions import value
from infodp.curator.relations.values import as_number, stored_value
from infodp.errors import ParameterError

_CON = duckdb.connect()

COLS = {
    "x": stored_value(
        "t", ColumnSpec("x", "float", (0.0, 10.0), nulls=NullPolicy("drop")), grid=False
    ),
    "k": stored_value("t", ColumnSpec("k", "category", categories=("a", "b")), grid=False),
}


@pytest.mark.parametrize(
    ("text", "x", "k", "want"),
    [
        ("x > 5", 7.0, "a", 1),
        ("x > 5", 3.0, "a", 0),
        ("x > 5", None, "a", None),  # unknown: neither counted as 1 nor as 0
        ("NOT (x BETWEEN 1 AND 2) AND k IN ('a', 'b')", 5.0, "b", 1),
        ("x IS NULL OR k = 'c'", None, "b", 1),
        ("k = 1", 1.0, "1", 1),  # a number literal against text: its text
    ],
)
def test_conditions_count_as_one_zero_or_null(text, x, k, want):
    v = as_number(value(sqlglot.parse_one(text), lambda c: COLS[c.name]), text)
    cell = "NULL" if x is None else repr(x)
    row = _CON.execute(
        f"SELECT {v.bounded.sql()} FROM (SELECT CAST({cell} AS DOUBLE) AS x, '{k}' AS k) t"
    ).fetchone()
    assert row is not None and row[0] == want
    assert v.box == (0.0, 1.0)


@pytest.mark.parametrize("text", ["x = k", "x IN ('a')", "k BETWEEN 1 AND x"])
def test_numbers_are_not_compared_with_text(text):
    with pytest.raises(ParameterError, match="compares a number with a category"):
        value(sqlglot.parse_one(text), lambda c: COLS[c.name])
