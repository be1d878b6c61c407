"""A budget split into parts is accepted when the parts exactly fit it, refused one step over.

Every split 1..64 of ε ∈ {0.1, 1, 2, 3, 10/3, 7} with δ ∈ {0, 1e-5, 1e-6}, in the accountant's
basic, approx and (for δ = 0) pure currencies: once as exact rational shares ε/k reaching
Laplace mechanisms (whose ε = Δ/scale is exact) and once as the curator's float shares
(:func:`infodp._exact.split_share`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infodp._exact import float_down, float_up, split_share
from infodp.accounting import compose
from infodp.accounting.accountant import Accountant, Budget
from infodp.accounting.profile import (
    DiscreteLaplaceProfile,
    PrivacyProfile,
    approximate_dp_profile,
    pure_dp_profile,
)
from infodp.errors import BudgetExceeded, ParameterError

EPSILONS = [Fraction(1, 10), Fraction(1), Fraction(2), Fraction(3), Fraction(10, 3), Fraction(7)]
DELTAS = [Fraction(0), Fraction(1, 10**5), Fraction(1, 10**6)]
SPLITS = range(1, 65)


def _budgets(eps: Fraction, delta: Fraction) -> list[Budget]:
    out = [Budget.approx(eps, delta), Budget.basic(eps, delta)]
    return out + ([Budget.pure(eps)] if delta == 0 else [])


def _parts(share: Fraction, k: int, delta: Fraction) -> list[PrivacyProfile]:
    """k measurements of ε ≤ ``share`` each; with δ > 0 the last one carries all of δ (as
    partition selection does), at an exact (ε, δ) no larger than its share."""
    laplace = DiscreteLaplaceProfile(float_up(1 / share), 1)  # ε = 1/scale ≤ share, exactly
    if delta == 0:
        return [laplace] * k
    return [laplace] * (k - 1) + [approximate_dp_profile(float_down(share), float_down(delta))]


def _one_step_over(
    eps: Fraction, delta: Fraction, spent: PrivacyProfile
) -> tuple[PrivacyProfile, Fraction, Fraction]:
    """The spend (profile, declared ε, declared δ) taking ``spent`` (which fits (ε, δ)) one
    ulp of ε (and of δ, when δ > 0) over the budget. An approx budget judges the mechanisms'
    profiles, which may fall short of their exact shares by rounding: the step covers that
    shortfall, so what is refused is a real excess."""
    g = spent.exact_guarantee()
    assert g is not None and g[0] <= eps and g[1] <= delta
    step_eps = float_up(eps - g[0] + Fraction(math.ulp(float(eps))))
    if delta == 0:
        return pure_dp_profile(step_eps), Fraction(step_eps), Fraction(0)
    step_delta = float_up(delta - g[1] + Fraction(math.ulp(float(delta))))
    return (
        approximate_dp_profile(step_eps, step_delta),
        Fraction(step_eps),
        Fraction(step_delta),
    )


@pytest.mark.slow  # an exact profile search per share: seconds of CPU per case
@pytest.mark.parametrize("delta", DELTAS, ids=str)
@pytest.mark.parametrize("eps", EPSILONS, ids=str)
def test_exact_shares_fit_and_one_step_more_is_refused(eps: Fraction, delta: Fraction) -> None:
    for k in SPLITS:
        query = compose(*_parts(eps / k, k, delta))
        extra, extra_eps, extra_delta = _one_step_over(eps, delta, query)
        for budget in _budgets(eps, delta):
            whole = Accountant(budget)
            whole.spend(query, epsilon=eps, delta=delta)  # one query of (ε, δ): fits
            with pytest.raises(BudgetExceeded):
                whole.spend(extra, epsilon=extra_eps, delta=extra_delta)
            assert len(whole.spent()) == 1

            over = Accountant(budget)  # the same parts and the step over, as one query
            with pytest.raises(BudgetExceeded):
                over.spend(
                    compose(query, extra), epsilon=eps + extra_eps, delta=delta + extra_delta
                )
            assert over.spent() == ()


@pytest.mark.parametrize("delta", DELTAS, ids=str)
@pytest.mark.parametrize("eps", EPSILONS, ids=str)
def test_separate_spends_of_the_shares_fill_the_budget(eps: Fraction, delta: Fraction) -> None:
    for k in (1, 3, 6, 7, 64):
        parts = _parts(eps / k, k, delta)
        extra, extra_eps, extra_delta = _one_step_over(eps, delta, compose(*parts))
        for budget in _budgets(eps, delta):
            acc = Accountant(budget)
            for p in parts:
                g = p.exact_guarantee()
                assert g is not None
                acc.spend(p, epsilon=eps / k, delta=delta if g[1] else 0)
            assert not acc.can_spend(extra, epsilon=extra_eps, delta=extra_delta)


def test_approx_pure_budget_refuses_one_ulp_over() -> None:
    # A loss one ulp above ε: the PLD's float δ just below it cancels to exactly 0, so an
    # approx (ε, 0) budget is decided on the exact sum of the parts' pure ε instead.
    eps = Fraction(1, 10)
    query = compose(*_parts(eps, 1, Fraction(0)))
    extra, extra_eps, _ = _one_step_over(eps, Fraction(0), query)
    acc = Accountant(Budget.approx(eps, 0))
    acc.spend(query, epsilon=eps)
    assert not acc.can_spend(extra, epsilon=extra_eps)


@pytest.mark.parametrize("delta", DELTAS, ids=str)
@pytest.mark.parametrize("eps", EPSILONS, ids=str)
def test_float_shares_of_the_curator_fit(eps: Fraction, delta: Fraction) -> None:
    for k in SPLITS:
        share = split_share(eps, k)
        query = compose(*_parts(share, k, delta))
        for budget in _budgets(eps, delta):
            Accountant(budget).spend(query, epsilon=eps, delta=delta)


_WHOLES = st.one_of(
    st.fractions(min_value=Fraction(1, 10**9), max_value=Fraction(10**6), max_denominator=10**9),
    st.floats(min_value=1e-300, max_value=1e300).map(Fraction),
    st.sampled_from(EPSILONS + DELTAS[1:]),
)


@pytest.mark.slow
@given(whole=_WHOLES, parts=st.integers(1, 2000))
def test_float_sum_of_shares_never_exceeds_the_whole(whole: Fraction, parts: int) -> None:
    share = split_share(whole, parts)
    f = float(share)
    assert Fraction(f) == share  # a float, passed on unrounded
    running = 0.0
    for _ in range(parts):
        running += f
    assert parts * share <= whole
    assert Fraction(running) <= whole
    assert Fraction(math.fsum([f] * parts)) <= whole
    assert Fraction(sum([f] * parts)) <= whole
    # and not wastefully small: within the rounding of a float sum of that many terms
    assert share >= whole / parts * (1 - (parts + 2) * 2.0**-52)


def test_split_share_of_nothing_and_bad_parts() -> None:
    assert split_share(Fraction(0), 7) == 0
    with pytest.raises(ParameterError):
        split_share(Fraction(1), 0)
