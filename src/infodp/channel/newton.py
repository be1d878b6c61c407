"""One damped Newton (active-set) routine for concave objectives on the probability simplex.

Used by the Shannon and Sibson solvers to finish Blahut–Arimoto/Arimoto iterations
quadratically (an active-set finish in the spirit of Yu 2010, "Squeezing the Arimoto–Blahut
algorithm"). The objective supplies its value, gradient and negated Hessian on a support; the
routine keeps p ≥ 0, drops inputs that reach zero and backtracks. Its result is only a
candidate: callers certify it on the whole channel.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from infodp.channel._numerics import FloatArray, _spread

__all__ = [
    "MAX_NEWTON_SUPPORT",
    "SimplexObjective",
    "damped_newton",
    "flagged_inputs",
    "joined",
    "kkt_step",
    "newton_support",
]

#: At most this many inputs enter a Newton solve (its KKT system is dense).
MAX_NEWTON_SUPPORT = 256


class SimplexObjective(Protocol):
    """A concave objective f(p) on the simplex over a subset of inputs (rows)."""

    def evaluate(self, rows: npt.NDArray[np.intp], p: FloatArray) -> tuple[float, FloatArray, Any]:
        """f(p), ∇f(p) and a state reused by :meth:`neg_hessian`."""
        ...

    def neg_hessian(self, rows: npt.NDArray[np.intp], state: Any) -> FloatArray:
        """−∇²f at the evaluated point (positive semi-definite)."""
        ...


def kkt_step(H: FloatArray, g: FloatArray, reg: float) -> FloatArray | None:
    """Newton direction for max f on {Σp = 1}: solve [H+μI 1; 1ᵀ 0][dp; ν] = [g; 0].

    ``H`` is the negated Hessian (positive semi-definite), ``g`` the gradient and μ a
    Levenberg–Marquardt term relative to the trace (it keeps the system solvable when rows are
    affinely dependent: then p is not unique but the value is). None if not finite.

    >>> kkt_step(np.eye(2), np.array([1.0, 0.0]), 0.0).round(6).tolist()
    [0.5, -0.5]
    """
    k = len(g)
    if not (np.isfinite(H).all() and np.isfinite(g).all()):
        return None
    K = np.zeros((k + 1, k + 1))
    K[:k, :k] = H + (reg * float(np.trace(H)) / k) * np.eye(k)
    K[:k, k] = 1.0
    K[k, :k] = 1.0
    rhs = np.concatenate([g, [0.0]])
    try:
        with np.errstate(all="ignore"):
            sol = np.linalg.solve(K, rhs)
        if not np.isfinite(sol).all():
            raise np.linalg.LinAlgError
    except np.linalg.LinAlgError:
        try:
            sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
        except np.linalg.LinAlgError:
            return None
    dp = sol[:k]
    return dp if np.isfinite(dp).all() else None


def damped_newton(
    objective: SimplexObjective,
    support: npt.NDArray[np.intp],
    p_s: FloatArray,
    max_steps: int,
    *,
    greedy: bool = False,
) -> tuple[npt.NDArray[np.intp], FloatArray, int]:
    """Maximise a concave ``objective`` over the simplex on the inputs ``support``.

    Each step solves the equality-constrained Newton (KKT) system (:func:`kkt_step`), keeps
    p ≥ 0 (the blocking input leaves the support) and halves the step until f does not
    decrease; with ``greedy`` a full step first tries to drop every input it drives negative
    at once. Near the optimum f is flat to rounding, so a step that does not lower f beyond
    rounding and halves the KKT residual (spread of ∇f over the support) is also accepted.
    Returns (support, p on it, steps).
    """
    steps = 0
    value, g, state = objective.evaluate(support, p_s)
    reg = 1e-9

    def stationary(val: float, grad: FloatArray) -> bool:
        scale = max(1.0, abs(val), float(np.max(np.abs(grad))))
        return _spread(grad) <= 1e-14 * scale

    for _ in range(min(max_steps, 200)):
        steps += 1
        if len(support) == 1 or not np.isfinite(g).all() or stationary(value, g):
            break
        dp = kkt_step(objective.neg_hessian(support, state), g, reg)
        if dp is None:
            break
        neg = dp < 0
        t_max = 1.0
        if neg.any():
            t_max = min(1.0, float(np.min(-p_s[neg] / dp[neg])))
        slack = 1e-15 * max(1.0, abs(value))
        accepted: tuple[FloatArray, float, FloatArray, Any] | None = None
        if greedy and t_max < 1.0:
            cand = np.maximum(p_s + dp, 0.0)
            if cand.sum() > 0:
                cand /= cand.sum()
                trial = objective.evaluate(support, cand)
                if trial[0] > value:
                    accepted = (cand, *trial)
        if accepted is None:
            t = t_max
            blocking = int(np.argmin(np.where(neg, -p_s / np.where(neg, dp, -1.0), np.inf)))
            while t >= 1e-10:
                cand = np.maximum(p_s + t * dp, 0.0)
                if t == t_max < 1.0:
                    cand[blocking] = 0.0
                cand /= cand.sum()
                trial = objective.evaluate(support, cand)
                if trial[0] >= value - slack or (
                    trial[0] >= value - 1e3 * slack and _spread(trial[1]) < 0.5 * _spread(g)
                ):
                    accepted = (cand, *trial)
                    break
                t *= 0.5
        if accepted is None:
            if reg >= 1e-3:
                break
            reg *= 1e3
            continue
        reg = max(1e-9, reg / 10.0)
        cand, value, g, state = accepted
        keep = cand > 1e-15 * cand.max()
        if not keep.all():
            support, cand = support[keep], cand[keep]
            cand /= cand.sum()
            value, g, state = objective.evaluate(support, cand)
        p_s = cand
    return support, p_s, steps


# The capacity solvers (Shannon, Sibson) run Newton on a candidate support that they grow from
# the certificate: the scores are D(W_x‖q) per input x, whose maximum is the upper bound.


def newton_support(
    scores: FloatArray, p: FloatArray, gap: float
) -> tuple[npt.NDArray[np.intp], FloatArray]:
    """The inputs scoring within 2·``gap`` of the best (the best ``MAX_NEWTON_SUPPORT`` of
    them at most), with ``p`` restricted to them and renormalised.

    >>> s, p_s = newton_support(np.array([1.0, 0.2, 0.9]), np.array([0.5, 0.3, 0.2]), 0.1)
    >>> s.tolist(), p_s.round(3).tolist()
    ([0, 2], [0.714, 0.286])
    """
    support = np.flatnonzero(float(np.max(scores)) - 2.0 * gap <= scores)
    if len(support) > MAX_NEWTON_SUPPORT:
        support = np.sort(np.argsort(-scores)[:MAX_NEWTON_SUPPORT])
    p_s = np.maximum(p[support], 1e-300)
    p_s /= p_s.sum()
    return support, p_s


def flagged_inputs(
    scores: FloatArray, support: npt.NDArray[np.intp], lower: float
) -> npt.NDArray[np.intp]:
    """Inputs off ``support`` whose score is +∞ or above halfway from ``lower`` to the best.

    >>> flagged_inputs(np.array([1.0, 0.2, 0.1, 0.9]), np.array([0]), 0.5).tolist()
    [3]
    """
    upper = float(np.max(scores))
    with np.errstate(invalid="ignore"):
        flagged = np.flatnonzero(np.isposinf(scores) | (lower + 0.5 * (upper - lower) < scores))
    return np.setdiff1d(flagged, support)


def joined(
    support: npt.NDArray[np.intp], p_s: FloatArray, new: npt.NDArray[np.intp]
) -> tuple[npt.NDArray[np.intp], FloatArray]:
    """``support`` with the inputs ``new`` added (1e-6 of mass between them), sorted.

    >>> s, p_s = joined(np.array([2]), np.array([1.0]), np.array([0]))
    >>> s.tolist(), p_s.round(7).tolist()
    ([0, 2], [1e-06, 0.999999])
    """
    if not len(new):
        return support, p_s
    support = np.concatenate([support, new])
    p_s = np.concatenate([p_s, np.full(len(new), 1e-6 / len(new))])
    p_s /= p_s.sum()
    order = np.argsort(support)
    return support[order], p_s[order]
