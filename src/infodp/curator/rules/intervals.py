"""Confidence intervals for AVG and VARIANCE from the exact error law of the released ratio.

AVG is released as S̃/C̃ and VARIANCE as Q̃/C̃ − (S̃/C̃)² from independent noisy centred sums
(S̃ = S + N_s, Q̃ = Q + N_q, C̃ = C + N_c, grid units). Bounding each sum separately and
combining the boxes (the union bound) states intervals 1.2–3.5 times wider than the error.
Here each interval is the inversion of an exact pivot (Fieller 1954): for the true mean
μ = S/C,

    S̃ − μ·C̃ = N_s − μ·N_c,

whose law depends on μ only, and for the true (population) variance v,

    T = Q̃ − 2μ·S̃ + (μ² − v)·C̃ = N_q − 2μ·N_s + (μ² − v)·N_c,  v = v̂ − T/C̃ + (μ − μ̂)²,

with μ̂ = S̃/C̃ and v̂ = Q̃/C̃ − μ̂² (both identities are algebra). The confidence set
{μ : |S̃ − μC̃| ≤ q_β(μ)} covers the true μ with probability ≥ 1 − β whatever the data, where
q_β(μ) bounds the (1 − β)-quantile of |N_s − μN_c| computed by convolving the two noise laws
(:func:`~infodp.mechanisms.error_law.combination_halfwidth`). Its hull is found by shrinking
a box: while the set lies in [l, u], every μ in it satisfies |S̃ − μC̃| ≤ B with B bounding
q_β over [l, u] (the quantile at the midpoint m plus (u − l)/2·K, K a tail bound of |N_c|:
|N_s − μN_c| ≤ |N_s − mN_c| + |μ − m|·|N_c|), so the set lies in μ̂ ± B/C̃ too. Every box is
a valid answer; the iteration stops when it no longer shrinks. (The quantile is taken at the
grid point nearest |m| on a fixed grid of the coefficient's range, the distance added to the
slack, so that the cells of one release share them; and with a small count, whose box stays
wide, end pieces in which no μ passes the test are trimmed off.) VARIANCE adds the test on T
(and, for the sample variance, one on C) by a union bound; the mean's test takes a tenth of β
because its error enters only squared.

Everything here is a function of the released values, the public bounds and the noise laws.

>>> from infodp.mechanisms import DiscreteLaplaceMechanism
>>> s, c = DiscreteLaplaceMechanism(20.0), DiscreteLaplaceMechanism(2.0)
>>> lo, hi = mean_interval(2_000, 1_000, s, c, -10.0, 10.0, 0.05)
>>> round(lo, 2), round(hi, 2)
(1.94, 2.06)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

from infodp.curator.plan.grid import ColumnGrid
from infodp.mechanisms.error_law import combination_halfwidth

if TYPE_CHECKING:
    from infodp.curator.rules.base import BoxMemo
    from infodp.mechanisms import DiscreteGaussianMechanism, DiscreteLaplaceMechanism

    #: The noise of one released sum or count (None: none was added).
    Mech: TypeAlias = DiscreteLaplaceMechanism | DiscreteGaussianMechanism | None
    #: The mechanisms of the centred sum, the centred sum of squares and the count.
    Mechs: TypeAlias = tuple[Mech, Mech, Mech]
    #: A term of a noise combination over a box: mechanism, coefficient c_i, half its range,
    #: the range of |c| (for the grid) and the tail K_i at its share.
    Term: TypeAlias = tuple[Mech, float, float, float, float]

__all__ = ["avg_answer", "mean_interval", "variance_answer", "variance_interval"]

#: Share of a test's β spent on the tails K that widen a quantile over a box.
_SLACK_SHARE = 1e-3
#: The box stops when it shrinks by less than this fraction of its width.
_SETTLED = 1e-3
_MAX_STEPS = 40
#: Most tests spent trimming each end of a mean's box (each one convolution).
_TRIM_STEPS = 24
#: Trim when the box's width makes up more than this share of its bound.
_TRIM_WORTH = 0.01


#: Points of the grid each coefficient's magnitude is snapped to (per query, over its range).
_COEFFICIENT_GRID = 8192
#: Most quantiles one memo keeps (a float and a small key each).
_CACHED_QUANTILES = 20_000


def _tail(mech: Mech, beta: float) -> float:
    return 0.0 if mech is None else float(mech.halfwidth(beta))


def _box_quantile(cache: BoxMemo | None, lead: Mech, terms: list[Term], beta: float) -> float:
    """A bound B with P(|N_lead + Σ c′_i N_i| > B) ≤ β for every c′_i within ``half_i`` of
    ``c_i`` (``terms``: mechanism, c_i, half_i, range of |c| (grid), tail K_i at its share).

    The noises are symmetric and independent, so the law depends on |c′_i| only; |c_i| is
    snapped to the grid point g_i (``range/_COEFFICIENT_GRID`` apart) and
    |Σ|c′_i|N_i| ≤ |Σ g_i N_i| + Σ (||c_i| − g_i| + half_i)·|N_i|: the quantile at g (cached per
    query, so cells with close answers share it) plus Σ(...)·K_i, the K_i's tails being the
    rest of β (callers pass β net of them).
    """
    snapped: list[tuple[Mech, float]] = []
    slack = 0.0
    for mech, c, half, top, k in terms:
        step = top / _COEFFICIENT_GRID if top > 0 else 1.0
        j = round(abs(c) / step)
        snapped.append((mech, j * step))
        slack += (abs(abs(c) - j * step) + half) * k
    key = (lead, tuple(snapped), beta)
    q = None if cache is None else cache.get(key)
    if q is None:
        q = combination_halfwidth([(lead, 1.0), *snapped], beta)
        if cache is not None:
            if len(cache) >= _CACHED_QUANTILES:  # a long-lived memo stays bounded
                cache.clear()
            cache[key] = q
    return q + slack


def mean_interval(
    s: float,
    c: float,
    sum_mech: Mech,
    count_mech: Mech,
    low: float,
    high: float,
    beta: float,
    cache: BoxMemo | None = None,
) -> tuple[float, float]:
    """An interval for μ = S/C (grid units, μ ∈ [low, high]) from the released S̃ = ``s`` and
    C̃ = ``c``, covering μ with probability ≥ 1 − β (module docstring; Fieller 1954).

    ``cache``: a dict kept across the cells of one release (quantiles of the pivot's law on
    a grid of μ, :func:`_box_quantile`).

    ``sum_mech`` and ``count_mech`` are the mechanisms whose noise was added (None: exact).
    A count at or below 0 carries no information about μ: the whole range.

    >>> from infodp.mechanisms import DiscreteLaplaceMechanism
    >>> m = DiscreteLaplaceMechanism(5.0)
    >>> mean_interval(0, 0, m, m, -1.0, 1.0, 0.05)
    (-1.0, 1.0)
    """
    if not c > 0:
        return low, high
    centre = s / c
    tau = beta * _SLACK_SHARE
    k_c = _tail(count_mech, tau)

    top = max(abs(low), abs(high))

    def bound(a: float, b: float) -> float:
        # |S̃ − μC̃| ≤ this for every accepted μ in [a, b]
        mid, half = (a + b) / 2, (b - a) / 2
        return _box_quantile(cache, sum_mech, [(count_mech, mid, half, top, k_c)], beta - tau)

    lo, hi = low, high
    for _ in range(_MAX_STEPS):
        b = bound(lo, hi)
        new_lo, new_hi = max(lo, centre - b / c), min(hi, centre + b / c)
        if new_lo > new_hi:
            # No μ passes the test (probability ≤ β): nothing is learnt about μ from this
            # release, so the whole declared range, never a point that claims certainty.
            return low, high
        settled = (hi - lo) - (new_hi - new_lo) <= _SETTLED * (new_hi - new_lo)
        lo, hi = new_lo, new_hi
        if settled:
            break
    if (hi - lo) / 2 * k_c > _TRIM_WORTH * b:
        # A small count: the box's own width inflates its bound. Cut off end pieces in which
        # no μ passes the test (each piece judged with its own, narrower bound).
        hi = _trim(hi, lambda t, e: (t - centre) * c > bound(t, e), centre, lo)
        lo = _trim(lo, lambda t, e: (centre - t) * c > bound(e, t), centre, hi)
        if lo >= hi:
            # Every piece of the box was ruled out (only when μ̂ lies outside it): no μ
            # passes the test, so the whole declared range, as above.
            return low, high
    return lo, hi


def _trim(
    end: float, outside: Callable[[float, float], bool], centre: float, other: float
) -> float:
    """Move ``end`` towards ``centre`` over pieces [t, end] that ``outside(t, end)`` rules
    out (halving the piece when one cannot be); ``other`` is the box's far end. The end never
    moves past ``centre`` or ``other``."""
    toward = max(other, min(centre, end)) if end > centre else min(other, max(centre, end))
    step = (end - toward) / 2
    for _ in range(_TRIM_STEPS):
        if abs(step) <= _SETTLED * abs(end - other):
            break
        t = end - step
        if outside(t, end):
            end = t
            if abs(step) > abs(end - toward):  # the next piece stops at ``toward``
                step = end - toward
        else:
            step /= 2
    return end


def variance_interval(
    s: float,
    q: float,
    c: float,
    mechs: Mechs,
    low: float,
    high: float,
    beta: float,
    *,
    sample: bool,
    cache: BoxMemo | None = None,
) -> tuple[float, float]:
    """An interval for the variance (grid² units) of values whose centred mean lies in
    [low, high], from the released centred sum ``s``, sum of squares ``q`` and count ``c``
    (``mechs``: their three mechanisms), covering it with probability ≥ 1 − β.

    ``sample``: the sample variance v·C/(C − 1) (a β/100 share bounds C), else the
    population variance v (module docstring).

    >>> from infodp.mechanisms import DiscreteLaplaceMechanism as L
    >>> lo, hi = variance_interval(0, 4_000, 1_000, (L(20.0), L(400.0), L(2.0)),
    ...                            -10.0, 10.0, 0.05, sample=False)
    >>> 2.6 < lo < 4 < hi < 5.4
    True
    """
    sum_mech, _, count_mech = mechs
    radius = max(abs(low), abs(high))
    cap = 2 * radius * radius if sample else radius * radius
    if not c > 0:
        return 0.0, cap
    beta_c = beta / 100 if sample else 0.0
    beta_mu = beta / 10
    mu = mean_interval(s, c, sum_mech, count_mech, low, high, beta_mu, cache)
    v_lo, v_hi = _population_box(s, q, c, mechs, mu, radius, beta - beta_mu - beta_c, cache)
    if not sample:
        return v_lo, v_hi
    # The sample variance v·C/(C − 1), with C bounded by its own tail at β_c.
    h_c = _tail(count_mech, beta_c)
    c_lo, c_hi = c - h_c, c + h_c
    lo = v_lo * c_hi / (c_hi - 1) if c_hi > 1 else v_lo
    hi = cap if c_lo < 2 else min(cap, v_hi * c_lo / (c_lo - 1))
    return lo, max(lo, hi)


def _population_box(
    s: float,
    q: float,
    c: float,
    mechs: Mechs,
    mu: tuple[float, float],
    radius: float,
    beta_t: float,
    cache: BoxMemo | None,
) -> tuple[float, float]:
    """The population variance's box: the test on T = N_q − 2μN_s + (μ² − v)N_c at level
    β_t for every μ in the mean's interval ``mu`` (module docstring), shrunk until settled."""
    sum_mech, sq_mech, count_mech = mechs
    mu_lo, mu_hi = mu
    top = radius * radius
    mu_hat = s / c
    v_hat = q / c - mu_hat * mu_hat
    d_max = max((mu_lo - mu_hat) ** 2, (mu_hi - mu_hat) ** 2)
    d_min = 0.0 if mu_lo <= mu_hat <= mu_hi else min((mu_lo - mu_hat) ** 2, (mu_hi - mu_hat) ** 2)
    sq_lo = 0.0 if mu_lo <= 0 <= mu_hi else min(mu_lo * mu_lo, mu_hi * mu_hi)
    sq_hi = max(mu_lo * mu_lo, mu_hi * mu_hi)
    tau = beta_t * _SLACK_SHARE / 2
    k_s, k_c = _tail(sum_mech, tau), _tail(count_mech, tau)
    mid, half = (mu_lo + mu_hi) / 2, (mu_hi - mu_lo) / 2
    v_lo, v_hi = 0.0, top
    for _ in range(_MAX_STEPS):
        # the coefficient μ² − v of N_c over the box, as its midpoint ± half its range
        a, b = sq_lo - v_hi, sq_hi - v_lo
        terms: list[Term] = [
            (sum_mech, 2.0 * mid, 2.0 * half, 2.0 * radius, k_s),
            (count_mech, (a + b) / 2, (b - a) / 2, top, k_c),
        ]
        bound = _box_quantile(cache, sq_mech, terms, beta_t - 2 * tau)
        new_lo = max(v_lo, v_hat - bound / c + d_min)
        new_hi = min(v_hi, v_hat + bound / c + d_max)
        if new_lo > new_hi:  # an empty confidence set (probability ≤ β)
            point = min(top, max(0.0, v_hat))
            return point, point
        settled = (v_hi - v_lo) - (new_hi - new_lo) <= _SETTLED * (new_hi - new_lo)
        v_lo, v_hi = new_lo, new_hi
        if settled:
            break
    return v_lo, v_hi


