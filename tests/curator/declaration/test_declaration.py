"""The declaration's validation: which problem is reported, typed values, the round-trip law."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from _stores import TEXT, one_table
from infodp.curator.declaration.models import ColumnDecl, SchemaDecl, declared_schema
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.declaration.source import load_schema
from infodp.errors import ParameterError


def _one_column(spec: object) -> dict[str, object]:
    return one_table("t", {"c": spec})


@pytest.mark.parametrize(
    ("spec", "argument"),
    [
        # The first problem in the order type, bounds, categories, nulls is the one named.
        ({"type": "blob", "bounds": "x"}, "columns.c.type"),
        ({"type": "text", "bounds": [0, 1], "categories": []}, "columns.c.bounds"),
        ({"type": "int", "bounds": [0, 1], "categories": ["a"]}, "columns.c.categories"),
        ({"type": "category", "nulls": "zap"}, "columns.c.categories"),
        ({"type": "int", "bounds": [1, 0], "nulls": "zap"}, "columns.c.bounds"),
        ({"type": "int", "bounds": [0, 1], "nulls": {"replace": 2}}, "columns.c.nulls.replace"),
        # An unknown key comes before every field's rule (a misspelt key leaves it missing).
        ({"typ": "int", "bounds": [1, 0]}, "columns.c"),
    ],
)
def test_the_first_problem_in_field_order_is_named(spec: object, argument: str) -> None:
    with pytest.raises(ParameterError) as err:
        load_schema(_one_column(spec))
    assert err.value.argument == argument


@pytest.mark.parametrize(
    ("declaration", "message"),
    [
        ({"privacy_unit": "row", "columns": {"c": {"type": "text"}}}, "table must be an ident"),
        ({"table": "t", "columns": {"c": {"type": "text"}}}, "privacy_unit must be a user-id"),
        ({"table": "t", "privacy_unit": "row"}, "columns must be a non-empty mapping"),
        (
            _one_column({}),
            "columns.c.type must be one of int, float, category, text, bool; got None",
        ),
    ],
)
def test_a_missing_required_key_is_refused_by_its_own_rule(
    declaration: dict[str, object], message: str
) -> None:
    with pytest.raises(ParameterError, match=message.replace(".", r"\.")):
        declared_schema(declaration)


def test_validated_fields_hold_typed_values() -> None:
    column = ColumnDecl.model_validate(
        {"type": "int", "bounds": ["0", 7]}, context={"where": "columns.x"}
    )
    assert column.bounds == (0.0, 7.0) and all(type(b) is float for b in column.bounds)
    decl = SchemaDecl.model_validate(one_table("t", {"x": {}}, unit="pid", max_rows_per_unit=3.0))
    assert decl.max_rows_per_unit == 3 and type(decl.max_rows_per_unit) is int
    assert decl.columns == (("x", {}),)


_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)


@st.composite
def _columns(draw: st.DrawFn) -> dict[str, object]:
    kind = draw(st.sampled_from(["int", "float", "category", "text"]))
    if kind == "category":
        cats = draw(st.lists(_NAMES, min_size=1, max_size=4, unique=True))
        nulls = draw(st.sampled_from(["error", "drop", {"replace": cats[0]}]))
        return {"type": kind, "categories": cats, "nulls": nulls}
    if kind == "text":
        return {"type": kind, "nulls": draw(st.sampled_from(["error", "drop", {"replace": "?"}]))}
    ints = st.integers(-(10**6), 10**6)
    reals = st.floats(-1e6, 1e6, allow_nan=False)
    low, high = sorted(draw(st.lists(ints if kind == "int" else reals, min_size=2, max_size=2)))
    nulls = draw(st.sampled_from(["error", "drop", {"replace": low}]))
    return {"type": kind, "bounds": [low, high], "nulls": nulls}


@given(
    columns=st.dictionaries(_NAMES, _columns(), min_size=1, max_size=4),
    public=st.one_of(st.none(), st.integers(0, 10**9)),
)
def test_a_valid_declaration_reads_back_equal_from_its_stored_form(
    columns: dict[str, object], public: int | None
) -> None:
    # Law: the stored form (to_json, keys sorted: columns by name) validates to the schema
    # that reading it back without validation (from_dict, the query path) gives, and that
    # schema stores the same text; the declared column order is the schema's own.
    names = [n.lower() for n in columns]
    declaration: dict[str, object] = {"table": "t", "privacy_unit": "row", "columns": columns}
    if public is not None:
        declaration["public_rows"] = public
    if len(set(names)) != len(names):
        with pytest.raises(ParameterError, match="distinct names"):
            load_schema(declaration)
        return
    schema = load_schema(declaration)
    stored = json.loads(schema.to_json())
    again = load_schema(stored)
    assert again == DatasetSchema.from_dict(stored)
    assert again.to_json() == schema.to_json()
    assert {c.name: c for c in again.columns} == {c.name: c for c in schema.columns}
    assert [c.name for c in schema.columns] == list(columns)


# -- one privacy unit per dataset --------------------------------------------------------------

ONE_UNIT = (
    "must be one privacy unit: a single id column name or 'row' (budgets, caps and row bounds "
    "are per unit, and a query's sensitivity is the change of one unit's rows, so one dataset "
    "has one unit); register one dataset per unit, or declare the coarser unit (such as the "
    "household that holds its persons) as the privacy_unit of all its tables; got "
)

_TWO_UNITS_YAML = """
table: people
privacy_unit: [person, household]
columns:
  person: {type: text}
  household: {type: text}
"""

_OWN_UNIT_YAML = """
privacy_unit: household
tables:
  homes: {columns: {household: {type: text}}}
  people: {privacy_unit: person, columns: {household: {type: text}, person: {type: text}}}
"""


@pytest.mark.parametrize(
    ("declaration", "message"),
    [
        (_TWO_UNITS_YAML, "privacy_unit " + ONE_UNIT + "['person', 'household']."),
        (
            one_table("people", {"person": TEXT, "household": TEXT}, unit=["person", "household"]),
            "privacy_unit " + ONE_UNIT + "['person', 'household'].",
        ),
        (
            {
                "privacy_unit": ["person", "household"],
                "tables": {"people": {"columns": {"person": {"type": "text"}}}},
            },
            "privacy_unit " + ONE_UNIT + "['person', 'household'].",
        ),
        (_OWN_UNIT_YAML, "tables.people.privacy_unit " + ONE_UNIT + "'person'."),
        (
            {
                "privacy_unit": "household",
                "tables": {
                    "people": {
                        "privacy_unit": "person",
                        "columns": {"household": {"type": "text"}, "person": {"type": "text"}},
                    }
                },
            },
            "tables.people.privacy_unit " + ONE_UNIT + "'person'.",
        ),
    ],
    ids=["yaml_list", "dict_list", "population_list", "yaml_own_unit", "dict_own_unit"],
)
def test_a_dataset_of_several_privacy_units_is_refused_saying_why(
    declaration: object, message: str
) -> None:
    with pytest.raises(ParameterError) as err:
        load_schema(declaration)  # type: ignore[arg-type]
    assert str(err.value) == message


def test_the_coarser_unit_is_the_allowed_form() -> None:
    s = load_schema(_OWN_UNIT_YAML.replace("privacy_unit: person, ", ""))
    assert s.privacy_unit == "household"
    assert [m.table for m in s.members] == ["homes", "people"]
    # The population's own unit named again by a table is still left out, as before.
    with pytest.raises(ParameterError, match="left out"):
        load_schema(_OWN_UNIT_YAML.replace("privacy_unit: person", "privacy_unit: household"))
