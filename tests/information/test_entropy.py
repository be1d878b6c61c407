"""Tests for infodp.information.entropy.

References: Rényi 1961 ("On measures of entropy and information"); Cover & Thomas
2006 ("Elements of Information Theory", eq. (2.1), Example 2.1.1); the "DP and Information Theory"
(2022) article's binary Rényi
entropy H_α(p) = −1/(α−1) log(p^α + (1−p)^α); van Erven & Harremoës 2014 [vEH14].
Peers: scipy.stats.entropy, dit.other.renyi_entropy (bits, converted with ln 2).
"""

from __future__ import annotations

import itertools
import math
from decimal import Context, Decimal, localcontext

import dit
import numpy as np
import pytest
from dit.other import renyi_entropy as dit_renyi_entropy
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.stats import entropy as scipy_entropy

from infodp.errors import ParameterError
from infodp.information import entropy
from infodp.information.divergence import renyi_divergence
from infodp.information.entropy import (
    binary_entropy,
    binary_entropy_deficit,
    binary_renyi_entropy,
    inverse_binary_entropy,
    inverse_binary_entropy_deficit,
    min_entropy,
    renyi_entropy,
    shannon_entropy,
)
from infodp.testing import probability_vectors, renyi_orders

LN2 = math.log(2.0)
# 700 digits: 1 − 1e-300 must not round to 1 in the reference.
_CTX = Context(prec=700, Emax=999_999_999, Emin=-999_999_999)


def _decimal_binary_renyi(p: float, alpha: float) -> float:
    """the "DP and Information Theory" (2022) article's H_α(p) in 700-digit decimals (1 − p formed
    exactly in Decimal)."""
    with localcontext(_CTX):
        P = Decimal(p)
        a = Decimal(alpha)
        s = (a * P.ln()).exp() + (a * (1 - P).ln()).exp()
        return float(-s.ln() / (a - 1))


def _decimal_binary_entropy(p: float) -> float:
    with localcontext(_CTX):
        P = Decimal(p)
        return float(-P * P.ln() - (1 - P) * (1 - P).ln())


# ------------------------------------------------------------------------------------------
# closed forms and peers


def test_shannon_matches_scipy() -> None:
    rng = np.random.default_rng(61)
    for _ in range(20):
        p = rng.dirichlet(np.ones(7) * 0.3)
        assert shannon_entropy(p) == pytest.approx(float(scipy_entropy(p)), rel=1e-12)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0, 2.0, 5.0, math.inf])
def test_renyi_matches_dit(alpha: float) -> None:
    rng = np.random.default_rng(1961)
    for _ in range(10):
        p = rng.dirichlet(np.ones(5))
        d = dit.Distribution([str(i) for i in range(5)], list(p), validate=False)
        assert renyi_entropy(p, alpha) == pytest.approx(
            dit_renyi_entropy(d, alpha) * LN2, rel=1e-10
        )


def test_special_orders_by_definition() -> None:
    # Rényi 1961: H_0 = log|supp|, H_1 = Shannon, H_2 = −log Σp², H_∞ = −log max p.
    p = [0.5, 0.25, 0.125, 0.125, 0.0]
    assert renyi_entropy(p, 0) == pytest.approx(math.log(4), rel=1e-15)
    assert renyi_entropy(p, 1) == pytest.approx(1.75 * LN2, rel=1e-15)
    assert renyi_entropy(p, 2) == pytest.approx(-math.log(0.25 + 0.0625 + 2 / 64), rel=1e-14)
    assert renyi_entropy(p, math.inf) == pytest.approx(LN2, rel=1e-15)
    assert min_entropy(p) == pytest.approx(LN2, rel=1e-15)
    assert shannon_entropy(p) == renyi_entropy(p, 1)


@pytest.mark.parametrize("alpha", [1e6, 1e300, 1.7e308])
def test_astronomical_orders_reach_min_entropy(alpha: float) -> None:
    # H_α ↓ H_∞ with H_∞ ≤ H_α ≤ α/(α−1) H_∞ (Rényi entropy bounds; the upper one from
    # Σ p^α ≥ max p^α); with 200 outcomes (α−1)·log p overflows float64 for α ≥ 1e307.
    rng = np.random.default_rng(5)
    p = rng.dirichlet(np.ones(200))
    h_inf = min_entropy(p)
    assert h_inf - 1e-15 <= renyi_entropy(p, alpha) <= alpha / (alpha - 1) * h_inf + 1e-15


