"""Parse the safe SQL subset with a real SQL parser (sqlglot) into an immutable plan.

Accepted: one ``SELECT`` over one registered table with ``COUNT(*)``, ``COUNT(col)``,
``COUNT(DISTINCT col)``, ``SUM``, ``AVG``, ``VARIANCE``/``VAR_SAMP``/``VAR_POP``, ``STDDEV``/``STDDEV_SAMP``/
``STDDEV_POP``, ``MEDIAN``, ``QUANTILE(col, q)`` (also ``QUANTILE_CONT``/``QUANTILE_DISC``/
``APPROX_QUANTILE``/``PERCENTILE_CONT``/``PERCENTILE_DISC``), ``MIN`` and ``MAX`` (each
recognised by its rule in :mod:`infodp.curator.rules`), a ``FILTER (WHERE ...)`` after any of
them but the quantiles; a ``WHERE`` filter of comparisons, ``IN``, ``BETWEEN``, ``IS [NOT] NULL``
between declared columns and literals joined by ``AND``/``OR``/``NOT``; ``GROUP BY`` declared
columns, ``FLOOR(col / w) [* m]`` bins and ``CASE WHEN`` bands of literals
(:mod:`infodp.curator.sql.derived`), or SELECT aliases of them. Everything else is refused with a :class:`~infodp.errors.ParameterError` naming the
construct: joins, subqueries, CTEs, set operations, window functions, raw column selection,
``SELECT DISTINCT``, ``DISTINCT`` in any aggregate but COUNT, multiple statements, non-SELECT
statements (``HAVING``, ``ORDER BY``, ``LIMIT`` are post-processing, :mod:`infodp.curator.sql.post`).

Aggregates over numeric columns need declared bounds; the refusal names the missing
declaration (bounds are never computed from the private data).

>>> from infodp.curator.declaration.source import load_schema
>>> s = load_schema({"table": "people", "privacy_unit": "row", "columns": {
...     "age": {"type": "int", "bounds": [0, 120]},
...     "region": {"type": "category", "categories": ["north", "south"]}}})
>>> p = parse_query("SELECT region, COUNT(*) AS n, AVG(age) FROM people GROUP BY region", s)
>>> [o.name for o in p.outputs], p.group_by[0].categories
(['region', 'n', 'AVG(age)'], ('north', 'south'))
>>> parse_query("SELECT age FROM people", s)
Traceback (most recent call last):
...
infodp.errors.ParameterError: refused SQL construct: raw column selection (column 'age' is neither aggregated nor in GROUP BY); only aggregates are released (aggregate it, as in AVG(age), or release its distribution, as in SELECT age, COUNT(*) FROM t GROUP BY age).
"""  # noqa: E501

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

import sqlglot
from sqlglot import exp

from infodp._exact import parse_exact
from infodp.curator.declaration.schema import BOOL_KEYS, ColumnSpec, DatasetSchema
from infodp.curator.plan.nodes import Aggregate, GroupKey, Output, Predicate, QueryPlan
from infodp.curator.rules import RULES, Rule, allowed_names
from infodp.curator.rules.filtered import parse_filtered
from infodp.curator.sql.derived import (
    derived_items,
    derived_key,
    renamed_column,
    select_alias,
    select_aliases,
)
from infodp.curator.sql.dialect import boolean_on_text, needs_rewrite, rewrite, untop, with_top
from infodp.curator.sql.limits import (
    MAX_CONDITIONS,
    MAX_EXPRESSION_DEPTH,
    MAX_IN_LIST,
    MAX_PARSED_CHARS,
    MAX_SQL_CHARS,
    chained,
    check_nesting,
    check_tree,
    too_deep,
)
from infodp.errors import ParameterError

__all__ = [
    "COMPARISONS",
    "INT_GROUP_MAX_KEYS",
    "MAX_EXPRESSION_DEPTH",
    "MAX_IN_LIST",
    "MAX_SQL_CHARS",
    "MAX_WHERE_TERMS",
    "parse_query",
    "parse_statement",
    "referenced_table",
    "refuse",
]

#: An int column with bounds spanning at most this many values is grouped as declared keys.
INT_GROUP_MAX_KEYS = 10_000
#: The caps on a statement's size, kept with the others in :mod:`infodp.curator.sql.limits`
#: (MAX_WHERE_TERMS is the former name of MAX_CONDITIONS).
MAX_WHERE_TERMS = MAX_CONDITIONS

