"""Dataset metadata: the privacy unit, column bounds, categories, null policies, limits.

A schema is the data owner's public declaration about a sensitive table. Everything the curator
needs to bound sensitivities comes from here — never from the private data. At least this form
(issue 5) is accepted, as YAML or JSON text, a file path or a ``dict``::

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


def _parse_nulls(col: str, spec: Any, ctype: str) -> NullPolicy:
    if spec is None or spec == "error":
        return NullPolicy()
    if spec == "drop":
        return NullPolicy("drop")
    if isinstance(spec, Mapping) and set(spec) == {"replace"}:
        raw = spec["replace"]
        if ctype in ("int", "float"):
            return NullPolicy("replace", as_real(f"columns.{col}.nulls.replace", raw))
        if not isinstance(raw, str):
            raise ParameterError(f"columns.{col}.nulls.replace", raw, "a string")
        return NullPolicy("replace", raw)
    raise ParameterError(f"columns.{col}.nulls", spec, "'error', 'drop' or {replace: VALUE}")


def _parse_column(name: str, spec: Any) -> ColumnSpec:
    _identifier("column name", name)
    if name.startswith("__"):
        raise ParameterError("column name", name, "a name not starting with '__' (reserved)")
    if not isinstance(spec, Mapping):
        raise ParameterError(
            f"columns.{name}", spec, "a mapping such as {type: int, bounds: [0, 1]}"
        )
    unknown = set(spec) - {"type", "bounds", "categories", "nulls"}
    if unknown:
        raise ParameterError(
            f"columns.{name}", sorted(unknown), "made of the keys type, bounds, categories, nulls"
        )
    ctype = spec.get("type")
    if ctype not in COLUMN_TYPES:
        raise ParameterError(f"columns.{name}.type", ctype, f"one of {', '.join(COLUMN_TYPES)}")
    bounds: tuple[float, float] | None = None
    categories: tuple[str, ...] | None = None
    if "bounds" in spec:
        if ctype not in ("int", "float"):
            raise ParameterError(
                f"columns.{name}.bounds", spec["bounds"], "declared only for int or float columns"
            )
        raw = spec["bounds"]
        if not isinstance(raw, (list, tuple)) or len(raw) != 2:
            raise ParameterError(f"columns.{name}.bounds", raw, "a pair [low, high]")
        low = as_real(f"columns.{name}.bounds[0]", raw[0])
        high = as_real(f"columns.{name}.bounds[1]", raw[1])
        if not low <= high:
            raise ParameterError(
                f"columns.{name}.bounds", raw, "a pair [low, high] with low <= high"
            )
        if ctype == "int" and not (float(low).is_integer() and float(high).is_integer()):
            raise ParameterError(f"columns.{name}.bounds", raw, "integers for an int column")
        if not math.isfinite(high - low):
            # Quantile binning divides by the width: an infinite width would overflow inside
            # the query, only for some rows (a data-dependent failure after the charge).
            raise ParameterError(
                f"columns.{name}.bounds", raw, "a pair whose width high - low is a finite double"
            )
        if ctype == "int" and not (low >= -(2.0**63) and high < 2.0**63):
            raise ParameterError(
                f"columns.{name}.bounds", raw, "integers in [-2^63, 2^63) (an int column is BIGINT)"
            )
        bounds = (low, high)
    if "categories" in spec:
        if ctype != "category":
            raise ParameterError(
                f"columns.{name}.categories",
                spec["categories"],
                "declared only for category columns",
            )
        raw = spec["categories"]
        if not isinstance(raw, (list, tuple)) or not raw:
            raise ParameterError(f"columns.{name}.categories", raw, "a non-empty list")
        categories = tuple(str(c) for c in raw)
        if len(set(categories)) != len(categories):
            raise ParameterError(f"columns.{name}.categories", raw, "a list without duplicates")
    elif ctype == "category":
        raise ParameterError(
            f"columns.{name}.categories",
            None,
            "declared for a category column (or declare the column as type: text)",
        )
    nulls = _parse_nulls(name, spec.get("nulls"), ctype)
    if (
        nulls.action == "replace"
        and bounds is not None
        and isinstance(nulls.value, float)
        and not bounds[0] <= nulls.value <= bounds[1]
    ):
        raise ParameterError(
            f"columns.{name}.nulls.replace", nulls.value, f"inside the bounds {list(bounds)}"
        )
    if nulls.action == "replace" and categories is not None and nulls.value not in categories:
        raise ParameterError(
            f"columns.{name}.nulls.replace", nulls.value, "one of the declared categories"
        )
    return ColumnSpec(name, ctype, bounds, categories, nulls)


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
    unknown = set(data) - {
        "table",
        "privacy_unit",
        "max_rows_per_unit",
        "max_groups_per_unit",
        "columns",
        "public_rows",
        "public_max_rows",
    }
    if unknown:
        raise ParameterError(
            "schema",
            sorted(unknown),
            "made of the keys table, privacy_unit, max_rows_per_unit, max_groups_per_unit, "
            "public_rows, public_max_rows, columns",
        )
    table = _identifier("table", data.get("table"))
    unit = data.get("privacy_unit")
    if unit is None:
        raise ParameterError("privacy_unit", None, "a user-id column name or 'row'")
    unit = _identifier("privacy_unit", unit)
    cols_raw = data.get("columns")
    if not isinstance(cols_raw, Mapping) or not cols_raw:
        raise ParameterError("columns", cols_raw, "a non-empty mapping of column declarations")
    columns = tuple(_parse_column(str(k), v) for k, v in cols_raw.items())
    m = as_positive_int("max_rows_per_unit", data.get("max_rows_per_unit", 1))
    k_raw = data.get("max_groups_per_unit")
    k = None if k_raw is None else as_positive_int("max_groups_per_unit", k_raw)
    if unit == "row" and m != 1:
        raise ParameterError("max_rows_per_unit", m, "1 when privacy_unit is 'row'")
    names = [c.name.lower() for c in columns]
    if len(set(names)) != len(names):
        raise ParameterError("columns", [c.name for c in columns], "distinct names")
    if unit != "row" and unit.lower() in names:
        spec = next(c for c in columns if c.name.lower() == unit.lower())
        if spec.bounds is not None or spec.nulls.action != "error":
            raise ParameterError(
                f"columns.{unit}", spec.to_dict(), "an id column without bounds or null policy"
            )
    public_rows = _count_or_none("public_rows", data.get("public_rows"))
    public_max = _count_or_none("public_max_rows", data.get("public_max_rows"))
    if public_rows is not None and public_max is not None and public_rows > public_max:
        raise ParameterError(
            "public_max_rows",
            public_max,
            f"at least public_rows ({public_rows}) when both are given",
        )
    return DatasetSchema(table, unit, columns, m, k, public_rows, public_max)


def _count_or_none(name: str, value: Any) -> int | None:
    """A declared row count: a non-negative integer (not a bool, not a float) or absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ParameterError(name, value, "a non-negative integer number of rows")
    return value
