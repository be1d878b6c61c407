"""The Gaussian mechanism (released securely on a grid) and the discrete Gaussian.

Calibration:

* **analytic** (Balle & Wang 2018, "Improving the Gaussian Mechanism for Differential
  Privacy", ICML, Theorem 8 / Algorithm 1): N(0, σ²) with L2 sensitivity Δ is (ε, δ)-DP iff
  δ ≥ Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ); the least such σ is found by bisection and
  rounded up. Valid for every ε ≥ 0.
* **classic** (Dwork & Roth 2014, Theorem A.1): σ = Δ√(2 ln(1.25/δ))/ε, proved for
  ε ∈ (0, 1); by continuity of δ(ε) in ε it also holds at ε = 1. For ε > 1 the proof does not
  apply and the formula is refused (:class:`~infodp.errors.ParameterError`).

The secure release snaps to a grid 2**-k and adds discrete Gaussian noise N_Z(0, (σ/grid)²)
drawn exactly (Canonne, Kamath & Steinke 2020, Algorithm 3) with the sensitivity inflated to
ceil(Δ/grid) + 1 units; its profile is ``discrete_gaussian_profile(σ/grid, that)`` and
:meth:`GaussianMechanism.calibrate` solves for that profile, rounding σ up.

>>> round(analytic_gaussian_sigma(1.0, 1e-5), 4)
3.7306
>>> round(classic_gaussian_sigma(1.0, 1e-5), 4)
4.8448
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy import special

from infodp._validate import as_nonnegative, as_positive, as_positive_int, as_probability
from infodp.accounting import discrete_gaussian_profile, gaussian_profile
from infodp.accounting.discrete_gaussian import EXACT_SIGMA, cdf_upper, pmf
from infodp.errors import ParameterError
from infodp.mechanisms.base import (
    NoiseFamily,
    _IntegerFamily,
    _SnappedFamily,
    as_grid,
    grid_sensitivity,
    round_up,
    tail_up,
)
from infodp.mechanisms.sampling import (
    discrete_gaussian,
    discrete_gaussian_batch,
    simulate_discrete_gaussian,
)

__all__ = [
    "DiscreteGaussianMechanism",
    "GaussianMechanism",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "gaussian_delta",
]


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """The exact δ(ε) of the Gaussian mechanism N(0, σ²) with L2 sensitivity Δ.

    Balle & Wang (2018), Theorem 8: δ = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ), evaluated
    as Φ(a)·(−expm1(ε + log Φ(b) − log Φ(a))) so that tiny δ keeps its digits.

    >>> round(gaussian_delta(1.0, 0.0), 6)   # ε = 0: total variation 2Φ(1/2) − 1
    0.382925
    """
    s = as_positive("sigma", sigma)
    eps = as_nonnegative("epsilon", epsilon)
    d = as_positive("sensitivity", sensitivity)
    a = d / (2 * s) - eps * s / d
    b = -d / (2 * s) - eps * s / d
    log_pa = float(special.log_ndtr(a))
    log_pb = float(special.log_ndtr(b))
    diff = eps + log_pb - log_pa
    if diff >= 0:  # only by rounding: the true value is < 0
        return 0.0
    return max(0.0, math.exp(log_pa) * -math.expm1(diff))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The least σ with :func:`gaussian_delta` (σ, ε, Δ) ≤ δ, rounded up (Balle & Wang 2018).

    Bisection on log σ (δ is decreasing in σ); the returned end always meets the target.

    >>> s = analytic_gaussian_sigma(0.5, 1e-6, sensitivity=2.0)
    >>> gaussian_delta(s, 0.5, 2.0) <= 1e-6
    True
    """
    eps = as_nonnegative("epsilon", epsilon)
    dlt = as_probability("delta", delta, open_low=True, open_high=True)
    d = as_positive("sensitivity", sensitivity)
    lo, hi = d * 1e-3, d
    while gaussian_delta(hi, eps, d) > dlt:
        lo, hi = hi, hi * 2
        if hi > d * 1e12:
            raise ParameterError("delta", delta, "a δ reachable with σ ≤ 1e12·Δ")
    while gaussian_delta(lo, eps, d) <= dlt:
        lo /= 2
        if lo < d * 1e-12:
            return lo
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if mid in (lo, hi):
            break
        if gaussian_delta(mid, eps, d) <= dlt:
            hi = mid
        else:
            lo = mid
    return hi


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """σ = Δ√(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Theorem A.1), for 0 < ε ≤ 1 only.

    Rounded up by one ulp. Refused for ε > 1, where the theorem does not hold.

    >>> classic_gaussian_sigma(2.0, 1e-5)
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: epsilon must be in (0, 1] for the classic Gaussian calibration (Dwork & Roth 2014, Theorem A.1); use the analytic calibration; got 2.0.
    """  # noqa: E501
    eps = as_positive("epsilon", epsilon)
    dlt = as_probability("delta", delta, open_low=True, open_high=True)
    d = as_positive("sensitivity", sensitivity)
    if eps > 1:
        raise ParameterError(
            "epsilon",
            epsilon,
            "in (0, 1] for the classic Gaussian calibration (Dwork & Roth 2014, Theorem A.1); "
            "use the analytic calibration",
        )
    sigma = d * math.sqrt(2 * math.log(1.25 / dlt)) / eps
    return math.nextafter(sigma, math.inf)


