"""Capacities of infodp.channel.Channel checked against closed forms, peers and textbook laws.

Independent references: closed forms (Shannon 1948; Cover & Thomas 2006 §7.1; Golomb 1980;
"Differential Privacy and Information Theory", 2022), cvxpy's convex formulation of Shannon
capacity, dit's
Blahut–Arimoto, and infodp.information (mutual informations at a given input, no shared code).
"""

from __future__ import annotations

import math

import cvxpy as cp
import dit
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infodp.channel import Channel
from infodp.errors import ParameterError
from infodp.information import (
    binary_entropy,
    binary_renyi_entropy,
    mutual_information,
    renyi_mutual_information,
    sibson_mutual_information,
)
from infodp.testing import channels, probability_vectors


def _h(p: float) -> float:
    """Binary entropy in nats, written out (Cover & Thomas 2006, Eq. 2.5)."""
    return -sum(t * math.log(t) for t in (p, 1 - p) if t > 0)


def _contains(result: object, value: float, slack: float = 0.0) -> bool:
    lower, upper = result.lower, result.upper  # type: ignore[attr-defined]
    return bool(lower - slack <= value <= upper + slack)


# ---- Shannon capacity: closed forms ----


@pytest.mark.parametrize("p", [0.0, 1e-9, 0.01, 0.11, 0.3, 0.5, 0.77, 1.0])
def test_bsc_capacity(p: float) -> None:
    # C = log 2 − H(p)  (Shannon 1948; Cover & Thomas 2006, Eq. 7.12 in bits).
    r = Channel.binary_symmetric(p).shannon_capacity()
    assert _contains(r, math.log(2) - _h(p))
    assert r.converged and r.gap <= 1e-9
    assert r.upper - (math.log(2) - binary_entropy(p)) <= 1e-9


@pytest.mark.parametrize("e", [0.0, 0.05, 0.5, 0.99, 1.0])
def test_bec_capacity(e: float) -> None:
    # C = (1 − e) log 2  (Elias 1955; Cover & Thomas 2006, §7.1.5).
    r = Channel.binary_erasure(e).shannon_capacity()
    assert _contains(r, (1 - e) * math.log(2)) and r.gap <= 1e-9


@pytest.mark.parametrize("p", [0.0, 0.01, 0.25, 0.5, 0.9, 0.999])
def test_z_channel_capacity(p: float) -> None:
    # C = log(1 + (1 − p) p^{p/(1−p)})  (Golomb 1980; Tallini, Al-Bassam & Bose 2002).
    expected = math.log(1 + (1 - p) * p ** (p / (1 - p))) if p > 0 else math.log(2)
    r = Channel.z_channel(p).shannon_capacity()
    assert _contains(r, expected) and r.gap <= 1e-9
    # the capacity-achieving input puts less than half of its mass on the noisy symbol 1
    assert r.input_distribution[1] <= 0.5 + 1e-9


@pytest.mark.parametrize(("k", "eps"), [(2, math.log(3)), (3, 1.0), (7, 0.1), (16, 4.0)])
def test_randomized_response_capacity(k: int, eps: float) -> None:
    # Symmetric channel: C = log k − H(row), uniform input (Cover & Thomas 2006, Thm 7.2.1).
    a = math.exp(eps) / (math.exp(eps) + k - 1)
    b = 1 / (math.exp(eps) + k - 1)
    expected = math.log(k) + a * math.log(a) + (k - 1) * b * math.log(b)
    r = Channel.randomized_response(k, eps).shannon_capacity()
    assert _contains(r, expected) and r.gap <= 1e-9
    np.testing.assert_allclose(r.input_distribution, np.full(k, 1 / k), atol=1e-6)


def test_identity_and_useless_channels() -> None:
    assert _contains(Channel(np.eye(5)).shannon_capacity(), math.log(5))
    useless = Channel(np.tile([0.2, 0.3, 0.5], (4, 1))).shannon_capacity()
    assert useless.lower == 0.0 and useless.upper <= 1e-12
    single = Channel([[0.25, 0.75]]).shannon_capacity()
    assert single.lower == 0.0 and single.upper <= 1e-12


