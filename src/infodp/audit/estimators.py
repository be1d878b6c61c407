"""Confidence bounds for black-box privacy auditing: Clopper–Pearson, ε, δ and KL lower bounds.

An audit observes how often an event ``E`` happens under two neighbouring datasets: ``k0`` of
``n0`` samples of ``M(D)`` and ``k1`` of ``n1`` samples of ``M(D')``. (ε, δ)-DP says
``P(M(D) ∈ E) ≤ e^ε P(M(D') ∈ E) + δ`` (Dwork & Roth 2014, Definition 2.4), so any lower
bound ``p0 ≥ L0`` and upper bound ``p1 ≤ U1`` that hold *jointly* give

    ε ≥ log((L0 − δ) / U1)          and          δ ≥ L0 − e^ε U1.

The two one-sided Clopper–Pearson bounds (Clopper & Pearson 1934) are each taken at level
``1 − (1 − c)/2`` so that, by the union bound, both hold together with probability ≥ ``c``
(the construction of DP-Sniper, Bichsel et al. 2021, and of Jagielski et al. 2020). The
event must be chosen independently of the counts (see :mod:`infodp.audit.events`: the event is
selected on one half of the samples and counted on the other).

>>> round(epsilon_lower_bound(500_000, 1_000_000, 183_940, 1_000_000), 3)
0.994
>>> delta_lower_bound(100, 1_000, 0, 1_000, epsilon=1.0) > 0
True
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats
from scipy.special import xlogy

from infodp._validate import as_positive_int, as_probability, as_real
from infodp.errors import ParameterError

__all__ = [
    "binary_kl",
    "clopper_pearson",
    "delta_lower_bound",
    "epsilon_lower_bound",
    "kl_lower_bound",
]

ArrayF = npt.NDArray[np.float64]


def _confidence(value: Any) -> float:
    return as_probability("confidence", value, open_low=True, open_high=True)


def _counts(k: Any, n: Any, kname: str, nname: str) -> tuple[int, int]:
    trials = as_positive_int(nname, n)
    successes = as_positive_int(kname, k, minimum=0)
    if successes > trials:
        raise ParameterError(kname, k, f"an integer in [0, {nname}={trials}]")
    return successes, trials


def _cp_lower(k: Any, n: Any, level: float) -> ArrayF:
    """One-sided lower Clopper–Pearson bound: P(p ≥ result) ≥ level (vectorised).

    Clopper & Pearson (1934): the lower limit is the (1 − level) quantile of Beta(k, n − k + 1),
    and 0 when k = 0.
    """
    k_arr = np.asarray(k, dtype=np.float64)
    n_arr = np.asarray(n, dtype=np.float64)
    safe_k = np.maximum(k_arr, 1.0)
    out = np.asarray(stats.beta.ppf(1.0 - level, safe_k, n_arr - safe_k + 1.0), dtype=np.float64)
    return np.where(k_arr <= 0, 0.0, out)


def _cp_upper(k: Any, n: Any, level: float) -> ArrayF:
    """One-sided upper Clopper–Pearson bound: P(p ≤ result) ≥ level (vectorised).

    Clopper & Pearson (1934): the upper limit is the ``level`` quantile of Beta(k + 1, n − k),
    and 1 when k = n.
    """
    k_arr = np.asarray(k, dtype=np.float64)
    n_arr = np.asarray(n, dtype=np.float64)
    safe_k = np.minimum(k_arr, n_arr - 1.0)
    out = np.asarray(stats.beta.ppf(level, safe_k + 1.0, n_arr - safe_k), dtype=np.float64)
    return np.where(k_arr >= n_arr, 1.0, out)


def clopper_pearson(
    successes: int, trials: int, confidence: float = 0.95, *, side: str = "two-sided"
) -> tuple[float, float]:
    """Exact (Clopper–Pearson 1934) confidence interval for a binomial proportion.

    ``side`` is ``"two-sided"`` (each tail gets (1 − c)/2), ``"lower"`` (the interval is
    ``[L, 1]``) or ``"upper"`` (``[0, U]``). The interval covers the true proportion with
    probability at least ``confidence`` whatever it is (it is conservative, never optimistic).

    >>> lo, hi = clopper_pearson(5, 10)
    >>> round(lo, 4), round(hi, 4)     # the classic table value for 5/10 at 95%
    (0.1871, 0.8129)
    >>> clopper_pearson(0, 10, side="upper")[0]
    0.0
    """
    k, n = _counts(successes, trials, "successes", "trials")
    c = _confidence(confidence)
    if side == "two-sided":
        level = 1.0 - (1.0 - c) / 2.0
        return float(_cp_lower(k, n, level)), float(_cp_upper(k, n, level))
    if side == "lower":
        return float(_cp_lower(k, n, c)), 1.0
    if side == "upper":
        return 0.0, float(_cp_upper(k, n, c))
    raise ParameterError("side", side, "one of 'two-sided', 'lower', 'upper'")


def _joint_bounds(k0: Any, n0: Any, k1: Any, n1: Any, confidence: float) -> tuple[ArrayF, ArrayF]:
    """(L0, U1): lower bound on p0 and upper bound on p1, jointly valid with ``confidence``."""
    level = 1.0 - (1.0 - confidence) / 2.0  # union bound over the two one-sided statements
    return _cp_lower(k0, n0, level), _cp_upper(k1, n1, level)


def _epsilon_from_bounds(lower0: ArrayF, upper1: ArrayF, delta: float) -> ArrayF:
    """ε ≥ log((L0 − δ)/U1), clipped at 0 (Dwork & Roth 2014, Definition 2.4)."""
    num = lower0 - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log(np.where(num > 0, num, 1.0)) - np.log(np.where(upper1 > 0, upper1, 1.0))
    eps = np.where(num > 0, eps, 0.0)
    eps = np.where((num > 0) & (upper1 <= 0), math.inf, eps)
    return np.asarray(np.maximum(eps, 0.0), dtype=np.float64)


def epsilon_lower_bound(
    k0: int,
    n0: int,
    k1: int,
    n1: int,
    *,
    confidence: float = 0.95,
    delta: float = 0.0,
) -> float:
    """Lower bound on ε from one event, valid with probability ≥ ``confidence``.

    ``k0`` of ``n0`` samples of M(D) and ``k1`` of ``n1`` samples of M(D') fell in the event.
    Returns ``max(0, log((L0 − δ) / U1))`` with one-sided Clopper–Pearson bounds at level
    ``1 − (1 − c)/2`` each (union bound). The event must not have been chosen by looking at
    these counts.

    >>> # Laplace(0, 1) vs Laplace(1, 1), event Y < 0: p0 = 1/2, p1 = e^{-1}/2 (true ε = 1).
    >>> round(epsilon_lower_bound(50_000, 100_000, 18_394, 100_000), 3)
    0.981
    """
    a0, m0 = _counts(k0, n0, "k0", "n0")
    a1, m1 = _counts(k1, n1, "k1", "n1")
    c = _confidence(confidence)
    d = as_probability("delta", delta)
    lower0, upper1 = _joint_bounds(a0, m0, a1, m1, c)
    return float(_epsilon_from_bounds(lower0, upper1, d))


def delta_lower_bound(
    k0: int,
    n0: int,
    k1: int,
    n1: int,
    *,
    epsilon: float,
    confidence: float = 0.95,
) -> float:
    """Lower bound on δ at a given ε from one event: ``max(0, L0 − e^ε U1)``.

    From (ε, δ)-DP, ``δ ≥ P(M(D) ∈ E) − e^ε P(M(D') ∈ E)`` (Dwork & Roth 2014, Def. 2.4);
    valid with probability ≥ ``confidence`` (joint Clopper–Pearson bounds).

    >>> round(delta_lower_bound(2_000, 100_000, 0, 100_000, epsilon=1.0), 4)
    0.019
    """
    a0, m0 = _counts(k0, n0, "k0", "n0")
    a1, m1 = _counts(k1, n1, "k1", "n1")
    eps = as_real("epsilon", epsilon, allow_inf=True)
    c = _confidence(confidence)
    lower0, upper1 = _joint_bounds(a0, m0, a1, m1, c)
    if math.isinf(eps):
        return max(float(lower0), 0.0) if eps < 0 else 0.0
    value = float(lower0) - math.exp(eps) * float(upper1) if eps < 700 else -math.inf
    return max(value, 0.0)


def binary_kl(p: Any, q: Any) -> ArrayF:
    """KL divergence (nats) between Bernoulli(p) and Bernoulli(q), vectorised; ∞ if q ∈ {0,1}
    where p is not.

    >>> round(float(binary_kl(0.5, 0.25)), 6)   # ½ log 2 + ½ log(2/3)
    0.143841
    """
    pa = np.asarray(p, dtype=np.float64)
    qa = np.asarray(q, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        first = xlogy(pa, pa) - xlogy(pa, qa)
        second = xlogy(1.0 - pa, 1.0 - pa) - xlogy(1.0 - pa, 1.0 - qa)
    out = np.asarray(first + second, dtype=np.float64)
    return np.maximum(np.nan_to_num(out, nan=math.inf, posinf=math.inf), 0.0)


def kl_lower_bound(k0: int, n0: int, k1: int, n1: int, *, confidence: float = 0.95) -> float:
    """Lower bound on the KL divergence D(M(D) ‖ M(D')) (nats) from one event.

    By data processing, D(P ‖ Q) ≥ kl(P(E) ‖ Q(E)) for any event E (Cover & Thomas 2006,
    Theorem 2.8.1 applied to the indicator of E). kl(a ‖ b) increases in a and decreases in b
    when a ≥ b, so its minimum over the joint Clopper–Pearson box is ``kl(L0 ‖ U1)`` when
    ``L0 > U1`` (and symmetrically ``kl(U0 ‖ L1)`` when ``U0 < L1``), else 0. This is the α = 1
    (MI-DP/KL) counterpart of :func:`epsilon_lower_bound`.

    >>> round(kl_lower_bound(50_000, 100_000, 18_394, 100_000), 4)
    0.2441
    """
    a0, m0 = _counts(k0, n0, "k0", "n0")
    a1, m1 = _counts(k1, n1, "k1", "n1")
    c = _confidence(confidence)
    # Four one-sided statements (two per proportion) hold together with ``confidence``.
    level4 = 1.0 - (1.0 - c) / 4.0
    lo0, hi0 = float(_cp_lower(a0, m0, level4)), float(_cp_upper(a0, m0, level4))
    lo1, hi1 = float(_cp_lower(a1, m1, level4)), float(_cp_upper(a1, m1, level4))
    if lo0 > hi1:
        return float(binary_kl(lo0, hi1))
    if hi0 < lo1:
        return float(binary_kl(hi0, lo1))
    return 0.0