#: The noise pmf (kept under this name for the subsampled Gaussian, which imports it).
_dgauss_pmf = pmf


def _dgauss_tail(sigma: float, k: int) -> float:
    """An upper bound on P[N ≥ k] for N ~ N_Z(0, σ²), memory and time bounded for every σ, k.

    σ ≤ 4096: the direct sum up to k + 40σ + 40 (the remainder is below e^{-800}). Above,
    P[N ≥ k] = P[N ≤ −k] by symmetry, bounded above in closed form (Euler-Maclaurin and the
    Poisson-summation normaliser, :func:`infodp.accounting.discrete_gaussian.cdf_upper`; relative
    error below 1e-12 there). Either is rounded up (:func:`~infodp.mechanisms.base.tail_up`),
    and for k ≥ 1 the least of it and e^(−k²/(2σ²)) (rounded up too) is returned: the discrete
    Gaussian is σ-subgaussian (Canonne, Kamath & Steinke 2020, Corollary 9).

    >>> _dgauss_tail(1e7, 1) <= 0.5 + 1e-7, abs(_dgauss_tail(1e7, 19_599_640) - 0.025) < 1e-6
    (True, True)
    """
    if sigma > EXACT_SIGMA:
        numeric = float(cdf_upper(sigma, np.array([-float(k)]))[0])
    else:
        ks = np.arange(k, k + math.ceil(40 * sigma) + 40, dtype=np.int64)
        numeric = math.fsum(_dgauss_pmf(sigma, ks).tolist())
    tail = tail_up(numeric)
    if k >= 1:
        tail = min(tail, tail_up(math.exp(-(k * k) / (2.0 * sigma * sigma))))
    return tail


def _solve_sigma(
    profile_of: Any, epsilon: float, delta: float, sensitivity: float, method: str
) -> float:
    if method == "analytic":
        start = analytic_gaussian_sigma(epsilon, delta, sensitivity)
    elif method == "classic":
        start = classic_gaussian_sigma(epsilon, delta, sensitivity)
    else:
        raise ParameterError("method", method, "'analytic' or 'classic'")
    return round_up(
        lambda s: (
            profile_of(s).delta(epsilon) <= delta
            and gaussian_delta(s, epsilon, sensitivity) <= delta
        ),
        start,
        "sigma",
        rel=1e-7,
    )


