"""AIM (McKenna, Mullins, Sheldon & Miklau 2022, "AIM: An Adaptive and Iterative Mechanism for
Differentially Private Synthetic Data", VLDB, Algorithm 1), with the junction-tree model of
:mod:`infodp.synthetic.junction`.

Rounds alternate selection and measurement under zCDP:

* start: T rounds are planned — the paper's 16·d, fewer (never below 2·d) when a noisy row count
  (1% of ρ) shows a round's share too small to measure a pair usefully (:func:`planned_rounds`,
  our addition: the paper's annealing only raises a round's share after spending one) — a
  fraction α = 0.9 of each round's ρ/T for measurement
  (σ = Δ/√(2αρ/T)) and 1 − α for selection (ε = √(8(1 − α)ρ/T)); every one-way marginal is
  measured first with that σ;
* each round draws a candidate r by the exponential mechanism with quality
  q_r = w_r·(‖M_r(D) − M_r(p̂)‖₁ − √(2/π)·σ·n_r) (Eq. 3 of the paper: the error the current
  model p̂ makes on r, less the error a measurement at σ would leave; w_r = Σ_{s∈W} |r ∩ s|
  weighs r by its overlap with the workload W; sensitivity Δ·max w_r), measures it and
  refits the model;
* annealing (§4.4): when the model's answer on r moved by less than √(2/π)·σ·n_r, the
  per-round budget is quadrupled (σ halved, ε doubled); when what is left is less than two
  rounds' worth, the last round spends exactly what is left.

Candidates are the workload's one-way and two-way sub-cliques whose junction tree, with the
cliques already measured, fits the model-size cap, which grows with the budget spent as in the
paper (§4.3: size ≤ (ρ_used/ρ)·MAX, counted here in cells). After each round the model is refit
from the last one with :data:`ROUND_ITERATIONS` mirror-descent steps (it only ranks the next
candidates); the rows come from a final fit of :data:`FINAL_ITERATIONS` steps. A three-way
workload clique is scored on the model's answer but never measured directly (the candidates are
its sub-cliques).

>>> import numpy as np
>>> from fractions import Fraction
>>> from infodp.mechanisms.sampling import InsecureSeededSource
>>> rng = np.random.default_rng(0)
>>> a = rng.integers(0, 3, 2000); codes = np.column_stack([a, a, rng.integers(0, 2, 2000)])
>>> src = InsecureSeededSource(1, i_understand_this_is_not_private=True)
>>> fit = aim(codes, (3, 3, 2), Fraction(10), source=src)
>>> fit.spent <= Fraction(10), (0, 1) in fit.model.edges
(True, True)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from infodp.mechanisms.sampling import RandomSource
from infodp.synthetic.budget import em_epsilon_for, em_rho, gaussian_rho, sigma_for
from infodp.synthetic.compress import Compression
from infodp.synthetic.junction import JunctionModel, junction_cells
from infodp.synthetic.measure import Clique, marginal, measure, select
from infodp.synthetic.mst import Fit

__all__ = [
    "ALPHA",
    "FINAL_ITERATIONS",
    "FIRST_ROUND_TV",
    "MAX_MODEL_CELLS",
    "PLANNING_SHARE",
    "ROUND_ITERATIONS",
    "aim",
    "all_pairs",
    "planned_rounds",
]

#: Share of each round's ρ spent on measurement (the paper's α).
ALPHA = Fraction(9, 10)
#: Share of ρ spent on a noisy row count that plans the number of rounds.
PLANNING_SHARE = Fraction(1, 100)
#: Largest expected total-variation error the first round's measurement of a median-size pair
#: may leave (see :func:`planned_rounds`).
FIRST_ROUND_TV = 0.025
#: Mirror-descent steps of the refit after each round (warm-started from the last model: the
#: model only has to rank the next candidates) and of the final fit the rows are drawn from.
ROUND_ITERATIONS = 40
FINAL_ITERATIONS = 500
#: Largest model (cells summed over its cliques) once the whole budget is spent.
MAX_MODEL_CELLS = 1_000_000
_ERR = math.sqrt(2 / math.pi)  # E|N(0, σ²)| = σ·√(2/π)


def planned_rounds(
    d: int, rho: Fraction, rows: float, pair_cells: float, sensitivity: int = 1
) -> int:
    """The number of rounds T to plan for ``rho``: the paper's 16·d, fewer when a round's share
    would leave its measurements mostly noise, never fewer than 2·d.

    A round measures at σ = Δ·√(T/(2αρ)); measuring a pair of ``pair_cells`` cells at σ leaves
    an expected L1 error of √(2/π)·σ·cells (AIM §4.4's own yardstick), i.e. a total-variation
    error of √(2/π)·σ·cells/(2n) on n rows. T is the largest count that keeps that below
    :data:`FIRST_ROUND_TV` for a median pair, n being a noisy count (post-processing of a
    released value). Why: with T = 16·d and a small ρ·n², the one-way marginals are measured
    at a σ of the order of their cells' counts and most rounds measure noise; on the census-like
    table of ``benchmarks/synthetic.py`` at ε = 0.1 (δ = 10⁻⁶) the average 2-/3-way TV error was
    0.0477 with 16·d rounds and 0.0377 with 2·d (mean of 6 runs each; ε ≥ 1: equal within
    0.0005). Below 2·d the one-way round alone takes most of ρ and too few pairs are measured.

    >>> planned_rounds(10, Fraction(1), 100_000.0, 40.0)
    160
    >>> planned_rounds(10, Fraction(1, 10_000), 100_000.0, 40.0)
    20
    """
    top, bottom = 16 * d, 2 * d
    if rows <= 0:
        return bottom
    sigma_cap = 2 * FIRST_ROUND_TV * rows / (_ERR * pair_cells * sensitivity)
    t = 2 * float(ALPHA) * float(rho) * sigma_cap * sigma_cap
    return int(min(top, max(bottom, math.floor(t)))) if math.isfinite(t) else top


def all_pairs(d: int) -> list[Clique]:
    """The default workload: every pair of attributes (every one-way marginal if d = 1).

    >>> all_pairs(3)
    [(0, 1), (0, 2), (1, 2)]
    """
    pairs: list[Clique] = list(itertools.combinations(range(d), 2))
    return pairs if d > 1 else [(0,)]


def aim(
    codes: npt.NDArray[np.int64],
    sizes: Sequence[int],
    rho: Fraction,
    *,
    source: RandomSource,
    workload: Sequence[Clique] | None = None,
    sensitivity: int = 1,
    max_model_cells: int = MAX_MODEL_CELLS,
    compress: bool = False,
    rounds: int | None = None,
) -> Fit:
    """Run AIM on the (n, d) code matrix at ``rho``-zCDP (L2 sensitivity ``sensitivity``); with
    ``compress``, the values whose noisy one-way count is below 3σ are merged after the one-way
    round (:mod:`infodp.synthetic.compress`, post-processing: the same ρ). Off by default: on
    the census-like table of ``benchmarks/synthetic.py`` at ε = 0.1 it raised AIM's average
    2-/3-way TV error (0.0509 against 0.0476, mean of 8 runs each), AIM's per-round σ being
    large enough to merge bins that carry real mass."""
    d = len(sizes)
    work = list(workload) if workload is not None else all_pairs(d)
    closure = sorted(
        {sub for s in work for k in (1, 2) for sub in itertools.combinations(s, k)},
        key=lambda c: (len(c), c),
    )
    steps: list[tuple[str, Fraction]] = []
    used = Fraction(0)
    if rounds is None:
        rho_count = rho * PLANNING_SHARE
        count = measure(codes, sizes, (), sigma_for(rho_count, sensitivity), source)
        used = gaussian_rho(count.sigma, sensitivity)
        steps.append((f"row count for planning, σ = {float(count.sigma):.4g}", used))
        pairs = [sizes[a] * sizes[b] for a, b in (r for r in closure if len(r) == 2)]
        rounds = planned_rounds(
            d,
            rho - used,
            float(count.values[0]),
            float(np.median(pairs)) if pairs else 1.0,
            sensitivity,
        )
    sigma = sigma_for(ALPHA * (rho - used) / rounds, sensitivity)
    eps = em_epsilon_for((1 - ALPHA) * (rho - used) / rounds)
    ms = [measure(codes, sizes, (i,), sigma, source) for i in range(d)]
    one_way = d * gaussian_rho(sigma, sensitivity)
    used += one_way
    steps.append((f"{d} one-way marginals, σ = {float(sigma):.4g}", one_way))
    comp = Compression.of(sizes, ms) if compress else Compression.identity(sizes)
    codes, sizes = comp.compress_codes(codes), comp.sizes
    ms = [comp.compress_measurement(m) for m in ms]
    cells = {r: math.prod(sizes[i] for i in r) for r in closure}
    weight = {r: sum(len(set(r) & set(s)) for s in work) for r in closure}
    exact = {r: marginal(codes, sizes, r) for r in closure}
    model = JunctionModel.fit(sizes, ms)
    while True:
        left = rho - used
        per_round = gaussian_rho(sigma, sensitivity) + em_rho(eps)
        if left <= 0:
            break
        last = left < 2 * per_round
        if last:
            eps = em_epsilon_for((1 - ALPHA) * left)
            sigma = sigma_for(left - em_rho(eps), sensitivity)
        size_cap = float(used / rho) * max_model_cells
        edges = set(model.edges)
        measured = [m.clique for m in ms if len(m.clique) > 1]
        candidates = [
            r
            for r in closure
            if len(r) == 1 or r in edges or junction_cells(sizes, [*measured, r]) <= size_cap
        ]
        scores = [
            weight[r]
            * (float(np.abs(exact[r] - model.counts(r)).sum()) - _ERR * float(sigma) * cells[r])
            for r in candidates
        ]
        top_weight = max(weight[r] for r in candidates)
        pick = candidates[select(scores, eps, float(sensitivity * top_weight), source)]
        before = model.counts(pick)
        ms.append(measure(codes, sizes, pick, sigma, source))
        model = JunctionModel.fit(sizes, ms)
        spent = gaussian_rho(sigma, sensitivity) + em_rho(eps)
        used += spent
        steps.append(
            (
                f"select and measure {list(pick)}, σ = {float(sigma):.4g}, ε = {float(eps):.4g}",
                spent,
            )
        )
        if last:
            break
        moved = float(np.abs(model.counts(pick) - before).sum())
        if moved <= _ERR * float(sigma) * cells[pick]:
            sigma, eps = sigma / 2, eps * 2
    model = JunctionModel.fit(sizes, ms, warm=model, iterations=FINAL_ITERATIONS)
    return Fit(model, tuple(ms), tuple(steps), comp)
