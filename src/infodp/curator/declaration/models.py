"""The data owner's declaration, validated: pydantic models of its keys and the domain rules.

The models below are the one description of what a declaration may hold; :func:`declared_schema`
turns a validated model into the immutable
:class:`~infodp.curator.declaration.schema.DatasetSchema`. Each
field is checked on the raw value the owner wrote (``mode="before"``) and holds its typed value
afterwards. Domain rules raise ParameterError with the declaration's own path
(``columns.age.bounds``); pydantic's key and shape errors are turned into the same form by
:func:`_validated`. This module imports pydantic:
:func:`~infodp.curator.declaration.source.load_schema`
imports it on first use, so a store's own (already validated) declaration is read back by
:meth:`~infodp.curator.declaration.schema.DatasetSchema.from_dict` without it.

>>> declared_schema({"table": "t", "privacy_unit": "row",
...                  "columns": {"x": {"type": "int", "bounds": [0, 9]}}}).column("x").bounds
(0.0, 9.0)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from infodp._validate import as_positive_int, as_real
from infodp.curator.declaration.schema import (
    COLUMN_TYPES,
    DEFAULT_MAX_DERIVED_ROWS_PER_UNIT,
    MAX_BOUND,
    TYPE_ALIASES,
    ColumnSpec,
    DatasetSchema,
    NullPolicy,
)
from infodp.errors import ParameterError

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

__all__ = ["ColumnDecl", "SchemaDecl", "declared_population", "declared_schema"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DECLARATION = ConfigDict(extra="forbid", frozen=True, validate_default=True)
_NUMERIC = ("int", "float")


def _where(info: ValidationInfo) -> str:
    return str((info.context or {}).get("where", "column"))


def _with_required(data: object, keys: tuple[str, ...]) -> object:
    """A mapping with every required key (a missing one as None, which its field's check
    refuses with our message); anything else unchanged (pydantic refuses it)."""
    if not isinstance(data, Mapping):
        return data
    return {**dict.fromkeys(keys), **data}


class ColumnDecl(BaseModel):
    """One column's declaration: ``{type, bounds?, categories?, nulls?}``."""

    model_config = _DECLARATION

    type: str
    bounds: tuple[float, float] | None = None
    categories: tuple[str, ...] | None = None
    #: The raw null policy: read against the column's type and bounds by :func:`_nulls`.
    nulls: object = None

    @model_validator(mode="before")
    @classmethod
    def _present(cls, data: object) -> object:
        return _with_required(data, ("type",))

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, v: object, info: ValidationInfo) -> str:
        v = TYPE_ALIASES.get(v, v) if isinstance(v, str) else v
        if v not in COLUMN_TYPES:
            raise ParameterError(f"{_where(info)}.type", v, f"one of {', '.join(COLUMN_TYPES)}")
        return str(v)

    # Bounds and categories are read only for a valid type (a bad type is the error shown).
    @field_validator("bounds", mode="before")
    @classmethod
    def _bounds(cls, v: object, info: ValidationInfo) -> tuple[float, float] | None:
        ctype = info.data.get("type")
        return None if v is None or ctype is None else _check_bounds(_where(info), ctype, v)

    @field_validator("categories", mode="before")
    @classmethod
    def _categories(cls, v: object, info: ValidationInfo) -> tuple[str, ...] | None:
        ctype = info.data.get("type")
        return None if v is None or ctype is None else _check_categories(_where(info), ctype, v)

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo) -> ColumnDecl:
        if self.type == "category" and self.categories is None:
            raise ParameterError(
                f"{_where(info)}.categories",
                None,
                "declared for a category column (or declare the column as type: text)",
            )
        return self


