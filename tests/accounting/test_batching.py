"""Batching schemes accounted as implemented, each against an independent reference.

References: the exact hockey-stick divergence of the worst-case pair of output laws,
integrated numerically (brute force on one step); the Gaussian's closed form (Balle & Wang
2018, Theorem 8); the subsampling formula of Balle, Barthe & Gaboardi 2018 (Theorems 9, 10);
dp_accounting's PLD for Poisson sampling.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as dpa
from scipy import integrate, optimize, stats

from infodp.accounting import subsampled_gaussian_profile
from infodp.accounting.batching import step_profile, training_run
from infodp.errors import ParameterError


def _hockey(p: Callable[[float], float], q: Callable[[float], float], eps: float) -> float:
    """δ(ε) = ∫ (p − e^ε q)₊ by adaptive quadrature over the line (brute force)."""
    f = lambda y: max(p(y) - math.exp(eps) * q(y), 0.0)  # noqa: E731
    pieces = [-30.0, -3.0, -1.0, 0.0, 1.0, 3.0, 30.0]
    return sum(
        integrate.quad(f, a, b, epsabs=1e-14, epsrel=1e-10, limit=400)[0]
        for a, b in itertools.pairwise(pieces)
    )


def _epsilon(p: Callable[[float], float], q: Callable[[float], float], delta: float) -> float:
    both = lambda e: max(_hockey(p, q, e), _hockey(q, p, e)) - delta  # noqa: E731
    return float(optimize.brentq(both, 0.0, 20.0, xtol=1e-10))


def _mixture(weights: list[float], means: list[float], sigma: float) -> Callable[[float], float]:
    # The normal density written out: quad evaluates the mixture tens of thousands of times,
    # and a scalar call of scipy's stats.norm.pdf costs a fifth of a millisecond.
    scale = sigma * math.sqrt(2 * math.pi)
    return lambda y: (
        sum(
            w * math.exp(-0.5 * ((y - m) / sigma) ** 2) for w, m in zip(weights, means, strict=True)
        )
        / scale
    )


def _gaussian_epsilon(mu: float, delta: float) -> float:
    # Balle & Wang 2018, Theorem 8: δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ), N(0,1) vs N(μ,1).
    def d(e: float) -> float:
        return float(
            stats.norm.cdf(mu / 2 - e / mu) - math.exp(e) * stats.norm.cdf(-mu / 2 - e / mu)
        )

    return float(optimize.brentq(lambda e: d(e) - delta, 0.0, 200.0, xtol=1e-12))


@pytest.mark.slow  # dp-accounting's PLD of many steps: seconds of CPU
def test_poisson_add_remove_is_dp_accountings_subsampled_gaussian() -> None:
    run = training_run(
        1.1, scheme="poisson", relation="add_remove", steps=1000, batch_size=64, dataset_size=6400
    )
    assert run.relation == "add_remove" and run.amplified
    ref = (
        dpa.from_gaussian_mechanism(1.1, sampling_prob=0.01, value_discretization_interval=2e-5)
        .self_compose(1000)
        .get_epsilon_for_delta(1e-5)
    )
    assert ref * (1 - 1e-4) <= run.epsilon(1e-5) <= ref * (1 + 1e-3)


@pytest.mark.slow  # dp-accounting's PLD of many steps: seconds of CPU
def test_fixed_size_batches_where_the_poisson_figure_understates() -> None:
    # One step, batch b = 1 of n = 4 (γ = 1/4), σ = 1, replace-one. Worst case: the other
    # gradients are 0 and the replaced one goes from +1 to −1, so the outputs are the
    # mixtures (1−γ)N(0,1) + γN(±1, 1). Their exact ε (quadrature) is a lower bound on the
    # true ε of the scheme; infodp's certified ε must be above it, the Poisson figure is below.
    sigma, gamma, delta = 1.0, 0.25, 1e-5
    p = _mixture([1 - gamma, gamma], [0.0, 1.0], sigma)
    q = _mixture([1 - gamma, gamma], [0.0, -1.0], sigma)
    exact_lower = _epsilon(p, q, delta)
    fixed = step_profile(
        sigma, scheme="fixed_size", relation="replace_one", batch_size=1, dataset_size=4
    ).epsilon(delta)
    poisson = subsampled_gaussian_profile(sigma, gamma).epsilon(delta)
    assert poisson < exact_lower <= fixed
    assert poisson < 0.95 * exact_lower  # 10% short: not a matter of rounding


def test_fixed_size_matches_balle_barthe_gaboardi_formula() -> None:
    # Balle, Barthe & Gaboardi 2018, Theorem 10: δ′(ε′) = γ·δ(ε) with e^ε′ = 1 + γ(e^ε − 1),
    # δ the curve of the base pair N(2, σ²) vs N(0, σ²) (replace-one moves the sum by 2C).
    sigma, gamma = 2.0, 0.1
    profile = step_profile(
        sigma, scheme="fixed_size", relation="replace_one", batch_size=10, dataset_size=100
    )
    for eps_prime in (0.2, 0.5, 1.0):
        eps = math.log1p(math.expm1(eps_prime) / gamma)
        mu = 2.0 / sigma
        base = stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(
            -mu / 2 - eps / mu
        )
        formula = gamma * base
        assert formula <= profile.delta(eps_prime) <= formula * (1 + 2e-3) + 1e-12


def test_fixed_size_add_remove_uses_the_substitution_bound() -> None:
    a = step_profile(1.0, scheme="fixed_size", relation="add_remove", batch_size=5, dataset_size=50)
    b = step_profile(
        1.0, scheme="fixed_size", relation="replace_one", batch_size=5, dataset_size=50
    )
    assert a == b == subsampled_gaussian_profile(0.5, 0.1)


@pytest.mark.slow  # seconds of CPU: out of the quick tier
def test_with_replacement_is_above_the_exact_worst_pair() -> None:
    # b = 2 draws with replacement from n = 3: the replaced example appears K ~ Bin(2, 1/3)
    # times; with the others 0 the outputs are Σ_k P(K=k) N(±k, σ²) (exact, by quadrature).
    sigma, delta = 2.0, 1e-5
    w = [stats.binom.pmf(k, 2, 1 / 3) for k in range(3)]
    p = _mixture(w, [0.0, 1.0, 2.0], sigma)
    q = _mixture(w, [0.0, -1.0, -2.0], sigma)
    exact = _epsilon(p, q, delta)
    ours = step_profile(
        sigma, scheme="with_replacement", relation="replace_one", batch_size=2, dataset_size=3
    ).epsilon(delta)
    assert exact <= ours
    # It is the no-amplification bound: the Gaussian with sensitivity 2b, in closed form.
    assert ours == pytest.approx(_gaussian_epsilon(4.0 / sigma, delta), rel=1e-3)


def test_shuffled_batches_get_the_no_amplification_bound() -> None:
    run = training_run(
        3.0, scheme="shuffled", relation="replace_one", epochs=5, batch_size=10, dataset_size=100
    )
    assert not run.amplified and "none known" in run.source
    # One step per example per epoch, sensitivity 2: N(2√E/σ) in closed form (E = 5).
    assert run.epsilon(1e-5) == pytest.approx(
        _gaussian_epsilon(2 * math.sqrt(5) / 3.0, 1e-5), rel=1e-3
    )
    poisson = training_run(
        3.0, scheme="poisson", relation="add_remove", epochs=5, batch_size=10, dataset_size=100
    )
    assert poisson.epsilon(1e-5) < run.epsilon(1e-5)
    with pytest.raises(ParameterError, match="no bound is known"):
        training_run(
            3.0, scheme="shuffled", relation="add_remove", epochs=1, batch_size=10, dataset_size=100
        )


def test_every_result_names_its_relation() -> None:
    out = training_run(
        1.0, scheme="fixed_size", relation="replace_one", steps=10, batch_size=10, dataset_size=100
    ).to_dict(1e-5)
    assert out["neighbouring_relation"] == "replace_one" and out["scheme"] == "fixed_size"
    assert np.isfinite(out["epsilon"])
    with pytest.raises(ParameterError, match="scheme"):
        step_profile(1.0, scheme="balanced", relation="add_remove", batch_size=1, dataset_size=2)
