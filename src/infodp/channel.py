"""Discrete channels P(Y|X) and their capacities, with certified brackets.

A privacy mechanism seen from one individual's row is a noisy channel: row ``x`` of the
matrix is the output distribution ``P(Y | X = x)``. Its privacy at level α is the seed
article's Rényi channel capacity (seeds/000, "Channel Capacity")::

    C_α = sup_{P_X} I_α(X; Y),   I_α(X; Y) = D_α(P_XY ‖ P_X P_Y),

bracketed by Sibson's capacity (the "radius") below and the largest pairwise Rényi divergence
between rows (the "diameter", the Rényi-DP ε(α) of the channel) above (seeds/000, "Sibson's
definition")::

    min_Q max_x D_α(P_{Y|x} ‖ Q)  ≤  C_α  ≤  max_{x,x'} D_α(P_{Y|x} ‖ P_{Y|x'}).

At α = 1 all three notions coincide with Shannon's capacity (MI-DP); at α = ∞ the diameter
equals C_∞, the channel's pure ε.

The API: :class:`Channel` (``matrix``, ``inputs``, ``outputs``; constructors
``binary_symmetric``, ``binary_erasure``, ``z_channel``, ``randomized_response``; ``then`` for
post-processing and ``product`` / ``&`` for two uses on the same input) with ``epsilon()``,
``delta(eps)``, ``divergences(α)``, ``diameter(α)``, ``shannon_capacity()``,
``sibson_capacity(α)``, ``renyi_capacity(α)`` and ``capacity(α, definition=...)``, each
capacity returned as a :class:`CapacityResult`.

Every capacity is returned as a :class:`CapacityResult` holding a bracket ``[lower, upper]``
that contains the true value: ``lower`` is the information of an explicit input distribution,
``upper`` a dual certificate (for instance ``max_x D(W_x ‖ q)`` for an explicit ``q``). A small
allowance for floating-point rounding is subtracted from ``lower`` and added to ``upper``, so
``upper`` can be used as a privacy guarantee and ``lower`` as an attack rate.

>>> bsc = Channel.binary_symmetric(0.1)
>>> result = bsc.capacity()
>>> closed_form = math.log(2) + 0.1 * math.log(0.1) + 0.9 * math.log(0.9)  # log 2 − H(0.1)
>>> result.lower <= closed_form <= result.upper, result.upper - result.lower <= 1e-9
(True, True)
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.optimize import minimize
from scipy.special import xlogy

from infodp._validate import (
    SUM_TOLERANCE,
    as_alpha,
    as_nonnegative,
    as_positive,
    as_positive_int,
    as_probability,
    as_real,
)
from infodp.errors import InternalError, ParameterError

__all__ = ["DEFINITIONS", "CapacityResult", "Channel"]

FloatArray = npt.NDArray[np.float64]
#: The capacity definitions accepted by :meth:`Channel.capacity` and ``infodp capacity``.
DEFINITIONS: tuple[str, ...] = ("shannon", "sibson", "renyi")

_EPS = float(np.finfo(np.float64).eps)
_INF = math.inf


# --------------------------------------------------------------------------------------------
# Result object
# --------------------------------------------------------------------------------------------


def _readonly(array: Any) -> FloatArray:
    out = np.array(array, dtype=np.float64, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, slots=True)
class CapacityResult:
    """A certified bracket ``lower ≤ capacity ≤ upper`` (nats per individual).

    - ``lower`` is attained: it is the information of ``input_distribution`` (rounded down).
    - ``upper`` is a certificate: a dual bound (rounded up), never an estimate.
    - ``output_distribution`` is the output law behind the certificate: the ``Q`` of
      ``max_x D_α(P_{Y|x} ‖ Q)`` for Shannon and Sibson capacities, ``P_Y`` at the returned
      input for the seed article's Rényi capacity.
    - ``converged`` says whether ``upper − lower ≤ tol`` was reached; ``method`` says how each
      side was obtained.

    >>> r = Channel.binary_erasure(0.25).capacity()
    >>> round(r.lower, 6), round(r.upper, 6), r.definition, r.alpha  # (1 − e) log 2
    (0.51986, 0.51986, 'renyi', 1.0)
    >>> r.input_distribution.round(6).tolist()
    [0.5, 0.5]
    """

    lower: float
    upper: float
    input_distribution: FloatArray
    output_distribution: FloatArray
    iterations: int
    definition: str
    alpha: float
    converged: bool
    method: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "input_distribution", _readonly(self.input_distribution))
        object.__setattr__(self, "output_distribution", _readonly(self.output_distribution))
        if math.isnan(self.lower) or math.isnan(self.upper):
            raise InternalError(f"capacity bracket has NaN: [{self.lower}, {self.upper}]")
        if self.lower > self.upper:
            raise InternalError(f"capacity bracket is empty: [{self.lower!r}, {self.upper!r}]")

    @property
    def gap(self) -> float:
        """Width ``upper − lower`` of the bracket (nats)."""
        return self.upper - self.lower


# --------------------------------------------------------------------------------------------
# Numerical kernels (private, vectorised, log domain)
# --------------------------------------------------------------------------------------------


def _log(x: FloatArray) -> FloatArray:
    """Natural log with log(0) = -inf and no warning."""
    with np.errstate(divide="ignore"):
        return np.log(x)


def _lse(v: FloatArray, axis: int | None = None) -> Any:
    """log Σ exp(v) along ``axis``; all -inf gives -inf (no warning)."""
    mx = np.max(v, axis=axis, keepdims=True)
    safe = np.where(np.isfinite(mx), mx, 0.0)
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        s = np.sum(np.exp(v - safe), axis=axis, keepdims=True)
    out = np.where(np.isposinf(mx), np.inf, _log(s) + safe)
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
    (2017), Def. 3 (seeds/001). α = 1 and α = ∞ are exact branches.
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
        # Near α = 1: D_α = log1p(E_P[expm1((α−1) L)])/(α−1) with L = log P/Q, which keeps
        # full relative precision where the generic form loses ~ε/|α−1| (cf. dp_accounting's
        # branch-by-branch numerics).
        # Where E is not small (much of P outside supp Q), log1p(E) cancels instead and the
        # generic form is the accurate one.
        t = alpha - 1.0
        mean = np.empty((n, n))
        for x in range(n):
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                ratio = np.where(pos[x][None, :], logW[x][None, :] - logW, 0.0)
                terms = np.where(pos[x][None, :], W[x][None, :] * np.expm1(t * ratio), 0.0)
                mean[x] = np.sum(terms, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            lb = np.where(pos, -t * logW, np.inf if t > 0 else -np.inf)
            generic = _log_matmul_exp(np.where(pos, alpha * logW, -np.inf), lb.T) / t
            D = np.where(np.abs(mean) < 0.5, np.log1p(mean) / t, generic)
    else:
        # D_α(P‖Q) = 1/(α-1) log Σ_y P(y)^α Q(y)^{1-α}  (Rényi 1961; seeds/001 Def. 3).
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


@dataclass(slots=True)
class _Bracket:
    """Best certified sides seen so far (each side is valid on its own)."""

    lower: float = -_INF
    upper: float = _INF
    p: FloatArray | None = None
    q: FloatArray | None = None

    def offer(self, lower: float, p: FloatArray, upper: float, q: FloatArray) -> None:
        if lower > self.lower:
            self.lower, self.p = lower, p
        if upper < self.upper:
            self.upper, self.q = upper, q


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
    positive = q > 0
    lq = np.log(np.where(positive, q, 1.0))
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


def _newton_on_support(
    W: FloatArray,
    h: FloatArray,
    support: npt.NDArray[np.intp],
    p_s: FloatArray,
    max_steps: int,
    greedy: bool,
) -> tuple[npt.NDArray[np.intp], FloatArray, int]:
    """Maximise I(p; W_S) over the simplex on inputs ``support`` by damped Newton steps.

    I is concave with gradient D(W_x‖q) − 1 and Hessian −W_S diag(1/q) W_Sᵀ; each step solves the
    equality-constrained Newton (KKT) system, keeps p ≥ 0 (inputs hitting zero leave the
    support) and backtracks until I does not decrease; with ``greedy`` a full step may drop
    several inputs at once. The result is only a candidate: the
    caller certifies it on the full channel.
    """
    WS = W[support]
    hS = h[support]
    steps = 0

    def info(
        ps: FloatArray, ws: FloatArray, hs: FloatArray
    ) -> tuple[float, FloatArray, FloatArray]:
        q = ps @ ws
        with np.errstate(divide="ignore"):
            lq = np.where(q > 0, np.log(np.where(q > 0, q, 1.0)), 0.0)
        d = hs - ws @ lq
        return float(ps @ d), d, q

    value, g, q = info(p_s, WS, hS)
    reg = 1e-9
    for _ in range(min(max_steps, 200)):
        steps += 1
        k = len(support)
        if k == 1:
            break
        cols = q > 0
        Wc = WS[:, cols]
        H = (Wc / q[cols]) @ Wc.T
        K = np.zeros((k + 1, k + 1))
        # A Tikhonov (Levenberg–Marquardt) term keeps the system solvable when rows of W_S are
        # affinely dependent (then the optimal p is not unique but q and I are); it grows when
        # a step fails and shrinks when one succeeds.
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
            sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
        dp = sol[:k]
        if not np.isfinite(dp).all() or _spread(g) <= 1e-14 * max(1.0, abs(value)):
            break
        neg = dp < 0
        t_max = 1.0
        if neg.any():
            t_max = min(1.0, float(np.min(-p_s[neg] / dp[neg])))
        slack = 1e-15 * max(1.0, abs(value))
        accepted: tuple[FloatArray, float, FloatArray, FloatArray] | None = None
        if greedy and t_max < 1.0:
            # (a) the full step with every input it drives negative removed at once
            cand = np.maximum(p_s + dp, 0.0)
            if cand.sum() > 0:
                cand /= cand.sum()
                trial = info(cand, WS, hS)
                if trial[0] > value:
                    accepted = (cand, *trial)
        if accepted is None:
            # (b) step to the boundary (the blocking input leaves the support), halved until
            # I does not decrease
            t = t_max
            blocking = int(np.argmin(np.where(neg, -p_s / np.where(neg, dp, -1.0), np.inf)))
            while t >= 1e-10:
                cand = np.maximum(p_s + t * dp, 0.0)
                if t == t_max < 1.0:
                    cand[blocking] = 0.0
                cand /= cand.sum()
                trial = info(cand, WS, hS)
                # Near the optimum I is flat to rounding: accept a step that does not lower I
                # beyond rounding and halves the KKT residual (spread of D(W_x‖q) over S).
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
        cand, new_value, new_g, new_q = accepted
        keep = cand > 1e-15 * cand.max()
        if not keep.all():
            support, WS, hS, cand = support[keep], WS[keep], hS[keep], cand[keep]
            cand /= cand.sum()
            new_value, new_g, new_q = info(cand, WS, hS)
        p_s, value, g, q = cand, new_value, new_g, new_q
        if _spread(g) <= 1e-14 * max(1.0, abs(value)):
            break
    return support, p_s, steps


def _spread(values: FloatArray) -> float:
    return float(np.max(values) - np.min(values))


_MAX_NEWTON_SUPPORT = 256


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
        top = float(np.max(div))
        support = np.flatnonzero(div >= top - 2.0 * (best.upper - best.lower))
        if len(support) > _MAX_NEWTON_SUPPORT:
            support = np.sort(np.argsort(-div)[:_MAX_NEWTON_SUPPORT])
        p_s = np.maximum(p[support], 1e-300)
        p_s /= p_s.sum()
        while rounds < 30 and iterations < max_iter:
            rounds += 1
            support, p_s, steps = _newton_on_support(
                W, h, support, p_s, max_iter - iterations, greedy=rounds == 1
            )
            iterations += steps
            p_new = np.zeros(n)
            p_new[support] = p_s
            div = offer(p_new)
            if best.upper - best.lower <= tol:
                break
            lower_now = float(p_s @ div[support])
            upper_now = float(np.max(div))
            with np.errstate(invalid="ignore"):
                flagged = np.flatnonzero(
                    np.isposinf(div) | (div > lower_now + 0.5 * (upper_now - lower_now))
                )
            new = np.setdiff1d(flagged, support)
            if len(support) + len(new) > _MAX_NEWTON_SUPPORT:
                break
            if len(new):
                support = np.concatenate([support, new])
                p_s = np.concatenate([p_s, np.full(len(new), 1e-6 / len(new))])
                p_s /= p_s.sum()
                order = np.argsort(support)
                support, p_s = support[order], p_s[order]
            elif steps <= 1:
                break  # Newton cannot improve further: hand over to Blahut–Arimoto
        p = p_new if best.p is None else best.p

    # Phase 3 (fallback): keep iterating Blahut–Arimoto from the best input found so far.
    if best.upper - best.lower > tol and iterations < max_iter:
        assert best.p is not None
        p = 0.99 * best.p + 0.01 / n
        log_p = np.log(p)
        div = offer(p)
        while iterations < max_iter and best.upper - best.lower > tol:
            iterations += 1
            log_p = log_p + np.where(np.isfinite(div), div, 0.0)
            log_p -= _lse(log_p)
            div = offer(np.exp(log_p))

    assert best.p is not None and best.q is not None
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


def _sibson_state(
    logW: FloatArray, log_p: FloatArray, alpha: float
) -> tuple[float, float, FloatArray, FloatArray]:
    """Sibson's I^s_α at P (lower), max_x D_α(W_x‖Q*) (upper), D_α(W_x‖Q*), log Q*.

    Q*_y ∝ (Σ_x P_x W_xy^α)^{1/α} and I^s_α = α/(α−1) log Σ_y (Σ_x P_x W_xy^α)^{1/α}
    (seeds/000, "Sibson's definition"; Verdú 2015, Eq. (38)–(39)); any Q certifies
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


