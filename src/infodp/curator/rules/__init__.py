"""One rule per aggregate, the only dispatch on an aggregate's or a measurement's kind.

No module outside this package compares a kind with a particular kind
(``tests/curator/rules/test_one_dispatch.py`` parses them all): the rest of the curator reads
what a kind's rule says (``measure_for(m).additive``), the backends read the one shape each
:class:`~infodp.curator.plan.nodes.MeasurementKind` declares (``histogram``: a histogram per group,
not one value; they may not know the rules) and their reductions table, one entry per kind.

:data:`RULES` lists the aggregates of the safe SQL subset in the order the parser tries
them; :func:`rule_for` finds an aggregate's rule and :func:`measure_for` a measurement's
kind (its sensitivity, grid step, information and estimate accuracy). Adding an aggregate
is one module here (its rule), its entry in :data:`RULES` and its name in
:class:`~infodp.curator.plan.nodes.AggregateFunc`, and its test module (``tests/curator/rules/``):
parsing, pricing, answering, planning and the backends need no change when it is answered
from the existing measurement kinds (as MIN and MAX are, from the quantile histogram).

>>> from infodp.curator.plan.nodes import Aggregate
>>> rule_for(Aggregate("min", "x")).sql_names, allowed_names()
(('MIN',), 'COUNT, COUNT(DISTINCT column), SUM, AVG, VARIANCE, STDDEV, MEDIAN, QUANTILE, MIN, MAX')
"""

from __future__ import annotations

from infodp.curator.plan.nodes import (
    Aggregate,
    AggregateFunc,
    Measurement,
    MeasurementKind,
    QueryPlan,
)
from infodp.curator.rules.avg import AVG, CSUM_MEASURE
from infodp.curator.rules.base import Cells, Measure, Rule
from infodp.curator.rules.count import COUNT, COUNT_MEASURES
from infodp.curator.rules.count_distinct import COUNT_DISTINCT, DISTINCT_MEASURE
from infodp.curator.rules.extreme import MAX, MIN
from infodp.curator.rules.quantile import QUANTILE, QUANTILE_MEASURE
from infodp.curator.rules.sum import SUM, SUM_MEASURE
from infodp.curator.rules.variance import CSUMSQ_MEASURE, STDDEV, VARIANCE

__all__ = [
    "MEASURES",
    "RULES",
    "Cells",
    "Measure",
    "Rule",
    "allowed_names",
    "measure_for",
    "measurements",
    "rule_for",
]

#: Every aggregate's rule, in the order the parser tries them.
RULES: tuple[Rule, ...] = (COUNT, COUNT_DISTINCT, SUM, AVG, VARIANCE, STDDEV, QUANTILE, MIN, MAX)
#: Every measurement kind's rule.
MEASURES: dict[MeasurementKind, Measure] = {
    m.kind: m
    for m in (
        *COUNT_MEASURES,
        DISTINCT_MEASURE,
        SUM_MEASURE,
        CSUM_MEASURE,
        CSUMSQ_MEASURE,
        QUANTILE_MEASURE,
    )
}
_BY_FUNC: dict[AggregateFunc, Rule] = {r.func: r for r in RULES}


def rule_for(agg: Aggregate) -> Rule:
    """The rule that answers ``agg``."""
    return _BY_FUNC[agg.func]


def measurements(plan: QueryPlan) -> tuple[Measurement, ...]:
    """The distinct measurements a plan needs, in first-use order.

    Under partition selection (a GROUP BY key without declared categories) the first
    measurement is always COUNT(*): its noisy value decides which groups are released.

    >>> from infodp.curator.plan.nodes import Aggregate, Output, QueryPlan
    >>> p = QueryPlan("t", "", outputs=(Output("s", Aggregate("sum", "x")),
    ...                                  Output("a", Aggregate("avg", "x"))))
    >>> [m.key for m in measurements(p)]
    ['sum(x)', 'csum(x)', 'count(x)']
    """
    seen: dict[Measurement, None] = {}
    if plan.needs_partition_selection:
        seen[Measurement(MeasurementKind.COUNT_ROWS)] = None
    for agg in plan.aggregates:
        seen.update(dict.fromkeys(rule_for(agg).needs(agg)))
    return tuple(seen)


def measure_for(m: Measurement) -> Measure:
    """The rule of ``m``'s kind."""
    return MEASURES[m.kind]


def allowed_names() -> str:
    """The SQL aggregate names the safe subset accepts (for refusals)."""
    return ", ".join(name for r in RULES for name in r.sql_names)
