"""RDP curves checked against closed forms, brute-force sums and Google's dp-accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, special

from infodp.accounting import rdp
from infodp.errors import ParameterError


def _renyi_discrete(p: np.ndarray, q: np.ndarray, alpha: float) -> float:
    """Independent D_α(P‖Q) of two discrete distributions (definition, Mironov 2017, Def. 3)."""
    if alpha == 1.0:
        return float(np.sum(special.rel_entr(p, q)))
    return float(special.logsumexp(alpha * np.log(p) + (1 - alpha) * np.log(q)) / (alpha - 1))


def test_gaussian_closed_form() -> None:
    # Mironov 2017, Table II: α/(2σ²).
    assert rdp.gaussian_rdp(2.0, 3.0) == pytest.approx(3.0 / 8.0, rel=1e-15)
    assert rdp.gaussian_rdp(2.0, 1.0) == pytest.approx(1.0 / 8.0, rel=1e-15)


@pytest.mark.parametrize("lam", [0.1, 0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("alpha", [1.0, 1.05, 1.5, 2.0, 7.5, 64.0])
def test_laplace_matches_dp_accounting_and_quadrature(lam: float, alpha: float) -> None:
    # Mironov 2017, Proposition 6 / Table II; dp-accounting's _laplace_rdp uses the same
    # result in another algebraic form (and a Taylor series near α = 1).
    ours = rdp.laplace_rdp(lam, alpha)
    assert ours == pytest.approx(dpa_rdp._laplace_rdp(1.0 / lam, alpha), rel=1e-9, abs=1e-13)
    if alpha in (1.5, 2.0) and lam >= 0.5:

        def integrand(y: float) -> float:
            p = math.exp(-abs(y) / lam) / (2 * lam)
            q = math.exp(-abs(y - 1) / lam) / (2 * lam)
            return p**alpha * q ** (1 - alpha)

        value, _ = integrate.quad(integrand, -60 * lam, 60 * lam, points=[0.0, 1.0], limit=200)
        assert ours == pytest.approx(math.log(value) / (alpha - 1), rel=1e-7)


@pytest.mark.parametrize("eps", [0.1, math.log(3), 2.0, 5.0])
@pytest.mark.parametrize("k", [2, 3, 10])
@pytest.mark.parametrize("alpha", [1.0, 1.3, 2.0, 10.0, 300.0])
def test_randomized_response_against_definition(eps: float, k: int, alpha: float) -> None:
    # Mironov 2017, Table II (k = 2); the k-ary worst pair is (a, b, …) vs (b, a, …).
    a = math.exp(eps) / (math.exp(eps) + k - 1)
    b = 1 / (math.exp(eps) + k - 1)
    p = np.array([a, b] + [b] * (k - 2))
    q = np.array([b, a] + [b] * (k - 2))
    expected = _renyi_discrete(p, q, alpha)
    assert rdp.randomized_response_rdp(eps, k, alpha) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("eps", [0.2, 1.0, 3.0])
def test_rr_kl_is_eps_tanh(eps: float) -> None:
    # Cuff & Yu 2016, Property 1: KL of the ε-DP extreme pair equals ε·tanh(ε/2).
    assert rdp.randomized_response_rdp(eps, 2, 1.0) == pytest.approx(
        eps * math.tanh(eps / 2), rel=1e-12
    )


@pytest.mark.parametrize("scale", [0.3, 1.0, 4.0])
@pytest.mark.parametrize("sens", [1, 2, 5])
@pytest.mark.parametrize("alpha", [1.0, 1.5, 2.0, 6.0, 40.0])
def test_discrete_laplace_against_brute_force(scale: float, sens: int, alpha: float) -> None:
    ks = np.arange(-4000, 4001)
    logw = -np.abs(ks) / scale
    p = np.exp(logw - special.logsumexp(logw))
    q = np.exp(-np.abs(ks - sens) / scale - special.logsumexp(logw))
    keep = (p > 0) & (q > 0)
    expected = _renyi_discrete(p[keep], q[keep], alpha)
    assert rdp.discrete_laplace_rdp(scale, sens, alpha) == pytest.approx(expected, rel=1e-8)


def test_discrete_gaussian_bound_dominates_exact() -> None:
    # CKS 2020, Theorem 4: the bound α/(2σ²) is ≥ the exact divergence (by brute force).
    sigma = 1.3
    ks = np.arange(-40, 41)
    logw = -(ks**2) / (2 * sigma**2)
    p = np.exp(logw - special.logsumexp(logw))
    q = np.roll(p, 1)
    for alpha in [1.0, 2.0, 5.0]:
        exact = _renyi_discrete(p[1:-1], q[1:-1], alpha)
        bound = float(rdp.discrete_gaussian_rdp(sigma, 1, np.array(alpha)))
        assert exact <= bound + 1e-12
        assert bound == pytest.approx(alpha / (2 * sigma**2))


_ORDERS_INT = [2.0, 3.0, 5.0, 16.0, 64.0]
_ORDERS_FRAC = [1.1, 1.5, 2.5, 7.25, 20.5]


@pytest.mark.parametrize("seed", range(12))
def test_subsampled_gaussian_matches_dp_accounting(seed: int) -> None:
    # Mironov, Talwar & Zhang 2019; independent implementation: dp-accounting.
    rng = np.random.default_rng(seed)
    sigma = float(rng.uniform(0.5, 5.0))
    q = float(10 ** rng.uniform(-3, -0.3))
    orders = np.array(_ORDERS_INT + _ORDERS_FRAC)
    ours = rdp.subsampled_gaussian_rdp(sigma, q, orders)
    theirs = dpa_rdp._compute_rdp_poisson_subsampled_gaussian(q, sigma, orders)
    finite = np.isfinite(theirs)
    assert np.all(ours[finite] >= theirs[finite] * (1 - 1e-9))  # never below the reference
    np.testing.assert_allclose(ours[finite], theirs[finite], rtol=1e-5, atol=1e-14)


def test_subsampled_gaussian_kl_against_quadrature() -> None:
    # KL of both add/remove pairs by an independent trapezoid rule on a fine grid; KL is
    # the α → 1 limit and RDP is non-decreasing in α (van Erven & Harremoës 2014), so the
    # fractional-order bound of Mironov, Talwar & Zhang at α = 1.0001 must lie above.
    sigma, q = 1.0, 0.05
    y = np.linspace(-30, 31, 400001)
    p0 = np.exp(-(y**2) / 2) / math.sqrt(2 * math.pi)
    p1 = np.exp(-((y - 1) ** 2) / 2) / math.sqrt(2 * math.pi)
    mix = (1 - q) * p0 + q * p1
    keep = (p0 > 0) & (mix > 0)
    kl_remove = np.trapezoid(special.rel_entr(mix[keep], p0[keep]), y[keep])
    kl_add = np.trapezoid(special.rel_entr(p0[keep], mix[keep]), y[keep])
    kl = rdp.subsampled_gaussian_kl(sigma, q)
    assert kl == pytest.approx(max(kl_remove, kl_add), rel=1e-6)
    assert kl >= max(kl_remove, kl_add) * (1 - 1e-7)
    near_one = float(rdp.subsampled_gaussian_rdp(sigma, q, np.array(1.0001)))
    assert kl <= near_one


def test_subsampled_gaussian_limits() -> None:
    assert rdp.subsampled_gaussian_kl(2.0, 1.0) == pytest.approx(1 / 8)
    assert float(rdp.subsampled_gaussian_rdp(2.0, 0.0, np.array(3.0))) == 0.0


def test_group_rdp_dominates_exact_gaussian_group() -> None:
    # Mironov 2017, Corollary 4 is an upper bound; the exact group-of-k Gaussian has
    # sensitivity k, i.e. α k²/(2σ²).
    alphas = np.array([1.0, 2.0, 3.0, 10.0])
    for k in [2, 3, 4]:
        bound = rdp.group_rdp(lambda a: rdp.gaussian_rdp(1.0, a), k, alphas)
        exact = alphas * k * k / 2
        assert np.all(bound >= exact)


def test_validation_names_argument() -> None:
    with pytest.raises(ParameterError, match="lam"):
        rdp.laplace_rdp(-1.0, 2.0)
    with pytest.raises(ParameterError, match="alpha"):
        rdp.gaussian_rdp(1.0, 0.5)
    with pytest.raises(ParameterError, match="sampling_rate"):
        rdp.subsampled_gaussian_rdp(1.0, 1.5, np.array([2.0]))


@given(
    lam=st.floats(0.05, 50.0),
    a1=st.floats(1.0, 200.0),
    a2=st.floats(1.0, 200.0),
)
def test_laplace_rdp_non_decreasing_in_alpha(lam: float, a1: float, a2: float) -> None:
    # Rényi divergence is non-decreasing in α (van Erven & Harremoës 2014, Theorem 3).
    lo, hi = sorted((a1, a2))
    assert rdp.laplace_rdp(lam, lo) <= rdp.laplace_rdp(lam, hi) + 1e-12
    assert rdp.laplace_rdp(lam, hi) <= 1 / lam + 1e-12


@given(eps=st.floats(0.0, 10.0), a1=st.floats(1.0, 100.0), a2=st.floats(1.0, 100.0))
def test_rr_rdp_non_decreasing_and_below_pure(eps: float, a1: float, a2: float) -> None:
    lo, hi = sorted((a1, a2))
    v_lo = rdp.randomized_response_rdp(eps, 2, lo)
    v_hi = rdp.randomized_response_rdp(eps, 2, hi)
    assert v_lo <= v_hi + 1e-12
    # Bun & Steinke 2016, Prop. 3.3: ε-DP ⇒ RDP ≤ min(ε, αε²/2).
    assert v_hi <= min(eps, hi * eps * eps / 2) + 1e-9


@pytest.mark.parametrize("alpha", [1.5, 2.0, 10.0, 100.0])
def test_tiny_randomized_response_rdp_is_not_rounded_to_zero(alpha: float) -> None:
    # For small privacy losses D_α = α·Var_P[L]/2 + O(ε³) (second-order expansion of
    # log E[e^{(α−1)L}]; van Erven & Harremoës 2014, Sec. III-F), and Var_P[L] → ε² for binary
    # randomized response. Rounding this to 0 would be an optimistic claim.
    eps = 1e-9
    assert rdp.randomized_response_rdp(eps, 2, alpha) == pytest.approx(alpha * eps**2 / 2, rel=1e-6)


def test_row_logsumexp_matches_scipy() -> None:
    import numpy as np
    from scipy import special

    from infodp.accounting.rdp import _logsumexp_rows

    rng = np.random.default_rng(0)
    terms = rng.normal(scale=300, size=(20, 7))
    terms[3, 2] = -np.inf
    terms[4, :] = -np.inf
    want = special.logsumexp(terms, axis=1)
    got = _logsumexp_rows(terms)
    assert np.array_equal(np.isinf(want), np.isinf(got))
    assert np.allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-13, atol=0)


@pytest.mark.parametrize("scale", [0.5, 3.0, 100.0, 5000.0, 1e5])
@pytest.mark.parametrize("d", [2, 3, 50, 1000, 2000])
def test_discrete_laplace_closed_form_bounds_the_atom_sum(scale: float, d: int) -> None:
    """The geometric-series form (Python floats) against the Δ + 1-atom sum (numpy).

    Both sum Σ_k P(k)^α P(k−Δ)^{1−α} for the discrete Laplace pair; the closed form must never
    be below (up to the atom sum's own rounding), must be close, and where it calls itself
    precise it must agree to its stated tolerance.
    """
    import numpy as np

    from infodp.accounting.rdp import (
        _CLOSED_RTOL,
        _discrete_laplace_rdp_atoms,
        _discrete_laplace_rdp_closed,
    )

    orders = np.array([1.001, 1.01, 1.5, 2.0, 3.0, 8.0, 32.0, 128.0, 1e4])
    atoms = _discrete_laplace_rdp_atoms(1.0 / scale, d, orders)
    pairs = [_discrete_laplace_rdp_closed(1.0 / scale, d, a) for a in orders.tolist()]
    closed = np.array([v for v, _ in pairs])
    assert np.all(closed >= atoms * (1 - 1e-7))
    assert np.allclose(closed, atoms, rtol=1e-3, atol=1e-15)
    for (value, precise), atom in zip(pairs, atoms.tolist(), strict=True):
        if precise:
            assert value == pytest.approx(atom, rel=2 * _CLOSED_RTOL, abs=1e-300)


def test_discrete_laplace_on_a_fine_grid_approaches_mironovs_laplace() -> None:
    """Δ = 10⁶ grid steps at ε = Δ/scale = 1: the discrete pair tends to the continuous one,
    whose RDP is Mironov (2017), Table II: 1/(α−1)·log(α/(2α−1)e^{(α−1)ε} + (α−1)/(2α−1)e^{−αε}).
    """
    import math

    import numpy as np

    from infodp.accounting.rdp import discrete_laplace_rdp

    orders = np.array([1.5, 2.0, 4.0, 16.0])
    got = np.asarray(discrete_laplace_rdp(1e6, 1_000_000, orders))
    want = np.array(
        [
            math.log(a / (2 * a - 1) * math.exp(a - 1) + (a - 1) / (2 * a - 1) * math.exp(-a))
            / (a - 1)
            for a in orders
        ]
    )
    assert np.allclose(got, want, rtol=1e-5)
    assert np.all(got >= want * (1 - 1e-9))


@pytest.mark.parametrize(
    ("scale", "sens"), [(7.0, 3000), (3000.0, 2500), (2e5, 20_000), (1e9, 5000)]
)
def test_discrete_laplace_kl_closed_form_against_the_atom_sum_in_decimal(
    scale: float, sens: int
) -> None:
    # Above 2048 atoms the KL is ε − (λ/sinh λ)(1 − e^{−ε}) (E|k−Δ| − |k| = Δ − 2E clip(k, 0, Δ),
    # a tail sum of geometric probabilities); checked against the definition summed atom by
    # atom in 40-digit decimal arithmetic: λ·Σ_k P(k)(|k − Δ| − |k|).
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 40
        lam = 1 / Decimal(scale)
        r = (-lam).exp()
        d = Decimal(sens)
        total = d / (1 + r) - d * r**sens / (1 + r)
        c = (1 - r) / (1 + r)
        rk = Decimal(1)
        for k in range(1, sens):
            rk *= r
            total += (d - 2 * k) * c * rk
        exact = float(lam * total)
    got = rdp.discrete_laplace_kl(scale, sens)
    assert got >= exact  # rounded up
    assert got == pytest.approx(exact, rel=1e-11)
