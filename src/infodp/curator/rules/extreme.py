"""MIN and MAX: the extreme quantiles (q = 0 and q = 1) of the same grid exponential mechanism.

There is no useful DP minimum with bounded error in value: one unit can move the exact
minimum anywhere within the declared bounds. What can be released is a point with few rows
beyond it, in rank (Smith 2011, "Privacy-preserving statistical estimation with optimal
convergence rates", the exponential mechanism over ranks; Dwork & Roth 2014, Thm 3.11 for its
error). MIN(x) is the q = 0 quantile: the two-sided score of a grid point c is
max(L − 0·n, 0·n − (L + E), 0) = L, the number of rows strictly below c
(:func:`~infodp.mechanisms.quantile.grid_quantile_law`), of sensitivity m (one unit's rows).
So with probability ≥ 1 − β **at most r rows lie below the released MIN**, r the rank error;
that is all it promises: every grid point at or below the true minimum scores 0, so the
answer may lie anywhere from the declared lower bound up to the (r + 1)-th smallest value —
with data far above the lower bound, MIN is often well below the true minimum. MAX is
symmetric (q = 1: at most r rows lie above it; it may lie up to the declared upper bound).
Tumult Analytics answers min and max the same way, as the quantiles 0 and 1
(``tmlt.analytics.query_builder.GroupedQueryBuilder.min``/``max`` call ``quantile(…, 0)``
and ``quantile(…, 1)``; version 0.21).

Both use only the quantile histogram measurement (``quantile(x,0)`` / ``quantile(x,1)``),
shared with an explicit ``QUANTILE(x, 0)`` / ``QUANTILE(x, 1)``.

>>> from infodp.curator.plan import Aggregate
>>> [m.key for m in MIN.needs(Aggregate("min", "x")) + MAX.needs(Aggregate("max", "x"))]
['quantile(x,0)', 'quantile(x,1)']
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, ClassVar

from sqlglot import exp

from infodp.curator.plan import Aggregate, AggregateFunc
from infodp.curator.rules.quantile import QuantileRule

if TYPE_CHECKING:
    from infodp.curator.rules.base import Parsing

__all__ = ["MAX", "MIN"]


#: Each end: sqlglot's node, the extreme quantile and the words of the promise its rank error
#: makes (the side the rows lie on, and how far the answer may be from the true extreme).
_ENDS = {
    AggregateFunc.MIN: (exp.Min, 0, ("below", "at most", "bottom", "minimum", "down", "lower")),
    AggregateFunc.MAX: (exp.Max, 1, ("above", "at least", "top", "maximum", "up", "upper")),
}


def _end(func: AggregateFunc) -> tuple[type[exp.Expr], Fraction, str]:
    """The node, quantile and rank-error note of MIN or MAX."""
    node, q, (side, bound, end, extreme, toward, limit) = _ENDS[func]
    note = (
        f"at most rank_error rows lie {side} the answer (it is {bound} the value of rank "
        f"rank_error + 1 from the {end}); it may be far {side} the true {extreme}, {toward} to "
        f"the declared {limit} bound (the extreme quantile q = {q})"
    )
    return node, Fraction(q), note


class MinRule(QuantileRule):
    """MIN(column): the q = 0 quantile, with at most rank_error rows below it."""

    func: ClassVar[AggregateFunc] = AggregateFunc.MIN
    sql_names = ("MIN",)
    node: ClassVar[type[exp.Expr]]
    extreme: ClassVar[Fraction]
    node, extreme, note = _end(func)

    def parse(self, node: exp.Expr, sql: Parsing) -> Aggregate | None:
        """``MIN(column)`` of a bounded column (one argument, no DISTINCT)."""
        if type(node) is not self.node:
            return None
        name = self.sql_names[0]
        if isinstance(node.this, exp.Distinct) or node.expressions:
            raise sql.refuse(f"{name} with DISTINCT or several arguments", f"use {name}(column)")
        return Aggregate(self.func, sql.bounded(name, node.this).name)

    def q(self, agg: Aggregate) -> Fraction:
        """The extreme quantile (0 for MIN, 1 for MAX)."""
        return self.extreme


class MaxRule(MinRule):
    """MAX(column): the q = 1 quantile, with at most rank_error rows above it."""

    func: ClassVar[AggregateFunc] = AggregateFunc.MAX
    sql_names = ("MAX",)
    node, extreme, note = _end(func)


#: The MIN rule.
MIN = MinRule()
#: The MAX rule.
MAX = MaxRule()
