"""The certified capacity bracket returned by every solver."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from infodp.channel._numerics import _INF, FloatArray
from infodp.errors import InternalError

__all__ = ["CapacityResult"]


def _readonly(array: Any) -> FloatArray:
    out = np.array(array, dtype=np.float64, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, slots=True)
class CapacityResult:
    """A certified bracket ``lower ≤ capacity ≤ upper`` (nats per individual).

    - ``lower`` is attained: it is the information of ``input_distribution`` (rounded down).
    - ``upper`` is a certificate: a dual bound (rounded up), never an estimate.
    - ``output_distribution`` is the output law behind the certificate: the ``Q`` of
      ``max_x D_α(P_{Y|x} ‖ Q)`` for Shannon and Sibson capacities, ``P_Y`` at the returned
      input for the article's Rényi capacity.
    - ``converged`` says whether ``upper − lower ≤ tol`` was reached; ``method`` says how each
      side was obtained.

    >>> from infodp.channel import Channel
    >>> r = Channel.binary_erasure(0.25).capacity()
    >>> round(r.lower, 6), round(r.upper, 6), r.definition, r.alpha  # (1 − e) log 2
    (0.51986, 0.51986, 'renyi', 1.0)
    >>> r.input_distribution.round(6).tolist()
    [0.5, 0.5]
    """

    lower: float
    upper: float
    input_distribution: FloatArray
    output_distribution: FloatArray
    iterations: int
    definition: str
    alpha: float
    converged: bool
    method: str

    def _repr_html_(self) -> str:
        """The notebook view: the certified bracket in nats and bits, and how it was found.

        >>> from infodp.channel import Channel
        >>> "upper" in Channel.binary_erasure(0.25).capacity()._repr_html_()
        True
        """
        from infodp._report import summary_table

        ln2 = math.log(2.0)
        rows: list[tuple[str, Any]] = [
            ("lower (nats)", self.lower),
            ("upper (nats)", self.upper),
            ("lower (bits)", self.lower / ln2),
            ("upper (bits)", self.upper / ln2),
            ("definition", self.definition),
            ("α", self.alpha),
            ("converged", self.converged),
            ("iterations", self.iterations),
            ("method", self.method),
        ]
        return summary_table("Capacity", rows, "lower is attained, upper is a certificate")

    def __post_init__(self) -> None:
        object.__setattr__(self, "input_distribution", _readonly(self.input_distribution))
        object.__setattr__(self, "output_distribution", _readonly(self.output_distribution))
        if math.isnan(self.lower) or math.isnan(self.upper):
            raise InternalError(f"capacity bracket has NaN: [{self.lower}, {self.upper}]")
        if self.lower > self.upper:
            raise InternalError(f"capacity bracket is empty: [{self.lower!r}, {self.upper!r}]")

    @property
    def gap(self) -> float:
        """Width ``upper − lower`` of the bracket (nats)."""
        return self.upper - self.lower


# --------------------------------------------------------------------------------------------
class _Bracket:
    """Best certified sides seen so far (each side is valid on its own)."""

    lower: float = -_INF
    upper: float = _INF
    p: FloatArray | None = None
    q: FloatArray | None = None

    def offer(self, lower: float, p: FloatArray, upper: float, q: FloatArray) -> None:
        if lower > self.lower:
            self.lower, self.p = lower, p
        if upper < self.upper:
            self.upper, self.q = upper, q
