"""What every attack's result shares: its fields as JSON, then a one-line summary."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from infodp._jsonable import FieldsJSON

__all__ = ["AttackResult"]


class AttackResult(FieldsJSON, ABC):
    """A frozen attack outcome: ``to_dict`` lists its fields in order, then ``"summary"``."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {**super().to_dict(), "summary": self._summary()}

    @abstractmethod
    def _summary(self) -> str:
        """The outcome in one sentence."""
