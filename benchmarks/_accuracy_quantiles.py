"""The quantile part of the accuracy benchmark: MIN/MAX before and after, P90, rank error.

Used by ``benchmarks/accuracy.py``. Every "exact" number is computed from the mechanism's
exact law (:func:`~infodp.mechanisms.quantile.grid_quantile_law`: probability of each run of
grid points, uniform within it), so it carries no sampling error; "observed" numbers are
answers drawn through :class:`~infodp.curator.engine.Curator` / :class:`infodp.Session` with the
OS CSPRNG. *Before* is main's method, kept here as :func:`plain_extreme_law`: MIN and MAX as
the plain quantiles q = 0 and 1 (every point between the declared bound and the true extreme
scores 0).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from infodp.curator.rules.quantile import rank_error
from infodp.mechanisms.quantile import (
    GridQuantileLaw,
    extreme_target,
    grid_quantile_law,
    score_sensitivity,
)

QUANTILE_EPSILONS = (0.1, 1.0, 10.0)


def histogram(units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values, counts = np.unique(np.asarray(units, dtype=np.int64), return_counts=True)
    return values, counts.astype(np.int64)


def probabilities(law: GridQuantileLaw, epsilon: float, delta: Fraction) -> np.ndarray:
    """Each run's probability under the exponential mechanism (float weights)."""
    scores = np.array([int(s) for s in law.scores], dtype=np.float64) / law.denominator
    mults = law.mults.astype(np.float64)
    live = mults > 0
    gamma = epsilon / (2 * float(delta)) * (scores - scores[live].min())
    weights = np.where(live, mults * np.exp(-np.minimum(gamma, 700.0)), 0.0)
    return weights / weights.sum()


def expected_abs_error(law: GridQuantileLaw, p: np.ndarray, truth: float, step: float) -> float:
    """E|answer − truth| exactly: each run a..b of grid points uniform (closed-form sums)."""
    t = truth / step
    a = law.starts.astype(np.float64)
    b = a + law.mults.astype(np.float64) - 1
    keep = (p > 0) & (law.mults > 0)
    a, b, p, m = a[keep], b[keep], p[keep], law.mults[keep].astype(np.float64)
    below = np.clip(np.floor(t) - a + 1, 0, m)  # points a..min(b, ⌊t⌋)
    top = a + below - 1
    # Σ (t − i) over a..top and Σ (i − t) over top + 1..b
    s_low = below * t - below * (a + top) / 2
    above = m - below
    s_high = above * ((top + 1) + b) / 2 - above * t
    return float((p * (s_low + s_high) / m).sum() * step)


def plain_extreme_law(
    units: np.ndarray, lo: int, hi: int, q: Fraction, epsilon: float
) -> tuple[GridQuantileLaw, np.ndarray]:
    """Main's MIN (q = 0) / MAX (q = 1): the plain extreme quantile, aimed at rank 0."""
    law = grid_quantile_law(*histogram(units), lo, hi, q)
    return law, probabilities(law, epsilon, score_sensitivity(1, q))


def aimed_extreme_law(
    units: np.ndarray, lo: int, hi: int, q: Fraction, epsilon: float
) -> tuple[GridQuantileLaw, np.ndarray]:
    """This branch's MIN / MAX: aimed at rank t (``extreme_target``)."""
    eps = Fraction(epsilon).limit_denominator(10**6)
    law = grid_quantile_law(
        *histogram(units), lo, hi, q, target=extreme_target(eps, 1, hi - lo + 1)
    )
    return law, probabilities(law, epsilon, score_sensitivity(1, q))


