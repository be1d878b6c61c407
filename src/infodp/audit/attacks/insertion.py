"""Adversarial insertion: how far can one inserted record move a noisy sum and stay unseen?

Ünsal & Önen (2021/2022; Ünsal & Önen 2023, §5.1) let an adversary insert a record into a dataset
whose sum is released with DP noise, wanting a large shift of the release while a detector —
which knows the honest distribution and tests "no insertion" against "insertion" with
false-alarm rate a — detects it with probability at most b. Three derivations:

1. **Trade-off function (exact).** A shift Δ of the sum turns the release N + q into
   N + q + Δ. By Neyman–Pearson the best detector of size a has power 1 − T(a), where T is the
   trade-off function of the two shifted noise laws (Dong, Roth & Su 2022, JRSS-B, Def. 2.1).
   For Gaussian noise N(0, σ²) it is G_μ(a) = Φ(Φ⁻¹(1 − a) − μ), μ = Δ/σ (ibid., Eq. (2.4));
   for Laplace noise of scale λ, T(a) = F(F⁻¹(1 − a) − Δ/λ) with F the standard Laplace CDF
   (ibid., §2.4; a threshold test is optimal because the likelihood ratio is monotone). Power
   ≤ b gives the largest undetected shift in closed form,

       Δ_max = scale · (F⁻¹(b) − F⁻¹(a))      (F the standard noise CDF; 0 when b ≤ a).

2. **(ε, δ) profile (a guaranteed, smaller shift).** A shift of Δ is a neighbouring change
   at sensitivity Δ, so the mechanism is (ε', δ(ε'))-DP for every ε' with δ(ε') from its
   privacy profile, and any detector of size a has power ≤ min_{ε'} min(δ(ε') + e^{ε'} a,
   1 − e^{−ε'}(1 − δ(ε') − a)) (Kairouz, Oh & Viswanath 2015, Thm 2.4; Dong et al. 2022,
   Prop. 2.5). Bisection on Δ finds the largest shift this bound keeps ≤ b; it is at most
   Δ_max (the bound is evaluated on a grid of ε', so it only errs on the safe side).

3. **Rate–distortion (Gaussian).** The source's argument: an honest record X ~ N(0, σ_X²) and
   the inserted X_adv ~ N(0, σ_adv²) form the test channel X → X + X_adv with
   I(X; X + X_adv) = ½ ln(1 + σ_X²/σ_adv²) (Ünsal & Önen 2023, Eq. (66) for one record). Asking this
   to be at least the Gaussian rate–distortion function at the distortion
   s² = σ_z² ε² / (2 ln(1.25/δ)) — the squared sensitivity the noise σ_z was calibrated for
   by Dwork & Roth (2014, Thm A.1) — R(s²) = ½ ln(σ_X²/s²) (Cover & Thomas 2006, Thm 10.3.2),
   gives

       σ_adv² ≤ s² / (1 − s²/σ_X²)      (s < σ_X; no bound otherwise),

   which is the tutorial's Corollary 5.1, Eq. (63), at n = 1. **Not reproduced:** the factor
   1/(2πe)^{n−1} of Eq. (63) for n ≥ 2 and the constant f_n of Theorem 5, Eq. (59): they do
   not follow from Eqs. (60)–(66), which mix the differential entropy of an n-dimensional
   vector with that of a scalar; this module implements the one-record derivation only.

The detector is then simulated (numpy, a simulation — not a release): the Neyman–Pearson
threshold test at the exact shift should show power ≈ b, and the energy detector |Y| > t (the
optimal test against a zero-mean Gaussian insertion) shows the power the rate–distortion
insertion actually reaches, next to its analytic value.

>>> r = insertion_attack("gaussian", epsilon=1.0, delta=1e-5, false_alarm=0.05,
...                      detection=0.5, trials=20_000, rng=0)
>>> r.profile_shift <= r.exact_shift, abs(r.simulated_power - 0.5) < 0.03
(True, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from infodp._jsonable import json_key
from infodp._validate import as_positive, as_positive_int, as_probability
from infodp.accounting import PrivacyProfile, gaussian_profile, laplace_profile
from infodp.audit.attacks._result import AttackResult
from infodp.audit.estimators import clopper_pearson
from infodp.errors import ParameterError
from infodp.mechanisms.gaussian import analytic_gaussian_sigma
from infodp.mechanisms.sampling import as_generator

__all__ = [
    "NOISES",
    "InsertionResult",
    "detection_power",
    "insertion_attack",
    "max_undetected_shift",
    "profile_power_bound",
    "profile_undetected_shift",
    "rate_distortion_insertion_variance",
]

#: Noise families the attack covers.
NOISES: tuple[str, ...] = ("laplace", "gaussian")


def _law(noise: str) -> Any:
    if noise not in NOISES:
        raise ParameterError("noise", noise, "'laplace' or 'gaussian'")
    return stats.laplace if noise == "laplace" else stats.norm


def _levels(false_alarm: float, detection: float) -> tuple[float, float]:
    a = as_probability("false_alarm", false_alarm, open_low=True, open_high=True)
    b = as_probability("detection", detection, open_low=True, open_high=True)
    return a, b


def detection_power(noise: str, scale: float, shift: float, false_alarm: float) -> float:
    """Power 1 − T(a) of the best size-a detector of a shift (Neyman–Pearson, exact).

    >>> round(detection_power("gaussian", 1.0, 0.0, 0.05), 12)
    0.05
    """
    law = _law(noise)
    scale = as_positive("scale", scale)
    a = as_probability("false_alarm", false_alarm)
    return float(law.sf(law.isf(a) - abs(shift) / scale))


def max_undetected_shift(noise: str, scale: float, false_alarm: float, detection: float) -> float:
    """Δ_max = scale·(F⁻¹(b) − F⁻¹(a)): the largest shift whose best detector has power ≤ b.

    >>> from scipy.stats import norm
    >>> abs(max_undetected_shift("gaussian", 2.0, 0.05, 0.5) - 2 * float(norm.isf(0.05))) < 1e-12
    True
    """
    law = _law(noise)
    scale = as_positive("scale", scale)
    a, b = _levels(false_alarm, detection)
    return max(0.0, scale * float(law.ppf(b) - law.ppf(a)))


def _profile(noise: str, scale: float, shift: float) -> PrivacyProfile:
    if noise == "laplace":
        return laplace_profile(scale, sensitivity=shift)
    return gaussian_profile(scale, sensitivity=shift)


_EPS_GRID = np.concatenate([[0.0], np.geomspace(1e-3, 50.0, 120)])


def profile_power_bound(noise: str, scale: float, shift: float, false_alarm: float) -> float:
    """Upper bound on any size-a detector's power from the (ε, δ(ε)) profile at shift Δ.

    >>> p = profile_power_bound("laplace", 1.0, 1.0, 0.05)   # pure ε = 1: e·a
    >>> p >= detection_power("laplace", 1.0, 1.0, 0.05) - 1e-12, p <= math.e * 0.05 + 1e-12
    (True, True)
    """
    a = as_probability("false_alarm", false_alarm)
    if shift <= 0:
        return a
    profile = _profile(noise, as_positive("scale", scale), shift)
    best = 1.0
    pure = profile.pure_epsilon()
    grid = _EPS_GRID if math.isinf(pure) else np.append(_EPS_GRID, pure)
    for eps in grid:
        d = profile.delta(float(eps))
        best = min(best, d + math.exp(eps) * a, 1.0 - math.exp(-eps) * (1.0 - d - a))
    return max(a, best)


def profile_undetected_shift(
    noise: str, scale: float, false_alarm: float, detection: float
) -> float:
    """The largest shift the (ε, δ) profile bound guarantees to keep power ≤ b (bisection)."""
    a, b = _levels(false_alarm, detection)
    if b <= a:
        return 0.0
    lo, hi = 0.0, max_undetected_shift(noise, scale, a, b) * 1.000001 + 1e-12
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        if profile_power_bound(noise, scale, mid, a) <= b:
            lo = mid
        else:
            hi = mid
    return lo


def rate_distortion_insertion_variance(
    noise_std: float, epsilon: float, delta: float, record_std: float
) -> float:
    """σ_adv² ≤ s²/(1 − s²/σ_X²), s² = σ_z² ε²/(2 ln(1.25/δ)) (Ünsal & Önen 2023, Eq. (63) at n = 1).

    ``inf`` when s ≥ σ_X (the rate–distortion function is zero: no constraint).

    >>> round(rate_distortion_insertion_variance(math.sqrt(2 * math.log(1.25e5)), 1.0, 1e-5, 2.0), 6)
    1.333333
    """  # noqa: E501
    sz = as_positive("noise_std", noise_std)
    eps = as_positive("epsilon", epsilon)
    dlt = as_probability("delta", delta, open_low=True, open_high=True)
    sx = as_positive("record_std", record_std)
    s2 = sz**2 * eps**2 / (2.0 * math.log(1.25 / dlt))
    if s2 >= sx**2:
        return math.inf
    return s2 / (1.0 - s2 / sx**2)


@dataclass(frozen=True)
class InsertionResult(AttackResult):
    """The three shifts (in units of the sum) and what the simulated detector saw."""

    noise: str
    epsilon: float
    delta: float
    scale: float = field(metadata=json_key("noise_scale"))
    false_alarm: float
    detection: float
    exact_shift: float
    profile_shift: float
    simulated_false_alarm: float
    simulated_power: float
    simulated_power_interval: tuple[float, float]
    profile_shift_power: float
    rd_insertion_std: float | None
    rd_detector_power: float | None
    rd_simulated_power: float | None
    trials: int

    def _summary(self) -> str:
        return (
            f"one inserted record can shift the sum by {self.exact_shift:.4g} while the best "
            f"detector at false-alarm {self.false_alarm:g} catches it with probability "
            f"{self.detection:g} (simulated {self.simulated_power:.4g}); the "
            f"(epsilon, delta) profile alone guarantees {self.profile_shift:.4g}"
        )


def insertion_attack(
    noise: str = "gaussian",
    *,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    sensitivity: float = 1.0,
    false_alarm: float = 0.05,
    detection: float = 0.5,
    record_std: float | None = None,
    trials: int = 200_000,
    rng: Any = None,
) -> InsertionResult:
    """Run the insertion analysis for a Laplace (scale Δ/ε) or Gaussian (analytic σ) sum.

    ``record_std`` (Gaussian only) is σ_X of an honest record for the rate–distortion view
    (default: the sensitivity).
    """
    law = _law(noise)
    eps = as_positive("epsilon", epsilon)
    sens = as_positive("sensitivity", sensitivity)
    a, b = _levels(false_alarm, detection)
    n = as_positive_int("trials", trials, minimum=100)
    gen = as_generator(rng)
    if noise == "laplace":
        scale, dlt = sens / eps, 0.0
    else:
        dlt = as_probability("delta", delta, open_low=True, open_high=True)
        scale = analytic_gaussian_sigma(eps, dlt, sens)
    exact = max_undetected_shift(noise, scale, a, b)
    guaranteed = profile_undetected_shift(noise, scale, a, b)
    threshold = scale * float(law.isf(a))
    draw = gen.laplace if noise == "laplace" else gen.normal
    h0 = draw(0.0, scale, size=n)
    h1 = exact + draw(0.0, scale, size=n)
    hits = int(np.count_nonzero(h1 > threshold))
    rd_std = rd_power = rd_sim = None
    if noise == "gaussian":
        sx = sens if record_std is None else as_positive("record_std", record_std)
        var = rate_distortion_insertion_variance(scale, eps, dlt, sx)
        if math.isfinite(var):
            rd_std = math.sqrt(var)
            v0 = sx**2 + scale**2
            t = math.sqrt(v0) * float(stats.norm.isf(a / 2))
            rd_power = float(2.0 * stats.norm.sf(t / math.sqrt(v0 + var)))
            y = gen.normal(0.0, math.sqrt(v0 + var), size=n)
            rd_sim = float(np.count_nonzero(np.abs(y) > t)) / n
    return InsertionResult(
        noise=noise,
        epsilon=eps,
        delta=dlt,
        scale=scale,
        false_alarm=a,
        detection=b,
        exact_shift=exact,
        profile_shift=guaranteed,
        simulated_false_alarm=float(np.count_nonzero(h0 > threshold)) / n,
        simulated_power=hits / n,
        simulated_power_interval=clopper_pearson(hits, n),
        profile_shift_power=detection_power(noise, scale, guaranteed, a),
        rd_insertion_std=rd_std,
        rd_detector_power=rd_power,
        rd_simulated_power=rd_sim,
        trials=n,
    )
