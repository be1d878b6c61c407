"""A typed value of a derived relation: its stored value, its bounded value, its bounds.

Every column a relation offers, plain or derived, is a :class:`Value` over the tables it
reads: ``raw`` is the value computed from the stored values (what filters, join keys and
group keys read), ``bounded`` the value computed from the bounded copies (what aggregates
read: each stored column's ``__bnd_c`` times its grid step, NULL where its null policy drops
it), ``box`` the bounds of the bounded value (interval arithmetic from the declared bounds,
:mod:`infodp.curator.relations.boxes`). A relation column is then stored as a registered table's
would
be: the raw value under its name and, beside a bounded numeric one, ``__bnd_<name>``: the
bounded value clamped to its bounds and snapped to its grid (:func:`snap_over`), exactly as
registration's :func:`~infodp.curator.backends.bounding.snap_expression` stores a column.

>>> from infodp.curator.declaration.schema import ColumnSpec
>>> v = stored_value("p", ColumnSpec("age", "int", bounds=(0.0, 120.0)), grid=True)
>>> (v.raw.sql(), v.bounded.sql(), v.box)
('"p"."age"', 'CAST("p"."__bnd_age" AS DOUBLE)', (0.0, 120.0))
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from sqlglot import exp

from infodp.curator.backends.bounding import bounded_column, ident, literal, snap_expression
from infodp.curator.backends.dialects import SPARK
from infodp.curator.declaration.schema import MAX_BOUND, ColumnSpec, NullPolicy
from infodp.curator.plan.grid import column_grid
from infodp.curator.relations.boxes import Box
from infodp.curator.sql.parse import refuse

__all__ = [
    "NUMERIC",
    "STRING",
    "Value",
    "as_number",
    "column_items",
    "refuse",
    "said",
    "snap_over",
    "stored_value",
]

#: Numeric and string value types (a condition is ``bool``, a bare NULL ``null``).
NUMERIC = ("int", "float")
STRING = ("category", "text")
#: An int value with bounds spanning at most this many integers may be cast to a category.
_CATEGORY_INTS = 10_000


#: What a refusal quotes: the SQL text, or the node it is rendered from when (only when) a
#: refusal is raised: rendering a node costs its size, so a list or chain rendered per item
#: would cost the square of the query's size.
Said = str | exp.Expr


def said(text: Said) -> str:
    """``text``, or the start of the SQL of a node (what a refusal quotes).

    >>> said(exp.column("age"))
    'age'
    """
    return text if isinstance(text, str) else str(text.sql())[:80]


@dataclass(frozen=True, slots=True)
class Value:
    """One value per row of a relation (see the module docstring)."""

    raw: exp.Expr
    bounded: exp.Expr
    type: str
    #: The bounds of the bounded value (numeric only; None: no finite bounds, see ``why``).
    box: Box | None = None
    categories: tuple[str, ...] | None = None
    #: The bounded value may be NULL (a dropped value, an unmatched LEFT JOIN row, ...).
    nullable: bool = True
    #: A stored column passed through unchanged: its declaration (kept with its null policy).
    spec: ColumnSpec | None = None
    #: That column's stored bounded copy ``__bnd_c`` (grid integers), when it has one.
    grid: exp.Expr | None = None
    #: Why a numeric value has no bounds (named when it is aggregated).
    why: str = ""

    @property
    def numeric(self) -> bool:
        """True for int and float values."""
        return self.type in NUMERIC


def _qualified(alias: str, name: str) -> exp.Column:
    return exp.Column(this=ident(name), table=ident(alias))


def stored_value(alias: str, spec: ColumnSpec, *, grid: bool, nullable: bool = False) -> Value:
    """Column ``spec`` of the relation read as ``alias``: a private table's or a derived
    relation's (``grid``: its bounded copy ``__bnd_c`` is stored beside it) or a public
    table's (its values are public and inside its bounds: the bounded value is the value).
    ``nullable``: the right side of a LEFT JOIN."""
    raw = _qualified(alias, spec.name)
    dropped = spec.nulls.action == "drop" or nullable
    if spec.type == "bool":
        # A stored condition: read as one (its bounded form is itself, false or true); its
        # bounded copy (0 or 1) is kept for the relation column that passes it on.
        copy = _qualified(alias, bounded_column(spec.name)) if grid else None
        return Value(raw, raw.copy(), "bool", None, None, dropped, spec, copy)
    if not spec.is_numeric or spec.bounds is None:
        why = f"column {spec.name} has no declared bounds" if spec.is_numeric else ""
        return Value(raw, raw.copy(), spec.type, None, spec.categories, True, spec, None, why)
    box = spec.bounds
    if grid:
        g = column_grid(spec)
        copy = _qualified(alias, bounded_column(spec.name))
        bounded: exp.Expr = _double(copy.copy())
        if g.step != 1.0:
            bounded = exp.Mul(this=bounded, expression=literal(g.step))
        # A snapped value may sit half a grid step beyond a bound that is off the grid.
        box = (min(box[0], g.lo * g.step), max(box[1], g.hi * g.step))
        return Value(raw, bounded, spec.type, box, None, dropped, spec, copy)
    bounded = _double(raw.copy())
    return Value(raw, bounded, spec.type, box, None, True, spec, None)


def _double(e: exp.Expr) -> exp.Cast:
    """``CAST(e AS DOUBLE)`` over ``e`` itself (a column read once per mention: a long
    query's every mention built its type from the text "DOUBLE" again)."""
    return exp.Cast(this=e, to=exp.DataType(this=exp.DataType.Type.DOUBLE, nested=False))


def as_number(v: Value, text: Said) -> Value:
    """``v`` as a number: a condition is 1 when it holds, 0 when it does not (NULL when
    unknown); a string is refused.

    >>> yes = Value(exp.true(), exp.true(), "bool", nullable=False)
    >>> (as_number(yes, "TRUE").type, as_number(yes, "TRUE").box)
    ('int', (0.0, 1.0))
    """
    if v.type == "bool":
        return Value(_indicator(v.raw), _indicator(v.bounded), "int", (0.0, 1.0), None, v.nullable)
    if v.type == "null":
        return Value(v.raw, v.bounded, "int", (0.0, 0.0), None, True)
    if not v.numeric:
        raise refuse(f"arithmetic on {said(text)!r}", f"it is a {v.type} value; only numbers")
    return v


def _indicator(condition: exp.Expr) -> exp.Expr:
    # The condition once (CASE c WHEN TRUE ... WHEN FALSE ...; NULL matches neither): written
    # twice, a condition of a condition of ... would double at each level.
    return exp.Case(
        this=exp.Paren(this=condition),
        ifs=[exp.If(this=exp.true(), true=literal(1)), exp.If(this=exp.false(), true=literal(0))],
    )


def snap_over(spec: ColumnSpec, value: exp.Expr) -> exp.Expr:
    """``snap_expression(spec)`` applied to ``value`` instead of the stored column: the null
    policy, the clamp to the bounds, the grid and the BIGINT cast, as registration stores a
    column of that declaration. Its finiteness test is the portable ``ABS(v) < 'Infinity'``
    (the relation's SQL is rendered for DuckDB and Spark alike).

    >>> print(snap_over(ColumnSpec("x", "int", bounds=(0.0, 9.0)), exp.column("v")).sql())
    CAST(ROUND(CASE WHEN (v) IS NULL THEN NULL ELSE LEAST(GREATEST((v), 0), 9) END) AS BIGINT)
    >>> print(snap_over(ColumnSpec("x", "float", bounds=(0.0, 1.0)), exp.column("v")).sql()[:60])
    CAST(ROUND((CASE WHEN (v) IS NULL OR NOT ABS((v)) < CAST('In
    """
    tree = snap_expression(spec, SPARK)

    def put(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.name == spec.name and not node.table:
            return exp.Paren(this=value.copy())
        return node

    return tree.transform(put, copy=False)


def _spec(name: str, v: Value) -> ColumnSpec:
    """The declaration of a relation column holding ``v``."""
    if v.spec is not None:
        policy = NullPolicy("drop") if v.nullable and v.grid is not None else v.spec.nulls
        if v.grid is None and v.spec.nulls.action == "error":
            policy = NullPolicy("drop")  # a public value, or a text column: NULL is no error
        return replace(v.spec, name=name, nulls=policy, multiplicity=None)
    nulls = NullPolicy("drop") if v.nullable else NullPolicy()
    if v.type == "bool":
        return ColumnSpec(name, "int", (0.0, 1.0), None, nulls)
    if v.type == "null":
        return ColumnSpec(name, "text", None, None, NullPolicy("drop"))
    if v.numeric:
        return ColumnSpec(name, v.type, _bounds(v), None, nulls)
    if v.categories is not None:
        return ColumnSpec(name, "category", None, v.categories, NullPolicy("drop"))
    return ColumnSpec(name, "text", None, None, NullPolicy("drop"))


def _bounds(v: Value) -> tuple[float, float] | None:
    if v.box is None or not all(math.isfinite(x) and abs(x) <= MAX_BOUND for x in v.box):
        return None
    low, high = v.box
    if v.type == "int":
        low, high = float(math.ceil(low)), float(math.floor(high))
    return low, high


def column_items(name: str, v: Value) -> tuple[ColumnSpec, list[exp.Expr]]:
    """The declaration of relation column ``name`` holding ``v`` and its SELECT items: the
    raw value (as BIGINT, DOUBLE or VARCHAR, as registration stores its type) and, when it
    is numeric with bounds, its bounded copy ``__bnd_<name>``.

    >>> v = stored_value("p", ColumnSpec("age", "int", bounds=(0.0, 120.0)), grid=True)
    >>> spec, items = column_items("age", v)
    >>> [i.sql() for i in items]
    ['"p"."age" AS "age"', '"p"."__bnd_age" AS "__bnd_age"']
    """
    spec = _spec(name, v)
    items = [exp.alias_(_typed(v, spec), ident(name), copy=False)]
    if spec.is_numeric and spec.bounds is not None:
        if v.grid is not None and v.spec is not None and v.spec.bounds == spec.bounds:
            copy = v.grid.copy()  # the stored bounded copy, on this very grid
        else:
            copy = snap_over(spec, v.bounded)
        items.append(exp.alias_(copy, ident(bounded_column(name)), copy=False))
    return spec, items


def _typed(v: Value, spec: ColumnSpec) -> exp.Expr:
    if v.spec is not None and v.spec.type == spec.type:
        return v.raw.copy()
    raw = as_number(v, v.raw).raw if v.type == "bool" else v.raw.copy()
    if spec.type == "int":
        return exp.TryCast(this=raw, to=exp.DataType.build("BIGINT"))
    if spec.type == "float":
        return _double(raw)
    return exp.cast(raw, "VARCHAR")


def name_of(v: Value) -> str:
    """The SQL of a value (for messages)."""
    return str(v.raw.sql())


def cast_categories(v: Value) -> tuple[str, ...] | None:
    """The categories of ``v`` cast to text: its own, or each integer of a small int box."""
    if v.type in STRING:
        return v.categories
    if v.type == "int" and v.box is not None and all(math.isfinite(x) for x in v.box):
        low, high = math.ceil(v.box[0]), math.floor(v.box[1])
        if high - low + 1 <= _CATEGORY_INTS:
            return tuple(str(i) for i in range(low, high + 1))
    return None