class SchemaDecl(BaseModel):
    """The whole declaration (the columns are validated one by one, by name)."""

    model_config = _DECLARATION

    table: str
    privacy_unit: str
    max_rows_per_unit: int = 1
    max_groups_per_unit: int | None = None
    public_rows: int | None = None
    public_max_rows: int | None = None
    max_derived_rows_per_unit: int | None = None
    #: (name, raw column declaration) in the declared order.
    columns: tuple[tuple[str, object], ...]

    @model_validator(mode="before")
    @classmethod
    def _present(cls, data: object) -> object:
        return _with_required(data, ("table", "privacy_unit", "columns"))

    @field_validator("table", "privacy_unit", mode="before")
    @classmethod
    def _ident(cls, v: object, info: ValidationInfo) -> str:
        if info.field_name == "privacy_unit":
            return _unit("privacy_unit", v)
        return _identifier(str(info.field_name), v)

    @field_validator(
        "max_rows_per_unit", "max_groups_per_unit", "max_derived_rows_per_unit", mode="before"
    )
    @classmethod
    def _limit(cls, v: object, info: ValidationInfo) -> int | None:
        if v is None and info.field_name != "max_rows_per_unit":
            return None
        return as_positive_int(str(info.field_name), v)

    @field_validator("public_rows", "public_max_rows", mode="before")
    @classmethod
    def _count(cls, v: object, info: ValidationInfo) -> int | None:
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ParameterError(str(info.field_name), v, "a non-negative integer number of rows")
        return int(v)

    @field_validator("columns", mode="before")
    @classmethod
    def _columns(cls, v: object) -> tuple[tuple[str, object], ...]:
        if not isinstance(v, Mapping) or not v:
            raise ParameterError("columns", v, "a non-empty mapping of column declarations")
        return tuple((str(name), spec) for name, spec in v.items())

    @model_validator(mode="after")
    def _rules(self) -> SchemaDecl:
        if self.privacy_unit == "row" and self.max_rows_per_unit != 1:
            raise ParameterError(
                "max_rows_per_unit", self.max_rows_per_unit, "1 when privacy_unit is 'row'"
            )
        rows, bound = self.public_rows, self.public_max_rows
        if rows is not None and bound is not None and rows > bound:
            raise ParameterError(
                "public_max_rows", bound, f"at least public_rows ({rows}) when both are given"
            )
        return self


def _check_work(m: int, declared: int | None, where: str) -> None:
    """A table's own m fits the limit on one unit's rows in a query's relations."""
    limit = DEFAULT_MAX_DERIVED_ROWS_PER_UNIT if declared is None else declared
    if m > limit:
        raise ParameterError(
            f"{where}max_rows_per_unit",
            m,
            f"at most max_derived_rows_per_unit ({limit}{'' if declared else ', the default'}): "
            "the most rows one individual may cause in any relation a query builds; declare "
            "a larger max_derived_rows_per_unit",
        )


#: Why a dataset has exactly one privacy unit, and what to declare instead of several.
_ONE_UNIT = (
    "one privacy unit: a single id column name or 'row' (budgets, caps and row bounds are "
    "per unit, and a query's sensitivity is the change of one unit's rows, so one dataset "
    "has one unit); register one dataset per unit, or declare the coarser unit (such as the "
    "household that holds its persons) as the privacy_unit of all its tables"
)


def _unit(name: str, value: object) -> str:
    """A declared privacy unit: one identifier (a list of several units is refused, saying
    why and what to declare instead).

    >>> _unit("privacy_unit", ["person", "household"])
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: privacy_unit must be one privacy unit: a single id column name or 'row' (budgets, caps and row bounds are per unit, and a query's sensitivity is the change of one unit's rows, so one dataset has one unit); register one dataset per unit, or declare the coarser unit (such as the household that holds its persons) as the privacy_unit of all its tables; got ['person', 'household'].
    """  # noqa: E501
    if value is None:
        raise ParameterError(name, None, "a user-id column name or 'row'")
    if isinstance(value, (list, tuple, set, Mapping)):
        if len(value) == 1 and isinstance(value, (list, tuple)):
            return _unit(name, value[0])
        raise ParameterError(name, list(value), _ONE_UNIT)
    return _identifier(name, value)


def _identifier(name: str, value: object) -> str:
    if not isinstance(value, str) or not _IDENT.match(value):
        raise ParameterError(
            name, value, "an identifier (letters, digits, _; not starting with a digit)"
        )
    return value


def _check_bounds(where: str, ctype: str, raw: object) -> tuple[float, float]:
    """``[low, high]`` of a numeric column as doubles, every rule checked on the raw pair."""
    name = f"{where}.bounds"
    if ctype == "bool":
        raise ParameterError(name, raw, "left out for a bool column (false is 0, true is 1)")
    if ctype not in _NUMERIC:
        raise ParameterError(name, raw, "declared only for int or float columns")
    if not isinstance(raw, (list, tuple)) or len(raw) != 2:
        raise ParameterError(name, raw, "a pair [low, high]")
    low = as_real(f"{name}[0]", raw[0])
    high = as_real(f"{name}[1]", raw[1])
    for broken, allowed in _bound_rules(ctype, low, high):
        if broken:
            raise ParameterError(name, raw, allowed)
    return (low, high)


