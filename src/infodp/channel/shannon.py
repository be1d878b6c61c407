"""Shannon capacity (α = 1, MI-DP) with a certified bracket."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import xlogy

from infodp.channel._numerics import (
    FloatArray,
    _allowance,
    _distinct_rows,
    _drop_null_outputs,
    _expand_outputs,
    _lse,
)
from infodp.channel.newton import (
    MAX_NEWTON_SUPPORT,
    damped_newton,
    flagged_inputs,
    joined,
    newton_support,
)
from infodp.channel.result import CapacityResult, _Bracket
from infodp.errors import InternalError


class _MutualInformation:
    """I(p; W_S) on a support S: value, gradient D(W_x‖q) (up to a constant) and −Hessian."""

    def __init__(self, W: FloatArray, h: FloatArray) -> None:
        self.W, self.h = W, h

    def evaluate(self, rows: npt.NDArray[np.intp], p: FloatArray) -> tuple[float, FloatArray, Any]:
        ws = self.W[rows]
        q = p @ ws
        with np.errstate(divide="ignore"):
            lq = np.where(q > 0, np.log(np.where(q > 0, q, 1.0)), 0.0)
        d = self.h[rows] - ws @ lq
        return float(p @ d), d, q

    def neg_hessian(self, rows: npt.NDArray[np.intp], state: Any) -> FloatArray:
        # −∇²I = W_S diag(1/q) W_Sᵀ
        q = state
        cols = q > 0
        wc = self.W[rows][:, cols]
        out: FloatArray = (wc / q[cols]) @ wc.T
        return out


def _shannon_certificate(
    W: FloatArray, h: FloatArray, p: FloatArray
) -> tuple[float, float, FloatArray, FloatArray]:
    """Certified (lower, upper) at input ``p``, with D_x = D(W_x ‖ pW) and q = pW.

    lower = I(p; W) = Σ_x p_x D(W_x ‖ pW) and upper = max_x D(W_x ‖ q): Blahut (1972), Thm 2;
    Arimoto (1972), Sec. III; equivalently C = min_q max_x D(W_x ‖ q) (Gallager 1968, Thm 4.5.1).
    """
    m = W.shape[1]
    p = p / p.sum()
    q = p @ W
    total = float(q.sum())
    lq = np.log(np.where(q > 0, q, 1.0))
    tiny = q < 1e-290
    if tiny.any():
        # p_x W_xy can underflow to 0 although q_y > 0 (subnormal W_xy, e.g. far Gaussian
        # tails): recompute those log q_y as a log-sum-exp, which never underflows.
        with np.errstate(divide="ignore"):
            lq[tiny] = _lse(np.log(p)[:, None] + np.log(W[:, tiny]), axis=0)
    positive = lq > -np.inf
    lq = np.where(positive, lq, 0.0)
    D = h - W @ lq
    if not positive.all():
        D[(W[:, ~positive] > 0).any(axis=1)] = np.inf
    support = p > 0
    lower = float(p[support] @ D[support])
    # Σ_y W_xy log q_y with Σq ≠ 1 by rounding: normalising q adds log Σq to every D_x.
    upper = float(D.max()) + math.log(total)
    scale = float(np.max(-h)) + float(np.max(np.abs(lq)))
    lower -= _allowance(scale, m)
    upper += _allowance(scale, m)
    return lower, upper, D, q / total


# Blahut–Arimoto iterations of the fallback without any change of the bracket's sides
# after which it stops (the last change in the 2 × 803 Gaussian view came after 6 000).
_STALL = 10_000


def _shannon_capacity(matrix: FloatArray, tol: float, max_iter: int) -> CapacityResult:
    """Shannon capacity with a certified bracket.

    Blahut–Arimoto iterations (Blahut 1972; Arimoto 1972) identify the likely support of the
    optimal input; damped Newton steps on that support (an active-set finish in the spirit of
    Yu 2010, "Squeezing the Arimoto–Blahut algorithm") converge quadratically; inputs that the
    full-channel certificate flags (div(W_x‖q) above the lower bound) re-enter the support. Every
    iterate is certified on the whole channel with :func:`_shannon_certificate`.
    """
    W_all = _drop_null_outputs(matrix)
    # Identical rows are one input as far as capacity goes: keep the first of each.
    distinct = _distinct_rows(W_all)
    W = W_all if len(distinct) == W_all.shape[0] else np.ascontiguousarray(W_all[distinct])
    n = W.shape[0]
    h = xlogy(W, W).sum(axis=1)
    best = _Bracket()
    p = np.full(n, 1.0 / n)
    log_p = np.log(p)
    iterations = 0
    method = "Blahut-Arimoto"

    def offer(pp: FloatArray) -> FloatArray:
        pp = pp / pp.sum()
        lo, up, d, q = _shannon_certificate(W, h, pp)
        best.offer(lo, pp, up, q)
        return d

    # Phase 1: plain Blahut–Arimoto, p_x ← p_x exp(div(W_x‖pW)) / Z (Blahut 1972, Thm 3).
    ba_budget = min(max_iter, 400)
    div = offer(p)
    while iterations < ba_budget and best.upper - best.lower > tol:
        iterations += 1
        log_p = log_p + np.where(np.isfinite(div), div, 0.0)
        log_p -= _lse(log_p)
        p = np.exp(log_p)
        div = offer(p)
        if iterations >= 20 and best.upper - best.lower < 1e-2:
            break

    # Phase 2: Newton on the candidate support, re-certified on the whole channel; inputs the
    # certificate flags (div(W_x‖q) well above the current information) join the support.
    rounds = 0
    if best.upper - best.lower > tol and n > 1:
        method = "Blahut-Arimoto + Newton on the support"
        support, p_s = newton_support(div, p, best.upper - best.lower)
        while rounds < 30 and iterations < max_iter:
            rounds += 1
            support, p_s, steps = damped_newton(
                _MutualInformation(W, h), support, p_s, max_iter - iterations, greedy=rounds == 1
            )
            iterations += steps
            p_new = np.zeros(n)
            p_new[support] = p_s
            div = offer(p_new)
            if best.upper - best.lower <= tol:
                break
            new = flagged_inputs(div, support, float(p_s @ div[support]))
            if len(support) + len(new) > MAX_NEWTON_SUPPORT:
                break
            if len(new):
                support, p_s = joined(support, p_s, new)
            elif steps <= 1:
                break  # Newton cannot improve further: hand over to Blahut–Arimoto
        p = p_new if best.p is None else best.p

    # Phase 3 (fallback): keep iterating Blahut–Arimoto from the best input found so far,
    # until neither side has moved for _STALL iterations: the rounding allowances can keep
    # the gap above ``tol`` (scale·m·ε of float64: 1.03e-9 nats for 803 outputs with tails
    # near 1e-300), where the iterates only move the sides in the last bits.
    if best.upper - best.lower > tol and iterations < max_iter and best.p is not None:
        p = 0.99 * best.p + 0.01 / n
        log_p = np.log(p)
        div = offer(p)
        sides, moved = (best.lower, best.upper), iterations
        while iterations < max_iter and best.upper - best.lower > tol:
            iterations += 1
            log_p = log_p + np.where(np.isfinite(div), div, 0.0)
            log_p -= _lse(log_p)
            div = offer(np.exp(log_p))
            if (best.lower, best.upper) != sides:
                sides, moved = (best.lower, best.upper), iterations
            elif iterations - moved >= _STALL:
                break

    if best.p is None or best.q is None:  # every certificate was NaN: a bug, not user input
        raise InternalError("Shannon capacity: no finite certificate was found")
    full_q = _expand_outputs(matrix, best.q)
    full_p = np.zeros(W_all.shape[0])
    full_p[distinct] = best.p
    return CapacityResult(
        lower=max(best.lower, 0.0),
        upper=best.upper,
        input_distribution=full_p,
        output_distribution=full_q,
        iterations=iterations,
        definition="shannon",
        alpha=1.0,
        converged=best.upper - best.lower <= tol,
        method=method,
    )
