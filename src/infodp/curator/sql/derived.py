"""Derived GROUP BY keys with finite domains derived from the declaration alone.

Two forms, as a statistician writes them:

- **bins** ``FLOOR(col / w)`` or ``FLOOR(col / w) * m`` (also ``m * FLOOR(col / w)``) of a
  bounded int or float column, an integer width ``w`` ≥ 1 and an integer ``m``: the key is
  read on the clamped bounded copy (a value outside the bounds falls in the edge bin), and
  its domain is every bin from ``FLOOR(low / w)`` to ``FLOOR(high / w)`` of the grid's range
  (interval arithmetic: FLOOR is monotone, and a bin of width ≥ 1 holds a value of an int
  range between the edge bins; on the coarser grid of bounds beyond 2^24 a bin may hold no
  grid value, and is released as a declared cell all the same);
- **bands** ``CASE WHEN c1 THEN l1 ... [ELSE d] END``: conditions in the WHERE grammar (read
  as WHERE reads them), literal results; the domain is the literals as text. Without an ELSE
  the rows no branch takes have a NULL key and are left out, as a NULL key always is.

Either way the released cells are declared keys (no partition selection) and a unit's rows
still land in at most ``max_groups_per_unit`` groups, so the sensitivity of every aggregate
is unchanged: the group limit and the per-unit windows rank the key's value, whatever
expression computed it. Domains above :data:`~infodp.curator.price.cost.MAX_CELLS` keys are refused.

>>> from infodp.curator.declaration.schema import ColumnSpec, DatasetSchema
>>> bins_domain(ColumnSpec("age", "int", bounds=(0.0, 34.0)), 10, 10)
('0', '10', '20', '30')
"""

from __future__ import annotations

import math
from fractions import Fraction

from sqlglot import exp

from infodp._exact import parse_exact
from infodp.curator.declaration.schema import ColumnSpec, DatasetSchema
from infodp.curator.plan.grid import column_grid
from infodp.curator.plan.nodes import Bands, Bins, GroupKey
from infodp.curator.price.cost import MAX_CELLS
from infodp.curator.rules.base import Parsing
from infodp.errors import ParameterError

__all__ = [
    "bins_domain",
    "derived_items",
    "derived_key",
    "select_alias",
    "select_aliases",
]

_INT64 = (-(2**63), 2**63 - 1)


def derived_key(node: exp.Expr, parsing: Parsing, name: str) -> GroupKey:
    """The GROUP BY key named ``name`` that expression ``node`` derives (refused unless it is
    bins of a bounded column or a CASE of literals; nothing is spent on a refusal).

    >>> import sqlglot
    >>> from infodp.curator.declaration.source import load_schema
    >>> from infodp.curator.sql.parse import _Parsing
    >>> s = load_schema({"table": "t", "privacy_unit": "row",
    ...                  "columns": {"a": {"type": "int", "bounds": [0, 9]}}})
    >>> node = sqlglot.parse_one("CASE WHEN a < 5 THEN 'low' ELSE 'high' END")
    >>> derived_key(node, _Parsing(s, {"t"}), "band").categories
    ('low', 'high')
    """
    node = _unparen(node)
    if isinstance(node, exp.Case):
        bands = _bands(node, parsing)
        labels = [label for _, label in bands.branches]
        domain = tuple(dict.fromkeys([*labels, *([bands.default] if bands.default else [])]))
        return GroupKey(name, domain, bands)
    bins = _bins(node, parsing)
    col = parsing.column(exp.column(bins.column))
    return GroupKey(name, bins_domain(col, bins.width, bins.scale), bins)