def _kkt_step(H: FloatArray, g: FloatArray, reg: float) -> FloatArray | None:
    """Newton direction for max f on {Σp = 1}: solve [H+μI 1; 1ᵀ 0][dp; ν] = [g; 0].

    ``H`` is the negated Hessian (positive semi-definite), ``g`` the gradient and μ a
    Levenberg–Marquardt term relative to the trace. Returns None if the system is not finite.
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


def _sibson_newton(
    Wa: FloatArray,
    alpha: float,
    support: npt.NDArray[np.intp],
    p_s: FloatArray,
    max_steps: int,
) -> tuple[npt.NDArray[np.intp], FloatArray, int]:
    """Damped Newton steps for Sibson's capacity on the inputs ``support``.

    Maximises Φ(P) = sign·Σ_y (Σ_x P_x W_xy^α)^{1/α} (sign = +1 for α > 1, where it is concave,
    −1 for α < 1, where the sum is convex): I^s_α = α/(α−1) log Σ_y (...)^{1/α} is monotone in
    it (seeds/000, "Sibson's definition"). Same active-set scheme as the Shannon finish; the
    result is only a candidate, certified by the caller in the log domain.
    """
    beta = 1.0 / alpha
    sign = 1.0 if alpha > 1 else -1.0
    curvature = abs(beta * (beta - 1.0))
    WS = Wa[support]
    steps = 0

    def info(ps: FloatArray, ws: FloatArray) -> tuple[float, FloatArray, FloatArray]:
        s = ps @ ws
        cols = s > 0
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            value = sign * float(np.sum(s[cols] ** beta))
            g = sign * beta * (ws[:, cols] @ s[cols] ** (beta - 1.0))
        return value, g, s

    value, g, s = info(p_s, WS)
    reg = 1e-9
    for _ in range(min(max_steps, 200)):
        steps += 1
        if len(support) == 1 or not np.isfinite(g).all():
            break
        if _spread(g) <= 1e-14 * max(1.0, float(np.max(np.abs(g)))):
            break
        cols = s > 0
        wc = WS[:, cols]
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            H = curvature * (wc * s[cols] ** (beta - 2.0)) @ wc.T
        dp = _kkt_step(H, g, reg)
        if dp is None:
            break
        neg = dp < 0
        t_max = 1.0
        if neg.any():
            t_max = min(1.0, float(np.min(-p_s[neg] / dp[neg])))
        slack = 1e-15 * max(1.0, abs(value))
        accepted: tuple[FloatArray, float, FloatArray, FloatArray] | None = None
        t = t_max
        blocking = int(np.argmin(np.where(neg, -p_s / np.where(neg, dp, -1.0), np.inf)))
        while t >= 1e-10:
            cand = np.maximum(p_s + t * dp, 0.0)
            if t == t_max < 1.0:
                cand[blocking] = 0.0
            cand /= cand.sum()
            trial = info(cand, WS)
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
        cand, value, g, s = accepted
        keep = cand > 1e-15 * cand.max()
        if not keep.all():
            support, WS, cand = support[keep], WS[keep], cand[keep]
            cand /= cand.sum()
            value, g, s = info(cand, WS)
        p_s = cand
    return support, p_s, steps


def _sibson_capacity(matrix: FloatArray, alpha: float, tol: float, max_iter: int) -> CapacityResult:
    """Sibson's α-capacity (= Arimoto's = Augustin–Csiszár's) with a certified bracket.

    The update P_x ← P_x exp(α D_α(W_x ‖ Q*(P))) / Z is alternating maximisation over a reverse
    channel (Arimoto 1977; Kamatsuka et al. 2024, arXiv:2401.14241, who prove global
    convergence); at α = 1 it is Blahut–Arimoto. It is accelerated by SQUAREM and, after 60
    steps, finished by Newton steps on the candidate support (:func:`_sibson_newton`). Every
    iterate is certified in the log domain by :func:`_sibson_state`.
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
            D = last_D
            gap = max(best_upper - best_lower, 0.0)
            support = np.flatnonzero(float(np.max(D)) - 2.0 * gap <= D)
            if len(support) > _MAX_NEWTON_SUPPORT:
                support = np.sort(np.argsort(-D)[:_MAX_NEWTON_SUPPORT])
            p_s = np.maximum(p_cur[support], 1e-300)
            p_s /= p_s.sum()
            for _ in range(20):
                support, p_s, steps = _sibson_newton(Wa, alpha, support, p_s, 200)
                p_new = np.zeros(n)
                p_new[support] = p_s
                lower_now, _ = step(_log(p_new))
                if done():
                    break
                D = last_D
                upper_now = float(np.max(D))
                with np.errstate(invalid="ignore"):
                    flagged = np.flatnonzero(
                        np.isposinf(D) | (lower_now + 0.5 * (upper_now - lower_now) < D)
                    )
                new = np.setdiff1d(flagged, support)
                if len(new) == 0 and steps <= 1:
                    break
                if len(new):
                    support = np.concatenate([support, new])
                    p_s = np.concatenate([p_s, np.full(len(new), 1e-6 / len(new))])
                    p_s /= p_s.sum()
                    order = np.argsort(support)
                    support, p_s = support[order], p_s[order]
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


