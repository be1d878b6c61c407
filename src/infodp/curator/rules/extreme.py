"""MIN and MAX: the extreme quantiles (q = 0 and q = 1), aimed just inside the extreme.

There is no useful DP minimum with bounded error in value: one unit can move the exact
minimum anywhere within the declared bounds. What can be released is a point with few rows
beyond it, in rank (Smith 2011, "Privacy-preserving statistical estimation with optimal
convergence rates", the exponential mechanism over ranks; Dwork & Roth 2014, Thm 3.11 for its
error). Scoring a grid point c by L = #{x < c} alone (the plain q = 0 quantile) scores every
point from the declared lower bound up to the true minimum 0, so the draw is nearly uniform
over them at every ε: with data far above the bound, MIN lands far below the true minimum
however much is spent (Tumult Analytics answers min and max that way, as the quantiles 0 and 1:
``tmlt.analytics.query_builder.GroupedQueryBuilder.min``/``max`` call ``quantile(…, 0)`` and
``quantile(…, 1)``; version 0.21).

So MIN aims at the rank t = ⌈(2m/ε)(ln K + ln 20)⌉ instead
(:func:`~infodp.mechanisms.quantile.extreme_target`, K grid points, m rows per unit): the
score of c is max(L − τ, τ − (L + E), 0), τ = min(t, n/2), E = #{x = c}
(:func:`~infodp.mechanisms.quantile.grid_quantile_law`), still of sensitivity m. Every
point below the true minimum then scores t, so by the exponential mechanism's utility
theorem (McSherry & Talwar 2007; Dwork & Roth 2014, Thm 3.11) the draw falls below the data
with probability at most 1/20 (for a group of ≥ 2t rows), and its error in value falls with ε
as t does. **With probability ≥ 1 − β at most t + r rows lie below the released MIN**, r the
rank error at level β: the stated ``rank_error`` is t + r. It is usually a little above the
true minimum (about t rows in), and may, with small probability, lie below it down to the
declared bound. MAX is symmetric (at most t + r rows above it). An explicit
``QUANTILE(x, 0)`` / ``QUANTILE(x, 1)`` is the same measurement and the same draw.

>>> from infodp.curator.plan.nodes import Aggregate
>>> [m.key for m in MIN.needs(Aggregate("min", "x")) + MAX.needs(Aggregate("max", "x"))]
['quantile(x,0)', 'quantile(x,1)']
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, ClassVar

from sqlglot import exp

from infodp.curator.plan.nodes import Aggregate, AggregateFunc
from infodp.curator.rules.quantile import QuantileRule

if TYPE_CHECKING:
    from infodp.curator.rules.base import Parsing

__all__ = ["MAX", "MIN"]


#: Each end: sqlglot's node and the extreme quantile.
_ENDS = {AggregateFunc.MIN: (exp.Min, 0), AggregateFunc.MAX: (exp.Max, 1)}


def _end(func: AggregateFunc) -> tuple[type[exp.Expr], Fraction]:
    """The node and quantile of MIN or MAX."""
    node, q = _ENDS[func]
    return node, Fraction(q)


class MinRule(QuantileRule):
    """MIN(column): the q = 0 quantile aimed at rank t; at most rank_error (t + r) rows lie
    below it with probability ≥ 1 − β (module docstring)."""

    func: ClassVar[AggregateFunc] = AggregateFunc.MIN
    sql_names = ("MIN",)
    node: ClassVar[type[exp.Expr]]
    extreme: ClassVar[Fraction]
    node, extreme = _end(func)

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
    """MAX(column): the q = 1 quantile aimed at rank t from the top; at most rank_error
    (t + r) rows lie above it with probability ≥ 1 − β."""

    func: ClassVar[AggregateFunc] = AggregateFunc.MAX
    sql_names = ("MAX",)
    node, extreme = _end(func)


#: The MIN rule.
MIN = MinRule()
#: The MAX rule.
MAX = MaxRule()
