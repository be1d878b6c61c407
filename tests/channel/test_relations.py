"""The four relations of infodp.channel.relations, each against an independent computation.

Oracles: closed forms (the randomized-response mutual information, erasure-channel
capacities), brute-force maxima over the channel matrices written out here, and the
Blahut–Arimoto capacity solver (a different algorithm from the closed form it is checked
against).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infodp.channel import Channel
from infodp.channel.relations import (
    dp_from_information_privacy,
    identifiability_level,
    identifiability_range,
    information_cost_bound,
    information_privacy_level,
    max_entropy_drop,
    mi_dp_group_example,
    prior_spread,
    randomized_response_protocol,
)
from infodp.errors import ParameterError
from infodp.information import mutual_information

LN2 = math.log(2.0)


def _hamming1(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return sum(x != y for x, y in zip(a, b, strict=True)) == 1


def _dp_level(ch: Channel, pairs: list[tuple[int, int]]) -> float:
    """Brute force: the largest log W(y|x)/W(y|x') over the given input pairs."""
    W = ch.matrix
    return max(
        math.log(W[i, y] / W[j, y]) for i, j in pairs for y in range(W.shape[1]) if W[i, y] > 0
    )


# -- McGregor et al. 2010: the information cost of two-party DP protocols ---------------------


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("n", [1, 2, 3])
def test_randomized_response_protocol_cost_is_below_both_bounds(epsilon: float, n: int) -> None:
    ch = randomized_response_protocol(epsilon, n)
    pairs = [
        (i, j)
        for i, j in itertools.permutations(range(ch.n_inputs), 2)
        if _hamming1(ch.inputs[i], ch.inputs[j])  # type: ignore[arg-type]
    ]
    assert _dp_level(ch, pairs) == pytest.approx(epsilon, rel=1e-9)  # an ε-DP protocol
    uniform = np.full(ch.n_inputs, 1.0 / ch.n_inputs)
    cost = mutual_information(uniform, ch.matrix)
    # independent closed form: 2n independent uses of a BSC(1/(1+e^ε)) on uniform bits
    p = 1.0 / (1.0 + math.exp(epsilon))
    closed = 2 * n * (LN2 + p * math.log(p) + (1 - p) * math.log(1 - p))
    assert cost == pytest.approx(closed, rel=1e-9, abs=1e-12)
    tight = information_cost_bound(epsilon, n, uniform_binary=True)
    assert cost <= tight * (1 + 1e-12)
    assert tight <= 1.5 * epsilon**2 * n * LN2  # the paper's 1.5ε²n bits
    # any prior: at most 2εn nats ≤ 3εn bits
    rng = np.random.default_rng(n)
    for _ in range(20):
        prior = rng.dirichlet(np.full(ch.n_inputs, 0.3))
        prior = np.maximum(prior, 1e-300)
        prior /= prior.sum()
        assert mutual_information(prior, ch.matrix) <= information_cost_bound(epsilon, n)
    assert information_cost_bound(epsilon, n) <= 3 * epsilon * n * LN2


def test_information_cost_bound_refuses_bad_input() -> None:
    with pytest.raises(ParameterError):
        information_cost_bound(-1.0, 2)
    with pytest.raises(ParameterError):
        information_cost_bound(1.0, 0)


# -- Calmon & Fawaz 2012: information privacy ↔ DP ---------------------------------------------


def _random_channel(rng: np.random.Generator, k: int, m: int) -> Channel:
    return Channel(rng.dirichlet(np.full(m, rng.uniform(0.5, 4.0)), size=k))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 5), st.integers(2, 5))
def test_information_privacy_bounds_dp_and_leakage(seed: int, k: int, m: int) -> None:
    rng = np.random.default_rng(seed)
    ch = _random_channel(rng, k, m)
    prior = rng.dirichlet(np.full(k, 2.0)) * 0.98 + 0.02 / k
    eps = information_privacy_level(ch, prior)
    # brute force from the definition: posterior over prior, both directions
    joint = prior[:, None] * ch.matrix
    post = joint / joint.sum(axis=0)
    assert eps == pytest.approx(float(np.abs(np.log(post / prior[:, None])).max()), rel=1e-12)
    all_pairs = list(itertools.permutations(range(k), 2))
    assert _dp_level(ch, all_pairs) <= dp_from_information_privacy(eps) * (1 + 1e-12)
    assert ch.epsilon() <= dp_from_information_privacy(eps) * (1 + 1e-9)  # the Channel's own ε
    h = -float(np.sum(prior * np.log(prior)))
    drops = [h + float(np.sum(post[:, y] * np.log(post[:, y]))) for y in range(m)]
    assert max_entropy_drop(ch, prior) == pytest.approx(max(drops), rel=1e-9, abs=1e-12)
    assert max(drops) <= eps * (1 + 1e-12)  # ε/ln 2 bits