def _bound_rules(ctype: str, low: float, high: float) -> tuple[tuple[bool, str], ...]:
    """(rule broken, what is allowed) for a pair of finite doubles, in the order checked."""
    is_int = ctype == "int"
    return (
        (not low <= high, "a pair [low, high] with low <= high"),
        (is_int and not (low.is_integer() and high.is_integer()), "integers for an int column"),
        # Quantile binning divides by the width: an infinite width would overflow inside the
        # query, only for some rows (a data-dependent failure after the charge).
        (not math.isfinite(high - low), "a pair whose width high - low is a finite double"),
        # Sums, squares (VARIANCE, STDDEV) and their noise are computed in doubles: with
        # bounds near 1e308 a SUM or MEDIAN answered inf and VARIANCE overflowed after the
        # charge. Within ±1e100 a sum of squares over 2^63 rows (2^63 · 1e200) is finite.
        (
            max(abs(low), abs(high)) > MAX_BOUND,
            f"bounds within [-{MAX_BOUND:g}, {MAX_BOUND:g}] (larger values overflow a double "
            "in sums and squares)",
        ),
        (
            is_int and not (low >= -(2.0**63) and high < 2.0**63),
            "integers in [-2^63, 2^63) (an int column is BIGINT)",
        ),
    )


def _check_categories(where: str, ctype: str, raw: object) -> tuple[str, ...]:
    name = f"{where}.categories"
    if ctype != "category":
        raise ParameterError(name, raw, "declared only for category columns")
    if not isinstance(raw, (list, tuple)) or not raw:
        raise ParameterError(name, raw, "a non-empty list")
    if len({str(c) for c in raw}) != len(raw):
        raise ParameterError(name, raw, "a list without duplicates")
    return tuple(str(c) for c in raw)


def _nulls(where: str, spec: object, ctype: str) -> NullPolicy:
    if spec is None or spec == "error":
        return NullPolicy()
    if spec == "drop":
        return NullPolicy("drop")
    if isinstance(spec, Mapping) and set(spec) == {"replace"}:
        raw = spec["replace"]
        if ctype == "bool":
            if raw not in (True, False) or isinstance(raw, float):
                raise ParameterError(f"{where}.nulls.replace", raw, "true or false")
            return NullPolicy("replace", float(raw))
        if ctype in _NUMERIC:
            return NullPolicy("replace", as_real(f"{where}.nulls.replace", raw))
        if not isinstance(raw, str):
            raise ParameterError(f"{where}.nulls.replace", raw, "a string")
        return NullPolicy("replace", raw)
    raise ParameterError(f"{where}.nulls", spec, "'error', 'drop' or {replace: VALUE}")


def _check_replacement(where: str, nulls: NullPolicy, decl: ColumnDecl) -> None:
    """A replacement value lies in the declared domain (inside the bounds, a category)."""
    value, bounds, categories = nulls.value, decl.bounds, decl.categories
    if isinstance(value, float) and bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise ParameterError(f"{where}.nulls.replace", value, f"inside the bounds {list(bounds)}")
    if nulls.action == "replace" and categories is not None and value not in categories:
        raise ParameterError(f"{where}.nulls.replace", value, "one of the declared categories")


_Decl = TypeVar("_Decl", ColumnDecl, SchemaDecl)

#: What a declaration that is not a mapping should be, by where it stands.
_MAPPING_OF = {
    "schema": "a mapping with keys table, privacy_unit, columns",
    "column": "a mapping such as {type: int, bounds: [0, 1]}",
}
_NOT_A_MAPPING = frozenset({"model_type", "model_attributes_type", "dict_type"})


def _validated(model: type[_Decl], data: object, where: str) -> _Decl:
    """``model`` validated from ``data``; every failure is one ParameterError naming the field."""
    try:
        return model.model_validate(data, context={"where": where})
    except ValidationError as err:
        keys = tuple(model.model_fields)
        raise _parameter_error(err.errors(include_url=False), data, where, keys) from None


def _first(errors: list[ErrorDetails]) -> ErrorDetails:
    """Unknown keys first (a misspelt key also leaves its field missing), else the first."""
    return next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])


def _parameter_error(
    errors: list[ErrorDetails], data: object, where: str, keys: tuple[str, ...]
) -> ParameterError:
    """The error shown for pydantic's ``errors``, as our ParameterError."""
    first = _first(errors)
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, ParameterError):
        return cause
    if first["type"] == "extra_forbidden" and isinstance(data, Mapping):
        unknown = sorted(str(k) for k in data if k not in keys)
        return ParameterError(where, unknown, "made of the keys " + ", ".join(keys))
    if first["type"] in _NOT_A_MAPPING:
        return ParameterError(where, data, _MAPPING_OF["schema" if where == "schema" else "column"])
    loc = ".".join(str(x) for x in (where, *first["loc"]))
    msg = str(first["msg"]).removeprefix("Input should be ").removeprefix("Value error, ")
    return ParameterError(loc, first.get("input"), msg)


