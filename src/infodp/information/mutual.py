"""Mutual information and leakage of discrete channels, in nats.

A channel is a row-stochastic matrix W[x, y] = P(Y = y | X = x) (rows are inputs: one
individual's possible rows; columns are outputs). Functions accept a 2-d array-like or any
object with a ``.matrix`` attribute (such as :class:`infodp.channel.Channel`), together with a
prior P_X over the inputs where needed.

* Shannon mutual information I(X;Y) (Cover & Thomas 2006, eq. (2.28)), of prior × channel or of
  a joint table; conditional mutual information I(X;Y|Z) (ibid., eq. (2.60)).
* the Rényi mutual information I_α(X;Y) = D_α(P_XY ‖ P_X P_Y)
  ("Differential Privacy and Information Theory", section "Mutual information").
* Sibson's α-mutual information I^s_α(X;Y) = min_Q D_α(P_XY ‖ P_X × Q), in closed form
  α/(α−1) · log Σ_y (Σ_x P(x) W(y|x)^α)^{1/α} (Sibson 1969; Verdú 2015, "α-mutual
  information", ITA; Esposito, Gastpar & Issa 2024, arXiv:2405.08352, Sec. 3); its
  supremum over priors is the channel's "radius".
* Min-entropy leakage H_∞(X) − H_∞(X|Y) (Smith 2009, FoSSaCS) and maximal
  leakage log Σ_y max_x W(y|x) (Issa, Wagner & Kamath 2020, IEEE Trans. Inf. Theory 66(3),
  Thm 1), which equals Sibson's I^s_∞ for a prior of full support.

>>> bsc = [[0.9, 0.1], [0.1, 0.9]]
>>> round(mutual_information([0.5, 0.5], bsc), 6)  # log 2 − h(0.1)
0.368064
"""

from __future__ import annotations

import math
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from infodp._validate import SUM_TOLERANCE, as_probability_vector, check_distribution
from infodp.errors import ParameterError
from infodp.information.divergence import (
    _as_orders,
    _each,
    _renyi_from_logs,
    _tilted_log_mean,
    tilted_log_mean,
)

