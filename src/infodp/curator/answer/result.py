"""The records of one query's life: its reservation, what the release step returns, the answer.

A :class:`Reservation` is what the ledger has durably charged for and everything the release
needs (it pickles, so a worker process can run the release); :class:`Released` is the released
table; :class:`QueryResult` pairs it with the cost, the remaining budget and the privacy
summary, as an analyst receives it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.ledger import Budget
from infodp.curator.plan.nodes import QueryPlan
from infodp.curator.price.cost import Leakage, QueryCost
from infodp.curator.released import Cell, Released
from infodp.errors import InfodpError

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]
    import polars as pl

    # Annotations only: a query without post-processing never imports its module.
    from infodp.curator.sql.post import PostProcess
    from infodp.curator.sql.post.enclosure import Interval

    #: A released cell's interval: [low, high], a quantile's rank error (a mapping), or None.
    CellInterval: TypeAlias = Interval

__all__ = ["QueryResult", "Released", "Reservation", "StoreNotOpened"]


@dataclass(frozen=True, slots=True)
class QueryResult:
    """A released answer: rows, per-cell accuracy, cost, remaining budget, leakage."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    confidence_intervals: tuple[tuple[CellInterval, ...], ...]
    confidence: float
    cost: QueryCost
    remaining: Budget
    entry_id: int
    #: The privacy summary of the cost (frozen; shared by every answer of the priced query).
    leakage: Leakage = field(compare=False)
    notes: tuple[str, ...] = ()
    #: Per released row, the noisy measurements before any post-processing (counts are shown
    #: clamped at 0; a synopsis must keep these unclamped values for unbiased sums).
    noisy: tuple[tuple[int | None, ...], ...] = field(default=(), compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON payload of ``infodp query --json``."""
        # Any for callers who read into it (a JSON object of the shape documented there).
        return self._payload(lists=True)

    def _payload(self, *, lists: bool) -> dict[str, object]:
        """:meth:`to_dict`; with ``lists=False`` the columns, rows, intervals and notes stay
        the tuples they are (the same JSON, without a copy of every row)."""
        return {
            "columns": list(self.columns) if lists else self.columns,
            "rows": [list(r) for r in self.rows] if lists else self.rows,
            "confidence_intervals": (
                [list(r) for r in self.confidence_intervals] if lists else self.confidence_intervals
            ),
            "confidence": self.confidence,
            "cost": {**self.cost.to_dict(), "leakage": self.leakage.to_dict()},
            "remaining": self.remaining.to_dict(),
            "entry": self.entry_id,
            "notes": list(self.notes) if lists else self.notes,
        }

    def to_pandas(self) -> pd.DataFrame:
        """The released rows as a pandas DataFrame; intervals as ``<col>_low``/``<col>_high``."""
        from infodp.curator.answer.view import to_pandas

        return to_pandas(self)

    def to_polars(self) -> pl.DataFrame:
        """The released rows as a polars DataFrame; intervals as ``<col>_low``/``<col>_high``."""
        from infodp.curator.answer.view import to_polars

        return to_polars(self)

    def __repr__(self) -> str:
        from infodp.curator.answer.view import result_summary

        return result_summary(self)

    def _repr_html_(self) -> str:
        from infodp.curator.answer.view import result_html

        return result_html(self)


@dataclass(frozen=True, slots=True)
class Reservation:
    """A validated, priced query whose cost the ledger has reserved durably (entry ``entry``).

    Everything :meth:`Curator.run_reserved` needs, and nothing of the data; it pickles, so
    the release can run in another process over the same store.
    """

    analyst: str
    plan: QueryPlan
    schema: DatasetSchema
    unit_rows_ok: bool
    cost: QueryCost
    leakage: Leakage = field(compare=False)
    confidence: float = 0.95
    entry: int = 0
    #: What is computed from the released table afterwards (HAVING, ORDER BY, …), if any.
    post: PostProcess | None = None

    def finish(self, released: Released) -> Released:
        """The released table after this query's free post-processing (itself without any)."""
        return released if self.post is None else self.post.apply(released, self.confidence)


class StoreNotOpened(InfodpError):
    """The store could not be opened for a reserved query: nothing of the data was touched,
    and :meth:`Curator.finish` refunds the reservation."""