def test_duplicate_rows_and_null_outputs() -> None:
    # Repeating an input or adding an output no input produces leaves capacity unchanged.
    base = Channel.z_channel(0.25).shannon_capacity()
    w = np.array([[1.0, 0.0, 0.0], [0.25, 0.75, 0.0], [0.25, 0.75, 0.0]])
    r = Channel(w).shannon_capacity()
    assert abs(r.lower - base.lower) <= 1e-9 and abs(r.upper - base.upper) <= 1e-9
    assert r.input_distribution.shape == (3,) and r.output_distribution.shape == (3,)
    assert r.output_distribution[2] == 0.0


# ---- Shannon capacity: independent peers ----


def _cvxpy_capacity(w: np.ndarray) -> tuple[float, np.ndarray]:
    """max_p H(pW) − Σ_x p_x H(W_x) with cp.entr (Boyd & Vandenberghe 2004, Ex. 7.? / §4.3)."""
    n = w.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        neg_row_entropy = np.where(w > 0, w * np.log(np.where(w > 0, w, 1.0)), 0.0).sum(axis=1)
    p = cp.Variable(n, nonneg=True)
    objective = cp.Maximize(cp.sum(cp.entr(w.T @ p)) + neg_row_entropy @ p)
    problem = cp.Problem(objective, [cp.sum(p) == 1])
    problem.solve()
    value = float(problem.value)
    p_opt = np.clip(np.asarray(p.value, dtype=float), 0.0, None)
    return value, p_opt / p_opt.sum()


@pytest.mark.parametrize(("n", "m", "seed"), [(4, 6, 0), (12, 5, 1), (20, 30, 2), (7, 60, 3)])
def test_shannon_capacity_agrees_with_cvxpy(n: int, m: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    w = rng.random((n, m)) ** 3
    w[rng.random((n, m)) < 0.2] = 0.0
    w[:, 0] += 1e-3
    w /= w.sum(axis=1, keepdims=True)
    r = Channel(w).shannon_capacity()
    value, p_cvx = _cvxpy_capacity(w)
    assert abs(value - r.lower) <= 1e-6 and r.gap <= 1e-9
    # The certificate must dominate the information of the peer's input (any input's I ≤ C).
    assert mutual_information(p_cvx, w) <= r.upper
    # And our lower bound is attained by our input, measured by an independent routine.
    assert mutual_information(r.input_distribution, w) >= r.lower - 1e-12


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shannon_capacity_agrees_with_dit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.full(6, 0.5), size=5)
    bits, _ = dit.algorithms.channelcapacity.channel_capacity(w, rtol=1e-13, atol=1e-13)
    r = Channel(w).shannon_capacity()
    assert abs(bits * math.log(2) - r.lower) <= 1e-7


def test_large_random_channel_converges_to_tolerance() -> None:
    # The benchmark setting at a test-sized scale: certified gap 1e-9 on a 128 × 128 channel.
    rng = np.random.default_rng(7)
    w = rng.random((128, 128))
    w /= w.sum(axis=1, keepdims=True)
    r = Channel(w).shannon_capacity()
    assert r.converged and r.gap <= 1e-9
    assert mutual_information(r.input_distribution, w) >= r.lower - 1e-12


@settings(max_examples=40)
@given(channels(max_size=5), st.data())
def test_shannon_bracket_contains_every_input_information(
    w: np.ndarray, data: st.DataObject
) -> None:
    r = Channel(w).shannon_capacity()
    assert 0.0 <= r.lower <= r.upper
    assert r.converged
    assert mutual_information(r.input_distribution, w) >= r.lower - 1e-12
    prior = data.draw(probability_vectors(w.shape[0]))
    assert mutual_information(prior, w) <= r.upper


def test_bad_tolerances() -> None:
    bsc = Channel.binary_symmetric(0.1)
    for tol in (0.0, -1.0, math.nan):
        with pytest.raises(ParameterError, match="tol"):
            bsc.shannon_capacity(tol=tol)
    with pytest.raises(ParameterError, match="max_iter"):
        bsc.shannon_capacity(max_iter=0)


