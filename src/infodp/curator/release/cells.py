"""The answer of a reserved query: noise added to the exact aggregates, each output column
answered by its aggregate's rule (a visitor over the plan's outputs).

The path, in order: the released cells (declared keys, or the groups the data holds under
partition selection), the noisy value of every measurement in every cell (exact aggregate +
noise drawn by :func:`draw_cell_noise`, independent of the data), DP partition selection on
the noisy COUNT(*) when the keys are not declared (Korolova et al. 2009; Wilson et al. 2020),
the exponential mechanism's grid point per quantile cell, then one column per output: a
GROUP BY key, or ``rule.column(aggregate, cells)`` of the aggregate's rule
(:mod:`infodp.curator.rules`). Everything released is a function of the noisy values, the
declared schema and the priced cost (post-processing, Dwork & Roth 2014, Prop. 2.1).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from dataclasses import dataclass

from infodp.curator.answer.result import Released
from infodp.curator.backends.base import ExactAggregates
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.plan.grid import quantile_grid
from infodp.curator.plan.nodes import (
    Aggregate,
    GroupKey,
    Measurement,
    MeasurementKind,
    Output,
    PlanVisitor,
    Predicate,
    QueryPlan,
)
from infodp.curator.price.cost import MAX_CELLS, MeasurementCost, QueryCost, selection
from infodp.curator.price.layout import Key, Layout, declared_keys
from infodp.curator.release.noise import draw_noise, quantile_draws
from infodp.curator.rules import rule_for
from infodp.curator.rules.base import Cells, Interval, Value
from infodp.errors import InternalError
from infodp.mechanisms.sampling import RandomSource

__all__ = ["CellNoise", "Key", "Layout", "draw_cell_noise", "release"]

#: One output column: its values (group keys or aggregates) and intervals over the cells.
Column = tuple[Sequence[Value | str], Sequence[Interval]]

#: What every answer says its intervals leave out.
_NOTES = (
    "intervals cover the noise only: values were clamped to the declared bounds and "
    "snapped to a grid first, and that bias is not included",
)


#: What an answer of declared keys only says (GROUP BY without an aggregate; cost.plan_cost).
_FREE_KEYS = (
    "only declared (public) keys were released: nothing was measured and nothing was charged"
)


@dataclass(frozen=True, slots=True)
class CellNoise:
    """The noise drawn for the cells ``keys``: per measurement, its noise in each of them
    (in the order of ``keys``), or None for a quantile's (drawn per released group later).

    Kept by measurement, as it is drawn and as the release adds it to the exact values.
    """

    keys: Sequence[Key]
    columns: list[list[int] | None]

    def for_keys(self, keys: Sequence[Key]) -> list[list[int] | None]:
        """The columns over ``keys`` (those drawn for, in any order).

        >>> CellNoise([("a",), ("b",)], [[1, 2], None]).for_keys([("b",), ("a",)])
        [[2, 1], None]
        """
        if keys is self.keys or keys == self.keys:
            return self.columns
        at = {key: j for j, key in enumerate(self.keys)}
        pos = [at[key] for key in keys]
        return [None if c is None else [c[j] for j in pos] for c in self.columns]


class _Answering(PlanVisitor[list[Column]]):
    """The visitor that answers every output column over the released cells."""

    def __init__(self, layout: Layout, cells: Cells) -> None:
        self.layout, self.cells = layout, cells
        self.group_columns = [g.column for g in layout.plan.group_by]

    def visit_query_plan(self, node: QueryPlan) -> list[Column]:
        return [c for o in node.outputs for c in o.accept(self)]

    def visit_output(self, node: Output) -> list[Column]:
        if node.aggregate is not None:
            return node.aggregate.accept(self)
        keys = self.cells.keys
        column = node.group_column or ""
        declared = self.layout.key_columns.get(column)
        if declared is not None and keys is self.layout.keys:
            return [(list(declared), [None] * len(keys))]
        pos = self.group_columns.index(column)
        return [([key[pos] for key in keys], [None] * len(keys))]

    def visit_aggregate(self, node: Aggregate) -> list[Column]:
        return [rule_for(node).column(node, self.cells)]

    def visit_predicate(self, node: Predicate) -> list[Column]:
        raise InternalError("a WHERE node is not an output")

    def visit_group_key(self, node: GroupKey) -> list[Column]:
        raise InternalError("a GROUP BY key is not an output")


def draw_cell_noise(
    plan: QueryPlan, cost: QueryCost, source: RandomSource, keys: Sequence[Key] | None = None
) -> CellNoise:
    """Noise for every cell (``keys``, default: the declared ones) and non-quantile
    measurement, from the measurement's mechanism: one exact batch per measurement."""
    if keys is None:
        keys = declared_keys(plan) or [()]
    return CellNoise(keys, draw_noise(cost.parts, len(keys), source))


