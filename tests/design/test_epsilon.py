"""ε*(D): closed forms (k-ary randomized response; the geometric mechanism) and cvxpy."""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest

from infodp.design import distortion_matrix, min_distortion, min_epsilon


@pytest.mark.parametrize(("k", "D"), [(2, 0.1), (2, 0.3), (3, 0.2), (5, 0.5), (4, 0.05)])
def test_uniform_hamming_is_randomized_response(k: int, D: float) -> None:
    # Wang, Ying & Zhang (2016), Thm 3: with a uniform prior and Hamming distortion the optimal
    # channel is k-ary randomized response, whose distortion (k−1)/(e^ε+k−1) = D.
    closed = math.log((k - 1) * (1 - D) / D)
    r = min_epsilon(np.full(k, 1 / k), "hamming", D)
    assert r.lower - 1e-12 <= closed <= r.upper + 1e-12
    assert r.gap <= 1e-6
    assert r.distortion <= D + 1e-12
    assert abs(r.channel.epsilon() - closed) < 1e-6
    off = (1 - r.channel.matrix.diagonal().mean()) / (k - 1)
    assert np.allclose(r.channel.matrix[~np.eye(k, dtype=bool)], off, atol=1e-6)


def test_worst_case_hamming_is_randomized_response() -> None:
    # In the worst case over priors every input must have distortion ≤ D; RR meets it with
    # equality on every row, and no ε-DP channel can do better on all rows at once.
    k, D = 4, 0.2
    r = min_epsilon(None, distortion_matrix("hamming", k), D)
    assert r.lower - 1e-12 <= math.log((k - 1) * (1 - D) / D) <= r.upper + 1e-12


def test_zero_leakage_beyond_the_constant_output() -> None:
    r = min_epsilon([0.7, 0.3], "hamming", 0.3)
    assert r.lower == 0.0 and r.upper <= 1e-12


def _truncated_geometric(n: int, eps: float) -> np.ndarray:
    # Ghosh, Roughgarden & Sundararajan (2009), the range-restricted geometric mechanism.
    a = math.exp(-eps)
    G = np.empty((n + 1, n + 1))
    for x in range(n + 1):
        for z in range(n + 1):
            w = a ** abs(z - x)
            G[x, z] = w / (1 + a) if z in (0, n) else w * (1 - a) / (1 + a)
    return G


@pytest.mark.parametrize("eps", [0.3, 1.0, 2.0])
def test_geometric_mechanism_is_universally_optimal(eps: float) -> None:
    # GRS 2009, Thm 1.2: for a counting query (neighbours differ by one) every Bayesian user
    # with a monotone loss does best with the geometric mechanism followed by a remap.
    n = 6
    prior = np.random.default_rng(3).dirichlet(np.ones(n + 1))
    d = distortion_matrix("absolute", n + 1)
    G = _truncated_geometric(n, eps)
    remapped = sum(
        min(float(prior @ (G[:, z] * d[:, y])) for y in range(n + 1)) for z in range(n + 1)
    )
    _, achieved, lower = min_distortion(prior, d, eps, neighbours="adjacent")
    assert lower <= remapped + 1e-9
    assert abs(achieved - remapped) < 1e-8


def _cvxpy_min_distortion(prior: np.ndarray, d: np.ndarray, eps: float) -> float:
    n, m = d.shape
    W = cp.Variable((n, m), nonneg=True)
    cons = [cp.sum(W, axis=1) == 1]
    for x in range(n):
        for xp in range(n):
            if x != xp:
                cons.append(W[x] <= math.exp(eps) * W[xp])
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(prior[:, None] * d, W))), cons)
    prob.solve(solver=cp.CLARABEL)
    return float(prob.value)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_min_distortion_against_cvxpy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m = 4, 5
    prior = rng.dirichlet(np.ones(n))
    d = rng.uniform(0, 3, size=(n, m))
    eps = float(rng.uniform(0.2, 2.0))
    _, achieved, lower = min_distortion(prior, d, eps)
    ref = _cvxpy_min_distortion(prior, d, eps)
    assert lower <= ref + 1e-6
    assert abs(achieved - ref) < 1e-6


