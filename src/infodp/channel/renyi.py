"""The seed article's Rényi capacity C_α = sup_P D_α(P_XY ‖ P_X P_Y): search and certificates."""

from __future__ import annotations

import heapq
import itertools
import math

import numpy as np
from scipy.optimize import minimize

from infodp.channel._numerics import (
    _INF,
    FloatArray,
    _drop_null_outputs,
    _expand_outputs,
    _log,
    _log_matmul_exp,
    _log_scale,
    _lse,
    _order_allowance,
    _pairwise_renyi,
    _softmax,
)
from infodp.channel.result import CapacityResult
from infodp.channel.shannon import _shannon_capacity
from infodp.channel.sibson import _sibson_capacity


def _renyi_information(
    W: FloatArray, logW: FloatArray, p: FloatArray, alpha: float
) -> tuple[float, FloatArray]:
    """I_α(P; W) = D_α(P_XY ‖ P_X P_Y) (seeds/000, "Mutual information") and ∂I_α/∂P.

    I_α = 1/(α−1) log G,  G = Σ_x P_x Σ_y q_y (W_xy/q_y)^α,  q = PW  (for α ≠ 1, α < ∞).
    ∂G/∂P_x = A_x + (1−α) Σ_y W_xy t_y with A_x = Σ_y q_y (W_xy/q_y)^α, t_y = Σ_x P_x (W_xy/q_y)^α.
    """
    q = p @ W
    log_q = _log(q)
    log_p = _log(p)
    with np.errstate(invalid="ignore"):
        log_r = np.where(W > 0, logW - log_q[None, :], -np.inf)
    ar = alpha * log_r
    log_a = _lse(log_q[None, :] + ar, axis=1)
    log_g = _lse(log_p + log_a)
    value = log_g / (alpha - 1.0)
    log_t = _lse(log_p[:, None] + ar, axis=0)
    with np.errstate(under="ignore", over="ignore"):
        grad_g = np.exp(log_a - log_g) + (1.0 - alpha) * (W @ np.exp(log_t - log_g))
    return float(value), grad_g / (alpha - 1.0)


_Z_BOUND = 35.0


def _local_max_renyi(
    W: FloatArray, logW: FloatArray, alpha: float, start: FloatArray
) -> tuple[float, FloatArray]:
    """Local maximum of I_α over the simplex from ``start`` (L-BFGS-B on softmax logits)."""

    def negative(z: FloatArray) -> tuple[float, FloatArray]:
        p = _softmax(z)
        value, grad = _renyi_information(W, logW, p, alpha)
        gz = p * (grad - float(p @ grad))
        return -value, -gz

    z0 = np.clip(_log(np.maximum(start, 1e-15)), -_Z_BOUND, _Z_BOUND)
    z0 = np.clip(z0 - z0.max(), -_Z_BOUND, _Z_BOUND)
    res = minimize(
        negative,
        z0,
        jac=True,
        method="L-BFGS-B",
        bounds=[(-_Z_BOUND, _Z_BOUND)] * len(z0),
        options={"maxiter": 500, "ftol": 1e-15, "gtol": 1e-12},
    )
    p = _softmax(np.asarray(res.x, dtype=np.float64))
    value, _ = _renyi_information(W, logW, p, alpha)
    return value, p


def _renyi_bnb_upper(
    W: FloatArray, logW: FloatArray, alpha: float, lower: float, budget: int, tol: float
) -> float:
    """Certified upper bound on C_α by branch and bound over the input simplex.

    With G(P) = Σ_x P_x A_x(P), A_x(P) = Σ_y W_xy^α (PW)_y^{1−α}: for α > 1, A_x is convex in P
    (t ↦ t^{1−α} is convex), so on a sub-simplex A_x ≤ U_x = max over its vertices; then
    G ≤ Σ_x P_x U_x, a linear form whose maximum is at a vertex. For α < 1, A_x is concave and
    the same argument bounds G from below, i.e. I_α = log G/(α−1) from above. Simplices are split
    at their longest edge, largest bound first; those that cannot exceed ``lower`` + tol are set
    aside with their bound. The result is the largest bound of all remaining pieces.
    """
    n = W.shape[0]
    aL = np.where(W > 0, alpha * logW, -np.inf)
    cache: dict[bytes, FloatArray] = {}

    def log_a(v: FloatArray) -> FloatArray:
        key = v.tobytes()
        if key not in cache:
            q = v @ W
            with np.errstate(invalid="ignore"):
                lb = np.where(q > 0, (1.0 - alpha) * _log(q), np.inf if alpha > 1 else -np.inf)
            cache[key] = _log_matmul_exp(aL, lb[:, None])[:, 0]
        return cache[key]

    def bound(verts: FloatArray) -> float:
        la = np.stack([log_a(v) for v in verts])  # vertex × input
        ext = la.max(axis=0) if alpha > 1 else la.min(axis=0)
        with np.errstate(invalid="ignore"):
            terms = np.where(verts > 0, _log(verts) + ext[None, :], -np.inf)
        g = _lse(terms, axis=1)
        return float((g.max() if alpha > 1 else g.min()) / (alpha - 1.0))

    root = np.eye(n)
    heap: list[tuple[float, int, FloatArray]] = [(-bound(root), 0, root)]
    counter = 1
    pruned = -_INF
    edges = list(itertools.combinations(range(n), 2))
    while heap and counter < budget:
        neg_ub, _, verts = heapq.heappop(heap)
        if -neg_ub <= lower + tol:
            heapq.heappush(heap, (neg_ub, 0, verts))
            break
        i, j = max(edges, key=lambda ij: float(np.abs(verts[ij[0]] - verts[ij[1]]).sum()))
        mid = 0.5 * (verts[i] + verts[j])
        for replaced in (i, j):
            child = verts.copy()
            child[replaced] = mid
            ub = bound(child)
            counter += 1
            if ub > lower + tol:
                heapq.heappush(heap, (-ub, counter, child))
            else:
                pruned = max(pruned, ub)  # a set-aside simplex still bounds C_α by its bound
    return max([-item[0] for item in heap] + [pruned, lower])


