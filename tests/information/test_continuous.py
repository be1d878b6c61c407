"""Closed-form Rényi divergences of Laplace and Gaussian distributions.

Every closed form is checked against a second method: direct numerical integration with scipy
of ∫ p^α q^{1−α} (an independent code path from ``renyi_divergence_quadrature``'s splitting),
the equal-scale formulas of Mironov (2017, Table II), and the laws of Rényi divergence
(van Erven & Harremoës 2014: non-decreasing in α, continuity at α = 1).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy import integrate, stats

from infodp.errors import ParameterError
from infodp.information.continuous import (
    renyi_divergence_gaussian,
    renyi_divergence_laplace,
    renyi_divergence_quadrature,
)

locs = st.floats(-3, 3)
scales = st.floats(0.3, 3)
orders = st.sampled_from([0.1, 0.5, 0.9, 0.999, 1.0, 1.001, 1.5, 2.0, 3.0, 7.5])


def brute_force(p: stats.rv_continuous, q: stats.rv_continuous, alpha: float) -> float:
    """D_α by plain adaptive quadrature on (−∞, k1], [k1, k2], [k2, ∞) at the two medians.

    No log-domain rescaling and no quantile splitting: a different code path from
    ``renyi_divergence_quadrature``.
    """
    k1, k2 = sorted((float(p.median()), float(q.median())))
    pieces = [(-np.inf, k1), (k1, k2), (k2, np.inf)]
    if alpha == 1.0:

        def f(x: float) -> float:
            lp, lq = float(p.logpdf(x)), float(q.logpdf(x))
            if not (math.isfinite(lp) and math.isfinite(lq)):
                return 0.0
            return math.exp(lp) * (lp - lq)

    else:

        def f(x: float) -> float:
            lp, lq = float(p.logpdf(x)), float(q.logpdf(x))
            if not (math.isfinite(lp) and math.isfinite(lq)):
                return 0.0  # both densities underflow far in the tails
            return math.exp(alpha * lp + (1 - alpha) * lq)

    total = sum(integrate.quad(f, a, b, limit=400, epsabs=1e-13)[0] for a, b in pieces if a < b)
    return total if alpha == 1.0 else math.log(total) / (alpha - 1)


def mironov_laplace(d_over_b: float, alpha: float) -> float:
    """Mironov (2017), Table II: Laplace mechanism with sensitivity/scale ratio d/b."""
    if alpha == 1.0:
        return d_over_b + math.exp(-d_over_b) - 1
    return math.log(
        alpha / (2 * alpha - 1) * math.exp((alpha - 1) * d_over_b)
        + (alpha - 1) / (2 * alpha - 1) * math.exp(-alpha * d_over_b)
    ) / (alpha - 1)


@pytest.mark.slow  # ~0.9 CPU-s (measured)
@given(locs, scales, locs, scales, orders)
def test_laplace_matches_brute_force_quadrature(
    m1: float, b1: float, m2: float, b2: float, alpha: float
) -> None:
    closed = renyi_divergence_laplace(m1, b1, m2, b2, alpha=alpha)
    if math.isinf(closed):
        # Divergent exactly when α/b_p + (1−α)/b_q ≤ 0 (the tail integrand does not decay).
        assert alpha > 1 and alpha / b1 + (1 - alpha) / b2 <= 0
        return
    assume((alpha - 1) * closed < 300)  # the naive integrand would overflow a double
    ref = brute_force(stats.laplace(m1, b1), stats.laplace(m2, b2), alpha)
    assert closed == pytest.approx(ref, rel=1e-6, abs=1e-8)


@pytest.mark.slow  # ~0.8 CPU-s (measured)
@given(locs, scales, locs, scales, orders)
def test_gaussian_matches_brute_force_quadrature(
    m1: float, s1: float, m2: float, s2: float, alpha: float
) -> None:
    closed = renyi_divergence_gaussian(m1, s1, m2, s2, alpha=alpha)
    if math.isinf(closed):
        assert alpha > 1 and alpha * s2**2 + (1 - alpha) * s1**2 <= 0
        return
    assume((alpha - 1) * closed < 300)  # the naive integrand would overflow a double
    ref = brute_force(stats.norm(m1, s1), stats.norm(m2, s2), alpha)
    assert closed == pytest.approx(ref, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("alpha", [1.0, 1.5, 2.0, 10.0, 100.0])
@pytest.mark.parametrize("ratio", [0.1, 1.0, 3.0])
def test_laplace_equal_scales_is_mironov_table_ii(alpha: float, ratio: float) -> None:
    got = renyi_divergence_laplace(0.0, 1.0, ratio, 1.0, alpha=alpha)
    assert got == pytest.approx(mironov_laplace(ratio, alpha), rel=1e-12)


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0, 50.0])
def test_gaussian_equal_variance_is_alpha_delta2_over_2sigma2(alpha: float) -> None:
    # Mironov (2017), Proposition 3; α = 1 is KL = Δ²/(2σ²).
    assert renyi_divergence_gaussian(0, 2, 3, 2, alpha=alpha) == pytest.approx(alpha * 9 / 8)


@pytest.mark.slow
def test_infinite_order_is_supremum_of_log_ratio() -> None:
    x = np.linspace(-60, 60, 2_000_001)
    for p, q, closed in [
        (
            stats.laplace(0, 1),
            stats.laplace(1.3, 2),
            renyi_divergence_laplace(0, 1, 1.3, 2, alpha=math.inf),
        ),
        (
            stats.norm(0.5, 1),
            stats.norm(-1, 1.7),
            renyi_divergence_gaussian(0.5, 1, -1, 1.7, alpha=math.inf),
        ),
    ]:
        assert closed == pytest.approx(float(np.max(p.logpdf(x) - q.logpdf(x))), rel=1e-6)
    assert renyi_divergence_laplace(0, 1, 2, 1, alpha=math.inf) == pytest.approx(2.0)
    assert math.isinf(renyi_divergence_gaussian(0, 1, 0, 0.5, alpha=math.inf))
    assert renyi_divergence_gaussian(1, 1, 1, 1, alpha=math.inf) == 0.0


@given(locs, scales, locs, scales)
def test_non_decreasing_in_alpha_and_continuous_at_one(
    m1: float, b1: float, m2: float, b2: float
) -> None:
    grid = [0.0, 0.2, 0.7, 1 - 1e-9, 1.0, 1 + 1e-9, 1.3, 2.0, 5.0, math.inf]
    for fn in (renyi_divergence_laplace, renyi_divergence_gaussian):
        vals = [fn(m1, b1, m2, b2, alpha=a) for a in grid]
        assert all(v >= 0 for v in vals)
        assert all(x <= y * (1 + 1e-9) + 1e-12 for x, y in itertools.pairwise(vals))
        assert vals[3] == pytest.approx(vals[4], rel=1e-6, abs=1e-12)
        assert vals[5] == pytest.approx(vals[4], rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("alpha", [0.3, 1.0, 2.5])
def test_quadrature_agrees_with_closed_form_and_reports_small_error(alpha: float) -> None:
    r = renyi_divergence_quadrature(stats.laplace(0, 1), stats.laplace(0.7, 1.4), alpha=alpha)
    exact = renyi_divergence_laplace(0, 1, 0.7, 1.4, alpha=alpha)
    assert abs(r.value - exact) <= max(10 * r.error, 1e-9)
    assert r.error < 1e-8


@pytest.mark.slow
def test_quadrature_on_a_family_without_closed_form_here() -> None:
    # Student-t vs Gaussian: D_α is finite for α < 1 and the α → 1 limit is KL; check KL
    # against scipy's own expectation machinery (a second integration routine).
    p, q = stats.norm(0, 1), stats.t(df=4)
    kl = renyi_divergence_quadrature(p, q, alpha=1.0)
    ref = p.expect(lambda x: p.logpdf(x) - q.logpdf(x))
    assert kl.value == pytest.approx(ref, rel=1e-7)
    near = renyi_divergence_quadrature(p, q, alpha=1 - 1e-6)
    assert near.value == pytest.approx(kl.value, rel=1e-4)


def test_quadrature_support_mismatch_is_infinite() -> None:
    r = renyi_divergence_quadrature(stats.norm(0, 1), stats.expon(), alpha=2.0)
    assert math.isinf(r.value)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alpha": -1.0}, "alpha"),
        ({"alpha": math.nan}, "alpha"),
    ],
)
def test_bad_orders_are_refused(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        renyi_divergence_laplace(0, 1, 1, 1, **kwargs)
    with pytest.raises(ParameterError, match=match):
        renyi_divergence_gaussian(0, 1, 1, 1, **kwargs)


def test_bad_scales_and_distributions_are_refused() -> None:
    with pytest.raises(ParameterError, match="scale_p"):
        renyi_divergence_laplace(0, 0, 1, 1, alpha=2)
    with pytest.raises(ParameterError, match="std_q"):
        renyi_divergence_gaussian(0, 1, 1, -1, alpha=2)
    with pytest.raises(ParameterError, match="p must be a frozen continuous"):
        renyi_divergence_quadrature([0.5, 0.5], stats.norm(), alpha=2)
    with pytest.raises(ParameterError, match="alpha"):
        renyi_divergence_quadrature(stats.norm(), stats.norm(), alpha=math.inf)


@pytest.mark.parametrize(("b1", "d", "b2"), [(1.0, 0.5, 1.0), (0.4, 1.3, 2.0), (2.5, 0.0, 1.1)])
def test_laplace_near_one_uses_the_variance_of_the_privacy_loss(
    b1: float, d: float, b2: float
) -> None:
    # dD_α/dα at α = 1 is Var_P[log p/q] / 2 (van Erven & Harremoës 2014, Sec. III-F): check the
    # slope of the near-one branch against a variance computed by scipy quadrature, and that
    # the branch joins the three-term formula continuously on both sides.
    p, q = stats.laplace(0, b1), stats.laplace(d, b2)

    def second_moment(x: float) -> float:
        lp, lq = float(p.logpdf(x)), float(q.logpdf(x))
        if not (math.isfinite(lp) and math.isfinite(lq)):
            return 0.0
        return math.exp(lp) * (lp - lq) ** 2

    pieces = [(-np.inf, 0.0), (0.0, d), (d, np.inf)]
    moment = sum(integrate.quad(second_moment, a, b, epsabs=1e-13)[0] for a, b in pieces if a < b)
    var = moment - renyi_divergence_laplace(0, b1, d, b2, alpha=1.0) ** 2
    h = 5e-7
    slope = (
        renyi_divergence_laplace(0, b1, d, b2, alpha=1 + h)
        - renyi_divergence_laplace(0, b1, d, b2, alpha=1 - h)
    ) / (2 * h)
    assert slope == pytest.approx(var / 2, rel=1e-6, abs=1e-9)
    for side in (1.0, -1.0):
        inner = renyi_divergence_laplace(0, b1, d, b2, alpha=1 + side * (1e-6 - 1e-12))
        outer = renyi_divergence_laplace(0, b1, d, b2, alpha=1 + side * (1e-6 + 1e-12))
        assert inner == pytest.approx(outer, abs=1e-9)