#: The range of the BIGINT an int column is stored as (DuckDB), and of a finite DOUBLE.
_INT64 = (-(2**63), 2**63 - 1)
_DOUBLE_MAX = Fraction(sys.float_info.max)

#: sqlglot's comparison nodes and the operator each denotes.
COMPARISONS: dict[type[exp.Expr], str] = {
    exp.EQ: "=",
    exp.NEQ: "<>",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
}
_FLIP = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def refuse(construct: str, detail: str = "") -> ParameterError:
    """A refusal of an SQL construct (every step that reads the SQL words its own so).

    >>> str(refuse("WITH", "write the subquery in FROM"))
    'refused SQL construct: WITH (write the subquery in FROM).'
    """
    tail = f" ({detail})" if detail else ""
    return ParameterError(f"refused SQL construct: {construct}{tail}.")


@functools.lru_cache(maxsize=512)
def _statements_cached(sql: str) -> tuple[exp.Expr, ...]:
    # sqlglot's pure-Python tokenizer costs milliseconds; repeated queries reuse the tree
    # (never mutated here).
    return tuple(_statements(sql))


def parse_statement(sql: str) -> exp.Expr:
    """The one statement of ``sql`` as sqlglot parses it, after the size, nesting and
    single-statement checks (:mod:`infodp.curator.sql.limits`; the text may be one the curator
    rewrote, so up to MAX_PARSED_CHARS: the analyst's own is held to MAX_SQL_CHARS where it
    enters, :func:`~infodp.curator.sql.limits.check_sql_text`); remembered per text (callers
    must not mutate it).

    >>> parse_statement("SELECT COUNT(*) FROM t").key
    'select'
    """
    return _statements_cached(sql)[0]


def _statements(sql: str) -> list[exp.Expr]:
    if not isinstance(sql, str) or not sql.strip():
        raise ParameterError("sql", sql, "a non-empty SQL SELECT statement")
    if len(sql) > MAX_PARSED_CHARS:
        raise ParameterError("sql", f"<{len(sql)} characters>", f"at most {MAX_SQL_CHARS}")
    check_nesting(sql)
    text, top = untop(sql)  # T-SQL's SELECT TOP n: LIMIT n (infodp.curator.sql.dialect)
    try:
        # The generic dialect: loading sqlglot's DuckDB dialect is a cost of every process
        # (benchmarks/cli_startup.py), and the accepted subset parses the same.
        parsed = sqlglot.parse(text)
    except sqlglot.errors.ParseError as err:
        first = str(err).splitlines()[0][:200]
        raise ParameterError(f"sql could not be parsed: {first}") from None
    except RecursionError:
        # Nesting without parentheses (NOT NOT ..., - - ..., CASE in CASE) that the parser
        # recursed into: the same refusal as nested parentheses.
        raise too_deep() from None
    except (sqlglot.errors.SqlglotError, ValueError):
        raise ParameterError("sql could not be parsed.") from None
    stmts = [s for s in parsed if s is not None]
    if len(stmts) != 1:
        raise refuse("multiple statements", f"{len(stmts)} found; send one SELECT")
    check_tree(stmts[0])
    if top is None and not needs_rewrite(text):
        return stmts
    # Spellings other engines use, read as the accepted subset (syntax only; checked again).
    stmt = with_top(rewrite(stmts[0]), top)
    check_tree(stmt)
    return [stmt]


def referenced_table(sql: str) -> str:
    """The single table a query reads (refusing joins, subqueries and multiple statements).

    >>> referenced_table("SELECT COUNT(*) FROM people WHERE age > 3")
    'people'
    """
    if not isinstance(sql, str):
        raise ParameterError("sql", sql, "a non-empty SQL SELECT statement")
    select = _select(_statements_cached(sql)[0])
    return _table(select)[0]


