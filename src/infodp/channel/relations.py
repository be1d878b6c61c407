"""Four relations between differential privacy and information, measured on channels.

- **Two-party information cost** (McGregor, Mironov, Pitassi, Reingold, Talwar & Vadhan 2010,
  "The limits of two-party differential privacy", Prop. 4.1 and 4.3, as the tutorial of Ünsal
  & Önen restates it, eqs. (31)–(38)): an ε-DP protocol on inputs x, y ∈ Σⁿ reveals at most
  I(X, Y; Π) ≤ 2εn nats (≤ 3εn bits) under any input law, and with Σ = {0, 1} and uniform
  inputs at most 2n·(ln 2 − h(e^ε/(1 + e^ε))) ≤ ε²n nats (≤ 1.5ε²n bits).
  :func:`information_cost_bound`, :func:`randomized_response_protocol`.
- **Information privacy** (Calmon & Fawaz 2012, "Privacy against statistical inference",
  Theorem 4): ε-information privacy, e^−ε ≤ P(x|y)/P(x) ≤ e^ε, implies 2ε-DP and a
  maximal leakage max_y H(X) − H(X|Y=y) of at most ε nats (ε/ln 2 bits).
  :func:`information_privacy_level`, :func:`dp_from_information_privacy`,
  :func:`max_entropy_drop`.
- **Identifiability** (Wang, Ying & Zhang 2016, "On the relation between identifiability,
  differential privacy and mutual-information privacy", Lemma 1 and Theorem 3): with the
  prior's largest log-ratio ε_X between neighbours, a mechanism's identifiability level ε_i
  and DP level ε_d satisfy ε_d − ε_X ≤ ε_i ≤ ε_d + ε_X, i.e. ε* ≤ ε_i ≤ ε* + 2ε_X with
  ε* = ε_d − ε_X. :func:`identifiability_level`, :func:`prior_spread`,
  :func:`identifiability_range`.
- **No group property for MI-DP** (Cuff & Yu 2016, "Differential privacy as a mutual
  information constraint", Example 5.1): a mechanism on two entries whose per-individual
  MI-DP level is ε nats while the pair's information grows as (ε/ln 2)·ln(k + 1) with the
  domain size k — unbounded. :func:`mi_dp_group_example`.

Every quantity is in nats.

>>> round(information_cost_bound(0.1, 10), 6), round(information_cost_bound(0.1, 10,
...       uniform_binary=True), 6)
(2.0, 0.024969)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from infodp._validate import as_nonnegative, as_positive_int
from infodp.channel.channel import Channel
from infodp.errors import ParameterError
from infodp.information import binary_entropy

__all__ = [
    "dp_from_information_privacy",
    "identifiability_level",
    "identifiability_range",
    "information_cost_bound",
    "information_privacy_level",
    "max_entropy_drop",
    "mi_dp_group_example",
    "prior_spread",
    "randomized_response_protocol",
]


def information_cost_bound(epsilon: float, n: int, *, uniform_binary: bool = False) -> float:
    """Upper bound (nats) on the information cost I(X, Y; Π) of an ε-DP two-party protocol
    on inputs in Σⁿ × Σⁿ (McGregor et al. 2010, Prop. 4.1 and 4.3).

    Any input law: changing all 2n coordinates moves the transcript's probabilities by at
    most e^{±2εn}, so I ≤ 2εn nats = 2 log₂(e)·εn ≤ 3εn bits (tutorial eqs. (31)–(34)).
    ``uniform_binary``: Σ = {0, 1} with uniform inputs; each of the 2n coordinates keeps
    posterior odds within e^{±ε}, so I ≤ 2n·(ln 2 − h(e^ε/(1 + e^ε))) ≤ ε²n nats (≤ 1.5ε²n
    bits; eqs. (35)–(38), h the binary entropy in nats).

    >>> information_cost_bound(1.0, 3)
    6.0
    >>> information_cost_bound(1.0, 3, uniform_binary=True) <= 3.0
    True
    """
    eps = as_nonnegative("epsilon", epsilon)
    n = as_positive_int("n", n)
    if not uniform_binary:
        return 2.0 * eps * n
    p = 1.0 / (1.0 + math.exp(-eps))
    per = math.log(2.0) - binary_entropy(p)
    return min(2.0 * n * per, eps * eps * n)


def randomized_response_protocol(epsilon: float, n: int) -> Channel:
    """The two-party protocol where each party announces every one of its n bits through
    binary randomized response at level ε (Warner 1965): an ε-DP protocol (one coordinate
    changes one announced bit's odds by e^ε) whose transcript channel P(Π | x, y) has inputs
    (x, y) ∈ {0, 1}ⁿ × {0, 1}ⁿ and outputs the 2n announced bits.

    >>> ch = randomized_response_protocol(math.log(3), 1)
    >>> ch.n_inputs, ch.n_outputs, round(ch.epsilon(), 6)   # over all inputs: both bits differ
    (4, 4, 2.197225)
    """
    n = as_positive_int("n", n)
    if n > 5:
        raise ParameterError("n", n, "at most 5 (the channel has 4ⁿ × 4ⁿ entries)")
    bit = Channel.randomized_response(2, epsilon).matrix
    W: Any = np.ones((1, 1))
    for _ in range(2 * n):  # independent coordinates: the Kronecker product of the bits
        W = np.kron(W, bit)
    labels = list(itertools.product((0, 1), repeat=2 * n))
    return Channel(W, inputs=labels, outputs=labels)


def _posterior(channel: Channel, prior: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p = np.asarray(prior, dtype=np.float64)
    if p.shape != (channel.n_inputs,) or not np.all(p > 0) or abs(p.sum() - 1.0) > 1e-9:
        raise ParameterError(
            "prior", prior, f"a positive distribution over the {channel.n_inputs} inputs"
        )
    joint = p[:, None] * channel.matrix
    p_y = joint.sum(axis=0)
    keep = p_y > 0
    return p, joint[:, keep] / p_y[keep], channel.matrix[:, keep]


def information_privacy_level(channel: Channel, prior: Any) -> float:
    """The least ε with e^−ε ≤ P(x|y)/P(x) ≤ e^ε for every input x and output y of positive
    probability: the channel's ε-information privacy (Calmon & Fawaz 2012, Definition 3).

    >>> rr = Channel.randomized_response(2, math.log(3))
    >>> round(information_privacy_level(rr, [0.5, 0.5]), 6)   # posterior 1/4 over prior 1/2
    0.693147
    """
    p, post, _ = _posterior(channel, prior)
    with np.errstate(divide="ignore"):
        ratio = np.log(post) - np.log(p)[:, None]
    return float(np.max(np.abs(ratio)))


def dp_from_information_privacy(epsilon: float) -> float:
    """ε-information privacy implies 2ε-DP between any two inputs (Calmon & Fawaz 2012,
    Theorem 4: P(y|x₁)/P(y|x₂) = [P(x₁|y)/P(x₁)]·[P(x₂)/P(x₂|y)] ≤ e^{2ε}).

    >>> dp_from_information_privacy(0.25)
    0.5
    """
    return 2.0 * as_nonnegative("epsilon", epsilon, allow_inf=True)


def max_entropy_drop(channel: Channel, prior: Any) -> float:
    """max_y H(X) − H(X | Y = y) in nats: the most one output lowers the attacker's entropy
    (Calmon & Fawaz 2012, "maximum information leakage"); at most the information privacy
    level ε (ε/ln 2 bits, their Theorem 4).

    >>> rr = Channel.randomized_response(2, math.log(3))
    >>> round(max_entropy_drop(rr, [0.5, 0.5]), 6)   # ln 2 − h(3/4)
    0.130812
    """
    p, post, _ = _posterior(channel, prior)
    h_x = -float(np.sum(p * np.log(p)))
    with np.errstate(divide="ignore", invalid="ignore"):
        h_post = -np.sum(np.where(post > 0, post * np.log(post), 0.0), axis=0)
    return float(h_x - np.min(h_post))


def _neighbour_pairs(
    channel: Channel, neighbours: Callable[[Hashable, Hashable], bool]
) -> list[tuple[int, int]]:
    labels = channel.inputs
    pairs = [
        (i, j)
        for i, j in itertools.permutations(range(len(labels)), 2)
        if neighbours(labels[i], labels[j])
    ]
    if not pairs:
        raise ParameterError("neighbours", "no pair", "a relation holding for some inputs")
    return pairs


def prior_spread(
    channel: Channel, prior: Any, neighbours: Callable[[Hashable, Hashable], bool]
) -> float:
    """ε_X = max over neighbouring inputs x ~ x' of ln P(x)/P(x') (Wang, Ying & Zhang 2016,
    eq. (58) of the tutorial): how far the prior alone tells neighbours apart.

    >>> rr = Channel.randomized_response(2, 1.0)
    >>> round(prior_spread(rr, [0.25, 0.75], lambda a, b: a != b), 6)   # ln 3
    1.098612
    """
    p, _, _ = _posterior(channel, prior)
    logp = np.log(p)
    return max(float(logp[i] - logp[j]) for i, j in _neighbour_pairs(channel, neighbours))


def identifiability_level(
    channel: Channel, prior: Any, neighbours: Callable[[Hashable, Hashable], bool]
) -> float:
    """The least ε with P(x|y) ≤ e^ε P(x'|y) for all neighbours x ~ x' and outputs y: the
    channel's ε-identifiability under ``prior`` (Wang, Ying & Zhang 2016, Definition 2).

    >>> rr = Channel.randomized_response(2, 1.0)
    >>> round(identifiability_level(rr, [0.5, 0.5], lambda a, b: a != b), 6)  # flat prior: ε
    1.0
    """
    _, post, _ = _posterior(channel, prior)
    with np.errstate(divide="ignore"):
        logpost = np.log(post)
    worst = -math.inf
    for i, j in _neighbour_pairs(channel, neighbours):
        d = logpost[i] - logpost[j]
        worst = max(worst, float(np.max(np.where(np.isnan(d), -math.inf, d))))
    return worst


def identifiability_range(dp_epsilon: float, spread: float) -> tuple[float, float]:
    """Where the identifiability level of an ε_d-DP mechanism lies, given the prior spread
    ε_X: [ε*, ε* + 2ε_X] with ε* = max(0, ε_d − ε_X) (Wang, Ying & Zhang 2016, Lemma 1:
    P(x|y)/P(x'|y) = [P(y|x)/P(y|x')]·[P(x)/P(x')], so each level is within ε_X of the other).

    >>> identifiability_range(1.0, 0.25)
    (0.75, 1.25)
    """
    eps = as_nonnegative("dp_epsilon", dp_epsilon, allow_inf=True)
    spread = as_nonnegative("spread", spread, allow_inf=True)
    low = max(0.0, eps - spread)
    return low, eps + spread


def mi_dp_group_example(epsilon: float, k: int) -> Channel:
    """Cuff & Yu 2016, Example 5.1, on a domain of k values: two entries x₁, x₂; the output is
    erased (``"e"``) with probability 1 − ε/ln 2, else it is x₁ when x₁ = x₂ and ``"≠"``
    when they differ (needs ε ≤ ln 2).

    For either entry, given the other, this is a binary erasure channel (input: equal or
    not), so the per-individual MI-DP level sup I(X_i; Y | X_−i) is its capacity ε nats;
    the pair (X₁, X₂) sees an erasure channel with k + 1 inputs (the k equal pairs and
    "unequal"), capacity (ε/ln 2)·ln(k + 1) nats — as large as one likes as k grows: MI-DP
    has no group property.

    >>> ch = mi_dp_group_example(0.5, 4)
    >>> ch.n_inputs, ch.n_outputs
    (16, 6)
    """
    eps = as_nonnegative("epsilon", epsilon)
    if not 0 < eps <= math.log(2.0):
        raise ParameterError("epsilon", epsilon, "in (0, ln 2] (a probability ε/ln 2)")
    k = as_positive_int("k", k, minimum=2)
    keep = eps / math.log(2.0)
    outputs: Sequence[Hashable] = [*range(k), "≠", "e"]
    inputs = list(itertools.product(range(k), repeat=2))
    W = np.zeros((len(inputs), k + 2))
    for row, (a, b) in enumerate(inputs):
        W[row, a if a == b else k] = keep
        W[row, k + 1] = 1.0 - keep
    return Channel(W, inputs=inputs, outputs=outputs)