@given(probability_vectors(), renyi_orders())
def test_entropy_is_log_n_minus_divergence_from_uniform(p: np.ndarray, alpha: float) -> None:
    # H_α(P) = log n − D_α(P‖U_n) ([vEH14], Sec. I-A): a cross-check through the divergence.
    n = p.size
    expected = math.log(n) - renyi_divergence(p, np.full(n, 1.0 / n), alpha)
    assert renyi_entropy(p, alpha) == pytest.approx(expected, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("p", [0.5, 0.11, 0.25, 1e-3, 0.9])
def test_binary_entropy_closed_form(p: float) -> None:
    # Cover & Thomas Example 2.1.1, written out.
    expected = -p * math.log(p) - (1 - p) * math.log(1 - p)
    assert binary_entropy(p) == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize("p", [1e-300, 1e-100, 1e-17, 1e-9, 0.3])
def test_binary_entropy_tiny_p_against_decimal(p: float) -> None:
    assert binary_entropy(p) == pytest.approx(_decimal_binary_entropy(p), rel=1e-13)


def test_binary_entropy_endpoints_and_array() -> None:
    assert binary_entropy(0.0) == 0.0
    assert binary_entropy(1.0) == 0.0
    out = binary_entropy([0.0, 0.5, 1.0])
    assert isinstance(out, np.ndarray)
    assert out.tolist() == pytest.approx([0.0, LN2, 0.0], abs=1e-15)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0 - 1e-12, 1.0, 1.0 + 1e-12, 2.0, 1e6, math.inf])
@pytest.mark.parametrize("p", [1e-300, 0.1, 0.5])
def test_binary_renyi_entropy_against_decimal(p: float, alpha: float) -> None:
    # "DP and Information Theory" (2022): H_α(p) = −1/(α−1) log(p^α + (1−p)^α); α = 0, 1, ∞ by
    # their definitions.
    if alpha == 0.0:
        expected = LN2
    elif alpha == 1.0:
        expected = _decimal_binary_entropy(p)
    elif alpha == math.inf:
        expected = -math.log(max(p, 1 - p)) if p > 1e-200 else _decimal_binary_renyi(p, 1e30)
    elif abs(alpha - 1) < 1e-9:
        # D-continuity at 1: within |α−1| · (log p)² of Shannon [vEH14, Thm 5 analogue].
        expected = _decimal_binary_entropy(p)
    else:
        expected = _decimal_binary_renyi(p, alpha)
    got = binary_renyi_entropy(p, alpha)
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_binary_renyi_equals_renyi_of_the_pair() -> None:
    alphas = [0.0, 0.3, 1.0, 2.0, 7.5, math.inf]
    for p in (0.05, 0.3, 0.5):
        assert binary_renyi_entropy(p, alphas) == pytest.approx(
            renyi_entropy([p, 1 - p], alphas), rel=1e-12
        )


# ------------------------------------------------------------------------------------------
# inverse binary entropy


@pytest.mark.parametrize("p", [0.0, 1e-300, 1e-12, 0.01, 0.11, 0.3, 0.4999, 0.5])
def test_inverse_binary_entropy_round_trip(p: float) -> None:
    assert inverse_binary_entropy(binary_entropy(p)) == pytest.approx(p, rel=1e-12, abs=0)


@given(st.floats(min_value=0.0, max_value=LN2))
def test_inverse_is_the_largest_float_not_exceeding_the_target(h: float) -> None:
    p = inverse_binary_entropy(h)
    assert 0.0 <= p <= 0.5
    # Largest float with h(p) ≤ h: conservative for δ = 1 − 2 h⁻¹(ln 2 − ε) (Cuff & Yu 2016).
    assert binary_entropy(p) <= h
    if p < 0.5:
        assert binary_entropy(float(np.nextafter(p, 1.0))) > h


def test_inverse_binary_entropy_known_value_and_array() -> None:
    # h(1/4) = log 4 − (3/4) log 3 (Cover & Thomas Example 2.1.1 at p = 1/4).
    h = math.log(4) - 0.75 * math.log(3)
    assert inverse_binary_entropy(h) == pytest.approx(0.25, rel=1e-14)
    out = inverse_binary_entropy([0.0, h, LN2])
    assert isinstance(out, np.ndarray)
    assert out.tolist() == pytest.approx([0.0, 0.25, 0.5], rel=1e-14)


@pytest.mark.parametrize("x", [1e-300, 1e-20, 1e-10, 1e-4, 9.99e-4, 1e-3, 0.1, 0.25, 0.4999])
def test_binary_entropy_deficit_against_decimal(x: float) -> None:
    # ln 2 − h(½ − x) in 700-digit decimals (½ − x formed exactly there).
    with localcontext(_CTX):
        X = Decimal(x)
        a, b = Decimal(1) / 2 - X, Decimal(1) / 2 + X
        expected = float(Decimal(2).ln() + a * a.ln() + b * b.ln())
    assert binary_entropy_deficit(x) == pytest.approx(expected, rel=1e-13)