def _select(stmt: exp.Expr) -> exp.Select:
    if isinstance(stmt, (exp.Union, exp.Intersect, exp.Except)):
        raise refuse(f"set operation {stmt.key.upper()}")
    if not isinstance(stmt, exp.Select):
        raise refuse(f"{stmt.key.upper()} statement", "only SELECT is allowed")
    if stmt.args.get("with") or stmt.args.get("with_"):
        raise refuse("WITH (common table expression)")
    for node in stmt.walk():
        if node is stmt:
            continue
        if isinstance(node, (exp.Select, exp.Subquery)):
            raise refuse("subquery")
        if isinstance(node, (exp.Union, exp.Intersect, exp.Except)):
            raise refuse(f"set operation {node.key.upper()}")
        if isinstance(node, exp.Window):
            raise refuse("window function (OVER)")
        if isinstance(node, exp.Join):
            raise refuse("JOIN", "queries read one registered table")
    for key, name in (
        ("joins", "JOIN"),
        ("having", "HAVING"),
        ("order", "ORDER BY"),
        ("limit", "LIMIT"),
        ("offset", "OFFSET"),
        ("distinct", "DISTINCT"),
        ("qualify", "QUALIFY"),
        ("laterals", "LATERAL"),
        ("pivots", "PIVOT"),
    ):
        if stmt.args.get(key):
            raise refuse(name)
    for _node in stmt.find_all(exp.TableSample):
        raise refuse("TABLESAMPLE / USING SAMPLE", "sampling is not part of the released query")
    _only_args(stmt, {"expressions", "from", "from_", "where", "group"}, "SELECT")
    group = stmt.args.get("group")
    if group is not None:
        if group.args.get("all"):
            raise refuse("GROUP BY ALL", "name the GROUP BY columns")
        _only_args(group, {"expressions"}, "GROUP BY")
    return stmt


def _only_args(node: exp.Expr, allowed: set[str], where: str) -> None:
    """Refuse any clause of ``node`` the safe subset does not name (never ignore one)."""
    for key, value in node.args.items():
        if key in allowed or value is None or value is False or value == [] or value == "":
            continue
        name = key.rstrip("_").upper()
        raise refuse(f"{name} in {where}", "not part of the safe SQL subset")


def _table(select: exp.Select) -> tuple[str, set[str]]:
    src = select.args.get("from") or select.args.get("from_")
    if src is None:
        raise refuse("SELECT without FROM", "name the registered table")
    tables = list(src.find_all(exp.Table))
    if len(tables) != 1 or not isinstance(src.this, exp.Table):
        raise refuse("FROM clause with more than one table or a table function")
    table = tables[0]
    if table.args.get("sample"):
        raise refuse("TABLESAMPLE / USING SAMPLE", "sampling is not part of the released query")
    db = table.args.get("db")
    if table.args.get("catalog") or (db is not None and db.name.lower() != table.name.lower()):
        raise refuse("qualified table name", f"use the registered name {table.name!r}")
    names = {table.name.lower()}
    if table.alias:
        names.add(table.alias.lower())
    return table.name, names


def _column(node: exp.Expr, schema: DatasetSchema, qualifiers: set[str]) -> ColumnSpec:
    if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
        raise refuse(f"expression {node.sql(dialect='duckdb')!r}", "only plain column names")
    if node.table and node.table.lower() not in qualifiers:
        raise ParameterError(f"unknown table qualifier {node.table!r} in column {node.sql()!r}.")
    return schema.column(node.name)


def _literal(node: exp.Expr, col: ColumnSpec) -> float | int | str:
    if isinstance(node, exp.Paren):
        return _literal(node.this, col)
    if isinstance(node, exp.Neg):
        inner = _literal(node.this, col)  # -(5), -(-5): negate whatever the inside is
        if isinstance(inner, str):
            return inner[1:] if inner.startswith("-") else "-" + inner
        if isinstance(inner, int) and not _INT64[0] <= -inner <= _INT64[1]:
            raise ParameterError(
                f"literal compared with {col.name}", -inner, "an integer in [-2^63, 2^63 - 1]"
            )
        return -inner
    if col.type == "bool":
        return _bool_literal(node, col)
    if isinstance(node, exp.Boolean):  # TRUE is 1, FALSE 0 on a number (as in DuckDB)
        if col.is_numeric:
            return 1 if node.this else 0
        raise boolean_on_text(bool(node.this), str(node.parent.sql()) if node.parent else "")
    if not isinstance(node, exp.Literal):
        raise refuse(
            f"expression {node.sql(dialect='duckdb')!r} in WHERE",
            "compare a column with a literal",
        )
    if col.is_numeric:
        if node.is_string:
            raise ParameterError(
                f"column {col.name} is numeric; got the string {node.this[:40]!r}."
            )
        return _numeric_literal(node.this, col)
    return str(node.this)


def _bool_literal(node: exp.Expr, col: ColumnSpec) -> bool:
    """TRUE, FALSE, 1 or 0 compared with bool column ``col``."""
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal) and not node.is_string and node.this in ("0", "1"):
        return str(node.this) == "1"
    raise ParameterError(
        f"literal compared with {col.name}",
        node.sql(dialect="duckdb")[:40],
        f"TRUE or FALSE (bool column {col.name})",
    )