def extremes_table(
    columns: dict[str, tuple[np.ndarray, int, int]],
    observed: Callable[[str, str, float], list[float]],
) -> tuple[list[str], list[list[str]]]:
    """MIN/MAX mean abs error, before (main's, exact) and after (exact and observed)."""
    header = [
        "column",
        "aggregate",
        "ε",
        "true value",
        "before: main's MAE (exact)",
        "after: MAE (exact)",
        "after: MAE (observed)",
        "after / before",
    ]
    rows = []
    for name, (x, lo, hi) in columns.items():
        for func, q in (("MIN", Fraction(0)), ("MAX", Fraction(1))):
            truth = float(x.min() if func == "MIN" else x.max())
            for eps in QUANTILE_EPSILONS:
                before = expected_abs_error(*plain_extreme_law(x, lo, hi, q, eps), truth, 1.0)
                after = expected_abs_error(*aimed_extreme_law(x, lo, hi, q, eps), truth, 1.0)
                seen = np.abs(np.asarray(observed(name, func, eps)) - truth).mean()
                rows.append(
                    [
                        name,
                        func,
                        f"{eps:g}",
                        f"{truth:,.0f}",
                        f"{before:,.1f}",
                        f"{after:,.1f}",
                        f"{seen:,.1f}",
                        f"{after / before:.2f}" if before >= 0.5 else "— (before < 0.5)",
                    ]
                )
    return header, rows


def scores_of(law: GridQuantileLaw) -> np.ndarray:
    return np.array([int(s) for s in law.scores], dtype=np.float64) / law.denominator


def score_quantile(law: GridQuantileLaw, p: np.ndarray, level: float) -> float:
    """The level-quantile of the released point's score (its rank error, in rows)."""
    s = scores_of(law)
    order = np.argsort(s, kind="stable")
    cdf = np.cumsum(p[order])
    return float(s[order][min(int(np.searchsorted(cdf, level)), len(s) - 1)])


#: One rank-error case: name, data (grid units), lo, hi, q, ε.
Case = tuple[str, np.ndarray, int, int, Fraction, float]


def rank_error_table(cases: list[Case]) -> tuple[list[str], list[list[str]]]:
    """Stated rank error (95%) against the exact 95th percentile of the score, per case."""
    header = [
        "data",
        "q",
        "ε",
        "grid points",
        "stated rank error (95%)",
        "exact p95 of the rank error",
        "exact P(error > stated)",
        "stated / p95",
    ]
    rows = []
    for name, x, lo, hi, q, eps in cases:
        delta = score_sensitivity(1, q)
        law = grid_quantile_law(*histogram(x), lo, hi, q)
        p = probabilities(law, eps, delta)
        stated = rank_error(delta, Fraction(eps).limit_denominator(10**6), hi - lo, 0.05)
        p95 = score_quantile(law, p, 0.95)
        miss = float(p[scores_of(law) > stated].sum())
        rows.append(
            [
                name,
                str(q),
                f"{eps:g}",
                f"{hi - lo + 1:,}",
                f"{stated:,.1f}",
                f"{p95:,.1f}",
                f"{miss:.3f}",
                f"{stated / p95:.2f}" if p95 > 0 else "— (p95 = 0)",
            ]
        )
    return header, rows


def worst_case(points: int, q: Fraction, eps: float) -> Case:
    """All rows on the lowest grid point, (1 − q)·n just below the stated rank error: the
    dataset that attains the statement (tests/curator/test_rank_error.py)."""
    delta = score_sensitivity(1, q)
    r = rank_error(delta, Fraction(eps).limit_denominator(10**6), points - 1, 0.05)
    n = max(1, math.ceil(r / (1 - q)) - 1)
    name = f"{n} rows on one point (attains the statement)"
    return name, np.zeros(n, dtype=np.int64), 0, points - 1, q, eps


# -- P90 against peers -----------------------------------------------------------------------


