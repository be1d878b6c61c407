"""One entry point for every objective, and the trade-off curve over a grid of budgets.

>>> r = design([0.25] * 4, "hamming", 0.2, objective="epsilon")
>>> round(r.upper, 5)   # k-ary randomized response: ln((k−1)(1−D)/D) = ln 12
2.48491
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from infodp.design.epsilon import min_epsilon
from infodp.design.leakage import min_maximal_leakage, min_sibson
from infodp.design.rate_distortion import rate_distortion
from infodp.design.result import OBJECTIVES, DesignResult
from infodp.errors import ParameterError

__all__ = ["design", "tradeoff_curve"]


def design(
    prior: Any,
    distortion: Any,
    max_distortion: float,
    *,
    objective: str = "epsilon",
    alpha: float | None = None,
) -> DesignResult:
    """The least-leaking channel with expected distortion ≤ ``max_distortion``.

    ``objective`` ∈ {"epsilon", "mutual-information", "sibson", "maximal-leakage"};
    ``alpha`` is required for (and only taken by) "sibson". ``prior=None`` is the worst case
    (offered for "epsilon" and "maximal-leakage", whose worst case needs no prior).
    """
    if objective not in OBJECTIVES:
        raise ParameterError(
            "objective",
            objective,
            "one of 'epsilon', 'mutual-information', 'sibson', 'maximal-leakage'",
        )
    if objective == "sibson":
        if alpha is None:
            raise ParameterError("alpha", None, "a Rényi order in [1, inf] for objective sibson")
        return min_sibson(prior, distortion, max_distortion, alpha)
    if alpha is not None:
        raise ParameterError("alpha", alpha, f"omitted for objective {objective!r}")
    if objective == "epsilon":
        return min_epsilon(prior, distortion, max_distortion)
    if objective == "maximal-leakage":
        return min_maximal_leakage(prior, distortion, max_distortion)
    return rate_distortion(prior, distortion, max_distortion)


def tradeoff_curve(
    prior: Any,
    distortion: Any,
    budgets: Sequence[float],
    *,
    objective: str = "epsilon",
    alpha: float | None = None,
) -> list[DesignResult]:
    """:func:`design` at each budget D in ``budgets`` (the privacy–distortion curve).

    >>> curve = tradeoff_curve([0.5, 0.5], "hamming", [0.1, 0.25, 0.5], objective="epsilon")
    >>> [round(r.upper, 4) for r in curve]   # ln((1 − D)/D)
    [2.1972, 1.0986, 0.0]
    """
    return [design(prior, distortion, D, objective=objective, alpha=alpha) for D in budgets]