def _numeric_literal(text: str, col: ColumnSpec) -> float | int:
    """A number compared with a numeric column, range-checked against its stored type.

    DuckDB casts a literal outside the column's type lazily, when a row reaches the comparison:
    an error that would then depend on the data. So every literal is checked here: an int
    column (BIGINT) takes integers in [-2^63, 2^63 - 1] and finite decimals; a float column
    (DOUBLE) any number whose magnitude is at most the largest double.
    """
    frac = parse_exact(f"literal compared with {col.name}", text)
    if col.type == "int" and frac.denominator == 1:
        if not _INT64[0] <= frac.numerator <= _INT64[1]:
            raise ParameterError(
                f"literal compared with {col.name}",
                text[:40],
                f"a finite number in the range of int column {col.name} "
                "(integers in [-2^63, 2^63 - 1])",
            )
        return frac.numerator
    if abs(frac) > _DOUBLE_MAX:
        raise ParameterError(
            f"literal compared with {col.name}",
            text[:40],
            f"a finite number of magnitude at most {sys.float_info.max!r}",
        )
    return float(frac)


def _predicate(node: exp.Expr, schema: DatasetSchema, q: set[str]) -> Predicate:
    if isinstance(node, exp.Paren):
        return _predicate(node.this, schema, q)
    if isinstance(node, (exp.And, exp.Or)):
        # A chain a AND b AND c is one node of its terms (read without recursing per term).
        connector = "and" if isinstance(node, exp.And) else "or"
        return Predicate(connector, args=tuple(_predicate(t, schema, q) for t in chained(node)))
    if isinstance(node, exp.Not):
        inner = node.this
        if isinstance(inner, exp.Is):
            p = _predicate(inner, schema, q)
            return Predicate("is not null", p.column)
        return Predicate("not", args=(_predicate(inner, schema, q),))
    op = COMPARISONS.get(type(node))
    if op is not None:
        left, right = node.this, node.expression
        if not isinstance(left, exp.Column) and isinstance(right, exp.Column):
            left, right, op = right, left, _FLIP[op]
        col = _column(left, schema, q)
        return Predicate(op, col.name, (_literal(right, col),))
    if isinstance(node, exp.In):
        if node.args.get("query") or node.args.get("unnest"):
            raise refuse("subquery")
        col = _column(node.this, schema, q)
        return Predicate("in", col.name, tuple(_literal(v, col) for v in node.expressions))
    if isinstance(node, exp.Between):
        col = _column(node.this, schema, q)
        return Predicate(
            "between", col.name, (_literal(node.args["low"], col), _literal(node.args["high"], col))
        )
    if isinstance(node, exp.Is):
        if not isinstance(node.expression, exp.Null):
            raise refuse(f"IS {node.expression.sql()}", "only IS [NOT] NULL")
        col = _column(node.this, schema, q)
        return Predicate("is null", col.name)
    if isinstance(node, exp.Column) and schema.column(node.name).type == "bool":
        return Predicate("=", _column(node, schema, q).name, (True,))  # WHERE flag
    raise refuse(f"{node.key.upper()} in WHERE ({node.sql(dialect='duckdb')!r})")


def _needs_bounds(func: str, col: ColumnSpec, table: str) -> None:
    if not col.is_numeric:
        raise ParameterError(
            f"{func}({col.name}) needs a numeric column; {col.name} is declared as {col.type}."
        )
    if col.bounds is None:
        raise ParameterError(
            f"{func}({col.name}) needs declared bounds: add 'bounds: [low, high]' to column "
            f"{col.name} in the schema of table {table} (bounds are never computed from the "
            "private data)."
        )


@dataclass(frozen=True, slots=True)
class _Parsing:
    """What an aggregate's rule asks while it recognises a call (rules.base.Parsing)."""

    schema: DatasetSchema
    qualifiers: set[str]
    grouped: bool = False

    @property
    def table(self) -> str:
        return self.schema.table

    def column(self, node: exp.Expr) -> ColumnSpec:
        return _column(node, self.schema, self.qualifiers)

    def bounded(self, func: str, node: exp.Expr) -> ColumnSpec:
        col = self.column(node)
        _needs_bounds(func, col, self.schema.table)
        return col

    def refuse(self, construct: str, detail: str = "") -> ParameterError:
        return refuse(construct, detail)

    def predicate(self, node: exp.Expr) -> Predicate:
        return _predicate(node, self.schema, self.qualifiers)

    def unit_column(self, node: exp.Expr) -> str | None:
        unit = self.schema.privacy_unit
        if self.schema.unit_is_row or not isinstance(node, exp.Column):
            return None
        if node.name.lower() != unit.lower() or isinstance(node.this, exp.Star):
            return None
        if node.table and node.table.lower() not in self.qualifiers:
            return None  # refused with the qualifier named by column()
        return unit