def continuous_p90_error(
    x: np.ndarray, low: float, high: float, eps: float, delta: float = 0.9
) -> float:
    """E|answer − truth| of Smith's (2011) continuous mechanism on the raw values (no grid):
    the interval between order statistics k, k + 1 with probability ∝ length ×
    exp(−ε·|k − q·n|/(2Δ)), then uniform within it. Δ = max(q, 1 − q) is infodp's; Δ = 1 is
    diffprivlib's (its quantile passes sensitivity 1 to its exponential mechanism)."""
    q = 0.9
    truth = float(np.quantile(x, q))
    xs = np.sort(x)
    edges = np.concatenate([[low], xs, [high]])
    k = np.arange(len(xs) + 1)
    gamma = eps / (2 * delta) * np.abs(k - q * len(xs))
    lengths = np.diff(edges)
    w = lengths * np.exp(-(gamma - gamma.min()))
    p = w / w.sum()
    a, b = edges[:-1], edges[1:]
    mid = (a + b) / 2
    inside = (a < truth) & (truth < b)
    err = np.where(truth <= a, mid - truth, truth - mid)
    width = np.where(b > a, b - a, 1.0)
    err = np.where(inside, ((truth - a) ** 2 + (b - truth) ** 2) / (2 * width), err)
    return float((p * err).sum())


def p90_grid(low: float, high: float) -> Any:
    """The grid infodp answers a float column's P90 on."""
    from infodp.curator.declaration.schema import ColumnSpec
    from infodp.curator.plan.grid import quantile_grid

    return quantile_grid(ColumnSpec("v", "float", bounds=(low, high)), Fraction(9, 10))


def infodp_p90_error(x: np.ndarray, low: float, high: float, eps: float) -> float:
    """E|answer − truth| of infodp's P90 exactly: the values snapped to the grid as the
    query reads them (the P90's grid, :func:`~infodp.curator.plan.grid.quantile_grid`), the grid
    exponential mechanism over every point."""
    q = Fraction(9, 10)
    grid = p90_grid(low, high)
    snapped = np.floor(np.clip(x, low, high) / grid.step + 0.5).astype(np.int64)
    law = grid_quantile_law(*histogram(snapped), grid.lo, grid.hi, q)
    p = probabilities(law, eps, score_sensitivity(1, q))
    return expected_abs_error(law, p, float(np.quantile(x, 0.9)), grid.step)


def p90_table(rows: int, reps: int, workdir: Path) -> tuple[list[str], list[list[str]], float]:
    """P90 at ε = 1 and 10: infodp (exact and observed) against diffprivlib and Smith's
    continuous mechanism without a grid (exact), on the quantile benchmark's table."""
    from benchmarks.quantile_accuracy import run_diffprivlib, run_infodp, table

    frame = table(rows)
    x = frame["income"].to_numpy()
    truth = float(np.quantile(x, 0.9))
    epsilons = (1.0, 10.0)
    peers: dict[str, Any] = {}
    for name, fn in (("infodp", run_infodp), ("diffprivlib", run_diffprivlib)):
        try:
            peers[name] = fn(frame, reps, epsilons=epsilons)
        except Exception as err:  # report why the peer did not run
            peers[name] = f"not run: {type(err).__name__}: {str(err)[:80]}"
    header = ["method", *[f"ε = {e:g}: mean / p95 abs error" for e in epsilons]]
    out = [
        [
            f"infodp, exact (grid step {p90_grid(0, 300_000).step:g})",
            *[f"{infodp_p90_error(x, 0, 300_000, e):.4g} / —" for e in epsilons],
        ],
        [
            "diffprivlib's law (Smith's mechanism, Δ = 1), exact",
            *[f"{continuous_p90_error(x, 0, 300_000, e, 1.0):.4g} / —" for e in epsilons],
        ],
        [
            "Smith's mechanism without a grid, infodp's Δ = 0.9, exact",
            *[f"{continuous_p90_error(x, 0, 300_000, e):.4g} / —" for e in epsilons],
        ],
    ]
    for name, res in peers.items():
        if isinstance(res, str):
            out.append([f"{name} (observed)", res, ""])
            continue
        cells = []
        for e in epsilons:
            err = np.abs(np.asarray(res[e]) - truth)
            cells.append(f"{err.mean():.3g} / {np.percentile(err, 95):.3g}")
        out.append([f"{name} (observed, {reps} answers)", *cells])
    return header, out, truth