#: N_Z noise: the secure release of both Gaussian mechanisms.
_GAUSSIAN = NoiseFamily(
    pmf,
    _dgauss_tail,
    discrete_gaussian,
    simulate_discrete_gaussian,
    discrete_gaussian_profile,
    gaussian_profile,
)


@dataclass(frozen=True)
class GaussianMechanism(_SnappedFamily):
    """Gaussian noise N(0, σ²) for a real value of L2 ``sensitivity``, released on a grid.

    ``grid`` is a power of two (None: 2**(floor(log2 Δ) − 10)). The release is
    ``grid·(round(x/grid) + N)`` with N ~ N_Z(0, (σ/grid)²) exactly; ``profile()`` is
    ``discrete_gaussian_profile(σ/grid, ceil(Δ/grid) + 1)``.

    >>> m = GaussianMechanism.calibrate(epsilon=1.0, delta=1e-5)
    >>> m.profile().delta(1.0) <= 1e-5
    True
    >>> round(m.sigma / analytic_gaussian_sigma(1.0, 1e-5), 3)   # +0.1% for the grid
    1.001
    """

    sigma: float
    sensitivity: float = 1.0
    grid: float | None = None

    _family = _GAUSSIAN
    _parameter = "sigma"

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        delta: float,
        sensitivity: float = 1.0,
        grid: float | None = None,
        method: str = "analytic",
    ) -> GaussianMechanism:
        """The mechanism whose secure release is (ε, δ)-DP, σ rounded up.

        Starts from the analytic (Balle & Wang 2018) or classic (Dwork & Roth 2014,
        ε ≤ 1 only) σ for the inflated sensitivity (ceil(Δ/g) + 1)·g and raises σ until the
        release profile's δ(ε) ≤ δ.
        """
        eps = as_positive("epsilon", epsilon)
        dlt = as_probability("delta", delta, open_low=True, open_high=True)
        d = as_positive("sensitivity", sensitivity)
        g = as_grid(grid, d)
        effective = grid_sensitivity(d, g) * g
        sigma = _solve_sigma(lambda s: cls(s, d, g).profile(), eps, dlt, effective, method)
        return cls(sigma, d, g)

    @property
    def grid_sigma(self) -> float:
        """σ in grid units, σ/grid (exact: grid is a power of two)."""
        return self._noise_parameter


@dataclass(frozen=True)
class DiscreteGaussianMechanism(_IntegerFamily):
    """Discrete Gaussian noise N_Z(0, σ²) for an integer value (Canonne, Kamath & Steinke 2020).

    >>> m = DiscreteGaussianMechanism.calibrate(epsilon=1.0, delta=1e-5)
    >>> m.profile().delta(1.0) <= 1e-5, m.sigma >= analytic_gaussian_sigma(1.0, 1e-5)
    (True, True)
    >>> 1.95e7 < DiscreteGaussianMechanism(1e7).halfwidth(0.05) < 1.97e7  # ≈ 1.96σ
    True
    """

    sigma: float
    sensitivity: int = 1

    _family = _GAUSSIAN
    _parameter = "sigma"

    @classmethod
    def calibrate(
        cls, epsilon: float, delta: float, sensitivity: int = 1, method: str = "analytic"
    ) -> DiscreteGaussianMechanism:
        """σ meeting (ε, δ) for the discrete Gaussian's own profile (CKS 2020), rounded up.

        Starts from the continuous calibration and raises σ until both the discrete profile
        and the continuous formula meet δ (the discrete Gaussian can be slightly *less*
        private than the continuous one at small σ).
        """
        eps = as_positive("epsilon", epsilon)
        dlt = as_probability("delta", delta, open_low=True, open_high=True)
        d = as_positive_int("sensitivity", sensitivity)
        sigma = _solve_sigma(lambda s: cls(s, d).profile(), eps, dlt, float(d), method)
        return cls(sigma, d)

    def _exact_noise_batch(self, size: int, source: Any) -> list[int]:
        return discrete_gaussian_batch(Fraction(self.sigma), size, source)