def test_non_converged_result_is_still_a_valid_bracket() -> None:
    rng = np.random.default_rng(3)
    w = rng.random((40, 40))
    w /= w.sum(axis=1, keepdims=True)
    r = Channel(w).shannon_capacity(max_iter=3)
    exact = Channel(w).shannon_capacity()
    assert not r.converged
    assert r.lower <= exact.lower + 1e-12 and r.upper >= exact.upper - 1e-12


# ---- Sibson capacity (the radius) ----


@pytest.mark.parametrize("alpha", [0.3, 0.5, 2.0, 5.0, 40.0])
@pytest.mark.parametrize("p", [0.05, 0.25, 0.4])
def test_bsc_sibson_capacity_is_log2_minus_renyi_entropy(p: float, alpha: float) -> None:
    # seeds/000 ("Protection against B… outcomes"): radius of the BSC = log 2 − H_α(p).
    expected = math.log(2) + math.log(p**alpha + (1 - p) ** alpha) / (alpha - 1)
    assert expected == pytest.approx(math.log(2) - binary_renyi_entropy(p, alpha), rel=1e-12)
    r = Channel.binary_symmetric(p).sibson_capacity(alpha)
    assert _contains(r, expected) and r.gap <= 1e-9


@pytest.mark.parametrize("p", [0.05, 0.25, 0.4])
def test_bsc_sibson_infinity_is_log_2max(p: float) -> None:
    # seeds/000 ("Sibson's definition"): I^s_∞ = log(2 max(p, 1 − p)).
    r = Channel.binary_symmetric(p).sibson_capacity(math.inf)
    assert _contains(r, math.log(2 * max(p, 1 - p)))


@pytest.mark.parametrize("alpha", [0.5, 3.0])
def test_sibson_capacity_of_random_channels(alpha: float) -> None:
    rng = np.random.default_rng(11)
    w = rng.dirichlet(np.full(7, 0.7), size=6)
    r = Channel(w).sibson_capacity(alpha)
    assert r.converged
    # lower is attained (independent Sibson MI), and dominates random inputs' Sibson MI
    assert sibson_mutual_information(r.input_distribution, w, alpha) >= r.lower - 1e-10
    for prior in rng.dirichlet(np.ones(6), size=20):
        assert sibson_mutual_information(prior, w, alpha) <= r.upper + 1e-12


def test_sibson_at_one_is_shannon_and_rejects_zero() -> None:
    bsc = Channel.binary_symmetric(0.2)
    assert _contains(bsc.sibson_capacity(1.0), math.log(2) - _h(0.2))
    assert bsc.sibson_capacity(1.0).definition == "sibson"
    with pytest.raises(ParameterError, match="alpha"):
        bsc.sibson_capacity(0.0)
    with pytest.raises(ParameterError, match="alpha"):
        bsc.sibson_capacity(-1.0)


# ---- the article's Rényi capacity C_α ----


def _grid_max_two_inputs(w: np.ndarray, alpha: float, points: int = 4001) -> float:
    """Max of I_α over P = (1 − t, t) on a grid, with the independent renyi_mutual_information."""
    ts = np.linspace(0.0, 1.0, points)
    return max(renyi_mutual_information(np.array([1 - t, t]), w, alpha) for t in ts)


@pytest.mark.parametrize("alpha", [0.5, 2.0, 10.0])
@pytest.mark.parametrize("p", [0.1, 0.25])
def test_bsc_renyi_capacity_between_radius_and_diameter(p: float, alpha: float) -> None:
    # seeds/000: log 2 − H_α(p) ≤ C_α ≤ 1/(α−1) log(p^α/(1−p)^{α−1} + (1−p)^α/p^{α−1}).
    radius = math.log(2) - binary_renyi_entropy(p, alpha)
    diameter = math.log(p**alpha / (1 - p) ** (alpha - 1) + (1 - p) ** alpha / p ** (alpha - 1))
    diameter /= alpha - 1
    r = Channel.binary_symmetric(p).renyi_capacity(alpha)
    assert radius - 1e-12 <= r.lower <= r.upper <= diameter + 1e-12
    grid = _grid_max_two_inputs(Channel.binary_symmetric(p).matrix, alpha, 801)
    assert grid <= r.upper
    assert r.lower >= grid - 1e-9
    assert r.gap <= 1e-4  # branch and bound makes the certificate tight for two inputs


