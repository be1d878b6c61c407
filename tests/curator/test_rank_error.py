"""The quantile's reported rank error (Dwork & Roth 2014, Theorem 3.11) is never optimistic."""

from __future__ import annotations

from fractions import Fraction

import mpmath
from hypothesis import given
from hypothesis import strategies as st

from infodp.curator.rules.quantile import rank_error as _quantile_rank_error


@given(
    sensitivity=st.integers(1, 10**6),
    epsilon=st.fractions(min_value=Fraction(1, 10**6), max_value=100),
    k=st.integers(1, 10**7),
    beta=st.floats(1e-12, 0.5),
)
def test_rank_error_is_at_least_the_exact_value(
    sensitivity: int, epsilon: Fraction, k: int, beta: float
) -> None:
    # (2Δ/ε)(ln(k + 1) + ln(1/β)) evaluated with 40 digits from the exact inputs
    with mpmath.workdps(40):
        exact = (
            2
            * mpmath.mpf(sensitivity)
            / (mpmath.mpf(epsilon.numerator) / epsilon.denominator)
            * (mpmath.log(k + 1) + mpmath.log(1 / mpmath.mpf(beta)))
        )
        reported = _quantile_rank_error(sensitivity, epsilon, k, beta)
        assert reported >= exact
        assert reported <= exact * (1 + mpmath.mpf("2e-12"))
