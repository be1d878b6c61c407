"""Private log-domain kernels and rounding allowances shared by the capacity solvers."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import xlogy

from infodp.information.divergence import tilted_log_mean

FloatArray = npt.NDArray[np.float64]

_EPS = float(np.finfo(np.float64).eps)
_INF = math.inf


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _readonly(array: Any) -> FloatArray:
    out = np.array(array, dtype=np.float64, copy=True)
    out.setflags(write=False)
    return out


# --------------------------------------------------------------------------------------------
# Numerical kernels (private, vectorised, log domain)
# --------------------------------------------------------------------------------------------


def _log(x: FloatArray) -> FloatArray:
    """Natural log with log(0) = -inf and no warning."""
    with np.errstate(divide="ignore"):
        return np.log(x)


def _lse(v: FloatArray, axis: int | None = None) -> Any:
    """log Σ exp(v) along ``axis``; all -inf gives -inf (no warning)."""
    # The array methods and `== inf` are np.max, np.sum and np.isposinf without their Python
    # wrappers: this runs hundreds of thousands of times on small arrays in the capacity searches.
    v = np.asarray(v)
    mx = v.max(axis=axis, keepdims=True)
    safe = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(under="ignore", over="ignore", invalid="ignore", divide="ignore"):
        s = np.exp(v - safe).sum(axis=axis, keepdims=True)
        out = np.where(mx == np.inf, np.inf, np.log(s) + safe)
    return out.item() if axis is None else np.squeeze(out, axis=axis)


def _log_matmul_exp(log_a: FloatArray, log_b: FloatArray) -> FloatArray:
    """``log(exp(log_a) @ exp(log_b))`` without overflow or underflow.

    ``log_a`` may hold -inf; ``log_b`` may hold -inf and +inf (an +inf term makes the sum +inf
    whenever it meets a positive factor). Row/column shifts give a fast BLAS product; entries at
    risk of underflow are recomputed exactly with a log-sum-exp.
    """
    pos_inf = np.isposinf(log_b)
    b = np.where(pos_inf, -np.inf, log_b)
    ra = np.max(log_a, axis=1, keepdims=True)
    ra = np.where(np.isfinite(ra), ra, 0.0)
    cb = np.max(b, axis=0, keepdims=True)
    cb = np.where(np.isfinite(cb), cb, 0.0)
    with np.errstate(under="ignore"):
        prod = np.exp(log_a - ra) @ np.exp(b - cb)
    out = _log(prod) + ra + cb
    risky_rows = np.flatnonzero((prod < 1e-250).any(axis=1))
    for i in risky_rows:
        out[i] = _lse(log_a[i][:, None] + b, axis=0)
    if pos_inf.any():
        meets = (log_a > -np.inf).astype(np.float64) @ pos_inf.astype(np.float64)
        out[meets > 0] = np.inf
    return out


def _allowance(value: float, terms: int) -> float:
    """Rounding allowance for a value computed from ``terms`` summed terms (relative, worst case).

    Used to round upper bounds up and lower bounds down ("when in doubt, round ε up").
    """
    if not math.isfinite(value):
        return 0.0
    return 4.0 * _EPS * (terms + 4) * max(1.0, abs(value))


def _log_scale(W: FloatArray) -> float:
    """Largest |log W_xy| over positive entries (magnitude of the exponents in the kernels)."""
    positive = W[W > 0]
    return float(-np.log(positive.min())) if positive.size else 0.0


def _order_allowance(value: float, terms: int, alpha: float, log_scale: float) -> float:
    """Rounding allowance for 1/(α−1) log Σ exp(α a + (1−α) b) with |a|, |b| ≤ ``log_scale``.

    The log-sum-exp has absolute error ≲ ε·(terms + max exponent); dividing by α − 1 amplifies
    it, so brackets near α = 1 widen honestly instead of crossing.
    """
    if not math.isfinite(value):
        return 0.0
    if alpha == 1 or math.isinf(alpha):
        return _allowance(value, terms) * (1.0 + log_scale)
    exponent = (alpha + abs(1.0 - alpha)) * 2.0 * log_scale
    return 4.0 * _EPS * ((terms + 4 + exponent) / abs(alpha - 1.0) + abs(value))


_NEAR_ONE = 1e-2
# Within this distance of α = 1, capacity brackets are also bounded by monotonicity in α.
_MONOTONE_WINDOW = 1e-4


def _pairwise_renyi(matrix: FloatArray, alpha: float) -> FloatArray:
    """D_α(W_x ‖ W_x') for all row pairs (nats), α ∈ [0, ∞].

    Definitions from van Erven & Harremoës (2014), Eq. (1) and Thm 4–6 (α = 0, 1, ∞); Mironov
    (2017), Def. 3. α = 1 and α = ∞ are exact branches.
    """
    W = matrix
    n = W.shape[0]
    logW = _log(W)
    pos = W > 0
    if alpha == 0:
        # D_0(P‖Q) = -log Q(supp P)  (van Erven & Harremoës 2014, Thm 4)
        D = -_log(pos.astype(np.float64) @ W.T)
    elif alpha == 1:
        # KL: Σ W_x log W_x - W_x log W_x'; +inf when supp W_x ⊄ supp W_x'.
        h = xlogy(W, W).sum(axis=1)
        L = np.where(pos, logW, 0.0)
        D = h[:, None] - W @ L.T
        viol = pos.astype(np.float64) @ (~pos).astype(np.float64).T
        D[viol > 0] = np.inf
    elif math.isinf(alpha):
        # D_∞(P‖Q) = log max_{y ∈ supp P} P(y)/Q(y)  (Mironov 2017, Eq. (2)).
        D = np.empty((n, n))
        for x in range(n):
            with np.errstate(invalid="ignore"):
                diff = np.where(pos[x][None, :], logW[x][None, :] - logW, -np.inf)
            D[x] = diff.max(axis=1)
    elif abs(alpha - 1.0) < _NEAR_ONE:
        # Near α = 1 the generic form loses ~ε/|α−1|: use infodp's one Rényi kernel
        # (expm1/log1p regime), row x as the weights and log W_x − log W_x' as the values.
        D = np.empty((n, n))
        for x in range(n):
            logw = np.repeat(np.where(pos[x], logW[x], -np.inf)[:, None], n, axis=1)
            with np.errstate(invalid="ignore"):
                L = np.where(pos[x][:, None], logW[x][:, None] - logW.T, 0.0)
            D[x] = tilted_log_mean(logw, L, alpha - 1.0)
    else:
        # D_α(P‖Q) = 1/(α-1) log Σ_y P(y)^α Q(y)^{1-α}  (Rényi 1961, Def. 3).
        with np.errstate(invalid="ignore"):
            lb = np.where(pos, (1.0 - alpha) * logW, np.inf if alpha > 1 else -np.inf)
        D = _log_matmul_exp(np.where(pos, alpha * logW, -np.inf), lb.T) / (alpha - 1.0)
    D = np.maximum(D, 0.0)  # divergences are non-negative; clears -1e-17 round-off
    np.fill_diagonal(D, 0.0)
    return D


def _drop_null_outputs(W: FloatArray) -> FloatArray:
    """Remove outputs that no input can produce (they carry no information)."""
    used = W.max(axis=0) > 0
    return W if used.all() else np.ascontiguousarray(W[:, used])


# ---- Shannon capacity ----------------------------------------------------------------------


def _distinct_rows(W: FloatArray) -> npt.NDArray[np.intp]:
    """Indices of the first occurrence of each distinct row (exact byte equality)."""
    seen: dict[bytes, int] = {}
    for x in range(W.shape[0]):
        seen.setdefault(W[x].tobytes(), x)
    return np.array(sorted(seen.values()), dtype=np.intp)


def _expand_outputs(matrix: FloatArray, q: FloatArray) -> FloatArray:
    """Put a distribution over used outputs back on all outputs (zeros for null outputs)."""
    used = matrix.max(axis=0) > 0
    if used.all():
        return q
    out = np.zeros(matrix.shape[1])
    out[used] = q
    return out


# ---- Sibson capacity -----------------------------------------------------------------------
def _spread(values: FloatArray) -> float:
    return float(np.max(values) - np.min(values))


_MAX_NEWTON_SUPPORT = 256


def _softmax(z: FloatArray) -> FloatArray:
    e = np.exp(z - z.max())
    out: FloatArray = e / e.sum()
    return out