def test_bsc_renyi_capacity_exceeds_radius_at_high_alpha() -> None:
    # seeds/000 "Sufficient vs necessary": for higher α, log 2 − H_α(p) is below the capacity.
    p, alpha = 0.25, 10.0
    radius = math.log(2) - binary_renyi_entropy(p, alpha)
    r = Channel.binary_symmetric(p).renyi_capacity(alpha)
    assert r.lower > radius + 0.1
    assert renyi_mutual_information(r.input_distribution, [[0.75, 0.25], [0.25, 0.75]], 10) == (
        pytest.approx(r.lower, abs=1e-9)
    )


def test_radius_to_diameter_ratio_tends_to_two() -> None:
    # seeds/000: the ratio between diameter and radius approaches 2 for small ε and high α.
    p = 0.5 - 1e-5
    bsc = Channel.binary_symmetric(p)
    ratio = bsc.diameter(math.inf) / bsc.sibson_capacity(math.inf).upper
    assert ratio == pytest.approx(2.0, rel=1e-4)


@pytest.mark.parametrize("k_eps", [(2, 0.7), (4, 1.3)])
def test_c_infinity_is_pure_epsilon(k_eps: tuple[int, float]) -> None:
    k, eps = k_eps
    rr = Channel.randomized_response(k, eps)
    r = rr.renyi_capacity(math.inf)
    assert _contains(r, eps) and r.gap <= 1e-12
    assert r.upper >= rr.epsilon() - 1e-15


def test_renyi_capacity_parameters() -> None:
    bsc = Channel.binary_symmetric(0.2)
    assert _contains(bsc.renyi_capacity(1.0), math.log(2) - _h(0.2))
    with pytest.raises(ParameterError, match="alpha"):
        bsc.renyi_capacity(0.0)
    with pytest.raises(ParameterError, match="n_starts"):
        bsc.renyi_capacity(2.0, n_starts=-1)
    with pytest.raises(ParameterError, match="definition"):
        bsc.capacity(2.0, definition="gallager")
    with pytest.raises(ParameterError, match="alpha"):
        bsc.capacity(2.0, definition="shannon")


@pytest.mark.slow  # --durations: among the slowest tests of the suite
@settings(max_examples=15)
@given(
    channels(n_inputs=2, max_size=4, extreme=False, min_prob=0.01),
    st.sampled_from([0.5, 2.0, 4.0]),
)
def test_two_input_renyi_bracket_contains_grid_maximum(w: np.ndarray, alpha: float) -> None:
    r = Channel(w).renyi_capacity(alpha, n_starts=1)
    grid = _grid_max_two_inputs(w, alpha, 401)
    assert grid <= r.upper
    assert r.lower <= r.upper


@pytest.mark.slow  # --durations: among the slowest tests of the suite
@settings(max_examples=15)
@given(channels(max_size=3, extreme=False), st.sampled_from([0.5, 2.0, 3.0, math.inf]))
def test_radius_capacity_diameter_ordering(w: np.ndarray, alpha: float) -> None:
    # seeds/000 ("Sibson's definition"): sup I^s_α ≤ C_α ≤ max_{x,x'} D_α(W_x‖W_x').
    ch = Channel(w)
    sibson = ch.sibson_capacity(alpha)
    renyi = ch.renyi_capacity(alpha, n_starts=1)
    diameter = ch.diameter(alpha)
    assert sibson.lower <= renyi.upper
    assert renyi.lower <= diameter
    assert renyi.upper <= diameter + 1e-12
    # I_α(P) ≥ I^s_α(P) at every P, and the search starts from Sibson's optimum
    assert renyi.lower >= sibson.lower - 1e-9
    if math.isinf(alpha):
        assert renyi.upper == pytest.approx(ch.epsilon(), rel=1e-12)


