"""What one aggregate rule owns, and the contexts it is called with.

A :class:`Rule` is one aggregate of the safe SQL subset in one module: how the parser
recognises it (sqlglot node types or function names, the output name), the measurements it
needs, and the answer of one released cell from the noisy measurements with its interval (or
rank error) and the accuracy planned for it. A :class:`Measure` is one kind of measurement:
its sensitivity under the declared bounds and ``max_rows_per_unit``, its grid step, the
information one of its cells releases, and the accuracy an estimate shows for it. Pricing
(:func:`~infodp.curator.price.cost.plan_cost`), parsing (:mod:`~infodp.curator.sql.parse`),
answering
(:mod:`~infodp.curator.release.cells`) and planning (:mod:`~infodp.curator.price.estimate`) ask the
registry (:mod:`infodp.curator.rules`) and never test an aggregate's name themselves.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, ClassVar, Protocol, TypedDict, cast

from sqlglot import exp

from infodp.curator.declaration.schema import ColumnSpec, DatasetSchema
from infodp.curator.plan.grid import ColumnGrid, column_grid
from infodp.curator.plan.nodes import (
    Aggregate,
    AggregateFunc,
    Measurement,
    MeasurementKind,
    Predicate,
)
from infodp.errors import InternalError, ParameterError

if TYPE_CHECKING:
    from infodp.mechanisms.gaussian import DiscreteGaussianMechanism
    from infodp.mechanisms.laplace import DiscreteLaplaceMechanism

__all__ = [
    "BoundedRule",
    "BoxMemo",
    "Cells",
    "ColumnAccuracy",
    "GridSum",
    "Measure",
    "MeasurementAccuracy",
    "Parsing",
    "Priced",
    "RankError",
    "Rule",
    "Value",
]

#: Quantiles of noise combinations kept across the cells of one release (and of one query's
#: releases): (lead mechanism, snapped terms, β) → quantile (rules.intervals fills it).
BoxMemo = dict[tuple[object, ...], float]


class Priced(Protocol):
    """A priced measurement as the rules read it. :class:`infodp.curator.price.cost.MeasurementCost`
    is the one the curator makes; it is named here as a protocol because pricing calls the
    rules, so the rules must not import pricing (the import graph stays one-way)."""

    @property
    def measurement(self) -> Measurement: ...

    @property
    def epsilon(self) -> Fraction: ...

    @property
    def sensitivity(self) -> int: ...

    @property
    def step(self) -> float: ...

    @property
    def noise(self) -> str: ...

    @property
    def scale(self) -> float: ...

    @property
    def mechanism_name(self) -> str: ...

    @property
    def noise_mechanism(self) -> DiscreteLaplaceMechanism | DiscreteGaussianMechanism | None: ...

    def halfwidth(self, beta: float) -> int: ...


#: A released cell's value (None: an AVG over a synopsis group with no cells).
Value = float | int | None


class RankError(TypedDict):
    """A quantile's accuracy in place of an interval (Dwork & Roth 2014, Thm 3.11)."""

    rank_error: float
    grid: float
    note: str


#: A released cell's interval: [low, high], a quantile's rank error, or None (a group key).
Interval = list[float] | list[int] | RankError | None


class MeasurementAccuracy(TypedDict, total=False):
    """One measurement's accuracy in an estimate: half-width (column units) or rank error."""

    measurement: str
    mechanism: str
    halfwidth: float
    noise_scale: float
    rank_error: float


class ColumnAccuracy(TypedDict, total=False):
    """One output column's planned accuracy: the half-width of its interval or a rank error."""

    column: str
    halfwidth: float
    rank_error: float


class Parsing(Protocol):
    """What a rule asks the SQL parser while it recognises a call (``curator.sql``)."""

    @property
    def table(self) -> str:
        """The registered table's name (named in refusals)."""
        ...

    def column(self, node: exp.Expr) -> ColumnSpec:
        """The declared column ``node`` names (a refusal for anything but a plain column)."""
        ...

    def bounded(self, func: str, node: exp.Expr) -> ColumnSpec:
        """:meth:`column`, refused unless numeric with declared bounds (named ``func``)."""
        ...

    def refuse(self, construct: str, detail: str = "") -> ParameterError:
        """The refusal of an SQL construct outside the safe subset."""
        ...

    def unit_column(self, node: exp.Expr) -> str | None:
        """The privacy unit's column when ``node`` names it (declared or not), else None."""
        ...

    def predicate(self, node: exp.Expr) -> Predicate:
        """A condition in the WHERE grammar (with its literal range checks)."""
        ...

    @property
    def grouped(self) -> bool:
        """True when the query has a GROUP BY."""
        ...


