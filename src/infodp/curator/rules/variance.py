"""VARIANCE and STDDEV (sample and population) from a centred sum, sum of squares and count.

The centred sum of squares has sensitivity m·r² (grid² units; r the largest |v − centre|),
the centred sum m·r and the count m (Li et al. 2016, §2.5 for centring). The released
variance Q̃/C̃ − (S̃/C̃)² (times C̃/(C̃ − 1) for the sample variance) is post-processing; its
interval inverts the exact pivot N_q − 2μN_s + (μ² − v)N_c (Fieller 1954;
:func:`~infodp.curator.intervals.variance_interval`), STDDEV the square roots of both.

>>> from infodp.curator.plan import Aggregate
>>> [m.key for m in VARIANCE.needs(Aggregate("variance", "x"))]
['csum(x)', 'csumsq(x)', 'count(x)']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from sqlglot import exp

from infodp.curator.column_accuracy import widest_moments
from infodp.curator.intervals import variance_answer
from infodp.curator.plan import Aggregate, AggregateFunc, Measurement, MeasurementKind
from infodp.curator.rules.avg import planned_halfwidth
from infodp.curator.rules.base import (
    Cells,
    ColumnAccuracy,
    Interval,
    Measure,
    Rule,
    Value,
    column_of,
    grid_of,
)
from infodp.curator.schema import DatasetSchema

if TYPE_CHECKING:
    from infodp.curator.rules.base import Parsing

__all__ = ["CSUMSQ_MEASURE", "STDDEV", "VARIANCE"]


class _CentredSquares(Measure):
    kind = MeasurementKind.CSUMSQ

    def sensitivity(self, m: Measurement, schema: DatasetSchema) -> int:
        """m·r² in grid² units."""
        return schema.max_rows_per_unit * grid_of(m, schema).radius ** 2

    def step(self, m: Measurement, schema: DatasetSchema) -> float:
        """The square of the column's grid step."""
        return grid_of(m, schema).step ** 2

    def width(self, m: Measurement, schema: DatasetSchema, rows: int) -> int:
        """rows·r²: the range of the centred sum of squares."""
        return rows * grid_of(m, schema).radius ** 2


#: The measurement kind of a centred sum of squares.
CSUMSQ_MEASURE: Measure = _CentredSquares()


class VarianceRule(Rule):
    """VARIANCE/VAR_SAMP (sample) and VAR_POP (population)."""

    func: ClassVar[AggregateFunc] = AggregateFunc.VARIANCE
    sql_names = ("VARIANCE",)
    #: sqlglot's node types and whether each is the population form.
    nodes: ClassVar[dict[type[exp.Expr], bool]] = {exp.Variance: False, exp.VariancePop: True}

    def parse(self, node: exp.Expr, sql: Parsing) -> Aggregate | None:
        """One of :attr:`nodes` over a bounded column."""
        population = self.nodes.get(type(node))
        if population is None:
            return None
        if isinstance(node.this, exp.Distinct):
            raise sql.refuse(f"{node.key.upper()}(DISTINCT ...)")
        col = sql.bounded(self.func.value.upper(), node.this)
        return Aggregate(self.func, col.name, population=population)

    def output_name(self, node: exp.Expr) -> str:
        """As DuckDB prints it (the generic generator spells VAR_POP as VARIANCE_POP)."""
        if isinstance(node, exp.VariancePop):
            return f"VAR_POP({node.this.sql()})"
        return str(node.sql())

    def needs(self, agg: Aggregate) -> tuple[Measurement, ...]:
        """A centred sum, a centred sum of squares and the non-null count."""
        return (
            Measurement(MeasurementKind.CSUM, agg.column),
            Measurement(MeasurementKind.CSUMSQ, agg.column),
            Measurement(MeasurementKind.COUNT, agg.column),
        )

    def answer(
        self, agg: Aggregate, cells: Cells, key: tuple[str, ...], row: Sequence[int | None]
    ) -> tuple[Value, Interval]:
        """The clamped variance (or its root) and its interval (intervals.variance_answer)."""
        ms = self.needs(agg)
        s, q, c = (cells.noisy(row, m) for m in ms)
        mechs = tuple(cells.part(m)[1].noise_mechanism for m in ms)
        return variance_answer(
            s,
            q,
            c,
            (mechs[0], mechs[1], mechs[2]),
            cells.grid(column_of(agg)),
            cells.beta,
            sample=not agg.population,
            stddev=self.func == AggregateFunc.STDDEV,
            cache=cells.box,
        )

    def accuracy(self, agg: Aggregate, cells: Cells, rows: int | None, name: str) -> ColumnAccuracy:
        """The widest half-width over groups of ``rows`` rows."""
        return {"halfwidth": planned_halfwidth(self, agg, cells, rows, name, widest_moments)}


class StddevRule(VarianceRule):
    """STDDEV/STDDEV_SAMP (sample) and STDDEV_POP (population): the variance's square root."""

    func: ClassVar[AggregateFunc] = AggregateFunc.STDDEV
    sql_names = ("STDDEV",)
    nodes: ClassVar[dict[type[exp.Expr], bool]] = {
        exp.Stddev: False,
        exp.StddevSamp: False,
        exp.StddevPop: True,
    }


#: The VARIANCE rule.
VARIANCE = VarianceRule()
#: The STDDEV rule.
STDDEV = StddevRule()