@settings(max_examples=15)
@given(channels(max_size=3, extreme=False), st.data())
def test_every_prior_is_below_the_certificates(w: np.ndarray, data: st.DataObject) -> None:
    alpha = data.draw(st.sampled_from([0.5, 2.0, 6.0]))
    prior = data.draw(probability_vectors(w.shape[0], extreme=False))
    ch = Channel(w)
    assert renyi_mutual_information(prior, w, alpha) <= ch.renyi_capacity(alpha, n_starts=1).upper
    assert sibson_mutual_information(prior, w, alpha) <= ch.sibson_capacity(alpha).upper


# ---- data processing and composition ----


@pytest.mark.slow  # --durations: among the slowest tests of the suite
@settings(max_examples=20)
@given(channels(min_prob=0.0, max_size=3, extreme=False), st.data())
def test_post_processing_cannot_increase_capacity(w: np.ndarray, data: st.DataObject) -> None:
    # seeds/000 "Data processing inequality": I_α(X; g(Y)) ≤ I_α(X; Y) ≤ C_α.
    ch = Channel(w)
    post = np.vstack([data.draw(probability_vectors(3, extreme=False)) for _ in range(w.shape[1])])
    cascade = ch.then(Channel(post, inputs=ch.outputs))
    assert cascade.shannon_capacity().lower <= ch.shannon_capacity().upper
    alpha = data.draw(st.sampled_from([0.5, 2.0, 5.0]))
    assert cascade.sibson_capacity(alpha).lower <= ch.sibson_capacity(alpha).upper
    assert (
        cascade.renyi_capacity(alpha, n_starts=1).lower
        <= ch.renyi_capacity(alpha, n_starts=1).upper
    )


def _composed_order(a1: float, a2: float) -> float:
    # seeds/000 "Composability": 1/(α'−1) = 1/(α1−1) + 1/(α2−1).
    return 1.0 + 1.0 / (1.0 / (a1 - 1.0) + 1.0 / (a2 - 1.0))


@pytest.mark.slow  # --durations: among the slowest tests of the suite
@settings(max_examples=12)
@given(
    channels(n_inputs=2, n_outputs=2, extreme=False, min_prob=0.02),
    channels(n_inputs=2, n_outputs=3, extreme=False, min_prob=0.02),
    st.sampled_from([(2.0, 2.0), (3.0, 1.5), (5.0, 2.0), (1.5, 1.5)]),
)
def test_composition_theorem_on_products(
    w1: np.ndarray, w2: np.ndarray, orders: tuple[float, float]
) -> None:
    # seeds/000 "Composability": C_{α'}(W1 ⊗ W2) ≤ C_{α1}(W1) + C_{α2}(W2); certified sides:
    # the attained lower bound on the left against the certified upper bounds on the right.
    a1, a2 = orders
    c1, c2 = Channel(w1), Channel(w2)
    both = c1 & c2
    left = both.renyi_capacity(_composed_order(a1, a2), n_starts=2, refine_budget=0)
    right = c1.renyi_capacity(a1, n_starts=1).upper + c2.renyi_capacity(a2, n_starts=1).upper
    assert left.lower <= right
    # Shannon (α = 1 everywhere) and pure ε (α = ∞ everywhere) versions of the same theorem.
    assert both.shannon_capacity().lower <= (
        c1.shannon_capacity().upper + c2.shannon_capacity().upper
    )
    assert both.epsilon() <= c1.epsilon() + c2.epsilon() + 1e-12


