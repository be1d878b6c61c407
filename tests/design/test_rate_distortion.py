"""R(D): the Hamming closed form, cvxpy on random instances, and the laws of the curve."""

from __future__ import annotations

import itertools
import math

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infodp.design import rate_distortion


def _h(x: float) -> float:
    return -x * math.log(x) - (1 - x) * math.log(1 - x)


@pytest.mark.parametrize(("k", "D"), [(2, 0.11), (4, 0.1), (4, 0.5), (8, 0.3), (16, 0.01)])
def test_uniform_hamming_closed_form(k: int, D: float) -> None:
    # Cover & Thomas (2006), Problem 10.5: R(D) = log k − h(D) − D log(k−1), 0 ≤ D ≤ 1 − 1/k.
    closed = math.log(k) - _h(D) - D * math.log(k - 1)
    r = rate_distortion(np.full(k, 1 / k), "hamming", D)
    assert r.lower <= closed <= r.upper
    assert r.gap <= 1e-9 and r.converged
    assert r.distortion <= D


def _cvxpy_rd(prior: np.ndarray, d: np.ndarray, D: float) -> float:
    n, m = d.shape
    J = cp.Variable((n, m), nonneg=True)  # joint P(x, y)
    q = cp.sum(J, axis=0)
    prod = cp.reshape(prior, (n, 1), order="F") @ cp.reshape(q, (1, m), order="F")
    cons = [cp.sum(J, axis=1) == prior, cp.sum(cp.multiply(J, d)) <= D]
    prob = cp.Problem(cp.Minimize(cp.sum(cp.rel_entr(J, prod))), cons)
    prob.solve(solver=cp.CLARABEL)
    return float(prob.value)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_against_cvxpy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 5
    prior = rng.dirichlet(np.ones(n))
    d = rng.uniform(0, 2, size=(n, n))
    D = float(np.sum(prior * d.min(axis=1)) + 0.3 * rng.uniform(0.1, 1.0))
    r = rate_distortion(prior, d, D)
    ref = _cvxpy_rd(prior, d, D)
    assert r.lower - 1e-6 <= ref <= r.upper + 1e-6
    assert r.gap <= 1e-9


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=0, max_value=10_000))
def test_curve_non_increasing_and_convex(seed: int) -> None:
    # R(D) is non-increasing and convex in D (Cover & Thomas 2006, Lemma 10.4.1).
    rng = np.random.default_rng(seed)
    prior = rng.dirichlet(np.ones(4))
    Ds = np.linspace(0.05, 0.6, 5)
    rs = [rate_distortion(prior, "absolute", float(D)) for D in Ds]
    for a, b in itertools.pairwise(rs):
        assert b.lower <= a.upper + 1e-9
    for a, b, c in zip(rs, rs[1:], rs[2:], strict=False):
        # midpoint convexity, with the certified ends on the safe side
        assert b.lower <= 0.5 * (a.upper + c.upper) + 1e-9