def _column(name: str, spec: object) -> ColumnSpec:
    _identifier("column name", name)
    if name.startswith("__"):
        raise ParameterError("column name", name, "a name not starting with '__' (reserved)")
    where = f"columns.{name}"
    decl = _validated(ColumnDecl, spec, where)
    nulls = _nulls(where, decl.nulls, decl.type)
    _check_replacement(where, nulls, decl)
    return ColumnSpec(name, decl.type, decl.bounds, decl.categories, nulls)


def _check_unit(unit: str, columns: tuple[ColumnSpec, ...]) -> None:
    """The privacy unit's id column, when declared, has no bounds and its null policy is
    ``error`` (a NULL id refuses the registration) or ``drop`` (its rows are left out).

    >>> _check_unit("pid", (ColumnSpec("pid", "text", nulls=NullPolicy("replace", "x")),))
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: columns.pid.nulls must be 'error' (the default: a NULL id refuses the registration) or 'drop' (rows without an id are left out at registration) for the privacy unit's id column: a replaced id would make one individual of everyone without an id; got {'replace': 'x'}.
    """  # noqa: E501
    spec = next((c for c in columns if c.name.lower() == unit.lower()), None)
    if unit == "row" or spec is None:
        return
    if spec.bounds is not None:
        raise ParameterError(f"columns.{unit}", spec.to_dict(), "an id column without bounds")
    if spec.nulls.action not in ("error", "drop"):
        raise ParameterError(
            f"columns.{unit}.nulls",
            spec.to_dict()["nulls"],
            "'error' (the default: a NULL id refuses the registration) or 'drop' (rows "
            "without an id are left out at registration) for the privacy unit's id column: "
            "a replaced id would make one individual of everyone without an id",
        )


#: The keys of a population's declaration (the several-table form).
_POPULATION_KEYS = ("table", "privacy_unit", "tables", "max_derived_rows_per_unit")
#: The keys a public table's declaration may hold.
_PUBLIC_KEYS = ("public", "columns")


def declared_population(data: Mapping[object, object]) -> DatasetSchema:
    """A population's declaration (``privacy_unit`` and ``tables``), every rule checked.

    Each private table is declared as a single table is (without ``table`` and
    ``privacy_unit``, which come from the population); a public table holds ``public: true``
    and its columns (types; ``bounds`` optional; no null policy, no limits).

    >>> p = declared_population({"privacy_unit": "pid", "tables": {
    ...     "visits": {"max_rows_per_unit": 20,
    ...                "columns": {"pid": {"type": "text"},
    ...                            "cost": {"type": "float", "bounds": [0, 5000]}}},
    ...     "regions": {"public": True, "columns": {"region": {"type": "text"}}}}})
    >>> [(m.table, m.public, m.max_rows_per_unit) for m in p.members]
    [('visits', False, 20), ('regions', True, 1)]
    >>> declared_population({"privacy_unit": "pid", "tables": {
    ...     "v": {"table": "v", "columns": {"pid": {"type": "text"}}}}})
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: tables.v.table must be left out (the population names its tables); got 'v'.
    """  # noqa: E501
    unknown = sorted(str(k) for k in data if k not in _POPULATION_KEYS)
    if unknown:
        raise ParameterError("schema", unknown, "made of the keys " + ", ".join(_POPULATION_KEYS))
    unit = _unit("privacy_unit", data.get("privacy_unit"))
    name = _identifier("table", data.get("table", "population"))
    tables = data.get("tables")
    if not isinstance(tables, Mapping) or not tables:
        raise ParameterError("tables", tables, "a non-empty mapping of table declarations")
    raw_limit = data.get("max_derived_rows_per_unit")
    limit = None if raw_limit is None else as_positive_int("max_derived_rows_per_unit", raw_limit)
    members = [_table_of(table, spec, unit) for table, spec in tables.items()]
    _check_members(members)
    for m in members:
        if not m.public:
            _check_work(m.max_rows_per_unit, limit, f"tables.{m.table}.")
    return DatasetSchema(name, unit, (), members=tuple(members), max_derived_rows_per_unit=limit)