def _aggregate(node: exp.Expr, parsing: _Parsing) -> tuple[Aggregate, str] | None:
    """The aggregate ``node`` denotes and its unaliased output name, or None when it is not an
    aggregate call (each rule of :mod:`infodp.curator.rules` recognises its own; a FILTER
    clause, :mod:`infodp.curator.rules.filtered`, the aggregate it follows)."""
    filtered = parse_filtered(node, parsing, lambda inner: _called(inner, parsing))
    if filtered is not None:
        return filtered
    found = _called(node, parsing)
    return None if found is None else found[:2]


def _called(node: exp.Expr, parsing: _Parsing) -> tuple[Aggregate, str, Rule] | None:
    """The aggregate call ``node`` denotes, its output name and its rule."""
    for rule in RULES:
        agg = rule.parse(node, parsing)
        if agg is not None:
            return agg, rule.output_name(node), rule
    if isinstance(node, exp.AggFunc):
        raise refuse(f"aggregate function {node.key.upper()}", f"allowed: {allowed_names()}")
    return None


def parse_query(sql: str, schemas: DatasetSchema | Mapping[str, DatasetSchema]) -> QueryPlan:
    """Parse ``sql`` against the declared schema(s) into an immutable :class:`QueryPlan`.

    ``schemas`` is one schema or a mapping from registered table name to schema.

    >>> from infodp.curator.declaration.source import load_schema
    >>> s = load_schema({"table": "t", "privacy_unit": "row",
    ...                  "columns": {"x": {"type": "float"}}})
    >>> parse_query("SELECT SUM(x) FROM t", s)
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: SUM(x) needs declared bounds: add 'bounds: [low, high]' to column x in the schema of table t (bounds are never computed from the private data).
    """  # noqa: E501
    if not isinstance(sql, str):
        raise ParameterError("sql", sql, "a non-empty SQL SELECT statement")
    if isinstance(schemas, DatasetSchema):
        return _parse_cached(sql, schemas)
    return _parse(sql, schemas)


@functools.lru_cache(maxsize=512)
def _parse_cached(sql: str, schema: DatasetSchema) -> QueryPlan:
    # Plans and schemas are immutable, so a repeated query reuses its plan.
    return _parse(sql, schema)


def _parse(sql: str, schemas: DatasetSchema | Mapping[str, DatasetSchema]) -> QueryPlan:
    select = _select(_statements_cached(sql)[0])
    table, qualifiers = _table(select)
    schema = _schema_of(table, schemas)
    groups = _groups(select, _Parsing(schema, qualifiers))
    parsing = _Parsing(schema, qualifiers, grouped=bool(groups))
    outputs = _outputs(select, parsing, groups)
    where_node = select.args.get("where")
    where = None if where_node is None else _predicate(where_node.this, schema, qualifiers)
    return QueryPlan(schema.table, sql, outputs, where, groups)


def _schema_of(table: str, schemas: DatasetSchema | Mapping[str, DatasetSchema]) -> DatasetSchema:
    """The declared schema of the table a query reads (an unknown table is refused)."""
    if isinstance(schemas, DatasetSchema):
        if schemas.table.lower() != table.lower():
            raise ParameterError(
                f"unknown table {table!r}; the registered table is {schemas.table!r}."
            )
        return schemas
    lookup = {k.lower(): v for k, v in schemas.items()}
    if table.lower() not in lookup:
        known = ", ".join(sorted(schemas)) or "none"
        raise ParameterError(f"unknown table {table!r}; registered tables: {known}.")
    return lookup[table.lower()]


def _groups(select: exp.Select, parsing: _Parsing) -> tuple[GroupKey, ...]:
    """The GROUP BY keys (never the privacy unit, never repeated)."""
    schema = parsing.schema
    groups: list[GroupKey] = []
    group_node = select.args.get("group")
    aliases = select_aliases(select, schema)
    for g in [] if group_node is None else group_node.expressions:
        if (
            isinstance(g, exp.Column)
            and not schema.unit_is_row
            and g.name.lower() == schema.privacy_unit.lower()
        ):
            raise refuse("GROUP BY the privacy unit", "it would release per-individual values")
        groups.append(_group(g, select, parsing, aliases))
    if len({g.column for g in groups}) != len(groups):
        raise refuse("repeated GROUP BY column")
    return tuple(groups)


