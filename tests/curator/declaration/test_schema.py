"""Dataset schemas: the YAML form, JSON, and clear errors for bad declarations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _cli_store import PEOPLE_SCHEMA
from _stores import TEXT, floats, ints, one_table
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.declaration.source import load_schema
from infodp.errors import ParameterError


def test_issue_yaml_form_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "schema.yaml"
    path.write_text(PEOPLE_SCHEMA)
    s = load_schema(path)
    assert s.table == "people" and s.privacy_unit == "person_id"
    assert s.max_rows_per_unit == 1 and not s.unit_is_row
    assert s.column("age").bounds == (0.0, 120.0)
    assert s.column("income").nulls.action == "drop"
    assert s.column("region").categories == ("north", "south", "east", "west")
    # JSON round trip gives an equal (immutable) schema
    assert load_schema(json.loads(s.to_json())) == s
    assert load_schema(str(path)) == s


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        ({"privacy_unit": None}, "privacy_unit"),
        ({"columns": {}}, "columns"),
        ({"columns": {"a": {"type": "int", "bounds": [5, 1]}}}, "low <= high"),
        ({"columns": {"a": {"type": "int", "bounds": [0, "x"]}}}, "bounds[1]"),
        ({"columns": {"a": {"type": "float", "bounds": [0, float("nan")]}}}, "finite"),
        ({"columns": {"a": {"type": "float", "bounds": [0, float("inf")]}}}, "finite"),
        ({"columns": {"a": {"type": "int", "bounds": [0.5, 3]}}}, "integers"),
        ({"columns": {"a": {"type": "category"}}}, "categories"),
        ({"columns": {"a": {"type": "category", "categories": ["x", "x"]}}}, "duplicates"),
        ({"columns": {"a": {"type": "int", "nulls": "guess"}}}, "nulls"),
        ({"columns": {"a": {"type": "int", "bounds": [0, 9], "nulls": {"replace": 99}}}}, "inside"),
        ({"columns": {"a": {"type": "int", "colour": 1}}}, "keys"),
        ({"max_rows_per_unit": 0}, "max_rows_per_unit"),
        ({"privacy_unit": "row", "max_rows_per_unit": 3}, "1 when privacy_unit is 'row'"),
        ({"table": "1bad"}, "identifier"),
    ],
)
def test_bad_declarations_name_the_field(patch: dict[str, object], needle: str) -> None:
    base: dict[str, object] = one_table("t", {"a": ints(0, 9)}, unit="uid")
    base.update(patch)
    with pytest.raises(ParameterError) as info:
        load_schema(base)
    assert needle in str(info.value)


def test_bad_yaml_and_missing_file() -> None:
    with pytest.raises(ParameterError, match="YAML"):
        load_schema("table: [unclosed\nx: 1")
    with pytest.raises(ParameterError, match="existing"):
        load_schema("/nonexistent/schema.yaml")
    with pytest.raises(ParameterError, match="mapping"):
        load_schema("- a\n- b\n")


@pytest.mark.parametrize(
    "columns",
    [
        {"age": {"type": "int", "bounds": [0, 120], "nulls": {"replace": 30}}},
        {"income": {"type": "float", "bounds": [-1.5, 2.5], "nulls": "drop"}},
        {"region": {"type": "category", "categories": ["n", "s"], "nulls": {"replace": "n"}}},
        {"name": {"type": "text"}, "x": {"type": "float", "bounds": [0, 1]}},
    ],
)
def test_stored_declaration_reads_back_equal(columns: dict[str, object]) -> None:
    # The store keeps to_dict() of a validated schema; from_dict must give the same object
    # that validating it again gives (the query path reads it back without re-validating).
    decl = {"table": "t", "privacy_unit": "uid", "max_groups_per_unit": 2, "public_rows": 7}
    s = load_schema({**decl, "columns": columns})
    stored = json.loads(s.to_json())
    assert DatasetSchema.from_dict(stored) == load_schema(stored) == s


def test_pydantic_errors_keep_the_declarations_path() -> None:
    with pytest.raises(ParameterError, match=r"columns\.a must be made of the keys type"):
        load_schema(one_table("t", {"a": {"typ": "int"}}))
    with pytest.raises(ParameterError, match=r"columns\.a must be a mapping"):
        load_schema(one_table("t", {"a": [1]}))
    with pytest.raises(ParameterError, match=r"public_rows must be a non-negative integer"):
        load_schema(one_table("t", {"a": TEXT}, public_rows=2.0))


@pytest.mark.parametrize("bounds", [[0, 1e308], [-1e308, 0], [0, 1.0000000000000001e101]])
def test_bounds_whose_sums_overflow_a_double_are_refused_naming_the_column(
    bounds: list[float],
) -> None:
    # With [0, 1e308] SUM and MEDIAN answered inf and VARIANCE raised OverflowError, after
    # the charge; the declaration is refused instead, naming the column and the range allowed.
    spec = one_table("t", {"wealth": {"type": "float"}})
    spec["columns"]["wealth"]["bounds"] = bounds
    with pytest.raises(ParameterError, match=r"columns\.wealth\.bounds.*\[-1e\+100, 1e\+100\]"):
        load_schema(spec)


def test_bounds_at_the_allowed_limit_give_finite_answers() -> None:
    import math

    import pandas as pd

    from infodp.curator.engine import Curator

    spec = one_table("t", {"x": floats(-1e100, 1e100)})
    cur = Curator(":memory:", ledger=":memory:")
    try:
        cur.register_dataset("t", pd.DataFrame({"x": [1e100, -1e100, 5e99] * 30}), spec)
        cur.add_analyst("a", "t", epsilon=100)
        sql = "SELECT SUM(x), AVG(x), MEDIAN(x), VARIANCE(x), STDDEV(x) FROM t"
        for eps in ("0.001", "10"):
            result = cur.query("a", sql, epsilon=eps)
            assert all(math.isfinite(v) for v in result.rows[0])
            for ci in result.confidence_intervals[0]:
                if isinstance(ci, (list, tuple)):
                    assert all(math.isfinite(b) for b in ci)
    finally:
        cur.close()