@dataclass(slots=True)
class Cells:
    """The released cells of one query, as an output column's rule reads them.

    ``parts`` are the priced measurements and ``index`` their positions (looked up by the
    :class:`~infodp.curator.plan.nodes.Measurement` object); ``rows`` holds each released cell's
    noisy values (grid units, measurement order), ``cols`` the same by measurement, ``draws``
    the exponential mechanism's grid point per (cell key, quantile position). ``halfwidths``,
    ``grids`` and ``box`` depend on the query only and are kept across releases.
    """

    parts: tuple[Priced, ...]
    index: Mapping[Measurement, int]
    schema: DatasetSchema
    beta: float
    keys: Sequence[tuple[str, ...]] = ()
    rows: Sequence[Sequence[int | None]] = ()
    cols: Sequence[Sequence[int | None]] = ()
    draws: Mapping[tuple[tuple[str, ...], int], int] = field(default_factory=dict)
    halfwidths: dict[tuple[int, float], int] = field(default_factory=dict)
    grids: dict[str, ColumnGrid] = field(default_factory=dict)
    box: BoxMemo = field(default_factory=dict)

    def part(self, m: Measurement) -> tuple[int, Priced]:
        """The position and priced measurement of ``m``."""
        i = self.index[m]
        return i, self.parts[i]

    def halfwidth(self, i: int) -> int:
        """Measurement ``i``'s one-cell half-width at level β (grid units, remembered)."""
        h = self.halfwidths.get((i, self.beta))
        if h is None:
            h = self.halfwidths[(i, self.beta)] = self.parts[i].halfwidth(self.beta)
        return h

    def grid(self, column: str) -> ColumnGrid:
        """The grid of a bounded column (remembered)."""
        g = self.grids.get(column)
        if g is None:
            g = self.grids[column] = column_grid(self.schema.column(column))
        return g

    def noisy(self, row: Sequence[int | None], m: Measurement) -> int:
        """``m``'s noisy value in one cell's ``row``."""
        v = row[self.index[m]]
        if v is None:
            raise InternalError(f"{m.key} has no noisy value")
        return v

    def column(self, m: Measurement) -> Sequence[int]:
        """``m``'s noisy values over the released cells."""
        vs = self.cols[self.index[m]]
        if None in vs:
            raise InternalError(f"{m.key} has no noisy value")
        return cast("Sequence[int]", vs)


class Measure(ABC):
    """One kind of measurement: its sensitivity, grid step and information per cell.

    Sensitivities are L1 over all cells under add/remove of one unit with at most
    m = ``max_rows_per_unit`` rows (the cells are disjoint: McSherry 2009, Thm 4), in grid
    units.
    """

    kind: MeasurementKind

    @property
    def additive(self) -> bool:
        """False for a histogram kind (the exponential mechanism: no additive noise to draw)."""
        return not self.kind.histogram

    @abstractmethod
    def sensitivity(self, m: Measurement, schema: DatasetSchema) -> int:
        """Δ of one measurement over all its cells (grid units)."""

    def step(self, m: Measurement, schema: DatasetSchema) -> float:
        """The size of one grid unit in the column's units (1 for counts)."""
        return 1.0

    def width(self, m: Measurement, schema: DatasetSchema, rows: int) -> int:
        """The range of one cell's exact value over tables of at most ``rows`` rows."""
        return rows

    def information(self, p: Priced, schema: DatasetSchema, rows: int | None) -> float:
        """Nats about the whole table one cell releases (:mod:`~infodp.curator.rules.budget_info`):
        the mutual information of the noise channel over the cell's range of ``width``."""
        if p.sensitivity == 0:
            return 0.0
        if rows is None:
            return math.inf  # no declared bound on the count: the width is not public
        from infodp.curator.rules import budget_info  # only with a declared bound on the rows

        width = float(self.width(p.measurement, schema, rows))
        if p.noise == "gaussian":
            return budget_info.discrete_gaussian_information(width, p.scale)
        return budget_info.discrete_laplace_information(width, p.scale)

    def accuracy(self, p: Priced, schema: DatasetSchema, beta: float) -> MeasurementAccuracy:
        """What an estimate shows: the one-cell half-width at level β, in column units."""
        return {
            "measurement": p.measurement.key,
            "mechanism": p.mechanism_name,
            "halfwidth": p.halfwidth(beta) * p.step,
            "noise_scale": p.scale * p.step,
        }


