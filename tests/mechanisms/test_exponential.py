"""Tests of the exponential mechanism and report-noisy-max / permute-and-flip.

Independent values: the Gumbel-max identity (argmax of u + Gumbel(2Δ/ε) ~ softmax(εu/2Δ)),
brute-force enumeration of all n! permutations for permute-and-flip (McKenna & Sheldon 2020,
Algorithm 1), and the pure-DP bound of the exact channels (Dwork & Roth 2014, Thm 3.10).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from infodp.errors import ParameterError
from infodp.mechanisms.exponential import (
    ExponentialMechanism,
    ReportNoisyMax,
    permute_and_flip_probabilities,
)
from infodp.mechanisms.sampling import InsecureSeededSource


def _pf_bruteforce(u: list[float], c: float) -> np.ndarray:
    n, top = len(u), max(u)
    p = [math.exp(c * (x - top)) for x in u]
    out = np.zeros(n)
    for perm in itertools.permutations(range(n)):
        reach = 1.0 / math.factorial(n)
        for r in perm:
            out[r] += reach * p[r]
            reach *= 1 - p[r]
    return out


@given(
    u=st.lists(st.floats(-3, 3), min_size=1, max_size=5),
    c=st.floats(0.05, 3.0),
)
def test_pf_probabilities_match_bruteforce(u: list[float], c: float) -> None:
    assert permute_and_flip_probabilities(u, c) == pytest.approx(_pf_bruteforce(u, c), abs=1e-12)


def test_exponential_mechanism_law_and_gumbel_max() -> None:
    em = ExponentialMechanism(1.0, utility_sensitivity=0.5)
    u = [0.0, 0.3, 1.0]
    p = em.probabilities(u)
    expected = np.exp(np.array(u) * 1.0) / np.exp(np.array(u) * 1.0).sum()  # eps/(2*0.5) = 1
    assert p == pytest.approx(expected, rel=1e-12)
    rnm = ReportNoisyMax(1.0, sensitivity=0.5, noise="gumbel")
    sims = rnm.simulate(u, 30000, rng=4)  # literal argmax of Gumbel-noised scores
    assert stats.chisquare(np.bincount(sims, minlength=3), p * 30000).pvalue > 1e-3
    assert ExponentialMechanism(1.0, 0.5, monotone=True).probabilities(u) == pytest.approx(
        np.exp(2 * np.array(u)) / np.exp(2 * np.array(u)).sum()
    )


def test_exact_releases_goodness_of_fit() -> None:
    u = [0.0, 1.0, 2.5, 2.0]
    src = InsecureSeededSource(5, i_understand_this_is_not_private=True)
    em = ExponentialMechanism(1.5)
    draws = np.array([em.release(u, source=src) for _ in range(3000)])
    assert (
        stats.chisquare(np.bincount(draws, minlength=4), em.probabilities(u) * 3000).pvalue > 1e-3
    )
    pf = ReportNoisyMax(1.5, noise="exponential")
    draws = np.array([pf.release(u, source=src) for _ in range(3000)])
    assert (
        stats.chisquare(np.bincount(draws, minlength=4), pf.probabilities(u) * 3000).pvalue > 1e-3
    )
    # the literal report-noisy-max with exponential noise has the permute-and-flip law
    sims = pf.simulate(u, 30000, rng=8)
    assert (
        stats.chisquare(np.bincount(sims, minlength=4), pf.probabilities(u) * 30000).pvalue > 1e-3
    )
    # the exponential mechanism's law differs from PF's (so the checks above can fail)
    assert np.max(np.abs(em.probabilities(u) - pf.probabilities(u))) > 0.02


@settings(max_examples=20)
@given(eps=st.floats(0.1, 4.0), seed=st.integers(0, 1000))
def test_channels_are_eps_dp(eps: float, seed: int) -> None:
    gen = np.random.default_rng(seed)
    base = gen.uniform(-2, 2, size=4)
    utilities = [base, base + gen.uniform(0, 1, size=4), base + gen.uniform(0, 1, size=4)]
    for mech in (
        ExponentialMechanism(eps),
        ReportNoisyMax(eps),
        ReportNoisyMax(eps, noise="gumbel"),
    ):
        view = mech.channel(utilities)
        assert view.channel.epsilon() <= eps * (1 + 1e-9)


def test_invalid() -> None:
    with pytest.raises(ParameterError, match="noise"):
        ReportNoisyMax(1.0, noise="laplace")
    with pytest.raises(ParameterError, match="scores"):
        ExponentialMechanism(1.0).release([])
    with pytest.raises(ParameterError, match="seed"):
        ExponentialMechanism(1.0).release([1.0, 2.0], source=1)
    with pytest.raises(ParameterError, match="utilities"):
        ExponentialMechanism(1.0).channel([[0.0, 0.0], [3.0, 0.0]])
