"""Certified upper bounds on I_α(P; W) over simplicial cells of the input simplex.

The article's information ("Differential Privacy and Information Theory", 2022, "Mutual
information") of an input P through a channel
W is, for α ∉ {1, ∞},

    I_α(P) = D_α(P_XY ‖ P_X P_Y) = log G(P) / (α − 1),
    G(P) = Σ_y s_y q_y^{1−α},   s = P A,  q = P W,  A = W^α (entrywise),

so G is a sum of functions F(s, q) = s q^{1−α} of two *linear* maps of P. I_α is increasing in
G for α > 1 and decreasing for α < 1; write f = σG with σ = sign(α − 1), so that upper bounds
on f over a cell K are upper bounds on I_α over K. :func:`cell_bounds` evaluates, for a batch of
cells K = conv(v_1, …, v_n), the minimum of the bounds below: the vertex bound always, the
perspective bound for 0 < α ≤ 1.5, the expansion bound above (the ratio expansion at α = 2),
and the barycentric and quadratic-model bounds for α > 2 (where each was measured to decide
pruning; every one is valid for its α).

**Vertex bound (first order).** For α > 1, A_x(P) = Σ_y A_xy q_y^{1−α} is convex in P
(t ↦ t^{1−α} is convex and q is linear), so on K, A_x ≤ U_x := max_i A_x(v_i), and
G(P) = Σ_x P_x A_x(P) ≤ Σ_x P_x U_x ≤ max_i Σ_x v_ix U_x (a linear form is largest at a vertex).
For α < 1, A_x is concave and the same argument with minima bounds G from below.

**Quadratic-model bound (second order).** Let q_lo,y and q_hi,y be the smallest and largest
q_y over the vertices of K; since q is linear, q_y(P) ∈ [q_lo,y, q_hi,y] on all of K. The map
φ(t) = t^{1−α} is convex for α > 1 and concave for α < 1, so on that interval σφ(t) lies below
σ times its secant a_y + b_y t (where q_hi ≈ q_lo, within 1e-7 relatively, the tangent at the
midpoint plus max|φ''|·(q_hi − q_lo)²/8 is used instead, avoiding cancellation). As s_y ≥ 0,

    σF_y(P) ≤ σ s_y(P) (a_y + b_y q_y(P)) + s_hi,y e_y   on K,

whose right side is an exact quadratic m(P) in P plus a constant: no remainder term is needed.
The secant error is second order in the relative width of [q_lo, q_hi]. Where q_y varies by
large factors on K (typically near a face where an output is produced by one input only) an
output may instead be bounded on its own (:func:`_steep_terms`: a ratio of linear functions
is extremal at vertices); each output takes whichever of the two valid bounds exceeds its
value at the centre less. Writing Δ = P − c for the centre c, the maximum of
the quadratic over K is bounded by the least of

    max_i ∇m(c)·(v_i − c) + ½ max(λ_max, 0) max_i ‖v_i − c‖²   (linear part at a vertex),
    ½ g̃ᵀ(−Q)^{−1} g̃ when λ_max < 0   (unconstrained maximum over the affine hull),
    the Frank–Wolfe duality bound of the concave part plus the vertex maximum of the convex
    part (:func:`_split_quadratic_max`),

where Q = Zᵀ∇²m Z = U diag(λ) Uᵀ on an orthonormal basis Z of {Σ_x Δ_x = 0} and g̃ = Zᵀ∇m(c).
Near a non-degenerate maximum these are tight to first order, which is what lets the branch
and bound converge with 6 and 8 inputs.

**Barycentric bound** (:func:`_jensen_bound`). In barycentric coordinates λ of the cell, each
output's term has several valid quadratic (or constant) upper bounds: Jensen's inequality for
q^{1−α}, McCormick's inequalities for s_y = r_y q_y with the ratio r_y = s_y/q_y confined to its
vertex range (:func:`_ratio_factors`; tight for outputs dominated by one input, where r_y
hardly varies), and the zero-order bound of :func:`_steep_terms`. Any convex combination of
them is a bound; the weights are chosen per output by a smoothed maximisation of their
pointwise minimum (:func:`_smoothed_choice`). On the large cells left after 30 s with 6
inputs and α = 2 this bound is 0.01–0.03 nats closer to the cell maxima than Jensen's alone.

**Ratio-expansion bound** (:func:`_expansion_bound` at α = 2). At α = 2 each term is
s_y/q_y, and s_y/q_y = s_y/κ_y − s_y δ_y/κ_y² + r_y δ_y²/κ_y² exactly (δ_y = q_y − κ_y,
r_y = s_y/q_y); bounding only the last factor r_y by its vertex maximum leaves an exact
quadratic in the cell's barycentric coordinates whose error is of third order in the cell's
size and which keeps the cancellation between outputs. With 8 inputs and 64 outputs it brings
the cells left by the barycentric bound from 0.07–0.13 to about 0.01 nats above their maxima,
and the certified width from 4·10⁻² after 30 s to 10⁻³ in a few seconds. Any κ_y > 0 is
valid; with κ from two passes (q at the centre, then where the first quadratic's maximisation
ended) the width 10⁻³ takes 85 000 cells, against 430 000 with the centre alone and 210 000
with the better of the centre and the middle of q_y's range.

**Taylor-expansion bound** (:func:`_expansion_bound`, α > 1.5; valid for every α ≠ 1). The
same idea for φ(q) = q^{1−α}: F_y = s_y φ(κ_y) + s_y φ'(κ_y) δ_y + r_y q_y R_y exactly, R_y the
Taylor remainder, and σ q R(q)/δ² has an exact supremum over q's range on the cell
(:func:`_remainder_factor`: monotone, so attained at an end). Each output may instead take its
own extremum over the cell (:func:`_term_extrema`, exact: F_y is extremal on a segment between
two vertices' (q_y, s_y) points; used above α = 2 only). For 1.5 < α < 2 the expansion alone
takes 8 inputs and 64 outputs to width 10⁻³ in 8 519 cells at α = 1.75 (36 135 before) and
36 355 at α = 1.9 (width 2.6·10⁻² after 40 s before). On random channels with α ≥ 3 the
supremum of I_α sits in a
boundary layer of width ~10⁻⁹ next to a face, where one output with a tiny q_y makes up almost
all of G; the own extremum of that output certifies it: 8 inputs and 64 outputs reach width
10⁻³ in 1 771 cells at α = 3 (8 365 before), in one cell at α = 5 (17 335) and α = 10 (width
0.34 after 30 s before).

**Perspective bound** (:func:`_perspective_bound`, 0 < α < 2). F_y = h(g_y) with g_y =
s_y^a q_y^{1−a}, a = 1/(2−α), homogeneous of degree one (concave for α < 1, a convex
perspective for 1 < α < 2) and h(t) = t^{2−α}; the chord of g_y over the cell is exact along
rays where s_y/q_y is constant, so near faces, where q_y varies by orders of magnitude but the
posterior mean s_y/q_y hardly does, it is much tighter than Jensen's inequality for q_y^{1−α}.
With 8 inputs and α = 0.5 it brings the large cells left after 30 s from 0.06 to about 0.01–0.03
nats above the best attained value.

"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp.channel._numerics import _EPS, FloatArray

_TINY = float(np.finfo(np.float64).tiny)  # the smallest normal float64

__all__ = ["CellBounds", "bisect", "cell_bounds", "tangent_basis"]


def tangent_basis(n: int) -> FloatArray:
    """Orthonormal basis (n × (n−1)) of {Δ ∈ ℝⁿ : Σ Δ = 0}.

    >>> Z = tangent_basis(3)
    >>> bool(np.allclose(Z.T @ Z, np.eye(2))), bool(np.allclose(Z.sum(axis=0), 0))
    (True, True)
    """
    q, _ = np.linalg.qr(np.concatenate([np.ones((n, 1)), np.eye(n)[:, : n - 1]], axis=1))
    out: FloatArray = np.ascontiguousarray(q[:, 1:])
    return out


class CellBounds:
    """Per-cell results of :func:`cell_bounds`: upper bounds and centre values of I_α."""

    __slots__ = ("centre", "centre_value", "upper")

    def __init__(self, upper: FloatArray, centre_value: FloatArray, centre: FloatArray) -> None:
        self.upper, self.centre_value, self.centre = upper, centre_value, centre


def _power(x: FloatArray, exponent: float) -> FloatArray:
    """x**exponent with 0**negative = +inf and no warnings."""
    if exponent == 0:
        return np.ones_like(x)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore", under="ignore"):
        positive = x > 0  # one mask and one pass for the value at x ≤ 0 (or NaN)
        out: FloatArray = np.where(
            positive,
            np.power(np.where(positive, x, 1.0), exponent),
            np.inf if exponent < 0 else 0.0,
        )
    return out


def _log_information(G: FloatArray, alpha: float) -> FloatArray:
    """I = log G / (α − 1) with G ≤ 0 mapped to +inf for α < 1 (no bound) and 0 for α > 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out: FloatArray = np.where(G > 0, np.log(np.where(G > 0, G, 1.0)), -np.inf) / (alpha - 1.0)
    return out


