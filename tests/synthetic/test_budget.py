"""The zCDP split is exact and never exceeds the budget (closed forms, exact fractions)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from infodp.accounting.conversions import zcdp_to_epsilon
from infodp.errors import ParameterError
from infodp.mechanisms.sampling import InsecureSeededSource
from infodp.synthetic.aim import aim
from infodp.synthetic.budget import (
    em_epsilon_for,
    em_rho,
    gaussian_rho,
    rho_for,
    sigma_for,
    sqrt_down,
    sqrt_up,
)
from infodp.synthetic.mst import mst, mst_split


def _source(k: int) -> InsecureSeededSource:
    return InsecureSeededSource(k, i_understand_this_is_not_private=True)


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("delta", [1e-6, 1e-9])
def test_rho_converts_back_within_epsilon_and_is_nearly_tight(epsilon: float, delta: float) -> None:
    rho = rho_for(epsilon, delta)
    assert zcdp_to_epsilon(float(rho), delta) <= epsilon
    # Tight: 0.1% more ρ would exceed ε (Bun & Steinke 2016, Prop. 1.3 is the looser of two).
    assert zcdp_to_epsilon(float(rho) * 1.001, delta) > epsilon
    # The closed form ρ + 2√(ρ ln 1/δ) bounds the conversion, so ρ is at least its inverse.
    closed = (math.sqrt(math.log(1 / delta) + epsilon) - math.sqrt(math.log(1 / delta))) ** 2
    assert float(rho) >= closed * (1 - 1e-6)


@pytest.mark.parametrize("rho", [Fraction(1, 3), Fraction(7, 11), Fraction(10**6, 7)])
@pytest.mark.parametrize("d", [1, 2, 10])
def test_mst_split_sums_to_rho_exactly(rho: Fraction, d: int) -> None:
    parts = mst_split(rho, d)
    assert sum(parts) == rho
    if d > 1:
        assert parts[0] == parts[1] == rho / 3


@pytest.mark.parametrize("x", [Fraction(2), Fraction(1, 3), Fraction(10**9, 7)])
def test_rounded_roots_are_on_the_safe_side(x: Fraction) -> None:
    up, down = sqrt_up(x), sqrt_down(x)
    assert down * down <= x <= up * up
    assert up - down <= Fraction(2, 2**40)


@pytest.mark.parametrize("share", [Fraction(1, 8), Fraction(3, 1000), Fraction(5)])
@pytest.mark.parametrize("sensitivity", [1, 3])
def test_gaussian_and_selection_shares_never_exceed_their_rho(
    share: Fraction, sensitivity: int
) -> None:
    sigma = sigma_for(share, sensitivity)
    # σ² = Δ²/(2ρ) (Canonne, Kamath & Steinke 2020, Thm 4), rounded up.
    assert gaussian_rho(sigma, sensitivity) <= share
    assert float(sigma) ** 2 == pytest.approx(sensitivity**2 / (2 * float(share)), rel=1e-9)
    eps = em_epsilon_for(share)
    assert em_rho(eps) <= share
    assert float(eps) == pytest.approx(math.sqrt(8 * float(share)), rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("run", ["aim", "mst"])
@pytest.mark.parametrize("rho", [Fraction(1, 1000), Fraction(1, 3), Fraction(20)])
def test_a_release_spends_at_most_rho_and_almost_all_of_it(run: str, rho: Fraction) -> None:
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 3, size=(300, 4)).astype(np.int64)
    algorithm = aim if run == "aim" else mst
    fit = algorithm(codes, (4, 4, 4, 4), rho, source=_source(9))
    assert fit.spent <= rho
    assert fit.spent >= rho * (1 - Fraction(1, 10**6))
    assert sum(r for _, r in fit.steps) == fit.spent


def test_rho_for_refuses_pure_dp_with_its_text() -> None:
    with pytest.raises(ParameterError, match="synthetic data is released under zCDP"):
        rho_for(1.0, 0.0)
