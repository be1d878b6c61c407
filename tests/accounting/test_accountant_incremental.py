"""The accountant's state is incremental, yet always equal to a replay of its history.

Laws checked (hypothesis): after any sequence of spends and refunds, in every currency, the
state (its canonical JSON and what it reports as remaining) equals the state of a fresh
accountant that spends the surviving history from scratch; an approx budget admits exactly
what the tight PLD of the whole multiset admits (the certificates it keeps are sound:
a sub-multiset of one that fits fits too, by post-processing, Dwork & Roth 2014, Prop. 2.1).
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import infodp.accounting as acc
from infodp.accounting.accountant import Accountant, Budget
from infodp.errors import BudgetExceeded, ParameterError

# (profile, declared ε, declared δ): what a curator spend looks like.
SPENDS = [
    (acc.pure_dp_profile(0.1), Fraction(1, 10), Fraction(0)),
    (acc.laplace_profile(4.0), Fraction(1, 4), Fraction(0)),
    (acc.discrete_laplace_profile(20.0), Fraction(1, 20), Fraction(0)),
    (acc.gaussian_profile(5.0), Fraction(1), Fraction(1, 10**6)),
    (acc.gaussian_profile(8.0), Fraction(1, 2), Fraction(1, 10**5)),
]

BUDGETS = [
    Budget.basic("1", "1e-5"),
    Budget.pure("1"),
    Budget.approx("1", "1e-5"),
    Budget.rdp([2.0, 8.0, math.inf], [1.0, 3.0, 1.0]),
    Budget.zcdp("0.05"),
    Budget.nats(1.0, "0.5"),
    Budget.nats(math.inf, "1"),
]


def _spend(a: Accountant, i: int) -> bool:
    p, eps, dlt = SPENDS[i]
    try:
        a.spend(p, epsilon=eps, delta=dlt)
    except BudgetExceeded:
        return False
    except ParameterError:
        return False  # e.g. a Gaussian has no pure ε: refused by the pure currency
    return True


@settings(max_examples=25, deadline=None)
@given(
    budget=st.sampled_from(BUDGETS),
    ops=st.lists(
        st.tuples(st.booleans(), st.integers(0, len(SPENDS) - 1)), min_size=1, max_size=30
    ),
)
def test_incremental_state_equals_a_replay_of_the_history(
    budget: Budget, ops: list[tuple[bool, int]]
) -> None:
    a = Accountant(budget)
    history: list[int] = []
    for refund, i in ops:
        if refund and history:
            j = history.pop(i % len(history))
            p, eps, dlt = SPENDS[j]
            a.refund(p, epsilon=eps, delta=dlt)
        elif _spend(a, i):
            history.append(i)
        replay = Accountant(budget)
        for j in history:
            # every prefix of the surviving history is a sub-multiset of an admitted state
            assert _spend(replay, j)
        assert a.to_json() == replay.to_json()
        assert a.remaining() == replay.remaining()
        assert Accountant.from_json(a.to_json()).to_json() == a.to_json()


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(sigmas=st.lists(st.sampled_from([6.0, 9.0, 15.0]), min_size=1, max_size=60))
def test_approx_admits_what_the_tight_composition_admits(sigmas: list[float]) -> None:
    budget = Budget.approx("1", "1e-6")
    a = Accountant(budget)
    spent: list[acc.PrivacyProfile] = []
    for s in sigmas:
        g = acc.gaussian_profile(s)
        admitted = a.can_spend(g)
        total = acc.compose(*spent, g)
        if admitted:
            a.spend(g)
            spent.append(g)
            assert total.delta(1.0) <= 1e-6  # certified: never more than the budget
        else:
            # refused only when the tight composition itself is over (up to rounding)
            assert total.delta(1.0) > 1e-6 * (1 - 1e-6)


def test_identical_spends_cost_few_pld_compositions(monkeypatch: pytest.MonkeyPatch) -> None:
    # The PLD verdict is remembered along the direction of the spend: a run of identical
    # spends needs O(log n) compositions, not one per spend.
    from infodp.accounting import accountant as module

    calls = []
    real = module._multiset_delta

    def counting(*args: object) -> float:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "_multiset_delta", counting)
    a = Accountant(Budget.approx("1", "1e-6"))
    g = acc.gaussian_profile(40.0)
    n = 0
    while a.can_spend(g):
        a.spend(g)
        n += 1
    assert n > 50
    # the last spends need the PLD (the RDP bound is looser), yet few compositions ran
    assert 0 < len(calls) <= 4 * math.ceil(math.log2(n)) + 4


def test_budgets_are_exact_end_to_end() -> None:
    third = Budget.pure(Fraction(1, 3))
    restored = Accountant.from_json(Accountant(third).to_json()).budget
    assert restored.epsilon == Fraction(1, 3)
    assert Budget.approx(0.3, "1e-6").epsilon == Fraction(3, 10)  # a float is its decimal
    assert Budget.zcdp("0.05").epsilon == Fraction(1, 20)
    assert Budget.from_dict(Budget.approx("0.3", "1e-6").to_dict()) == Budget.approx("0.3", 1e-6)
    # three spends of 1/10 exhaust 3/10 exactly, in every currency that adds ε
    for budget in (Budget.basic("0.3"), Budget.pure("0.3"), Budget.approx("0.3", 0)):
        a = Accountant(budget)
        for _ in range(3):
            a.spend(acc.pure_dp_profile(0.1), epsilon="0.1")
        assert not a.can_spend(acc.pure_dp_profile(0.1), epsilon="0.1")


def test_a_basic_spend_that_is_not_pure_must_declare_its_guarantee() -> None:
    a = Accountant(Budget.basic("1", "1e-6"))
    with pytest.raises(ParameterError, match="epsilon"):
        a.spend(acc.gaussian_profile(5.0))
    a.spend(acc.gaussian_profile(5.0), epsilon="1", delta="1e-6")
    assert a.remaining() == {"epsilon": 0.0, "delta": 0.0}
