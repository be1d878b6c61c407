"""The released table: what a release returns before it is paired with its cost and the
remaining budget (:class:`infodp.curator.answer.result.QueryResult` is made from it), and what
post-processing (:mod:`infodp.curator.sql.post`) rewrites. It sits below both, so neither imports
the other for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from infodp.curator.sql.post.enclosure import Interval

__all__ = ["Cell", "Released"]

#: A released cell: a group key (text or number), a noisy aggregate, or None (no value).
Cell: TypeAlias = str | int | float | None


@dataclass(frozen=True, slots=True)
class Released:
    """What :meth:`Curator.run_reserved` returns: the released table before it is paired with
    its cost and the remaining budget (a :class:`~infodp.curator.answer.result.QueryResult` is made
    from it)."""

    #: Output column names, in SELECT order.
    columns: tuple[str, ...]
    #: The released rows (group keys and noisy aggregates).
    rows: tuple[tuple[Cell, ...], ...]
    #: Per row and column, the interval (or the quantile's rank error; None for a key).
    intervals: tuple[tuple[Interval, ...], ...]
    #: What the intervals do and do not cover, and how groups were chosen.
    notes: tuple[str, ...]
    #: Per released row, the noisy measurements before any post-processing.
    noisy: tuple[tuple[int | None, ...], ...]