@given(st.floats(min_value=0.0, max_value=LN2))
def test_inverse_deficit_is_the_smallest_float_reaching_the_target(d: float) -> None:
    # δ = 2x for the MI-DP → δ conversion must never be optimistic (Cuff & Yu 2016).
    x = inverse_binary_entropy_deficit(d)
    assert 0.0 <= x <= 0.5
    assert binary_entropy_deficit(x) >= d
    if x > 0:
        assert binary_entropy_deficit(float(np.nextafter(x, 0.0))) < d


def test_inverse_deficit_keeps_digits_that_ln2_minus_epsilon_loses() -> None:
    # ln 2 − 1e-20 == ln 2 in float64, so h⁻¹ of it is ½; the deficit form keeps x ≈ √(d/2).
    assert inverse_binary_entropy(LN2 - 1e-20) == 0.5
    x = inverse_binary_entropy_deficit(1e-20)
    assert x == pytest.approx(math.sqrt(0.5e-20), rel=1e-12)
    # Consistency with the plain inverse where both are accurate.
    for d in (0.01, 0.3, 0.6):
        assert 0.5 - inverse_binary_entropy_deficit(d) == pytest.approx(
            inverse_binary_entropy(LN2 - d), rel=1e-12
        )
    assert inverse_binary_entropy_deficit([0.0, LN2]).tolist() == [0.0, 0.5]


# ------------------------------------------------------------------------------------------
# laws


@given(probability_vectors(), st.lists(renyi_orders(), min_size=2, max_size=5))
def test_renyi_entropy_non_increasing_in_alpha(p: np.ndarray, orders: list[float]) -> None:
    # Rényi entropy is non-increasing in α (Beck & Schlögl 1993; equivalently [vEH14, Thm 3]
    # through H_α = log n − D_α(P‖U)).
    values = renyi_entropy(p, sorted(orders))
    for lo, hi in itertools.pairwise(values):
        assert hi <= lo + 1e-9 * max(1.0, lo)


@given(probability_vectors(), renyi_orders())
def test_renyi_entropy_bounds(p: np.ndarray, alpha: float) -> None:
    # 0 ≤ H_∞ ≤ H_α ≤ H_0 = log |supp P|.
    h = renyi_entropy(p, alpha)
    assert min_entropy(p) - 1e-12 <= h <= math.log(int((p > 0).sum())) + 1e-12


@given(st.floats(min_value=0.0, max_value=1.0), renyi_orders())
def test_binary_renyi_symmetric_and_bounded(p: float, alpha: float) -> None:
    h = binary_renyi_entropy(p, alpha)
    assert 0.0 <= h <= LN2 + 1e-15
    assume(1.0 - (1.0 - p) == p)  # 1 − p exact in floats, else the mirror is another input
    assert h == pytest.approx(binary_renyi_entropy(1 - p, alpha), rel=1e-9, abs=1e-12)


# ------------------------------------------------------------------------------------------
# validation


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: shannon_entropy([0.5, 0.6]), "p must sum to 1"),
        (lambda: renyi_entropy([0.5, 0.5], -0.5), "alpha"),
        (lambda: renyi_entropy([0.5, 0.5], float("nan")), "alpha"),
        (lambda: binary_entropy(1.5), "p must be"),
        (lambda: binary_entropy(float("nan")), "p must be"),
        (lambda: binary_entropy([0.1, -0.1]), "p must be"),
        (lambda: binary_renyi_entropy(-0.1, 2.0), "p must be"),
        (lambda: binary_renyi_entropy(0.1, -2.0), "alpha"),
        (lambda: inverse_binary_entropy(0.7), "h must be"),
        (lambda: inverse_binary_entropy(-1e-3), "h must be"),
        (lambda: inverse_binary_entropy([0.1, float("nan")]), "h must be"),
        (lambda: binary_entropy_deficit(0.6), "x must be"),
        (lambda: inverse_binary_entropy_deficit(-1.0), "d must be"),
        (lambda: inverse_binary_entropy_deficit(1.0), "d must be"),
    ],
)
def test_bad_input_raises_parameter_error(call: object, needle: str) -> None:
    with pytest.raises(ParameterError, match=needle):
        call()  # type: ignore[operator]


def test_ln2_rounding_slack_accepted() -> None:
    assert inverse_binary_entropy(LN2 + 1e-13) == 0.5


def test_all_matches_public_names() -> None:
    names = vars(entropy)
    defined_here = {
        n
        for n, obj in names.items()
        if not n.startswith("_")
        and callable(obj)
        and getattr(obj, "__module__", "") == entropy.__name__
    }
    assert set(entropy.__all__) == defined_here
