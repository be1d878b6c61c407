"""The rate–distortion function R(D) = min I(X;Y) s.t. E d(X,Y) ≤ D, with a certified bracket.

This is the mutual-information privacy–distortion problem of Wang, Ying & Zhang (2016;
Ünsal & Önen 2023, §5, Eqs. (53)–(56)), i.e. Shannon's rate–distortion function of the prior.
Blahut's iteration (Blahut 1972, "Computation of channel capacity and rate-distortion
functions", IEEE Trans. IT 18(4), Thm 2 and Thm 6) works at a fixed slope s ≥ 0: with an
output law q, ``W(y|x) ∝ q(y) e^{−s d(x,y)}`` and ``q ← p W``. For *any* s ≥ 0 and any q, with
``λ_x = 1 / Σ_y q_y e^{−s d(x,y)}`` and ``c_y = Σ_x p_x λ_x e^{−s d(x,y)}``,

    R(D) ≥ −s D + Σ_x p_x log λ_x − log max_y c_y          (Blahut 1972, Thm 6; our s = −his s)

(the dual of the convex program, Csiszár 1974), while the mutual information of any channel
with distortion ≤ D is an upper bound. The slope is tuned by Brent's root finder until the
channel's distortion meets D; a last convex mix with the least-distortion channel makes the
distortion ≤ D exactly. The bracket is certified to ``tol`` (default 1e-9 nats).

For k equiprobable values and Hamming distortion, R(D) = log k − h(D) − D log(k − 1) for
0 ≤ D ≤ 1 − 1/k (Cover & Thomas 2006, Problem 10.5; Berger 1971, Example 2.7.3).

>>> import math
>>> r = rate_distortion([0.25] * 4, "hamming", 0.1)
>>> h = -0.1 * math.log(0.1) - 0.9 * math.log(0.9)
>>> r.lower <= math.log(4) - h - 0.1 * math.log(3) <= r.upper, r.gap <= 1e-9
(True, True)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.optimize import brentq

from infodp._validate import as_positive, as_positive_int
from infodp.channel import Channel
from infodp.design.problem import Problem, as_problem
from infodp.design.result import DesignResult, FloatArray, expected_distortion
from infodp.errors import ParameterError
from infodp.information import mutual_information

__all__ = ["blahut_arimoto_rd", "rate_distortion"]


class _Blahut:
    """Blahut's iteration at one slope, warm-started from the last output law."""

    def __init__(self, prior: FloatArray, d: FloatArray, tol: float, max_iter: int) -> None:
        self.p = prior
        self.d = d
        self.shift = d.min(axis=1)
        self.q = np.full(d.shape[1], 1.0 / d.shape[1])
        self.tol = tol
        self.max_iter = max_iter
        self.iterations = 0

    def run(self, s: float) -> tuple[FloatArray, float, FloatArray, FloatArray]:
        """Iterate at slope ``s``: (channel W, its distortion, Z, c) at the last output law.

        Blahut's map q ← q·c is an EM step (it decreases −Σ_x p_x log Σ_y q_y A_xy); it is
        accelerated by SQUAREM (Varadhan & Roland 2008, Scand. J. Stat. 35(2), scheme S3) with
        a monotonicity safeguard. Acceleration changes only the speed: the bounds are evaluated
        at whatever q results.
        """
        p = self.p
        A = np.exp(-s * (self.d - self.shift[:, None]))  # row maxima are exactly 1

        def step(q: FloatArray) -> tuple[FloatArray, FloatArray]:
            c = A.T @ (p / np.maximum(A @ q, 1e-300))
            nxt = q * c
            return nxt / nxt.sum(), c

        def objective(q: FloatArray) -> float:
            return -float(p @ np.log(np.maximum(A @ q, 1e-300)))

        # a warm start may have dropped outputs that this slope needs: keep every output alive
        q = 0.999 * self.q + 0.001 / self.q.size
        while self.iterations < self.max_iter:
            self.iterations += 1
            q1, c = step(q)
            # Blahut (1972) Thm 6 gap at the iterate's own distortion: log max c − Σ q c log c
            gap = math.log(float(c.max())) - float(np.sum(q * c * np.log(np.maximum(c, 1e-300))))
            if gap <= self.tol:
                break
            if self.iterations % 32 == 0:
                # EM shrinks unused outputs only geometrically: drop those the KKT conditions
                # exclude (c_y < 1), revive the most violating one (c_y > 1) if it was dropped.
                # Any q gives valid bounds; this only changes the speed.
                q1 = np.where((q1 < 1e-9 * q1.max()) & (c < 1.0), 0.0, q1)
                top = int(np.argmax(c))
                if q1[top] == 0.0:
                    q1[top] = 1e-6
                q1 = q1 / q1.sum()
            q2, _ = step(q1)
            r, v = q1 - q, q2 - 2.0 * q1 + q
            norm_v = float(np.linalg.norm(v))
            if norm_v == 0.0:
                q = q2
                continue
            a = min(-1.0, -float(np.linalg.norm(r)) / norm_v)
            jump = np.clip(q - 2.0 * a * r + a * a * v, 0.0, None)
            jump, _ = step(jump / jump.sum())
            q = jump if objective(jump) <= objective(q2) else q2
        self.q = q
        Z = A @ q
        c = A.T @ (p / Z)
        W = A * q[None, :] / Z[:, None]
        return W, float(np.sum(p[:, None] * W * self.d)), Z, c

    def lower(self, s: float, D: float, Z: FloatArray, c: FloatArray) -> float:
        """The certified bound −sD + Σ p log λ − log max c at the target D."""
        log_lambda = s * self.shift - np.log(Z)
        return -s * D + float(self.p @ log_lambda) - math.log(float(c.max()))


