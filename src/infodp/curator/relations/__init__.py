"""Queries over several tables, derived columns and subqueries, read as one derived relation.

:func:`resolve` turns a query over a population (several tables of one privacy unit, public
tables among them; :class:`~infodp.curator.declaration.schema.DatasetSchema` with ``members``), or over a
single table with derived values, into a query over ONE relation and that relation's
declaration: a :class:`~infodp.curator.declaration.schema.DatasetSchema` whose ``source_sql`` is a SELECT
over the stored tables, whose ``max_rows_per_unit`` is the derived bound m' on a unit's rows
in it and whose columns carry derived types, bounds and categories. The parser, the rules,
pricing, the compiler and the answer then work on it unchanged: sensitivities and information
follow from the derived bounds, never from the data.

- joins (:mod:`.joins`): private ⋈ private on the privacy unit (m' = m1·m2), private ⋈ public
  on equality keys (m' = m·M, M the public key columns' least multiplicity), chains of both;
- derived values (:mod:`.expressions`): bounds by interval arithmetic (Moore 1966);
- subqueries in FROM (:mod:`.relation`): row-level, and per-unit aggregation with its
  result's bounds derived (SUM of m values in [lo, hi]: [m·min(lo, 0), m·max(hi, 0)]).

The relation's SQL is a function of the query and the declaration alone.

>>> from infodp.curator.declaration.source import load_schema
>>> s = load_schema({"privacy_unit": "pid", "table": "clinic", "tables": {
...     "people": {"columns": {"pid": {"type": "text"}, "age": {"type": "int", "bounds": [0, 120]}}},
...     "visits": {"max_rows_per_unit": 20, "columns": {
...         "pid": {"type": "text"}, "cost": {"type": "float", "bounds": [0, 5000]}}}}})
>>> r = resolve("SELECT SUM(cost) FROM people JOIN visits USING (pid) WHERE age > 30", s)
>>> r.sql
'SELECT SUM("cost") AS "SUM(cost)" FROM "clinic"'
>>> (r.schema.max_rows_per_unit, r.schema.column("cost").bounds)
(20, (0.0, 5000.0))
"""  # noqa: E501

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot import exp

from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.relations.tables import check_subqueries, from_items, tables_read
from infodp.curator.sql.parse import parse_query, parse_statement
from infodp.errors import ParameterError

if TYPE_CHECKING:
    from infodp.curator.relations.joins import Scope
    from infodp.curator.relations.sources import Source

__all__ = ["Resolved", "check_work", "resolve", "tables_read"]


@dataclass(frozen=True, slots=True)
class Resolved:
    """A query rewritten to read ONE relation named ``schema.table``, and that relation."""

    sql: str
    #: The relation's declaration; ``source_sql`` set (None: the stored table itself).
    schema: DatasetSchema
    #: True: units may exceed ``schema.max_rows_per_unit`` in the relation (the compiler must
    #: apply its per-unit row window). Every relation built here holds its bound by
    #: construction, so it is False.
    row_cut: bool = False


@functools.lru_cache(maxsize=512)
def resolve(sql: str, schema: DatasetSchema) -> Resolved:
    """``sql`` (the inner aggregate query) over ``schema`` (a population, or a single table)
    as a query over one relation; a plain single-table query is returned unchanged."""
    if not isinstance(sql, str):
        raise ParameterError("sql", sql, "a non-empty SQL SELECT statement")
    stmt = parse_statement(sql)
    check_subqueries(stmt)
    assert isinstance(stmt, exp.Select)
    plain: ParameterError | None = None
    if not schema.is_population:
        try:
            parse_query(sql, schema)
            return Resolved(sql, schema)
        except ParameterError as err:
            if not _derives(stmt):
                raise
            plain = err
    del plain
    return _relation(stmt, schema)


def check_work(scope: Scope, schema: DatasetSchema) -> None:
    """Refuse, before anything runs or is charged, a query one of whose relations may hold
    more rows of one individual than the owner's limit (``max_derived_rows_per_unit``).

    The bound is derived from the declaration alone (m, m1·m2, m·M), so it is the same on
    every pair of neighbouring datasets: it caps the work, and so the time, one person's rows
    can cause (Haeberlen, Pierce & Narayan 2011, §5: a query's work must not depend on one
    individual without bound).
    """
    limit = schema.work_limit
    if scope.work > limit:
        raise ParameterError(
            f"refused: one individual may have up to {scope.work} rows in this query's "
            f"relations ({scope.how}), over the dataset's limit of {limit} rows "
            "(max_derived_rows_per_unit). Join on keys fewer rows share, keep fewer rows per "
            "individual (QUALIFY ROW_NUMBER() OVER (PARTITION BY <unit>) <= T in a subquery), "
            "or ask the data owner to declare a larger max_derived_rows_per_unit."
        )


def _derives(stmt: exp.Select) -> bool:
    """The query joins, reads a subquery or computes a value the plain parser does not."""
    if stmt.args.get("joins") or any(isinstance(n, exp.Subquery) for n in from_items(stmt)):
        return True
    # Arithmetic and functions of values; a comparison or AND/OR is not a derived value, so
    # a filter the plain parser refuses (a literal out of its column's range, say) stays
    # refused rather than being read a second way.
    derived = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Neg, exp.Case, exp.Cast, exp.Func)
    return any(
        isinstance(n, derived)
        and not isinstance(n, (exp.AggFunc, exp.Paren, exp.Connector, exp.Predicate))
        and n.find(exp.Column) is not None  # -(-5) is a literal, not a derived value
        for n in stmt.walk()
    )


def _relation(stmt: exp.Select, schema: DatasetSchema) -> Resolved:
    # Imported here: a plain single-table query (every one-query process's usual case) is
    # answered without reading joins, subqueries or derived values.
    from infodp.curator.relations.joins import scope_of
    from infodp.curator.relations.query import outer_query
    from infodp.curator.relations.relation import subquery_source
    from infodp.curator.relations.sources import table_source

    def read(node: exp.Expr) -> Source:
        if isinstance(node, exp.Subquery):
            return subquery_source(node, read)
        if not isinstance(node, exp.Table):
            raise ParameterError(f"refused SQL construct: {node.sql()[:60]!r} in FROM.")
        return table_source(node, schema)

    scope = scope_of(stmt, read)
    check_work(scope, schema)
    query, relation = outer_query(stmt, scope, schema.table)
    rows = relation.rows
    groups = relation.groups if relation.groups < rows else None
    if not schema.is_population and schema.max_groups_per_unit is not None:
        groups = min(schema.max_groups_per_unit, rows)
    # A row-level relation of the single table has its rows: its declared row count holds.
    same_rows = not schema.is_population and len(scope.sources) == 1 and scope.sources[0].table
    virtual = DatasetSchema(
        schema.table,
        schema.privacy_unit,
        relation.columns,
        max_rows_per_unit=rows,
        max_groups_per_unit=groups,
        public_rows=schema.public_rows if same_rows else None,
        public_max_rows=schema.public_max_rows if same_rows else None,
        source_sql=str(relation.select.sql(normalize_functions=False)),
    )
    return Resolved(str(query.sql()), virtual)
