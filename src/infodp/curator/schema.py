"""Dataset metadata: the privacy unit, column bounds, categories, null policies, limits.

A schema is the data owner's public declaration about a sensitive table. Everything the curator
needs to bound sensitivities comes from here — never from the private data. This form
is accepted as YAML or JSON text, a file path or a ``dict``::

    table: people
    privacy_unit: person_id      # or: row
    max_rows_per_unit: 1
    columns:
      age:    {type: int, bounds: [0, 120]}
      income: {type: float, bounds: [0, 500000], nulls: drop}
      region: {type: category, categories: [north, south, east, west]}

Column types: ``int`` and ``float`` (numeric; ``bounds: [low, high]`` needed to aggregate),
``category`` (``categories: [...]``; GROUP BY gives a histogram over exactly these), and
``text`` (a key with no declared domain: usable in WHERE and in GROUP BY with differentially
private partition selection). Null policy ``nulls``: ``error`` (default: registration refuses
a column holding NULL/NaN/±inf), ``drop`` (such values are ignored by every aggregate, like SQL
NULL) or ``{replace: VALUE}`` (replaced by a declared constant inside the bounds).

Public facts are declared, never measured: the row count of a table is private (adding or
removing one individual changes it), so analysts never see it. The owner may declare it as
public (``public_rows: N``, checked at registration) or declare a public upper bound
(``public_max_rows: N``); information costs about the whole table and δ·N in explanations
then use that number, and without either they are stated per individual only.

>>> s = load_schema({"table": "people", "privacy_unit": "row",
...                  "columns": {"age": {"type": "int", "bounds": [0, 120]}}})
>>> s.column("age").bounds
(0.0, 120.0)
>>> s.unit_is_row
True
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infodp._validate import as_positive_int, as_real
from infodp.errors import ParameterError

__all__ = [
    "COLUMN_TYPES",
    "ColumnSpec",
    "DatasetSchema",
    "NullPolicy",
    "load_schema",
]

#: Declared column types.
COLUMN_TYPES: tuple[str, ...] = ("int", "float", "category", "text")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _identifier(name: str, value: Any) -> str:
    if not isinstance(value, str) or not _IDENT.match(value):
        raise ParameterError(
            name, value, "an identifier (letters, digits, _; not starting with a digit)"
        )
    return value


@dataclass(frozen=True, slots=True)
class NullPolicy:
    """What happens to NULL, NaN and ±inf in a column: ``error``, ``drop`` or ``replace``.

    >>> NullPolicy("replace", 0.0).describe()
    'replace by 0'
    """

    action: str = "error"
    value: float | str | None = None

    def describe(self) -> str:
        """A short human description."""
        return (
            f"replace by {self.value:g}"
            if isinstance(self.value, float)
            else (f"replace by {self.value!r}" if self.action == "replace" else self.action)
        )


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """One declared column (immutable).

    >>> ColumnSpec("age", "int", bounds=(0.0, 120.0)).is_numeric
    True
    """

    name: str
    type: str
    bounds: tuple[float, float] | None = None
    categories: tuple[str, ...] | None = None
    nulls: NullPolicy = NullPolicy()

    @property
    def is_numeric(self) -> bool:
        """True for ``int`` and ``float`` columns."""
        return self.type in ("int", "float")

    def to_dict(self) -> dict[str, Any]:
        """The declaration as plain data (round-trips through :func:`load_schema`)."""
        out: dict[str, Any] = {"type": self.type}
        if self.bounds is not None:
            out["bounds"] = list(self.bounds)
        if self.categories is not None:
            out["categories"] = list(self.categories)
        if self.nulls.action == "replace":
            out["nulls"] = {"replace": self.nulls.value}
        elif self.nulls.action != "error":
            out["nulls"] = self.nulls.action
        return out


@dataclass(frozen=True, slots=True)
class DatasetSchema:
    """The public declaration of a sensitive table (immutable).

    ``privacy_unit`` is a column holding the individual's id, or ``"row"`` (one row per
    individual). ``max_rows_per_unit`` (m) and ``max_groups_per_unit`` (k) are contribution
    limits enforced inside the database before any aggregate is taken.
    """

    table: str
    privacy_unit: str
    columns: tuple[ColumnSpec, ...]
    max_rows_per_unit: int = 1
    max_groups_per_unit: int | None = None
    #: The row count, declared public by the owner (None: private).
    public_rows: int | None = None
    #: A public upper bound on the row count (None: none declared).
    public_max_rows: int | None = None

    @property
    def row_bound(self) -> int | None:
        """The declared public bound on the row count (the exact count when declared).

        >>> DatasetSchema("t", "row", (), public_max_rows=1000).row_bound
        1000
        """
        if self.public_rows is not None:
            return self.public_rows
        return self.public_max_rows

    @property
    def unit_is_row(self) -> bool:
        """True when each row is one individual."""
        return self.privacy_unit == "row"

    @property
    def group_limit(self) -> int:
        """k: the most groups one unit may touch (defaults to m)."""
        if self.max_groups_per_unit is None:
            return self.max_rows_per_unit
        return min(self.max_groups_per_unit, self.max_rows_per_unit)

    def column(self, name: str) -> ColumnSpec:
        """The declared column ``name`` (case-insensitive), or a ParameterError naming it."""
        for col in self.columns:
            if col.name.lower() == name.lower():
                return col
        declared = ", ".join(c.name for c in self.columns)
        raise ParameterError(
            f"unknown column {name!r} in table {self.table!r}; declared columns: {declared}."
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-able) that :func:`load_schema` reads back to an equal schema."""
        out: dict[str, Any] = {
            "table": self.table,
            "privacy_unit": self.privacy_unit,
            "max_rows_per_unit": self.max_rows_per_unit,
            "columns": {c.name: c.to_dict() for c in self.columns},
        }
        if self.max_groups_per_unit is not None:
            out["max_groups_per_unit"] = self.max_groups_per_unit
        if self.public_rows is not None:
            out["public_rows"] = self.public_rows
        if self.public_max_rows is not None:
            out["public_max_rows"] = self.public_max_rows
        return out

    def to_json(self) -> str:
        """Canonical JSON text."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DatasetSchema:
        """Read back :meth:`to_dict` output of a schema that was validated when it was stored.

        Only for the store's own records (a data owner's declaration goes through
        :func:`load_schema`); it skips validation, so reading a store's schema costs nothing.

        >>> s = load_schema({"table": "t", "privacy_unit": "row", "public_max_rows": 9,
        ...                  "columns": {"x": {"type": "float", "bounds": [0, 1],
        ...                                    "nulls": {"replace": 0.5}}}})
        >>> DatasetSchema.from_dict(s.to_dict()) == s
        True
        """
        return cls(
            str(data["table"]),
            str(data["privacy_unit"]),
            tuple(_column_from_dict(str(k), v) for k, v in data["columns"].items()),
            int(data.get("max_rows_per_unit", 1)),
            data.get("max_groups_per_unit"),
            data.get("public_rows"),
            data.get("public_max_rows"),
        )


def _column_from_dict(name: str, d: Mapping[str, Any]) -> ColumnSpec:
    bounds = d.get("bounds")
    cats = d.get("categories")
    nulls = d.get("nulls")
    policy = NullPolicy()
    if isinstance(nulls, Mapping):
        raw = nulls["replace"]
        policy = NullPolicy("replace", float(raw) if d["type"] in ("int", "float") else str(raw))
    elif nulls is not None:
        policy = NullPolicy(str(nulls))
    return ColumnSpec(
        name,
        str(d["type"]),
        None if bounds is None else (float(bounds[0]), float(bounds[1])),
        None if cats is None else tuple(str(c) for c in cats),
        policy,
    )


# -- validation: pydantic models of the declaration --------------------------------------------
#
# The models below are the one description of what a declaration may hold; load_schema turns a
# validated model into the immutable dataclasses above. Domain rules raise ParameterError with
# the declaration's own path (``columns.age.bounds``); pydantic's type and key errors are turned
# into the same form by :func:`_validated`. pydantic is imported on first use: a store's own
# (already validated) declaration is read back by :meth:`DatasetSchema.from_dict` without it.

_COLUMN_KEYS = ("type", "bounds", "categories", "nulls")
_SCHEMA_KEYS = (
    "table",
    "privacy_unit",
    "max_rows_per_unit",
    "max_groups_per_unit",
    "public_rows",
    "public_max_rows",
    "columns",
)


@functools.cache
def _models() -> tuple[Any, Any]:
    """(column model, schema model), built once per process."""
    from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_validator

    class ColumnDecl(BaseModel):
        """One column's declaration: ``{type, bounds?, categories?, nulls?}``."""

        model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

        type: Any = None
        bounds: Any = None
        categories: Any = None
        nulls: Any = None

        @field_validator("type")
        @classmethod
        def _type(cls, v: Any, info: ValidationInfo) -> str:
            if v not in COLUMN_TYPES:
                raise ParameterError(f"{_where(info)}.type", v, f"one of {', '.join(COLUMN_TYPES)}")
            return str(v)

        @model_validator(mode="after")
        def _rules(self, info: ValidationInfo) -> ColumnDecl:
            where = _where(info)
            if self.bounds is not None:
                _check_bounds(where, self.type, self.bounds)
            if self.categories is not None:
                _check_categories(where, self.type, self.categories)
            elif self.type == "category":
                raise ParameterError(
                    f"{where}.categories",
                    None,
                    "declared for a category column (or declare the column as type: text)",
                )
            return self

    class SchemaDecl(BaseModel):
        """The whole declaration (the columns are validated one by one, by name)."""

        model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

        table: Any = None
        privacy_unit: Any = None
        max_rows_per_unit: Any = 1
        max_groups_per_unit: Any = None
        public_rows: Any = None
        public_max_rows: Any = None
        columns: Any = None

        @field_validator("table", "privacy_unit")
        @classmethod
        def _ident(cls, v: Any, info: ValidationInfo) -> str:
            if v is None and info.field_name == "privacy_unit":
                raise ParameterError("privacy_unit", None, "a user-id column name or 'row'")
            return _identifier(str(info.field_name), v)

        @field_validator("max_rows_per_unit", "max_groups_per_unit")
        @classmethod
        def _limit(cls, v: Any, info: ValidationInfo) -> int | None:
            if v is None and info.field_name == "max_groups_per_unit":
                return None
            return as_positive_int(str(info.field_name), v)

        @field_validator("public_rows", "public_max_rows")
        @classmethod
        def _count(cls, v: Any, info: ValidationInfo) -> int | None:
            if v is None:
                return None
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ParameterError(
                    str(info.field_name), v, "a non-negative integer number of rows"
                )
            return int(v)

        @field_validator("columns")
        @classmethod
        def _columns(cls, v: Any) -> Any:
            if not isinstance(v, Mapping) or not v:
                raise ParameterError("columns", v, "a non-empty mapping of column declarations")
            return v

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

    return ColumnDecl, SchemaDecl


