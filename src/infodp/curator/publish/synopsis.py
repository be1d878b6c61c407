"""Non-interactive release (Dwork & Roth 2014, "trusted curator"): publish a DP histogram once, then
answer any number of count / sum / average queries from it at no further privacy cost.

A synopsis is a noisy contingency table over declared columns (categories, or int columns with
bounds, one cell per value): exact discrete Laplace noise of scale m/ε on every cell, where m is
the most rows one unit may contribute — the cells are disjoint, so the whole table costs ε
(parallel composition, McSherry 2009, Thm 4). Every later answer is a function of the noisy
cells only, hence free (post-processing, Dwork & Roth 2014, Prop. 2.1).

Accuracy of an answer Σ_c w_c·(x_c + N_c): the noise Σ_c w_c N_c is bounded by a Chernoff
bound on the exact moment generating function of the discrete Laplace,
E[e^(tN)] = (1 − p)² / ((1 − p e^t)(1 − p e^(−t))) for |t| < 1/b, p = e^(−1/b):
P(|Σ w_c N_c| ≥ x) ≤ 2 exp(Σ_c ln E[e^(t w_c N)] − t x), minimised over t on a grid (any t
gives a valid bound, so the interval is never optimistic).

>>> round(chernoff_halfwidth([1.0] * 4, 10.0, 0.05), 1) > 2 * 10.0  # wider than one cell's
True
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp._jsonable import JsonObject, JsonValue
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.plan.nodes import (
    Aggregate,
    AggregateFunc,
    GroupKey,
    Output,
    PlanVisitor,
    Predicate,
    QueryPlan,
)
from infodp.curator.sql.parse import INT_GROUP_MAX_KEYS, parse_query
from infodp.errors import InternalError, ParameterError
from infodp.mechanisms.laplace import DiscreteLaplaceMechanism

__all__ = [
    "MAX_SYNOPSIS_CELLS",
    "MAX_SYNOPSIS_WORK",
    "Synopsis",
    "chernoff_halfwidth",
    "synopsis_keys",
]

#: Largest number of cells a synopsis may hold.
MAX_SYNOPSIS_CELLS = 20_000
#: Most (cells × (GROUP BY keys + WHERE conditions)) a free synopsis query may evaluate:
#: the answer costs no ε, so its CPU is bounded here, before any work.
MAX_SYNOPSIS_WORK = 4_000_000


def _log_mgf(u: npt.NDArray[np.float64], scale: float) -> npt.NDArray[np.float64]:
    """ln E[e^(uN)] for the discrete Laplace of ``scale`` (|u| < 1/scale), vectorised."""
    a = np.abs(u)
    log_p = -1.0 / scale
    # ln(1-p)^2 - ln(1 - p e^a) - ln(1 - p e^-a), with log1p/expm1 for accuracy.
    out: npt.NDArray[np.float64] = (
        2.0 * np.log(-np.expm1(log_p)) - np.log(-np.expm1(log_p + a)) - np.log(-np.expm1(log_p - a))
    )
    return out


def chernoff_halfwidth(weights: Sequence[float], scale: float, beta: float) -> float:
    """h with P(|Σ w_c N_c| ≥ h) ≤ β for iid discrete Laplace N_c of ``scale`` (see module).

    One unit weight reduces to the exact two-sided tail
    (:meth:`DiscreteLaplaceMechanism.halfwidth`).

    >>> chernoff_halfwidth([1.0], 10.0, 0.05) == DiscreteLaplaceMechanism(10.0).halfwidth(0.05) + 1
    True
    """
    w = np.abs(np.asarray([x for x in weights if x != 0], dtype=np.float64))
    if w.size == 0:
        return 0.0
    if w.size == 1:
        # P(|N| > k) ≤ β exactly; |wN| ≥ h with h = w(k + 1) has the same probability.
        return float(w[0]) * (DiscreteLaplaceMechanism(scale).halfwidth(beta) + 1)
    top = float(w.max())
    ts = np.linspace(1e-3, 0.999, 400) / (scale * top)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        totals = np.array([float(_log_mgf(t * w, scale).sum()) for t in ts])
        xs = (totals + math.log(2.0 / beta)) / ts
    xs = xs[np.isfinite(xs)]
    return float(xs.min()) * (1 + 1e-9) if xs.size else math.inf


def _conditions(p: Predicate | None) -> int:
    """Number of nodes of a WHERE tree (iteratively)."""
    n, stack = 0, [] if p is None else [p]
    while stack:
        node = stack.pop()
        n += 1
        stack.extend(node.args)
    return n


def _items(value: JsonValue) -> list[JsonValue]:
    if not isinstance(value, list):
        raise InternalError("a stored synopsis: a list was expected")
    return value


def _strings(value: JsonValue) -> tuple[str, ...]:
    items = _items(value)
    if not all(isinstance(v, str) for v in items):
        raise InternalError("a stored synopsis: a list of strings was expected")
    return tuple(str(v) for v in items)


def synopsis_keys(schema: DatasetSchema, columns: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """The declared keys of each synopsis column (categories, or every int in the bounds)."""
    out: list[tuple[str, ...]] = []
    for name in columns:
        col = schema.column(name)
        if col.type == "category" and col.categories is not None:
            out.append(col.categories)
        elif col.type == "int" and col.bounds is not None:
            low, high = int(col.bounds[0]), int(col.bounds[1])
            if high - low + 1 > INT_GROUP_MAX_KEYS:
                raise ParameterError(
                    f"columns.{name}", [low, high], f"at most {INT_GROUP_MAX_KEYS} int values"
                )
            out.append(tuple(str(v) for v in range(low, high + 1)))
        else:
            raise ParameterError(
                f"synopsis column {name!r} needs declared categories or int bounds "
                f"(it is declared as {col.type} without them)."
            )
    if math.prod(len(k) for k in out) > MAX_SYNOPSIS_CELLS:
        raise ParameterError("columns", list(columns), f"at most {MAX_SYNOPSIS_CELLS} cells")
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Synopsis:
    """A released noisy histogram: column names, their keys, noisy counts (row-major), scale."""

    name: str
    dataset: str
    columns: tuple[str, ...]
    keys: tuple[tuple[str, ...], ...]
    counts: tuple[int, ...]
    scale: float
    epsilon: float

    def to_spec(self) -> JsonObject:
        """Metadata stored in the ledger."""
        return {
            "dataset": self.dataset,
            "columns": list(self.columns),
            "keys": [list(k) for k in self.keys],
            "scale": self.scale,
            "epsilon": self.epsilon,
        }

    @classmethod
    def from_stored(cls, name: str, spec: JsonObject, data: JsonObject) -> Synopsis:
        """Rebuild from the ledger's stored spec and data (as :meth:`to_spec` wrote them).

        >>> s = Synopsis("h", "t", ("g",), (("a", "b"),), (3, 4), 2.0, 0.5)
        >>> Synopsis.from_stored("h", s.to_spec(), {"counts": [3, 4]}) == s
        True
        """
        scale, epsilon = spec.get("scale"), spec.get("epsilon")
        dataset, counts = spec.get("dataset"), data.get("counts")
        if not (
            isinstance(dataset, str)
            and isinstance(scale, (int, float))
            and isinstance(epsilon, (int, float))
            and isinstance(counts, list)
            and all(isinstance(c, int) for c in counts)
        ):
            raise InternalError(f"synopsis {name!r}: its stored record is not a histogram's")
        return cls(
            name,
            dataset,
            _strings(spec.get("columns")),
            tuple(_strings(k) for k in _items(spec.get("keys"))),
            tuple(int(c) for c in counts if isinstance(c, int)),
            float(scale),
            float(epsilon),
        )

    def _cells(self) -> list[tuple[str, ...]]:
        return list(itertools.product(*self.keys))

    def answer(self, sql: str, schema: DatasetSchema, confidence: float = 0.95) -> dict[str, Any]:
        """Answer ``sql`` (COUNT(*), SUM/AVG of an int synopsis column, WHERE and GROUP BY on
        synopsis columns) from the noisy cells only: no data access, no privacy cost.
        """
        plan = parse_query(sql, schema)
        cols = {c.lower(): i for i, c in enumerate(self.columns)}
        self._check(plan, cols)
        answering = _Answering(self, cols, 1.0 - confidence)
        if plan.where is not None:
            answering.mask = plan.where.accept(_Where(self, cols))
        rows, intervals = plan.accept(answering)
        return {
            "columns": [o.name for o in plan.outputs],
            "rows": rows,
            "confidence_intervals": intervals,
            "confidence": confidence,
            "cost": {
                "epsilon": 0.0,
                "delta": 0.0,
                "information_nats": 0.0,
                "note": f"post-processing of synopsis {self.name}: free",
            },
            "synopsis": self.name,
        }

    def _check(self, plan: QueryPlan, cols: dict[str, int]) -> None:
        """Refuse what this synopsis cannot answer, and work beyond MAX_SYNOPSIS_WORK."""
        for g in plan.group_by:
            if g.derived is not None:  # its cells are not cells of the synopsis' table
                raise ParameterError(
                    f"GROUP BY {g.column}: a derived key (bins or CASE) is not answered from "
                    f"synopsis {self.name}; group by its declared columns, or ask the dataset"
                )
            if g.column.lower() not in cols:
                raise ParameterError(f"GROUP BY {g.column}: not a column of synopsis {self.name}")
        for agg in plan.aggregates:
            self._check_aggregate(agg, cols)
        n_groups = math.prod(len(self.keys[cols[g.column.lower()]]) for g in plan.group_by)
        work = len(self.counts) * (n_groups + _conditions(plan.where))
        if work > MAX_SYNOPSIS_WORK:
            raise ParameterError(
                "synopsis query",
                f"{len(self.counts)} cells × {n_groups} groups and conditions",
                f"at most {MAX_SYNOPSIS_WORK} cell evaluations (fewer groups or conditions)",
            )

    def _check_aggregate(self, agg: Aggregate, cols: dict[str, int]) -> None:
        if agg.func not in _ANSWERS or (agg.column is not None and agg.func in _OF_ROWS_ONLY):
            raise ParameterError(
                f"synopsis {self.name} answers COUNT(*), SUM and AVG only; got {agg.func}"
                + _REFUSAL_NOTES.get(agg.func, "")
            )
        if agg.where is not None:
            raise ParameterError(
                f"synopsis {self.name} does not answer an aggregate's FILTER (WHERE ...); put "
                "the condition in the query's WHERE"
            )
        if agg.column is not None and agg.column.lower() not in cols:
            raise ParameterError(f"{agg.func}({agg.column}): not a column of {self.name}")

    def _codes(self, i: int) -> npt.NDArray[np.intp]:
        """Per cell (row-major), the position of its key of column ``i``."""
        stride = math.prod(len(k) for k in self.keys[i + 1 :])
        return (np.arange(len(self.counts)) // stride) % len(self.keys[i])


#: A synopsis answer's cell: a group key, a count, a sum or an average (None: no cells).
Cell = str | int | float | None
#: Its interval (None for a group key or an empty average).
Bounds = list[float] | None
#: The rows and intervals of a synopsis answer (one output in one group: a 1 × 1 table).
Table = tuple[list[list[Cell]], list[list[Bounds]]]


class _Where(PlanVisitor[npt.NDArray[np.bool_]]):
    """A WHERE tree as a mask over the synopsis cells (each leaf judged once per key)."""

    def __init__(self, synopsis: Synopsis, cols: dict[str, int]) -> None:
        self.synopsis, self.cols = synopsis, cols

    def visit_predicate(self, node: Predicate) -> npt.NDArray[np.bool_]:
        if node.op in ("and", "or"):
            masks = [a.accept(self) for a in node.args]
            combine = np.logical_and if node.op == "and" else np.logical_or
            return functools.reduce(combine, masks)
        if node.op == "not":
            return ~node.args[0].accept(self)
        if node.column is None or node.column.lower() not in self.cols:
            raise ParameterError(f"WHERE on column {node.column!r}, which is not in the synopsis")
        i = self.cols[node.column.lower()]
        truth = np.array([_holds(node, raw) for raw in self.synopsis.keys[i]], dtype=bool)
        return truth[self.synopsis._codes(i)]

    def visit_query_plan(self, node: QueryPlan) -> npt.NDArray[np.bool_]:
        raise InternalError("a WHERE visitor walks predicates only")

    def visit_group_key(self, node: GroupKey) -> npt.NDArray[np.bool_]:
        raise InternalError("a WHERE visitor walks predicates only")

    def visit_output(self, node: Output) -> npt.NDArray[np.bool_]:
        raise InternalError("a WHERE visitor walks predicates only")

    def visit_aggregate(self, node: Aggregate) -> npt.NDArray[np.bool_]:
        raise InternalError("a WHERE visitor walks predicates only")


class _Answering(PlanVisitor[Table]):
    """The answer table: one row per group, each output answered over the group's cells
    (``mask``: the WHERE filter; ``sel`` the current group's cells)."""

    def __init__(self, synopsis: Synopsis, cols: dict[str, int], beta: float) -> None:
        self.synopsis, self.cols, self.beta = synopsis, cols, beta
        self.counts = np.asarray(synopsis.counts, dtype=np.float64)
        self.mask = np.ones(len(synopsis.counts), dtype=bool)
        self.sel = self.mask
        self.group: tuple[str, ...] = ()
        self.group_columns: list[str] = []

    def visit_query_plan(self, node: QueryPlan) -> Table:
        group_idx = [self.cols[g.column.lower()] for g in node.group_by]
        self.group_columns = [g.column for g in node.group_by]
        codes = [self.synopsis._codes(i) for i in group_idx]
        rows: list[list[Cell]] = []
        intervals: list[list[Bounds]] = []
        for gk in itertools.product(*(self.synopsis.keys[i] for i in group_idx)):
            self.group, self.sel = gk, self.mask.copy()
            for i, code, key in zip(group_idx, codes, gk, strict=True):
                self.sel &= code == self.synopsis.keys[i].index(key)
            answered = [o.accept(self) for o in node.outputs]
            rows.append([a[0][0][0] for a in answered])
            intervals.append([a[1][0][0] for a in answered])
        return rows, intervals

    def visit_output(self, node: Output) -> Table:
        if node.aggregate is not None:
            return node.aggregate.accept(self)
        return [[self.group[self.group_columns.index(node.group_column or "")]]], [[None]]

    def visit_aggregate(self, node: Aggregate) -> Table:
        value, bounds = _ANSWERS[node.func](self, node)
        return [[value]], [[bounds]]

    def visit_predicate(self, node: Predicate) -> Table:
        raise InternalError("the WHERE filter is the mask")

    def visit_group_key(self, node: GroupKey) -> Table:
        raise InternalError("GROUP BY keys are walked by visit_query_plan")

    def values(self, agg: Aggregate) -> npt.NDArray[np.float64]:
        """The aggregate's column value of every cell (0 outside the group)."""
        i = self.cols[(agg.column or "").lower()]
        keys = np.array([float(k) for k in self.synopsis.keys[i]])
        return np.where(self.sel, keys[self.synopsis._codes(i)], 0.0)

    def halfwidth(self, w: npt.NDArray[np.float64], beta: float) -> float:
        """The Chernoff half-width of Σ w_c N_c (module docstring)."""
        return chernoff_halfwidth(w[w != 0], self.synopsis.scale, beta)


def _count(a: _Answering, agg: Aggregate) -> tuple[Cell, Bounds]:
    w = a.sel.astype(np.float64)
    h = a.halfwidth(w, a.beta)
    total = float(a.counts @ w)
    return round(total), [total - h, total + h]


def _sum(a: _Answering, agg: Aggregate) -> tuple[Cell, Bounds]:
    w = a.values(agg)
    s = float(a.counts @ w)
    h = a.halfwidth(w, a.beta)
    return s, [s - h, s + h]


def _avg(a: _Answering, agg: Aggregate) -> tuple[Cell, Bounds]:
    """Noisy sum over noisy count, the interval from both sums' bounds at β/2 each (a union
    bound), within the group's smallest and largest key."""
    w, wc = a.values(agg), a.sel.astype(np.float64)
    s, c = float(a.counts @ w), float(a.counts @ wc)
    hs, hc = a.halfwidth(w, a.beta / 2), a.halfwidth(wc, a.beta / 2)
    if not a.sel.any():
        return None, None
    i = a.cols[(agg.column or "").lower()]
    present = np.array([float(k) for k in a.synopsis.keys[i]])[a.synopsis._codes(i)][a.sel]
    lo_v, hi_v = float(present.min()), float(present.max())
    point = min(hi_v, max(lo_v, s / c)) if c > 0 else (lo_v + hi_v) / 2
    if c - hc <= 0:
        return point, [lo_v, hi_v]
    r = [x / y for x in (s - hs, s + hs) for y in (c - hc, c + hc)]
    return point, [max(lo_v, min(r)), min(hi_v, max(r))]


#: The aggregates a synopsis answers, by function.
_ANSWERS: dict[AggregateFunc, Callable[[_Answering, Aggregate], tuple[Cell, Bounds]]] = {
    AggregateFunc.COUNT: _count,
    AggregateFunc.SUM: _sum,
    AggregateFunc.AVG: _avg,
}
#: Of those, the ones answered over rows only (COUNT(*), not COUNT(column)).
_OF_ROWS_ONLY = frozenset({AggregateFunc.COUNT})
#: Why an aggregate is refused, where the common refusal does not say it.
_REFUSAL_NOTES: dict[AggregateFunc, str] = {
    AggregateFunc.COUNT_DISTINCT: " (its histogram holds counts of cells, not distinct values)",
}

_COMPARE: dict[str, Callable[[float | str, float | str], bool]] = {
    "=": operator.eq,
    "<>": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _holds(p: Predicate, raw: str) -> bool:
    """Whether a leaf of a WHERE tree holds for a cell whose key (of its column) is ``raw``:
    compared as numbers when both sides are, as text otherwise. A synopsis key is never NULL.

    >>> _holds(Predicate("between", "age", (3, 5)), "4"), _holds(Predicate("in", "r", ("n",)), "s")
    (True, False)
    """
    if p.op in ("is null", "is not null"):
        return p.op == "is not null"
    value: float | str = raw
    try:
        value = float(raw)
        numeric = all(isinstance(v, (int, float)) for v in p.values)
    except ValueError:
        numeric = False
    if not numeric:
        value = raw
    vals: list[float | str] = [float(v) if numeric else str(v) for v in p.values]
    if p.op == "in":
        return value in vals
    if p.op == "between":
        return bool(vals[0] <= value <= vals[1])  # type: ignore[operator]
    return _COMPARE[p.op](value, vals[0])
