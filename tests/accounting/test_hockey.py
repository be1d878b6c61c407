"""δ(ε) of discrete Laplace pairs and compositions in closed form, against independent sums.

The reference values are the definition δ(ε) = Σ_y max(0, P(y) − e^ε Q(y)) (Balle, Barthe &
Gaboardi 2018, Theorem 1) summed over the pmf on a wide window (with the product pmf for a
composition), dp-accounting's PLD of the discrete Laplace mechanism, and our numpy PLD.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as dpa_pld
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from infodp.accounting import compose, discrete_laplace_profile, laplace_profile
from infodp.accounting.hockey import composed_discrete_laplace_delta, discrete_laplace_delta


def _pmf(scale: float, shift: int, window: int) -> np.ndarray:
    ks = np.arange(-window, window + 1)
    logw = -np.abs(ks - shift) / scale
    base = -np.abs(ks) / scale
    top = base.max()
    return np.exp(logw - top - math.log(np.exp(base - top).sum()))


def _brute(pairs: list[tuple[float, int]], eps: float) -> float:
    """Σ max(0, P − e^ε Q) over the product pmf on a window holding all but e^-60 of the mass."""
    window = int(max(60 * s + d for s, d in pairs)) + 2
    p = np.ones(1)
    q = np.ones(1)
    for scale, d in pairs:
        p = np.multiply.outer(p, _pmf(scale, 0, window)).ravel()
        q = np.multiply.outer(q, _pmf(scale, d, window)).ravel()
    return float(np.maximum(p - math.exp(eps) * q, 0.0).sum())


@settings(max_examples=60, deadline=None)
@given(
    scale=st.floats(0.3, 6.0),
    d=st.integers(1, 6),
    eps=st.floats(-1.0, 3.0),
)
def test_one_pair_equals_the_sum_over_the_pmf(scale: float, d: int, eps: float) -> None:
    got = discrete_laplace_delta(scale, d, eps)
    want = _brute([(scale, d)], eps)
    assert got >= want - 1e-13  # rounded up (the window's tail is below e^-60)
    assert got == pytest.approx(want, rel=1e-9, abs=1e-13)


@settings(max_examples=25, deadline=None)
@given(
    s1=st.floats(0.5, 3.0),
    d1=st.integers(1, 3),
    s2=st.floats(0.5, 3.0),
    d2=st.integers(1, 4),
    eps=st.floats(0.0, 2.0),
)
def test_a_composition_equals_the_sum_over_the_product_pmf(
    s1: float, d1: int, s2: float, d2: int, eps: float
) -> None:
    got = composed_discrete_laplace_delta([(s1, d1), (s2, d2)], eps)
    assert got is not None
    want = _brute([(s1, d1), (s2, d2)], eps)
    assert got >= want - 1e-13
    assert got == pytest.approx(want, rel=1e-9, abs=1e-13)


@pytest.mark.parametrize(
    ("pairs", "eps"),
    [
        ([(30.0, 1), (30.0, 1), (4.5e6, 150_000)], 0.0),  # a curator's COUNT, AVG query
        ([(30.0, 1), (30.0, 1), (4.5e6, 150_000)], 0.05),
        ([(10.0, 3), (2e4, 1000)], 0.1),
    ],
)
def test_against_dp_accountings_discrete_laplace_pld(
    pairs: list[tuple[float, int]], eps: float
) -> None:
    # dp-accounting's PLD is pessimistic (connect-the-dots / rounding up): never below the
    # tight value, and within its discretisation of it.
    plds = [
        dpa_pld.from_discrete_laplace_mechanism(
            1.0 / s, sensitivity=d, value_discretization_interval=1e-5
        )
        for s, d in pairs
    ]
    total = plds[0]
    for other in plds[1:]:
        total = total.compose(other)
    peer = total.get_delta_for_epsilon(eps)
    got = composed_discrete_laplace_delta(pairs, eps)
    assert got is not None
    assert got <= peer + 1e-12
    assert got == pytest.approx(peer, rel=2e-3)


@settings(max_examples=30, deadline=None)
@given(
    scale=st.floats(1.0, 1e4),
    d=st.integers(1, 3000),
    counts=st.integers(0, 3),
    eps=st.floats(0.0, 1.0),
)
def test_profiles_use_it_and_agree_with_the_numpy_pld(
    scale: float, d: int, counts: int, eps: float
) -> None:
    # The numpy PLD refuses (PLDTooLarge, a clear error) a loss range d/scale so wide that its
    # default grid would pass 2^24 points; the comparison needs the PLD, so stay below that.
    assume(d / scale <= 1000)
    parts = [discrete_laplace_profile(scale, d)] + [discrete_laplace_profile(25.0, 1)] * counts
    prof = compose(*parts) if len(parts) > 1 else parts[0]
    got = prof.delta(eps)
    pld = prof.pld().delta(eps)  # the numpy PLD: pessimistic on its grid
    assert got <= pld * (1 + 2e-12) + 1e-13  # up to the closed form's rounding allowance
    assert got == pytest.approx(pld, rel=5e-2, abs=1e-7)


def test_only_discrete_laplace_compositions_have_it() -> None:
    mixed = compose(discrete_laplace_profile(2.0, 1), laplace_profile(2.0))
    assert mixed._delta_closed(0.0) is None
    assert mixed.delta(0.0) > 0  # answered by the PLD and RDP bounds instead
    many = [(1.0, 100)] * 3  # 101² atoms to enumerate: no closed form
    assert composed_discrete_laplace_delta(many, 0.0) is None


def test_edges() -> None:
    assert discrete_laplace_delta(2.0, 3, 1.5) == 0.0  # ε ≥ Δ/scale: pure DP
    # ε ≤ −Δ/scale: every output counts, δ = 1 − e^ε.
    assert discrete_laplace_delta(2.0, 3, -2.0) == pytest.approx(-math.expm1(-2.0), rel=1e-12)
    assert composed_discrete_laplace_delta([], 0.0) == 0.0
