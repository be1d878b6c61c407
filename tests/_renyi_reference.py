"""Independent references for the C_α tests ("Differential Privacy and Information Theory",
2022): I_α(P) = D_α(P_XY ‖ P_X P_Y) straight from Rényi's definition, batches of
exponentiated-gradient ascents from random starts (not the library's L-BFGS search), and the
best value found inside a cell."""

from __future__ import annotations

import numpy as np


def renyi_information(P: np.ndarray, W: np.ndarray, alpha: float) -> np.ndarray:
    """D_α(P_XY‖P_X P_Y) for a batch of inputs P (rows), Rényi 1961 / the article's eq."""
    joint = P[:, :, None] * W[None]
    prod = P[:, :, None] * (P @ W)[:, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(joint > 0, alpha * np.log(joint) + (1 - alpha) * np.log(prod), -np.inf)
    flat = logs.reshape(len(P), -1)
    return _logsumexp_rows(flat) / (alpha - 1)


def _logsumexp_rows(x: np.ndarray) -> np.ndarray:
    """log Σ exp over each row, shifted by the row's maximum (scipy's logsumexp, without its
    per-call overhead, which was half the time of the ascents): −inf for a row of −inf, +inf
    for a row holding +inf, NaN for a row holding NaN."""
    top = x.max(axis=1)
    shift = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.log(np.exp(x - shift[:, None]).sum(axis=1)) + shift


def multistart_ascent(W: np.ndarray, alpha: float, starts: int, seed: int) -> float:
    """Best I_α over ``starts`` exponentiated-gradient ascents (numerical gradients)."""
    rng = np.random.default_rng(seed)
    n = W.shape[0]
    P = rng.dirichlet(np.full(n, 0.5), size=starts)
    P = 0.999 * P + 0.001 / n
    step, h = 0.5, 1e-7
    best = renyi_information(P, W, alpha)
    for _ in range(150):
        base = renyi_information(P, W, alpha)
        grad = np.empty_like(P)
        for x in range(n):
            Q = P.copy()
            Q[:, x] += h
            grad[:, x] = (renyi_information(Q / Q.sum(axis=1, keepdims=True), W, alpha) - base) / h
        grad = np.clip(np.nan_to_num(grad), -50, 50)
        P = P * np.exp(step * (grad - grad.max(axis=1, keepdims=True)))
        P = np.maximum(P / P.sum(axis=1, keepdims=True), 1e-300)
        best = np.maximum(best, renyi_information(P, W, alpha))
    return float(np.nanmax(best))


def best_in_cell(cell: np.ndarray, W: np.ndarray, alpha: float, rng: np.random.Generator) -> float:
    """Largest I_α (independent formula) at 400 dense samples of a cell and after 100
    exponentiated-gradient steps (barycentric coordinates, numerical gradients) from the 8 best."""
    n = cell.shape[0]
    lam = np.vstack([rng.dirichlet(np.full(n, 0.3), size=400), np.eye(n)])
    values = renyi_information(lam @ cell, W, alpha)
    best = float(values.max())
    top = lam[np.argsort(-values)[:8]]
    k = len(top)
    for _ in range(100):
        base = renyi_information(top @ cell, W, alpha)
        # the n shifted copies of the k points in one batch (row i·k + j: point j, coordinate
        # i raised by 1e-7); the per-call overhead of logsumexp dominated n separate calls
        shifted = np.tile(top, (n, 1))
        shifted[np.arange(n * k), np.repeat(np.arange(n), k)] += 1e-7
        shifted /= shifted.sum(axis=1, keepdims=True)
        grad = ((renyi_information(shifted @ cell, W, alpha).reshape(n, k) - base) / 1e-7).T
        grad = np.nan_to_num(grad)
        scale = np.maximum(np.abs(grad).max(axis=1, keepdims=True), 1e-12)
        top = top * np.exp(0.5 * (grad - grad.max(axis=1, keepdims=True)) / scale)
        top /= top.sum(axis=1, keepdims=True)
        best = max(best, float(np.nanmax(renyi_information(top @ cell, W, alpha))))
    return best


def dirichlet_channel(n: int, m: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.full(m, 0.5), size=n)


def renyi_information_exact(p: np.ndarray, W: np.ndarray, alpha: float) -> float:
    """I_α(P) = 1/(α−1) log Σ_x P_x Σ_y W_xy^α q_y^{1−α} (the article's form of Rényi 1961) in
    50-digit decimal arithmetic, whose exponent range (±10⁹⁹⁹⁹⁹⁹) neither under- nor overflows
    where float64 does (entries ~1e-300, powers ~1e-900)."""
    from decimal import Context, Decimal

    ctx = Context(prec=50, Emin=-999_999_999, Emax=999_999_999)
    P = [ctx.create_decimal(float(v)) for v in p]
    M = [[ctx.create_decimal(float(v)) for v in row] for row in W]
    a = ctx.create_decimal(float(alpha))
    total = Decimal(0)
    for y in range(len(M[0])):
        q = sum((ctx.multiply(P[x], M[x][y]) for x in range(len(P))), Decimal(0))
        for x in range(len(P)):
            if P[x] > 0 and M[x][y] > 0:
                term = ctx.power(M[x][y], a) * ctx.power(q, 1 - a)
                total = ctx.add(total, ctx.multiply(P[x], term))
    return float(ctx.ln(total) / (a - 1))