def cell_bounds(
    W: FloatArray, A: FloatArray, alpha: float, V: FloatArray, Z: FloatArray
) -> CellBounds:
    """Upper bounds on sup_{P ∈ K} I_α(P; W) for a batch of cells K (module docstring).

    ``V`` has shape (cells, n, n): row i of ``V[k]`` is vertex i of cell k (a probability
    vector). ``A`` = W^α entrywise, ``Z`` = :func:`tangent_basis`. The upper bounds are rounded
    up; the centre values are I_α at the centres, rounded down.

    >>> W = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> b = cell_bounds(W, W**2.0, 2.0, np.eye(2)[None], tangent_basis(2))
    >>> bool(b.centre_value[0] <= b.upper[0]), bool(b.upper[0] <= 0.95)  # diameter 0.9555
    (True, True)
    """
    with np.errstate(all="ignore"):  # overflow and 0·inf are mapped to +inf bounds below
        return _cell_bounds(W, A, alpha, V, Z)


def _cell_bounds(
    W: FloatArray, A: FloatArray, alpha: float, V: FloatArray, Z: FloatArray
) -> CellBounds:
    n = V.shape[1]
    m = W.shape[1]
    sigma = 1.0 if alpha > 1 else -1.0
    terms = m + n + 8
    slack = 64.0 * _EPS * terms
    A_centre = A
    if alpha > 1:
        # W^α may underflow (W_xy = 1e-110, α = 3) where the term P_x W_xy^α q_y^{1−α} is
        # still large (q_y ≈ 1e-300): the bounds take W^α rounded up to the smallest normal
        # float, so s = PA never drops below its true value (every bound below holds for any
        # A ≥ 0 with s linear in P); the centre value, a lower bound, keeps the unrounded A.
        A = np.where(W > 0, np.maximum(A, _TINY), 0.0)

    Qv = V @ W  # (B, n, m) q at the vertices
    Sv = V @ A
    c = V.mean(axis=1)  # (B, n)
    qc = c @ W
    sc = c @ A

    # ---- vertex (first-order) bound ----------------------------------------------------------
    qv_pow = _power(Qv, 1.0 - alpha)  # (B, n, m)
    with np.errstate(invalid="ignore", over="ignore"):
        Ax = qv_pow @ A.T  # (B, i, x): A_x(v_i)
    Ax = np.where(np.isnan(Ax), np.inf, Ax)
    ext = Ax.max(axis=1) if alpha > 1 else Ax.min(axis=1)  # (B, x)
    with np.errstate(invalid="ignore", over="ignore"):
        lin = np.einsum("bix,bx->bi", V, np.where(np.isfinite(ext), ext, 0.0))
    lin = np.where(np.isfinite(ext).all(axis=1)[:, None], lin, np.inf if alpha > 1 else 0.0)
    G_vertex = lin.max(axis=1) if alpha > 1 else lin.min(axis=1)
    G_vertex = G_vertex * (1.0 + sigma * slack)
    upper = _log_information(G_vertex, alpha)
    if alpha > 1:
        upper = np.where(np.isfinite(G_vertex), upper, np.inf)

    # ---- centre value ------------------------------------------------------------------
    qc_1a = _power(qc, 1.0 - alpha)
    with np.errstate(invalid="ignore", over="ignore"):
        G_c = np.sum((c @ A_centre) * qc_1a, axis=1)
    centre_value = _log_information(G_c * (1.0 - sigma * slack), alpha)
    # an overflowed G (q_y^{1−α} = inf times a tiny s_y) is no attained value
    centre_value = np.where(np.isfinite(G_c), centre_value, -np.inf)
    if alpha <= _PERSPECTIVE_ONLY:
        upper = np.minimum(upper, _perspective_bound(alpha, Qv, Sv, slack))
    else:
        own_extrema = alpha > _OWN_EXTREMA_ABOVE
        upper = np.minimum(upper, _expansion_bound(alpha, Z, Qv, Sv, slack, own_extrema))
    if alpha > _SECOND_ORDER_ABOVE:
        upper = np.minimum(upper, _second_order_bound(W, A, alpha, V, Z, Qv, Sv, sc, qc, slack))
    upper = upper + 8.0 * _EPS * (1.0 + np.abs(np.where(np.isfinite(upper), upper, 0.0)))
    upper = np.where(np.isnan(upper), np.inf, upper)
    centre_value = np.where(np.isnan(centre_value), -np.inf, centre_value)
    return CellBounds(upper, centre_value, c)


# Which bounds are evaluated was measured (8 inputs, 64 outputs, Dirichlet(0.5) rows, cells to
# width 10⁻³); validity never depends on these choices. For 0 < α ≤ 1.5 the perspective bound
# was the smallest on every cell evaluated (α ∈ {0.5, 1.2, 1.5}: 3·10⁵ cells); the second-order
# bounds, which cost two thirds of the time, and the expansion bound changed no cell count
# there (α ∈ {0.5, 0.8, 1.2, 1.5}). Above, the perspective bound degenerates (a = 1/(2−α) → ∞)
# and the expansion bound (:func:`_expansion_bound`) wins: 8 519 cells instead of 36 135 at
# α = 1.75, 36 355 at α = 1.9 (width 2.6·10⁻² after 40 s before), with the same cells without
# the perspective and second-order bounds, which are skipped up to α = 2. Above α = 2 the
# outputs' own extrema join in: 489 cells instead of 925 at α = 2.5, 1 771 instead of 8 365
# at α = 3, 1 instead of 15 807 at α = 4 and 17 335 at α = 5, 1 at α = 10 (width 0.34 after
# 30 s before); below, they cost cancellation (α = 2: width 0.18 after 60 s instead of 10⁻³
# in 122 353 cells; α = 1.9: width 3·10⁻² after 40 s). The second-order bounds still prune
# above α = 2 (α = 5, Dirichlet(2) rows: 493 cells with them, 5 825 without).
_PERSPECTIVE_ONLY = 1.5
_OWN_EXTREMA_ABOVE = 2.0
_SECOND_ORDER_ABOVE = 2.0


