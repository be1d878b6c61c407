"""The free part of a query and its application to the released table.

A :class:`PostProcess` holds the SELECT items computed from the inner query's released
columns, the HAVING filter, the order and the limit. :meth:`PostProcess.apply` reads the
released table only (values, intervals, the noisy measurements per row), so it costs nothing
more (post-processing, Dwork & Roth 2014, Prop. 2.1).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from infodp.curator.released import Released
from infodp.curator.sql.post.enclosure import Interval, enclose
from infodp.curator.sql.post.terms import Term, Value, evaluate

__all__ = ["Item", "Ordering", "PostProcess"]


@dataclass(frozen=True, slots=True)
class Item:
    """One output column: its name (None: the inner column's own name) and its term."""

    name: str | None
    term: Term


@dataclass(frozen=True, slots=True)
class Ordering:
    """One ORDER BY key."""

    term: Term
    descending: bool
    nulls_first: bool

    def key(self, rows: Sequence[Sequence[Value]], r: int) -> tuple[int, Value]:
        """Row ``r``'s sort key: NULLs first or last whatever the direction (the sort is
        reversed for DESC)."""
        v = evaluate(self.term, rows[r])
        if v is None:
            return (0 if self.nulls_first != self.descending else 2, 0)
        return (1, int(v) if isinstance(v, bool) else v)


@dataclass(frozen=True, slots=True)
class PostProcess:
    """What is computed from the released table, and how."""

    #: The aggregate query that is priced, charged and answered.
    inner_sql: str
    items: tuple[Item, ...]
    having: Term | None = None
    order: tuple[Ordering, ...] = ()
    limit: int | None = None
    offset: int = 0
    #: The inner columns that are noisy aggregates (the others are released group keys).
    noisy: frozenset[int] = frozenset()
    #: What else the answer says about how it was computed.
    remarks: tuple[str, ...] = ()

    def rows_kept(self, rows: Sequence[Sequence[Value]]) -> list[int]:
        """Which released rows are shown, in order: HAVING, ORDER BY, OFFSET, LIMIT."""
        having = self.having
        kept = [r for r in range(len(rows)) if having is None or evaluate(having, rows[r]) is True]
        for key in reversed(self.order):  # stable sorts, last key first
            kept.sort(key=functools.partial(key.key, rows), reverse=key.descending)
        kept = kept[self.offset :]
        return kept if self.limit is None else kept[: self.limit]

    def apply(self, released: Released, confidence: float) -> Released:
        """The released table after this post-processing (values, intervals, notes, rows)."""
        kept = self.rows_kept(released.rows)
        names = _distinct(
            released.columns[int(i.term.value or 0)] if i.name is None else i.name
            for i in self.items
        )
        rows = tuple(
            tuple(_value(evaluate(i.term, released.rows[r])) for i in self.items) for r in kept
        )
        intervals = tuple(
            tuple(_interval(i.term, released.rows[r], released.intervals[r]) for i in self.items)
            for r in kept
        )
        notes = (*released.notes, *self.notes(names, 1.0 - confidence))
        noisy = tuple(released.noisy[r] for r in kept) if released.noisy else ()
        return Released(names, rows, intervals, notes, noisy)

    def notes(self, names: Sequence[str], beta: float) -> list[str]:
        """What the post-processing did, and at what level each computed interval holds."""
        clauses = [
            name
            for name, used in (
                ("HAVING", self.having is not None),
                ("ORDER BY", bool(self.order)),
                ("LIMIT/OFFSET", self.limit is not None or self.offset > 0),
            )
            if used
        ]
        out = list(self.remarks)
        if clauses:
            out.append(
                f"{', '.join(clauses)} applied to the released (noisy) values after the noise: "
                "post-processing, at no further privacy cost"
            )
        for name, item in zip(names, self.items, strict=True):
            if item.term.op == "ref" or not item.term.refs():
                continue  # a released column, or a constant
            k = len(item.term.refs() & self.noisy)
            out.append(
                f"{name} is computed from {k} released value(s) after the noise (free); its "
                "interval, where given, is the interval-arithmetic enclosure of theirs and "
                f"holds with probability at least 1 − {k}·β = {max(0.0, 1.0 - k * beta):.6g} "
                "(a union bound), not at the stated confidence; none is given when a "
                "denominator's interval contains 0 or an input has no numeric interval"
            )
        return out


def _distinct(names: Iterable[str]) -> tuple[str, ...]:
    """The names, a repeated one suffixed ``_1``, ``_2``, ... as DuckDB names repeated
    columns (``SELECT SUM(x), SUM(x)``).

    >>> _distinct(["SUM(x)", "SUM(x)", "n", "SUM(x)"])
    ('SUM(x)', 'SUM(x)_1', 'n', 'SUM(x)_2')
    """
    out: list[str] = []
    for name in names:
        k, candidate = 0, name
        while candidate in out:
            k += 1
            candidate = f"{name}_{k}"
        out.append(candidate)
    return tuple(out)


def _value(v: Value | bool) -> Value:
    return int(v) if isinstance(v, bool) else v


def _interval(term: Term, values: Sequence[Value], intervals: Sequence[Interval]) -> Interval:
    if term.op == "ref":
        return intervals[int(term.value or 0)]
    if not term.refs():
        return None  # a constant: exact
    box = enclose(term, values, intervals)
    return None if box is None else [box[0], box[1]]
