"""MEDIAN and QUANTILE: the exponential mechanism over the column's grid.

Recognised as sqlglot parses them: ``MEDIAN(x)``, ``QUANTILE(x, q)``, ``APPROX_QUANTILE``,
``PERCENTILE_CONT``/``PERCENTILE_DISC`` (``q`` a number literal in [0, 1]) and DuckDB's
``QUANTILE_CONT``/``QUANTILE_DISC`` (plain calls in sqlglot's generic dialect). Every point of
the column's grid is a candidate, scored on both sides of it
(:func:`~infodp.mechanisms.quantile.grid_quantile_law`): the score changes by at most
Δ = m·max(q, 1 − q) when one unit's m rows are added or removed
(:func:`~infodp.mechanisms.quantile.score_sensitivity`), so the draw is ε-DP (McSherry &
Talwar 2007; Dwork & Roth 2014, Thm 3.10). The histogram measurement's sensitivity is m, the
information one cell releases at most ln(#candidates) (its output is one of them), and the
accuracy is the rank error of :func:`rank_error` (Dwork & Roth 2014, Thm 3.11).

>>> from infodp.curator.plan.nodes import Aggregate
>>> [m.key for m in QUANTILE.needs(Aggregate("quantile", "x", q=Fraction(1, 2)))]
['quantile(x,1/2)']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, ClassVar

from sqlglot import exp

from infodp._exact import parse_exact
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.plan.grid import quantile_candidates, quantile_grid
from infodp.curator.plan.nodes import Aggregate, AggregateFunc, Measurement, MeasurementKind
from infodp.curator.rules.base import (
    Cells,
    ColumnAccuracy,
    Interval,
    Measure,
    MeasurementAccuracy,
    Priced,
    RankError,
    Rule,
    Value,
    column_of,
)
from infodp.errors import InternalError, ParameterError

if TYPE_CHECKING:
    from infodp.curator.rules.base import Parsing

__all__ = [
    "QUANTILE",
    "QUANTILE_MEASURE",
    "QuantileRule",
    "extreme_note",
    "rank_error",
    "stated_rank_error",
]

#: The note a quantile's rank error carries.
_NOTE = (
    "at most q·n + rank_error rows lie below the answer and at most (1 − q)·n + rank_error above it"
)

#: The words of the promise MIN (q = 0) and MAX (q = 1) make: the side the rows lie on, the
#: comparison, the end ranks count from, the extreme, the declared bound beyond it.
_ENDS = {
    0: ("below", "at most", "bottom", "minimum", "lower"),
    1: ("above", "at least", "top", "maximum", "upper"),
}


def extreme_note(q: Fraction, target: int) -> str:
    """What the rank error of MIN (q = 0) or MAX (q = 1) promises, aiming at rank ``target``.

    >>> extreme_note(Fraction(0), 16)[:60]
    'at most rank_error rows lie below the answer (it is at most '
    """
    side, bound, end, extreme, limit = _ENDS[int(q)]
    return (
        f"at most rank_error rows lie {side} the answer (it is {bound} the value of rank "
        f"rank_error + 1 from the {end}); the draw aims at the value of rank {target} from the "
        f"{end} (at most half the rows: the median of a group of fewer than {2 * target}), so "
        f"it usually lies a little "
        f"inside the true {extreme}, and with small probability beyond it, as far as the "
        f"declared {limit} bound (the extreme quantile q = {q})"
    )


def rank_error(sensitivity: Fraction | int, epsilon: Fraction, k: int, beta: float) -> float:
    """The exponential mechanism's rank error over a grid of k + 1 points at level β, rounded up:
    the least r with P(score > r) ≤ β for *every* dataset, r = (2Δ/ε)·ln(k(1 − β)/β).

    The argument of Dwork & Roth 2014, Theorem 3.11, with its denominator kept: some point
    scores 0 (the data's q-quantile, a grid point; weight 1), and each of the other k points
    scoring more than r weighs less than w = exp(−ε·r/(2Δ)), so P(score > r) < k·w/(1 + k·w),
    which is β at the r above. The bound is attained: with all n rows on one grid point and
    (1 − q)·n just below r, every other point scores (1 − q)·n (or q·n), so no smaller
    statement that depends on public facts only (ε, Δ, the grid) can hold for every
    dataset (tests/curator/test_rank_error.py). It is Theorem 3.11's
    (2Δ/ε)(ln(k + 1) + ln(1/β)) less (2Δ/ε)(ln((k + 1)/k) + ln(1/(1 − β))). The two-sided
    score bounds both rank violations (:func:`~infodp.mechanisms.quantile.grid_quantile_law`),
    so with probability 1 − β at most q·n + r rows lie below the answer and (1 − q)·n + r
    above it. The float evaluation (a division, three logarithms, two sums and a product: a
    few ulps of each term) is raised by 10⁻¹² of the terms' magnitude, so reported accuracy
    is never optimistic.

    >>> r = rank_error(1, Fraction(1), 99, 0.05)
    >>> 2 * math.log(99 * 19) < r < 2 * (math.log(100) + math.log(20))
    True
    """
    if k <= 0:
        return 0.0  # one grid point: it is the answer, and scores 0
    scale = float(2 * Fraction(sensitivity) / Fraction(epsilon))
    terms = (math.log(k), math.log1p(-beta), -math.log(beta))
    value = scale * math.fsum(terms)
    margin = 1e-12 * scale * (sum(abs(t) for t in terms) + 1.0)
    return max(0.0, value + margin)


def _q(m: Measurement) -> Fraction:
    return m.q if m.q is not None else Fraction(1, 2)


def stated_rank_error(
    rows_per_unit: int, q: Fraction, epsilon: Fraction, k: int, beta: float
) -> float:
    """The rank error stated for the q-quantile over a grid of k + 1 points at level β.

    For 0 < q < 1 it is :func:`rank_error` (the draw aims at rank q·n). The extremes q = 0
    and 1 (MIN and MAX) aim at the rank t of
    :func:`~infodp.mechanisms.quantile.extreme_target` from the extreme (or n/2, if
    smaller), so at most t + r rows lie past the answer on that side, r = :func:`rank_error`.

    >>> half = Fraction(1, 2)
    >>> stated_rank_error(1, half, Fraction(1), 100, 0.05) == rank_error(half, 1, 100, 0.05)
    True
    >>> round(stated_rank_error(1, Fraction(0), Fraction(1), 100, 0.05) - rank_error(
    ...     1, Fraction(1), 100, 0.05))  # t = ⌈2(ln 101 + ln 20)⌉
    16
    """
    from infodp.mechanisms.quantile import extreme_target, score_sensitivity

    r = rank_error(score_sensitivity(rows_per_unit, q), epsilon, k, beta)
    return r + extreme_target(epsilon, rows_per_unit, k + 1) if q in (0, 1) else r


def measurement_rank_error(p: Priced, schema: DatasetSchema, beta: float) -> float:
    """The rank error of one quantile measurement at level β (over its column's grid)."""
    m = p.measurement
    k = quantile_candidates(schema.column(column_of_measurement(m)), m.q) - 1
    return stated_rank_error(p.sensitivity, _q(m), p.epsilon, k, beta)


def column_of_measurement(m: Measurement) -> str:
    """A quantile measurement's column."""
    if m.column is None:
        raise InternalError("quantile without a column")
    return m.column


class _Histogram(Measure):
    kind = MeasurementKind.QUANTILE

    def sensitivity(self, m: Measurement, schema: DatasetSchema) -> int:
        """m (the exponential mechanism scales it by max(q, 1 − q) when drawing)."""
        return schema.max_rows_per_unit

    def information(self, p: Priced, schema: DatasetSchema, rows: int | None) -> float:
        """ln(#candidates): the released point is one of the grid's hi − lo + 1 points."""
        if p.sensitivity == 0:
            return 0.0
        m = p.measurement
        return math.log(quantile_candidates(schema.column(column_of_measurement(m)), m.q))

    def accuracy(self, p: Priced, schema: DatasetSchema, beta: float) -> MeasurementAccuracy:
        """The rank error at level β."""
        return {
            "measurement": p.measurement.key,
            "rank_error": measurement_rank_error(p, schema, beta),
        }


#: The measurement kind of a quantile (a histogram of the column for the exponential mechanism).
QUANTILE_MEASURE: Measure = _Histogram()


def quantile_arg(node: exp.Expr | None) -> Fraction:
    """The literal q of a QUANTILE call, in [0, 1]."""
    if not isinstance(node, exp.Literal) or node.is_string:
        raise ParameterError(
            "quantile", None if node is None else node.sql(), "a number literal in [0, 1]"
        )
    q = parse_exact("quantile", node.this)
    if not 0 <= q <= 1:
        raise ParameterError("quantile", node.this, "a number in [0, 1]")
    return q


_CALLS = (exp.Quantile, exp.ApproxQuantile, exp.PercentileCont, exp.PercentileDisc)


class QuantileRule(Rule):
    """The q-quantile of a bounded column, answered on its grid with its rank error."""

    func: ClassVar[AggregateFunc] = AggregateFunc.QUANTILE
    sql_names: ClassVar[tuple[str, ...]] = ("MEDIAN", "QUANTILE")
    #: Each quantile is its own histogram statement, which reads the query's rows only.
    filterable: ClassVar[bool] = False
    #: What the rank error promises (shown with every released cell).
    note: ClassVar[str] = _NOTE

    def parse(self, node: exp.Expr, sql: Parsing) -> Aggregate | None:
        """MEDIAN, QUANTILE and the spellings sqlglot parses (module docstring)."""
        if isinstance(node, exp.Median):
            col = sql.bounded("MEDIAN", node.this)
            return Aggregate(AggregateFunc.QUANTILE, col.name, q=Fraction(1, 2))
        if isinstance(node, exp.WithinGroup):
            return self._within_group(node, sql)
        if isinstance(node, _CALLS):
            col = sql.bounded("QUANTILE", node.this)
            qnode = node.args.get("quantile") or node.args.get("expression")
            return Aggregate(AggregateFunc.QUANTILE, col.name, q=quantile_arg(qnode))
        if (
            isinstance(node, exp.Anonymous)
            and node.name.upper() in ("QUANTILE_CONT", "QUANTILE_DISC")
            and len(node.expressions) == 2
        ):
            # sqlglot's generic dialect leaves DuckDB's QUANTILE_CONT/DISC as plain calls.
            col = sql.bounded("QUANTILE", node.expressions[0])
            return Aggregate(AggregateFunc.QUANTILE, col.name, q=quantile_arg(node.expressions[1]))
        return None

    def _within_group(self, node: exp.WithinGroup, sql: Parsing) -> Aggregate | None:
        """The standard ordered-set form, ``PERCENTILE_CONT(q) WITHIN GROUP (ORDER BY col)``
        (also ``PERCENTILE_DISC``): the column is the one ORDER BY names. Both answer the
        same grid point (no interpolation between released values: the grid is the answer's
        resolution); DESC would ask for the 1 − q quantile and is refused as unclear."""
        call, order = node.this, node.expression
        keys = order.expressions if isinstance(order, exp.Order) else []
        if not isinstance(call, (exp.PercentileCont, exp.PercentileDisc)) or len(keys) != 1:
            return None
        if keys[0].args.get("desc"):
            raise ParameterError(
                "ORDER BY in WITHIN GROUP", "DESC", "ascending order (ask for the 1 − q quantile)"
            )
        col = sql.bounded("QUANTILE", keys[0].this)
        qnode = call.this if call.this is not None else call.args.get("expression")
        return Aggregate(AggregateFunc.QUANTILE, col.name, q=quantile_arg(qnode))

    def q(self, agg: Aggregate) -> Fraction:
        """The quantile ``agg`` asks for."""
        return agg.q if agg.q is not None else Fraction(1, 2)

    def needs(self, agg: Aggregate) -> tuple[Measurement, ...]:
        """The column's histogram for the q-quantile."""
        return (Measurement(MeasurementKind.QUANTILE, agg.column, self.q(agg)),)

    def answer(
        self, agg: Aggregate, cells: Cells, key: tuple[str, ...], row: Sequence[int | None]
    ) -> tuple[Value, Interval]:
        """The drawn grid point in column units and its rank error."""
        from infodp.mechanisms.quantile import extreme_target

        col = column_of(agg)
        i, p = cells.part(self.needs(agg)[0])
        q = self.q(agg)
        grid = quantile_grid(cells.schema.column(col), q)
        # The drawn grid point times the power-of-two step: exact in binary floating
        # point, so the release stays on the grid (no float noise; Mironov 2012).
        g = grid.step
        value: float | int = cells.draws[(key, i)] * g
        if cells.schema.column(col).type == "int":
            value = int(value)
        error = stated_rank_error(p.sensitivity, q, p.epsilon, grid.hi - grid.lo, cells.beta)
        note = self.note
        if q in (0, 1):
            note = extreme_note(q, extreme_target(p.epsilon, p.sensitivity, grid.hi - grid.lo + 1))
        return value, RankError(rank_error=error, grid=g, note=note)

    def accuracy(self, agg: Aggregate, cells: Cells, rows: int | None, name: str) -> ColumnAccuracy:
        """The rank error at level β."""
        p = cells.part(self.needs(agg)[0])[1]
        return {"rank_error": measurement_rank_error(p, cells.schema, cells.beta)}


#: The QUANTILE rule (MEDIAN is its q = 1/2).
QUANTILE = QuantileRule()
