"""The privacy–distortion function ε*(D): the least pure ε of a channel with E d(X, Y) ≤ D.

Wang, Ying & Zhang (2016, IEEE Trans. IT 62(9), §III; Ünsal & Önen 2023, §5) define ε*(D) as the
smallest ε for which some ε-DP channel P(Y|X) meets the distortion budget. For a fixed ε the
least distortion is a linear program (the DP constraints ``W(y|x) ≤ e^ε W(y|x')`` are linear
in W), non-increasing in ε, so ε*(D) is found by bisection on ε; each LP is solved by HiGHS
and certified on both sides:

- feasible at ε: the LP's channel, repaired to be exactly stochastic, has distortion ≤ D;
  its *exact* pure ε (``Channel.epsilon``, rounded up) becomes ``upper``;
- infeasible at ε: a dual bound (weak duality, :mod:`infodp.design._lp`) shows that every
  ε-DP channel has distortion > D, so ε becomes ``lower``.

Neighbours are every pair of inputs (the local model, one person's value; ``"all"``) or
adjacent values of an ordinal alphabet (``"adjacent"``, counting queries: Ghosh, Roughgarden
& Sundararajan 2009). With ``prior=None`` the constraint holds for every input (the worst
prior).

For k values, a uniform prior and Hamming distortion, k-ary randomized response is optimal:
its distortion (k−1)/(e^ε+k−1) = D gives ε*(D) = ln((k−1)(1−D)/D) (Wang, Ying & Zhang 2016,
Thm 3; Kairouz, Oh & Viswanath 2016, §4).

>>> import math
>>> r = min_epsilon([0.25] * 4, "hamming", 0.2)
>>> r.lower <= math.log(3 * 0.8 / 0.2) <= r.upper, r.gap < 1e-6
(True, True)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import sparse

from infodp._validate import as_nonnegative, as_positive
from infodp.channel import Channel
from infodp.design._lp import solve_lp
from infodp.design.problem import Problem, as_problem
from infodp.design.result import DesignResult, expected_distortion, repair_channel
from infodp.errors import InternalError, ParameterError

__all__ = ["NEIGHBOURS", "min_distortion", "min_epsilon"]

#: Neighbour relations between inputs.
NEIGHBOURS: tuple[str, ...] = ("all", "adjacent")

#: Beyond this ε the search stops and reports ``upper = inf`` (e^40 ≈ 2e17 ≫ 1/machine ε).
_EPS_CAP = 40.0


def _dp_rows(n: int, m: int, eps: float, neighbours: str) -> sparse.csr_array:
    """Rows of ``W(y|x) − e^ε W(y|x') ≤ 0`` (adjacent) or ``W − e^ε t ≤ 0, t − W ≤ 0`` (all)."""
    idx = np.arange(n * m).reshape(n, m)
    if neighbours == "all":
        t = n * m + np.arange(m)
        rows = np.arange(n * m)
        first = sparse.coo_array(
            (
                np.concatenate([np.ones(n * m), np.full(n * m, -math.exp(eps))]),
                (np.concatenate([rows, rows]), np.concatenate([idx.ravel(), np.tile(t, n)])),
            ),
            shape=(n * m, n * m + m),
        )
        second = sparse.coo_array(
            (
                np.concatenate([np.ones(n * m), -np.ones(n * m)]),
                (np.concatenate([rows, rows]), np.concatenate([np.tile(t, n), idx.ravel()])),
            ),
            shape=(n * m, n * m + m),
        )
        return sparse.vstack([first, second]).tocsr()
    pairs = [(x, x + 1) for x in range(n - 1)] + [(x + 1, x) for x in range(n - 1)]
    r, c, v = [], [], []
    for k, (x, xp) in enumerate(pairs):
        for y in range(m):
            row = k * m + y
            r += [row, row]
            c += [idx[x, y], idx[xp, y]]
            v += [1.0, -math.exp(eps)]
    return sparse.coo_array((v, (r, c)), shape=(len(pairs) * m, n * m)).tocsr()


def _solve_at(problem: Problem, eps: float, neighbours: str) -> tuple[Channel, float, float]:
    """The least-distortion ε-DP channel: (channel, its exact distortion, certified lower)."""
    n, m = problem.distortion.shape
    extra = m if neighbours == "all" else 0
    worst = problem.prior is None
    nvar = n * m + extra + (1 if worst else 0)
    A_dp = _dp_rows(n, m, eps, neighbours)
    if worst:
        A_dp = sparse.hstack([A_dp, sparse.csr_array((A_dp.shape[0], 1))]).tocsr()
        rows = np.repeat(np.arange(n), m)
        dist = sparse.coo_array(
            (problem.distortion.ravel(), (rows, np.arange(n * m))), shape=(n, nvar)
        ).tolil()
        dist[:, nvar - 1] = -1.0
        A_ub = sparse.vstack([A_dp, dist.tocsr()]).tocsr()
        c = np.zeros(nvar)
        c[-1] = 1.0
    else:
        assert problem.prior is not None
        A_ub = A_dp
        c = np.zeros(nvar)
        c[: n * m] = (problem.prior[:, None] * problem.distortion).ravel()
    b_ub = np.zeros(A_ub.shape[0])
    A_eq = sparse.coo_array(
        (np.ones(n * m), (np.repeat(np.arange(n), m), np.arange(n * m))), shape=(n, nvar)
    ).tocsr()
    upper = np.ones(nvar)
    if worst:
        upper[-1] = float(problem.distortion.max())
    lp = solve_lp(c, A_ub, b_ub, A_eq, np.ones(n), upper)
    channel = repair_channel(lp.x[: n * m].reshape(n, m))
    achieved = expected_distortion(problem.prior, channel.matrix, problem.distortion)
    return channel, achieved, lp.lower


def _epsilon_of(channel: Channel, neighbours: str) -> float:
    if neighbours == "all":
        return channel.epsilon()
    W = channel.matrix
    worst = 0.0
    for x in range(W.shape[0] - 1):
        pair = Channel(W[[x, x + 1]])
        worst = max(worst, pair.epsilon())
    return worst


def min_distortion(
    prior: Any, distortion: Any, epsilon: float, *, neighbours: str = "all"
) -> tuple[Channel, float, float]:
    """The least expected distortion of an ε-DP channel: ``(channel, distortion, lower)``.

    ``distortion`` is achieved by ``channel``; ``lower`` certifies that no ε-DP channel does
    better (LP weak duality).

    >>> ch, d, low = min_distortion([0.5, 0.5], "hamming", math.log(3))
    >>> round(d, 9), low <= d
    (0.25, True)
    """
    problem = as_problem(prior, distortion)
    eps = as_nonnegative("epsilon", epsilon)
    if neighbours not in NEIGHBOURS:
        raise ParameterError("neighbours", neighbours, "'all' or 'adjacent'")
    return _solve_at(problem, eps, neighbours)


def min_epsilon(
    prior: Any,
    distortion: Any,
    max_distortion: float,
    *,
    neighbours: str = "all",
    tol: float = 1e-7,
) -> DesignResult:
    """ε*(D): the least pure ε (nats) of a channel with expected distortion ≤ D.

    ``prior`` is a probability vector over the inputs, or ``None`` for the worst case
    (every input's expected distortion ≤ D). ``distortion`` is ``"hamming"``,
    ``"absolute"``, ``"squared"`` (alphabet 0…k−1) or an ``n × m`` matrix. Returns a
    :class:`~infodp.design.DesignResult` whose bracket is at most ``tol`` wide (unless the
    LP tolerance is reached first; ``converged`` says which).

    >>> r = min_epsilon([0.5, 0.5], "hamming", 0.25)
    >>> round(r.upper, 6), round(r.distortion, 6)   # binary RR at ln 3 (Warner 1965)
    (1.098612, 0.25)
    """
    problem = as_problem(prior, distortion)
    D = problem.check_max_distortion(max_distortion)
    tol = as_positive("tol", tol)
    if neighbours not in NEIGHBOURS:
        raise ParameterError("neighbours", neighbours, "'all' or 'adjacent'")
    # slack for the LP's own tolerances when deciding feasibility by the repaired primal
    slack = 1e-12 * (1.0 + float(problem.distortion.max()))

    def attempt(eps: float) -> tuple[str, Channel | None, float]:
        try:
            channel, achieved, lower = _solve_at(problem, eps, neighbours)
        except InternalError:
            # HiGHS gave up on an LP whose constraints hold e^ε ≫ 1/machine ε: nothing is
            # decided at this ε (the bracket keeps its certified ends).
            return "undecided", None, math.inf
        if achieved <= D + slack:
            return "feasible", channel, achieved
        if lower > D:
            return "infeasible", channel, achieved
        return "undecided", channel, achieved

    best: tuple[Channel, float] | None = None
    # lo: certified (every lo-DP channel has distortion > D); hi: the exact ε of the best
    # channel found; top: the least LP level found feasible. The exact ε of an LP's channel
    # can be ∞ (an entry repaired to 0 beside a tiny positive one): such a channel is not
    # kept, and the search goes on below its LP level instead of bisecting towards ∞.
    lo, hi, top = 0.0, math.inf, math.inf

    def take(level: float, channel: Channel, achieved: float) -> None:
        nonlocal best, hi, top
        top = min(top, level)
        eps = _epsilon_of(channel, neighbours)
        if eps < hi:
            best, hi = (channel, achieved), eps

    state, channel, achieved = attempt(0.0)
    if state == "feasible" and channel is not None:
        take(0.0, channel, achieved)
    probe = 1.0
    while math.isinf(top) and probe <= _EPS_CAP:
        state, channel, achieved = attempt(probe)
        if state == "feasible" and channel is not None:
            take(probe, channel, achieved)
        else:
            if state == "infeasible":
                lo = probe
            probe *= 2.0
    iterations = 0
    while math.isfinite(min(hi, top)) and min(hi, top) - lo > tol and iterations < 200:
        iterations += 1
        mid = 0.5 * (lo + min(hi, top))
        state, channel, achieved = attempt(mid)
        if state == "feasible" and channel is not None:
            before = hi
            take(mid, channel, achieved)
            if hi == before and hi <= top:
                break  # rounding made the channel no better than the incumbent
        elif state == "infeasible":
            lo = mid
        else:
            break
    if best is None:
        channel = problem.deterministic_channel()
        best = (channel, expected_distortion(problem.prior, channel.matrix, problem.distortion))
    return DesignResult(
        objective="epsilon",
        alpha=math.inf,
        lower=lo,
        upper=hi,
        channel=best[0],
        distortion=best[1],
        max_distortion=D,
        prior=problem.prior,
        method=f"bisection on epsilon over HiGHS LPs ({neighbours} pairs neighbours); "
        "upper = exact epsilon of the returned channel, lower = LP dual certificate",
        converged=hi - lo <= tol,
    )
