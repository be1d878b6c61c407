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
``category`` (``categories: [...]``; GROUP BY gives a histogram over exactly these),
``text`` (a key with no declared domain: usable in WHERE and in GROUP BY with differentially
private partition selection) and ``bool`` (also spelt ``boolean``: a condition in WHERE, a
category of the two keys ``false`` and ``true`` in GROUP BY, 0 or 1 with the implied bounds
[0, 1] in COUNT, SUM and AVG). Null policy ``nulls``: ``error`` (default: registration refuses
a column holding NULL/NaN/±inf), ``drop`` (such values are ignored by every aggregate, like SQL
NULL) or ``{replace: VALUE}`` (replaced by a declared constant inside the bounds). The
privacy unit's id column takes ``error`` or ``drop`` (its rows without an id are left out at
registration, and the owner is told how many); a dataset has exactly one privacy unit.

The work one individual can cause is bounded too: every relation a query builds (a join, a
subquery) holds at most ``max_derived_rows_per_unit`` rows of one unit (default
:data:`DEFAULT_MAX_DERIVED_ROWS_PER_UNIT`), derived from the declaration alone (m, m1·m2, m·M
for a public key shared by M rows); a query over the limit is refused before anything runs.

Public facts are declared, never measured: the row count of a table is private (adding or
removing one individual changes it), so analysts never see it. The owner may declare it as
public (``public_rows: N``, checked at registration) or declare a public upper bound
(``public_max_rows: N``); information costs about the whole table and δ·N in explanations
then use that number, and without either they are stated per individual only.

>>> from infodp.curator.declaration.source import load_schema
>>> s = load_schema({"table": "people", "privacy_unit": "row",
...                  "columns": {"age": {"type": "int", "bounds": [0, 120]}}})
>>> s.column("age").bounds
(0.0, 120.0)
>>> s.unit_is_row
True
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NotRequired, Required, TypedDict

from infodp.errors import ParameterError

__all__ = [
    "BOOL_BOUNDS",
    "BOOL_KEYS",
    "COLUMN_TYPES",
    "DEFAULT_MAX_DERIVED_ROWS_PER_UNIT",
    "TYPE_ALIASES",
    "ColumnDict",
    "ColumnSpec",
    "DatasetSchema",
    "NullPolicy",
    "SchemaDict",
    "stored_name",
]

#: The default bound on the rows one unit may have in any relation a query builds (its joins,
#: subqueries): the work one person's rows can cause. Every query of the documentation and the
#: tests stays far below it (the largest derives 20·20 = 400 rows); a public key repeated 10⁶
#: times, or a self-join chain m^(k+1), is refused. An owner declares another limit with
#: ``max_derived_rows_per_unit``.
DEFAULT_MAX_DERIVED_ROWS_PER_UNIT = 10_000

#: Declared column types.
COLUMN_TYPES: tuple[str, ...] = ("int", "float", "category", "text", "bool")

#: Other spellings of a declared type (``boolean`` is ``bool``).
TYPE_ALIASES: dict[str, str] = {"boolean": "bool"}

#: The bounds a ``bool`` column implies: aggregated as 0 (false) and 1 (true).
BOOL_BOUNDS: tuple[float, float] = (0.0, 1.0)

#: The keys a ``bool`` column groups by: a declared category of two keys.
BOOL_KEYS: tuple[str, ...] = ("false", "true")


class ColumnDict(TypedDict, total=False):
    """A column's declaration as plain data (:meth:`ColumnSpec.to_dict`)."""

    type: Required[str]
    bounds: list[float]
    categories: list[str]
    #: ``"drop"`` or ``{"replace": VALUE}`` (absent: ``"error"``).
    nulls: str | dict[str, float | str]
    #: A public table's column: most rows sharing one value (measured on the public data).
    multiplicity: int


