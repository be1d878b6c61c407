"""How a released :class:`~infodp.curator.answer.result.QueryResult` looks: frames, text, HTML.

Everything here is post-processing of the released answer (no data, no budget). A column
``C`` with a confidence interval becomes three frame columns ``C``, ``C_low``, ``C_high``.
Numbers for people go through :func:`infodp._format.format_number`.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias

from infodp._format import format_interval, format_number, format_value

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]
    import polars as pl

    from infodp.curator.ledger import Budget
    from infodp.curator.price.cost import Leakage, QueryCost
    from infodp.curator.sql.post.enclosure import Interval

__all__ = [
    "Cell",
    "QueryResult",
    "result_html",
    "result_records",
    "result_summary",
    "to_pandas",
    "to_polars",
]

#: A released value: a group key, a number, or None (no value, or no interval bound).
Cell: TypeAlias = str | int | float | None


class QueryResult(Protocol):
    """What a view reads of a released answer (:class:`infodp.curator.answer.result.QueryResult`,
    whose methods call this module: named here as a protocol, the imports stay one-way)."""

    @property
    def columns(self) -> tuple[str, ...]: ...

    @property
    def rows(self) -> tuple[tuple[Cell, ...], ...]: ...

    @property
    def confidence_intervals(self) -> tuple[tuple[Interval, ...], ...]: ...

    @property
    def confidence(self) -> float: ...

    @property
    def cost(self) -> QueryCost: ...

    @property
    def remaining(self) -> Budget: ...

    @property
    def leakage(self) -> Leakage: ...


def _has_interval(result: QueryResult, j: int) -> bool:
    return any(
        isinstance(c, (list, tuple)) and len(c) == 2
        for ci in result.confidence_intervals
        if j < len(ci)
        for c in [ci[j]]
    )


def result_records(result: QueryResult) -> dict[str, list[Cell]]:
    """Column name → values, with ``<name>_low``/``<name>_high`` after each interval column."""
    out: dict[str, list[Cell]] = {}
    for j, name in enumerate(result.columns):
        out[name] = [row[j] for row in result.rows]
        if _has_interval(result, j):
            cis: list[Sequence[Cell]] = [
                c if isinstance(c, (list, tuple)) else (None, None)
                for ci in result.confidence_intervals
                for c in [ci[j] if j < len(ci) else None]
            ]
            out[f"{name}_low"] = [c[0] for c in cis]
            out[f"{name}_high"] = [c[1] for c in cis]
    return out


def to_pandas(result: QueryResult) -> pd.DataFrame:
    """The released rows as a pandas DataFrame (intervals as ``_low``/``_high`` columns)."""
    import pandas as pd

    return pd.DataFrame(result_records(result))


def to_polars(result: QueryResult) -> pl.DataFrame:
    """The released rows as a polars DataFrame (intervals as ``_low``/``_high`` columns)."""
    import polars as pl

    return pl.DataFrame(result_records(result), strict=False)


def _cell(result: QueryResult, i: int, j: int) -> tuple[str, str]:
    value = format_value(result.rows[i][j])
    ci = result.confidence_intervals[i][j] if i < len(result.confidence_intervals) else None
    if isinstance(ci, (list, tuple)) and len(ci) == 2:
        return value, format_interval(ci[0], ci[1])
    if isinstance(ci, dict):
        return value, format_value(ci)
    return value, ""


def _footer(result: QueryResult) -> str:
    bits = dict(result.leakage.bits).get("1")
    spent = format_number(float(result.cost.epsilon))
    left = format_number(float(result.remaining.remaining_epsilon))
    info = "" if bits is None else f", ≤ {format_number(bits)} bits per person (α = 1)"
    return f"ε {spent} spent{info}; ε {left} left"


def result_summary(result: QueryResult, max_rows: int = 10) -> str:
    """A few lines: the table with intervals, then cost and remaining budget."""
    n = len(result.rows)
    shown = min(n, max_rows)
    level = format_number(100 * result.confidence)
    header = list(result.columns)
    cells: list[list[str]] = [header]
    for i in range(shown):
        row = []
        for j in range(len(header)):
            v, ci = _cell(result, i, j)
            row.append(f"{v} {ci}" if ci else v)
        cells.append(row)
    widths = [max(len(r[j]) for r in cells) for j in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    more = f" (first {shown} of {n} rows)" if shown < n else ""
    return "\n".join([f"QueryResult: {n} rows, {level}% intervals{more}", *lines, _footer(result)])


def result_html(result: QueryResult, max_rows: int = 50) -> str:
    """An HTML table (values with their intervals) for notebooks."""
    esc = html.escape
    level = format_number(100 * result.confidence)
    head = "".join(f"<th>{esc(c)}</th>" for c in result.columns)
    body = []
    for i in range(min(len(result.rows), max_rows)):
        tds = []
        for j in range(len(result.columns)):
            v, ci = _cell(result, i, j)
            extra = f' <span style="color:#666">{esc(ci)}</span>' if ci else ""
            tds.append(f"<td>{esc(v)}{extra}</td>")
        body.append("<tr>" + "".join(tds) + "</tr>")
    return (
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        f"<p><small>{len(result.rows)} rows; {level}% intervals cover the noise; "
        f"{esc(_footer(result))}</small></p>"
    )
