"""What a synthetic release guarantees: ρ-zCDP, as a profile :func:`infodp.explain.explain`
can read (leakage in bits per person beside ε and δ).

A ρ-zCDP release has Rényi divergence at most αρ at every order α > 1 (Bun & Steinke 2016,
Definition 1.1), hence KL ≤ ρ nats per person (the limit α → 1) and collision leakage ≤ 2ρ; it is
(ε, δ)-DP for the ε of :func:`~infodp.accounting.conversions.zcdp_to_epsilon`; a group of k
people is k²ρ-zCDP (Bun & Steinke 2016, Proposition 1.9). Nothing tighter than these is
claimed, whatever the mechanisms inside.

>>> from infodp.explain import explain
>>> e = explain(ZCDPGuarantee(0.5), delta=1e-6)
>>> round(e.bits["1"], 4), e.bits["inf"] is None
(0.7213, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from infodp.accounting.conversions import zcdp_to_delta, zcdp_to_epsilon

__all__ = ["ZCDPGuarantee"]


@dataclass(frozen=True, slots=True)
class ZCDPGuarantee:
    """Any ρ-zCDP mechanism (the bounds ρ alone implies)."""

    rho: float

    def pure_epsilon(self) -> float:
        """No pure ε: zCDP bounds no worst case."""
        return math.inf

    def rdp(self, alpha: float) -> float:
        """αρ (Bun & Steinke 2016, Definition 1.1)."""
        return float(alpha) * self.rho

    def information(self, alpha: float) -> float:
        """The capacity C_α is at most the Rényi diameter αρ."""
        return self.rdp(max(float(alpha), 1.0))

    def delta(self, epsilon: float) -> float:
        """Certified δ(ε) (Canonne, Kamath & Steinke 2020, Proposition 12)."""
        return zcdp_to_delta(self.rho, epsilon)

    def epsilon(self, delta: float) -> float:
        """Certified ε(δ) (the better of Bun & Steinke 2016, Prop. 1.3, and CKS 2020)."""
        return zcdp_to_epsilon(self.rho, delta)

    def group(self, k: int) -> ZCDPGuarantee:
        """k²ρ (Bun & Steinke 2016, Proposition 1.9)."""
        return ZCDPGuarantee(self.rho * int(k) ** 2)