class SchemaDict(TypedDict):
    """A declaration as plain data (:meth:`DatasetSchema.to_dict`, JSON-able).

    A population holds ``tables`` (each a table's keys without ``table`` and
    ``privacy_unit``) instead of ``columns``.
    """

    table: str
    privacy_unit: str
    max_rows_per_unit: NotRequired[int]
    columns: NotRequired[dict[str, ColumnDict]]
    tables: NotRequired[dict[str, SchemaDict]]
    public: NotRequired[bool]
    max_groups_per_unit: NotRequired[int]
    public_rows: NotRequired[int]
    public_max_rows: NotRequired[int]
    max_derived_rows_per_unit: NotRequired[int]


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

    @property
    def leaves_no_null(self) -> bool:
        """Registration leaves no NULL in the column (refused under ``error``, filled in under
        ``replace``; ``drop`` keeps a dropped value as NULL).

        >>> NullPolicy("error").leaves_no_null, NullPolicy("drop").leaves_no_null
        (True, False)
        """
        return self.action in ("error", "replace")


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """One declared column (immutable).

    A ``bool`` column is numeric with the implied bounds [0, 1] (COUNT, SUM, AVG read false
    as 0 and true as 1) and groups by the two keys ``false`` and ``true``.

    >>> ColumnSpec("age", "int", bounds=(0.0, 120.0)).is_numeric
    True
    >>> ColumnSpec("refurbished", "bool").bounds
    (0.0, 1.0)
    """

    name: str
    type: str
    bounds: tuple[float, float] | None = None
    categories: tuple[str, ...] | None = None
    nulls: NullPolicy = NullPolicy()
    #: A public table's column: the most rows sharing one value, measured on the public data
    #: at registration (bounds each private row's matches in a join on this column).
    multiplicity: int | None = None

    def __post_init__(self) -> None:
        if self.type == "bool" and self.bounds is None:
            object.__setattr__(self, "bounds", BOOL_BOUNDS)  # implied, never declared

    @property
    def is_numeric(self) -> bool:
        """True for ``int``, ``float`` and ``bool`` (0 or 1) columns."""
        return self.type in ("int", "float", "bool")

    @property
    def has_bounded_copy(self) -> bool:
        """A numeric column with bounds: registration stores its bounded copy beside it.

        >>> ColumnSpec("age", "int", bounds=(0.0, 120.0)).has_bounded_copy
        True
        """
        return self.is_numeric and self.bounds is not None

    @property
    def is_integer(self) -> bool:
        """True for ``int`` and ``bool`` columns (integer values, an integer grid)."""
        return self.type in ("int", "bool")

    def to_dict(self) -> ColumnDict:
        """The declaration as plain data (round-trips through :func:`load_schema`)."""
        out: ColumnDict = {"type": self.type}
        if self.bounds is not None and self.type != "bool":
            out["bounds"] = list(self.bounds)
        if self.categories is not None:
            out["categories"] = list(self.categories)
        if self.nulls.action == "replace" and self.nulls.value is not None:
            out["nulls"] = {"replace": self.nulls.value}
        elif self.nulls.action != "error":
            out["nulls"] = self.nulls.action
        if self.multiplicity is not None:
            out["multiplicity"] = self.multiplicity
        return out


