"""The relations a query reads in FROM: a population's stored tables, or a subquery's.

A :class:`Source` looks like a registered table whatever it is: a privacy unit column (but
for a public table), its declared columns and, beside each bounded numeric column of a private
table or a derived relation, the bounded copy ``__bnd_c``. How many rows one unit has in it
(``rows``) and in how many groups it may fall (``groups``) are declared or derived bounds.

>>> from infodp.curator.declaration.source import load_schema
>>> s = load_schema({"privacy_unit": "pid", "table": "clinic", "tables": {
...     "visits": {"max_rows_per_unit": 20, "columns": {
...         "pid": {"type": "text"}, "cost": {"type": "float", "bounds": [0, 5000]}}},
...     "regions": {"public": True, "columns": {"region": {"type": "text"}}}}})
>>> import sqlglot
>>> v = table_source(sqlglot.parse_one("SELECT 1 FROM clinic.visits AS v").args["from_"].this, s)
>>> (v.alias, v.label, v.rows, v.relation.sql())
('v', 'visits', 20, '"clinic__visits" AS "v"')
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from infodp.curator.backends.bounding import ident
from infodp.curator.declaration.schema import ColumnSpec, DatasetSchema, stored_name
from infodp.curator.relations.values import Value, refuse, stored_value
from infodp.errors import ParameterError

__all__ = ["Source", "table_source"]


@dataclass(frozen=True, slots=True)
class Source:
    """One relation of a FROM clause (see the module docstring)."""

    #: The SQL alias its columns are read through.
    alias: str
    #: The name an analyst recognises it by (the table's name; the alias of a subquery).
    label: str
    #: The stored table, or the subquery, aliased.
    relation: exp.Expr
    columns: tuple[ColumnSpec, ...]
    #: A public table (no unit, no bounds on its rows).
    public: bool
    #: Its privacy unit column (None: public, or each row is an individual).
    unit: str | None
    #: Most rows of one unit (a public table: 0).
    rows: int
    #: Most groups one unit may touch (at most ``rows``).
    groups: int
    #: Which population table it is (None: a subquery).
    table: str | None = None
    #: The right side of a LEFT JOIN: any of its values may be NULL.
    nullable: bool = False
    #: The most rows of one unit in any relation built to read it (for a stored table its
    #: ``rows``; for a subquery, the largest inside it), and how that bound arose.
    work: int = 0
    how: str = ""

    def term(self) -> str:
        """Its rows per unit, in words, as a factor of a join's bound."""
        if self.table is not None:
            name = self.label if self.alias == self.label else f"{self.label} {self.alias}"
            return f"{name} (max_rows_per_unit {self.rows})"
        return f"subquery {self.label} ({self.rows} rows per individual)"

    def spec(self, name: str) -> ColumnSpec | None:
        """Its column ``name`` (case-insensitive; the unit even when not declared)."""
        for col in self.columns:
            if col.name.lower() == name.lower():
                return col
        if self.unit is not None and self.unit.lower() == name.lower():
            return ColumnSpec(self.unit, "text")
        return None

    def value(self, name: str) -> Value:
        """Its column ``name`` as a value of the relation."""
        spec = self.spec(name)
        if spec is None:
            known = ", ".join(c.name for c in self.columns)
            raise ParameterError(f"unknown column {name!r} in {self.label}; its columns: {known}.")
        return stored_value(self.alias, spec, grid=not self.public, nullable=self.nullable)

    def names(self) -> list[str]:
        """Its columns' names, the unit first."""
        out = [] if self.unit is None else [self.unit]
        return out + [c.name for c in self.columns if c.name.lower() != (self.unit or "").lower()]


def table_source(node: exp.Table, schema: DatasetSchema) -> Source:
    """The stored table a FROM or JOIN names: a population's table (``people`` or
    ``dataset.people``) or the registered single table."""
    if node.args.get("catalog"):
        raise refuse("catalog-qualified table name", f"write {node.name!r}")
    if node.args.get("sample"):
        raise refuse("TABLESAMPLE / USING SAMPLE", "sampling is not part of the released query")
    db = node.args.get("db")
    if db is not None and db.name.lower() != schema.table.lower():
        raise ParameterError(
            f"unknown dataset {db.name!r} in {node.sql()!r}; this dataset is {schema.table!r}."
        )
    alias = node.alias or node.name
    if schema.is_population:
        member = schema.member(node.name)
        stored = stored_name(schema.table, member.table)
    else:
        if node.name.lower() != schema.table.lower():
            raise ParameterError(
                f"unknown table {node.name!r}; the registered table is {schema.table!r}."
            )
        member, stored = schema, schema.table
    table = exp.Table(this=ident(stored), alias=exp.TableAlias(this=ident(alias)))
    if member.public:
        return Source(alias, member.table, table, member.columns, True, None, 0, 0, member.table)
    unit = None if member.unit_is_row else member.privacy_unit
    rows = member.max_rows_per_unit
    return Source(
        alias,
        member.table,
        table,
        member.columns,
        False,
        unit,
        rows,
        member.group_limit,
        member.table,
        work=rows,
        how=f"{member.table} (max_rows_per_unit {rows})",
    )
