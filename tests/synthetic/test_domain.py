"""Codes of a declared table against an independent binning (numpy on the declared bounds)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from _stores import TEXT, cats, floats, one_table
from infodp.curator.declaration.source import load_schema
from infodp.errors import ParameterError
from infodp.synthetic.domain import MAX_BINS, Domain

SCHEMA = load_schema(
    one_table(
        "t",
        {
            "age": {"type": "int", "bounds": [0, 99], "nulls": "drop"},
            "income": floats(0, 1000),
            "region": cats("n", "s", "e"),
            "owner": {"type": "bool"},
            "note": TEXT,
        },
    )
)


def test_int_bins_agree_with_integer_division_on_the_bounds() -> None:
    ages = pd.Series([0, 9, 10, 55, 99, 150, -4, None])
    d = Domain.of(SCHEMA, ["age"], bins=10)
    want = [0, 0, 1, 5, 9, 9, 0, -1]  # width 10; clamped to [0, 99]; NULL marked −1
    assert d.attributes[0].encode(ages).tolist() == want


def test_float_bins_cover_the_declared_range_in_equal_runs_of_the_grid() -> None:
    d = Domain.of(SCHEMA, ["income"], bins=8)
    a = d.attributes[0]
    x = np.linspace(0, 1000, 2001)
    codes = a.encode(pd.Series(x))
    # Independent: the value's position in [0, 1000] cut into runs of a.width grid points.
    points = np.round(x / a.step).astype(np.int64)
    assert codes.tolist() == ((points - a.lo) // a.width).tolist()
    assert codes.max() == a.size - 1 and a.size <= 8


def test_categories_and_bools_follow_the_declaration() -> None:
    d = Domain.of(SCHEMA, ["region", "owner"])
    frame = pd.DataFrame({"region": ["s", "x", None, "e"], "owner": [True, False, False, 1]})
    # The rows with an undeclared category or a NULL are left out (a row-by-row filter).
    assert d.encode(frame).tolist() == [[1, 1], [2, 1]]
    assert d.sizes == (3, 2)


def test_decoding_stays_within_each_bin() -> None:
    d = Domain.of(SCHEMA, ["age"], bins=10)
    codes = np.repeat(np.arange(10), 50).reshape(-1, 1)
    values = d.decode(codes, np.random.default_rng(0))["age"].tolist()
    for c, v in zip(codes[:, 0].tolist(), values, strict=True):
        assert 10 * c <= v <= 10 * c + 9


def test_refusals_name_the_argument() -> None:
    with pytest.raises(ParameterError, match="needs declared categories or bounds"):
        Domain.of(SCHEMA, ["note"])
    with pytest.raises(ParameterError, match=f"an integer from 2 to {MAX_BINS}"):
        Domain.of(SCHEMA, ["age"], bins=1)
    with pytest.raises(ParameterError, match="one or more distinct column names"):
        Domain.of(SCHEMA, ["age", "AGE"])