def _noisy_columns(
    parts: tuple[MeasurementCost, ...], exact: ExactAggregates, keys: list[Key], noise: CellNoise
) -> list[list[int | None]]:
    """Per measurement, exact value + drawn noise over the cells (None for a quantile's)."""
    if not keys:
        return [[] for _ in parts]
    zero: tuple[int | None, ...] = tuple(0 for _ in parts)
    found = list(zip(*map(exact.values.get, keys, itertools.repeat(zero, len(keys))), strict=True))
    drawn = noise.for_keys(keys)
    cols: list[list[int | None]] = []
    for i in range(len(parts)):
        ns = drawn[i]
        if ns is None:  # a quantile: drawn per released group later
            cols.append([None] * len(keys))
            continue
        fs = found[i]
        if None in fs:  # a group seen only by a quantile's histogram
            fs = tuple(f or 0 for f in fs)
        cols.append(list(map(operator.add, fs, ns)))
    return cols


def _select(
    cost: QueryCost, layout: Layout, keys: list[Key], cols: list[list[int | None]], notes: list[str]
) -> tuple[list[Key], list[list[int | None]]]:
    """DP partition selection: the groups whose noisy COUNT(*) reaches the threshold."""
    threshold = selection(cost).threshold()
    counts = cols[layout.index[Measurement(MeasurementKind.COUNT_ROWS)]]
    kept = [j for j, c in enumerate(counts) if (c or 0) >= threshold]
    notes.append(
        f"groups were chosen by DP partition selection: a group is released only when "
        f"its noisy COUNT(*) is at least {threshold}"
    )
    if len(kept) > MAX_CELLS:
        # The response size is capped; which groups are kept depends only on the released
        # (noisy) selection, so this is post-processing.
        kept = kept[:MAX_CELLS]
        notes.append(f"only the first {MAX_CELLS} selected groups (by key) are shown")
    return [keys[j] for j in kept], [[col[j] for j in kept] for col in cols]


def grid_draws(
    parts: tuple[MeasurementCost, ...],
    schema: DatasetSchema,
    exact: ExactAggregates,
    keys: Sequence[Key],
    source: RandomSource,
) -> dict[tuple[Key, int], int]:
    """The exponential mechanism's grid point for every (released group, quantile).

    Every point of the column's grid is a candidate, scored on both sides
    (:func:`~infodp.mechanisms.quantile.grid_quantile_law`; Δ = m·max(q, 1 − q), Dwork &
    Roth 2014, Thm 3.10); the draw picks a run of equally scored points with probability
    ∝ its length × exp(−ε·score/(2Δ)), then a point uniformly within it (Smith 2011).
    """
    out: dict[tuple[Key, int], int] = {}
    for i, p in enumerate(parts):
        m = p.measurement
        if p.additive or m.column is None or not keys:
            continue
        grid = quantile_grid(schema.column(m.column), m.q)
        hists = [exact.histograms.get((key, i)) for key in keys]
        js = quantile_draws(p, hists, grid.lo, grid.hi, source)
        for key, j in zip(keys, js, strict=True):
            out[(key, i)] = j
    return out


def _candidate_keys(layout: Layout, exact: ExactAggregates) -> list[Key]:
    """The cells a release considers: the declared keys, the groups the data holds (then
    chosen by partition selection), or the one cell of an ungrouped query."""
    if layout.keys is not None:
        return layout.keys
    if layout.plan.group_by:
        return sorted(exact.values)
    return [()]


def release(
    layout: Layout,
    cost: QueryCost,
    exact: ExactAggregates,
    source: RandomSource,
    noise: CellNoise | None = None,
) -> Released:
    """The released answer of ``layout``'s query from its exact aggregates (module docstring).

    ``noise``: drawn in advance for the declared cells (None: drawn here for the cells found).
    """
    plan, parts = layout.plan, layout.parts
    notes = list(_NOTES) if parts else [_FREE_KEYS]
    keys = _candidate_keys(layout, exact)
    if noise is None:  # cells known only now (partition selection): one batch each
        noise = draw_cell_noise(plan, cost, source, keys)
    cols = _noisy_columns(parts, exact, keys, noise)
    if plan.needs_partition_selection:
        keys, cols = _select(cost, layout, keys, cols, notes)
    draws = grid_draws(parts, layout.schema, exact, keys, source)
    rows: list[tuple[int | None, ...]] = list(zip(*cols, strict=True)) if keys else []
    if not parts:
        rows = [() for _ in keys]
    columns = plan.accept(_Answering(layout, layout.cells(keys, rows, cols, draws)))
    out_rows = list(zip(*(values for values, _ in columns), strict=True))
    out_cis = list(zip(*(cis for _, cis in columns), strict=True))
    if not plan.outputs:
        out_rows = out_cis = [() for _ in keys]
    return Released(layout.names, tuple(out_rows), tuple(out_cis), tuple(notes), tuple(rows))
