"""The exponential mechanism and report-noisy-max (Gumbel / exponential noise = permute-and-flip).

* Exponential mechanism (McSherry & Talwar 2007; Dwork & Roth 2014, Theorem 3.10): output
  candidate r with probability ∝ exp(ε u(r) / (2Δu)); ε-DP for utilities of sensitivity Δu.
  For *monotone* utilities (every u(r) moves in the same direction between neighbours) the
  factor ε/Δu suffices (Dwork & Roth 2014, remark after Theorem 3.10) — offered only with an
  explicit ``monotone=True``.
* Report-noisy-max with Gumbel(2Δu/ε) noise has exactly the exponential mechanism's law
  (the Gumbel-max trick; Dwork & Roth 2014, §3.4). With Exponential(2Δu/ε) noise it equals
  permute-and-flip (McKenna & Sheldon 2020; Ding, Kifer, Steinke et al. 2021,
  "The Permute-and-Flip Mechanism is Identical to Report-Noisy-Max with Exponential Noise"),
  which is ε-DP and never worse in expected utility.

Both releases are exact: scores are converted to Fractions (floats are dyadic rationals), and
acceptance probabilities exp(−c(u* − u_r)) are drawn by CKS 2020 Algorithm 1.

>>> em = ExponentialMechanism(2.0)
>>> em.probabilities([0.0, 1.0]).round(6).tolist()   # ∝ e^{0}, e^{ε/2}
[0.268941, 0.731059]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import logsumexp

from infodp._validate import as_positive, as_positive_int, as_real
from infodp.accounting import PrivacyProfile, pure_dp_profile
from infodp.errors import ParameterError
from infodp.mechanisms.base import ChannelView, Mechanism
from infodp.mechanisms.sampling import as_generator, bernoulli_exp, require_secure_source

__all__ = ["ExponentialMechanism", "ReportNoisyMax", "permute_and_flip_probabilities"]


def _scores(scores: Any) -> list[float]:
    try:
        values = [as_real("scores", s) for s in scores]
    except TypeError:
        raise ParameterError("scores", scores, "a non-empty sequence of finite numbers") from None
    if not values:
        raise ParameterError("scores", scores, "a non-empty sequence of finite numbers")
    return values


def permute_and_flip_probabilities(
    scores: Sequence[float], factor: float
) -> npt.NDArray[np.float64]:
    """Exact output law of permute-and-flip with acceptance exp(factor·(u_r − u*)).

    P(r) = p_r Σ_j e_j({1 − p_s : s ≠ r}) j!(n − 1 − j)!/n!: r is reached when the j
    candidates placed before it (any j-set, probability j!(n−1−j)!/n!) were all rejected
    (McKenna & Sheldon 2020, Algorithm 1).

    >>> permute_and_flip_probabilities([0.0, 0.0], 1.0).round(6).tolist()
    [0.5, 0.5]
    """
    u = np.asarray(_scores(scores))
    n = u.size
    p = np.exp(factor * (u - u.max()))
    weights = np.array(
        [math.exp(math.lgamma(j + 1) + math.lgamma(n - j) - math.lgamma(n + 1)) for j in range(n)]
    )
    out = np.empty(n)
    for r in range(n):
        e = np.zeros(n)
        e[0] = 1.0
        for s in range(n):
            if s != r:
                e[1:] = e[1:] + (1 - p[s]) * e[:-1]
        out[r] = p[r] * float(np.dot(e, weights))
    return np.asarray(out / out.sum(), dtype=np.float64)


def _check_neighbours(
    utilities: Sequence[Sequence[float]], sensitivity: float
) -> list[list[float]]:
    rows = [_scores(u) for u in utilities]
    if not rows or len({len(r) for r in rows}) != 1:
        raise ParameterError("utilities", utilities, "utility vectors of one common length")
    arr = np.array(rows)
    spread = float(np.max(arr.max(axis=0) - arr.min(axis=0)))
    if spread > sensitivity:
        raise ParameterError(
            "utilities",
            "<utility vectors>",
            f"vectors whose entries differ by at most the sensitivity {sensitivity:g} "
            "(neighbouring datasets)",
        )
    return rows


@dataclass(frozen=True)
class ExponentialMechanism(Mechanism):
    """Pick a candidate with probability ∝ exp(factor · utility); ε-DP.

    factor = ε/(2Δu), or ε/Δu when ``monotone=True`` (valid only for monotone utilities).

    >>> from infodp.mechanisms.sampling import InsecureSeededSource
    >>> src = InsecureSeededSource(0, i_understand_this_is_not_private=True)
    >>> ExponentialMechanism(50.0).release([0.0, 10.0, 3.0], source=src)
    1
    """

    epsilon: float
    utility_sensitivity: float = 1.0
    monotone: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", as_positive("epsilon", self.epsilon))
        object.__setattr__(
            self,
            "utility_sensitivity",
            as_positive("utility_sensitivity", self.utility_sensitivity),
        )
        if not isinstance(self.monotone, bool):
            raise ParameterError("monotone", self.monotone, "True or False")

    @classmethod
    def calibrate(
        cls, epsilon: float, delta: float = 0.0, sensitivity: float = 1.0, monotone: bool = False
    ) -> ExponentialMechanism:
        """The exponential mechanism at exactly ``epsilon`` (pure DP; ``delta`` unused)."""
        return cls(epsilon, sensitivity, monotone)

    def _factor(self) -> Fraction:
        eps, du = Fraction(self.epsilon), Fraction(self.utility_sensitivity)
        return eps / du if self.monotone else eps / (2 * du)

    def probabilities(self, scores: Sequence[float]) -> npt.NDArray[np.float64]:
        """The output law: softmax(factor · scores), in the log domain."""
        z = float(self._factor()) * np.asarray(_scores(scores))
        return np.asarray(np.exp(z - logsumexp(z)), dtype=np.float64)

    def profile(self) -> PrivacyProfile:
        """``pure_dp_profile(epsilon)``."""
        return pure_dp_profile(self.epsilon)

    def release(self, value: Any, *, source: Any = None) -> int:
        """Index of the chosen candidate for the utility vector ``value`` (exact sampler).

        Rejection: a uniform candidate r is accepted with probability exp(−c(u* − u_r)).
        """
        u = [Fraction(s) for s in _scores(value)]
        src = require_secure_source(source)
        c, top = self._factor(), max(u)
        while True:
            r = src.randbelow(len(u))
            if bernoulli_exp(c * (top - u[r]), src):
                return r

    def simulate(self, value: Any, size: int, rng: Any = None) -> npt.NDArray[np.int64]:
        """Simulation only, NOT private: ``size`` numpy draws of the chosen index."""
        n = as_positive_int("size", size, minimum=0)
        p = self.probabilities(value)
        return np.asarray(as_generator(rng).choice(p.size, size=n, p=p), dtype=np.int64)

    def channel(self, utilities: Sequence[Sequence[float]]) -> ChannelView:
        """Exact channel: one row per neighbouring dataset's utility vector."""
        from infodp.channel import Channel

        rows = _check_neighbours(utilities, self.utility_sensitivity)
        matrix = np.array([self.probabilities(r) for r in rows])
        return ChannelView(Channel(matrix, outputs=list(range(matrix.shape[1]))), 0.0, "exact")


