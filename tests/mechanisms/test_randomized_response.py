"""Tests of randomized response (Dwork & Roth 2014 §3.2 coin-flip scheme; Kairouz, Oh & Viswanath
2014).

Independent values: the classic coin-flip probabilities 3/4 and 1/4 (ε = ln 3), the k-ary
keep probability e^ε/(e^ε + k − 1), and the channel's D_∞ = ε (Mironov 2017).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from infodp.errors import ParameterError
from infodp.mechanisms.randomized_response import RandomizedResponse
from infodp.mechanisms.sampling import InsecureSeededSource


def test_coin_flip_is_ln3() -> None:
    rr = RandomizedResponse.coin_flip()
    assert rr.epsilon == pytest.approx(math.log(3))
    assert rr.probabilities(1).tolist() == pytest.approx([0.25, 0.75], rel=1e-15)


@given(eps=st.floats(0.0, 8.0), k=st.integers(2, 9))
def test_probabilities_and_channel_epsilon(eps: float, k: int) -> None:
    rr = RandomizedResponse(eps, k)
    e = math.exp(eps)
    assert rr.keep_probability == pytest.approx(e / (e + k - 1), rel=1e-12)
    assert rr.probabilities(0).sum() == pytest.approx(1.0)
    view = rr.channel()
    assert view.channel.epsilon() == pytest.approx(eps, abs=1e-9)
    assert rr.profile().pure_epsilon() == pytest.approx(eps)


def test_exact_release_goodness_of_fit() -> None:
    rr = RandomizedResponse(1.0, k=4)
    src = InsecureSeededSource(21, i_understand_this_is_not_private=True)
    draws = np.array([rr.release(2, source=src) for _ in range(4000)])
    expected = rr.probabilities(2) * draws.size
    assert stats.chisquare(np.bincount(draws, minlength=4), expected).pvalue > 1e-3
    fast = rr.simulate(2, 40000, rng=3)
    assert (
        stats.chisquare(np.bincount(fast, minlength=4), rr.probabilities(2) * 40000).pvalue > 1e-3
    )
    # and the test can fail: the same draws against a wrong epsilon
    wrong = RandomizedResponse(1.5, k=4).probabilities(2) * draws.size
    assert stats.chisquare(np.bincount(draws, minlength=4), wrong).pvalue < 1e-6


def test_invalid() -> None:
    with pytest.raises(ParameterError, match="value"):
        RandomizedResponse(1.0).release(2)
    with pytest.raises(ParameterError, match="seed"):
        RandomizedResponse(1.0).release(1, source=3)
    with pytest.raises(ParameterError, match="k"):
        RandomizedResponse(1.0, k=1)
    with pytest.raises(ParameterError, match="epsilon"):
        RandomizedResponse(float("nan"))
