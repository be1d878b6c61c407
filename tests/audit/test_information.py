"""Mutual-information lower bounds and event search, checked against exact values.

Exact references: binary randomized response with a uniform secret has I = log 2 − H_b(p)
(the BSC, "DP and Information Theory" (2022)), computed here with scipy.stats.entropy; for
Laplace(0, b) vs Laplace(1, b)
with a uniform secret, I(X; Y) is computed by scipy quadrature of the mixture density.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from infodp.audit import empirical_bernstein_upper, mi_lower_bound, select_event
from infodp.audit.events import Event, Scorer, as_outputs
from infodp.errors import ParameterError


def _laplace_mi(b: float) -> float:
    p0 = stats.laplace(0.0, b).pdf
    p1 = stats.laplace(1.0, b).pdf

    def integrand(y: float) -> float:
        a, c = p0(y), p1(y)
        m = 0.5 * (a + c)
        return 0.5 * a * math.log(a / m) + 0.5 * c * math.log(c / m)

    return float(integrate.quad(integrand, -40 * b, 40 * b, points=[0.0, 1.0], limit=200)[0])


def test_mi_lower_bound_below_exact_laplace_mutual_information() -> None:
    rng = np.random.default_rng(11)
    n = 200_000
    exact = _laplace_mi(1.0)
    got = mi_lower_bound(
        rng.laplace(0, 1, n), rng.laplace(1, 1, n), rng.laplace(0, 1, n), rng.laplace(1, 1, n)
    )
    assert 0.8 * exact <= got <= exact


def test_mi_lower_bound_randomized_response() -> None:
    rng = np.random.default_rng(12)
    p = 0.25  # ε = log 3
    exact = math.log(2) - float(stats.entropy([p, 1 - p]))

    def flip(x: int, n: int) -> np.ndarray:
        return np.where(rng.random(n) < 1 - p, x, 1 - x)

    got = mi_lower_bound(flip(0, 50_000), flip(1, 50_000), flip(0, 50_000), flip(1, 50_000))
    assert 0.85 * exact <= got <= exact


def test_independent_outputs_give_zero() -> None:
    rng = np.random.default_rng(13)
    x = [rng.normal(size=5000) for _ in range(4)]
    assert mi_lower_bound(*x) == 0.0


@settings(max_examples=30)
@given(st.lists(st.floats(0, 1), min_size=2, max_size=50), st.floats(0.5, 0.99))
def test_bernstein_bound_is_above_the_sample_mean(values: list[float], conf: float) -> None:
    assert empirical_bernstein_upper(values, 1.0, conf) >= float(np.mean(values))


def test_bernstein_bound_coverage() -> None:
    # Maurer & Pontil 2009, Thm 4: covers the mean with probability ≥ confidence.
    rng = np.random.default_rng(14)
    hits = [empirical_bernstein_upper(rng.random(50) ** 3, 1.0, 0.9) >= 0.25 for _ in range(2000)]
    assert np.mean(hits) >= 0.9


def test_select_event_finds_the_laplace_threshold() -> None:
    rng = np.random.default_rng(15)
    event, eps = select_event(rng.laplace(0, 1, 50_000), rng.laplace(1, 1, 50_000))
    # Any event inside (−∞, 0] or [1, ∞) attains the ratio e (Dwork & Roth 2014, Thm 3.6).
    assert 0.8 < eps <= 1.0
    held0, held1 = rng.laplace(0, 1, 200_000), rng.laplace(1, 1, 200_000)
    k0, k1 = event.count(as_outputs(held0)), event.count(as_outputs(held1))
    ratio = (k0 / k1) if event.favours == 0 else (k1 / k0)
    assert ratio == pytest.approx(math.e, rel=0.05)


def test_event_descriptions_and_scores() -> None:
    s = Scorer("identity")
    assert Event(s, 1.0, math.inf, 0).describe() == "the output ≥ 1"
    assert Event(s, 0.0, 1.0, 1).kind == "interval"
    table = Scorer("table", table=((0.0, 1.5), (1.0, -1.5)))
    assert table(as_outputs([0, 1, 2])).tolist() == [1.5, -1.5, 0.0]


def test_bad_outputs() -> None:
    with pytest.raises(ParameterError, match="samples"):
        as_outputs([float("nan")])
    with pytest.raises(ParameterError, match="samples"):
        select_event(as_outputs([1.0, 2.0]), as_outputs(["a", "b"]))
    with pytest.raises(ParameterError, match="train0"):
        mi_lower_bound([1.0], [1.0, 2.0], [1.0, 2.0], [1.0, 2.0])