def _unparen(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _bins(node: exp.Expr, parsing: Parsing) -> Bins:
    scale = 1
    if isinstance(node, exp.Mul):
        floor, factor = node.this, node.expression
        if isinstance(factor, exp.Floor):
            floor, factor = factor, floor
        scale = _integer(factor, parsing, "bin multiplier")
        node = floor
    node = _unparen(node)
    if not isinstance(node, exp.Floor) or node.args.get("decimals") or node.args.get("to"):
        raise _unsupported(node, parsing)
    div = _unparen(node.this)
    if not isinstance(div, exp.Div):
        raise _unsupported(node, parsing)
    width = _integer(div.expression, parsing, "bin width")
    if width < 1:
        raise ParameterError("bin width", width, "an integer ≥ 1")
    return Bins(_binned(div.this, parsing).name, width, scale)


def _binned(node: exp.Expr, parsing: Parsing) -> ColumnSpec:
    """The column bins are taken of: bounded, numeric, never the privacy unit."""
    if parsing.unit_column(node) is not None:
        raise parsing.refuse("GROUP BY bins of the privacy unit", "it releases per-unit values")
    col = parsing.column(node)
    if not col.is_numeric or col.bounds is None:
        raise parsing.refuse(
            f"derived GROUP BY key over column {col.name}",
            "bins need an int or float column with declared bounds",
        )
    return col


def _unsupported(node: exp.Expr, parsing: Parsing) -> ParameterError:
    return parsing.refuse(
        f"GROUP BY expression {node.sql(dialect='duckdb')[:80]!r}",
        "allowed: declared columns, FLOOR(col / w) [* m] bins of a bounded column, "
        "CASE WHEN ... THEN literal ... END bands, or a SELECT alias of one",
    )


def _integer(node: exp.Expr, parsing: Parsing, what: str) -> int:
    negative = isinstance(node, exp.Neg)
    inner = node.this if negative else node
    if not isinstance(inner, exp.Literal) or inner.is_string:
        raise parsing.refuse(f"{what} {node.sql()[:40]!r}", "an integer literal")
    value = parse_exact(what, inner.this)
    if value.denominator != 1:
        raise ParameterError(what, inner.this[:40], "an integer")
    return -value.numerator if negative else value.numerator


def bins_domain(col: ColumnSpec, width: int, scale: int) -> tuple[str, ...]:
    """Every key ``FLOOR(v / width) * scale`` of a value ``v`` of the column's bounded copy,
    as text, in increasing order of the bin (from the declared bounds alone).

    >>> from infodp.curator.declaration.schema import ColumnSpec, DatasetSchema
    >>> bins_domain(ColumnSpec("x", "float", bounds=(-1.5, 2.0)), 1, 1)
    ('-2', '-1', '0', '1', '2')
    """
    grid = column_grid(col)
    step = Fraction(grid.step)
    first = math.floor(grid.lo * step / width)
    last = math.floor(grid.hi * step / width)
    if last - first + 1 > MAX_CELLS:
        raise ParameterError(
            f"GROUP BY FLOOR({col.name} / {width})", last - first + 1, f"at most {MAX_CELLS} bins"
        )
    if not all(_INT64[0] <= k * scale <= _INT64[1] for k in (first, last)):
        raise ParameterError("bin multiplier", scale, "keys within the 64-bit integer range")
    return tuple(dict.fromkeys(str(k * scale) for k in range(first, last + 1)))


def _bands(node: exp.Case, parsing: Parsing) -> Bands:
    if node.this is not None:
        raise parsing.refuse("CASE <expr> WHEN", "write CASE WHEN <condition> THEN ...")
    branches = tuple(
        (parsing.predicate(branch.this), _label(branch.args["true"], parsing))
        for branch in node.args.get("ifs") or []
    )
    default = node.args.get("default")
    if default is None or isinstance(default, exp.Null):
        return Bands(branches)
    return Bands(branches, _label(default, parsing))


def _label(node: exp.Expr, parsing: Parsing) -> str:
    """A CASE result: a string or number literal, released as its text."""
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return "-" + str(node.this.this)
    if not isinstance(node, exp.Literal):
        raise parsing.refuse(
            f"CASE result {node.sql(dialect='duckdb')[:80]!r} in GROUP BY",
            "each THEN and ELSE of a GROUP BY key must be a literal (its domain is declared)",
        )
    return str(node.this)


def select_aliases(select: exp.Select, schema: DatasetSchema) -> dict[str, tuple[str, exp.Expr]]:
    """SELECT aliases of expressions that GROUP BY may name (a declared column's name stays
    the column, as in SQL).

    >>> import sqlglot
    >>> from infodp.curator.declaration.source import load_schema
    >>> s = load_schema({"table": "t", "privacy_unit": "row", "columns": {"a": {"type": "int"}}})
    >>> q = sqlglot.parse_one("SELECT FLOOR(a / 2) AS h, a + 1 AS a FROM t")
    >>> {k: v[1].sql() for k, v in select_aliases(q, s).items()}
    {'h': 'FLOOR(a / 2)'}
    """
    declared = {c.name.lower() for c in schema.columns}
    return {
        item.alias.lower(): (item.alias, item.this)
        for item in select.expressions
        if isinstance(item, exp.Alias)
        and not isinstance(item.this, exp.Column)
        and item.alias.lower() not in declared
    }


def renamed_column(select: exp.Select, name: str, schema: DatasetSchema) -> exp.Column | None:
    """The column a SELECT item ``col AS name`` renames, when no declared column is ``name``
    (in GROUP BY a table's column comes first, then a SELECT alias, as in DuckDB).

    >>> import sqlglot
    >>> from infodp.curator.declaration.source import load_schema
    >>> s = load_schema({"table": "t", "privacy_unit": "row", "columns": {"a": {"type": "int"}}})
    >>> q = sqlglot.parse_one("SELECT a AS r, a AS a FROM t")
    >>> renamed_column(q, "r", s).sql(), renamed_column(q, "a", s)
    ('a', None)
    """
    if name.lower() in {c.name.lower() for c in schema.columns}:
        return None
    for item in select.expressions:
        if (
            isinstance(item, exp.Alias)
            and isinstance(item.this, exp.Column)
            and item.alias.lower() == name.lower()
        ):
            return item.this
    return None


def select_alias(select: exp.Select, node: exp.Expr) -> str | None:
    """The alias of the SELECT item that is ``node`` (a GROUP BY expression) itself.

    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT FLOOR(a / 2) AS h FROM t GROUP BY FLOOR(a / 2)")
    >>> select_alias(q, q.args["group"].expressions[0])
    'h'
    """
    text = node.sql()
    for item in select.expressions:
        if isinstance(item, exp.Alias) and item.this.sql() == text:
            return str(item.alias)
    return None


def derived_items(select: exp.Select, groups: tuple[GroupKey, ...]) -> dict[str, str]:
    """Each derived key's name by the SQL text of the SELECT item that computes it.

    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT FLOOR(a / 2) AS h FROM t GROUP BY h")
    >>> derived_items(q, (GroupKey("h", ("0",), Bins("a", 2)),))
    {'h': 'h', 'FLOOR(a / 2)': 'h'}
    """
    derived = {g.column: g.column for g in groups if g.derived is not None}
    for item in select.expressions:
        if isinstance(item, exp.Alias) and item.alias in derived:
            derived[item.this.sql()] = item.alias
    return derived