def _where(info: Any) -> str:
    return str((info.context or {}).get("where", "column"))


#: The largest |bound| of a numeric column (see :func:`_check_bounds`).
MAX_BOUND = 1e100


def _check_bounds(where: str, ctype: str, raw: Any) -> None:
    name = f"{where}.bounds"
    if ctype not in ("int", "float"):
        raise ParameterError(name, raw, "declared only for int or float columns")
    if not isinstance(raw, (list, tuple)) or len(raw) != 2:
        raise ParameterError(name, raw, "a pair [low, high]")
    low = as_real(f"{name}[0]", raw[0])
    high = as_real(f"{name}[1]", raw[1])
    if not low <= high:
        raise ParameterError(name, raw, "a pair [low, high] with low <= high")
    if ctype == "int" and not (float(low).is_integer() and float(high).is_integer()):
        raise ParameterError(name, raw, "integers for an int column")
    if not math.isfinite(high - low):
        # Quantile binning divides by the width: an infinite width would overflow inside the
        # query, only for some rows (a data-dependent failure after the charge).
        raise ParameterError(name, raw, "a pair whose width high - low is a finite double")
    if max(abs(low), abs(high)) > MAX_BOUND:
        # Sums, squares (VARIANCE, STDDEV) and their noise are computed in doubles: with
        # bounds near 1e308 a SUM or MEDIAN answered inf and VARIANCE overflowed after the
        # charge. Within ±1e100 a sum of squares over 2^63 rows (2^63 · 1e200) is finite.
        raise ParameterError(
            name,
            raw,
            f"bounds within [-{MAX_BOUND:g}, {MAX_BOUND:g}] (larger values overflow a double "
            "in sums and squares)",
        )
    if ctype == "int" and not (low >= -(2.0**63) and high < 2.0**63):
        raise ParameterError(name, raw, "integers in [-2^63, 2^63) (an int column is BIGINT)")


