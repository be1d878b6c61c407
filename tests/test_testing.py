"""Tests for infodp.testing: the strategies produce valid inputs and do reach the extremes.

Validity is checked with the library's own validators (the contract every module's tests rely
on); reachability with hypothesis.find, which fails if no example satisfies the condition.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import find, given, settings

from infodp import testing
from infodp._validate import as_probability_vector
from infodp.errors import ParameterError
from infodp.information.mutual import _as_channel
from infodp.testing import (
    channels,
    distribution_pairs,
    joint_distributions,
    probability_vectors,
    renyi_orders,
)

QUIET = settings(database=None, max_examples=2000)


@given(probability_vectors(min_size=2, max_size=5))
def test_probability_vectors_are_valid(p: np.ndarray) -> None:
    assert p.dtype == np.float64
    assert 2 <= p.size <= 5
    as_probability_vector("p", p)
    assert abs(float(p.sum()) - 1.0) < 1e-12


@given(probability_vectors(n=4, min_prob=0.05))
def test_min_prob_is_respected(p: np.ndarray) -> None:
    assert p.size == 4
    assert float(p.min()) >= 0.05 * (1 - 1e-12)


@pytest.mark.slow
def test_extremes_are_reached() -> None:
    tiny = find(probability_vectors(n=3), lambda p: 0 < p[p > 0].min() < 1e-250, settings=QUIET)
    assert tiny[tiny > 0].min() < 1e-250
    with_zero = find(probability_vectors(n=3), lambda p: (p == 0).any(), settings=QUIET)
    assert (with_zero == 0).any()
    # P not absolutely continuous w.r.t. Q (D_α = ∞ for α ≥ 1) is generated too.
    find(distribution_pairs(n=3), lambda pq: ((pq[0] > 0) & (pq[1] == 0)).any(), settings=QUIET)


@given(distribution_pairs(shared_support=True))
def test_shared_support_pairs(pq: tuple[np.ndarray, np.ndarray]) -> None:
    p, q = pq
    assert p.shape == q.shape
    assert np.array_equal(p > 0, q > 0)
    as_probability_vector("q", q)


@given(channels(3, 4))
def test_channels_are_row_stochastic(W: np.ndarray) -> None:
    assert W.shape == (3, 4)
    _as_channel(W)  # the library's own row validation accepts it


@given(joint_distributions((2, 3, 2)))
def test_joint_distributions(J: np.ndarray) -> None:
    assert J.shape == (2, 3, 2)
    as_probability_vector("joint", J.ravel())


@given(renyi_orders(min_value=0.5, max_value=5.0))
def test_renyi_orders_stay_in_range(alpha: float) -> None:
    assert 0.5 <= alpha <= 5.0


@pytest.mark.parametrize("target", [0.0, 1.0, 1.0 + 1e-12, 1.0 - 1e-12, 1e6, math.inf])
def test_special_orders_are_generated(target: float) -> None:
    assert find(renyi_orders(), lambda a: a == target, settings=QUIET) == target


@pytest.mark.parametrize(
    "strategy",
    [
        lambda: probability_vectors(n=2, min_prob=0.6),
        lambda: probability_vectors(n=0),
        lambda: probability_vectors(min_size=3, max_size=2),
        lambda: channels(0, 2),
        lambda: renyi_orders(min_value=-1.0),
    ],
)
def test_bad_strategy_parameters_raise(strategy: object) -> None:
    with pytest.raises(ParameterError):
        find(strategy(), lambda _: True, settings=QUIET)  # type: ignore[operator]


def test_all_lists_public_names() -> None:
    public = {
        n
        for n, obj in vars(testing).items()
        if not n.startswith("_")
        and (callable(obj) or n.isupper())
        and n not in {"FloatArray"}
        and getattr(obj, "__module__", testing.__name__) == testing.__name__
    }
    assert set(testing.__all__) == public
