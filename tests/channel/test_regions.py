"""Certified regions around local maxima of the article's I_α ("Differential Privacy and
Information Theory", 2022): balls of certified concavity (Loewner bound on the Hessian, Weyl's
monotonicity of λ_max; KKT / Frank–Wolfe gap for the first order) and the second-order
expansion about a maximiser (Taylor's theorem with integral remainder).

Every check is against an independent evaluation: I_α(P) = D_α(P_XY ‖ P_X P_Y) from Rényi's
definition on the joint distribution, Hessians by central finite differences, and the segment
weight by scipy's adaptive quadrature.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.special import logsumexp

from infodp.channel._numerics import _log
from infodp.channel.certificates import bisect, tangent_basis
from infodp.channel.regions import (
    Expansion,
    Region,
    Regions,
    certify_region,
    concavity_bound,
    local_regions,
    segment_weight,
)
from infodp.channel.renyi import _local_max_renyi

ALPHAS = [0.3, 0.5, 0.8, 1.5, 2.0, 3.0, 5.0]


def renyi_information(P: np.ndarray, W: np.ndarray, alpha: float) -> np.ndarray:
    """D_α(P_XY ‖ P_X P_Y) for a batch of inputs (rows of P), Rényi (1961), Def. 3."""
    joint = P[:, :, None] * W[None]
    product = P[:, :, None] * (P @ W)[:, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(joint > 0, alpha * np.log(joint) + (1 - alpha) * np.log(product), -np.inf)
    return np.asarray(logsumexp(logs.reshape(len(P), -1), axis=1)) / (alpha - 1)


def channel(seed: int, n: int, m: int) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.full(m, 0.5), size=n)


def local_maximum(W: np.ndarray, alpha: float) -> np.ndarray:
    # any point is a valid centre of a certificate; a local maximum gives a useful one
    return _local_max_renyi(W, _log(W), alpha, np.full(W.shape[0], 1 / W.shape[0]))[1]


def ball_points(
    rng: np.random.Generator, centre: np.ndarray, radius: float, count: int
) -> np.ndarray:
    """Points of B(centre, radius) ∩ simplex: random tangent directions, radii up to the
    sphere (half of them on it), kept where all coordinates are non-negative."""
    n = len(centre)
    Z = tangent_basis(n)
    d = rng.normal(size=(count, n - 1)) @ Z.T
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    t = radius * np.where(rng.random(count) < 0.5, 1.0, rng.random(count) ** (1 / (n - 1)))
    P = centre + t[:, None] * d
    return P[(P >= 0).all(axis=1)]


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(3, 6),
    m=st.integers(3, 12),
    alpha=st.sampled_from(ALPHAS),
)
def test_region_bound_holds_at_sampled_points_of_the_region(
    seed: int, n: int, m: int, alpha: float
) -> None:
    W = channel(seed, n, m)
    p = local_maximum(W, alpha)
    region = certify_region(W, alpha, p)
    assume(region is not None)  # no concave ball where the maximiser is on a face (α > 2)
    assert region is not None
    rng = np.random.default_rng(seed)
    P = ball_points(rng, region.centre, region.radius, 400)
    values = renyi_information(np.vstack([P, region.centre]), W, alpha)
    assert np.nanmax(values) <= region.upper + 1e-12 * max(1.0, abs(region.upper))


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    alpha=st.sampled_from(ALPHAS),
    fraction=st.floats(0.0, 1.0),
)
def test_concavity_bound_dominates_finite_difference_hessians_in_the_ball(
    seed: int, alpha: float, fraction: float
) -> None:
    # Loewner/Weyl bound on λ_max(Zᵀσ∇²G Z) over the ball against the Hessian of
    # G(P) = exp((α−1) I_α(P)) by central differences at sampled points (σ = sign(α − 1)).
    n, m = 4, 6
    W = channel(seed, n, m)
    p = local_maximum(W, alpha)
    region = certify_region(W, alpha, p)
    radius = fraction * (region.radius if region is not None else 0.05)
    bound = concavity_bound(W, alpha, p, radius)
    assume(np.isfinite(bound))
    sigma = 1.0 if alpha > 1 else -1.0
    Z = tangent_basis(n)
    h = 1e-4

    def G(P: np.ndarray) -> np.ndarray:
        return np.exp((alpha - 1) * renyi_information(P, W, alpha))

    rng = np.random.default_rng(seed)
    points = [x for x in ball_points(rng, p, radius, 12) if x.min() >= 2 * h]
    assume(points)
    for point in points:
        H = np.empty((n - 1, n - 1))
        for i in range(n - 1):
            for j in range(n - 1):
                di, dj = h * Z[:, i], h * Z[:, j]
                corners = np.array(
                    [point + di + dj, point + di - dj, point - di + dj, point - di - dj]
                )
                g = G(corners)
                H[i, j] = (g[0] - g[1] - g[2] + g[3]) / (4 * h * h)
        top = np.linalg.eigvalsh(sigma * 0.5 * (H + H.T))[-1]
        assert top <= bound + 1e-4 * (1 + np.abs(H).max())


@settings(max_examples=200, deadline=None)
@given(alpha=st.floats(0.05, 12.0).filter(lambda a: abs(a - 1) > 1e-3), log_rho=st.floats(-9, 5))
def test_segment_weight_brackets_the_integral(alpha: float, log_rho: float) -> None:
    # j(ρ) = ∫₀¹ 2(1 − t)(1 + t(ρ − 1))^{−α} dt by adaptive quadrature; for small ρ the
    # integrand peaks where 1 − t is of the order of ρ, so those scales are breakpoints
    rho = float(np.exp(log_rho))
    scales = [1 - k * rho for k in (1, 10, 100)] if rho < 1 else []
    exact, err = quad(
        lambda t: 2 * (1 - t) * (1 + t * (rho - 1)) ** -alpha,
        0,
        1,
        epsabs=0,
        epsrel=1e-13,
        limit=400,
        points=[t for t in scales if 0 < t < 1] or None,
    )
    lo, hi = segment_weight(np.array([rho]), alpha)
    slack = err + 1e-10 * exact  # the quadrature's own accuracy
    assert lo[0] <= exact + slack
    assert exact - slack <= hi[0]
    assert hi[0] - lo[0] <= 1e-8 * exact


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    alpha=st.sampled_from(ALPHAS),
    splits=st.integers(0, 8),
)
def test_expansion_bound_dominates_every_sampled_point_of_its_cells(
    seed: int, alpha: float, splits: int
) -> None:
    n, m = 5, 7
    W = channel(seed, n, m)
    rng = np.random.default_rng(seed)
    # the expansion is valid about any centre: a local maximum, or a random input
    centre = local_maximum(W, alpha) if seed % 2 else rng.dirichlet(np.full(n, 1.0))
    expansion = Expansion(W, alpha, centre)
    V = np.eye(n)[None]
    for _ in range(splits):
        V = bisect(V, W, W**alpha, alpha)
    bounds = expansion(V)
    for k in range(0, len(V), max(1, len(V) // 16)):
        lam = np.vstack([rng.dirichlet(np.full(n, 0.3), size=200), np.eye(n)])
        values = renyi_information(lam @ V[k], W, alpha)
        assert np.nanmax(values) <= bounds[k] + 1e-12 * max(1.0, abs(bounds[k]))


def test_a_cell_inside_a_region_takes_its_bound_and_others_do_not() -> None:
    W = channel(4, 4, 6)
    p = local_maximum(W, 2.0)
    region = certify_region(W, 2.0, p)
    assert region is not None and region.radius > 0.01
    inside = p + 0.5 * region.radius * (np.eye(4) - 0.25) / np.linalg.norm(np.eye(4)[0] - 0.25)
    outside = np.eye(4)
    caps = Regions([region]).cap(np.stack([inside, outside]))
    assert caps[0] == region.upper and caps[1] == np.inf
    # the bound is the value at the centre up to the ascent's KKT residual
    value = renyi_information(p[None], W, 2.0)[0]
    assert value <= region.upper <= value + 1e-6


def test_local_regions_keep_distinct_maxima_near_the_best() -> None:
    W = channel(5, 5, 8)
    p = local_maximum(W, 0.5)
    value = float(renyi_information(p[None], W, 0.5)[0])
    far = np.full(5, 0.2)
    regions = local_regions(W, 0.5, [(value, p), (value, p.copy()), (value - 1.0, far)])
    assert len(regions.radii) == 1 and len(regions.expansions) == 1 and len(regions) == 2
    assert isinstance(Region(p, 0.1, value), Region)
