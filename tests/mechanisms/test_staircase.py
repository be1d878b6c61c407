"""Tests of the staircase mechanism (Geng & Viswanath 2016) on a grid.

Independent values: the minimal expected noise amplitude Δ e^{ε/2}/(e^ε − 1) of the optimal
continuous staircase (Geng & Viswanath 2016, Theorem 7 / Eq. for V(P_γ*)), the Laplace
amplitude Δ/ε it improves on, and the pure-DP ratio bound e^ε checked on the pmf.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from infodp.errors import ParameterError
from infodp.mechanisms.sampling import InsecureSeededSource
from infodp.mechanisms.staircase import StaircaseMechanism, optimal_gamma


def test_optimal_gamma_closed_form() -> None:
    # Geng & Viswanath 2016: gamma* = 1/(1 + e^{eps/2})
    assert optimal_gamma(2.0) == pytest.approx(1 / (1 + math.e))


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_expected_amplitude_matches_geng_viswanath(eps: float) -> None:
    m = StaircaseMechanism(eps, sensitivity=1.0, grid=2.0**-8)
    k = np.arange(-200 * m.period, 200 * m.period + 1)
    p = m._noise_pmf(k)
    assert math.fsum(p.tolist()) == pytest.approx(1.0, abs=1e-12)
    amplitude = float(np.sum(np.abs(k) * p)) * (m.grid or 0)
    optimal = math.exp(eps / 2) / math.expm1(eps)  # GV 2016, optimal l1 noise amplitude
    # the period is (Delta/g + 1) units: amplitude inflated by at most ~1/256 + rounding of j
    assert optimal <= amplitude <= optimal * (1 + 3 / 256)
    assert amplitude < 1 / eps  # beats Laplace with b = Delta/eps


@given(eps=st.floats(0.05, 6.0), log_grid=st.integers(-5, -1))
def test_pure_dp_ratio_on_pmf(eps: float, log_grid: int) -> None:
    m = StaircaseMechanism(eps, sensitivity=1.0, grid=2.0**log_grid)
    k = np.arange(-8 * m.period, 8 * m.period + 1)
    logp = np.log(m._noise_pmf(k))
    for shift in range(1, m.period + 1):
        assert np.max(np.abs(logp[shift:] - logp[:-shift])) <= eps * (1 + 1e-12)
    assert m.profile().pure_epsilon() == eps
    view = m.channel([0.0, 1.0], tail=1e-6, max_outputs=100_000)
    assert view.channel.epsilon() <= eps * (1 + 1e-9)


def test_exact_release_and_simulator_fit_pmf() -> None:
    m = StaircaseMechanism(1.0, sensitivity=1.0, grid=0.25)
    src = InsecureSeededSource(8, i_understand_this_is_not_private=True)
    secure = np.array([m.release(0.0, source=src) for _ in range(3000)]) * 4
    fast = m.simulate(0.0, 30000, rng=9) * 4
    ks = np.arange(-10, 11)
    probs = m._noise_pmf(ks)
    probs[0] += m._noise_tail(11)
    probs[-1] += m._noise_tail(11)
    for draws in (secure, fast):
        observed = np.array([(np.clip(draws, -10, 10) == k).sum() for k in ks])
        assert stats.chisquare(observed, probs * draws.size).pvalue > 1e-3


def test_invalid() -> None:
    with pytest.raises(ParameterError, match="gamma"):
        StaircaseMechanism(1.0, gamma=1.5)
    with pytest.raises(ParameterError, match="epsilon"):
        StaircaseMechanism(0.0)
    with pytest.raises(ParameterError, match="seed"):
        StaircaseMechanism(1.0).release(0.0, source=1)