def _second_order_bound(
    W: FloatArray,
    A: FloatArray,
    alpha: float,
    V: FloatArray,
    Z: FloatArray,
    Qv: FloatArray,
    Sv: FloatArray,
    sc: FloatArray,
    qc: FloatArray,
    slack: float,
) -> FloatArray:
    """The smaller of the quadratic-model and barycentric bounds (module docstring)."""
    n = V.shape[1]
    sigma = 1.0 if alpha > 1 else -1.0
    c = V.mean(axis=1)
    q_lo, q_hi = Qv.min(axis=1), Qv.max(axis=1)
    s_hi = Sv.max(axis=1)
    qc_1a = _power(qc, 1.0 - alpha)
    # Each output is bounded either by the secant model (quadratic, second order) or on its own
    # (zero order, :func:`_steep_terms`), whichever exceeds its centre value less.
    feasible = q_lo > 0 if alpha > 1 else q_hi > 0
    zero_order = _steep_terms(W, alpha, Qv, Sv, q_lo, q_hi)  # (B, m), σ-side, per output
    F_c = sc * qc_1a
    barycentric = _jensen_bound(alpha, V, Z, Qv, Sv, F_c, zero_order, slack)
    good = feasible
    with np.errstate(invalid="ignore", over="ignore"):
        # σφ(q) ≤ σ(a_y + b_y q) on [q_lo, q_hi], φ(q) = q^{1−α}: the secant (φ is convex for
        # α > 1, concave for α < 1); where q_hi ≈ q_lo the tangent at the midpoint plus
        # max|φ''|·(q_hi − q_lo)²/8 (Taylor), which avoids the secant's cancellation.
        ql = np.where(good, q_lo, 1.0)
        qh = np.where(good, q_hi, 1.0)
        phi_lo, phi_hi = _power(ql, 1.0 - alpha), _power(qh, 1.0 - alpha)
        wide = qh - ql > 1e-7 * qh
        q_mid = 0.5 * (ql + qh)
        slope = np.where(
            wide,
            (phi_hi - phi_lo) / np.where(wide, qh - ql, 1.0),
            (1.0 - alpha) * _power(q_mid, -alpha),
        )
        b_y = np.where(good, slope, 0.0)
        a_y = np.where(
            good,
            np.where(wide, phi_lo - slope * ql, _power(q_mid, 1.0 - alpha) - slope * q_mid),
            0.0,
        )
        curv = abs(alpha * (1.0 - alpha)) * _power(ql, -alpha - 1.0)
        gap_y = np.where(wide, 0.0, curv * (qh - ql) ** 2 / 8.0)
        gap_y = gap_y + 16.0 * _EPS * (np.abs(phi_lo) + np.abs(phi_hi))
        # Per output, keep the model whose excess over σF_y(c) is smaller (both are valid).
        secant_excess = sigma * (sc * (a_y + b_y * qc) - F_c) + s_hi * gap_y
        zero_excess = zero_order - sigma * F_c
        good = feasible & (secant_excess <= zero_excess)
        b_y = np.where(good, b_y, 0.0)
        a_y = np.where(good, a_y, 0.0)
        steep = np.sum(np.where(good, 0.0, zero_order), axis=1)
        err = np.sum(np.where(good, s_hi * gap_y, 0.0), axis=1)
        lin_y = a_y + b_y * qc  # φ's tangent at q(c)
        model_c = np.sum(sc * lin_y, axis=1)
        grad = lin_y @ A.T + (b_y * sc) @ W.T
        grad_mag = np.abs(lin_y) @ A.T + (np.abs(b_y) * sc) @ W.T
        T = (A[None] * b_y[:, None, :]) @ W.T
        M = sigma * (T + np.swapaxes(T, 1, 2))
    finite = np.isfinite(M).all(axis=(1, 2)) & np.isfinite(grad).all(axis=1)
    finite &= np.isfinite(model_c) & np.isfinite(steep) & np.isfinite(err)
    M = np.where(finite[:, None, None], M, 0.0)
    g = np.where(finite[:, None], sigma * grad, 0.0)
    Qm = Z.T @ M @ Z
    lam, U = np.linalg.eigh(Qm)
    lam = lam + 64.0 * _EPS * n * np.linalg.norm(Qm, axis=(1, 2))[:, None]
    lam_max = lam[:, -1]
    G_good = model_c
    f_c = sigma * np.where(finite, G_good, 0.0)
    D = V - c[:, None, :]
    linear = (D @ g[:, :, None])[:, :, 0].max(axis=1)
    radius2 = np.sum(D * D, axis=2).max(axis=1)
    f_a = f_c + linear + 0.5 * np.maximum(lam_max, 0.0) * radius2
    gt = g @ Z
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        proj = np.einsum("bkl,bk->bl", U, gt)
        newton = 0.5 * np.sum(proj * proj / np.where(lam < 0, -lam, 1.0), axis=1)
    f_b = np.where(lam_max < 0, f_c + newton * (1.0 + 1e-10), np.inf)
    f_ub = np.minimum(np.minimum(f_a, f_b), f_c + _split_quadratic_max(D, g, Z, lam, U))
    magnitude = (
        np.abs(f_c)
        + 2.0 * np.where(finite, grad_mag.max(axis=1), 0.0)
        + np.abs(f_ub - f_c)
        + 0.5 * np.abs(lam_max) * radius2
        + np.abs(np.where(finite, steep, 0.0))
        + np.where(finite, err, 0.0)
    )
    f_ub = f_ub + np.where(finite, steep + err, 0.0) + slack * magnitude
    G_bound = f_ub if alpha > 1 else -f_ub
    with np.errstate(invalid="ignore"):
        second = _log_information(G_bound, alpha)
    if alpha > 1:
        second = np.where(G_bound > 0, second, np.inf)
    second = np.where(finite, second, np.inf)
    out: FloatArray = np.minimum(second, barycentric)
    return out


# Terms of the series for the remainder factor (:func:`_remainder_factor`) where |d| ≤ 1/4: the
# truncation error is below |d|^24 ≈ 3·10⁻¹⁵ of the leading term, and is added.
_SERIES_TERMS = 24
_SERIES_RADIUS = 0.25


def _remainder_factor(alpha: float, u: FloatArray) -> FloatArray:
    """Upper bound on σH(u) = σu ρ(u)/(u − 1)², ρ(u) = u^{1−α} − 1 − (1−α)(u − 1) (u > 0).

    H is the Taylor remainder of φ(t) = t^{1−α} about 1, scaled: with the integral form of the
    remainder (Taylor's theorem; e.g. Apostol 1967, "Calculus" I, Thm. 7.6),
    ρ(u) = (u − 1)² ∫₀¹ (1 − t) φ''(1 + t(u − 1)) dt, and the substitution
    s = tu/(1 + t(u − 1)) turns H into

        H(u) = α(α − 1) ∫₀¹ (1 − s) ((1 − s) + s/u)^{α−2} ds.

    So σH ≥ 0, and as (1 − s) + s/u decreases in u, σH decreases in u for α > 2, is the
    constant 1 at α = 2 and increases in u for α < 2 (α ≠ 1). With d = 1/u − 1 and the
    binomial series, H = α(α − 1) Σ_k C(α−2, k) d^k/((k + 1)(k + 2)) for |d| < 1; it is used for
    |d| ≤ 1/4 (no cancellation), with the tail after K terms at most
    |C(α−2, K)| |d|^K/((K + 1)(K + 2)(1 − |d|)) (for k ≥ K ≥ α − 2 the ratio of consecutive
    binomial coefficients is at most (k + 2)/(k + 1), as α − 2 ≥ −2). Elsewhere the closed form
    is used with an allowance for the rounding of ρ. Returns +inf where the value overflows.

    >>> round(float(_remainder_factor(3.0, np.array([0.5]))[0]), 12)  # H = 2 + 1/u at α = 3
    4.0
    """
    sigma = 1.0 if alpha > 1 else -1.0
    beta = alpha - 2.0
    scale = alpha * abs(alpha - 1.0)
    with np.errstate(all="ignore"):
        d = 1.0 / u - 1.0
        near = np.abs(d) <= _SERIES_RADIUS
        dn = np.where(near, d, 0.0)
        terms = max(_SERIES_TERMS, math.ceil(beta) + 2)
        binom = 1.0
        total = np.zeros_like(u)
        absolute = np.zeros_like(u)
        power = np.ones_like(u)
        for k in range(terms):
            coefficient = binom / ((k + 1) * (k + 2))
            total = total + coefficient * power
            absolute = absolute + abs(coefficient) * np.abs(power)
            power = power * dn
            binom = binom * (beta - k) / (k + 1)
        tail = abs(binom) * np.abs(power) / ((terms + 1) * (terms + 2) * (1.0 - _SERIES_RADIUS))
        series = scale * (total + tail + 4.0 * terms * _EPS * absolute)
        # closed form away from u = 1: σρ and a bound on its rounding error
        uf = np.where(near, 2.0, u)
        phi = np.power(uf, 1.0 - alpha)
        linear = (1.0 - alpha) * (uf - 1.0)
        rho = sigma * (phi - 1.0 - linear)
        error = 16.0 * _EPS * (phi + 1.0 + np.abs(linear))
        closed = uf * (rho + error) / ((uf - 1.0) ** 2 * (1.0 - 8.0 * _EPS))
        out: FloatArray = np.where(near, series, closed) * (1.0 + 16.0 * (abs(beta) + 2.0) * _EPS)
        out = np.where(np.isnan(out), np.inf, out)
    return out


