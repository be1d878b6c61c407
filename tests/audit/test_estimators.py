"""Clopper–Pearson, ε/δ/KL lower bounds: checked against scipy's independent exact binomial
intervals (``scipy.stats.binomtest``), closed forms and coverage simulations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from infodp.audit import (
    binary_kl,
    clopper_pearson,
    delta_lower_bound,
    epsilon_lower_bound,
    kl_lower_bound,
)
from infodp.errors import ParameterError


@pytest.mark.parametrize(("k", "n"), [(0, 10), (5, 10), (10, 10), (3, 1000), (183_940, 10**6)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.999])
def test_clopper_pearson_matches_scipy_binomtest(k: int, n: int, confidence: float) -> None:
    # scipy.stats.binomtest(...).proportion_ci(method="exact") is Clopper & Pearson (1934),
    # implemented by root-finding on the binomial CDF (an independent algorithm).
    ref = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    lo, hi = clopper_pearson(k, n, confidence)
    assert lo == pytest.approx(ref.low, abs=1e-9)
    assert hi == pytest.approx(ref.high, abs=1e-9)
    one = stats.binomtest(k, n, alternative="greater").proportion_ci(confidence_level=confidence)
    assert clopper_pearson(k, n, confidence, side="lower")[0] == pytest.approx(one.low, abs=1e-9)
    up = stats.binomtest(k, n, alternative="less").proportion_ci(confidence_level=confidence)
    assert clopper_pearson(k, n, confidence, side="upper")[1] == pytest.approx(up.high, abs=1e-9)


def test_clopper_pearson_table_value() -> None:
    # Clopper & Pearson (1934) / standard tables: 95% interval for 5/10 is (0.1871, 0.8129).
    lo, hi = clopper_pearson(5, 10, 0.95)
    assert (round(lo, 4), round(hi, 4)) == (0.1871, 0.8129)


@pytest.mark.slow  # ~0.7 CPU-s (measured)
def test_clopper_pearson_coverage() -> None:
    # The one-sided bound covers the truth with probability ≥ level for every p.
    rng = np.random.default_rng(3)
    for p in (0.001, 0.05, 0.5, 0.97):
        ks = rng.binomial(200, p, size=4000)
        lows = np.array([clopper_pearson(int(k), 200, 0.95, side="lower")[0] for k in ks])
        assert np.mean(lows <= p) >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / 4000)


def test_epsilon_lower_bound_formula() -> None:
    # ε ≥ log((L0 − δ)/U1) with one-sided bounds at 1 − (1 − c)/2 (union bound).
    k0, k1, n = 50_000, 18_394, 100_000
    level = 0.975
    lo0 = stats.binomtest(k0, n, alternative="greater").proportion_ci(level).low
    hi1 = stats.binomtest(k1, n, alternative="less").proportion_ci(level).high
    assert epsilon_lower_bound(k0, n, k1, n) == pytest.approx(math.log(lo0 / hi1), rel=1e-9)
    assert epsilon_lower_bound(k0, n, k1, n, delta=0.01) == pytest.approx(
        math.log((lo0 - 0.01) / hi1), rel=1e-9
    )
    got = delta_lower_bound(k0, n, k1, n, epsilon=0.5)
    assert got == pytest.approx(lo0 - math.exp(0.5) * hi1, rel=1e-9)
    # Laplace(0,1) vs Laplace(1,1), event Y<0: true ε = 1; the bound is below and close.
    assert 0.95 < epsilon_lower_bound(k0, n, k1, n) < 1.0


def test_bounds_are_never_negative_or_nan() -> None:
    assert epsilon_lower_bound(0, 10, 10, 10) == 0.0
    assert delta_lower_bound(0, 10, 10, 10, epsilon=0.0) == 0.0
    assert kl_lower_bound(5, 10, 5, 10) == 0.0
    assert delta_lower_bound(10, 10, 0, 10, epsilon=math.inf) == 0.0


def test_binary_kl_closed_form() -> None:
    # kl(1/2 ‖ 1/4) = ½ log 2 + ½ log(2/3) (definition of KL divergence, Cover & Thomas 2006, §2.3).
    assert float(binary_kl(0.5, 0.25)) == pytest.approx(
        0.5 * math.log(2) + 0.5 * math.log(2 / 3), rel=1e-12
    )
    assert float(binary_kl(0.3, 0.0)) == math.inf
    assert float(binary_kl(0.0, 0.0)) == 0.0


def test_kl_lower_bound_is_kl_of_the_box_corner() -> None:
    k0, k1, n = 50_000, 18_394, 100_000
    level = 1 - 0.05 / 4
    lo0 = stats.binomtest(k0, n, alternative="greater").proportion_ci(level).low
    hi1 = stats.binomtest(k1, n, alternative="less").proportion_ci(level).high
    assert kl_lower_bound(k0, n, k1, n) == pytest.approx(float(binary_kl(lo0, hi1)), rel=1e-9)
    # True KL between Laplace(0,1) and Laplace(1,1) is e^{-1} + 1 − 1 = e^{-1} ≈ 0.3679
    # (closed form b=1, |μ|=1: |μ| + e^{-|μ|} − 1); the event bound stays below it.
    assert kl_lower_bound(k0, n, k1, n) < math.exp(-1)


@given(
    st.integers(1, 1000),
    st.integers(0, 1000),
    st.integers(0, 1000),
    st.floats(0.5, 0.999),
)
def test_epsilon_bound_monotone_in_counts_and_confidence(
    n: int, a: int, b: int, confidence: float
) -> None:
    k0, k1 = min(a, n), min(b, n)
    eps = epsilon_lower_bound(k0, n, k1, n, confidence=confidence)
    assert eps >= 0 and not math.isnan(eps)
    if k0 < n:  # more hits under D can only raise the bound
        assert epsilon_lower_bound(k0 + 1, n, k1, n, confidence=confidence) >= eps
    if k1 > 0:  # fewer hits under D' can only raise it
        assert epsilon_lower_bound(k0, n, k1 - 1, n, confidence=confidence) >= eps
    # asking for more confidence can only lower it
    assert epsilon_lower_bound(k0, n, k1, n, confidence=min(0.9999, confidence + 0.0001)) <= eps


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: clopper_pearson(11, 10), "successes"),
        (lambda: clopper_pearson(1, 0), "trials"),
        (lambda: clopper_pearson(1, 10, 1.0), "confidence"),
        (lambda: clopper_pearson(1, 10, side="both"), "side"),
        (lambda: epsilon_lower_bound(1, 10, 1, 10, delta=-0.1), "delta"),
        (lambda: delta_lower_bound(1, 10, 1, 10, epsilon=float("nan")), "epsilon"),
    ],
)
def test_bad_input_names_the_argument(call: object, name: str) -> None:
    with pytest.raises(ParameterError, match=name):
        call()  # type: ignore[operator]