@pytest.mark.slow
def test_epsilon_curve_is_non_increasing() -> None:
    prior = np.random.default_rng(5).dirichlet(np.ones(5))
    uppers = [min_epsilon(prior, "squared", D).upper for D in (0.2, 0.5, 1.0, 2.0)]
    lowers = [min_epsilon(prior, "squared", D).lower for D in (0.2, 0.5, 1.0, 2.0)]
    assert all(lo2 <= up1 + 1e-9 for up1, lo2 in zip(uppers, lowers[1:], strict=False))


@pytest.mark.parametrize("seed", [0, 1])
def test_optimal_channel_is_a_staircase(seed: int) -> None:
    # Kairouz, Oh & Viswanath (2016, "Extremal mechanisms for local DP", Thm 4): for sublinear
    # utilities (expected distortion is linear) an optimal ε-LDP channel is a staircase: each
    # column takes only the values t_y and e^ε t_y. The LP's vertex solution has that form;
    # with Geng & Viswanath's (2014) geometric/staircase noise as the special case tested above.
    rng = np.random.default_rng(seed)
    prior = rng.dirichlet(np.ones(4))
    d = rng.uniform(0, 1, size=(4, 4))
    eps = 1.2
    ch, _, _ = min_distortion(prior, d, eps)
    W = ch.matrix
    for col in W.T:
        used = col[col > 1e-12]
        if used.size:
            ratio = used / used.min()
            assert np.all((np.abs(ratio - 1) < 1e-6) | (np.abs(ratio - math.exp(eps)) < 1e-6))


def _adjacent_epsilon(W: np.ndarray) -> float:
    """max over adjacent inputs x, x+1 and outputs y of |ln W(y|x) − ln W(y|x+1)| (by hand)."""
    worst = 0.0
    for x in range(W.shape[0] - 1):
        for a, b in ((W[x], W[x + 1]), (W[x + 1], W[x])):
            for p, q in zip(a, b, strict=True):
                if p > 0 and q == 0:
                    return math.inf
                if p > 0:
                    worst = max(worst, math.log(p / q))
    return worst


@pytest.mark.parametrize(
    ("k", "prior", "D"),
    [(7, "uniform", 1 / 12), (7, "uniform", 1 / 6), (5, "skew", 0.1), (4, "skew", 0.2)],
)
def test_adjacent_search_past_a_channel_of_infinite_exact_epsilon_answers(
    k: int, prior: str, D: float
) -> None:
    # An intermediate LP channel whose exact ε is ∞ (a repaired 0 beside a tiny positive
    # entry) sent the bisection to ε = ∞ and HiGHS raised a raw ValueError.
    p = np.full(k, 1 / k) if prior == "uniform" else np.arange(1, k + 1) / (k * (k + 1) / 2)
    r = min_epsilon(p, "hamming", D, neighbours="adjacent")
    assert r.converged and r.lower <= r.upper < math.inf
    # The returned channel, checked by hand: its adjacent ε is the reported upper end and
    # its expected Hamming distortion is within D.
    W = r.channel.matrix
    assert _adjacent_epsilon(W) == pytest.approx(r.upper, abs=1e-9)
    assert float(np.sum(p[:, None] * W * (1 - np.eye(k)))) <= D + 1e-9
    # Adjacent neighbours constrain less than all pairs: ε*_adjacent ≤ ε*_all, and for a
    # uniform prior ε*_all is k-ary randomized response's ln((k−1)(1−D)/D) (Wang, Ying &
    # Zhang 2016, Thm 3).
    if prior == "uniform":
        assert r.lower <= math.log((k - 1) * (1 - D) / D) + 1e-7


def test_adjacent_zero_distortion_needs_infinite_epsilon_and_says_so() -> None:
    # Hamming distortion 0 with a full-support prior forces the identity channel, whose
    # adjacent rows have disjoint supports: ε* = ∞ (no raw LP error on the way there).
    for k in (2, 4, 7):
        prior = np.arange(1, k + 1) / (k * (k + 1) / 2)
        r = min_epsilon(prior, "hamming", 0.0, neighbours="adjacent")
        assert r.upper == math.inf and 0 < r.lower < math.inf and not r.converged
        assert _adjacent_epsilon(r.channel.matrix) == math.inf