def _expansion_bound(
    alpha: float,
    Z: FloatArray,
    Qv: FloatArray,
    Sv: FloatArray,
    slack: float,
    own_extrema: bool = True,
) -> FloatArray:
    """Upper bound on I_α over each cell from the exact second-order expansion of each term.

    For κ_y > 0, with δ_y = q_y − κ_y, φ(t) = t^{1−α} and the Taylor remainder
    R_y = φ(q_y) − φ(κ_y) − φ'(κ_y)δ_y (Taylor's theorem, integral form),

        F_y = s_y φ(κ_y) + s_y φ'(κ_y) δ_y + r_y q_y R_y,   r_y = s_y/q_y,

    exactly. σR_y ≥ 0 (φ is convex for α > 1, concave for α < 1) and
    q R(q)/δ² = κ^{−α} H(q/κ) with H of :func:`_remainder_factor`, monotone in q; so on a cell,
    where q_y ∈ [q_lo, q_hi] and the posterior mean r_y is at most its largest vertex value r̂_y
    (a ratio of linear functions with positive denominator is quasi-linear; vertices with
    q_y = 0 carry no weight), σ r_y q_y R_y ≤ r̂_y κ_y^{−α} σH(u_y) δ_y² with u_y = q_lo/κ_y for
    α > 2 and q_hi/κ_y for α < 2 (the end where σH is largest). At α = 2, H = 1 and this is the
    identity s/q = s/κ − sδ/κ² + rδ²/κ² (module docstring). What remains is an
    exact quadratic in the cell's barycentric coordinates λ (s, δ are linear in λ), whose
    maximum over the λ-simplex is bounded by :func:`_split_quadratic_argmax`. Its error,
    (r̂ − r)σHδ² + r(σH(u) − σH(q/κ))δ², is of third order in the cell's size, and the
    quadratic keeps the cancellation between outputs that per-output bounds lose.

    With ``own_extrema``, an output may instead contribute its own extremum over the cell
    (:func:`_term_extrema`, a constant: exact for one output, first order for the sum), which
    it does where H is unbounded (α > 2 and q_lo = 0) and where that extremum exceeds the
    output's centre value by less than the expansion's error bound r̂κ^{−α}σH(u) max_i δ_i²;
    the bound with every output at its own extremum is also a candidate. This is what
    certifies channels whose supremum sits in a boundary layer, where one output with a tiny
    q_y dominates G (random channels with α ≥ 3). An output with q_y = 0 at every vertex has
    s_y = 0 on the cell and is left out. κ is q at the centre in a first pass and q where
    that pass's maximisation ended in a second (where q_y > 0 there); the smallest bound is
    kept.
    """
    n = Qv.shape[1]
    sigma = 1.0 if alpha > 1 else -1.0
    with np.errstate(all="ignore"):
        live = Qv.max(axis=1) > 0  # (B, m)
        ratio = np.where(Qv > 0, Sv / np.where(Qv > 0, Qv, 1.0), 0.0)
        # rounding: Sv, Qv are sums of n non-negative products, the ratio one more division
        r_hi = ratio.max(axis=1) * (1.0 + 4.0 * (n + 2) * _EPS)
        own = np.full(len(Qv), np.inf)
        if own_extrema:
            extremum = _term_extrema(alpha, Qv, Sv)
            F_c = Sv.mean(axis=1) * _power(Qv.mean(axis=1), 1.0 - alpha)
            excess = extremum - sigma * F_c
            G_own = sigma * np.sum(np.where(live, extremum, 0.0), axis=1) * (1.0 + sigma * slack)
            own = _log_information(G_own, alpha)
            if alpha > 1:
                own = np.where(G_own > 0, own, np.inf)
        else:
            extremum = excess = np.full_like(r_hi, np.inf)
        kappa_c = Qv.mean(axis=1)
        args = (alpha, Z, Qv, Sv, live, r_hi)
        first, at = _expansion(*args, kappa_c, extremum, excess, slack)
        kappa = (at[:, None, :] @ Qv)[:, 0, :]
        kappa = np.where(kappa > 0, kappa, kappa_c)
        second, _ = _expansion(*args, kappa, extremum, excess, slack)
        result: FloatArray = np.minimum(np.minimum(first, second), own)
        result = np.where(np.isnan(result), np.inf, result)
    return result


