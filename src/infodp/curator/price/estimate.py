"""Accuracy before spending: what an estimate shows per measurement, each output column's
planned half-width or rank error, and the least ε reaching a target (nothing read or spent).

Each answer comes from the rules (:mod:`infodp.curator.rules`): a measurement kind's
:meth:`~infodp.curator.rules.base.Measure.accuracy` (its one-cell half-width, or the rank
error of the exponential mechanism, Dwork & Roth 2014, Thm 3.11), an aggregate's
:meth:`~infodp.curator.rules.base.Rule.accuracy` (for AVG and VARIANCE the widest interval the
rule itself releases over groups of a public planning size). :func:`least_epsilon` is
accuracy-first planning (as OpenDP's ``summarize(alpha=…)`` and Tumult's error reports):
bisection on ε, as every half-width shrinks when ε grows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import cast

from infodp._exact import parse_exact
from infodp._jsonable import JsonObject
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.ledger import Budget
from infodp.curator.plan.nodes import Output, QueryPlan
from infodp.curator.price.cost import QueryCost
from infodp.curator.price.layout import Layout
from infodp.curator.request import Estimate, Priced
from infodp.curator.rules import measure_for, rule_for
from infodp.curator.rules.base import ColumnAccuracy, MeasurementAccuracy
from infodp.curator.rules.column_accuracy import Accuracy, targets_by_column
from infodp.errors import ParameterError

__all__ = [
    "column_accuracy",
    "estimate_of",
    "least_epsilon",
    "measurement_accuracy",
]


def measurement_accuracy(
    cost: QueryCost, schema: DatasetSchema, beta: float
) -> tuple[MeasurementAccuracy, ...]:
    """Per measurement of ``cost``, what an estimate shows at level 1 − β.

    >>> from infodp.curator.price.cost import plan_cost
    >>> from infodp.curator.declaration.source import load_schema
    >>> from infodp.curator.sql.parse import parse_query
    >>> s = load_schema({"table": "t", "privacy_unit": "row",
    ...                  "columns": {"x": {"type": "int", "bounds": [0, 10]}}})
    >>> c = plan_cost(parse_query("SELECT MIN(x) FROM t", s), s, Fraction(1), Fraction(0), 100)
    >>> [sorted(a) for a in measurement_accuracy(c, s, 0.05)]
    [['measurement', 'rank_error']]
    """
    return tuple(measure_for(p.measurement).accuracy(p, schema, beta) for p in cost.parts)


def column_accuracy(
    plan: QueryPlan, schema: DatasetSchema, cost: QueryCost, beta: float, rows: int | None
) -> list[ColumnAccuracy]:
    """Per aggregate column: ``{"column", "halfwidth"}`` of the interval released with it,
    or ``{"column", "rank_error"}`` for a quantile (``rows``: the planned group size)."""
    if rows is None and schema.public_rows is not None and not plan.group_by:
        rows = schema.public_rows
    if rows is not None and (not isinstance(rows, int) or isinstance(rows, bool) or rows < 1):
        raise ParameterError("rows", rows, "a whole number of rows per group, at least 1")
    cells = Layout.of(plan, schema, cost, beta).cells()
    out: list[ColumnAccuracy] = []
    for o in plan.outputs:
        if o.aggregate is not None:
            planned = rule_for(o.aggregate).accuracy(o.aggregate, cells, rows, o.name)
            out.append({"column": o.name, **planned})
    return out


def least_epsilon(
    outputs: Sequence[Output],
    accuracy: Accuracy,
    accuracy_at: Callable[[Fraction], list[ColumnAccuracy]],
) -> Fraction:
    """The least ε (3 significant digits, rounded up) at which every targeted column's
    planned accuracy (``accuracy_at(ε)``) is within its target."""
    targets = {}
    for name, value in targets_by_column(outputs, accuracy).items():
        target = parse_exact("accuracy", value)
        if not target > 0:
            raise ParameterError("accuracy", value, "a positive half-width")
        targets[name] = target

    def ok(eps: Fraction) -> bool:
        return all(
            Fraction(a.get("halfwidth", a.get("rank_error", 0.0))) <= targets[a["column"]]
            for a in accuracy_at(eps)
            if a["column"] in targets
        )

    hi = Fraction(1)
    while not ok(hi):
        hi *= 2
        if hi > 10**6:
            raise ParameterError("accuracy", accuracy, "a half-width reachable with ε ≤ 1e6")
    lo = hi / 2
    while ok(lo):
        hi, lo = lo, lo / 2
        if lo < Fraction(1, 10**9):
            return hi
    for _ in range(40):  # hi is always feasible
        if (hi - lo) / hi < Fraction(1, 1000):
            break
        mid = (lo + hi) / 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    digits = Fraction(10) ** (2 - math.floor(math.log10(float(hi))))
    return Fraction(math.ceil(hi * digits)) / digits


def estimate_of(priced: Priced, confidence: float, budget: Budget | None = None) -> Estimate:
    """Cost and accuracy of a priced query at level ``confidence``; with the analyst's
    ``budget``, whether it fits there by the accountant's dry run (the check the ledger's
    charge makes, every currency). Nothing is spent and no data is read."""
    cost, beta = priced.cost, 1.0 - confidence
    fits = (
        None if budget is None else budget.can_spend(priced.profile_spec, cost.epsilon, cost.delta)
    )
    accuracy = measurement_accuracy(cost, priced.schema, beta)
    return Estimate(
        {**cost.to_dict(), "leakage": priced.leakage.to_dict()},
        # A MeasurementAccuracy holds text and floats only: a JSON object.
        tuple(cast(JsonObject, dict(a)) for a in accuracy),
        confidence,
        cost.cells,
        budget,
        fits,
    )