class GridSum(Measure):
    """A sum over a cell of each row's contribution, a whole number of grid units computed
    from the row's clamped, snapped value (the value, its centred value or its square).

    One unit moves the sum by at most m·``per_row`` (m = ``max_rows_per_unit``; McSherry
    2009, Thm 4 for the disjoint cells), a cell of at most ``rows`` rows ranges over
    ``rows``·``spread``, and one grid unit is the column's step to the power ``power``.

    >>> from infodp.curator.declaration.source import load_schema
    >>> cols = {"pid": {"type": "int"}, "x": {"type": "int", "bounds": [-7, 5]}}
    >>> s = load_schema(
    ...     {"table": "t", "privacy_unit": "pid", "max_rows_per_unit": 3, "columns": cols}
    ... )
    >>> squares = GridSum(MeasurementKind.CSUMSQ, lambda g: g.radius**2, lambda g: 0, power=2)
    >>> squares.sensitivity(Measurement(MeasurementKind.CSUMSQ, "x"), s)  # 3 · 6²
    108
    """

    def __init__(
        self,
        kind: MeasurementKind,
        per_row: Callable[[ColumnGrid], int],
        spread: Callable[[ColumnGrid], int],
        power: int = 1,
    ) -> None:
        self.kind = kind
        self.per_row = per_row
        self.spread = spread
        self.power = power

    def sensitivity(self, m: Measurement, schema: DatasetSchema) -> int:
        """m·``per_row`` in grid units."""
        return schema.max_rows_per_unit * self.per_row(grid_of(m, schema))

    def step(self, m: Measurement, schema: DatasetSchema) -> float:
        """The column's grid step to the power ``power``."""
        return grid_of(m, schema).step ** self.power

    def width(self, m: Measurement, schema: DatasetSchema, rows: int) -> int:
        """``rows``·``spread``."""
        return rows * self.spread(grid_of(m, schema))


def grid_of(m: Measurement, schema: DatasetSchema) -> ColumnGrid:
    """The grid of a measurement's column (an internal error without one)."""
    if m.column is None:
        raise InternalError(f"{m.key} without a column")
    return column_grid(schema.column(m.column))


def measured(
    agg: Aggregate, kind: MeasurementKind, column: str | None = None, q: Fraction | None = None
) -> Measurement:
    """The measurement of ``kind`` an aggregate reads, over the rows its FILTER keeps.

    >>> agg = Aggregate("sum", "x", where=Predicate(">", "x", (1,)))
    >>> measured(agg, MeasurementKind.SUM, "x").key
    'sum(x) filter(where x > 1)'
    """
    return Measurement(kind, column, q, where=agg.where)


def column_of(agg: Aggregate) -> str:
    """The aggregate's column (an internal error without one)."""
    if agg.column is None:
        raise InternalError(f"{agg.func} without a column")
    return agg.column


class Rule(ABC):
    """One aggregate: its parsing, measurements, answer and planned accuracy."""

    #: The plan's aggregate function this rule answers.
    func: ClassVar[AggregateFunc]
    #: The SQL names an analyst may write (listed in the refusal of any other aggregate).
    sql_names: ClassVar[tuple[str, ...]]
    #: Whether the aggregate takes a ``FILTER (WHERE ...)`` (:mod:`~.filtered`).
    filterable: ClassVar[bool] = True

    @abstractmethod
    def parse(self, node: exp.Expr, sql: Parsing) -> Aggregate | None:
        """The aggregate ``node`` denotes when this rule recognises it, else None."""

    def output_name(self, node: exp.Expr) -> str:
        """The column name of an unaliased call, as DuckDB prints it."""
        return str(node.sql())

    @abstractmethod
    def needs(self, agg: Aggregate) -> tuple[Measurement, ...]:
        """The measurements ``agg`` is answered from (shared between aggregates by equality)."""

    @abstractmethod
    def answer(
        self, agg: Aggregate, cells: Cells, key: tuple[str, ...], row: Sequence[int | None]
    ) -> tuple[Value, Interval]:
        """One released cell (group ``key``, noisy values ``row``) and its interval."""

    def column(self, agg: Aggregate, cells: Cells) -> tuple[list[Value], list[Interval]]:
        """The output column over every released cell: values and intervals."""
        answered = [
            self.answer(agg, cells, k, r) for k, r in zip(cells.keys, cells.rows, strict=True)
        ]
        return [a[0] for a in answered], [a[1] for a in answered]

    @abstractmethod
    def accuracy(self, agg: Aggregate, cells: Cells, rows: int | None, name: str) -> ColumnAccuracy:
        """The planned accuracy of the output column (without its name): the half-width of
        its interval, or a quantile's rank error; ``rows`` is the public group size AVG and
        VARIANCE are planned for, ``name`` the column's name (shown in a refusal)."""


class BoundedRule(Rule):
    """An aggregate of one bounded numeric column, written as one of sqlglot's :attr:`nodes`
    (each mapped to whether it is the population form); DISTINCT is refused."""

    #: sqlglot's node types of the aggregate and whether each is the population form.
    nodes: ClassVar[Mapping[type[exp.Expr], bool]]

    def parse(self, node: exp.Expr, sql: Parsing) -> Aggregate | None:
        """One of :attr:`nodes` over a bounded column."""
        population = self.nodes.get(type(node))
        if population is None:
            return None
        if isinstance(node.this, exp.Distinct):
            raise sql.refuse(f"{node.key.upper()}(DISTINCT ...)")
        col = sql.bounded(self.func.value.upper(), node.this)
        return Aggregate(self.func, col.name, population=population)
