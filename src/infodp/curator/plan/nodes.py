"""Immutable query plans: what a safe SQL query asks for, independent of any backend.

A :class:`QueryPlan` is a frozen tree: the table, an optional filter (a tree of
:class:`Predicate` nodes over declared columns and literals), the GROUP BY keys and the output
items (group columns and aggregates) in SELECT order. :func:`infodp.curator.rules.measurements`
turns the aggregates into the distinct noisy *measurements* the engine pays for (each
aggregate's rule names them: AVG needs a centred sum and a count, VARIANCE a centred sum of
squares too; it lives with the rules, which read this module's nodes, so the import graph stays
one-way); equal measurements are shared, so ``SUM(x), AVG(x)`` does not pay twice for the
count. Backends (``backends/duckdb.py``) compile a plan to their own query language; the plan
never contains SQL text.

>>> p = QueryPlan("people", "SELECT COUNT(*) FROM people",
...               outputs=(Output("count", Aggregate("count")),))
>>> [o.name for o in p.outputs], p.aggregates[0].func
(['count'], <AggregateFunc.COUNT: 'count'>)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol, TypeVar

__all__ = [
    "AGGREGATES",
    "Aggregate",
    "AggregateFunc",
    "Bands",
    "Bins",
    "GroupKey",
    "Measurement",
    "MeasurementKind",
    "Output",
    "PlanVisitor",
    "Predicate",
    "QueryPlan",
    "predicate_text",
]


class AggregateFunc(enum.StrEnum):
    """The aggregate functions a plan may hold (typed plan nodes; equal to their names)."""

    COUNT = "count"
    SUM = "sum"
    AVG = "avg"
    VARIANCE = "variance"
    STDDEV = "stddev"
    QUANTILE = "quantile"
    MIN = "min"
    MAX = "max"
    COUNT_DISTINCT = "count_distinct"


class MeasurementKind(enum.StrEnum):
    """What a noisy measurement sums (see :class:`Measurement`).

    Each kind declares its shape, the one fact about it the backends read (they may not know
    the rules, :mod:`infodp.curator.rules`, which say the rest): one bounded value per group,
    or a histogram of the column per group (the exponential mechanism's candidates).

    >>> MeasurementKind.QUANTILE.histogram, MeasurementKind.SUM.histogram
    (True, False)
    """

    COUNT_ROWS = "count_rows"
    COUNT = "count"
    SUM = "sum"
    CSUM = "csum"
    CSUMSQ = "csumsq"
    QUANTILE = "quantile"
    COUNT_DISTINCT = "count_distinct"

    @property
    def histogram(self) -> bool:
        """True when the engine returns a histogram per group (not one value)."""
        return self in _HISTOGRAM_KINDS

    @property
    def of_rows(self) -> bool:
        """True when the kind reads no column (a measurement of it has ``column`` None)."""
        return self in _ROW_KINDS


#: The kinds read as a per-group histogram of the column, and those that read no column.
_HISTOGRAM_KINDS = frozenset({MeasurementKind.QUANTILE})
_ROW_KINDS = frozenset({MeasurementKind.COUNT_ROWS})


#: Aggregate functions a plan may hold.
AGGREGATES: tuple[str, ...] = tuple(f.value for f in AggregateFunc)


_T_co = TypeVar("_T_co", covariant=True)
_T = TypeVar("_T")


class PlanVisitor(Protocol[_T_co]):
    """What walks a plan: one method per node type, each returning the visitor's result.

    Compiling, answering and the synopsis answer are visitors (pricing loops over the plan's
    measurements instead, docs/architecture.md); a node hands itself to
    the right method with ``node.accept(visitor)`` (the double dispatch of the visitor pattern,
    as Tumult Analytics' measurement visitor walks its query expressions).
    """

    def visit_query_plan(self, node: QueryPlan) -> _T_co:
        """The whole query."""
        ...

    def visit_predicate(self, node: Predicate) -> _T_co:
        """A WHERE node."""
        ...

    def visit_group_key(self, node: GroupKey) -> _T_co:
        """A GROUP BY key."""
        ...

    def visit_output(self, node: Output) -> _T_co:
        """A SELECT item."""
        ...

    def visit_aggregate(self, node: Aggregate) -> _T_co:
        """An aggregate call."""
        ...


def _typed(cls: type[enum.StrEnum], value: str, name: str) -> enum.StrEnum:
    try:
        return cls(value)
    except ValueError:
        raise ValueError(f"unknown {name} {value!r}") from None


@dataclass(frozen=True, slots=True)
class Predicate:
    """A node of a WHERE filter.

    ``op`` is one of ``and``, ``or``, ``not`` (children in ``args``), a comparison
    ``= <> < <= > >=`` (``column`` against ``values[0]``), ``in`` / ``not in`` (``values``),
    ``between`` (``values = (low, high)``), ``is null`` / ``is not null``.
    """

    op: str
    column: str | None = None
    values: tuple[float | int | str, ...] = ()
    args: tuple[Predicate, ...] = ()

    def accept(self, visitor: PlanVisitor[_T]) -> _T:
        """``visitor.visit_predicate(self)``."""
        return visitor.visit_predicate(self)


@dataclass(frozen=True, slots=True)
class Aggregate:
    """One aggregate: ``count`` (``column=None`` is COUNT(*)), ``sum``, ``avg``,
    ``variance``/``stddev`` (``population`` for VAR_POP/STDDEV_POP), ``quantile`` (``q``),
    ``min``/``max`` (the extreme quantiles, :mod:`infodp.curator.rules.extreme`),
    ``count_distinct`` (``grouped``: the query has a GROUP BY). ``where`` is the aggregate's
    own ``FILTER (WHERE ...)`` (:mod:`infodp.curator.rules.filtered`).
    """

    func: AggregateFunc
    column: str | None = None
    q: Fraction | None = None
    population: bool = False
    where: Predicate | None = None
    grouped: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "func", _typed(AggregateFunc, self.func, "aggregate"))

    def accept(self, visitor: PlanVisitor[_T]) -> _T:
        """``visitor.visit_aggregate(self)``."""
        return visitor.visit_aggregate(self)


@dataclass(frozen=True, slots=True)
class Bins:
    """A derived key ``FLOOR(column / width) * scale`` of a bounded numeric column (an integer
    ``width`` ≥ 1 and ``scale``), read on the column's clamped bounded copy."""

    column: str
    width: int
    scale: int = 1


@dataclass(frozen=True, slots=True)
class Bands:
    """A derived key ``CASE WHEN c1 THEN l1 ... ELSE default END``: each branch a WHERE
    condition and the literal it names (as text); no ``default`` leaves the rest NULL."""

    branches: tuple[tuple[Predicate, str], ...]
    default: str | None = None


@dataclass(frozen=True, slots=True)
class GroupKey:
    """A GROUP BY key; ``categories`` are its declared keys, or None (partition selection).

    ``column`` names the key: a declared column, or for a ``derived`` key (:class:`Bins`,
    :class:`Bands`; :mod:`infodp.curator.sql.derived`) its SELECT alias or its SQL text.
    """

    column: str
    categories: tuple[str, ...] | None
    derived: Bins | Bands | None = None

    def accept(self, visitor: PlanVisitor[_T]) -> _T:
        """``visitor.visit_group_key(self)``."""
        return visitor.visit_group_key(self)


@dataclass(frozen=True, slots=True)
class Output:
    """One SELECT item: a group column (``aggregate is None``) or an aggregate."""

    name: str
    aggregate: Aggregate | None = None
    group_column: str | None = None

    def accept(self, visitor: PlanVisitor[_T]) -> _T:
        """``visitor.visit_output(self)``."""
        return visitor.visit_output(self)


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """A parsed, validated query (immutable, backend-neutral)."""

    table: str
    sql: str
    outputs: tuple[Output, ...]
    where: Predicate | None = None
    group_by: tuple[GroupKey, ...] = ()

    @property
    def aggregates(self) -> tuple[Aggregate, ...]:
        """The aggregates in SELECT order."""
        return tuple(o.aggregate for o in self.outputs if o.aggregate is not None)

    @property
    def needs_partition_selection(self) -> bool:
        """True when a GROUP BY key has no declared categories (the key set is private)."""
        return any(g.categories is None for g in self.group_by)

    def accept(self, visitor: PlanVisitor[_T]) -> _T:
        """``visitor.visit_query_plan(self)``."""
        return visitor.visit_query_plan(self)


@dataclass(frozen=True, slots=True)
class Measurement:
    """A bounded aggregate that receives noise: the unit the budget is split over.

    ``kind``: ``count_rows`` (COUNT(*)), ``count`` (non-null values of ``column``), ``sum``
    (clamped values), ``csum`` / ``csumsq`` (values centred at the middle of the bounds, and
    their squares), ``quantile`` (a histogram of the column for the exponential mechanism),
    ``count_distinct`` (distinct non-null values of ``column``; ``grouped``: per GROUP BY
    cell). ``where`` restricts the rows it reads (an aggregate's FILTER): two FILTERs with the
    same predicate share one measurement, and the key of one without a filter is unchanged.
    """

    kind: MeasurementKind
    column: str | None = None
    q: Fraction | None = None
    where: Predicate | None = None
    grouped: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", _typed(MeasurementKind, self.kind, "measurement"))

    @property
    def key(self) -> str:
        """A stable text key (used to share measurements between aggregates).

        >>> Measurement("count_rows", where=Predicate(">", "age", (30,))).key
        'count(*) filter(where age > 30)'
        """
        if self.kind.of_rows:
            key = "count(*)"
        elif self.kind.histogram:
            key = f"{self.kind}({self.column},{self.q})"
        else:
            key = f"{self.kind}({self.column})"
        return key if self.where is None else f"{key} filter(where {predicate_text(self.where)})"


def predicate_text(p: Predicate) -> str:
    """A WHERE tree as canonical text (a filtered measurement's key).

    >>> predicate_text(Predicate("or", args=(Predicate("in", "r", ("n", "s")),
    ...                                      Predicate("is null", "age"))))
    "(r in ('n', 's') or age is null)"
    """
    if p.op in ("and", "or"):
        return "(" + f" {p.op} ".join(predicate_text(a) for a in p.args) + ")"
    if p.op == "not":
        return f"not {predicate_text(p.args[0])}"
    vals = [repr(v) for v in p.values]
    if p.op in ("is null", "is not null"):
        return f"{p.column} {p.op}"
    if p.op == "in":
        return f"{p.column} in ({', '.join(vals)})"
    if p.op == "between":
        return f"{p.column} between {vals[0]} and {vals[1]}"
    return f"{p.column} {p.op} {vals[0]}"