def avg_answer(
    s: int,
    c: int,
    sum_mech: Mech,
    count_mech: Mech,
    grid: ColumnGrid,
    beta: float,
    cache: BoxMemo | None = None,
) -> tuple[float, list[float]]:
    """The released AVG (column units) from the noisy centred sum ``s`` and count ``c``, with
    its interval at level 1 − β (:func:`mean_interval`), both inside the declared bounds.

    >>> from infodp.curator.plan.grid import ColumnGrid
    >>> from infodp.mechanisms import DiscreteLaplaceMechanism as L
    >>> point, (lo, hi) = avg_answer(2_000, 1_000, L(20.0), L(2.0),
    ...                              ColumnGrid(0.0, 20.0, 1.0, 0, 20, 10), 0.05)
    >>> point, lo < 12 < hi
    (12.0, True)
    """
    g = grid.step
    low, high = grid.low, grid.high
    centre = grid.center * g
    point = min(high, max(low, centre + s * g / c)) if c > 0 else (low + high) / 2
    lo, hi = mean_interval(
        s, c, sum_mech, count_mech, grid.lo - grid.center, grid.hi - grid.center, beta, cache
    )
    return point, [max(low, centre + lo * g), min(high, centre + hi * g)]


def variance_answer(
    s: int,
    q: int,
    c: int,
    mechs: Mechs,
    grid: ColumnGrid,
    beta: float,
    *,
    sample: bool,
    stddev: bool,
    cache: BoxMemo | None = None,
) -> tuple[float, list[float]]:
    """The released VARIANCE (or STDDEV) in column units from the noisy centred sum ``s``,
    sum of squares ``q`` and count ``c``, with its interval (:func:`variance_interval`).

    >>> from infodp.curator.plan.grid import ColumnGrid
    >>> from infodp.mechanisms import DiscreteLaplaceMechanism as L
    >>> point, (lo, hi) = variance_answer(0, 4_000, 1_000, (L(20.0), L(400.0), L(2.0)),
    ...     ColumnGrid(0.0, 20.0, 1.0, 0, 20, 10), 0.05, sample=False, stddev=True)
    >>> point, lo < 2 < hi
    (2.0, True)
    """
    r2 = float(grid.radius**2)
    if c >= 2:
        var = min(r2, max(0.0, q / c - (s / c) ** 2))
        if sample:
            var *= c / (c - 1)
    else:
        var = 0.0
    span = (grid.lo - grid.center, grid.hi - grid.center)
    lo, hi = variance_interval(s, q, c, mechs, *span, beta, sample=sample, cache=cache)
    scale = grid.step * grid.step
    if stddev:
        return math.sqrt(var * scale), [math.sqrt(lo * scale), math.sqrt(hi * scale)]
    return var * scale, [lo * scale, hi * scale]