__all__ = [
    "conditional_mutual_information",
    "joint_mutual_information",
    "maximal_leakage",
    "min_entropy_leakage",
    "mutual_information",
    "renyi_mutual_information",
    "sibson_mutual_information",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


# ---------------------------------------------------------------------------------------------
# validation


def _as_channel(channel: Any, name: str = "channel") -> FloatArray:
    """A validated, exactly row-normalised float64 copy of a channel matrix W[x, y].

    Accepts a 2-d array-like or an object with a ``.matrix`` attribute. Each row must be a
    probability distribution: finite, non-negative, summing to 1 within 1e-9; the error names
    the first offending row.
    """
    matrix = getattr(channel, "matrix", channel)
    try:
        arr = np.array(matrix, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(
            name, "<non-numeric>", "a 2-d row-stochastic array or an object with .matrix"
        ) from None
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ParameterError(
            name,
            f"array of shape {arr.shape}",
            "a non-empty 2-d array (rows = inputs, columns = outputs)",
        )
    finite = np.isfinite(arr).all(axis=1)
    if not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        raise ParameterError(f"{name} row {row} must contain only finite numbers; found NaN/inf.")
    negative = (arr < 0).any(axis=1)
    if negative.any():
        row = int(np.flatnonzero(negative)[0])
        raise ParameterError(
            f"{name} row {row} must be non-negative; found {float(arr[row].min())!r}."
        )
    sums = arr.sum(axis=1)
    bad = np.abs(sums - 1.0) > SUM_TOLERANCE
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ParameterError(
            f"{name} row {row} must sum to 1 (within {SUM_TOLERANCE:g}); "
            f"it sums to {float(sums[row])!r}."
        )
    normalised: FloatArray = arr / sums[:, None]
    return normalised


def _as_prior(prior: Any, n_inputs: int) -> FloatArray:
    """A validated prior over the channel's inputs, renormalised exactly."""
    pv = as_probability_vector("prior", prior)
    if pv.size != n_inputs:
        raise ParameterError(
            "prior",
            f"a vector of length {pv.size}",
            f"a distribution over the channel's {n_inputs} inputs (length {n_inputs})",
        )
    normalised: FloatArray = pv / pv.sum()
    return normalised


def _as_joint(joint: Any, ndim: int) -> FloatArray:
    """A validated joint probability table with ``ndim`` axes, renormalised exactly."""
    try:
        arr = np.array(joint, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("joint", "<non-numeric>", f"a {ndim}-d probability table") from None
    if arr.ndim != ndim or arr.size == 0:
        raise ParameterError(
            "joint", f"array of shape {arr.shape}", f"a non-empty {ndim}-d probability table"
        )
    return arr / check_distribution("joint", arr, show_min=True)


# ---------------------------------------------------------------------------------------------
# log-domain helpers


def _safe_log(a: FloatArray) -> FloatArray:
    """Elementwise log with log 0 = −inf and no warning."""
    with np.errstate(divide="ignore"):
        return np.log(a)


def _logsumexp_axis(a: FloatArray, axis: int) -> FloatArray:
    """log Σ exp along ``axis``; entries may be −inf (an all −inf slice gives −inf)."""
    m = a.max(axis=axis, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.exp(a - m_safe).sum(axis=axis, keepdims=True)
        out = np.log(s) + m_safe
    squeezed: FloatArray = np.squeeze(out, axis=axis)
    return squeezed


def _joint_logs(prior: FloatArray, W: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(log P(x) W(y|x), log W(y|x), log P_Y(y)) with −inf for zeros (never underflowing)."""
    log_prior = _safe_log(prior)
    log_w = _safe_log(W)
    log_joint = log_prior[:, None] + log_w
    # P_Y by a plain sum where it is comfortably normal (most accurate), by log-sum-exp where
    # the products P(x)W(y|x) would underflow.
    py = prior @ W
    log_py = np.where(py > 1e-280, _safe_log(np.maximum(py, 1e-300)), 0.0)
    tiny = py <= 1e-280
    if tiny.any():
        log_py[tiny] = _logsumexp_axis(log_joint[:, tiny], axis=0)
    return log_joint, log_w, log_py


def _shannon_mi(prior: FloatArray, W: FloatArray) -> float:
    """I(X;Y) = Σ_{x,y} P(x)W(y|x) log(W(y|x)/P_Y(y)) (Cover & Thomas 2006, eq. (2.28))."""
    log_joint, log_w, log_py = _joint_logs(prior, W)
    support = np.isfinite(log_joint)
    L = (log_w - log_py[None, :])[support]
    return max(0.0, float(np.sum(np.exp(log_joint[support]) * L)))


# ---------------------------------------------------------------------------------------------
# public API


def mutual_information(prior: Any, channel: Any) -> float:
    """Shannon mutual information I(X;Y) in nats of input prior P_X through channel W.

    I(X;Y) = Σ_{x,y} P(x) W(y|x) log(W(y|x) / P_Y(y)), P_Y = P_X W.
    Source: Cover & Thomas 2006, "Elements of Information Theory", eq. (2.28).

    >>> round(mutual_information([0.5, 0.5], [[1.0, 0.0], [0.0, 1.0]]), 6)  # noiseless bit
    0.693147
    >>> round(mutual_information([0.3, 0.7], [[0.2, 0.8], [0.2, 0.8]]), 12)  # independent
    0.0
    """
    W = _as_channel(channel)
    return _shannon_mi(_as_prior(prior, W.shape[0]), W)


def joint_mutual_information(joint: Any) -> float:
    """Shannon mutual information I(X;Y) in nats of a 2-d joint table P(x, y).

    I(X;Y) = Σ P(x,y) log(P(x,y) / (P(x)P(y))). Source: Cover & Thomas 2006, eq. (2.28).

    >>> round(joint_mutual_information([[0.4, 0.1], [0.1, 0.4]]), 6)  # log 2 − h(0.2)
    0.192745
    """
    P = _as_joint(joint, 2)
    log_p = _safe_log(P)
    log_px = _safe_log(P.sum(axis=1))
    log_py = _safe_log(P.sum(axis=0))
    support = P > 0
    L = (log_p - log_px[:, None] - log_py[None, :])[support]
    return max(0.0, float(np.sum(P[support] * L)))


def conditional_mutual_information(joint: Any) -> float:
    """Conditional mutual information I(X;Y|Z) in nats of a 3-d joint table P(x, y, z).

    I(X;Y|Z) = Σ P(x,y,z) log(P(x,y,z) P(z) / (P(x,z) P(y,z))).
    Source: Cover & Thomas 2006, eq. (2.60); the chain rule I(X;YZ) = I(X;Z) + I(X;Y|Z) is
    their Thm 2.5.2.

    >>> xor = np.zeros((2, 2, 2))
    >>> for x in (0, 1):
    ...     for z in (0, 1):
    ...         xor[x, x ^ z, z] = 0.25
    >>> round(conditional_mutual_information(xor), 6)  # Y = X xor Z reveals X given Z
    0.693147
    """
    P = _as_joint(joint, 3)
    log_p = _safe_log(P)
    log_pz = _safe_log(P.sum(axis=(0, 1)))
    log_pxz = _safe_log(P.sum(axis=1))
    log_pyz = _safe_log(P.sum(axis=0))
    support = P > 0
    L = log_p + log_pz[None, None, :] - log_pxz[:, None, :] - log_pyz[None, :, :]
    return max(0.0, float(np.sum(P[support] * L[support])))


def _renyi_mi_order_zero(prior: FloatArray, W: FloatArray) -> float:
    """D_0(P_XY ‖ P_X P_Y) = −log Σ_x P(x) P_Y({y: W(y|x) > 0}) (van Erven & Harremoës, Thm 4)."""
    py = prior @ W
    inside = (prior[:, None] > 0) & (W > 0)
    outside_mass = float(np.sum(prior[:, None] * py[None, :] * (~inside)))
    inside_mass = float(np.sum(prior[:, None] * py[None, :] * inside))
    if outside_mass < 0.5:
        return max(0.0, -math.log1p(-outside_mass))
    return max(0.0, -math.log(inside_mass))


@overload
def renyi_mutual_information(prior: Any, channel: Any, alpha: float | int) -> float: ...
@overload
def renyi_mutual_information(prior: Any, channel: Any, alpha: Any) -> float | FloatArray: ...
def renyi_mutual_information(prior: Any, channel: Any, alpha: Any) -> float | FloatArray:
    """The Rényi mutual information I_α(X;Y) = D_α(P_XY ‖ P_X P_Y), in nats.

    Every α ∈ [0, ∞] (vectorised); α = 1 is Shannon's I(X;Y), α = ∞ is
    log max_{x,y: P(x)W(y|x) > 0} W(y|x)/P_Y(y). Its supremum over priors is the Rényi channel
    capacity C_α, privacy "at level α" in “Differential Privacy and Information Theory” (2022).
    Source: "Differential Privacy and Information Theory" (2022), section "Mutual
    information"; D_α as in van Erven & Harremoës 2014, eq. (1).

    >>> bsc = [[0.9, 0.1], [0.1, 0.9]]
    >>> h2 = -math.log(0.9**2 + 0.1**2)  # binary Rényi entropy H_2(0.1)
    >>> abs(renyi_mutual_information([0.5, 0.5], bsc, 2) - (math.log(2) - h2)) < 1e-12
    True
    """
    W = _as_channel(channel)
    P = _as_prior(prior, W.shape[0])
    alphas = _as_orders(alpha)
    log_joint, log_w, log_py = _joint_logs(P, W)
    support = np.isfinite(log_joint)
    logp = log_joint[support]
    # log of P_X P_Y on the support of P_XY: log P(x) + log P_Y(y). Using log W − log P_Y for
    # the ratio keeps the P(x) factor out of the subtraction.
    logq = logp - (log_w - log_py[None, :])[support]
    return _each(
        lambda a: _renyi_mi_order_zero(P, W) if a == 0.0 else _renyi_from_logs(logp, logq, a),
        alphas,
    )


def _sibson_one(prior: FloatArray, W: FloatArray, alpha: float) -> float:
    """Sibson's I^s_α for one order (validated inputs)."""
    if alpha == 1.0:
        return _shannon_mi(prior, W)  # Verdú 2015: I^s_1 = I(X;Y)
    active = prior > 0
    if alpha == math.inf:
        # Verdú 2015; Issa et al. 2020, Thm 1: log Σ_y max_{x: P(x)>0} W(y|x).
        return max(0.0, math.log(float(W[active].max(axis=0).sum())))
    if alpha == 0.0:
        # α ↓ 0 limit of the closed form: −log max_y P_X({x: W(y|x) > 0}).
        reach = prior[active] @ (W[active] > 0)
        return max(0.0, -math.log(float(reach.max())))
    # Closed form (Sibson 1969; Verdú 2015; Esposito et al. 2024, Sec. 3):
    #   I^s_α = α/(α−1) log Σ_y (Σ_x P(x) W(y|x)^α)^{1/α}.
    # Rewritten exactly, with t = α − 1, P(x|y) = P(x)W(y|x)/P_Y(y) and the tilted mean
    # T(w, L, t) = (1/t) log Σ w e^{tL}:
    #   A_y = T(P(·|y), log W(y|·), t),  I^s_α = T(P_Y, A − log P_Y, (α − 1)/α),
    # which is continuous at α = 1 (→ Shannon) and stays in the log domain for large α.
    log_joint, log_w, log_py = _joint_logs(prior, W)
    t = alpha - 1.0
    ys = np.isfinite(log_py)
    log_post = log_joint[:, ys] - log_py[None, ys]  # log P(x|y); −inf where P(x)W(y|x) = 0
    A = tilted_log_mean(log_post, log_w[:, ys], t)
    # Σ_y (P_Y e^{tA})^{1/α} = Σ_y P_Y exp(u (A − log P_Y)) with u = (α − 1)/α, so
    # I^s_α = (1/u) log Σ_y P_Y e^{u D_y} = T(P_Y, D, u), D_y = A_y − log P_Y(y).
    u = t / alpha
    value = _tilted_log_mean(log_py[ys], A - log_py[ys], u)
    return max(0.0, value)


@overload
def sibson_mutual_information(prior: Any, channel: Any, alpha: float | int) -> float: ...
@overload
def sibson_mutual_information(prior: Any, channel: Any, alpha: Any) -> float | FloatArray: ...
def sibson_mutual_information(prior: Any, channel: Any, alpha: Any) -> float | FloatArray:
    """Sibson's α-mutual information I^s_α(X;Y) = min_Q D_α(P_XY ‖ P_X × Q), in nats.

    Closed form: α/(α−1) · log Σ_y (Σ_x P(x) W(y|x)^α)^{1/α} for α ∉ {0, 1, ∞}; α = 1 is
    Shannon's I(X;Y); α = ∞ is log Σ_y max_{x: P(x)>0} W(y|x) (maximal leakage); α = 0 is the
    limit −log max_y P_X({x: W(y|x) > 0}). Vectorised over α. Never larger than the
    article's I_α (it minimises over Q); its supremum over priors is the channel's "radius",
    a lower bound on C_α.
    Source: Sibson 1969; Verdú 2015, "α-mutual information"; Esposito, Gastpar & Issa 2024
    (arXiv:2405.08352), Sec. 3 and Thm 4.1 (monotone in α, data processing); “Differential Privacy
    and Information Theory” (2022), section "Sibson's definition".

    >>> bsc = [[0.9, 0.1], [0.1, 0.9]]
    >>> round(sibson_mutual_information([0.5, 0.5], bsc, float("inf")), 6)  # log(2·0.9)
    0.587787
    >>> [round(float(v), 6) for v in sibson_mutual_information([0.5, 0.5], bsc, [1, 2])]
    [0.368064, 0.494696]
    """
    W = _as_channel(channel)
    P = _as_prior(prior, W.shape[0])
    alphas = _as_orders(alpha)
    return _each(lambda a: _sibson_one(P, W, a), alphas)


def min_entropy_leakage(prior: Any, channel: Any) -> float:
    """Min-entropy leakage H_∞(X) − H_∞(X|Y) in nats (Smith 2009).

    = log Σ_y max_x P(x) W(y|x) − log max_x P(x): the log of how much one observation
    multiplies the attacker's chance of guessing X in one try.
    Source: Smith 2009, "On the foundations of quantitative information flow", FoSSaCS
    (vulnerability-based H_∞(X|Y)). For a uniform prior it equals maximal
    leakage (Braun, Chatzikokolakis & Palamidessi 2009, MFPS).

    >>> round(min_entropy_leakage([0.5, 0.5], [[0.75, 0.25], [0.25, 0.75]]), 6)  # log 1.5
    0.405465
    """
    W = _as_channel(channel)
    P = _as_prior(prior, W.shape[0])
    log_joint, _, _ = _joint_logs(P, W)
    best = log_joint.max(axis=0)  # log max_x P(x)W(y|x), −inf for unreachable y
    finite = best[np.isfinite(best)]
    m = float(finite.max())
    log_posterior_vulnerability = m + math.log(float(np.exp(finite - m).sum()))
    return max(0.0, log_posterior_vulnerability - math.log(float(P.max())))


def maximal_leakage(channel: Any) -> float:
    """Maximal leakage L(X→Y) = log Σ_y max_x W(y|x) in nats.

    The most any attacker can learn about any function of X from Y, for every prior of full
    support (Issa, Wagner & Kamath 2020, "An operational approach to information leakage",
    IEEE Trans. Inf. Theory 66(3), Thm 1); equal to Sibson's I^s_∞ and to the min-entropy
    capacity (Braun et al. 2009). Bounded by the pure-DP ε of the channel.

    >>> round(maximal_leakage([[0.75, 0.25], [0.25, 0.75]]), 6)  # log 1.5
    0.405465
    >>> round(maximal_leakage([[1.0, 0.0], [0.0, 1.0]]), 6)  # log 2: a noiseless bit
    0.693147
    """
    W = _as_channel(channel)
    return max(0.0, math.log(float(W.max(axis=0).sum())))