def _check_members(members: Sequence[DatasetSchema]) -> None:
    """A population's tables have distinct names, and one of them at least is private."""
    names = [m.table.lower() for m in members]
    if len(set(names)) != len(names):
        raise ParameterError("tables", [m.table for m in members], "distinct names")
    if all(m.public for m in members):
        raise ParameterError("tables", names, "at least one private table (not public: true)")


def _table_of(table: object, spec: object, unit: str) -> DatasetSchema:
    """The population's entry ``tables.<table>``: a mapping that leaves out what the
    population names (its tables' names and unit)."""
    where = f"tables.{table}"
    _identifier(where, table)
    if not isinstance(spec, Mapping):
        raise ParameterError(where, spec, "a mapping with keys columns (and public or limits)")
    own = spec.get("privacy_unit", unit)
    if "privacy_unit" in spec and not (isinstance(own, str) and own.lower() == unit.lower()):
        # A table of its own unit: the population's budgets and bounds would mix two units.
        raise ParameterError(f"{where}.privacy_unit", own, _ONE_UNIT)
    for key in ("table", "privacy_unit"):
        if key in spec:
            raise ParameterError(
                f"{where}.{key}", spec[key], "left out (the population names its tables)"
            )
    if "max_derived_rows_per_unit" in spec:
        raise ParameterError(
            f"{where}.max_derived_rows_per_unit",
            spec["max_derived_rows_per_unit"],
            "declared once, for the population (it bounds the relations its queries build)",
        )
    return _member(str(table), unit, spec, where)


def _public_member(
    table: str, unit: str, spec: Mapping[object, object], where: str
) -> DatasetSchema:
    """A public table of a population: its columns (no null replacement, no limits)."""
    unknown = sorted(str(k) for k in spec if k not in _PUBLIC_KEYS)
    if unknown:
        raise ParameterError(where, unknown, "made of the keys " + ", ".join(_PUBLIC_KEYS))
    cols = spec.get("columns")
    if not isinstance(cols, Mapping) or not cols:
        raise ParameterError(f"{where}.columns", cols, "a non-empty mapping of columns")
    columns = tuple(_column(str(n), c) for n, c in cols.items())
    for col in columns:
        if col.nulls.action == "replace":
            raise ParameterError(
                f"{where}.columns.{col.name}.nulls", col.nulls.value, "drop or error"
            )
    return DatasetSchema(table, unit, columns, public=True)


def _member(table: str, unit: str, spec: Mapping[object, object], where: str) -> DatasetSchema:
    """One table of a population: private (declared as a single table) or public."""
    if spec.get("public") is True:
        return _public_member(table, unit, spec, where)
    if "public" in spec and spec["public"] is not False:
        raise ParameterError(f"{where}.public", spec["public"], "true or false")
    body = {k: v for k, v in spec.items() if k != "public"}
    member = _table({**body, "table": table, "privacy_unit": unit})
    if unit != "row" and not any(c.name.lower() == unit.lower() for c in member.columns):
        # The unit's id is how tables of one population are joined and bounded together.
        raise ParameterError(
            f"{where}.columns", [c.name for c in member.columns], f"a column {unit!r} (the unit)"
        )
    return member


def declared_schema(data: Mapping[object, object]) -> DatasetSchema:
    """The schema a declaration (already read from YAML/JSON) states, every rule checked.

    >>> declared_schema({"table": "t", "privacy_unit": "row", "columns": {"x": {"typ": "int"}}})
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: columns.x must be made of the keys type, bounds, categories, nulls; got ['typ'].
    """  # noqa: E501
    if "tables" in data:
        return declared_population(data)
    table = _table(data)
    _check_work(table.max_rows_per_unit, table.max_derived_rows_per_unit, "")
    return table


def _table(data: Mapping[object, object]) -> DatasetSchema:
    """One table's declaration (alone, or a population's private table), every rule checked
    but the work limit, which belongs to the dataset."""
    decl = _validated(SchemaDecl, dict(data), "schema")
    columns = tuple(_column(name, spec) for name, spec in decl.columns)
    names = [c.name.lower() for c in columns]
    if len(set(names)) != len(names):
        raise ParameterError("columns", [c.name for c in columns], "distinct names")
    _check_unit(decl.privacy_unit, columns)
    return DatasetSchema(
        decl.table,
        decl.privacy_unit,
        columns,
        decl.max_rows_per_unit,
        decl.max_groups_per_unit,
        decl.public_rows,
        decl.public_max_rows,
        max_derived_rows_per_unit=decl.max_derived_rows_per_unit,
    )