def _expansion_model(
    alpha: float,
    Qv: FloatArray,
    Sv: FloatArray,
    live: npt.NDArray[np.bool_],
    r_hi: FloatArray,
    kappa: FloatArray,
    extremum: FloatArray,
    excess: FloatArray,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The quadratic of :func:`_expansion_bound` about ``kappa`` (cells, outputs): M with
    σG(λ) ≤ λᵀMλ + c on the cell, the constant c (outputs at their own extremum) and a bound
    on the magnitude of the rounding errors of M's entries."""
    sigma = 1.0 if alpha > 1 else -1.0
    kappa = np.where(live & (kappa > 0), kappa, 1.0)
    if alpha > 2:  # σH is largest at the lower end of q's range, else at the upper end
        q_end = Qv.min(axis=1) * (1.0 - 4.0 * _EPS)
    else:
        q_end = Qv.max(axis=1) * (1.0 + 4.0 * _EPS)
    a0 = sigma * _power(kappa, 1.0 - alpha)  # σφ(κ)
    a1 = sigma * (1.0 - alpha) * _power(kappa, -alpha)  # σφ'(κ)
    a2 = r_hi * _power(kappa, -alpha) * _remainder_factor(alpha, np.maximum(q_end, 0.0) / kappa)
    D = Qv - kappa[:, None, :]  # δ at the vertices (B, n, m)
    # the expansion exceeds σF_y by at most a2·max δ² on the cell (δ² is convex), the own
    # extremum exceeds σF_y(centre) by ``excess``: each output takes the smaller (both valid)
    expand = live & np.isfinite(a0) & np.isfinite(a1) & np.isfinite(a2)
    expand &= a2 * (D * D).max(axis=1) <= excess
    constant = np.sum(np.where(live & ~expand, extremum, 0.0), axis=1)
    a0, a1, a2 = (np.where(expand, a, 0.0) for a in (a0, a1, a2))
    first = np.sum(Sv * a0[:, None, :], axis=2)  # Σ_y σ s_y φ(κ_y) at the vertices
    SD = (Sv * a1[:, None, :]) @ np.swapaxes(D, 1, 2)
    DD = (D * a2[:, None, :]) @ np.swapaxes(D, 1, 2)
    M = 0.5 * (first[:, :, None] + first[:, None, :]) + 0.5 * (SD + np.swapaxes(SD, 1, 2)) + DD
    # rounding: every δ carries errors of the size of q + κ
    E = Qv + kappa[:, None, :]
    absfirst = np.sum(Sv * np.abs(a0)[:, None, :], axis=2)
    SE = (Sv * np.abs(a1)[:, None, :]) @ np.swapaxes(E, 1, 2)
    M_abs = 0.5 * (absfirst[:, :, None] + absfirst[:, None, :] + SE + np.swapaxes(SE, 1, 2))
    M_abs = M_abs + (E * a2[:, None, :]) @ np.swapaxes(E, 1, 2)
    return M, constant, M_abs.sum(axis=(1, 2))


def _expansion(
    alpha: float,
    Z: FloatArray,
    Qv: FloatArray,
    Sv: FloatArray,
    live: npt.NDArray[np.bool_],
    r_hi: FloatArray,
    kappa: FloatArray,
    extremum: FloatArray,
    excess: FloatArray,
    slack: float,
) -> tuple[FloatArray, FloatArray]:
    """The bound of :func:`_expansion_bound` about ``kappa`` (cells, outputs), and the last
    iterate of its quadratic's maximisation (barycentric)."""
    B, n, _ = Qv.shape
    sigma = 1.0 if alpha > 1 else -1.0
    M, constant, rounding = _expansion_model(alpha, Qv, Sv, live, r_hi, kappa, extremum, excess)
    lam_c = np.full(n, 1.0 / n)
    f_c = M.sum(axis=(1, 2)) / (n * n)
    H = 2.0 * M
    g = H @ lam_c
    finite = np.isfinite(H).all(axis=(1, 2)) & np.isfinite(constant)
    H = np.where(finite[:, None, None], H, 0.0)
    g = np.where(finite[:, None], g, 0.0)
    Qm = Z.T @ H @ Z
    lam, U = np.linalg.eigh(Qm)
    lam = lam + 64.0 * _EPS * n * np.linalg.norm(Qm, axis=(1, 2))[:, None]
    Dm = np.ascontiguousarray(np.broadcast_to(np.eye(n) - lam_c, (B, n, n)))
    excess_c, argmax = _split_quadratic_argmax(Dm, g, Z, lam, U)
    f_ub = f_c + excess_c + constant
    # λᵀEλ ≤ max|E_ij| on the simplex for the rounding error E of the entries of M; the sum
    # of all |entries| (``rounding``) also covers the centre value, gradient and eigenvalues
    magnitude = np.where(finite, rounding, 0.0) + np.abs(f_ub) + np.abs(f_c)
    f_ub = f_ub + slack * (magnitude + np.abs(np.where(finite, constant, 0.0)))
    G_bound = sigma * f_ub
    out = _log_information(G_bound, alpha)
    if alpha > 1:
        out = np.where(G_bound > 0, out, np.inf)
    out = np.where(finite & np.isfinite(f_ub), out, np.inf)
    out = np.where(np.isnan(out), np.inf, out)
    return out, argmax


def _jensen_bound(
    alpha: float,
    V: FloatArray,
    Z: FloatArray,
    Qv: FloatArray,
    Sv: FloatArray,
    F_c: FloatArray,
    zero_order: FloatArray,
    slack: float,
) -> FloatArray:
    """Upper bound on I_α over each cell from per-output quadratic forms in barycentric
    coordinates.

    Write P = Σ_i λ_i v_i (λ in the simplex). Since φ(t) = t^{1−α} is convex for α > 1 and
    concave for α < 1 and q is linear, σφ(q_y(P)) ≤ σΣ_i λ_i φ(q_y(v_i)) (Jensen), so each
    output's term F_y = s_y φ(q_y) obeys σF_y(P) ≤ σ Σ_{j,i} λ_j λ_i s_y(v_j) φ(q_y(v_i)): a
    quadratic form in λ, pointwise below the secant model of :func:`cell_bounds`. Each output
    has three more valid bounds: two products of linear forms from :func:`_ratio_factors`
    (McCormick) and the constant of :func:`_steep_terms`. The minimum of valid bounds lies
    below every convex combination θ_y of them, so for any weights θ the sum over outputs is
    a quadratic in λ bounding σG on the cell; :func:`_smoothed_choice` picks θ near the
    minimiser of that bound (any θ is valid). The quadratic's maximum over the λ-simplex is
    bounded by :func:`_split_quadratic_max` (Frank–Wolfe duality on the concave part,
    vertex maximum of the convex part).
    """
    sigma = 1.0 if alpha > 1 else -1.0
    n = V.shape[1]
    lam_c = np.full(n, 1.0 / n)
    D = np.ascontiguousarray(np.broadcast_to(np.eye(n) - lam_c, (len(V), n, n)))
    radius2 = np.sum(D * D, axis=2).max(axis=1)
    with np.errstate(all="ignore"):
        phi = _power(Qv, 1.0 - alpha)  # (B, i, y)
        phi_ok: Any = np.isfinite(phi).all(axis=1)
        ell_a, ell_b, Psi, mc_ok, err_a, err_b = _ratio_factors(alpha, Qv, Sv)
        # candidates per output: 0 Jensen, 1 and 2 McCormick (σ X·λ Y·λ), 3 on its own
        X = (Sv, ell_a, ell_b)
        Y = (np.where(phi_ok[:, None, :], phi, 0.0), Psi, Psi)
        ok = np.stack([phi_ok, mc_ok, mc_ok, np.isfinite(zero_order)])
        errors = np.stack([np.zeros_like(err_a), err_a, err_b, zero_order])

        # every convex combination of valid bounds (per output) is a valid bound: the
        # weights are the best bound at the centre, or, in cells where a McCormick bound is
        # best there for some output, come from a maximiser of their pointwise minimum
        centre = np.broadcast_to(lam_c, (len(V), n))
        at, _, _ = _candidate_values(centre, X, Y, ok, errors, sigma)
        choice = np.argmin(at, axis=0)
        theta = (choice[None] == np.arange(4)[:, None, None]).astype(float)
        mixed = ((choice == 1) | (choice == 2)).any(axis=1)
        if mixed.any():
            theta[:, mixed] = _smoothed_choice(
                tuple(x[mixed] for x in X),
                tuple(y[mixed] for y in Y),
                ok[:, mixed],
                errors[:, mixed],
                sigma,
                lam_c,
            )
        theta = np.where(ok, theta, 0.0)
        total = theta.sum(axis=0)
        dead = total <= 0  # no valid bound for this output
        theta = theta / np.where(dead, 1.0, total)
        M = sigma * sum(
            ((X[k] * theta[k][:, None, :]) @ np.swapaxes(Y[k], 1, 2) for k in range(3)),
            start=np.zeros((len(V), n, n)),
        )
        M = 0.5 * (M + np.swapaxes(M, 1, 2))
        steep = np.sum(np.where(theta > 0, theta * np.where(ok, errors, 0.0), 0.0), axis=(0, 2))
        steep = np.where(dead.any(axis=1), np.inf, steep)
        H = 2.0 * M
        g = H @ lam_c
        f_c = M.sum(axis=(1, 2)) / (n * n)
        finite = np.isfinite(H).all(axis=(1, 2)) & np.isfinite(steep)
        H = np.where(finite[:, None, None], H, 0.0)
        g = np.where(finite[:, None], g, 0.0)
        Qm = Z.T @ H @ Z
        lam, U = np.linalg.eigh(Qm)
        lam = lam + 64.0 * _EPS * n * np.linalg.norm(Qm, axis=(1, 2))[:, None]
        linear = (D @ g[:, :, None])[:, :, 0].max(axis=1)
        f_a = linear + 0.5 * np.maximum(lam[:, -1], 0.0) * radius2
        split = _split_quadratic_max(D, g, Z, lam, U)
        f_ub = f_c + np.minimum(f_a, split) + steep
        magnitude = np.abs(M).sum(axis=(1, 2)) + np.abs(steep) + np.abs(f_ub)
        f_ub = f_ub + slack * magnitude
        G_bound = f_ub if alpha > 1 else -f_ub
        out = _log_information(G_bound, alpha)
        if alpha > 1:
            out = np.where(G_bound > 0, out, np.inf)
        out = np.where(finite & np.isfinite(f_ub), out, np.inf)
    result: FloatArray = np.where(np.isnan(out), np.inf, out)
    return result


_PERSPECTIVE_STEPS = 16


def _perspective_bound(alpha: float, Qv: FloatArray, Sv: FloatArray, slack: float) -> FloatArray:
    """Upper bound on I_α over each cell from a perspective-function factorisation, 0 < α < 2.

    Each output's term is F_y = s_y q_y^{1−α} = h(g_y) with g_y = s_y^a q_y^{1−a},
    a = 1/(2−α), and h(t) = t^{2−α} (increasing). For α < 1, 0 < a < 1 and g_y is a weighted
    geometric mean of two non-negative linear functions of P, hence concave; h is convex. For
    1 < α < 2, a > 1 and g_y = q_y (s_y/q_y)^a is the perspective of the convex t ↦ t^a,
    hence jointly convex in (s_y, q_y) (Boyd & Vandenberghe 2004, "Convex Optimization",
    Sec. 3.2.6; g_y = 0 where q_y = s_y = 0, its closure); h is concave. On a cell with
    barycentric coordinates λ, a concave g lies above and a convex g below its chord
    ĝ_y(λ) = Σ_i λ_i g_y(v_i), so σF_y ≤ σh(ĝ_y(λ)) and σG ≤ σΨ(λ), Ψ = Σ_y ĝ_y(λ)^{2−α}:
    convex for α < 1, concave for 1 < α < 2. Its extremum over the λ-simplex is bounded at any
    λ by Frank–Wolfe duality (Jaggi 2013, "Revisiting Frank–Wolfe", Sec. 2):
    σΨ* ≤ σ(Ψ(λ) + ext_i ∂_iΨ(λ) − ∇Ψ(λ)·λ), ext = max (α > 1) or min (α < 1); λ comes from
    a few exponentiated-gradient steps and the smallest bound seen is kept.

    Unlike Jensen's inequality for q_y^{1−α} alone (:func:`_jensen_bound`), the chord of g_y
    is exact along directions where s_y/q_y is constant, so it stays tight where q_y varies by
    orders of magnitude over the cell but the posterior mean s_y/q_y does not (near faces).
    """
    sigma = 1.0 if alpha > 1 else -1.0
    a = 1.0 / (2.0 - alpha)
    k = 2.0 - alpha
    B, n, _ = Qv.shape
    with np.errstate(all="ignore"):
        pos = (Qv > 0) & (Sv > 0)
        logs = a * np.log(np.where(pos, Sv, 1.0)) + (1.0 - a) * np.log(np.where(pos, Qv, 1.0))
        g = np.where(pos, np.exp(logs), 0.0)  # (B, i, y); the closure is 0 at s = q = 0
        g = g * (1.0 + sigma * 8.0 * _EPS)  # rounded toward the valid side of the chord
        lam = np.full((B, n), 1.0 / n)
        best = np.full(B, np.inf)
        magnitude = np.zeros(B)
        for step in range(_PERSPECTIVE_STEPS):
            gh = (lam[:, None, :] @ g)[:, 0, :]
            # h'(ĝ) = k ĝ^{k−1}; for k < 1 an output with ĝ = 0 (so g = 0 on the cell) adds 0
            dpow = k * np.power(gh if k > 1 else np.where(gh > 0, gh, np.inf), k - 1.0)
            psi = np.sum(gh * dpow, axis=1) / k
            grad = (g @ dpow[:, :, None])[:, :, 0]
            at = np.sum(grad * lam, axis=1)
            hi, lo = grad.max(axis=1), grad.min(axis=1)
            ext = hi if alpha > 1 else lo
            bound = sigma * (psi + ext - at)
            better = bound < best
            best = np.where(better, bound, best)
            magnitude = np.where(better, psi + np.abs(ext) + np.abs(at), magnitude)
            move = sigma * (grad - ext[:, None]) / np.maximum(hi - lo, 1e-300)[:, None]
            lam = lam * np.exp(0.9**step * move)
            lam = lam / lam.sum(axis=1, keepdims=True)
        G = sigma * (best + slack * magnitude)
        out = _log_information(G, alpha)
        if alpha > 1:
            out = np.where(G > 0, out, np.inf)
    result: FloatArray = np.where(np.isfinite(best) & ~np.isnan(out), out, np.inf)
    return result


_SMOOTH_STEPS = 10


def _candidate_values(
    point: FloatArray,
    X: tuple[FloatArray, ...],
    Y: tuple[FloatArray, ...],
    ok: FloatArray,
    errors: FloatArray,
    sigma: float,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """σ-values (4, cells, outputs) of the candidate bounds of :func:`_jensen_bound` at the
    barycentric ``point`` of each cell (+inf where not valid), and X·λ, Y·λ."""
    pt = point[:, None, :]
    xs = np.stack([(pt @ x)[:, 0] for x in X])
    ys = np.stack([(pt @ y)[:, 0] for y in Y])
    at = np.concatenate([sigma * xs * ys, np.zeros_like(xs[:1])]) + errors
    return np.where(ok & ~np.isnan(at), at, np.inf), xs, ys


def _smoothed_choice(
    X: tuple[FloatArray, ...],
    Y: tuple[FloatArray, ...],
    ok: FloatArray,
    errors: FloatArray,
    sigma: float,
    lam_c: FloatArray,
) -> FloatArray:
    """Per-output weights on the candidate bounds from an approximate maximiser of their
    pointwise minimum over the cell.

    Σ_y min_k b_yk(λ) is maximised approximately by exponentiated-gradient ascent on its
    soft-min smoothing (temperature falling each step); the soft-min weights at the end
    are near the optimal multipliers of min_θ max_λ Σ_y Σ_k θ_yk b_yk(λ), whose value for
    any θ is a valid bound (a heuristic only chooses θ: validity does not depend on it).
    """
    cells = len(X[0])
    point = np.broadcast_to(lam_c, (cells, len(lam_c))).copy()
    theta = np.zeros((4, cells, X[0].shape[2]))
    for step in range(_SMOOTH_STEPS):
        at, xs, ys = _candidate_values(point, X, Y, ok, errors, sigma)
        low = at.min(axis=0)
        frac = 16.0 * step / _SMOOTH_STEPS  # the schedule spans the same range for any count
        tau = (0.2 * 0.7**frac) * (np.abs(np.where(np.isfinite(low), low, 0.0)) + 1e-300)
        z = np.where(np.isfinite(at), -(at - low) / tau, -np.inf)
        theta = np.exp(z)
        theta = theta / np.maximum(theta.sum(axis=0), 1e-300)
        grad = np.zeros_like(point)
        for k in range(3):
            w = np.where(np.isfinite(at[k]), theta[k], 0.0)
            grad += (X[k] @ (w * ys[k])[:, :, None])[:, :, 0]
            grad += (Y[k] @ (w * xs[k])[:, :, None])[:, :, 0]
        grad = sigma * grad
        grad = np.where(np.isfinite(grad), grad, 0.0)
        spread = grad.max(axis=1, keepdims=True) - grad.min(axis=1, keepdims=True)
        step_size = 1.5 * 0.85**frac
        point = point * np.exp(
            step_size * (grad - grad.max(axis=1, keepdims=True)) / np.maximum(spread, 1e-300)
        )
        point = point / point.sum(axis=1, keepdims=True)
    return theta


def _ratio_factors(
    alpha: float, Qv: FloatArray, Sv: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """Vertex values of two linear forms ℓ_y, u_y with σF_y ≤ σ ℓ_y u_y on the cell.

    Write F_y = s_y q_y^{1−α} = r_y ψ(q_y), r_y = s_y/q_y, ψ(t) = t^{2−α}. On a cell, r_y lies
    in [r_lo, r_hi], its extreme vertex values (a ratio of linear functions with a positive
    denominator is quasi-linear), and q_y in [q_lo, q_hi]. McCormick's inequalities for the
    product s_y = r_y q_y (McCormick 1976, "Computability of global solutions to factorable
    nonconvex programs", Sec. 3) give linear bounds on r_y:

        (r − r_lo)(q − q_lo) ≥ 0  ⇒  r ≤ (s − r_lo(q − q_lo))/q_lo,
        (r_hi − r)(q_hi − q) ≥ 0  ⇒  r ≤ (s − r_hi(q − q_hi))/q_hi,
        (r − r_lo)(q_hi − q) ≥ 0  ⇒  r ≥ (s + r_lo(q_hi − q))/q_hi,
        (r_hi − r)(q − q_lo) ≥ 0  ⇒  r ≥ (s − r_hi(q − q_lo))/q_lo.

    For α > 1 (upper bounds), ψ is bounded above by a line u: its tangent at q(c) where ψ is
    concave (1 < α ≤ 2), its secant on [q_lo, q_hi] where convex (α > 2); as 0 ≤ r ≤ ℓ and
    0 ≤ ψ ≤ u, F_y ≤ ℓ u. For α < 1 (lower bounds), ψ is convex and lies above its tangent
    u at q(c); where u ≥ 0 on [q_lo, q_hi], F_y = r ψ ≥ r u ≥ ℓ u (ℓ one of the lower
    bounds). The error of the bound is the product of the widths of r and q, so it stays small for
    outputs dominated by one input, where r_y hardly varies (Jensen's bound pays the full
    curvature of q_y^{1−α} there). Returns the vertex values (cells, vertices, outputs) of
    both ℓ and of u, where the bounds hold (cells, outputs), and σ-side rounding allowances
    for σℓu with either ℓ (cells, outputs).
    """
    positive = (Qv > 0).all(axis=1)
    Qs = np.where(Qv > 0, Qv, 1.0)
    R = Sv / Qs
    r_lo = R.min(axis=1) * (1.0 - 8.0 * _EPS)
    r_hi = R.max(axis=1) * (1.0 + 8.0 * _EPS)
    q_lo, q_hi = Qs.min(axis=1), Qs.max(axis=1)
    q_c = Qs.mean(axis=1)
    e = 2.0 - alpha
    psi_c = _power(q_c, e)
    if alpha > 1:
        ell_a = (Sv - r_lo[:, None] * (Qs - q_lo[:, None])) / q_lo[:, None]
        ell_b = (Sv - r_hi[:, None] * (Qs - q_hi[:, None])) / q_hi[:, None]
        if alpha > 2:  # secant of the convex ψ
            psi_lo, psi_hi = _power(q_lo, e), _power(q_hi, e)
            wide = q_hi - q_lo > 1e-12 * q_hi
            slope = np.where(wide, (psi_hi - psi_lo) / np.where(wide, q_hi - q_lo, 1.0), 0.0)
            # where the interval is (numerically) a point, ψ is bounded by its value at q_lo
            Psi = psi_lo[:, None] + slope[:, None] * (Qs - q_lo[:, None])
            Psi = np.where(wide[:, None], Psi, np.maximum(psi_lo, psi_hi)[:, None])
        else:  # tangent of the concave ψ at q(c)
            Psi = psi_c[:, None] + (e * psi_c / q_c)[:, None] * (Qs - q_c[:, None])
        valid = positive
    else:
        ell_a = (Sv + r_lo[:, None] * (q_hi[:, None] - Qs)) / q_hi[:, None]
        ell_b = (Sv - r_hi[:, None] * (Qs - q_lo[:, None])) / q_lo[:, None]
        Psi = psi_c[:, None] + (e * psi_c / q_c)[:, None] * (Qs - q_c[:, None])
        valid = positive & (Psi.min(axis=1) > 0)
    # rounding: each vertex value carries a few ulps of its terms' magnitudes
    err_a = 16.0 * _EPS * (Sv + r_lo[:, None] * (Qs + q_lo[:, None])) / q_lo[:, None]
    err_b = 16.0 * _EPS * (Sv + r_hi[:, None] * (Qs + q_hi[:, None])) / q_hi[:, None]
    err_psi = 16.0 * _EPS * (np.abs(Psi) + 2.0 * np.abs(psi_c)[:, None] + 1e-300).max(axis=1)
    psi_max = np.abs(Psi).max(axis=1)
    valid = valid & np.isfinite(Psi).all(axis=1)
    valid = valid & np.isfinite(ell_a).all(axis=1) & np.isfinite(ell_b).all(axis=1)
    error_a = err_a.max(axis=1) * psi_max + np.abs(ell_a).max(axis=1) * err_psi
    error_b = err_b.max(axis=1) * psi_max + np.abs(ell_b).max(axis=1) * err_psi
    return ell_a, ell_b, Psi, valid, error_a, error_b


def _split_quadratic_max(
    D: FloatArray, g: FloatArray, Z: FloatArray, lam: FloatArray, U: FloatArray
) -> FloatArray:
    """Upper bound on max over a cell of m(Δ) = g·Δ + ½ΔᵀHΔ, Δ = Σ_i λ_i D_i, λ in the simplex.

    ``D`` holds the vertices minus the centre, and ZᵀHZ = U diag(lam) Uᵀ (``lam`` already
    raised by its rounding error). Split H = H⁻ + H⁺ by the signs of ``lam``: the convex part
    ½ΔᵀH⁺Δ is largest at a vertex; the concave part φ(λ) = b·λ + ½λᵀKλ (b = Dg, K = D H⁻ Dᵀ)
    is bounded by Frank–Wolfe duality, φ* ≤ φ(λ) + max_i ∂_iφ(λ) − ∇φ(λ)·λ for every λ in
    the simplex (Jaggi 2013, "Revisiting Frank–Wolfe", Sec. 2), minimised over 24 exact
    line-search iterations.
    """
    return _split_quadratic_argmax(D, g, Z, lam, U)[0]


def _split_quadratic_argmax(
    D: FloatArray, g: FloatArray, Z: FloatArray, lam: FloatArray, U: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """:func:`_split_quadratic_max` and the last Frank–Wolfe iterate (barycentric)."""
    Dt = (D @ Z) @ U  # vertex offsets in the eigenbasis
    neg = np.minimum(lam, 0.0)
    pos = np.maximum(lam, 0.0)
    convex = 0.5 * ((Dt * Dt) @ pos[:, :, None])[:, :, 0].max(axis=1)
    b = (D @ g[:, :, None])[:, :, 0]
    K = (Dt * neg[:, None, :]) @ np.swapaxes(Dt, 1, 2)
    n = D.shape[1]
    lam_b = np.zeros_like(b)
    lam_b[np.arange(len(b)), np.argmax(b, axis=1)] = 1.0
    best = np.full(len(b), np.inf)
    eye = np.eye(n)
    # ndarray.sum is np.sum without its Python wrapper (the same reduction): 24 small
    # iterations per batch, run thousands of times by the branch and bound.
    for _ in range(24):
        grad = b + (K @ lam_b[:, :, None])[:, :, 0]
        phi = (b * lam_b).sum(axis=1) + 0.5 * (lam_b * (grad - b)).sum(axis=1)
        gap = grad.max(axis=1) - (grad * lam_b).sum(axis=1)
        best = np.minimum(best, phi + gap)
        target = eye[np.argmax(grad, axis=1)]
        d = target - lam_b
        slope = (grad * d).sum(axis=1)
        curv = -(d * (K @ d[:, :, None])[:, :, 0]).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(curv > 0, slope / np.where(curv > 0, curv, 1.0), 1.0)
        t = np.clip(t, 0.0, 1.0)
        lam_b = lam_b + t[:, None] * d
    out: FloatArray = best + convex
    return out, lam_b


def _steep_terms(
    W: FloatArray,
    alpha: float,
    Qv: FloatArray,
    Sv: FloatArray,
    q_lo: FloatArray,
    q_hi: FloatArray,
) -> FloatArray:
    """σ-side bound on Σ_{y steep} F_y over each cell, F_y = s_y q_y^{1−α} = r_y q_y^{2−α}.

    r_y = s_y/q_y = Σ_x (P_x W_xy/q_y) W_xy^{α−1} is a ratio of linear functions with a positive
    denominator, hence quasi-linear: on a cell it lies between its values at the vertices (with
    q_y > 0); if some vertex has q_y = 0, between min_x and max_x of W_xy^{α−1} (a weighted
    mean). q^{2−α} is monotone. So for α > 1, F_y ≤ max r_y · max(q_lo^{2−α}, q_hi^{2−α}),
    and for α < 1, F_y ≥ min r_y · min(q_lo^{2−α}, q_hi^{2−α}) = min r_y · q_lo^{2−α}.
    Returns the bounds times σ (+upper for α > 1, −lower for α < 1), per cell and output.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        ratio = np.where(Qv > 0, Sv / np.where(Qv > 0, Qv, 1.0), np.nan)  # (B, n, m)
        wpow = _power(W, alpha - 1.0)
        positive = W > 0
        global_hi = np.where(positive, wpow, -np.inf).max(axis=0)
        global_lo = np.where(positive, wpow, np.inf).min(axis=0)
        any_zero = (Qv <= 0).any(axis=1)
        absent = q_hi <= 0  # the output cannot occur anywhere in the cell: F_y = 0
        if alpha > 1:
            r = np.where(any_zero, global_hi, np.nanmax(np.where(Qv > 0, ratio, -np.inf), axis=1))
            qpow = np.maximum(_power(q_lo, 2.0 - alpha), _power(q_hi, 2.0 - alpha))
            if alpha > 2:
                qpow = np.where(q_lo > 0, qpow, np.inf)
            term = np.where(absent, 0.0, r * qpow)
            out: FloatArray = term
        else:
            r = np.where(any_zero, global_lo, np.nanmin(np.where(Qv > 0, ratio, np.inf), axis=1))
            term = np.where(absent, 0.0, r * _power(q_lo, 2.0 - alpha))
            out = -term
    return out


def _term_extrema(alpha: float, Qv: FloatArray, Sv: FloatArray) -> FloatArray:
    """σ-side extremum of each term F_y = s_y q_y^{1−α} over each cell (cells, outputs).

    The cell's image under P ↦ (q_y, s_y) is the polygon spanned by the vertices' points
    (q_y(v_i), s_y(v_i)), and F = s q^{1−α} is, at fixed q > 0, increasing in s, so its
    supremum (α > 1) lies on the polygon's upper boundary and its infimum (α < 1) on the
    lower one: in either case on a segment between two vertices' points. On the segment
    S = S_i + t S', Q = Q_i + t Q', t ∈ [0, 1], dF/dt = Q^{−α} (S'Q + (1−α) S Q'), whose
    second factor is linear in t, so F's extremum on the segment is at an end or at the
    single root t* = −(S'Q_i + (1−α)S_i Q')/((2−α)S'Q'). The largest (α > 1) or smallest
    (α < 1) of these values over all pairs of vertices is the extremum of F_y over the cell,
    not merely a bound on it; it is rounded toward the valid side. A vertex with q_y = 0 has
    s_y = 0 (W^α and W have the same zeros), where F_y's closure is 0 for α < 2 while for
    α > 2 F_y grows without bound towards it along any edge from a vertex with q_y > 0
    (F = t^{2−α} s q^{1−α} there), so the bound is +inf. Returns σ times the extremum.
    """
    sigma = 1.0 if alpha > 1 else -1.0
    i, j = np.triu_indices(Qv.shape[1], 1)
    with np.errstate(all="ignore"):
        positive = Qv > 0
        ends = np.where(positive, Sv * _power(Qv, 1.0 - alpha), 0.0)  # (B, n, m)
        qi, qj, si, sj = Qv[:, i], Qv[:, j], Sv[:, i], Sv[:, j]
        dq, ds = qj - qi, sj - si
        t = -(ds * qi + (1.0 - alpha) * si * dq) / ((2.0 - alpha) * ds * dq)
        inside = (t > 0) & (t < 1)
        t = np.where(inside, t, 0.0)
        q_t, s_t = qi + t * dq, si + t * ds
        at_root = s_t * _power(q_t, 1.0 - alpha)
        # NaNs (0·inf) and roots outside the segment take the neutral value, and the largest
        # (α > 1) or smallest (α < 1) is taken over the ends and the roots separately: the same
        # extremum as over all of them at once, without joining the arrays.
        neutral = -np.inf if alpha > 1 else np.inf
        at_root = np.where(inside & (q_t > 0) & ~np.isnan(at_root), at_root, neutral)
        ends = np.where(np.isnan(ends), neutral, ends)
        if alpha > 1:
            extremum = np.maximum(ends.max(axis=1), at_root.max(axis=1))
        else:
            extremum = np.minimum(ends.min(axis=1), at_root.min(axis=1))
        if alpha > 2:
            blow_up = (~positive).any(axis=1) & positive.any(axis=1)
            extremum = np.where(blow_up, np.inf, extremum)
        out: FloatArray = sigma * extremum * (1.0 + sigma * 8.0 * (abs(alpha) + 4.0) * _EPS)
        out = np.where(np.isnan(out), np.inf, out)
    return out


def split_edges(V: FloatArray, W: FloatArray, A: FloatArray, alpha: float) -> tuple[Any, Any]:
    """For each cell, the pair of vertex indices (i, j) of the edge to bisect.

    The score of edge (i, j) is Σ_y F_y(c)·(log q_y(v_i) − log q_y(v_j))² + G(c)·‖v_i − v_j‖²:
    the first part is the size of the secant error of the terms F_y = s_y q_y^{1−α} along the
    edge (second order in the relative change of q_y), the second makes every cell shrink. It
    cuts thin cells along boundary layers where some q_y is small, which longest-edge
    bisection alone would approach only by refining every direction.
    """
    n = V.shape[1]
    Qv = V @ W
    c = V.mean(axis=1)
    qc = c @ W
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        F = (c @ A) * _power(qc, 1.0 - alpha)
        F = np.where(np.isfinite(F), F, 0.0)
        L = np.log(np.maximum(Qv, 1e-300))  # (B, n, m)
        FL = F[:, None, :] * L
        diag = np.sum(FL * L, axis=2)  # Σ_y F L_i²
        cross = FL @ np.swapaxes(L, 1, 2)  # Σ_y F L_i L_j
        score = diag[:, :, None] + diag[:, None, :] - 2.0 * cross
        d2 = np.sum((V[:, :, None, :] - V[:, None, :, :]) ** 2, axis=3)
        score = np.maximum(score, 0.0) + F.sum(axis=1)[:, None, None] * d2
    score = np.where(np.isfinite(score), score, np.inf).reshape(len(V), n * n)
    score[:, :: n + 1] = -1.0  # never the diagonal
    flat = np.argmax(score, axis=1)
    return flat // n, flat % n


def bisect(V: FloatArray, W: FloatArray, A: FloatArray, alpha: float) -> FloatArray:
    """Split every cell at the midpoint of its chosen edge: (B, n, n) → (2B, n, n)."""
    i, j = split_edges(V, W, A, alpha)
    rows = np.arange(len(V))
    mid = 0.5 * (V[rows, i] + V[rows, j])
    left, right = V.copy(), V.copy()
    left[rows, i] = mid
    right[rows, j] = mid
    return np.concatenate([left, right])


def degenerate_gap(value: float) -> float:
    """Absolute slack used when comparing bounds (rounding of the logarithm)."""
    return 8.0 * _EPS * (1.0 + abs(value)) if math.isfinite(value) else 0.0
