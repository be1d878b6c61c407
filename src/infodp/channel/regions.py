"""Certified regions around the local maxima of I_α: balls of the input simplex on which the
supremum of the article's information is known before any branching.

With G(P) = Σ_y s_y q_y^{1−α}, q = PW, s = PA, A = W^α entrywise, the information is
I_α(P) = log G(P)/(α − 1) ("Differential Privacy and Information Theory", 2022, "Mutual
information"); write f = σG, σ = sign(α − 1), so that maximising I_α is maximising f. Around an
input P* the region is R = B(P*, ρ) ∩ Δ, a Euclidean ball in the affine hull of the simplex Δ.

**Concavity on R (second order).** One output's term F = s q^{1−α} has the Hessian (in P)

    ∇²F = (α − 1) q^{−α} [α r w wᵀ − (a wᵀ + w aᵀ)],   r = s/q,

with w, a the output's columns of W and A. So σ∇²F = t K(r) with t = |α − 1| q^{−α} ≥ 0 and
K(r) = α r w wᵀ − (a wᵀ + w aᵀ), increasing in r in the Loewner order (α w wᵀ ⪰ 0). If on R
q ∈ [q_lo, q_hi] and r ≤ r_hi, then with K(r_hi) = K⁺ − K⁻ (its positive and negative parts),
t K(r) ⪯ t K(r_hi) ⪯ t_hi K⁺ − t_lo K⁻, and summing over outputs

    σ∇²G(P) ⪯ M := Σ_y (t_hi,y K_y⁺ − t_lo,y K_y⁻)   for every P in R,

so by Weyl's inequality (Horn and Johnson 2013, "Matrix Analysis", Thm 4.3.1, and its
corollary that λ_max is monotone in the Loewner order) λ_max(Zᵀσ∇²G Z) ≤ λ_max(ZᵀMZ) on R,
Z an orthonormal basis of the tangent space {Σ Δ_x = 0}. When that is < 0, f is concave on
the convex set R. The ranges come from the ball: |q_y(P) − q_y(P*)| ≤ ρ‖Zᵀw_y‖,
P_x ≥ P*_x − ρ, and r_y ≤ r_hi whenever h(r_hi) = s* − r_hi q* + ρ‖Zᵀ(a − r_hi w)‖ ≤ 0 (then
s − r_hi q ≤ h(r_hi) ≤ 0 on the ball).
Keeping the Hessian of each output whole is what makes this tight: for an output produced by
one input, a ≈ r w and the two parts of K nearly cancel. The radius ρ is the largest one (by
bisection) for which the bound is negative.

**First order (KKT).** For f concave on R and P, P* ∈ R,
f(P) ≤ f(P*) + g·(P − P*), g = ∇f(P*) (the tangent inequality of a concave function;
Boyd and Vandenberghe 2004, "Convex Optimization", Eq. (3.2)), and g·P ≤ max_x g_x on Δ, so

    sup_R f ≤ f(P*) + max_x g_x − g·P*,

the Frank–Wolfe gap at P*, which vanishes exactly when P* is a KKT point of max f over Δ
(equal partial derivatives on the support, no larger ones off it; Boyd and Vandenberghe 2004,
Sec. 5.5.3). At a local maximum found by ascent it is of the order of the rounding error, so
sup_R I_α = I_α(P*) up to that residual: a cell of the branch and bound that lies inside R
needs no further splitting.

**Expansion about the maximiser, for any cell** (:class:`Expansion`). Balls of certified
concavity are small (radius 0.05–0.1 for random 8-input channels) next to the cells a branch
and bound still holds after 30 s (edges 0.5–0.7), so each cell K also gets the bound of
Taylor's theorem with integral remainder about P* (Δ = P − P*):

    f(P) = f(P*) + g·Δ + ∫₀¹ (1 − t) Δᵀ σ∇²G(P* + tΔ) Δ dt.

On the segment q(t) = (1 − t) q* + t q(P) with q(P) between q_lo and q_hi (the cell's vertex
range), and r(t) between r* and r(P) (a ratio of affine functions is monotone on a segment),
so r ≤ max(r*, r_hi). With the split K_y(r_hi) = K⁺ − K⁻ as above,

    ∫₀¹ (1 − t) σ∇²F_y dt ⪯ ½ (J_hi K⁺ − J_lo K⁻),  J = |α − 1| ∫₀¹ 2(1 − t) q(t)^{−α} dt,

where J is decreasing in q(P), so J_hi = J(q_lo), J_lo = J(q_hi) (:func:`segment_weight`,
closed form). The weight 2(1 − t) puts most of the mass near P*, where q is q*, so this
averaged curvature stays moderate on cells far larger than any ball of concavity; the
quadratic g·Δ + ½ΔᵀMΔ is then maximised over K by Frank–Wolfe duality and the vertex maximum
of its convex part (:func:`~infodp.channel.certificates._split_quadratic_max`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from infodp.channel._numerics import _EPS, FloatArray
from infodp.channel.certificates import _split_quadratic_max, tangent_basis

__all__ = [
    "Expansion",
    "Region",
    "Regions",
    "certify_region",
    "concavity_bound",
    "local_regions",
    "segment_weight",
]


@dataclass(frozen=True, slots=True)
class Region:
    """A ball R = B(centre, radius) ∩ Δ with sup_R I_α ≤ ``upper`` (certified, rounded up)."""

    centre: FloatArray
    radius: float
    upper: float


class _Columns:
    """Per-output quantities of a channel used by every radius tried: the tangent parts
    Zᵀw_y, Zᵀa_y, their norms and inner products, and max_x W_xy^{α−1} (the largest r_y)."""

    __slots__ = ("A", "W", "alpha", "an2", "aw", "az", "r_max", "wn", "wn2", "wz")

    def __init__(self, W: FloatArray, alpha: float) -> None:
        Z = tangent_basis(W.shape[0])
        self.W, self.alpha = W, alpha
        with np.errstate(under="ignore"):
            self.A = np.where(W > 0, np.power(np.where(W > 0, W, 1.0), alpha), 0.0)
            ratio = np.where(W > 0, np.power(np.where(W > 0, W, 1.0), alpha - 1.0), 0.0)
        self.r_max = ratio.max(axis=0) * (1.0 + 8.0 * _EPS)
        self.wz = Z.T @ W  # (n−1, m)
        self.az = Z.T @ self.A
        self.wn2 = np.sum(self.wz * self.wz, axis=0)
        self.wn = np.sqrt(self.wn2)
        self.an2 = np.sum(self.az * self.az, axis=0)
        self.aw = np.sum(self.az * self.wz, axis=0)


def _ratio_upper(
    c: _Columns, q: FloatArray, s: FloatArray, q_lo: FloatArray, radius: float
) -> FloatArray:
    """r_hi,y ≥ s_y/q_y on B(P*, radius) ∩ Δ (module docstring): the larger root of
    h(r) = 0, squared (r²(q² − ρ²‖w‖²) − 2r(qs − ρ² a·w) + s² − ρ²‖a‖² = 0), checked with its
    rounding error; where the check fails, s_hi/q_lo and max_x W_xy^{α−1}."""
    rho2 = radius * radius
    a2 = q * q - rho2 * c.wn2
    b = q * s - rho2 * c.aw
    c0 = s * s - rho2 * c.an2
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        root = (b + np.sqrt(np.maximum(b * b - a2 * c0, 0.0))) / np.where(a2 > 0, a2, 1.0)
        root = np.where(a2 > 0, root * (1.0 + 1e-9), np.inf)
        fin = np.where(np.isfinite(root), root, 0.0)
        diff2 = c.an2 - 2.0 * fin * c.aw + fin * fin * c.wn2
        h = s - fin * q + radius * np.sqrt(np.maximum(diff2, 0.0))
        err = 64.0 * _EPS * (s + fin * q + radius * (np.sqrt(c.an2) + fin * c.wn) + 1e-300)
        checked = np.isfinite(root) & (h + err <= 0.0)
        coarse = np.where(q_lo > 0, (s + radius * np.sqrt(c.an2)) / q_lo, np.inf)
    out: FloatArray = np.minimum(np.where(checked, root, np.inf), np.minimum(coarse, c.r_max))
    return out


def _bound(c: _Columns, p: FloatArray, radius: float) -> float:
    """Upper bound on λ_max(Zᵀσ∇²G(P)Z) over B(p, radius) ∩ Δ (module docstring)."""
    alpha, n = c.alpha, len(p)
    q, s = p @ c.W, p @ c.A
    shrink = 1.0 - 8.0 * _EPS * (n + 2)
    floor = (np.maximum(p - radius, 0.0) @ c.W) * shrink
    q_lo = np.maximum((q - radius * c.wn) * shrink - 4.0 * _EPS * radius * c.wn, floor)
    q_hi = (q + radius * c.wn) / shrink
    if not (q_lo > 0).all():
        return float("inf")
    r_hi = _ratio_upper(c, q, s, q_lo, radius)
    if not np.isfinite(r_hi).all():
        return float("inf")
    k = abs(alpha - 1.0)
    # q^{−α} overflows near a face (identity channel, α = 10): inf·0 there gives a
    # non-finite M, i.e. no bound (+inf), not a warning
    with np.errstate(over="ignore", invalid="ignore"):
        t_hi = k * np.power(q_lo, -alpha) / shrink
        t_lo = k * np.power(q_hi, -alpha) * shrink
        wz, az = c.wz.T, c.az.T  # (m, n−1)
        K = alpha * r_hi[:, None, None] * wz[:, :, None] * wz[:, None, :]
        cross = az[:, :, None] * wz[:, None, :]
        K = K - cross - np.swapaxes(cross, 1, 2)
        if not np.isfinite(K).all():
            return float("inf")
        lam, U = np.linalg.eigh(K)
        weight = np.where(lam > 0, t_hi[:, None], t_lo[:, None]) * lam
        M = np.einsum("yik,yk,yjk->ij", U, weight, U)
    if not np.isfinite(M).all():
        return float("inf")
    top = float(np.linalg.eigvalsh(M)[-1])
    # rounding: the products, the eigen-splits and the sum carry a few ulps of their size
    size = float(np.sum(t_hi * np.abs(lam).sum(axis=1)))
    return top + 64.0 * _EPS * (n + len(q)) * size


def concavity_bound(W: FloatArray, alpha: float, p: FloatArray, radius: float) -> float:
    """Certified upper bound on the largest eigenvalue of σ∇²G on the tangent space, over the
    ball B(p, radius) ∩ Δ of the input simplex (negative: I_α's G is concave there for α > 1,
    convex for α < 1). +inf when some output's q may vanish in the ball.

    >>> W = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    >>> bool(concavity_bound(W, 2.0, np.full(3, 1 / 3), 0.05) < 0)
    True
    """
    return _bound(_Columns(W, alpha), np.asarray(p, dtype=np.float64), radius)


def _radius(c: _Columns, p: FloatArray, steps: int = 30) -> float:
    """The largest radius (bisection on [0, 1]) whose concavity bound is negative; 0 if none."""
    if not _bound(c, p, 0.0) < 0:
        return 0.0
    lo, hi = 0.0, 1.0
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        if _bound(c, p, mid) < 0:
            lo = mid
        else:
            hi = mid
    return lo


def _first_order(c: _Columns, p: FloatArray) -> float:
    """Upper bound on σG over any region around p where σG is concave: σG(p) plus the
    Frank–Wolfe gap at p (module docstring), with rounding allowances; returned as I_α."""
    alpha, W, A = c.alpha, c.W, c.A
    sigma = 1.0 if alpha > 1 else -1.0
    q, s = p @ W, p @ A
    if not (q > 0).all():
        return float("inf")
    with np.errstate(over="ignore", invalid="ignore"):  # overflow: no bound (+inf) below
        phi = np.power(q, 1.0 - alpha)
        G = float(np.sum(s * phi))
        part_a = A @ phi  # ∂G/∂P_x = Σ_y A_xy q_y^{1−α} + (1−α) W_xy s_y q_y^{−α}
        part_w = W @ (s * phi / q)
        g = sigma * (part_a + (1.0 - alpha) * part_w)
    if not (math.isfinite(G) and np.isfinite(g).all()):
        return float("inf")
    gap = max(float(g.max() - g @ p), 0.0)
    # rounding of G and of the gap; also covers the ~nε distance of the stored p from the
    # exactly normalised centre (G and its gradient are smooth there)
    terms = len(p) + len(q) + 8
    magnitude = G + 2.0 * float(np.max(part_a + abs(1.0 - alpha) * part_w)) * (1.0 + len(p))
    f_up = sigma * G + gap + 16.0 * _EPS * terms * magnitude
    G_up = f_up if alpha > 1 else -f_up
    if not G_up > 0:
        return float("inf")
    value = float(np.log(G_up)) / (alpha - 1.0)
    return value + 8.0 * _EPS * (1.0 + abs(value))


def certify_region(W: FloatArray, alpha: float, p: FloatArray) -> Region | None:
    """The largest certified ball around ``p`` (a local maximum of I_α over the simplex) and
    the certified supremum of I_α on it; None where no ball of positive radius is certified.

    >>> W = np.array([[0.7, 0.2, 0.1], [0.1, 0.7, 0.2], [0.2, 0.1, 0.7]])
    >>> region = certify_region(W, 2.0, np.full(3, 1 / 3))  # symmetric: uniform is optimal
    >>> G = (np.full(3, 1 / 3) @ W**2) @ (np.full(3, 1 / 3) @ W) ** -1.0
    >>> bool(region.radius > 0.1), bool(0 <= region.upper - np.log(G) < 1e-12)
    (True, True)
    """
    c = _Columns(np.asarray(W, dtype=np.float64), alpha)
    p = np.asarray(p, dtype=np.float64)
    p = p / p.sum()
    radius = _radius(c, p)
    upper = _first_order(c, p)
    if radius <= 0 or not np.isfinite(upper):
        return None
    # a cell counts as inside only with room for the rounding of its distance to the centre
    return Region(p, radius * (1.0 - 1e-9) - 8.0 * _EPS * len(p), upper)


class Regions:
    """Certified regions and expansions; :meth:`cap` gives each cell the best of their bounds."""

    __slots__ = ("centres", "expansions", "radii", "uppers")

    def __init__(self, regions: Iterable[Region], expansions: Iterable[Expansion] = ()) -> None:
        self.expansions = list(expansions)
        items = list(regions)
        n = len(items[0].centre) if items else 0
        self.centres = np.array([r.centre for r in items]).reshape(len(items), n)
        self.radii = np.array([r.radius for r in items])
        self.uppers = np.array([r.upper for r in items])

    def __len__(self) -> int:
        """The number of balls and expansions."""
        return len(self.radii) + len(self.expansions)

    def cap(self, V: FloatArray) -> FloatArray:
        """For cells with vertex rows ``V`` (cells, n, n): the smallest certified bound of a
        region containing the whole cell (a ball is convex, so all vertices inside suffice)
        and of the expansions; +inf where none applies."""
        out = np.full(len(V), np.inf)
        for expansion in self.expansions:
            out = np.minimum(out, expansion(V))
        for centre, radius, upper in zip(self.centres, self.radii, self.uppers, strict=True):
            far = np.sum((V - centre) ** 2, axis=2).max(axis=1)
            out = np.where(far <= radius * radius, np.minimum(out, upper), out)
        return out


def local_regions(
    W: FloatArray,
    alpha: float,
    points: Iterable[tuple[float, FloatArray]],
    window: float = 0.1,
    limit: int = 16,
) -> Regions:
    """Regions around the distinct local maxima among ``points`` ((value, input) pairs from
    local searches) whose value is within ``window`` nats of the best, at most ``limit``, and
    the expansion about the best of them.

    >>> W = np.array([[0.7, 0.2, 0.1], [0.1, 0.7, 0.2], [0.2, 0.1, 0.7]])
    >>> found = local_regions(W, 2.0, [(0.1, np.full(3, 1 / 3)), (0.1, np.full(3, 1 / 3))])
    >>> len(found.radii), len(found.expansions)  # one ball (duplicates merged), one expansion
    (1, 1)
    """
    ranked = sorted(points, key=lambda item: -item[0])
    if not ranked:
        return Regions([])
    best = ranked[0][0]
    chosen: list[FloatArray] = []
    for value, p in ranked:
        if value < best - window or len(chosen) >= limit:
            break
        if all(np.abs(p - other).sum() > 1e-6 for other in chosen):
            chosen.append(p)
    regions = (certify_region(W, alpha, p) for p in chosen)
    return Regions((r for r in regions if r is not None), [Expansion(W, alpha, chosen[0])])


def segment_weight(rho: FloatArray, alpha: float) -> tuple[FloatArray, FloatArray]:
    """Lower and upper bounds on j(ρ) = ∫₀¹ 2(1 − t)(1 + t(ρ − 1))^{−α} dt, ρ > 0.

    With d = ρ − 1 and L = log ρ, integrating (ρ − u)u^{−α} over u ∈ [1, ρ]:
    j = 2/d² [ρ E(1 − α) − E(2 − α)], E(c) = (ρ^c − 1)/c = expm1(cL)/c (E(0) = L); for
    |d| < 0.05 the power series j = Σ_k C(−α, k) d^k · 2/((k + 1)(k + 2)) (binomial series)
    with its geometric tail bound. Both come with their rounding allowances; j(1) = 1.

    >>> d = np.array([-0.5, 0.01, 2.0])  # α = 2: j = 2(d − log(1 + d))/d²
    >>> lo, hi = segment_weight(1 + d, 2.0)
    >>> exact = 2 * (d - np.log1p(d)) / d**2
    >>> bool(np.all(lo <= exact) and np.all(exact <= hi) and np.all(hi - lo < 1e-12))
    True
    """
    rho = np.asarray(rho, dtype=np.float64)
    d = rho - 1.0
    small = np.abs(d) < 0.05
    with np.errstate(all="ignore"):
        L = np.log(np.where(small, 1.0, rho))
        dd = np.where(small, 1.0, d)

        def expm1_over(c: float) -> FloatArray:
            out: FloatArray = np.expm1(c * L) / c if c != 0 else L
            return out

        e1, e2 = rho * expm1_over(1.0 - alpha), expm1_over(2.0 - alpha)
        closed = 2.0 * (e1 - e2) / (dd * dd)
        closed_err = 64.0 * _EPS * (np.abs(e1) + np.abs(e2) + np.abs(L)) * 2.0 / (dd * dd)
        # series for |d| < 0.05: coefficients C(−α, k) · 2/((k+1)(k+2)), twelve terms
        ds = np.where(small, d, 0.0)
        series = np.zeros_like(ds)
        coef, power = 1.0, np.ones_like(ds)
        for k in range(12):
            series = series + coef * 2.0 / ((k + 1) * (k + 2)) * power
            coef *= -(alpha + k) / (k + 1)
            power = power * ds
        ratio = np.abs(ds) * (alpha + 12.0) / 13.0
        tail = np.abs(coef) * np.abs(power) * 2.0 / (13.0 * 14.0) / np.maximum(1.0 - ratio, 0.0)
        series_err = tail + 64.0 * _EPS * (1.0 + np.abs(series))
        value = np.where(small, series, closed)
        err = np.where(small, series_err, closed_err)
        lo = value - err - 8.0 * _EPS * np.abs(value)
        hi = value + err + 8.0 * _EPS * np.abs(value)
        # always valid: the weight 2(1 − t) has mass 1 and the power lies between 1 and ρ^{−α}
        crude_lo = np.minimum(1.0, np.power(rho, -alpha)) * (1.0 - 8.0 * _EPS)
        crude_hi = np.maximum(1.0, np.power(rho, -alpha)) * (1.0 + 8.0 * _EPS)
    lo = np.where(np.isfinite(lo), np.maximum(lo, crude_lo), crude_lo)
    hi = np.where(np.isfinite(hi), np.minimum(hi, crude_hi), crude_hi)
    return lo, hi


class Expansion:
    """Certified upper bounds on sup_K I_α over cells K from the second-order expansion about
    a local maximum P* (module docstring, "Expansion about the maximiser")."""

    __slots__ = ("F", "Z", "a1", "a2", "alpha", "c", "drop", "g", "p", "q", "r", "sigma_G", "wn")

    def __init__(self, W: FloatArray, alpha: float, p: FloatArray) -> None:
        c = _Columns(np.asarray(W, dtype=np.float64), alpha)
        self.c, self.alpha = c, alpha
        self.p = np.asarray(p, dtype=np.float64) / np.sum(p)
        self.Z = tangent_basis(len(self.p))
        sigma = 1.0 if alpha > 1 else -1.0
        self.q, s = self.p @ c.W, self.p @ c.A
        with np.errstate(all="ignore"):
            phi = np.power(self.q, 1.0 - alpha)
            self.r = s / self.q
            self.sigma_G = sigma * float(np.sum(s * phi))
            self.g = sigma * (c.A @ phi + (1.0 - alpha) * (c.W @ (s * phi / self.q)))
        # orthonormal basis (e1, e2) of span(Zᵀw_y, Zᵀa_y): Zᵀw = ‖Zᵀw‖e1, Zᵀa = a1 e1 + a2 e2
        wz, az = c.wz.T, c.az.T  # (m, n−1)
        self.wn = c.wn
        e1 = wz / np.where(c.wn > 0, c.wn, 1.0)[:, None]
        self.a1 = np.sum(az * e1, axis=1)
        rest = az - self.a1[:, None] * e1
        self.a2 = np.linalg.norm(rest, axis=1)
        keep = self.a2 > 1e-9 * np.sqrt(c.an2)
        e2 = np.where(keep[:, None], rest / np.where(keep, self.a2, 1.0)[:, None], 0.0)
        # a dropped ‖rest‖ changes K_y by at most 2‖rest‖‖Zᵀw‖ in norm (added as slack)
        self.drop = np.where(keep, 0.0, 2.0 * self.a2 * c.wn)
        self.a2 = np.where(keep, self.a2, 0.0)
        E = np.stack([e1, e2], axis=2)  # (m, n−1, 2)
        # F[(y, u, v), (i, j)] = E_yiu E_yjv, so that Σ_y E_y T_y E_yᵀ is one matrix product
        F = np.einsum("yiu,yjv->yuvij", E, E)
        self.F = F.reshape(len(E) * 4, -1)

    def __call__(self, V: FloatArray) -> FloatArray:
        """Upper bounds on sup of I_α over each cell (vertex rows ``V``, shape (cells, n, n));
        +inf where some output's q may vanish on the cell or P*."""
        with np.errstate(all="ignore"):
            return self._bounds(V)

    def _bounds(self, V: FloatArray) -> FloatArray:
        c, alpha, n = self.c, self.alpha, len(self.p)
        Qv, Sv = V @ c.W, V @ c.A
        q_lo, q_hi = Qv.min(axis=1), Qv.max(axis=1)
        ok = (q_lo > 0).all(axis=1) & (self.q > 0).all()
        Qs = np.where(Qv > 0, Qv, 1.0)
        r_hi = np.maximum((Sv / Qs).max(axis=1), self.r) * (1.0 + 16.0 * _EPS)
        k = abs(alpha - 1.0) * np.power(self.q, -alpha)
        j_lo, _ = segment_weight(q_hi / self.q, alpha)
        _, j_hi = segment_weight(q_lo / self.q, alpha)
        J_hi, J_lo = k * j_hi * (1.0 + 8.0 * _EPS), k * j_lo * (1.0 - 8.0 * _EPS)
        # S = E_yᵀ K_y E_y = [[α r ‖w‖² − 2 a1 ‖w‖, −a2 ‖w‖], [−a2 ‖w‖, 0]]; its 2×2 eigen-split
        top = alpha * r_hi * self.wn**2 - 2.0 * self.a1 * self.wn  # (B, m)
        off = np.broadcast_to(-self.a2 * self.wn, top.shape)
        root = np.sqrt(top * top + 4.0 * off * off)
        lam_p, lam_m = 0.5 * (top + root), 0.5 * (top - root)
        # eigenvector of [[top, off], [off, 0]] for λ is (λ, off) when off ≠ 0; when off = 0
        # the matrix is diag(top, 0)
        coupled = off != 0
        T = np.zeros((*top.shape, 2, 2))
        for lam, weight in ((lam_p, J_hi), (lam_m, J_lo)):
            norm2 = np.where(coupled, lam * lam + off * off, 1.0)
            scale = weight * lam / norm2
            T[..., 0, 0] += np.where(coupled, scale * lam * lam, 0.0)
            T[..., 0, 1] += np.where(coupled, scale * lam * off, 0.0)
            T[..., 1, 1] += np.where(coupled, scale * off * off, 0.0)
        T[..., 0, 0] += np.where(coupled, 0.0, np.where(top > 0, J_hi, J_lo) * top)
        T[..., 1, 0] = T[..., 0, 1]
        M = (T.reshape(len(V), -1) @ self.F).reshape(len(V), n - 1, n - 1)
        size = np.sum(J_hi * (np.abs(lam_p) + np.abs(lam_m) + self.drop), axis=1)
        M = np.where(ok[:, None, None] & np.isfinite(M).all(axis=(1, 2))[:, None, None], M, 0.0)
        lam, U = np.linalg.eigh(M)
        lam = (
            lam
            + (64.0 * _EPS * (n + len(self.q)) * size + np.sum(J_hi * self.drop, axis=1))[:, None]
        )
        D = V - self.p
        g = np.broadcast_to(self.g, (len(V), n))
        quad = _split_quadratic_max(D, g, self.Z, lam, U)
        magnitude = abs(self.sigma_G) + np.abs(quad) + float(np.abs(self.g).max()) + size
        f_up = self.sigma_G + quad + 64.0 * _EPS * (n + len(self.q)) * magnitude
        G_up = f_up if alpha > 1 else -f_up
        value = np.where(G_up > 0, np.log(np.where(G_up > 0, G_up, 1.0)), np.nan) / (alpha - 1.0)
        value = value + 8.0 * _EPS * (1.0 + np.abs(value))
        good = ok & np.isfinite(value) & np.isfinite(size) & np.isfinite(quad)
        out: FloatArray = np.where(good, value, np.inf)
        return out
