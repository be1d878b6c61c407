"""Tests of infodp.channel: validation, constructors, combinations and privacy parameters.

Capacities are in tests/test_channel_capacity.py. Every expected number comes from a closed
form in the cited source or from an independent implementation (infodp.information, which does
not share code with channel.py), never from channel.py itself.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import infodp.channel as channel_module
from infodp.channel import CapacityResult, Channel
from infodp.errors import InternalError, ParameterError
from infodp.information import hockey_stick_divergence, max_divergence, renyi_divergence
from infodp.testing import channels, renyi_orders


def test_all_lists_public_names() -> None:
    public = {
        name
        for name, value in vars(channel_module).items()
        if not name.startswith("_")
        and str(getattr(value, "__module__", "")).startswith("infodp.channel")
        and callable(value)
    }
    assert set(channel_module.__all__) == public | {"DEFINITIONS"}
    assert channel_module.DEFINITIONS == ("shannon", "sibson", "renyi")


# ---- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("matrix", "fragment"),
    [
        ([[0.5, 0.5], [0.7, 0.2]], "row 1 must sum to 1"),
        ([[0.5, 0.5], [1.2, -0.2]], "row 1 must be non-negative"),
        ([[float("nan"), 1.0], [0.5, 0.5]], "row 0 must contain only finite"),
        ([[0.5, 0.5], [float("inf"), 0.0]], "row 1 must contain only finite"),
        ([0.5, 0.5], "non-empty 2-d array"),
        ([[]], "non-empty 2-d array"),
        ("abc", "matrix must be"),
    ],
)
def test_invalid_matrices_name_the_row(matrix: object, fragment: str) -> None:
    with pytest.raises(ParameterError, match=fragment):
        Channel(matrix)


def test_row_sum_tolerance_is_1e9() -> None:
    Channel([[0.5, 0.5 + 5e-10], [0.5, 0.5]])  # inside the tolerance
    with pytest.raises(ParameterError, match="row 0"):
        Channel([[0.5, 0.5 + 5e-9], [0.5, 0.5]])


@pytest.mark.parametrize(
    ("inputs", "outputs"),
    [(["a"], None), (["a", "a"], None), (None, [0, 1, 2]), ("ab", None), ([[1], [2]], None)],
)
def test_invalid_labels(inputs: object, outputs: object) -> None:
    with pytest.raises(ParameterError):
        Channel([[1.0, 0.0], [0.0, 1.0]], inputs=inputs, outputs=outputs)  # type: ignore[arg-type]


def test_channel_is_immutable_and_copies_its_input() -> None:
    raw = np.array([[0.9, 0.1], [0.2, 0.8]])
    ch = Channel(raw)
    raw[0, 0] = 0.0
    assert ch.matrix[0, 0] == 0.9
    with pytest.raises(ValueError, match="read-only"):
        ch.matrix[0, 0] = 0.5
    with pytest.raises(AttributeError):
        ch._matrix = raw  # type: ignore[misc]
    with pytest.raises(AttributeError):
        ch.foo = 1  # type: ignore[attr-defined]


def test_equality_hash_and_labels() -> None:
    a = Channel([[0.9, 0.1], [0.2, 0.8]], inputs=["no", "yes"])
    b = Channel(np.array([[0.9, 0.1], [0.2, 0.8]]), inputs=("no", "yes"))
    c = Channel([[0.9, 0.1], [0.2, 0.8]])
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert c.inputs == (0, 1) and c.outputs == (0, 1)
    assert (a.n_inputs, a.n_outputs) == (2, 2)
    assert "n_inputs=2" in repr(a)


# ---- constructors ----------------------------------------------------------------------------


def test_constructors_match_their_definitions() -> None:
    # Cover & Thomas (2006) §7.1: BSC, BEC; Golomb (1980): Z channel; Warner (1965): RR.
    np.testing.assert_array_equal(Channel.binary_symmetric(0.2).matrix, [[0.8, 0.2], [0.2, 0.8]])
    np.testing.assert_array_equal(
        Channel.binary_erasure(0.3).matrix, [[0.7, 0.3, 0.0], [0.0, 0.3, 0.7]]
    )
    np.testing.assert_array_equal(Channel.z_channel(0.3).matrix, [[1.0, 0.0], [0.3, 0.7]])
    rr = Channel.randomized_response(4, 2.0)
    e = math.exp(2.0)
    expected = np.full((4, 4), 1 / (e + 3))
    np.fill_diagonal(expected, e / (e + 3))
    np.testing.assert_allclose(rr.matrix, expected, rtol=1e-15)
    np.testing.assert_array_equal(Channel.randomized_response(3, math.inf).matrix, np.eye(3))
    np.testing.assert_allclose(Channel.randomized_response(3, 0.0).matrix, np.full((3, 3), 1 / 3))


def test_randomized_response_huge_epsilon_is_finite() -> None:
    rr = Channel.randomized_response(5, 800.0)  # e^800 overflows: must still be stochastic
    assert np.isfinite(rr.matrix).all()
    assert rr.matrix[0, 0] == 1.0


@pytest.mark.parametrize(
    ("factory", "args"),
    [
        (Channel.binary_symmetric, (1.5,)),
        (Channel.binary_symmetric, (float("nan"),)),
        (Channel.binary_erasure, (-0.1,)),
        (Channel.z_channel, (2,)),
        (Channel.randomized_response, (1, 1.0)),
        (Channel.randomized_response, (2.5, 1.0)),
        (Channel.randomized_response, (3, -1.0)),
        (Channel.randomized_response, (3, float("nan"))),
    ],
)
def test_constructor_parameters_are_validated(factory: object, args: tuple[object, ...]) -> None:
    with pytest.raises(ParameterError):
        factory(*args)  # type: ignore[operator]


# ---- combinations ----------------------------------------------------------------------------


def test_cascade_is_matrix_product_with_labels() -> None:
    w = Channel([[0.9, 0.1], [0.3, 0.7]], inputs=["a", "b"], outputs=["u", "v"])
    v = Channel([[0.5, 0.25, 0.25], [0.0, 0.0, 1.0]], inputs=["u", "v"], outputs=[1, 2, 3])
    cascade = w.then(v)
    np.testing.assert_allclose(cascade.matrix, w.matrix @ v.matrix, rtol=1e-15)
    assert cascade.inputs == ("a", "b") and cascade.outputs == (1, 2, 3)
    with pytest.raises(ParameterError, match="inputs"):
        w.then(Channel(np.eye(3)))
    with pytest.raises(ParameterError, match=r"other\.inputs"):
        w.then(Channel(np.eye(2)))  # labels 0, 1 are not this channel's outputs u, v
    with pytest.raises(ParameterError):
        w.then(np.eye(2))  # type: ignore[arg-type]


def test_product_is_conditionally_independent_pair() -> None:
    w = Channel([[0.9, 0.1], [0.3, 0.7]])
    v = Channel([[0.5, 0.25, 0.25], [0.0, 0.0, 1.0]])
    both = w & v
    assert both == w.product(v)
    for x, (i, j) in itertools.product(range(2), itertools.product(range(2), range(3))):
        assert both.matrix[x, 3 * i + j] == pytest.approx(w.matrix[x, i] * v.matrix[x, j])
    assert both.outputs[4] == (1, 1)
    with pytest.raises(ParameterError):
        w.product(Channel(np.eye(3)))
    with pytest.raises(TypeError):
        _ = w & 3  # type: ignore[operator]


# ---- pure epsilon, delta, divergences, diameter -------------------------------------------------


@pytest.mark.parametrize(("k", "eps"), [(2, math.log(3)), (3, 0.5), (10, 2.0), (2, 1e-6)])
def test_randomized_response_epsilon_and_delta(k: int, eps: float) -> None:
    rr = Channel.randomized_response(k, eps)
    assert rr.epsilon() == pytest.approx(eps, rel=1e-12, abs=1e-13)
    assert rr.epsilon() >= eps  # rounded up, never down
    # Hockey-stick of RR (Kairouz et al. 2016): δ(ε') = (e^ε − e^ε')/(e^ε + k − 1) for ε' ≤ ε.
    for eps2 in (0.0, eps / 2):
        expected = (math.exp(eps) - math.exp(eps2)) / (math.exp(eps) + k - 1)
        assert rr.delta(eps2) == pytest.approx(expected, rel=1e-9)
    assert rr.delta(eps) == pytest.approx(0.0, abs=1e-12)
    assert rr.delta(math.inf) == 0.0


def test_epsilon_infinite_when_supports_differ() -> None:
    assert Channel.binary_erasure(0.3).epsilon() == math.inf
    assert Channel.z_channel(0.3).epsilon() == math.inf
    # an output that no input produces is ignored
    assert Channel([[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]]).epsilon() == pytest.approx(math.log(2))


def test_delta_rejects_bad_epsilon() -> None:
    bsc = Channel.binary_symmetric(0.1)
    for bad in (-0.5, float("nan"), "x"):
        with pytest.raises(ParameterError, match="eps"):
            bsc.delta(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("alpha", [0.5, 2.0, 7.0, math.inf])
@pytest.mark.parametrize("p", [0.01, 0.1, 0.3])
def test_bsc_diameter_matches_article_formula(p: float, alpha: float) -> None:
    # seeds/000 "Sufficient vs necessary": 1/(α−1) log(p^α/(1−p)^{α−1} + (1−p)^α/p^{α−1}).
    bsc = Channel.binary_symmetric(p)
    if math.isinf(alpha):
        expected = math.log((1 - p) / p)
    else:
        expected = math.log(p**alpha / (1 - p) ** (alpha - 1) + (1 - p) ** alpha / p ** (alpha - 1))
        expected /= alpha - 1
    assert bsc.diameter(alpha) == pytest.approx(expected, rel=1e-12)
    assert bsc.diameter(alpha) >= expected * (1 - 1e-15)


def test_bsc_kl_diameter() -> None:
    # α = 1: D(Bern(p) ‖ Bern(1−p)) = (1 − 2p) log((1 − p)/p)  (Cover & Thomas 2006, Eq. 2.26).
    p = 0.2
    assert Channel.binary_symmetric(p).diameter(1.0) == pytest.approx((1 - 2 * p) * math.log(4))


ORDERS = [0.0, 0.5, 1.0, 2.0, 5.0, math.inf]


@given(channels(max_size=4), st.sampled_from(ORDERS))
def test_divergence_matrix_matches_information_module(w: np.ndarray, alpha: float) -> None:
    ch = Channel(w)
    d = ch.divergences(alpha)
    for x, xp in itertools.product(range(ch.n_inputs), repeat=2):
        expected = renyi_divergence(w[x], w[xp], alpha)
        if math.isinf(expected):
            assert d[x, xp] == math.inf
        else:
            assert d[x, xp] == pytest.approx(expected, rel=1e-9, abs=1e-12)


@given(channels(max_size=4), renyi_orders())
def test_diameter_at_any_order_matches_information_module(w: np.ndarray, alpha: float) -> None:
    # Orders within 1e-12 of 1 and 1e6 included (infodp.testing.SPECIAL_ORDERS): the diameter
    # is an upper bound (RDP ε), rounded up but close to the independent value.
    ch = Channel(w)
    reference = max(
        renyi_divergence(w[x], w[xp], alpha)
        for x, xp in itertools.product(range(ch.n_inputs), repeat=2)
    )
    value = ch.diameter(alpha)
    if math.isinf(reference):
        assert value == math.inf
    else:
        assert reference * (1 - 1e-9) - 1e-12 <= value <= reference * (1 + 1e-6) + 1e-6


@given(channels(max_size=4, extreme=False), st.floats(0.0, 3.0))
def test_epsilon_and_delta_match_information_module(w: np.ndarray, eps: float) -> None:
    ch = Channel(w)
    pairs = list(itertools.product(range(ch.n_inputs), repeat=2))
    eps_ref = max(max_divergence(w[x], w[xp]) for x, xp in pairs)
    if math.isinf(eps_ref):
        assert ch.epsilon() == math.inf
    else:
        assert ch.epsilon() == pytest.approx(eps_ref, rel=1e-9, abs=1e-12)
        assert ch.epsilon() >= eps_ref - 1e-15
    delta_ref = max(hockey_stick_divergence(w[x], w[xp], eps) for x, xp in pairs)
    assert ch.delta(eps) == pytest.approx(delta_ref, rel=1e-9, abs=1e-12)


@given(channels(max_size=4, extreme=False), st.sampled_from([0.5, 1.0, 3.0, math.inf]))
def test_post_processing_cannot_increase_epsilon_or_rdp(w: np.ndarray, alpha: float) -> None:
    # Data processing for Rényi divergences (van Erven & Harremoës 2014, Thm 9; seeds/000).
    rng = np.random.default_rng(int(1e6 * w.sum()) % 2**32)
    post = rng.dirichlet(np.ones(3), size=w.shape[1])
    ch = Channel(w)
    cascade = ch.then(Channel(post, inputs=ch.outputs))
    assert cascade.diameter(alpha) <= ch.diameter(alpha) + 1e-12
    assert cascade.epsilon() <= ch.epsilon() + 1e-12


# ---- CapacityResult ----------------------------------------------------------------------------


def test_capacity_result_is_frozen_and_checks_its_bracket() -> None:
    r = Channel.binary_symmetric(0.1).shannon_capacity()
    with pytest.raises(AttributeError):
        r.lower = 0.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        r.input_distribution[0] = 1.0
    assert r.gap == r.upper - r.lower
    with pytest.raises(InternalError):
        CapacityResult(1.0, 0.5, np.ones(1), np.ones(1), 0, "shannon", 1.0, True, "test")
    with pytest.raises(InternalError):
        CapacityResult(math.nan, 0.5, np.ones(1), np.ones(1), 0, "shannon", 1.0, True, "test")