def _check_categories(where: str, ctype: str, raw: Any) -> None:
    name = f"{where}.categories"
    if ctype != "category":
        raise ParameterError(name, raw, "declared only for category columns")
    if not isinstance(raw, (list, tuple)) or not raw:
        raise ParameterError(name, raw, "a non-empty list")
    if len({str(c) for c in raw}) != len(raw):
        raise ParameterError(name, raw, "a list without duplicates")


def _nulls(where: str, spec: Any, ctype: str) -> NullPolicy:
    if spec is None or spec == "error":
        return NullPolicy()
    if spec == "drop":
        return NullPolicy("drop")
    if isinstance(spec, Mapping) and set(spec) == {"replace"}:
        raw = spec["replace"]
        if ctype in ("int", "float"):
            return NullPolicy("replace", as_real(f"{where}.nulls.replace", raw))
        if not isinstance(raw, str):
            raise ParameterError(f"{where}.nulls.replace", raw, "a string")
        return NullPolicy("replace", raw)
    raise ParameterError(f"{where}.nulls", spec, "'error', 'drop' or {replace: VALUE}")


def _validated(model: Any, data: Any, where: str, keys: tuple[str, ...]) -> Any:
    """``model`` validated from ``data``; every failure is one ParameterError naming the field."""
    from pydantic import ValidationError

    try:
        return model.model_validate(data, context={"where": where})
    except ValidationError as err:
        errors = err.errors(include_url=False)
        # Unknown keys first (a misspelt key also leaves its field missing).
        first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        cause = (first.get("ctx") or {}).get("error")
        if isinstance(cause, ParameterError):
            raise cause from None
        if first["type"] == "extra_forbidden":
            unknown = sorted(str(k) for k in data if k not in keys)
            raise ParameterError(where, unknown, "made of the keys " + ", ".join(keys)) from None
        if first["type"] in ("model_type", "model_attributes_type", "dict_type"):
            allowed = (
                "a mapping with keys table, privacy_unit, columns"
                if where == "schema"
                else "a mapping such as {type: int, bounds: [0, 1]}"
            )
            raise ParameterError(where, data, allowed) from None
        loc = ".".join(str(x) for x in (where, *first["loc"]))
        msg = str(first["msg"]).removeprefix("Input should be ").removeprefix("Value error, ")
        raise ParameterError(loc, first.get("input"), msg) from None