@dataclass(frozen=True, slots=True)
class DatasetSchema:
    """The public declaration of a sensitive table (immutable).

    ``privacy_unit`` is a column holding the individual's id, or ``"row"`` (one row per
    individual). ``max_rows_per_unit`` (m) and ``max_groups_per_unit`` (k) are contribution
    limits enforced inside the database before any aggregate is taken.

    A *population* (``members`` not empty) is one privacy unit with several tables: each
    member is a table's schema (``public`` for a public table: no bounds, no budget), and
    every budget and cap belongs to the population. A query over a population reads a
    *derived relation* (:mod:`infodp.curator.relations`): a schema whose ``source_sql`` is
    the relation's SQL over the stored tables.
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
    #: A public table of a population (declared ``public: true``).
    public: bool = False
    #: A population's tables (private and public), in declared order.
    members: tuple[DatasetSchema, ...] = ()
    #: A derived relation's SQL (DuckDB dialect) over the stored tables; None: the table.
    source_sql: str | None = None
    #: The declared bound on one unit's rows in any relation a query builds (None: the
    #: default, :data:`DEFAULT_MAX_DERIVED_ROWS_PER_UNIT`).
    max_derived_rows_per_unit: int | None = None

    @property
    def is_population(self) -> bool:
        """True for a population of several tables (declared with ``tables:``)."""
        return bool(self.members)

    def member(self, name: str) -> DatasetSchema:
        """The population's table ``name`` (case-insensitive), or a ParameterError naming it.

        >>> from infodp.curator.declaration.source import load_schema
        >>> s = load_schema({"privacy_unit": "pid", "tables": {
        ...     "people": {"columns": {"pid": {"type": "text"}}},
        ...     "regions": {"public": True, "columns": {"region": {"type": "text"}}}}})
        >>> s.member("REGIONS").public
        True
        """
        for m in self.members:
            if m.table.lower() == name.lower():
                return m
        known = ", ".join(m.table for m in self.members) or self.table
        raise ParameterError(f"unknown table {name!r}; the population's tables: {known}.")

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
    def work_limit(self) -> int:
        """The most rows one unit may have in any relation a query builds (declared, or the
        default).

        >>> DatasetSchema("t", "row", ()).work_limit
        10000
        >>> DatasetSchema("t", "row", (), max_derived_rows_per_unit=50).work_limit
        50
        """
        if self.max_derived_rows_per_unit is not None:
            return self.max_derived_rows_per_unit
        return DEFAULT_MAX_DERIVED_ROWS_PER_UNIT

    @property
    def drops_null_units(self) -> bool:
        """True when the id column declares ``nulls: drop``: registration leaves out the rows
        whose id is NULL (and tells the owner how many); otherwise it refuses them.

        >>> from infodp.curator.declaration.source import load_schema
        >>> load_schema({"table": "t", "privacy_unit": "pid",
        ...              "columns": {"pid": {"type": "text", "nulls": "drop"}}}).drops_null_units
        True
        """
        if self.unit_is_row:
            return False
        unit = next((c for c in self.columns if c.name.lower() == self.privacy_unit.lower()), None)
        return unit is not None and unit.nulls.action == "drop"

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

    def to_dict(self) -> SchemaDict:
        """Plain data (JSON-able) that :func:`load_schema` reads back to an equal schema."""
        if self.is_population:
            population: SchemaDict = {
                "table": self.table,
                "privacy_unit": self.privacy_unit,
                "tables": {m.table: m._member_dict() for m in self.members},
            }
            if self.max_derived_rows_per_unit is not None:
                population["max_derived_rows_per_unit"] = self.max_derived_rows_per_unit
            return population
        out: SchemaDict = {
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
        if self.public:
            out["public"] = True
        if self.max_derived_rows_per_unit is not None:
            out["max_derived_rows_per_unit"] = self.max_derived_rows_per_unit
        return out

    def _member_dict(self) -> SchemaDict:
        """A member's plain data inside its population's ``tables`` (no table, no unit)."""
        out = self.to_dict()
        del out["table"], out["privacy_unit"]
        if self.public:
            del out["max_rows_per_unit"]
        return out

    def to_json(self) -> str:
        """Canonical JSON text."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: SchemaDict) -> DatasetSchema:
        """Read back :meth:`to_dict` output of a schema that was validated when it was stored.

        Only for the store's own records (a data owner's declaration goes through
        :func:`load_schema`); it skips validation, so reading a store's schema costs nothing.

        >>> from infodp.curator.declaration.source import load_schema
        >>> s = load_schema({"table": "t", "privacy_unit": "row", "public_max_rows": 9,
        ...                  "columns": {"x": {"type": "float", "bounds": [0, 1],
        ...                                    "nulls": {"replace": 0.5}}}})
        >>> type(s).from_dict(s.to_dict()) == s  # the class load_schema made
        True
        """
        tables = data.get("tables")
        if tables is not None:
            unit = str(data["privacy_unit"])
            members = tuple(
                cls.from_dict({**m, "table": str(k), "privacy_unit": unit})
                for k, m in tables.items()
            )
            return cls(
                str(data["table"]),
                unit,
                (),
                members=members,
                max_derived_rows_per_unit=data.get("max_derived_rows_per_unit"),
            )
        return cls(
            str(data["table"]),
            str(data["privacy_unit"]),
            tuple(_column_from_dict(str(k), v) for k, v in data["columns"].items()),
            int(data.get("max_rows_per_unit", 1)),
            data.get("max_groups_per_unit"),
            data.get("public_rows"),
            data.get("public_max_rows"),
            bool(data.get("public", False)),
            max_derived_rows_per_unit=data.get("max_derived_rows_per_unit"),
        )


def _column_from_dict(name: str, d: ColumnDict) -> ColumnSpec:
    bounds = d.get("bounds")
    cats = d.get("categories")
    nulls = d.get("nulls")
    policy = NullPolicy()
    if isinstance(nulls, Mapping):
        raw = nulls["replace"]
        numeric = d["type"] in ("int", "float", "bool")
        policy = NullPolicy("replace", float(raw) if numeric else str(raw))
    elif nulls is not None:
        policy = NullPolicy(str(nulls))
    multiplicity = d.get("multiplicity")
    return ColumnSpec(
        name,
        str(d["type"]),
        None if bounds is None else (float(bounds[0]), float(bounds[1])),
        None if cats is None else tuple(str(c) for c in cats),
        policy,
        None if multiplicity is None else int(multiplicity),
    )


def stored_name(dataset: str, table: str) -> str:
    """The name a population's table is stored under: ``dataset__table``.

    >>> stored_name("clinic", "visits")
    'clinic__visits'
    """
    return f"{dataset}__{table}"


#: The largest |bound| of a numeric column (sums and squares stay finite doubles; the rule is
#: checked in :mod:`infodp.curator.declaration.models`).
MAX_BOUND = 1e100