def _group(
    g: exp.Expr, select: exp.Select, parsing: _Parsing, aliases: dict[str, tuple[str, exp.Expr]]
) -> GroupKey:
    """A declared column's key, or a derived key named by its SELECT alias or its text."""
    if isinstance(g, exp.Column) and g.name.lower() in aliases:
        return derived_key(aliases[g.name.lower()][1], parsing, aliases[g.name.lower()][0])
    if isinstance(g, exp.Column):
        renamed = None if g.table else renamed_column(select, g.name, parsing.schema)
        return _group_key(parsing.column(g if renamed is None else renamed))
    return derived_key(g, parsing, select_alias(select, g) or g.sql())


def _outputs(
    select: exp.Select, parsing: _Parsing, groups: tuple[GroupKey, ...]
) -> tuple[Output, ...]:
    """The SELECT items: GROUP BY columns and aggregates, with distinct names."""
    grouped = {g.column.lower() for g in groups if g.derived is None}
    derived = derived_items(select, groups)
    outputs = tuple(
        _derived_output(item, derived) or _output(item, parsing, grouped)
        for item in select.expressions
    )
    if not groups and not any(o.aggregate is not None for o in outputs):
        # With GROUP BY and no aggregate the key set is released (answer.py: declared keys
        # for free, else partition selection); without either, nothing would be measured.
        raise refuse("SELECT without an aggregate", "only aggregates are released")
    names = [o.name for o in outputs]
    if len(set(names)) != len(names):
        raise ParameterError("SELECT items must have distinct names; use AS to rename.")
    return outputs


def _derived_output(item: exp.Expr, derived: dict[str, str]) -> Output | None:
    """The SELECT item of a derived key (None for any other item)."""
    node = item.this if isinstance(item, exp.Alias) else item
    if isinstance(node, exp.Column) or node.sql() not in derived:
        return None
    alias = item.alias if isinstance(item, exp.Alias) else None
    return Output(alias or node.sql(), group_column=derived[node.sql()])


def _output(item: exp.Expr, parsing: _Parsing, grouped: set[str]) -> Output:
    alias = item.alias if isinstance(item, exp.Alias) else None
    node = item.this if isinstance(item, exp.Alias) else item
    if isinstance(node, exp.Star):
        raise refuse(
            "raw column selection (*)",
            "only aggregates are released: count rows (SELECT COUNT(*) FROM t) or a column's "
            "values (SELECT col, COUNT(*) FROM t GROUP BY col)",
        )
    if isinstance(node, exp.Column):
        col = parsing.column(node)
        if col.name.lower() not in grouped:
            # (an average of a text or category column is no aggregate to suggest)
            how = f"AVG({col.name})" if col.is_numeric else f"COUNT(DISTINCT {col.name})"
            raise refuse(
                f"raw column selection (column {col.name!r} is neither aggregated nor in "
                "GROUP BY); only aggregates are released",
                f"aggregate it, as in {how}, or release its distribution, as in "
                f"SELECT {col.name}, COUNT(*) FROM t GROUP BY {col.name}",
            )
        return Output(alias or col.name, group_column=col.name)
    found = _aggregate(node, parsing)
    if found is None:
        raise refuse(
            f"expression {node.sql(dialect='duckdb')!r} in SELECT",
            "select aggregates and GROUP BY columns only",
        )
    return Output(alias or found[1], aggregate=found[0])


def _group_key(col: ColumnSpec) -> GroupKey:
    if col.type == "category":
        return GroupKey(col.name, col.categories)
    if col.type == "bool":  # a declared category of two keys
        return GroupKey(col.name, BOOL_KEYS)
    if col.type == "int" and col.bounds is not None:
        low, high = int(col.bounds[0]), int(col.bounds[1])
        if high - low + 1 <= INT_GROUP_MAX_KEYS:
            return GroupKey(col.name, tuple(str(v) for v in range(low, high + 1)))
    if col.type == "float":
        raise refuse(
            f"GROUP BY float column {col.name}",
            "declare it as a category or an int column with bounds",
        )
    return GroupKey(col.name, None)
