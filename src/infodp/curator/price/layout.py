"""What releasing a priced query needs that depends on the query only: its layout.

Computed once per priced query (and level β) and shared by the release
(:mod:`infodp.curator.release.cells`)
and the estimate before spending (:mod:`infodp.curator.price.estimate`): output names, the position
of
each measurement, the declared keys and the memos the rules keep across releases.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.plan.grid import ColumnGrid
from infodp.curator.plan.nodes import Measurement, QueryPlan
from infodp.curator.price.cost import MeasurementCost, QueryCost
from infodp.curator.rules.base import BoxMemo, Cells

__all__ = ["Key", "Layout", "declared_keys"]

#: A released cell's group key (``()`` without GROUP BY).
Key = tuple[str, ...]


def declared_keys(plan: QueryPlan) -> list[Key] | None:
    """Every declared cell of a grouped query (None without declared keys or GROUP BY)."""
    if plan.group_by and not plan.needs_partition_selection:
        return [tuple(k) for k in itertools.product(*(g.categories or () for g in plan.group_by))]
    return None


@dataclass(slots=True)
class Layout:
    """What releasing a priced query at one level β needs that depends on the query only:
    output names, measurement positions (by object), the declared keys, and the half-widths,
    grids and interval quantiles the rules remember across releases."""

    plan: QueryPlan
    schema: DatasetSchema
    parts: tuple[MeasurementCost, ...]
    beta: float
    names: tuple[str, ...] = ()
    index: dict[Measurement, int] = field(default_factory=dict)
    keys: list[Key] | None = None
    key_columns: dict[str, list[str]] = field(default_factory=dict)
    halfwidths: dict[tuple[int, float], int] = field(default_factory=dict)
    grids: dict[str, ColumnGrid] = field(default_factory=dict)
    box: BoxMemo = field(default_factory=dict)

    @classmethod
    def of(cls, plan: QueryPlan, schema: DatasetSchema, cost: QueryCost, beta: float) -> Layout:
        """The layout of ``plan`` priced at ``cost``, released at level ``beta``."""
        keys = declared_keys(plan)
        out = cls(plan, schema, cost.parts, beta, tuple(o.name for o in plan.outputs))
        out.index = {p.measurement: i for i, p in enumerate(cost.parts)}
        out.keys = keys
        if keys is not None:
            for pos, g in enumerate(plan.group_by):
                out.key_columns[g.column] = [k[pos] for k in keys]
        return out

    def cells(
        self,
        keys: Sequence[Key] = (),
        rows: Sequence[Sequence[int | None]] = (),
        cols: Sequence[Sequence[int | None]] = (),
        draws: dict[tuple[Key, int], int] | None = None,
    ) -> Cells:
        """The released cells as the rules read them (sharing this layout's memos)."""
        return Cells(
            self.parts,
            self.index,
            self.schema,
            self.beta,
            keys,
            rows,
            cols,
            draws or {},
            self.halfwidths,
            self.grids,
            self.box,
        )
