"""Adversarial insertion: closed forms of the trade-off functions, the profile bound, the
one-record rate–distortion bound and the simulated detector."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from infodp.audit.attacks import (
    detection_power,
    insertion_attack,
    max_undetected_shift,
    profile_undetected_shift,
    rate_distortion_insertion_variance,
)
from infodp.cli import main
from infodp.errors import ParameterError


def _laplace_tradeoff(alpha: float, mu: float) -> float:
    # Dong, Roth & Su (2022), §2.4 (Laplace mechanism): T(Lap(0,1), Lap(μ,1)).
    if alpha < math.exp(-mu) / 2:
        return 1 - alpha * math.exp(mu)
    if alpha <= 0.5:
        return math.exp(-mu) / (4 * alpha)
    return math.exp(-mu) * (1 - alpha)


@pytest.mark.parametrize(("a", "b"), [(0.05, 0.5), (0.01, 0.2), (0.1, 0.9), (0.3, 0.4)])
def test_laplace_shift_against_dong_roth_su(a: float, b: float) -> None:
    scale = 1.7
    shift = max_undetected_shift("laplace", scale, a, b)
    assert 1 - _laplace_tradeoff(a, shift / scale) == pytest.approx(b, abs=1e-9)


@pytest.mark.parametrize(("a", "b"), [(0.05, 0.5), (0.01, 0.2), (0.1, 0.9)])
def test_gaussian_shift_against_gdp(a: float, b: float) -> None:
    # G_μ(a) = Φ(Φ⁻¹(1 − a) − μ) (Dong, Roth & Su 2022, Eq. (2.4)); power 1 − G_μ(a) = b.
    sigma = 2.5
    mu = max_undetected_shift("gaussian", sigma, a, b) / sigma
    assert 1 - stats.norm.cdf(stats.norm.ppf(1 - a) - mu) == pytest.approx(b, abs=1e-12)
    assert mu == pytest.approx(stats.norm.ppf(b) + stats.norm.isf(a))


@pytest.mark.slow  # ~1.0 CPU-s (measured)
@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_profile_shift_is_safe_and_close(noise: str) -> None:
    exact = max_undetected_shift(noise, 1.0, 0.05, 0.5)
    guaranteed = profile_undetected_shift(noise, 1.0, 0.05, 0.5)
    assert guaranteed <= exact
    assert detection_power(noise, 1.0, guaranteed, 0.05) <= 0.5
    # the (ε, δ(ε)) family determines the trade-off function (Dong et al. 2022, Prop. 2.12),
    # so only the ε grid separates the two
    assert guaranteed >= 0.99 * exact


@pytest.mark.slow
def test_pure_dp_view_for_laplace() -> None:
    # a shift Δ is pure (Δ/λ)-DP: power ≤ min(e^{Δ/λ} a, 1 − e^{−Δ/λ}(1 − a)) (KOV 2015)
    a, b = 0.05, 0.3
    pure = min(math.log(b / a), math.log((1 - a) / (1 - b)))
    assert profile_undetected_shift("laplace", 1.0, a, b) >= pure * (1 - 1e-6)


def test_rate_distortion_bound_meets_the_gaussian_rd_function() -> None:
    # at the bound, I(X; X + X_adv) = ½ ln(1 + σ_X²/σ_adv²) equals R(s²) = ½ ln(σ_X²/s²)
    # (Cover & Thomas 2006, Thm 10.3.2; Ünsal & Önen, Eqs. (63), (66) at n = 1)
    sz, eps, dlt, sx = 3.0, 0.8, 1e-6, 4.0
    var = rate_distortion_insertion_variance(sz, eps, dlt, sx)
    s2 = sz**2 * eps**2 / (2 * math.log(1.25 / dlt))
    assert 0.5 * math.log(1 + sx**2 / var) == pytest.approx(0.5 * math.log(sx**2 / s2))
    assert math.isinf(rate_distortion_insertion_variance(sz, eps, dlt, math.sqrt(s2) / 2))


@pytest.mark.slow  # ~0.8 CPU-s (measured)
@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_simulated_detector_confirms(noise: str) -> None:
    r = insertion_attack(noise, epsilon=0.7, delta=1e-6, false_alarm=0.05, detection=0.3,
                         trials=100_000, rng=4)  # fmt: skip
    lo, hi = r.simulated_power_interval
    assert lo <= 0.3 <= hi
    assert abs(r.simulated_false_alarm - 0.05) < 4 * math.sqrt(0.05 * 0.95 / 100_000)
    if noise == "gaussian":
        assert r.rd_detector_power is not None and r.rd_simulated_power is not None
        assert abs(r.rd_simulated_power - r.rd_detector_power) < 4 * math.sqrt(0.25 / 100_000)


def test_bad_levels() -> None:
    with pytest.raises(ParameterError, match="false_alarm"):
        max_undetected_shift("gaussian", 1.0, 0.0, 0.5)
    with pytest.raises(ParameterError, match="noise"):
        max_undetected_shift("cauchy", 1.0, 0.1, 0.5)
    assert max_undetected_shift("gaussian", 1.0, 0.5, 0.2) == 0.0  # b ≤ a: nothing passes


@pytest.mark.slow
def test_cli(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["attack", "insertion", "--noise", "laplace", "--epsilon", "1",
                 "--trials", "20000", "--seed", "0", "--json"])  # fmt: skip
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["exact_shift"] == pytest.approx(math.log(10))  # F⁻¹(½) − F⁻¹(0.05) = ln 10
    assert main(["attack", "coding", "--false-alarm", "0.1", "--json"]) == 2
    assert np.isfinite(payload["profile_shift"])
