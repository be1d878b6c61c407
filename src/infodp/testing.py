"""Hypothesis strategies shared by infodp's tests (and usable by downstream projects).

Every strategy here also produces the extreme cases a privacy library must survive: exact
zeros, probabilities as small as 1e-300 (and subnormal ones), near-degenerate distributions,
and Rényi orders 0, 1, ∞ and within 1e-12 of 1. Generated vectors are renormalised so that they
sum to 1 within a few ulps, far inside the library's 1e-9 tolerance.

``hypothesis`` is imported only here: it is a test-time dependency, and ``import infodp`` does
not import this module.

>>> from hypothesis import given, settings
>>> @settings(max_examples=20, database=None)
... @given(probability_vectors(n=3))
... def check(p):
...     assert p.shape == (3,) and abs(p.sum() - 1) < 1e-12 and (p >= 0).all()
>>> check()
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from hypothesis import strategies as st

from infodp._validate import as_positive_int, as_real
from infodp.errors import ParameterError

__all__ = [
    "EXTREME_WEIGHTS",
    "SPECIAL_ORDERS",
    "channels",
    "distribution_pairs",
    "joint_distributions",
    "probability_vectors",
    "renyi_orders",
]

FloatArray = npt.NDArray[np.float64]

#: Unnormalised weights that stress log-domain code: zero, subnormal, tiny, and moderate.
EXTREME_WEIGHTS: tuple[float, ...] = (0.0, 5e-324, 1e-300, 1e-200, 1e-100, 1e-30, 1e-12)

#: Rényi orders every α-dependent function must handle exactly or continuously.
SPECIAL_ORDERS: tuple[float, ...] = (
    0.0,
    1e-6,
    0.5,
    1.0 - 1e-12,
    1.0,
    1.0 + 1e-12,
    1.0 + 1e-6,
    2.0,
    1e6,
    math.inf,
)


def _weights(extreme: bool) -> st.SearchStrategy[float]:
    """Unnormalised non-negative weights: uniform, log-uniform and (optionally) extreme."""
    ordinary = st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_infinity=False)
    log_spread = st.floats(min_value=-60.0, max_value=0.0).map(lambda e: 10.0**e)
    parts = [ordinary, log_spread]
    if extreme:
        parts.append(st.sampled_from(EXTREME_WEIGHTS))
    return st.one_of(*parts)


def _normalise(raw: list[float], min_prob: float) -> FloatArray:
    w = np.asarray(raw, dtype=np.float64)
    total = float(w.sum())
    if total <= 0.0 or not math.isfinite(total):
        w = np.ones_like(w)
        total = float(w.size)
    n = w.size
    # p = m + (1 − n m) w / Σw keeps every entry ≥ m and the sum at 1 (m = 0: plain w / Σw).
    p = min_prob + (1.0 - n * min_prob) * (w / total)
    p = p / p.sum()
    return np.asarray(p, dtype=np.float64)


def _check_size(n: int | None, min_size: int, max_size: int) -> tuple[int, int]:
    if n is not None:
        k = as_positive_int("n", n)
        return k, k
    lo = as_positive_int("min_size", min_size)
    hi = as_positive_int("max_size", max_size)
    if hi < lo:
        raise ParameterError("max_size", max_size, f"an integer >= min_size ({lo})")
    return lo, hi


@st.composite
def probability_vectors(
    draw: st.DrawFn,
    n: int | None = None,
    *,
    min_size: int = 1,
    max_size: int = 6,
    min_prob: float = 0.0,
    extreme: bool = True,
) -> FloatArray:
    """1-d float64 probability vectors (length ``n``, or between ``min_size`` and ``max_size``).

    Every entry is ≥ ``min_prob`` (0 allows exact zeros); with ``extreme`` the entries may be
    subnormal or as small as 1e-300; entries are never NaN or inf.

    >>> from hypothesis import find, settings
    >>> quiet = settings(database=None)
    >>> p = find(probability_vectors(n=4), lambda p: (p == 0).any(), settings=quiet)
    >>> p.shape, float(p.sum())
    ((4,), 1.0)
    """
    lo, hi = _check_size(n, min_size, max_size)
    m = as_real("min_prob", min_prob)
    if m < 0.0 or m * hi > 1.0:
        raise ParameterError("min_prob", min_prob, f"a number in [0, 1/{hi}]")
    size = draw(st.integers(min_value=lo, max_value=hi))
    raw = draw(st.lists(_weights(extreme), min_size=size, max_size=size))
    return _normalise(raw, m)


@st.composite
def distribution_pairs(
    draw: st.DrawFn,
    n: int | None = None,
    *,
    min_size: int = 1,
    max_size: int = 6,
    shared_support: bool = False,
    min_prob: float = 0.0,
    extreme: bool = True,
) -> tuple[FloatArray, FloatArray]:
    """Pairs (P, Q) of probability vectors of the same length.

    With ``shared_support`` both have exactly the same support (so every divergence is
    finite); otherwise supports are arbitrary, including P not absolutely continuous w.r.t. Q.

    >>> from hypothesis import find, settings
    >>> quiet = settings(database=None)
    >>> pairs = distribution_pairs(n=3, shared_support=True)
    >>> p, q = find(pairs, lambda pq: (pq[0] == 0).any(), settings=quiet)
    >>> bool(((p > 0) == (q > 0)).all())
    True
    """
    lo, hi = _check_size(n, min_size, max_size)
    size = draw(st.integers(min_value=lo, max_value=hi))
    p = draw(probability_vectors(size, min_prob=min_prob, extreme=extreme))
    q = draw(probability_vectors(size, min_prob=min_prob, extreme=extreme))
    if shared_support:
        support = p > 0
        floor = draw(st.sampled_from([1e-300, 1e-12, 0.1])) if extreme else 0.1
        q = np.where(support, np.maximum(q, floor), 0.0)
        q = q / q.sum()
    return p, q


@st.composite
def channels(
    draw: st.DrawFn,
    n_inputs: int | None = None,
    n_outputs: int | None = None,
    *,
    max_size: int = 5,
    min_prob: float = 0.0,
    extreme: bool = True,
) -> FloatArray:
    """Row-stochastic matrices W[x, y] (rows = inputs, each a distribution over outputs).

    Sizes are drawn between 1 and ``max_size`` unless given.

    >>> from hypothesis import find, settings
    >>> quiet = settings(database=None)
    >>> W = find(channels(3, 2), lambda W: True, settings=quiet)
    >>> W.shape, bool(np.allclose(W.sum(axis=1), 1.0))
    ((3, 2), True)
    """
    rows = n_inputs if n_inputs is not None else draw(st.integers(1, max_size))
    cols = n_outputs if n_outputs is not None else draw(st.integers(1, max_size))
    rows = as_positive_int("n_inputs", rows)
    cols = as_positive_int("n_outputs", cols)
    matrix = [
        draw(probability_vectors(cols, min_prob=min_prob, extreme=extreme)) for _ in range(rows)
    ]
    return np.vstack(matrix)


@st.composite
def joint_distributions(
    draw: st.DrawFn,
    shape: tuple[int, ...] | None = None,
    *,
    ndim: int = 2,
    max_side: int = 4,
    extreme: bool = True,
) -> FloatArray:
    """Joint probability tables of a given ``shape`` (or ``ndim`` axes of up to ``max_side``).

    >>> from hypothesis import find, settings
    >>> quiet = settings(database=None)
    >>> J = find(joint_distributions((2, 3, 2)), lambda J: True, settings=quiet)
    >>> J.shape, round(float(J.sum()), 12)
    ((2, 3, 2), 1.0)
    """
    if shape is None:
        dims = as_positive_int("ndim", ndim)
        shape = tuple(draw(st.integers(1, max_side)) for _ in range(dims))
    size = int(np.prod(shape))
    flat = draw(probability_vectors(size, extreme=extreme))
    return flat.reshape(shape)


def renyi_orders(
    *,
    min_value: float = 0.0,
    max_value: float = math.inf,
    special: bool = True,
) -> st.SearchStrategy[float]:
    """Rényi orders α in [``min_value``, ``max_value``]: ordinary floats plus special orders.

    The special orders are 0, 1e-6, ½, 1 ± 1e-12, 1, 1 + 1e-6, 2, 1e6 and ∞ (those in range).

    >>> from hypothesis import find, settings
    >>> quiet = settings(database=None)
    >>> find(renyi_orders(min_value=1.0), lambda a: a > 1e300, settings=quiet)
    inf
    """
    lo = as_real("min_value", min_value)
    hi = as_real("max_value", max_value, allow_inf=True)
    if lo < 0.0 or hi < lo:
        raise ParameterError("max_value", max_value, f"an order >= min_value ({lo}) >= 0")
    finite_hi = min(hi, 1e3)
    parts: list[st.SearchStrategy[float]] = []
    if finite_hi >= lo:
        parts.append(st.floats(min_value=lo, max_value=finite_hi))
        parts.append(
            st.floats(min_value=-1e-3, max_value=1e-3)
            .map(lambda d: 1.0 + d)
            .filter(lambda a: lo <= a <= hi)
        )
    chosen = [a for a in SPECIAL_ORDERS if lo <= a <= hi]
    if special and chosen:
        parts.append(st.sampled_from(chosen))
    if not parts:
        parts.append(st.just(hi))
    return st.one_of(*parts)
