"""Local randomizers: channel ε = claimed ε, capacities, published variances, unbiasedness
and variance against simulation, exact samplers against the channel."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from infodp.channel import Channel
from infodp.local import (
    HadamardResponse,
    KRandomizedResponse,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    Rappor,
    binary_randomized_response,
    project_to_simplex,
    randomizer,
)
from infodp.local.base import CAPACITY_TOL
from infodp.mechanisms.sampling import InsecureSeededSource

SMALL = [
    KRandomizedResponse(1.3, 4),
    OptimizedUnaryEncoding(0.8, 4),
    OptimizedLocalHashing(math.log(3), 3),
    HadamardResponse(1.1, 5),
    Rappor(0.9, 4),
    Rappor(1.5, 3, bits=6, hashes=2),
]


@pytest.mark.parametrize("mech", SMALL, ids=lambda m: type(m).__name__)
def test_channel_epsilon_is_claimed(mech) -> None:  # type: ignore[no-untyped-def]
    assert abs(mech.channel().epsilon() - mech.epsilon) < 1e-9
    assert mech.profile().pure_epsilon() == pytest.approx(mech.epsilon, abs=1e-12)


@pytest.mark.parametrize("mech", SMALL, ids=lambda m: type(m).__name__)
def test_capacities_match_channel(mech) -> None:  # type: ignore[no-untyped-def]
    caps = mech.capacities()
    ch = mech.channel()
    assert caps["1"] == pytest.approx(ch.shannon_capacity().upper, abs=1e-9)
    assert caps["inf"] == pytest.approx(mech.epsilon, abs=1e-9)  # C_∞ = pure ε
    assert caps["1"] <= caps["2"] <= caps["inf"] + 1e-12
    # α = 2: the upper end of a bracket at most CAPACITY_TOL wide, so never below the Rényi
    # information of any input; at the uniform one, D_2(P_XY ‖ P_X P_Y) =
    # log Σ_x Σ_y P(x) W(y|x)² / P_Y(y) (Rényi 1961, order 2), computed here from the matrix.
    W = np.asarray(ch.matrix, dtype=np.float64)
    px = np.full(W.shape[0], 1.0 / W.shape[0])
    py = px @ W
    seen = py > 0
    uniform = math.log(float(np.sum(px[:, None] * W[:, seen] ** 2 / py[seen])))
    assert caps["2"] >= uniform - 1e-12
    assert caps["2"] <= ch.renyi_capacity(2.0, tol=CAPACITY_TOL).lower + CAPACITY_TOL + 1e-12


def test_krr_capacity_closed_form() -> None:
    # a symmetric channel has capacity log k − H(row) (Cover & Thomas 2006, Thm 7.2.1)
    m = KRandomizedResponse(1.0, 5)
    row = np.array([m.p] + [m.q] * 4)
    closed = math.log(5) + float(np.sum(row * np.log(row)))
    assert m.capacities()["1"] == pytest.approx(closed, abs=1e-9)


def test_coin_flip_is_ln3() -> None:
    # Dwork & Roth 2014 §3.2: answer truthfully on heads, else a second coin: P(truth) = 3/4, ε =
    # ln 3
    rr = binary_randomized_response()
    assert rr.p == pytest.approx(0.75) and rr.channel().epsilon() == pytest.approx(math.log(3))


@pytest.mark.parametrize("eps", [0.5, math.log(3), 2.0])
def test_variances_match_published_formulas(eps: float) -> None:
    # Wang et al. (2017): Var* at f_v = 0 — DE (Eq. (5)), SUE/basic RAPPOR and OUE (§4.3),
    # OLH with g = e^ε + 1 (Eq. (12)); Hadamard response (Acharya, Sun & Zhang 2019, §4).
    n, k, e = 1000, 8, math.exp(eps)
    zero = np.zeros(k)
    assert KRandomizedResponse(eps, k).variance(zero, n)[0] == pytest.approx(
        (e + k - 2) / (n * (e - 1) ** 2)
    )
    assert OptimizedUnaryEncoding(eps, k).variance(zero, n)[0] == pytest.approx(
        4 * e / (n * (e - 1) ** 2)
    )
    half = math.exp(eps / 2)
    assert Rappor(eps, k).variance(zero, n)[0] == pytest.approx(half / (n * (half - 1) ** 2))
    assert HadamardResponse(eps, k).variance(zero, n)[0] == pytest.approx(
        (e + 1) ** 2 / (n * (e - 1) ** 2)
    )
    if eps == math.log(3):  # g = e^ε + 1 = 4 is an integer
        assert OptimizedLocalHashing(eps, k).variance(zero, n)[0] == pytest.approx(
            4 * e / (n * (e - 1) ** 2)
        )


def _repeat(mech, dist, users: int, reps: int, seed: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    return np.array([mech.simulate(users, dist, rng=rng).estimate for _ in range(reps)])


@pytest.mark.parametrize("name", ["krr", "oue", "olh", "hadamard", "rappor"])
def test_unbiased_and_variance_matches_simulation(name: str) -> None:
    mech = randomizer(name, 1.0, 4)
    dist = np.array([0.1, 0.2, 0.3, 0.4])
    users, reps = 4000, 1500
    est = _repeat(mech, dist, users, reps, seed=11)
    # the population is multinomial, so the spread around the true f adds Var(n_v/n)
    stated = mech.variance(dist, users) + dist * (1 - dist) / users
    z = (est.mean(axis=0) - dist) / np.sqrt(stated / reps)
    assert np.all(np.abs(z) < 4.5)
    ratio = est.var(axis=0, ddof=1) / stated
    lo, hi = stats.chi2.ppf([1e-4, 1 - 1e-4], reps - 1) / (reps - 1)
    assert np.all((lo < ratio) & (ratio < hi))


def test_bloom_rappor_unbiased() -> None:
    mech = Rappor(2.0, 5, bits=16, hashes=2)
    dist = np.array([0.05, 0.15, 0.2, 0.25, 0.35])
    est = _repeat(mech, dist, 5000, 800, seed=2)
    stated = mech.variance(dist, 5000) + dist * (1 - dist) / 5000
    assert np.all(np.abs(est.mean(axis=0) - dist) < 4.5 * np.sqrt(stated / 800))


@pytest.mark.parametrize("mech", SMALL[:5], ids=lambda m: type(m).__name__)
def test_exact_sampler_matches_channel(mech) -> None:  # type: ignore[no-untyped-def]
    src = InsecureSeededSource(5, i_understand_this_is_not_private=True)
    ch = mech.channel()
    x, n = 1, 3000
    reports = [mech.release(x, source=src) for _ in range(n)]
    # compare support frequencies with p (own item) and q (others): Wang et al.'s frame
    support = np.sum([mech.supports(r) for r in reports], axis=0) / n
    expected = np.full(mech.domain, mech.q)
    expected[x] = mech.p
    se = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(support - expected) < 4.5 * se)
    if isinstance(mech, (KRandomizedResponse, HadamardResponse)):
        counts = Counter(reports)
        observed = np.array([counts.get(y, 0) for y in ch.outputs])
        p_value = stats.chisquare(observed, ch.matrix[x] * n).pvalue
        assert p_value > 1e-4


def test_estimate_from_reports_equals_support_counts() -> None:
    mech = OptimizedUnaryEncoding(1.0, 3)
    src = InsecureSeededSource(1, i_understand_this_is_not_private=True)
    reports = [mech.release(v % 3, source=src) for v in range(300)]
    direct = mech.estimate(reports)
    counts = np.sum([np.array(r) for r in reports], axis=0)
    assert np.allclose(direct.estimate, (counts / 300 - mech.q) / (mech.p - mech.q))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-2, 2, allow_nan=False), min_size=1, max_size=12))
def test_projection_is_the_closest_probability_vector(values: list[float]) -> None:
    v = np.array(values)
    proj = project_to_simplex(v)
    assert abs(proj.sum() - 1) < 1e-12 and proj.min() >= 0
    # optimality (Duchi et al. 2008): no random probability vector is closer
    rng = np.random.default_rng(0)
    others = rng.dirichlet(np.ones(v.size), size=50)
    assert np.linalg.norm(proj - v) <= np.linalg.norm(others - v, axis=1).min() + 1e-12


def test_capacity_against_channel_constructor() -> None:
    # k-ary RR's channel is the library's Channel.randomized_response
    assert np.allclose(
        KRandomizedResponse(0.7, 3).channel().matrix, Channel.randomized_response(3, 0.7).matrix
    )