def _renyi_capacity(
    matrix: FloatArray,
    alpha: float,
    tol: float,
    n_starts: int,
    rng: np.random.Generator,
    refine_budget: int,
) -> CapacityResult:
    """The seed article's C_α = sup_P I_α(X;Y): a global-search lower bound and a certified upper.

    I_α is not concave in P, so the lower bound is the best of several local searches (from
    the uniform input, the Shannon and Sibson optima, the two-point inputs on the most distant
    row pairs and random starts); it is attained, never extrapolated. The upper bound is the
    smallest of: the diameter max_{x,x'} D_α(W_x‖W_x') (seeds/000, "Sibson's definition"), for
    α < 1 Shannon's capacity (C_α is non-decreasing in α, seeds/000), and, when
    ``refine_budget`` > 0, a branch-and-bound certificate (:func:`_renyi_bnb_upper`).
    """
    W = _drop_null_outputs(matrix)
    n, m = W.shape
    D = _pairwise_renyi(W, alpha)
    diameter = float(D.max())
    if math.isinf(alpha):
        # C_∞ = max_{x,x'} D_∞(W_x‖W_x') exactly (seeds/000, "Connecting differential privacy to
        # Shannon"); the supremum is approached by (1−t)δ_{x'} + tδ_x as t → 0, not attained.
        x, xp = np.unravel_index(int(np.argmax(D)), D.shape)
        p = np.zeros(n)
        p[xp] = 1.0
        return CapacityResult(
            lower=max(diameter - _order_allowance(diameter, m, alpha, _log_scale(W)), 0.0),
            upper=diameter + _order_allowance(diameter, m, alpha, _log_scale(W)),
            input_distribution=p,
            output_distribution=_expand_outputs(matrix, W[xp]),
            iterations=0,
            definition="renyi",
            alpha=alpha,
            converged=True,
            method="C_inf equals the diameter (pure epsilon); supremum not attained",
        )
    logW = _log(W)
    upper = diameter
    upper_method = "diameter"
    starts: list[FloatArray] = [np.full(n, 1.0 / n)]
    shannon = _shannon_capacity(W, 1e-10, 5000)
    starts.append(np.asarray(shannon.input_distribution))
    if alpha < 1 and shannon.upper < upper:
        upper, upper_method = shannon.upper, "Shannon capacity (monotone in alpha)"
    starts.append(np.asarray(_sibson_capacity(W, alpha, 1e-8, 300).input_distribution))
    if n > 1:
        order = np.argsort(-(D + D.T), axis=None)
        seen: set[tuple[int, int]] = set()
        for flat in order:
            x, xp = divmod(int(flat), n)
            if x >= xp or (x, xp) in seen:
                continue
            seen.add((x, xp))
            for t in (0.05, 0.2, 0.5, 0.8, 0.95):
                p = np.full(n, 1e-9)
                p[x] += 1.0 - t
                p[xp] += t
                starts.append(p / p.sum())
            if len(seen) >= 3:
                break
    starts.extend(rng.dirichlet(np.full(n, 0.5), size=n_starts))
    best_value, best_p = -_INF, starts[0]
    iterations = 0
    for start in starts:
        value, p = _local_max_renyi(W, logW, alpha, start)
        iterations += 1
        if value > best_value:
            best_value, best_p = value, p
    method = f"lower: best of {len(starts)} local searches; upper: {upper_method}"
    if refine_budget > 0 and n > 1 and upper - best_value > tol:
        bnb_upper = _renyi_bnb_upper(W, logW, alpha, best_value, refine_budget, tol)
        if bnb_upper < upper:
            upper = bnb_upper
            method = f"lower: best of {len(starts)} local searches; upper: branch and bound"
    scale = _log_scale(W)
    lower = max(best_value - _order_allowance(best_value, m + n, alpha, scale), 0.0)
    upper = max(upper + _order_allowance(upper, m + n, alpha, scale), lower)
    return CapacityResult(
        lower=lower,
        upper=upper,
        input_distribution=best_p,
        output_distribution=_expand_outputs(matrix, best_p @ W),
        iterations=iterations,
        definition="renyi",
        alpha=alpha,
        converged=upper - lower <= tol,
        method=method,
    )


# --------------------------------------------------------------------------------------------
# Channel
# --------------------------------------------------------------------------------------------
