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
from decimal import Decimal
from fractions import Fraction

from infodp.curator.plan.nodes import Output
from infodp.errors import ParameterError

__all__ = ["planned_rows", "targets_by_column", "widest_mean", "widest_moments"]

#: Points per axis where the group's mean (second moment) is placed.
_POINTS = 33

#: One accuracy target: a half-width in the column's units, or a quantile's rank error.
Target = float | int | str | Fraction | Decimal
#: One target for every aggregate column, or one per column name.
Accuracy = Target | Mapping[str, Target]

#: ``width(s, q)`` → the half-width of the released interval of a group of the planned size
#: whose noisy centred sum is ``s`` and centred sum of squares ``q`` (grid units).
Width = Callable[[int, int], float]


def targets_by_column(outputs: Sequence[Output], accuracy: Accuracy) -> dict[str, Target]:
    """``{output column: target}`` from one target for every aggregate column or a mapping.

    >>> from infodp.curator.plan.nodes import Aggregate, Output
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
    out: dict[str, Target] = {}
    for key, target in accuracy.items():
        name = names.get(str(key).strip().lower())
        if name is None:
            raise ParameterError(
                "accuracy", key, f"an aggregate column of the query: {sorted(names.values())}"
            )
        out[name] = target
    return out


def planned_rows(name: str, rows: int | None) -> int:
    """The public group size an AVG/VARIANCE column is planned for (refused when missing)."""
    if rows is None:
        raise ParameterError(
            "rows",
            None,
            f"the number of rows per group to plan {name} for (a public assumption: "
            "the row count is private), e.g. --rows 1000",
        )
    return rows


def _means(n: int, radius: int) -> list[int]:
    """The centred sums of groups of ``n`` rows whose mean lies on _POINTS points of the range."""
    top = n * radius
    return sorted({round(-top + 2 * top * j / (_POINTS - 1)) for j in range(_POINTS)})


def widest_mean(width: Width, n: int, radius: int) -> float:
    """The widest half-width ``width(s, 0)`` of an AVG's interval over groups of ``n`` rows
    (centred sum s within ±n·radius): a grid of means, then a ternary search between the
    worst point's neighbours.

    >>> widest_mean(lambda s, q: 10.0 - abs(s - 7) / 100, 10, 50)
    10.0
    """
    means = _means(n, radius)
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


def widest_moments(width: Width, n: int, radius: int) -> float:
    """The widest half-width ``width(s, q)`` of a VARIANCE's interval over groups of ``n``
    rows: centred sums s on a grid and, for each, feasible sums of squares q from s²/n (all
    values equal) to n·r² (all at a bound).

    >>> widest_moments(lambda s, q: q / 100, 4, 3)
    0.36
    """
    top = n * radius
    found = 0.0
    for s in _means(n, radius)[::2]:
        least = s * s // n if n else 0
        for j in range(_POINTS // 2 + 1):
            found = max(found, width(s, least + (top * radius - least) * j // (_POINTS // 2)))
    return found
