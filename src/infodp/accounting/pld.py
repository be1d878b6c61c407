"""Privacy loss distributions (PLDs) with pessimistic discretisation (placeholder)."""

from __future__ import annotations

__all__ = ["PrivacyLossDistribution"]


class PrivacyLossDistribution:
    """Placeholder: the pessimistic PLD lands in the next commit."""

    def __getattr__(self, name: str) -> object:
        raise NotImplementedError(name)