def test_randomized_response_information_privacy_closed_form() -> None:
    eps = math.log(3.0)
    rr = Channel.randomized_response(2, eps)
    # uniform prior: posteriors 3/4 and 1/4 over 1/2: level ln 2, DP ln 3 ≤ 2 ln 2
    assert information_privacy_level(rr, [0.5, 0.5]) == pytest.approx(LN2)
    assert eps <= dp_from_information_privacy(LN2)
    assert max_entropy_drop(rr, [0.5, 0.5]) == pytest.approx(
        LN2 + 0.75 * math.log(0.75) + 0.25 * math.log(0.25)
    )


# -- Wang, Ying & Zhang 2016: identifiability ↔ DP --------------------------------------------


def _identifiability_cases() -> list[tuple[Channel, object]]:
    from infodp.mechanisms import DiscreteLaplaceMechanism

    laplace = DiscreteLaplaceMechanism(1.5, 2).channel([0, 1, 2], tail=1e-9).channel
    return [
        (Channel.randomized_response(2, 1.0), lambda a, b: a != b),
        (Channel.randomized_response(4, 0.7), lambda a, b: a != b),
        (randomized_response_protocol(0.8, 1), _hamming1),
        (laplace, lambda a, b: abs(a - b) == 1),
    ]


@pytest.mark.parametrize("case", range(4))
def test_identifiability_lies_within_the_prior_spread_of_dp(case: int) -> None:
    ch, neighbours = _identifiability_cases()[case]
    pairs = [
        (i, j)
        for i, j in itertools.permutations(range(ch.n_inputs), 2)
        if neighbours(ch.inputs[i], ch.inputs[j])  # type: ignore[operator]
    ]
    eps_d = _dp_level(ch, pairs)
    rng = np.random.default_rng(case)
    uniform = np.full(ch.n_inputs, 1.0 / ch.n_inputs)
    # flat prior: ε_X = 0 and identifiability equals the DP level exactly
    assert prior_spread(ch, uniform, neighbours) == pytest.approx(0.0, abs=1e-12)  # type: ignore[arg-type]
    assert identifiability_level(ch, uniform, neighbours) == pytest.approx(eps_d, rel=1e-9)  # type: ignore[arg-type]
    for _ in range(25):
        prior = rng.dirichlet(np.full(ch.n_inputs, 3.0))
        eps_x = prior_spread(ch, prior, neighbours)  # type: ignore[arg-type]
        logp = np.log(prior)
        assert eps_x == pytest.approx(max(logp[i] - logp[j] for i, j in pairs))
        eps_i = identifiability_level(ch, prior, neighbours)  # type: ignore[arg-type]
        joint = prior[:, None] * ch.matrix
        post = joint / joint.sum(axis=0)
        brute = max(
            math.log(post[i, y] / post[j, y])
            for i, j in pairs
            for y in range(ch.n_outputs)
            if post[i, y] > 0
        )
        assert eps_i == pytest.approx(brute, rel=1e-9)
        low, high = identifiability_range(eps_d, eps_x)
        assert low - 1e-9 <= eps_i <= high + 1e-9
        assert high - low <= 2 * eps_x + 1e-12  # ε* ≤ ε ≤ ε* + 2ε_X


# -- Cuff & Yu 2016, Example 5.1: MI-DP has no group property --------------------------------


@pytest.mark.parametrize("k", [2, 5, 16, 40])
def test_mi_dp_group_example(k: int) -> None:
    eps = 0.3
    ch = mi_dp_group_example(eps, k)
    W = ch.matrix
    # per individual: given x2, the channel from x1 (Blahut–Arimoto) has capacity ε nats,
    # the closed form of a binary erasure channel with erasure 1 − ε/ln 2
    for x2 in (0, k - 1):
        rows = [i for i, (_, b) in enumerate(ch.inputs) if b == x2]  # type: ignore[misc]
        sub = Channel(W[rows])
        cap = sub.shannon_capacity()  # a certified bracket [lower, upper]
        assert cap.lower - 1e-9 <= eps <= cap.upper + 1e-9 and cap.upper - cap.lower < 1e-6
    # the pair: an erasure channel with k + 1 distinguishable inputs
    cap = ch.shannon_capacity()
    group = eps / LN2 * math.log(k + 1)
    assert cap.lower - 1e-9 <= group <= cap.upper + 1e-9 and cap.upper - cap.lower < 1e-6
    if k >= 16:
        assert group > 3 * eps  # beyond what any "group of two at 2ε" property would allow


def test_mi_dp_group_example_refuses_epsilon_above_ln2() -> None:
    with pytest.raises(ParameterError):
        mi_dp_group_example(1.0, 3)
