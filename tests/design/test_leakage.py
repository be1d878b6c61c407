"""Sibson and maximal-leakage designs against closed forms and cvxpy."""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest

from infodp.design import design, min_maximal_leakage, min_sibson
from infodp.errors import ParameterError


def test_maximal_leakage_binary() -> None:
    # A channel with E[x ≠ y] ≤ D under a uniform binary prior has Σ_y max_x W ≥ 2(1 − D)
    # (Σ_y max_x W ≥ Σ_y W(y|y) = 2 − 2D); binary RR at D reaches it: log 2(1 − D).
    for D in (0.1, 0.25, 0.4):
        r = min_maximal_leakage([0.5, 0.5], "hamming", D)
        assert r.lower - 1e-9 <= math.log(2 * (1 - D)) <= r.upper + 1e-9


@pytest.mark.parametrize("seed", [0, 1])
def test_maximal_leakage_against_cvxpy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 5
    prior = rng.dirichlet(np.ones(n))
    d = rng.uniform(0, 2, size=(n, n))
    D = float(np.sum(prior * d.min(axis=1)) + 0.4)
    W = cp.Variable((n, n), nonneg=True)
    cons = [cp.sum(W, axis=1) == 1, cp.sum(cp.multiply(prior[:, None] * d, W)) <= D]
    prob = cp.Problem(cp.Minimize(cp.sum(cp.max(W, axis=0))), cons)
    prob.solve(solver=cp.CLARABEL)
    r = min_maximal_leakage(prior, d, D)
    assert r.lower - 1e-6 <= math.log(prob.value) <= r.upper + 1e-6


def test_sibson_binary_symmetric() -> None:
    # For a uniform binary prior and Hamming budget D the BSC(D) is optimal (symmetry and
    # convexity). Its Sibson information (Verdú 2015, Eq. (50)) is
    # α/(α−1) log Σ_y (Σ_x ½ W(y|x)^α)^{1/α} = α/(α−1) log 2(½(D^α + (1−D)^α))^{1/α}.
    D, a = 0.2, 3.0
    closed = a / (a - 1) * math.log(2 * (0.5 * (D**a + (1 - D) ** a)) ** (1 / a))
    r = min_sibson([0.5, 0.5], "hamming", D, a)
    assert r.lower - 1e-7 <= closed <= r.upper + 1e-9


def test_sibson_against_cvxpy() -> None:
    rng = np.random.default_rng(4)
    n = 4
    prior = rng.dirichlet(np.ones(n) * 3)
    d = np.abs(np.subtract.outer(np.arange(n), np.arange(n))).astype(float)
    D = 0.5
    W = cp.Variable((n, n), nonneg=True)
    weights = np.sqrt(prior)[:, None]
    F = sum(cp.norm(cp.multiply(weights[:, 0], W[:, y]), 2) for y in range(n))
    cons = [cp.sum(W, axis=1) == 1, cp.sum(cp.multiply(prior[:, None] * d, W)) <= D]
    prob = cp.Problem(cp.Minimize(F), cons)
    prob.solve(solver=cp.CLARABEL)
    ref = 2.0 * math.log(prob.value)  # α/(α−1) log F at α = 2
    r = min_sibson(prior, d, D, 2.0)
    assert r.upper <= ref + 1e-5
    assert r.lower <= ref + 1e-7


def test_design_dispatch_and_errors() -> None:
    r = design([0.5, 0.5], "hamming", 0.25, objective="sibson", alpha=math.inf)
    assert abs(r.upper - math.log(1.5)) < 1e-7
    with pytest.raises(ParameterError, match="objective"):
        design([0.5, 0.5], "hamming", 0.25, objective="entropy")
    with pytest.raises(ParameterError, match="alpha"):
        design([0.5, 0.5], "hamming", 0.25, objective="sibson")
    with pytest.raises(ParameterError, match="max_distortion"):
        design([0.5, 0.5], "hamming", -0.1)
    with pytest.raises(ParameterError, match="prior"):
        design([0.5, 0.6], "hamming", 0.1)
