"""A design problem: a prior on the inputs (or the worst case) and a distortion matrix.

>>> p = as_problem([0.5, 0.5], "hamming")
>>> p.smallest_distortion, p.zero_leakage_distortion
(0.0, 0.5)
>>> p.check_max_distortion(-0.1)
Traceback (most recent call last):
    ...
infodp.errors.ParameterError: max_distortion must be at least the smallest achievable expected distortion 0; got -0.1.
"""  # noqa: E501

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from infodp._validate import as_probability_vector, as_real
from infodp.channel import Channel
from infodp.design.distortion import as_distortion
from infodp.design.result import FloatArray
from infodp.errors import ParameterError

__all__ = ["Problem", "as_problem"]


@dataclass(frozen=True)
class Problem:
    """``prior`` (``None`` = every input must meet the budget) and ``distortion`` (n × m)."""

    prior: FloatArray | None
    distortion: FloatArray

    def _average(self, per_row: FloatArray) -> float:
        if self.prior is None:
            return float(per_row.max())
        return math.fsum((self.prior * per_row).tolist())

    @property
    def smallest_distortion(self) -> float:
        """The least achievable distortion (each input sent to its closest output)."""
        return self._average(self.distortion.min(axis=1))

    @property
    def zero_leakage_distortion(self) -> float:
        """The distortion of the best constant output: beyond it nothing need leak."""
        d = self.distortion
        if self.prior is None:
            return float(d.max(axis=0).min())
        return float((self.prior @ d).min())

    def constant_channel(self) -> Channel:
        """Every input reported as the one output that minimises the expected distortion."""
        d = self.distortion
        cost = d.max(axis=0) if self.prior is None else self.prior @ d
        W = np.zeros_like(d)
        W[:, int(np.argmin(cost))] = 1.0
        return Channel(W)

    def deterministic_channel(self) -> Channel:
        """Each input sent to its closest output (the least-distortion channel)."""
        d = self.distortion
        W = np.zeros_like(d)
        W[np.arange(d.shape[0]), d.argmin(axis=1)] = 1.0
        return Channel(W)

    def check_max_distortion(self, value: Any) -> float:
        """``value`` as a budget D; refuses D below :attr:`smallest_distortion`."""
        D = as_real("max_distortion", value)
        floor = self.smallest_distortion
        if floor - 1e-12 * (1.0 + abs(floor)) > D:
            raise ParameterError(
                "max_distortion",
                D,
                f"at least the smallest achievable expected distortion {floor:.6g}",
            )
        return max(D, floor)


def as_problem(prior: Any, distortion: Any) -> Problem:
    """Validate a prior (a probability vector or ``None``) and a distortion against it.

    With ``prior=None`` a named distortion needs its alphabet size: pass a matrix, or the
    prior's length through :func:`~infodp.design.distortion.distortion_matrix`.
    """
    if prior is None:
        if isinstance(distortion, str):
            raise ParameterError(
                "distortion", distortion, "a matrix when prior is None (the alphabet size)"
            )
        d = np.asarray(distortion, dtype=np.float64)
        return Problem(None, as_distortion(d, d.shape[0] if d.ndim == 2 else 0))
    p = as_probability_vector("prior", prior)
    return Problem(p, as_distortion(distortion, p.size))
