"""Accuracy per output column: the interval the analyst reads, not the measurements behind it.

A COUNT or SUM column is one noisy measurement, so its half-width is the mechanism's own. An
AVG is released from two measurements (a centred sum and a count) and VARIANCE/STDDEV from
three; their interval is the engine's own (the function that answers each released cell, so
planning and release cannot disagree), and it depends on the group's row count and values,
which are private. Planning therefore takes one public assumption, ``rows``: the number of
rows in a group. Over groups of that size it takes the widest interval as the group's values
range over the declared bounds: the mean (and, for VARIANCE/STDDEV, the second moment) on a
grid of points, the AVG's worst point then refined by a ternary search between its grid
neighbours. A quantile's accuracy is its rank error (Dwork & Roth 2014, Theorem 3.11).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from infodp.curator.grid import column_grid
from infodp.curator.plan import Aggregate, Output
from infodp.curator.schema import DatasetSchema
from infodp.errors import ParameterError

__all__ = ["RATIO_AGGREGATES", "column_halfwidth", "targets_by_column"]

#: Aggregates whose interval depends on the group's size (planned for ``rows`` rows).
RATIO_AGGREGATES = frozenset({"avg", "variance", "stddev"})

#: Points per axis where the group's mean (second moment) is placed.
_POINTS = 33

#: ``interval(aggregate, noisy_row)`` → (value, [low, high]): the engine's interval of one cell
#: for a row of noisy measurement values (grid units, in measurement order).
Interval = Callable[[Aggregate, Sequence[int | None]], tuple[Any, Any]]


def targets_by_column(outputs: Sequence[Output], accuracy: Any) -> dict[str, Any]:
    """``{output column: target}`` from one target for every aggregate column or a mapping.

    >>> from infodp.curator.plan import Aggregate, Output
    >>> outs = [Output("region", None, "region"), Output("AVG(income)", Aggregate("avg", "income"))]
    >>> targets_by_column(outs, 10)
    {'AVG(income)': 10}
    >>> targets_by_column(outs, {"avg(income)": 5})
    {'AVG(income)': 5}
    """
    names = {o.name.lower(): o.name for o in outputs if o.aggregate is not None}
    if not names:
        raise ParameterError("sql", None, "a query with at least one aggregate column")
    if not isinstance(accuracy, Mapping):
        return {name: accuracy for name in names.values()}
    out: dict[str, Any] = {}
    for key, target in accuracy.items():
        name = names.get(str(key).strip().lower())
        if name is None:
            raise ParameterError(
                "accuracy", key, f"an aggregate column of the query: {sorted(names.values())}"
            )
        out[name] = target
    return out


def column_halfwidth(
    output: Output,
    schema: DatasetSchema,
    index: Mapping[str, int],
    interval: Interval,
    rows: int | None,
) -> float:
    """The widest half-width of ``output``'s interval over groups of ``rows`` rows (AVG,
    VARIANCE, STDDEV; the others do not call this)."""
    agg = output.aggregate
    if agg is None or agg.column is None or agg.func not in RATIO_AGGREGATES:
        raise ParameterError("output", output.name, "an AVG, VARIANCE or STDDEV column")
    if rows is None:
        raise ParameterError(
            "rows",
            None,
            f"the number of rows per group to plan {output.name} for (a public assumption: "
            "the row count is private), e.g. --rows 1000",
        )
    n = rows
    radius = column_grid(schema.column(agg.column)).radius
    size = len(index)
    cols = (f"count({agg.column})", f"csum({agg.column})", f"csumsq({agg.column})")

    def width(s: int, q: int) -> float:
        row: list[int | None] = [None] * size
        for key, value in zip(cols, (n, s, q), strict=True):
            if key in index:
                row[index[key]] = value
        _, (low, high) = interval(agg, row)
        return (float(high) - float(low)) / 2

    top = n * radius
    means = sorted({round(-top + 2 * top * j / (_POINTS - 1)) for j in range(_POINTS)})
    if agg.func == "avg":
        widths = [width(s, 0) for s in means]
        best = max(range(len(means)), key=widths.__getitem__)
        lo, hi = means[max(0, best - 1)], means[min(len(means) - 1, best + 1)]
        found = widths[best]
        while hi - lo > 2:  # ternary search between the worst grid point's neighbours
            m1, m2 = lo + (hi - lo) // 3, hi - (hi - lo) // 3
            w1, w2 = width(m1, 0), width(m2, 0)
            found = max(found, w1, w2)
            if w1 < w2:
                lo = m1
            else:
                hi = m2
        return max(found, *(width(s, 0) for s in range(lo, hi + 1)))
    found = 0.0
    for s in means[::2]:
        # Feasible second moments of n values within the bounds: from s²/n (all equal) to n·r².
        least = s * s // n if n else 0
        for j in range(_POINTS // 2 + 1):
            q = least + (top * radius - least) * j // (_POINTS // 2)
            found = max(found, width(s, q))
    return found