# ---- Rényi capacity of the seed article ------------------------------------------------------


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


def _softmax(z: FloatArray) -> FloatArray:
    e = np.exp(z - z.max())
    out: FloatArray = e / e.sum()
    return out


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


def _labels(name: str, labels: Sequence[Hashable] | None, size: int) -> tuple[Hashable, ...]:
    if labels is None:
        return tuple(range(size))
    if isinstance(labels, (str, bytes)):
        raise ParameterError(name, labels, f"a sequence of {size} distinct labels")
    out = tuple(labels)
    if len(out) != size:
        raise ParameterError(name, f"{len(out)} labels", f"a sequence of {size} distinct labels")
    try:
        distinct = len(set(out)) == size
    except TypeError:
        raise ParameterError(name, out, "a sequence of hashable labels") from None
    if not distinct:
        raise ParameterError(name, out, f"a sequence of {size} distinct labels")
    return out


class Channel:
    """A discrete channel P(Y|X): a row-stochastic matrix with input and output labels.

    Row ``x`` is the output distribution given input ``x``. The matrix is validated (finite,
    non-negative, every row summing to 1 within 1e-9; errors name the row) and read-only;
    channels are immutable values.

    >>> ch = Channel([[0.75, 0.25], [0.25, 0.75]], inputs=["no", "yes"])
    >>> ch.n_inputs, ch.n_outputs, ch.inputs
    (2, 2, ('no', 'yes'))
    >>> round(ch.epsilon(), 6)  # log 3: randomized response (seeds/002)
    1.098612
    >>> Channel([[0.5, 0.4], [0.5, 0.5]])
    Traceback (most recent call last):
        ...
    infodp.errors.ParameterError: matrix row 0 must sum to 1 (within 1e-09); it sums to 0.9.
    """

    __slots__ = ("_inputs", "_matrix", "_outputs")

    _matrix: FloatArray
    _inputs: tuple[Hashable, ...]
    _outputs: tuple[Hashable, ...]

    def __init__(
        self,
        matrix: Any,
        inputs: Sequence[Hashable] | None = None,
        outputs: Sequence[Hashable] | None = None,
    ) -> None:
        if isinstance(matrix, Channel):
            matrix = matrix.matrix
        try:
            W = np.array(matrix, dtype=np.float64, copy=True)
        except (TypeError, ValueError):
            raise ParameterError(
                "matrix", matrix, "a 2-d array of probabilities (one row per input)"
            ) from None
        if W.ndim != 2 or W.shape[0] == 0 or W.shape[1] == 0:
            raise ParameterError(
                "matrix", f"array of shape {W.shape}", "a non-empty 2-d array (inputs × outputs)"
            )
        for x in range(W.shape[0]):
            row = W[x]
            if not np.isfinite(row).all():
                raise ParameterError(
                    f"matrix row {x} must contain only finite probabilities; found NaN or inf."
                )
            if (row < 0).any():
                y = int(np.argmax(row < 0))
                raise ParameterError(
                    f"matrix row {x} must be non-negative; found {row[y]!r} at column {y}."
                )
            total = math.fsum(row.tolist())
            if abs(total - 1.0) > SUM_TOLERANCE:
                raise ParameterError(
                    f"matrix row {x} must sum to 1 (within {SUM_TOLERANCE:g}); "
                    f"it sums to {total!r}."
                )
        W.setflags(write=False)
        object.__setattr__(self, "_matrix", W)
        object.__setattr__(self, "_inputs", _labels("inputs", inputs, W.shape[0]))
        object.__setattr__(self, "_outputs", _labels("outputs", outputs, W.shape[1]))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Channel is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Channel is immutable; cannot delete {name!r}")

    # ---- basic properties ---------------------------------------------------------------

    @property
    def matrix(self) -> FloatArray:
        """The read-only row-stochastic matrix P(Y|X) (inputs × outputs)."""
        return self._matrix

    @property
    def n_inputs(self) -> int:
        """Number of inputs (rows)."""
        return int(self._matrix.shape[0])

    @property
    def n_outputs(self) -> int:
        """Number of outputs (columns)."""
        return int(self._matrix.shape[1])

    @property
    def inputs(self) -> tuple[Hashable, ...]:
        """Input labels (default ``0 … n_inputs−1``)."""
        return self._inputs

    @property
    def outputs(self) -> tuple[Hashable, ...]:
        """Output labels (default ``0 … n_outputs−1``)."""
        return self._outputs

    def __repr__(self) -> str:
        return f"Channel(n_inputs={self.n_inputs}, n_outputs={self.n_outputs})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Channel):
            return NotImplemented
        return (
            self._inputs == other._inputs
            and self._outputs == other._outputs
            and np.array_equal(self._matrix, other._matrix)
        )

    def __hash__(self) -> int:
        return hash((self._matrix.shape, self._matrix.tobytes(), self._inputs, self._outputs))

    # ---- constructors --------------------------------------------------------------------

    @classmethod
    def binary_symmetric(cls, p: float) -> Channel:
        """Binary symmetric channel: the bit is flipped with probability ``p`` ∈ [0, 1].

        Capacity log 2 − H(p) nats (Shannon 1948; seeds/000, "Protection against B… outcomes").

        >>> Channel.binary_symmetric(0.25).matrix.tolist()
        [[0.75, 0.25], [0.25, 0.75]]
        """
        p = as_probability("p", p)
        return cls([[1.0 - p, p], [p, 1.0 - p]], inputs=(0, 1), outputs=(0, 1))

    @classmethod
    def binary_erasure(cls, e: float) -> Channel:
        """Binary erasure channel: the bit is erased (output ``"?"``) with probability ``e``.

        Capacity (1 − e) log 2 nats (Elias 1955; Cover & Thomas 2006, §7.1.5).

        >>> ch = Channel.binary_erasure(0.5)
        >>> ch.outputs, ch.matrix.tolist()
        ((0, '?', 1), [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
        """
        e = as_probability("e", e)
        return cls([[1.0 - e, e, 0.0], [0.0, e, 1.0 - e]], inputs=(0, 1), outputs=(0, "?", 1))

    @classmethod
    def z_channel(cls, p: float) -> Channel:
        """Z channel: 0 is always received as 0; 1 is received as 0 with probability ``p``.

        Capacity log(1 + (1 − p) p^{p/(1−p)}) nats (Golomb 1980; Tallini et al. 2002, Eq. (4)).

        >>> Channel.z_channel(0.5).matrix.tolist()
        [[1.0, 0.0], [0.5, 0.5]]
        """
        p = as_probability("p", p)
        return cls([[1.0, 0.0], [p, 1.0 - p]], inputs=(0, 1), outputs=(0, 1))

    @classmethod
    def randomized_response(cls, k: int, epsilon: float) -> Channel:
        """k-ary randomized response at level ε: the truth with probability e^ε/(e^ε + k − 1).

        Every other value has probability 1/(e^ε + k − 1), so the channel is exactly ε-DP
        (Warner 1965; Kairouz et al. 2016, "Extremal mechanisms", §4). ``epsilon=inf`` gives
        the identity channel.

        >>> rr = Channel.randomized_response(2, math.log(3))
        >>> rr.matrix.round(6).tolist()
        [[0.75, 0.25], [0.25, 0.75]]
        """
        k = as_positive_int("k", k, minimum=2)
        epsilon = as_nonnegative("epsilon", epsilon, allow_inf=True)
        if math.isinf(epsilon):
            W = np.eye(k)
        else:
            # probabilities in the log domain: e^ε/(e^ε+k−1) = 1/(1+(k−1)e^{−ε})
            off = math.exp(-epsilon) / (1.0 + (k - 1) * math.exp(-epsilon))
            W = np.full((k, k), off)
            np.fill_diagonal(W, 1.0 / (1.0 + (k - 1) * math.exp(-epsilon)))
        labels = tuple(range(k))
        return cls(W, inputs=labels, outputs=labels)

    # ---- combinations --------------------------------------------------------------------

    def then(self, other: Channel) -> Channel:
        """Cascade: feed this channel's output into ``other`` (post-processing), P = W·V.

        By the data-processing inequality (seeds/000) no capacity of the cascade exceeds this
        channel's.

        >>> bsc = Channel.binary_symmetric(0.1)
        >>> bsc.then(bsc).matrix.round(6).tolist()
        [[0.82, 0.18], [0.18, 0.82]]
        """
        if not isinstance(other, Channel):
            raise ParameterError("other", other, "a Channel")
        if other.n_inputs != self.n_outputs:
            raise ParameterError(
                "other",
                f"a channel with {other.n_inputs} inputs",
                f"a channel with {self.n_outputs} inputs (this channel's outputs)",
            )
        if other.inputs != self.outputs:
            raise ParameterError(
                "other.inputs", other.inputs, f"the outputs of this channel {self.outputs!r}"
            )
        W = self._matrix @ other._matrix
        W = W / W.sum(axis=1, keepdims=True)
        return Channel(W, inputs=self.inputs, outputs=other.outputs)

    def product(self, other: Channel) -> Channel:
        """Two conditionally independent uses on the same input: P(y1, y2 | x) = W(y1|x) V(y2|x).

        Output labels are pairs ``(y1, y2)`` in row-major order. This is the composition of two
        queries on the same row (seeds/000, "Group privacy and composability").

        >>> bsc = Channel.binary_symmetric(0.25)
        >>> both = bsc & bsc
        >>> both.outputs
        ((0, 0), (0, 1), (1, 0), (1, 1))
        >>> both.matrix[0].tolist()
        [0.5625, 0.1875, 0.1875, 0.0625]
        """
        if not isinstance(other, Channel):
            raise ParameterError("other", other, "a Channel")
        if other.n_inputs != self.n_inputs or other.inputs != self.inputs:
            raise ParameterError(
                "other.inputs", other.inputs, f"the same inputs as this channel {self.inputs!r}"
            )
        W = (self._matrix[:, :, None] * other._matrix[:, None, :]).reshape(self.n_inputs, -1)
        labels = tuple(itertools.product(self.outputs, other.outputs))
        return Channel(W, inputs=self.inputs, outputs=labels)

    def __and__(self, other: Channel) -> Channel:
        if not isinstance(other, Channel):
            return NotImplemented
        return self.product(other)

    # ---- privacy parameters ----------------------------------------------------------------

    def epsilon(self) -> float:
        """Pure ε of the channel: max over outputs y and inputs x, x' of log P(y|x)/P(y|x').

        Equals C_∞ and the diameter at α = ∞ (seeds/000, "Connecting differential privacy to
        Shannon"); ``inf`` when some output is possible under one input and impossible under
        another. Rounded up by a few ulps.

        >>> round(Channel.randomized_response(4, 1.5).epsilon(), 9)
        1.5
        >>> Channel.binary_erasure(0.5).epsilon()
        inf
        """
        W = self._matrix
        used = W.max(axis=0) > 0
        Wu = W[:, used]
        if (Wu.min(axis=0) == 0).any():
            return _INF
        logW = np.log(Wu)
        value = float(np.max(logW.max(axis=0) - logW.min(axis=0)))
        return value + _allowance(value, 2)

    def delta(self, eps: float) -> float:
        """δ(ε): the largest hockey-stick divergence Σ_y max(0, P(y|x) − e^ε P(y|x')).

        The channel is (ε, δ)-DP exactly for δ ≥ this value (Dwork & Roth 2014, Def. 2.4;
        Balle et al. 2018, Thm 1). ``eps`` ∈ [0, ∞].

        >>> rr = Channel.randomized_response(2, math.log(3))
        >>> round(rr.delta(0.0), 6), round(rr.delta(math.log(3)), 6)
        (0.5, 0.0)
        """
        eps = as_real("eps", eps, allow_inf=True)
        if eps < 0:
            raise ParameterError("eps", eps, "a number in [0, inf]")
        W = self._matrix
        if math.isinf(eps):
            return 0.0
        scale = math.exp(eps) if eps < 700 else _INF
        worst = 0.0
        for x in range(W.shape[0]):
            with np.errstate(over="ignore", invalid="ignore"):
                scaled = np.where(W > 0, scale * W, 0.0)
            excess = np.clip(W[x][None, :] - scaled, 0.0, None).sum(axis=1)
            worst = max(worst, float(excess.max()))
        return min(1.0, worst + _allowance(worst, W.shape[1]))

    def divergences(self, alpha: float) -> FloatArray:
        """The matrix of Rényi divergences D_α(P_{Y|x} ‖ P_{Y|x'}) between rows (nats).

        α ∈ [0, ∞]; α = 1 is KL and α = ∞ the max-divergence, computed exactly.

        >>> Channel.binary_symmetric(0.25).divergences(float("inf")).round(6).tolist()
        [[0.0, 1.098612], [1.098612, 0.0]]
        """
        alpha = as_alpha("alpha", alpha)
        return _readonly(_pairwise_renyi(self._matrix, alpha))

    def diameter(self, alpha: float) -> float:
        """max_{x,x'} D_α(P_{Y|x} ‖ P_{Y|x'}): the Rényi-DP ε(α) and an upper bound on C_α.

        For the BSC it is 1/(α−1) log(p^α (1−p)^{1−α} + (1−p)^α p^{1−α}) (seeds/000, "Sufficient
        vs necessary"). Rounded up by a few ulps. α ∈ [0, ∞].

        >>> bsc = Channel.binary_symmetric(0.25)
        >>> round(bsc.diameter(2.0), 6), round(bsc.diameter(float("inf")), 6)
        (0.847298, 1.098612)
        """
        alpha = as_alpha("alpha", alpha)
        value = float(_pairwise_renyi(self._matrix, alpha).max())
        scale = _log_scale(self._matrix)
        if abs(alpha - 1.0) < _NEAR_ONE:  # the expm1/log1p branch has no 1/|α−1| amplification
            return value + _allowance(value, self.n_outputs) * (1.0 + 2.0 * scale)
        return value + _order_allowance(value, self.n_outputs, alpha, scale)

    # ---- capacities ------------------------------------------------------------------------

    def shannon_capacity(self, *, tol: float = 1e-9, max_iter: int = 100_000) -> CapacityResult:
        """Shannon capacity max_P I(X;Y) (MI-DP level, α = 1) with a certified bracket.

        lower = I(p; W) at the returned input, upper = max_x D(W_x ‖ q) at the returned output
        law (Blahut 1972, Thm 2). Stops when upper − lower ≤ ``tol`` nats.

        >>> r = Channel.z_channel(0.5).shannon_capacity()
        >>> round(r.upper, 9), round(math.log(1.25), 9)
        (0.223143551, 0.223143551)
        """
        tol = as_positive("tol", tol)
        max_iter = as_positive_int("max_iter", max_iter)
        return _shannon_capacity(self._matrix, tol, max_iter)

    def sibson_capacity(
        self, alpha: float, *, tol: float = 1e-9, max_iter: int = 10_000
    ) -> CapacityResult:
        """Sibson's α-capacity: the radius min_Q max_x D_α(P_{Y|x} ‖ Q), α ∈ (0, ∞].

        Equal to Arimoto's and Augustin–Csiszár's α-capacities (Csiszár 1995; Verdú 2015) and a
        lower bound on the seed article's C_α. lower = I^s_α at the returned input, upper =
        max_x D_α(P_{Y|x} ‖ Q) at the returned Q. At α = ∞ it is log Σ_y max_x P(y|x); at α = 1
        the Shannon capacity. For the BSC it is log 2 − H_α(p) (seeds/000). Within about 1e-3
        of α = 1 the rounding allowance (amplified by 1/|α−1|) can exceed ``tol``: the bracket
        is then wider than ``tol`` and ``converged`` is False, rather than crossing.

        >>> r = Channel.binary_symmetric(0.25).sibson_capacity(2.0)
        >>> round(r.upper, 6), round(math.log(2) + math.log(0.25**2 + 0.75**2), 6)
        (0.223144, 0.223144)
        """
        alpha = as_alpha("alpha", alpha)
        if alpha == 0:
            raise ParameterError("alpha", alpha, "a Rényi order in (0, inf]")
        tol = as_positive("tol", tol)
        max_iter = as_positive_int("max_iter", max_iter)
        if alpha == 1:
            r = _shannon_capacity(self._matrix, tol, max_iter)
            return _relabel(r, "sibson")
        result = _sibson_capacity(self._matrix, alpha, tol, max_iter)
        if abs(alpha - 1.0) < _MONOTONE_WINDOW and result.gap > tol:
            result = self._tighten_near_one(
                result, alpha, lambda a: _sibson_capacity(self._matrix, a, tol, max_iter), tol
            )
        return result

    def renyi_capacity(
        self,
        alpha: float,
        *,
        tol: float = 1e-9,
        n_starts: int = 4,
        rng: np.random.Generator | int | None = 0,
        refine_budget: int | None = None,
    ) -> CapacityResult:
        """The seed article's capacity C_α = sup_P D_α(P_XY ‖ P_X P_Y), α ∈ (0, ∞].

        I_α is not concave in P, so ``lower`` comes from a global multi-start search (and is
        the value at ``input_distribution``), while ``upper`` is certified: the diameter
        (seeds/000: radius ≤ C_α ≤ diameter), Shannon's capacity for α < 1, and a
        branch-and-bound certificate over the input simplex when ``refine_budget`` > 0 (by
        default 2000 simplices for channels with at most 3 inputs, otherwise off). At α = ∞
        C_∞ = pure ε exactly; at α = 1 it is Shannon's capacity.

        >>> r = Channel.binary_symmetric(0.25).renyi_capacity(2.0)
        >>> r.lower >= 0.223143, r.lower <= r.upper <= 0.869039
        (True, True)
        """
        alpha = as_alpha("alpha", alpha)
        if alpha == 0:
            raise ParameterError("alpha", alpha, "a Rényi order in (0, inf]")
        tol = as_positive("tol", tol)
        n_starts = as_positive_int("n_starts", n_starts, minimum=0)
        if refine_budget is None:
            refine_budget = 2000 if self.n_inputs <= 3 else 0
        refine_budget = as_positive_int("refine_budget", refine_budget, minimum=0)
        if alpha == 1:
            return _relabel(_shannon_capacity(self._matrix, tol, 100_000), "renyi")
        generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        result = _renyi_capacity(self._matrix, alpha, tol, n_starts, generator, refine_budget)
        if abs(alpha - 1.0) < _MONOTONE_WINDOW and result.gap > tol:
            result = self._tighten_near_one(
                result,
                alpha,
                lambda a: _renyi_capacity(
                    self._matrix, a, tol, n_starts, np.random.default_rng(0), refine_budget
                ),
                tol,
            )
        return result

    def _tighten_near_one(
        self, result: CapacityResult, alpha: float, at: Any, tol: float
    ) -> CapacityResult:
        """Intersect a near-α=1 bracket with the one implied by monotonicity in α.

        Sibson's and the seed article's capacities are non-decreasing in α (seeds/000,
        "Channel capacity"; Verdú 2015, Thm 4): for 1 < α < α₀, C_1 ≤ C_α ≤ C_{α₀}, and for
        α₀ < α < 1, C_{α₀} ≤ C_α ≤ C_1, with α₀ = 1 ± 1e-4 where rounding is not amplified.
        """
        shannon = _shannon_capacity(self._matrix, tol, 100_000)
        outer = at(1.0 + math.copysign(_MONOTONE_WINDOW, alpha - 1.0))
        below, above = (shannon, outer) if alpha > 1 else (outer, shannon)
        low = max((result, below), key=lambda r: r.lower)
        high = min((result, above), key=lambda r: r.upper)
        return CapacityResult(
            lower=low.lower,
            upper=max(high.upper, low.lower),
            input_distribution=low.input_distribution,
            output_distribution=high.output_distribution,
            iterations=result.iterations + shannon.iterations + outer.iterations,
            definition=result.definition,
            alpha=alpha,
            converged=high.upper - low.lower <= tol,
            method=result.method + "; bracket intersected with monotonicity in alpha",
        )

    def capacity(
        self, alpha: float = 1.0, *, definition: str = "renyi", tol: float = 1e-9
    ) -> CapacityResult:
        """Capacity at level α under ``definition`` ∈ {"shannon", "sibson", "renyi"}.

        "shannon" requires α = 1; "renyi" is the seed article's C_α (the privacy level),
        "sibson" its lower bound (the radius). At α = 1 all three are Shannon's capacity.

        >>> ch = Channel.randomized_response(3, 1.0)
        >>> round(ch.capacity(float("inf")).upper, 9)
        1.0
        >>> ch.capacity(2.0, definition="shannon")
        Traceback (most recent call last):
            ...
        infodp.errors.ParameterError: alpha must be 1 for definition='shannon'; got 2.0.
        """
        alpha = as_alpha("alpha", alpha)
        if definition not in DEFINITIONS:
            raise ParameterError("definition", definition, "one of 'shannon', 'sibson', 'renyi'")
        if definition == "shannon":
            if alpha != 1:
                raise ParameterError("alpha", alpha, "1 for definition='shannon'")
            return self.shannon_capacity(tol=tol)
        if definition == "sibson":
            return self.sibson_capacity(alpha, tol=tol)
        return self.renyi_capacity(alpha, tol=tol)


def _relabel(result: CapacityResult, definition: str) -> CapacityResult:
    return CapacityResult(
        lower=result.lower,
        upper=result.upper,
        input_distribution=result.input_distribution,
        output_distribution=result.output_distribution,
        iterations=result.iterations,
        definition=definition,
        alpha=1.0,
        converged=result.converged,
        method=result.method + " (alpha = 1: Shannon capacity)",
    )
