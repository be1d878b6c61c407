"""The result of a design: the channel, the certified objective bracket, the distortion.

>>> import numpy as np
>>> from infodp.channel import Channel
>>> r = DesignResult("epsilon", None, 1.0, 1.0, Channel.randomized_response(2, 1.0),
...                  0.27, 0.3, np.array([0.5, 0.5]), "closed form", True)
>>> sorted(r.to_dict())[:4]
['alpha', 'channel', 'converged', 'distortion']
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp.channel import Channel
from infodp.errors import InternalError

__all__ = ["OBJECTIVES", "DesignResult", "repair_channel"]

FloatArray = npt.NDArray[np.float64]

#: The leakage measures a design can minimise.
OBJECTIVES: tuple[str, ...] = ("epsilon", "mutual-information", "sibson", "maximal-leakage")


@dataclass(frozen=True)
class DesignResult:
    """A least-leaking channel and the certified bracket ``lower ≤ optimum ≤ upper`` (nats).

    ``upper`` is the leakage of ``channel`` itself (rounded up), so the returned channel is a
    witness; ``lower`` is a dual certificate: no channel meeting the distortion constraint
    leaks less. ``distortion`` is the achieved expected distortion (``≤ max_distortion``;
    for a worst-case design, the largest expected distortion over inputs). ``prior`` is
    ``None`` for a worst-case design.
    """

    objective: str
    alpha: float | None
    lower: float
    upper: float
    channel: Channel
    distortion: float
    max_distortion: float
    prior: FloatArray | None
    method: str
    converged: bool

    def __post_init__(self) -> None:
        if math.isnan(self.lower) or math.isnan(self.upper) or self.lower > self.upper:
            raise InternalError(f"design bracket is invalid: [{self.lower!r}, {self.upper!r}]")

    @property
    def gap(self) -> float:
        """``upper − lower`` (nats)."""
        return self.upper - self.lower

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (``channel`` as a list of rows)."""
        return {
            "objective": self.objective,
            "alpha": self.alpha,
            "lower": self.lower,
            "upper": self.upper,
            "gap": self.gap,
            "distortion": self.distortion,
            "max_distortion": self.max_distortion,
            "prior": None if self.prior is None else self.prior.tolist(),
            "channel": self.channel.matrix.tolist(),
            "method": self.method,
            "converged": self.converged,
            "units": "nats",
        }


def repair_channel(raw: FloatArray) -> Channel:
    """A valid :class:`Channel` from a solver's near-stochastic matrix.

    Negative round-off is clipped, columns whose largest entry is below 1e-11 (outputs the
    solver did not use) and entries below 1e-13 of their column's largest are zeroed, and
    rows are renormalised. Callers re-measure the result exactly.

    >>> repair_channel(np.array([[0.5, 0.5 + 1e-12], [-1e-15, 1.0]])).matrix.round(9).tolist()
    [[0.5, 0.5], [0.0, 1.0]]
    """
    W = np.clip(np.asarray(raw, dtype=np.float64), 0.0, None)
    colmax = W.max(axis=0, keepdims=True)
    W = np.where((1e-13 * colmax >= W) | (colmax <= 1e-11), 0.0, W)
    W = W / W.sum(axis=1, keepdims=True)
    return Channel(W)


def expected_distortion(prior: FloatArray | None, W: FloatArray, d: FloatArray) -> float:
    """E d(X, Y) under ``prior`` (or, for ``None``, the worst input's expected distortion)."""
    per_row = np.array([math.fsum((W[x] * d[x]).tolist()) for x in range(W.shape[0])])
    if prior is None:
        return float(per_row.max())
    return math.fsum((prior * per_row).tolist())
