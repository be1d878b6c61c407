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

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp.curator.plan import Predicate
from infodp.curator.schema import DatasetSchema
from infodp.curator.sql import INT_GROUP_MAX_KEYS, parse_query
from infodp.errors import ParameterError
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

    def to_spec(self) -> dict[str, Any]:
        """Metadata stored in the ledger."""
        return {
            "dataset": self.dataset,
            "columns": list(self.columns),
            "keys": [list(k) for k in self.keys],
            "scale": self.scale,
            "epsilon": self.epsilon,
        }

    @classmethod
    def from_stored(cls, name: str, spec: dict[str, Any], data: dict[str, Any]) -> Synopsis:
        """Rebuild from the ledger's stored spec and data."""
        return cls(
            name,
            spec["dataset"],
            tuple(spec["columns"]),
            tuple(tuple(k) for k in spec["keys"]),
            tuple(int(c) for c in data["counts"]),
            float(spec["scale"]),
            float(spec["epsilon"]),
        )

    def _cells(self) -> list[tuple[str, ...]]:
        return list(itertools.product(*self.keys))

    def answer(self, sql: str, schema: DatasetSchema, confidence: float = 0.95) -> dict[str, Any]:
        """Answer ``sql`` (COUNT(*), SUM/AVG of an int synopsis column, WHERE and GROUP BY on
        synopsis columns) from the noisy cells only: no data access, no privacy cost.
        """
        plan = parse_query(sql, schema)
        cols = {c.lower(): i for i, c in enumerate(self.columns)}
        for g in plan.group_by:
            if g.column.lower() not in cols:
                raise ParameterError(f"GROUP BY {g.column}: not a column of synopsis {self.name}")
        for agg in plan.aggregates:
            if agg.func not in ("count", "sum", "avg") or (
                agg.func == "count" and agg.column is not None
            ):
                raise ParameterError(
                    f"synopsis {self.name} answers COUNT(*), SUM and AVG only; got {agg.func}"
                )
            if agg.column is not None and agg.column.lower() not in cols:
                raise ParameterError(f"{agg.func}({agg.column}): not a column of {self.name}")
        n_groups = math.prod(len(self.keys[cols[g.column.lower()]]) for g in plan.group_by)
        work = len(self.counts) * (n_groups + _conditions(plan.where))
        if work > MAX_SYNOPSIS_WORK:
            raise ParameterError(
                "synopsis query",
                f"{len(self.counts)} cells × {n_groups} groups and conditions",
                f"at most {MAX_SYNOPSIS_WORK} cell evaluations (fewer groups or conditions)",
            )
        cells = self._cells()
        counts = np.asarray(self.counts, dtype=np.float64)
        mask = np.ones(len(cells), dtype=bool)
        if plan.where is not None:
            mask = np.array([_holds(plan.where, cell, cols) for cell in cells], dtype=bool)
        beta = 1.0 - confidence
        group_idx = [cols[g.column.lower()] for g in plan.group_by]
        group_keys = list(itertools.product(*(self.keys[i] for i in group_idx)))
        rows: list[list[Any]] = []
        intervals: list[list[Any]] = []
        for gk in group_keys:
            sel = mask.copy()
            for i, key in zip(group_idx, gk, strict=True):
                sel &= np.array([c[i] == key for c in cells], dtype=bool)
            row: list[Any] = []
            cis: list[Any] = []
            for out in plan.outputs:
                if out.aggregate is None:
                    row.append(gk[[g.column for g in plan.group_by].index(out.group_column or "")])
                    cis.append(None)
                    continue
                agg = out.aggregate
                if agg.func == "count":
                    w = sel.astype(np.float64)
                    h = chernoff_halfwidth(w[w != 0], self.scale, beta)
                    total = float(counts @ w)
                    row.append(round(total))
                    cis.append([total - h, total + h])
                    continue
                ci_col = cols[(agg.column or "").lower()]
                vals = np.array([float(c[ci_col]) for c in cells])
                w = np.where(sel, vals, 0.0)
                s = float(counts @ w)
                if agg.func == "sum":
                    h = chernoff_halfwidth(w[w != 0], self.scale, beta)
                    row.append(s)
                    cis.append([s - h, s + h])
                    continue
                wc = sel.astype(np.float64)
                c = float(counts @ wc)
                hs = chernoff_halfwidth(w[w != 0], self.scale, beta / 2)
                hc = chernoff_halfwidth(wc[wc != 0], self.scale, beta / 2)
                if not sel.any():
                    row.append(None)
                    cis.append(None)
                    continue
                lo_v, hi_v = float(vals[sel].min()), float(vals[sel].max())
                point = min(hi_v, max(lo_v, s / c)) if c > 0 else (lo_v + hi_v) / 2
                if c - hc <= 0:
                    cis.append([lo_v, hi_v])
                else:
                    r = [a / b for a in (s - hs, s + hs) for b in (c - hc, c + hc)]
                    cis.append([max(lo_v, min(r)), min(hi_v, max(r))])
                row.append(point)
            rows.append(row)
            intervals.append(cis)
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


def _holds(p: Predicate, cell: tuple[str, ...], cols: dict[str, int]) -> bool:
    if p.op == "and":
        return all(_holds(a, cell, cols) for a in p.args)
    if p.op == "or":
        return any(_holds(a, cell, cols) for a in p.args)
    if p.op == "not":
        return not _holds(p.args[0], cell, cols)
    if p.column is None or p.column.lower() not in cols:
        raise ParameterError(f"WHERE on column {p.column!r}, which is not in the synopsis")
    raw = cell[cols[p.column.lower()]]
    value: float | str
    try:
        value = float(raw)
        numeric = all(isinstance(v, (int, float)) for v in p.values)
    except ValueError:
        numeric = False
    if not numeric:
        value = raw
    vals: list[float | str] = [float(v) if numeric else str(v) for v in p.values]
    if p.op == "is null":
        return False
    if p.op == "is not null":
        return True
    if p.op == "in":
        return value in vals
    if p.op == "between":
        return bool(vals[0] <= value <= vals[1])  # type: ignore[operator]
    ops = {
        "=": lambda a, b: a == b,
        "<>": lambda a, b: a != b,
        "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b,
        ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b,
    }
    return bool(ops[p.op](value, vals[0]))
