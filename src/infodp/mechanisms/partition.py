"""DP partition selection: release a group only when its noisy count clears a threshold.

A unit adds or removes at most ``max_partitions`` groups, each with a count of at most
``max_contribution``. Each group's count gets discrete Laplace noise of ``scale``; a group is
released only when the noisy count reaches τ. A group present on one side only is released
with probability P(m + Y ≥ τ), so choosing τ with k·P(m + Y ≥ τ) ≤ δ makes the released key
set, with the counts, (ε, δ)-DP, ε = m/scale (Korolova, Kenthapadi, Mishra & Ntoulas 2009;
Wilson, Zhang, Lam, Desfontaines, Simmons-Marengo & Gipson 2020, Section 3).

>>> from fractions import Fraction
>>> s = PartitionSelection(10.0, max_partitions=1, max_contribution=1, delta=Fraction(1, 10**6))
>>> s.threshold()  # 1 + ⌈10·(ln 10⁶ − ln(1 + e^−0.1))⌉
133
>>> abs(s.profile().delta(0.11) - 1e-6) < 1e-18  # (ε, δ) = (m/scale, δ)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from infodp._exact import float_up as _up
from infodp.errors import ParameterError
from infodp.mechanisms.base import MIN_TAIL_TARGET, ChannelView, Mechanism
from infodp.mechanisms.laplace import DiscreteLaplaceMechanism

if TYPE_CHECKING:
    from infodp.accounting import PrivacyProfile

__all__ = ["PartitionSelection"]


@dataclass(frozen=True)
class PartitionSelection(Mechanism):
    """Noisy counts per group (discrete Laplace of ``scale``) kept above a δ-threshold."""

    scale: float
    max_partitions: int = 1
    max_contribution: int = 1
    delta: Fraction = Fraction(1, 10**6)

    def __post_init__(self) -> None:
        for name in ("max_partitions", "max_contribution"):
            v = getattr(self, name)
            if isinstance(v, bool) or not (isinstance(v, int) and v >= 1):
                raise ParameterError(name, v, "an integer >= 1")
        d = Fraction(self.delta)
        if not 0 < d < 1:
            raise ParameterError("delta", float(d), "a probability in (0, 1)")
        if d / self.max_partitions < Fraction(MIN_TAIL_TARGET):
            raise ParameterError(
                "delta",
                float(d),
                f"a probability with delta/max_partitions ≥ {MIN_TAIL_TARGET:g} (the threshold "
                "is found on float tail bounds)",
            )
        object.__setattr__(self, "delta", d)
        object.__setattr__(self, "scale", self.counts.scale)

    @property
    def counts(self) -> DiscreteLaplaceMechanism:
        """The count mechanism: discrete Laplace of ``scale``, L1 sensitivity m."""
        return DiscreteLaplaceMechanism(self.scale, self.max_contribution)

    def threshold(self) -> int:
        """The smallest τ with k·P(m + Y ≥ τ) ≤ δ (P(Y ≥ j) = q^j/(1 + q), j ≥ 1)."""
        return _threshold(self.scale, self.max_partitions, self.max_contribution, self.delta)

    def profile(self) -> PrivacyProfile:
        """(ε, δ) with ε = m/scale rounded up and δ the threshold's (an approximate-DP profile).

        The key set and the counts together: the counts are ε-DP on the groups both sides
        have; a group on one side only is released with probability at most δ/k.
        """
        from infodp.accounting import approximate_dp_profile

        eps = self.counts.profile().pure_epsilon()
        return approximate_dp_profile(eps, _up(self.delta))

    def release(self, value: Any, *, source: Any = None) -> dict[Any, int]:
        """``value``: {key: exact count}; the released {key: noisy count} above τ."""
        keys = sorted(value)
        noisy = self.counts.release_batch([int(value[k]) for k in keys], source=source)
        tau = self.threshold()
        return {k: n for k, n in zip(keys, noisy, strict=True) if n >= tau}

    def simulate(self, value: Any, size: int, rng: Any = None) -> Any:
        """Simulation only, NOT private: ``size`` draws of the noisy count of ``value``."""
        return self.counts.simulate(int(value), size, rng)

    def channel(self, inputs: Any, **kw: Any) -> ChannelView:
        """The channel of one group's noisy count (before thresholding, a post-processing)."""
        return self.counts.channel(inputs, **kw)


def _threshold(scale: float, k: int, m: int, delta: Fraction) -> int:
    target = float(delta) / k
    lap = DiscreteLaplaceMechanism(scale)
    j = max(1, math.ceil(scale * (math.log(1 / target) - math.log1p(math.exp(-1 / scale)))))
    while lap.upper_tail(j) > target:
        j += 1
    while j > 1 and lap.upper_tail(j - 1) <= target:
        j -= 1
    return m + j
