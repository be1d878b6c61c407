"""Sibson's α-capacity (the radius min_Q max_x D_α(W_x‖Q)) with a certified bracket."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp.channel._numerics import (
    _INF,
    FloatArray,
    _allowance,
    _drop_null_outputs,
    _expand_outputs,
    _log,
    _log_matmul_exp,
    _log_scale,
    _lse,
    _order_allowance,
)
from infodp.channel.newton import damped_newton, flagged_inputs, joined, newton_support
from infodp.channel.result import CapacityResult


class _SibsonObjective:
    """Φ(P) = sign·Σ_y (Σ_x P_x W_xy^α)^{1/α} on a support (``Wa`` = W^α).

    sign = +1 for α > 1 (concave) and −1 for α < 1 (the sum is convex there); Sibson's
    I^s_α = α/(α−1) log Σ_y (...)^{1/α} is increasing in Φ ("Differential Privacy and Information
    Theory", 2022, "Sibson's definition").
    """

    def __init__(self, Wa: FloatArray, alpha: float) -> None:
        self.Wa, self.beta = Wa, 1.0 / alpha
        self.sign = 1.0 if alpha > 1 else -1.0

    def evaluate(self, rows: npt.NDArray[np.intp], p: FloatArray) -> tuple[float, FloatArray, Any]:
        ws = self.Wa[rows]
        s = p @ ws
        cols = s > 0
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            value = self.sign * float(np.sum(s[cols] ** self.beta))
            g = self.sign * self.beta * (ws[:, cols] @ s[cols] ** (self.beta - 1.0))
        return value, g, s

    def neg_hessian(self, rows: npt.NDArray[np.intp], state: Any) -> FloatArray:
        s = state
        cols = s > 0
        wc = self.Wa[rows][:, cols]
        curvature = abs(self.beta * (self.beta - 1.0))
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            out: FloatArray = curvature * (wc * s[cols] ** (self.beta - 2.0)) @ wc.T
        return out


def _sibson_state(
    logW: FloatArray, log_p: FloatArray, alpha: float
) -> tuple[float, float, FloatArray, FloatArray]:
    """Sibson's I^s_α at P (lower), max_x D_α(W_x‖Q*) (upper), D_α(W_x‖Q*), log Q*.

    Q*_y ∝ (Σ_x P_x W_xy^α)^{1/α} and I^s_α = α/(α−1) log Σ_y (Σ_x P_x W_xy^α)^{1/α}
    ("Differential Privacy and Information Theory", 2022, "Sibson's definition"; Verdú 2015, Eq.
    (38)–(39)); any Q certifies
    radius = min_Q max_x D_α(W_x‖Q) ≤ max_x D_α(W_x‖Q).
    """
    aL = alpha * logW
    log_p = log_p - _lse(log_p)  # the bounds hold for a normalised P only
    log_s = _log_matmul_exp(log_p[None, :], aL)[0]
    log_f = _lse(log_s / alpha)
    lower = alpha / (alpha - 1.0) * log_f
    log_q = log_s / alpha - log_f
    with np.errstate(invalid="ignore"):
        lb = np.where(np.isfinite(log_q), (1.0 - alpha) * log_q, np.inf if alpha > 1 else -np.inf)
    D = _log_matmul_exp(aL, lb[:, None])[:, 0] / (alpha - 1.0)
    return float(lower), float(np.max(D)), D, log_q


def _sibson_capacity(matrix: FloatArray, alpha: float, tol: float, max_iter: int) -> CapacityResult:
    """Sibson's α-capacity (= Arimoto's = Augustin–Csiszár's) with a certified bracket.

    The update P_x ← P_x exp(α D_α(W_x ‖ Q*(P))) / Z is alternating maximisation over a reverse
    channel (Arimoto 1977; Kamatsuka et al. 2024, arXiv:2401.14241, who prove global
    convergence); at α = 1 it is Blahut–Arimoto. It is accelerated by SQUAREM and, after 60
    steps, finished by Newton steps on the candidate support
    (:func:`infodp.channel.newton.damped_newton`). Every iterate is certified in the log
    domain by :func:`_sibson_state`.
    """
    W = _drop_null_outputs(matrix)
    n, m = W.shape
    if math.isinf(alpha):
        # I^s_∞ = log Σ_y max_x W(y|x) for any full-support P (Sibson 1969; Issa et al. 2020,
        # maximal leakage); Q*_y ∝ max_x W(y|x).
        col = W.max(axis=0)
        value = math.log(float(col.sum()))
        return CapacityResult(
            lower=max(value - _allowance(value, m), 0.0),
            upper=value + _allowance(value, m),
            input_distribution=np.full(n, 1.0 / n),
            output_distribution=_expand_outputs(matrix, col / col.sum()),
            iterations=0,
            definition="sibson",
            alpha=alpha,
            converged=True,
            method="closed form log Σ_y max_x P(y|x)",
        )
    logW = _log(W)
    scale = _log_scale(W)
    log_p = np.full(n, -math.log(n))
    best_lower, best_upper = -_INF, _INF
    best_p = np.exp(log_p)
    best_q = np.full(m, 1.0 / m)
    iterations = 0

    last_D = np.zeros(n)

    def step(lp: FloatArray) -> tuple[float, FloatArray]:
        """Certify the input exp(lp); return its I^s_α and the next iterate F(lp)."""
        nonlocal best_lower, best_upper, best_p, best_q, iterations, last_D
        iterations += 1
        lower, upper, D, log_q = _sibson_state(logW, lp, alpha)
        last_D = D
        raw = lower
        lower -= _order_allowance(lower, n + m, alpha, scale)
        upper += _order_allowance(upper, n + m, alpha, scale)
        if lower > best_lower:
            best_lower, best_p = lower, np.exp(lp - _lse(lp))
        if upper < best_upper:
            best_upper, best_q = upper, np.exp(log_q)
        nxt = lp + alpha * np.where(np.isfinite(D), D, 0.0)
        nxt -= _lse(nxt)
        return raw, np.maximum(nxt, -700.0)

    # Near α = 1 the rounding allowance alone may exceed tol: stop once the raw gap is negligible.
    allowance = 2.0 * _order_allowance(1.0, n + m, alpha, scale)

    def done() -> bool:
        gap = best_upper - best_lower
        return gap <= tol or gap - allowance <= 1e-3 * tol or iterations >= max_iter

    # Arimoto's map F accelerated by SQUAREM (Varadhan & Roland 2008, scheme S3) with a
    # monotonicity safeguard: the extrapolated point is kept only if its I^s_α is not worse.
    # After a few dozen steps, Newton on the candidate support (as for Shannon) finishes.
    _, x1 = step(log_p)
    newton_at = iterations + 60
    while not done():
        if iterations >= newton_at:
            newton_at = max_iter + 1  # once
            with np.errstate(under="ignore"):
                Wa = np.exp(np.where(W > 0, alpha * logW, -np.inf))
            p_cur = best_p / best_p.sum()
            step(np.maximum(_log(p_cur), -700.0))
            support, p_s = newton_support(last_D, p_cur, max(best_upper - best_lower, 0.0))
            for _ in range(20):
                support, p_s, steps = damped_newton(_SibsonObjective(Wa, alpha), support, p_s, 200)
                p_new = np.zeros(n)
                p_new[support] = p_s
                lower_now, _ = step(_log(p_new))
                if done():
                    break
                new = flagged_inputs(last_D, support, lower_now)
                if len(new) == 0 and steps <= 1:
                    break
                support, p_s = joined(support, p_s, new)
            if done():
                break
            log_p = np.maximum(_log(best_p), -700.0)
            _, x1 = step(log_p)
            continue
        value1, x2 = step(x1)
        if done():
            break
        r = x1 - log_p
        v = x2 - x1 - r
        norm_v = float(np.linalg.norm(v))
        if norm_v == 0.0:
            log_p, x1 = x1, x2
            continue
        a = min(-1.0, -float(np.linalg.norm(r)) / norm_v)
        extrapolated = log_p - 2.0 * a * r + a * a * v
        extrapolated = np.maximum(extrapolated - _lse(extrapolated), -700.0)
        value_e, after = step(extrapolated)
        if value_e >= value1:
            log_p, x1 = extrapolated, after
        else:
            log_p = x2
            _, x1 = step(log_p)
    return CapacityResult(
        lower=max(best_lower, 0.0),
        upper=best_upper,
        input_distribution=best_p / best_p.sum(),
        output_distribution=_expand_outputs(matrix, best_q / best_q.sum()),
        iterations=iterations,
        definition="sibson",
        alpha=alpha,
        converged=best_upper - best_lower <= tol,
        method="Arimoto alternating maximisation (SQUAREM) + Newton on the support",
    )


# ---- Rényi capacity of the article (2022) -------------------------------------------------------
