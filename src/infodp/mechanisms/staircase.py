"""The staircase mechanism (Geng & Viswanath), released exactly on a grid.

Geng & Viswanath ("The Optimal Noise-Adding Mechanism in Differential Privacy", IEEE Trans.
Inf. Theory 2016; Ünsal & Önen 2023 §staircase) show that the ε-DP noise minimising E|noise| has the
staircase density f(x) = a(γ) e^{−kε} on |x| ∈ [kΔ, (k+γ)Δ) and a(γ) e^{−(k+1)ε} on
|x| ∈ [(k+γ)Δ, (k+1)Δ), with optimal γ* = 1/(1 + e^{ε/2}) for the ℓ1 cost (their Theorem 7).

On a grid of spacing g = 2**-k with period m = ceil(Δ/g) + 1 units (the snapped sensitivity)
and step j = round(γ m) units, the discrete staircase P(n) ∝ w(|n|),
w(a) = e^{−ε(⌊a/m⌋ + [a mod m ≥ j])}, satisfies w(a)/w(a') ≤ e^ε whenever |a − a'| ≤ m, so
the release is exactly ε-DP for the snapped sensitivity. It is sampled exactly as
sign · (G·m + R): G geometric with ratio e^{−ε}, R uniform on the period thinned by
Bernoulli(e^{−ε}) on [j, m), both by CKS 2020 Algorithm 1 (Geng & Viswanath's own sampling
scheme, made discrete).

>>> m = StaircaseMechanism.calibrate(epsilon=1.0, sensitivity=1.0, grid=0.25)
>>> m.period, m.step, round(m.gamma, 6)
(5, 2, 0.377541)
>>> m.profile().pure_epsilon()
1.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp._validate import as_nonnegative, as_positive, as_probability
from infodp.accounting import PrivacyProfile, pure_dp_profile
from infodp.mechanisms.base import _SnappedReal, as_grid, tail_up
from infodp.mechanisms.sampling import bernoulli_exp, geometric_exp

__all__ = ["StaircaseMechanism", "optimal_gamma"]


def optimal_gamma(epsilon: float) -> float:
    """γ* = 1/(1 + e^{ε/2}), optimal for the ℓ1 cost (Geng & Viswanath 2016, Theorem 7).

    >>> optimal_gamma(0.0)
    0.5
    """
    eps = as_nonnegative("epsilon", epsilon)
    return 1.0 / (1.0 + math.exp(eps / 2))


@dataclass(frozen=True)
class StaircaseMechanism(_SnappedReal):
    """Staircase noise for a real value of sensitivity Δ, released on a grid (pure ε-DP).

    ``gamma`` None → :func:`optimal_gamma`; ``grid`` None → 2**(floor(log2 Δ) − 10).

    >>> from infodp.mechanisms.sampling import InsecureSeededSource
    >>> m = StaircaseMechanism(0.5, sensitivity=2.0, grid=0.5)
    >>> y = m.release(1.0, source=InsecureSeededSource(2, i_understand_this_is_not_private=True))
    >>> (2 * y).is_integer()
    True
    """

    epsilon: float
    sensitivity: float = 1.0
    gamma: float | None = None
    grid: float | None = None

    def __post_init__(self) -> None:
        eps = as_positive("epsilon", self.epsilon)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "sensitivity", as_positive("sensitivity", self.sensitivity))
        gamma = optimal_gamma(eps) if self.gamma is None else self.gamma
        object.__setattr__(self, "gamma", as_probability("gamma", gamma))
        object.__setattr__(self, "grid", as_grid(self.grid, self.sensitivity))

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        delta: float = 0.0,
        sensitivity: float = 1.0,
        grid: float | None = None,
    ) -> StaircaseMechanism:
        """The ℓ1-optimal staircase for ``epsilon`` (exactly ε; ``delta`` unused, pure DP)."""
        as_nonnegative("delta", delta)
        return cls(epsilon, sensitivity, None, grid)

    @property
    def period(self) -> int:
        """m = ceil(Δ/grid) + 1 grid units: the snapped sensitivity."""
        return self.integer_sensitivity

    @property
    def step(self) -> int:
        """j = round(γ m) clamped to [1, m]: the width of the high stair of each period."""
        gamma = self.gamma if self.gamma is not None else optimal_gamma(self.epsilon)
        return min(self.period, max(1, round(gamma * self.period)))

    def profile(self) -> PrivacyProfile:
        """``pure_dp_profile(epsilon)``: the discrete staircase is exactly ε-DP."""
        return pure_dp_profile(self.epsilon)

    def _log_w(self, a: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        m, j = self.period, self.step
        stairs = a // m + (a % m >= j)
        return -self.epsilon * stairs.astype(np.float64)

    def _log_z(self) -> float:
        # Z = 2S − 1, S = Σ_{a≥0} w(a) = (j + (m − j) e^{−ε}) / (1 − e^{−ε})
        m, j, b = self.period, self.step, math.exp(-self.epsilon)
        s = (j + (m - j) * b) / -math.expm1(-self.epsilon)
        return math.log(2 * s - 1)

    def _noise_pmf(self, k: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        return np.exp(self._log_w(np.abs(k)) - self._log_z())

    def _noise_tail(self, k: int) -> float:
        # Σ_{a≥k} w(a) = b^K [max(0, j − r) + (m − max(r, j)) b] + b^{K+1} S, K = k div m,
        # over Z, rounded up
        m, j, b = self.period, self.step, math.exp(-self.epsilon)
        big_k, r = divmod(k, m)
        s = (j + (m - j) * b) / -math.expm1(-self.epsilon)
        block = max(0, j - r) + (m - max(r, j)) * b
        return tail_up(math.exp(-self.epsilon * big_k - self._log_z()) * (block + b * s))

    def _exact_noise(self, source: Any) -> int:
        eps = Fraction(self.epsilon)
        m, j = self.period, self.step
        while True:
            g = geometric_exp(eps, source)
            while True:
                r = source.randbelow(m)
                if r < j or bernoulli_exp(eps, source):
                    break
            a = g * m + r
            negative = source.bernoulli(1, 2)
            if negative and a == 0:
                continue
            return int(-a if negative else a)

    def _fast_noise(self, size: int, gen: np.random.Generator) -> npt.NDArray[np.int64]:
        m, j = self.period, self.step
        out = np.empty(0, dtype=np.int64)
        weights = np.where(np.arange(m) < j, 1.0, math.exp(-self.epsilon))
        weights /= weights.sum()
        while out.size < size:
            n = 2 * (size - out.size) + 8
            g = gen.geometric(-math.expm1(-self.epsilon), size=n) - 1
            r = gen.choice(m, size=n, p=weights)
            a = g * m + r
            sign = gen.integers(0, 2, size=n)
            keep = ~((sign == 1) & (a == 0))
            out = np.concatenate([out, np.where(sign[keep] == 1, -a[keep], a[keep])])
        return out[:size].astype(np.int64)