def blahut_arimoto_rd(
    prior: Any, distortion: Any, slope: float, *, tol: float = 1e-12, max_iter: int = 100_000
) -> tuple[Channel, float, float]:
    """Blahut's rate–distortion iteration at slope ``s``: ``(channel, D(s), R lower bound)``.

    The channel is the (near-)optimal test channel at slope s; the bound is certified for
    R(D(s)).

    >>> ch, D, low = blahut_arimoto_rd([0.5, 0.5], "hamming", math.log(9))
    >>> round(D, 9), abs(low - (math.log(2) + 0.1 * math.log(0.1) + 0.9 * math.log(0.9))) < 1e-9
    (0.1, True)
    """
    problem = as_problem(prior, distortion)
    if problem.prior is None:
        raise ParameterError("prior", None, "a probability vector for the rate-distortion problem")
    s = as_positive("slope", slope)
    ba = _Blahut(problem.prior, problem.distortion, as_positive("tol", tol), max_iter)
    W, D, Z, c = ba.run(s)
    return Channel(W / W.sum(axis=1, keepdims=True)), D, ba.lower(s, D, Z, c)


def _mix_to_budget(problem: Problem, W: FloatArray, achieved: float, D: float) -> FloatArray:
    """Mix W with the least-distortion channel so that the distortion is ≤ D (convexity)."""
    if achieved <= D:
        return W
    base = problem.deterministic_channel().matrix
    floor = problem.smallest_distortion
    theta = min(1.0, (achieved - D) / (achieved - floor) * (1.0 + 1e-12) + 1e-15)
    return (1.0 - theta) * W + theta * base


def rate_distortion(
    prior: Any,
    distortion: Any,
    max_distortion: float,
    *,
    tol: float = 1e-9,
    max_iter: int = 2_000_000,
) -> DesignResult:
    """R(D): the least mutual information I(X;Y) (nats) with E d(X, Y) ≤ D.

    Returns a :class:`~infodp.design.DesignResult` with a bracket of width ≤ ``tol`` when
    ``converged``. ``prior`` must be a probability vector (the worst case over priors of
    mutual information is a channel-capacity problem, not offered here).

    >>> r = rate_distortion([0.5, 0.5], "hamming", 0.5)
    >>> r.lower, r.upper
    (0.0, 0.0)
    """
    problem = as_problem(prior, distortion)
    if problem.prior is None:
        raise ParameterError(
            "prior", None, "a probability vector for the mutual-information objective"
        )
    D = problem.check_max_distortion(max_distortion)
    tol = as_positive("tol", tol)
    max_iter = as_positive_int("max_iter", max_iter)
    p = problem.prior
    if problem.zero_leakage_distortion <= D:
        channel = problem.constant_channel()
        return _result(problem, D, 0.0, 0.0, channel, "constant output: nothing leaks", True)
    ba = _Blahut(p, problem.distortion, tol / 10.0, max_iter)
    spread = float(np.ptp(problem.distortion)) or 1.0

    def excess(s: float) -> float:
        return ba.run(s)[1] - D

    s_hi = 1.0 / spread
    while excess(s_hi) > 0 and s_hi < 1e4 / spread:
        s_hi *= 4.0
    if excess(s_hi) > 0:  # D at (numerically) the smallest distortion: the deterministic limit
        s = s_hi
    else:
        s_lo = s_hi / 4.0 if s_hi > 1.0 / spread else 0.0
        s = brentq(excess, s_lo, s_hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)
    W, achieved, Z, c = ba.run(s)
    lower = max(0.0, ba.lower(s, D, Z, c) - 1e-13 * (1.0 + s * D))
    W = _mix_to_budget(problem, W, achieved, D)
    channel = Channel(W / W.sum(axis=1, keepdims=True))
    used = channel.matrix.max(axis=0) > 0
    upper = mutual_information(p, channel.matrix[:, used])
    upper = upper + 1e-13 * (1.0 + abs(upper))
    lower = min(lower, upper)
    return _result(
        problem,
        D,
        lower,
        upper,
        channel,
        f"Blahut (1972) iteration at slope s = {s:.12g} ({ba.iterations} iterations); "
        "lower = Blahut's dual bound, upper = I(X;Y) of the returned channel",
        upper - lower <= tol,
    )


def _result(
    problem: Problem,
    D: float,
    lower: float,
    upper: float,
    channel: Channel,
    method: str,
    converged: bool,
) -> DesignResult:
    return DesignResult(
        objective="mutual-information",
        alpha=1.0,
        lower=lower,
        upper=upper,
        channel=channel,
        distortion=expected_distortion(problem.prior, channel.matrix, problem.distortion),
        max_distortion=D,
        prior=problem.prior,
        method=method,
        converged=converged,
    )