@dataclass(frozen=True)
class ReportNoisyMax(Mechanism):
    """Report the argmax of scores plus noise of scale 2Δ/ε; ε-DP.

    ``noise="gumbel"`` has the exponential mechanism's law; ``noise="exponential"`` is
    permute-and-flip (released by that algorithm, exactly).

    >>> rnm = ReportNoisyMax(1.0, noise="exponential")
    >>> rnm.probabilities([0.0, 0.0, 0.0]).round(6).tolist()
    [0.333333, 0.333333, 0.333333]
    """

    epsilon: float
    sensitivity: float = 1.0
    noise: str = "exponential"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", as_positive("epsilon", self.epsilon))
        object.__setattr__(self, "sensitivity", as_positive("sensitivity", self.sensitivity))
        if self.noise not in ("gumbel", "exponential"):
            raise ParameterError("noise", self.noise, "'gumbel' or 'exponential'")

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        delta: float = 0.0,
        sensitivity: float = 1.0,
        noise: str = "exponential",
    ) -> ReportNoisyMax:
        """Report-noisy-max at exactly ``epsilon`` (pure DP; ``delta`` unused)."""
        return cls(epsilon, sensitivity, noise)

    def _factor(self) -> Fraction:
        return Fraction(self.epsilon) / (2 * Fraction(self.sensitivity))

    def probabilities(self, scores: Sequence[float]) -> npt.NDArray[np.float64]:
        """The exact output law (softmax for Gumbel, permute-and-flip for exponential)."""
        if self.noise == "gumbel":
            return ExponentialMechanism(self.epsilon, self.sensitivity).probabilities(scores)
        return permute_and_flip_probabilities(scores, float(self._factor()))

    def profile(self) -> PrivacyProfile:
        """``pure_dp_profile(epsilon)`` (McKenna & Sheldon 2020, Theorem 1 for PF)."""
        return pure_dp_profile(self.epsilon)

    def release(self, value: Any, *, source: Any = None) -> int:
        """Index of the reported candidate (exact; secure source)."""
        if self.noise == "gumbel":
            mech = ExponentialMechanism(self.epsilon, self.sensitivity)
            return mech.release(value, source=source)
        u = [Fraction(s) for s in _scores(value)]
        src = require_secure_source(source)
        c, top = self._factor(), max(u)
        order = list(range(len(u)))
        for i in range(len(order) - 1, 0, -1):  # Fisher-Yates with exact uniform draws
            j = src.randbelow(i + 1)
            order[i], order[j] = order[j], order[i]
        for r in order:
            if bernoulli_exp(c * (top - u[r]), src):
                return r
        raise ParameterError("scores", value, "finite scores (the best one is always accepted)")

    def simulate(self, value: Any, size: int, rng: Any = None) -> npt.NDArray[np.int64]:
        """Simulation only, NOT private: argmax of scores + numpy noise, ``size`` times."""
        n = as_positive_int("size", size, minimum=0)
        u = np.asarray(_scores(value))
        gen = as_generator(rng)
        scale = 2 * self.sensitivity / self.epsilon
        if self.noise == "gumbel":
            noise = gen.gumbel(0.0, scale, size=(n, u.size))
        else:
            noise = gen.exponential(scale, size=(n, u.size))
        return np.asarray(np.argmax(u + noise, axis=1), dtype=np.int64)

    def channel(self, utilities: Sequence[Sequence[float]]) -> ChannelView:
        """Exact channel: one row per neighbouring dataset's score vector."""
        from infodp.channel import Channel

        rows = _check_neighbours(utilities, self.sensitivity)
        matrix = np.array([self.probabilities(r) for r in rows])
        return ChannelView(Channel(matrix, outputs=list(range(matrix.shape[1]))), 0.0, "exact")
