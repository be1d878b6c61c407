"""VARIANCE and STDDEV (sample and population) from a centred sum, sum of squares and count.

The centred sum of squares has sensitivity m·r² (grid² units; r the largest |v − centre|),
the centred sum m·r and the count m (Li et al. 2016, §2.5 for centring). The released
variance Q̃/C̃ − (S̃/C̃)² (times C̃/(C̃ − 1) for the sample variance) is post-processing; its
interval inverts the exact pivot N_q − 2μN_s + (μ² − v)N_c (Fieller 1954;
:func:`~infodp.curator.rules.intervals.variance_interval`), STDDEV the square roots of both.

>>> from infodp.curator.plan.nodes import Aggregate
>>> [m.key for m in VARIANCE.needs(Aggregate("variance", "x"))]
['csum(x)', 'csumsq(x)', 'count(x)']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from sqlglot import exp

from infodp._lazy import lazy_module
from infodp.curator.plan.nodes import Aggregate, AggregateFunc, Measurement, MeasurementKind
from infodp.curator.rules.avg import MomentRule
from infodp.curator.rules.base import Cells, GridSum, Interval, Value, column_of, measured
from infodp.curator.rules.column_accuracy import Width, widest_moments

if TYPE_CHECKING:
    from infodp.curator.rules import intervals as _intervals
else:  # on first use (see rules.avg)
    _intervals = lazy_module("infodp.curator.rules.intervals")

__all__ = ["CSUMSQ_MEASURE", "STDDEV", "VARIANCE"]


#: The measurement kind of a centred sum of squares: sensitivity m·r² and a cell's range
#: rows·r² in grid² units (one grid² unit is the square of the column's step).
CSUMSQ_MEASURE = GridSum(
    MeasurementKind.CSUMSQ, per_row=lambda g: g.radius**2, spread=lambda g: g.radius**2, power=2
)


class VarianceRule(MomentRule):
    """VARIANCE/VAR_SAMP (sample) and VAR_POP (population)."""

    func: ClassVar[AggregateFunc] = AggregateFunc.VARIANCE
    sql_names = ("VARIANCE",)
    nodes: ClassVar[dict[type[exp.Expr], bool]] = {exp.Variance: False, exp.VariancePop: True}

    def output_name(self, node: exp.Expr) -> str:
        """As DuckDB prints it (the generic generator spells VAR_POP as VARIANCE_POP)."""
        if isinstance(node, exp.VariancePop):
            return f"VAR_POP({node.this.sql()})"
        return str(node.sql())

    def needs(self, agg: Aggregate) -> tuple[Measurement, ...]:
        """A centred sum, a centred sum of squares and the non-null count."""
        return (
            measured(agg, MeasurementKind.CSUM, agg.column),
            measured(agg, MeasurementKind.CSUMSQ, agg.column),
            measured(agg, MeasurementKind.COUNT, agg.column),
        )

    def answer(
        self, agg: Aggregate, cells: Cells, key: tuple[str, ...], row: Sequence[int | None]
    ) -> tuple[Value, Interval]:
        """The clamped variance (or its root) and its interval (intervals.variance_answer)."""
        ms = self.needs(agg)
        s, q, c = (cells.noisy(row, m) for m in ms)
        mechs = tuple(cells.part(m)[1].noise_mechanism for m in ms)
        return _intervals.variance_answer(
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

    def widest(self, width: Width, n: int, radius: int) -> float:
        """Over the groups' moments (column_accuracy.widest_moments)."""
        return widest_moments(width, n, radius)


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