def _parse_column(name: str, spec: Any) -> ColumnSpec:
    _identifier("column name", name)
    if name.startswith("__"):
        raise ParameterError("column name", name, "a name not starting with '__' (reserved)")
    where = f"columns.{name}"
    column_model, _ = _models()
    decl = _validated(column_model, spec, where, _COLUMN_KEYS)
    bounds = None if decl.bounds is None else (float(decl.bounds[0]), float(decl.bounds[1]))
    categories = None if decl.categories is None else tuple(str(c) for c in decl.categories)
    nulls = _nulls(where, decl.nulls, decl.type)
    if (
        isinstance(nulls.value, float)
        and bounds is not None
        and not bounds[0] <= nulls.value <= bounds[1]
    ):
        raise ParameterError(
            f"{where}.nulls.replace", nulls.value, f"inside the bounds {list(bounds)}"
        )
    if nulls.action == "replace" and categories is not None and nulls.value not in categories:
        raise ParameterError(
            f"{where}.nulls.replace", nulls.value, "one of the declared categories"
        )
    return ColumnSpec(name, decl.type, bounds, categories, nulls)


def load_schema(source: Any) -> DatasetSchema:
    """Read a schema from a dict, YAML/JSON text, or a path to a ``.yaml``/``.json`` file.

    >>> s = load_schema('''
    ... table: people
    ... privacy_unit: person_id
    ... max_rows_per_unit: 2
    ... columns:
    ...   income: {type: float, bounds: [0, 500000], nulls: drop}
    ...   region: {type: category, categories: [north, south]}
    ... ''')
    >>> (s.privacy_unit, s.max_rows_per_unit, s.column("region").categories)
    ('person_id', 2, ('north', 'south'))
    >>> load_schema({"table": "t", "privacy_unit": "row", "columns": {"x": {"type": "blob"}}})
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: columns.x.type must be one of int, float, category, text; got 'blob'.
    """  # noqa: E501
    data: Any = source
    if isinstance(source, Path) or (
        isinstance(source, str)
        and "\n" not in source
        and source.endswith((".yaml", ".yml", ".json"))
    ):
        path = Path(source)
        if not path.is_file():
            raise ParameterError("schema", str(source), "an existing YAML or JSON file")
        data = path.read_text()
    if isinstance(data, str):
        import yaml  # type: ignore[import-untyped]  # YAML is a superset of JSON

        try:
            data = yaml.safe_load(data)
        except yaml.YAMLError as err:
            raise ParameterError(
                f"schema is not valid YAML/JSON: {str(err).splitlines()[0]}"
            ) from None
    if not isinstance(data, Mapping):
        raise ParameterError(
            "schema", type(data).__name__, "a mapping with keys table, privacy_unit, columns"
        )
    _, schema_model = _models()
    decl = _validated(schema_model, dict(data), "schema", _SCHEMA_KEYS)
    columns = tuple(_parse_column(str(k), v) for k, v in decl.columns.items())
    names = [c.name.lower() for c in columns]
    if len(set(names)) != len(names):
        raise ParameterError("columns", [c.name for c in columns], "distinct names")
    unit = decl.privacy_unit
    if unit != "row" and unit.lower() in names:
        spec = next(c for c in columns if c.name.lower() == unit.lower())
        if spec.bounds is not None or spec.nulls.action != "error":
            raise ParameterError(
                f"columns.{unit}", spec.to_dict(), "an id column without bounds or null policy"
            )
    return DatasetSchema(
        decl.table,
        unit,
        columns,
        decl.max_rows_per_unit,
        decl.max_groups_per_unit,
        decl.public_rows,
        decl.public_max_rows,
    )
