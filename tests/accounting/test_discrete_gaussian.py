"""The discrete Gaussian's distribution helpers against mpmath (an independent oracle).

Canonne, Kamath & Steinke 2020, Definition 1: P[N = k] = e^{−k²/(2σ²)} / Σ_j e^{−j²/(2σ²)}.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infodp.accounting import discrete_gaussian as dg


def _log_z(sigma: float) -> float:
    with mpmath.workdps(40):
        w = int(40 * sigma) + 40
        z = mpmath.fsum(
            mpmath.exp(-mpmath.mpf(k * k) / (2 * mpmath.mpf(sigma) ** 2)) for k in range(-w, w + 1)
        )
        return float(mpmath.log(z))


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(st.floats(min_value=0.2, max_value=30.0))
def test_normalisers_bracket_the_direct_sum(sigma: float) -> None:
    exact = _log_z(sigma)
    assert abs(dg.log_normaliser(sigma) - exact) < 1e-12
    assert dg.log_normaliser_lower(sigma) <= exact + 1e-13  # a partial sum, up to float rounding


@settings(max_examples=25, deadline=None)
@given(st.floats(min_value=1.0, max_value=20.0), st.integers(min_value=-60, max_value=60))
def test_cdf_upper_is_above_the_exact_cdf(sigma: float, b: int) -> None:
    with mpmath.workdps(40):
        s2 = 2 * mpmath.mpf(sigma) ** 2
        w = int(40 * sigma) + 40
        below = mpmath.fsum(mpmath.exp(-mpmath.mpf(k * k) / s2) for k in range(-w, b + 1))
        exact = float(below / mpmath.exp(_log_z(sigma)))
    bound = float(dg.cdf_upper(sigma, np.array([float(b)]))[0])
    # Above, by at most the Euler-Maclaurin remainder bound √24/(720σ⁴) ≈ 0.0069/σ⁴.
    assert exact * (1 - 1e-12) <= bound <= min(1.0, exact + 0.007 / sigma**4 + 1e-12)


@settings(max_examples=25, deadline=None)
@given(st.floats(min_value=0.5, max_value=10.0), st.integers(min_value=1, max_value=30))
def test_outside_mass_bound_holds(sigma: float, half: int) -> None:
    ks = np.arange(-half, half + 1)
    inside = math.fsum(dg.pmf(sigma, ks).tolist())
    assert 1.0 - inside <= math.exp(dg.log_outside_upper(sigma, 0.0, -half, half)) * (1 + 1e-9)