def test_composition_of_identical_bsc_is_not_trivially_loose() -> None:
    # Two uses of one BSC carry strictly more than one use (so the left side is non-trivial).
    bsc = Channel.binary_symmetric(0.2)
    one = bsc.renyi_capacity(2.0)
    two = (bsc & bsc).renyi_capacity(_composed_order(2.0, 2.0))
    assert two.lower > one.upper
    assert two.lower <= 2 * one.upper


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [0.5, 3.0])
@pytest.mark.parametrize("budget", [1, 50, 2000])
def test_branch_and_bound_certificate_holds_without_a_good_lower_bound(
    alpha: float, budget: int
) -> None:
    # The certificate must not lean on the search: started from lower = 0 with a small budget
    # it still has to dominate the grid maximum of the independent renyi_mutual_information.
    from infodp.channel.renyi import _renyi_bnb_upper

    w = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    with np.errstate(divide="ignore"):
        logw = np.log(w)
    upper = _renyi_bnb_upper(w, logw, alpha, 0.0, budget, 1e-9)
    assert upper >= _grid_max_two_inputs(w, alpha, 2001)


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [0.3, 0.9999, 2.0, 20.0, math.inf])
def test_extreme_channel_brackets_stay_ordered(alpha: float) -> None:
    # Entries of 1e-300 and exact zeros (infinite divergences) must neither warn (pytest turns
    # warnings into errors) nor produce crossed brackets; near α = 1 brackets widen instead.
    w = np.array([[1e-300, 1.0 - 1e-300, 0.0], [0.5, 0.25, 0.25], [0.0, 1e-200, 1.0 - 1e-200]])
    ch = Channel(w)
    sibson = ch.sibson_capacity(alpha, max_iter=2000)
    renyi = ch.renyi_capacity(alpha, n_starts=1)
    assert sibson.lower <= sibson.upper and renyi.lower <= renyi.upper
    assert sibson.lower <= renyi.upper
    assert renyi.lower <= ch.diameter(alpha)
    assert ch.shannon_capacity().converged


def _cvxpy_sibson(w: np.ndarray, alpha: float) -> float:
    """Sibson capacity via the convex program over P (Sibson 1969; Verdú 2015, Eq. for I^s_α):

    I^s_α(P) = α/(α−1) log Σ_y (Σ_x P_x W_xy^α)^{1/α}; the sum is concave in P for α > 1
    (maximise) and convex for α < 1 (minimise).
    """
    wa = w**alpha
    p = cp.Variable(w.shape[0], nonneg=True)
    total = cp.sum(cp.power(wa.T @ p, 1.0 / alpha))
    sense = cp.Maximize(total) if alpha > 1 else cp.Minimize(total)
    problem = cp.Problem(sense, [cp.sum(p) == 1])
    problem.solve()
    return alpha / (alpha - 1.0) * math.log(float(problem.value))


@pytest.mark.parametrize("alpha", [0.5, 2.0, 4.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_sibson_capacity_agrees_with_cvxpy(alpha: float, seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    w = rng.dirichlet(np.full(4, 0.3), size=6)  # sparse-ish rows: optimum on the boundary
    r = Channel(w).sibson_capacity(alpha)
    assert r.converged and r.iterations < 2000
    assert abs(_cvxpy_sibson(w, alpha) - r.lower) <= 1e-6


@pytest.mark.slow  # ~1.3 CPU-s (measured)
@pytest.mark.parametrize("alpha", [1 - 1e-12, 1 + 1e-12, 1 - 1e-7, 1 + 1e-6])
def test_orders_next_to_one_keep_a_narrow_valid_bracket(alpha: float) -> None:
    # seeds/000: radius of the BSC = log 2 − H_α(p); near α = 1 it tends to log 2 − H(p). The
    # direct formula loses ~ε/|α−1|; monotonicity in α keeps the bracket narrow and valid.
    p = 0.1
    bsc = Channel.binary_symmetric(p)
    radius = math.log(2) - binary_renyi_entropy(p, alpha)
    sibson = bsc.sibson_capacity(alpha)
    assert sibson.lower - 1e-12 <= radius <= sibson.upper + 1e-12
    assert sibson.gap <= 1e-4
    renyi = bsc.renyi_capacity(alpha)
    assert renyi.lower - 1e-12 <= radius <= renyi.upper + 1e-12  # uniform input attains it
    assert renyi.gap <= 1e-4
