"""combination_halfwidth against an independent exact computation.

The oracle enumerates the integer supports and convolves the pmfs written out here from the
closed forms (discrete Laplace: Canonne, Kamath & Steinke 2020, Definition 2; the discrete
Gaussian normalised by direct summation), for integer coefficients so that the law of Σ c_i N_i
lives on the integers and its quantile is exact. The bound must never be below the exact
quantile and may exceed it by the discretisation only (a few percent).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infodp.errors import ParameterError
from infodp.mechanisms import DiscreteGaussianMechanism, DiscreteLaplaceMechanism
from infodp.mechanisms.error_law import combination_halfwidth


def _dlap(scale: float, k: np.ndarray) -> np.ndarray:
    q = math.exp(-1.0 / scale)
    return (1 - q) / (1 + q) * q ** np.abs(k)


def _dgauss(sigma: float, k: np.ndarray) -> np.ndarray:
    w = np.exp(-(k.astype(float) ** 2) / (2 * sigma * sigma))
    wide = np.arange(-int(60 * sigma) - 60, int(60 * sigma) + 61)
    return w / np.exp(-(wide.astype(float) ** 2) / (2 * sigma * sigma)).sum()


def _exact_quantile(terms: list[tuple[str, float, int]], beta: float) -> int:
    """Smallest integer h with P(|Σ c_i N_i| > h) ≤ β, by full convolution."""
    law = np.array([1.0])
    for kind, scale, c in terms:
        k = np.arange(-int(60 * scale) - 60, int(60 * scale) + 61)
        pmf = _dlap(scale, k) if kind == "laplace" else _dgauss(scale, k)
        spread = np.zeros(abs(c) * (k.size - 1) + 1)
        spread[:: abs(c)] = pmf  # the law of c·N on the integers
        law = np.convolve(law, spread)
    centre = law.size // 2
    absolute = np.zeros(centre + 1)
    absolute[0] = law[centre]
    absolute[1:] = law[centre + 1 :] + law[:centre][::-1]
    beyond = 1.0 - np.cumsum(absolute)  # P(|X| > h)
    return int(np.nonzero(beyond <= beta)[0][0])


def _mech(kind: str, scale: float) -> object:
    if kind == "laplace":
        return DiscreteLaplaceMechanism(scale)
    return DiscreteGaussianMechanism(scale)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["laplace", "gaussian"]),
            st.floats(0.5, 30.0),
            st.integers(-4, 4).filter(lambda c: c != 0),
        ),
        min_size=2,
        max_size=3,
    ),
    st.sampled_from([0.01, 0.05, 0.2]),
)
def test_never_below_the_exact_quantile_and_close_to_it(
    terms: list[tuple[str, float, int]], beta: float
) -> None:
    exact = _exact_quantile(terms, beta)
    got = combination_halfwidth([(_mech(k, s), float(c)) for k, s, c in terms], beta)
    assert got >= exact
    scale = math.sqrt(sum((c * s) ** 2 for _, s, c in terms))  # the sum's spread
    assert got <= exact + 0.05 * scale + 1.0


def test_one_term_is_the_mechanisms_own_tail() -> None:
    m = DiscreteLaplaceMechanism(7.0)
    assert combination_halfwidth([(m, 3.0), (None, 1.0), (m, 0.0)], 0.05) == 3 * m.halfwidth(0.05)


def test_wide_noises_are_cut_into_blocks_and_still_bounded() -> None:
    """Scales of 10¹² grid units (a sum of squares at small ε): against the continuous
    Laplace sum's closed form, P(|X + Y| > t) for independent Laplace(a), Laplace(b)."""
    a, b = 3e12, 2e12
    got = combination_halfwidth(
        [(DiscreteLaplaceMechanism(a), 1.0), (DiscreteLaplaceMechanism(b), 1.0)], 0.05
    )

    def tail(t: float) -> float:
        # two-sided: the sum's density (a e^{-|z|/a} - b e^{-|z|/b}) / (2(a² - b²)), integrated
        return (a * a * math.exp(-t / a) - b * b * math.exp(-t / b)) / (a * a - b * b)

    lo, hi = 0.0, 40 * a
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if tail(mid) > 0.05 else (lo, mid)
    assert hi <= got <= 1.03 * hi


def test_bad_beta_and_coefficients_are_refused() -> None:
    m = DiscreteLaplaceMechanism(1.0)
    with pytest.raises(ParameterError):
        combination_halfwidth([(m, 1.0)], 0.0)
    with pytest.raises(ParameterError):
        combination_halfwidth([(m, math.nan), (m, 1.0)], 0.05)
