"""Least maximal leakage and least Sibson mutual information under a distortion budget.

Maximal leakage L(X→Y) = log Σ_y max_x W(y|x) (Issa, Wagner & Kamath 2020, IEEE Trans. IT
66(3), Thm 1; Ünsal & Önen 2023, §4) does not depend on the prior (for full-support priors), and
minimising Σ_y max_x W(y|x) over channels meeting the budget is a linear program; it equals
Sibson's mutual information of order ∞.

Sibson's mutual information of order α (Sibson 1969; Verdú 2015, "α-mutual information")

    I_α(X;Y) = α/(α−1) log Σ_y (Σ_x p_x W(y|x)^α)^{1/α}

is a monotone function of F(W) = Σ_y ‖(p_x^{1/α} W(y|x))_x‖_α, a sum of weighted α-norms of the
columns, convex in W for α > 1, so the design is a convex program. The primal channel comes
from SLSQP; the certificate uses that F is positively homogeneous of degree 1 (so
∇F(W)·W = F(W)): F* ≥ min_S ∇F(W)·S over feasible S (a linear program solved with a
certified dual bound), the Frank–Wolfe gap bound (Jaggi 2013, "Revisiting Frank–Wolfe", §2).

>>> r = min_maximal_leakage([0.5, 0.5], "hamming", 0.25)
>>> round(r.upper, 6), round(math.log(1.5), 6)   # binary RR at ln 3: log(3/4 + 3/4)
(0.405465, 0.405465)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import sparse
from scipy.optimize import minimize

from infodp._validate import as_alpha
from infodp.channel import Channel
from infodp.design._lp import solve_lp
from infodp.design.problem import Problem, as_problem
from infodp.design.result import DesignResult, FloatArray, expected_distortion, repair_channel
from infodp.errors import ParameterError
from infodp.information import maximal_leakage, sibson_mutual_information

__all__ = ["min_maximal_leakage", "min_sibson"]

#: Largest number of channel entries (inputs × outputs) the Sibson design accepts.
SIBSON_MAX_ENTRIES = 1024


def _budget_rows(problem: Problem, nvar: int) -> tuple[sparse.csr_array, FloatArray]:
    """The distortion constraint(s) as rows over the first n·m variables."""
    n, m = problem.distortion.shape
    if problem.prior is None:
        rows = np.repeat(np.arange(n), m)
        A = sparse.coo_array(
            (problem.distortion.ravel(), (rows, np.arange(n * m))), shape=(n, nvar)
        )
        return A.tocsr(), np.ones(n)
    coef = (problem.prior[:, None] * problem.distortion).ravel()
    A = sparse.coo_array((coef, (np.zeros(n * m, dtype=int), np.arange(n * m))), shape=(1, nvar))
    return A.tocsr(), np.ones(1)


def _row_sums(n: int, m: int, nvar: int) -> sparse.csr_array:
    return sparse.coo_array(
        (np.ones(n * m), (np.repeat(np.arange(n), m), np.arange(n * m))), shape=(n, nvar)
    ).tocsr()


def _linear_min(problem: Problem, D: float, g: FloatArray) -> tuple[FloatArray, float]:
    """min Σ g·S over channels S meeting the budget: (a minimiser, certified lower bound)."""
    n, m = problem.distortion.shape
    A_ub, ones = _budget_rows(problem, n * m)
    lp = solve_lp(g.ravel(), A_ub, D * ones, _row_sums(n, m, n * m), np.ones(n), np.ones(n * m))
    return lp.x.reshape(n, m), lp.lower


def min_maximal_leakage(prior: Any, distortion: Any, max_distortion: float) -> DesignResult:
    """The least maximal leakage log Σ_y max_x W(y|x) (nats) with distortion ≤ D.

    ``prior=None`` asks every input to meet the budget (worst case).
    """
    problem = as_problem(prior, distortion)
    D = problem.check_max_distortion(max_distortion)
    n, m = problem.distortion.shape
    nvar = n * m + m
    # W(y|x) − m_y ≤ 0
    rows = np.arange(n * m)
    A_max = sparse.coo_array(
        (
            np.concatenate([np.ones(n * m), -np.ones(n * m)]),
            (
                np.concatenate([rows, rows]),
                np.concatenate([rows, n * m + np.tile(np.arange(m), n)]),
            ),
        ),
        shape=(n * m, nvar),
    )
    A_d, ones = _budget_rows(problem, nvar)
    A_ub = sparse.vstack([A_max, A_d]).tocsr()
    b_ub = np.concatenate([np.zeros(n * m), D * ones])
    c = np.concatenate([np.zeros(n * m), np.ones(m)])
    lp = solve_lp(c, A_ub, b_ub, _row_sums(n, m, nvar), np.ones(n), np.ones(nvar))
    channel = repair_channel(lp.x[: n * m].reshape(n, m))
    achieved = expected_distortion(problem.prior, channel.matrix, problem.distortion)
    if achieved > D:  # LP round-off: mix toward the least-distortion channel
        channel = _mix(problem, channel.matrix, achieved, D)
        achieved = expected_distortion(problem.prior, channel.matrix, problem.distortion)
    upper = maximal_leakage(channel.matrix)
    upper += 1e-13 * (1.0 + upper)
    lower = min(upper, max(0.0, math.log(max(lp.lower, 1.0))))
    return DesignResult(
        objective="maximal-leakage",
        alpha=math.inf,
        lower=lower,
        upper=upper,
        channel=channel,
        distortion=achieved,
        max_distortion=D,
        prior=problem.prior,
        method="HiGHS LP on sum_y max_x W(y|x); upper = maximal leakage of the returned "
        "channel, lower = log of the LP dual certificate",
        converged=upper - lower <= 1e-7,
    )


def _mix(problem: Problem, W: FloatArray, achieved: float, D: float) -> Channel:
    base = problem.deterministic_channel().matrix
    floor = problem.smallest_distortion
    theta = min(1.0, (achieved - D) / max(achieved - floor, 1e-300) * (1 + 1e-9) + 1e-15)
    return Channel((1 - theta) * W + theta * base)


def _norms(prior: FloatArray, W: FloatArray, alpha: float) -> tuple[float, FloatArray]:
    """F(W) = Σ_y (Σ_x p_x W^α)^{1/α} and a subgradient (Hölder's dual vector per column).

    F_y(S) = max_{‖u‖_β ≤ 1} Σ_x u_x p_x^{1/α} S_xy with 1/α + 1/β = 1, so for any such u,
    Σ_x u_x p_x^{1/α} S_xy is a linear minorant of F_y, tight at W for the maximising u. An
    unused column takes the flat u_x = n^{−1/β}, which keeps the certificate informative.
    """
    n = W.shape[0]
    col = prior @ np.power(W, alpha)  # Σ_x p_x W_xy^α
    F = float(np.sum(np.power(col, 1.0 / alpha)))
    used = col > 0
    safe = np.where(used, col, 1.0)
    grad = np.power(safe, 1.0 / alpha - 1.0)[None, :] * prior[:, None] * np.power(W, alpha - 1.0)
    flat = np.power(prior, 1.0 / alpha) * n ** (-(alpha - 1.0) / alpha)
    grad = np.where(used[None, :], grad, flat[:, None])
    return F, grad


def min_sibson(prior: Any, distortion: Any, max_distortion: float, alpha: float) -> DesignResult:
    """The least Sibson mutual information I_α(X;Y) (nats) with distortion ≤ D.

    α ∈ [1, ∞]: α = 1 is the rate–distortion function, α = ∞ maximal leakage. Other orders
    need a prior and at most 1024 channel entries (the primal solver is SLSQP). Orders
    below 1 are not offered: the gradient certificate is unbounded where W has zeros.

    >>> r = min_sibson([0.5, 0.5], "hamming", 0.25, 2.0)
    >>> r.lower <= math.log(2) + math.log(0.25**2 + 0.75**2) <= r.upper + 1e-9  # BSC(1/4)
    True
    """
    a = as_alpha("alpha", alpha)
    if a < 1:
        raise ParameterError("alpha", alpha, "a Rényi order in [1, inf] for the design")
    if math.isinf(a):
        result = min_maximal_leakage(prior, distortion, max_distortion)
        return _as_sibson(result, a, result.method)
    if a == 1:
        from infodp.design.rate_distortion import rate_distortion

        result = rate_distortion(prior, distortion, max_distortion)
        return _as_sibson(result, a, result.method)
    problem = as_problem(prior, distortion)
    if problem.prior is None:
        raise ParameterError("prior", None, "a probability vector for the sibson objective")
    D = problem.check_max_distortion(max_distortion)
    n, m = problem.distortion.shape
    if n * m > SIBSON_MAX_ENTRIES:
        raise ParameterError(
            "distortion", f"{n}x{m} entries", f"at most {SIBSON_MAX_ENTRIES} entries for sibson"
        )
    p, d = problem.prior, problem.distortion
    sign = 1.0  # α > 1: minimise the convex F

    def fun(w: FloatArray) -> tuple[float, FloatArray]:
        F, g = _norms(p, w.reshape(n, m), a)
        return sign * F, sign * g.ravel()

    start = 0.5 * problem.deterministic_channel().matrix + 0.5 * problem.constant_channel().matrix
    if expected_distortion(p, start, d) > D:
        start = problem.deterministic_channel().matrix
    cons = [
        {
            "type": "eq",
            "fun": lambda w: w.reshape(n, m).sum(axis=1) - 1.0,
            "jac": lambda w: _row_sums(n, m, n * m).toarray(),
        },
        {
            "type": "ineq",
            "fun": lambda w: np.array([D - float(p @ (w.reshape(n, m) * d).sum(1))]),
            "jac": lambda w: -(p[:, None] * d).ravel()[None, :],
        },
    ]
    res = minimize(
        fun,
        start.ravel(),
        jac=True,
        method="SLSQP",
        bounds=[(0.0, 1.0)] * (n * m),
        constraints=cons,
        options={"maxiter": 2000, "ftol": 1e-15},
    )
    channel = repair_channel(res.x.reshape(n, m))
    achieved = expected_distortion(p, channel.matrix, d)
    if achieved > D:
        channel = _mix(problem, channel.matrix, achieved, D)
        achieved = expected_distortion(p, channel.matrix, d)
    W = channel.matrix
    value = float(sibson_mutual_information(p, W, a))
    _, g = _norms(p, W, a)
    _, bound = _linear_min(problem, D, sign * g)
    # F* ≥ bound (convexity and homogeneity) and I = α/(α−1) log F is increasing in F.
    F_bound = bound
    factor = a / (a - 1.0)
    lower = factor * math.log(F_bound) if F_bound > 0 else 0.0
    upper = value + 1e-12 * (1.0 + abs(value))
    lower = max(0.0, min(lower - 1e-12 * (1.0 + abs(lower)), upper))
    return DesignResult(
        objective="sibson",
        alpha=a,
        lower=lower,
        upper=upper,
        channel=channel,
        distortion=achieved,
        max_distortion=D,
        prior=p,
        method="SLSQP primal; lower = Frank-Wolfe gap certificate (HiGHS LP with dual bound)",
        converged=upper - lower <= 1e-6,
    )


def _as_sibson(result: DesignResult, alpha: float, method: str) -> DesignResult:
    return DesignResult(
        objective="sibson",
        alpha=alpha,
        lower=result.lower,
        upper=result.upper,
        channel=result.channel,
        distortion=result.distortion,
        max_distortion=result.max_distortion,
        prior=result.prior,
        method=method,
        converged=result.converged,
    )
