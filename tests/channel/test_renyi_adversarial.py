"""Adversarial checks of the certified C_α (:mod:`infodp.channel.renyi`): channels with entries
near the ends of float64's range, degenerate cells and tiny budgets, each against a reference
that does not share the library's arithmetic ("Differential Privacy and Information Theory",
2022: C_α = sup_P D_α(P_XY ‖ P_X P_Y))."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _renyi_reference import best_in_cell, renyi_information_exact
from infodp.channel import Channel
from infodp.channel.certificates import cell_bounds, tangent_basis


@pytest.mark.slow  # ~1.2 CPU-s (measured)
@pytest.mark.parametrize("extra_rows", [0, 2])
def test_upper_end_holds_when_w_to_the_alpha_underflows(extra_rows: int) -> None:
    # W_01 = 1e-110, W_11 = 1e-300: W_01^3 = 1e-330 underflows float64 (to 0), but the term
    # P_0 W_01^3 q_1^{-2} is huge when P_0 ≈ 1e-190 makes q_1 ≈ 2e-300: I_3 = 91.4 nats there
    # (50-digit decimal arithmetic). The upper end used to be 3e-12 (the term dropped).
    W = np.array([[1 - 1e-110, 1e-110], [1 - 1e-300, 1e-300]])
    p = np.array([1e-190, 1 - 1e-190])
    if extra_rows:
        W = np.vstack([W, [[0.5, 0.5], [0.3, 0.7]]])
        p = np.concatenate([p, [0.0, 0.0]])
    attained = renyi_information_exact(p, W, 3.0)
    assert attained > 90
    result = Channel(W).renyi_capacity(3.0, tol=1e-3, time_budget=5.0)
    assert attained <= result.upper
    assert result.lower <= result.upper


@pytest.mark.slow
def test_lower_end_is_attained_when_q_to_the_one_minus_alpha_overflows() -> None:
    # Near the vertex of the 1e-300 row, q_1^{1−α} = (1e-300)^{−49} overflows float64; a cell
    # centre there used to report I_50 = +inf as attained (lower = upper = inf), although every
    # row has full support (C_50 ≤ the diameter, 690 nats). The lower end must be the value
    # at the returned input (50-digit decimal arithmetic), and the upper end finite.
    W = np.array([[1 - 1e-7, 1e-7], [1 - 1e-300, 1e-300], [0.5, 0.5], [0.3, 0.7]])
    result = Channel(W).renyi_capacity(50.0, tol=1e-3, time_budget=2.0)
    assert math.isfinite(result.lower) and math.isfinite(result.upper)
    attained = renyi_information_exact(result.input_distribution, W, 50.0)
    assert result.lower <= attained * (1 + 1e-9) <= result.upper


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [10.0, 50.0])
@pytest.mark.parametrize("n", [2, 4])
def test_identity_channel_at_high_order_is_unbounded_without_warnings(n: int, alpha: float) -> None:
    # The noiseless channel: I_α(P) = log(Σ_x P_x^{2−α})/(α − 1) → ∞ as some P_x → 0 for
    # α > 2, so C_α = ∞. Near those faces q^{1−α} overflows; the certified regions used to
    # emit overflow/invalid RuntimeWarnings there (errors in this suite).
    result = Channel(np.eye(n)).renyi_capacity(alpha, tol=1e-3, time_budget=1.0)
    assert result.upper == math.inf
    assert math.isfinite(result.lower) and result.lower > math.log(n)


@pytest.mark.slow  # ~12 CPU-s
def test_memory_stays_bounded_for_thousands_of_outputs() -> None:
    # 8 inputs × 3 000 outputs: the cell bounds hold a few dozen (cells, n, m) arrays, and a
    # round of 512 cells took 2.4 GB at α = 50. Rounds are now sized by n·m; the peak of
    # numpy's allocations (tracemalloc sees them) over a fixed number of cells stays small.
    # 600 cells reach the full-size rounds: the peak is 396 MB, as after 1 500 cells, while
    # rounds not sized by n·m (up to 256 parents) peak at 1.8 GB within these 600 cells.
    import tracemalloc

    W = np.random.default_rng(3).dirichlet(np.full(3000, 0.5), size=8)
    tracemalloc.start()
    try:
        result = Channel(W).renyi_capacity(5.0, tol=1e-6, refine_budget=600, n_starts=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.lower <= result.upper
    assert peak < 512 * 2**20  # 2.2 GB before


@pytest.mark.parametrize(("n", "alpha"), [(8, 1.00005), (3, 50.0)])
def test_a_spent_time_budget_stops_all_the_work(n: int, alpha: float) -> None:
    # Within 1e-4 of α = 1 the bracket is intersected with a second run at α = 1 ± 1e-4
    # (monotonicity in α), which used to ignore the time budget: with time_budget = 1 s and a
    # large cell budget it ran for minutes. With a budget spent after the first local search,
    # the work done (local searches plus cells, `iterations`) stays a handful, not the
    # 20 000 cells allowed; so does the one-cell-at-a-time vertex bound for three inputs.
    W = np.random.default_rng(n).dirichlet(np.full(16, 0.5), size=n)
    result = Channel(W).renyi_capacity(alpha, tol=1e-12, time_budget=1e-6, refine_budget=20_000)
    assert result.iterations < 200
    assert result.lower <= result.upper


@pytest.mark.slow  # ~0.9 CPU-s (measured)
@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    alpha=st.sampled_from([0.3, 0.5, 0.9999, 1.0001, 1.5, 2.0, 3.0, 5.0, 10.0, 50.0]),
    shape=st.sampled_from(["point", "repeated", "face", "simplex", "vertex twice", "plain"]),
    size=st.sampled_from([1.0, 0.3, 1e-2, 1e-5, 1e-9]),
    tiny=st.booleans(),
)
def test_cell_bounds_hold_on_degenerate_cells(
    seed: int, alpha: float, shape: str, size: float, tiny: bool
) -> None:
    # All bounds of cell_bounds together, on cells the branch and bound does not make but a
    # caller may pass: a single point, a repeated vertex, a cell inside a face, the whole
    # simplex with its vertices permuted, a simplex vertex listed twice; on channels whose
    # entries may be as small as 1e-300 (W^α then under- and q^{1−α} overflows). The bound is
    # above I_α at samples and ascents in the cell (independent formula) and, where float
    # arithmetic fails there, at the centre and vertices in 50-digit decimal arithmetic.
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 7)), int(rng.integers(2, 10))
    W = rng.dirichlet(np.full(m, 0.5), size=n)
    if tiny:
        W[rng.random((n, m)) < 0.3] = 10.0 ** -rng.uniform(20, 300)
        W /= W.sum(axis=1, keepdims=True)
    V = (1 - size) * rng.dirichlet(np.ones(n)) + size * rng.dirichlet(np.full(n, 0.5), size=n)
    if shape == "point":
        V[1:] = V[0]
    elif shape == "repeated":
        V[1] = V[0]
    elif shape == "face":
        V[:, 0] = 0.0
        V /= V.sum(axis=1, keepdims=True)
    elif shape == "simplex":
        V = np.eye(n)[rng.permutation(n)]
    elif shape == "vertex twice":
        V[0] = V[1] = np.eye(n)[0]
    with np.errstate(under="ignore", over="ignore"):
        A = W**alpha
    bounds = cell_bounds(W, A, alpha, V[None], tangent_basis(n))
    upper = float(bounds.upper[0])
    assert not math.isnan(upper)
    with np.errstate(all="ignore"):
        best = best_in_cell(V, W, alpha, rng)
    if not math.isfinite(best) or best > upper:
        best = max(renyi_information_exact(p, W, alpha) for p in [V.mean(axis=0), *V])
    assert best <= upper + 1e-9 * max(1.0, abs(best))
    centre = renyi_information_exact(V.mean(axis=0), W, alpha)
    assert bounds.centre_value[0] <= centre + 1e-9 * max(1.0, abs(centre))
