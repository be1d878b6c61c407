"""The accountant never overspends, raises before recording, and its JSON state round-trips."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import infodp.accounting as acc
from infodp._exact import parse_exact
from infodp.accounting.accountant import Accountant, Budget
from infodp.errors import BudgetExceeded, ParameterError


def test_pure_budget_refuses_before_recording() -> None:
    a = Accountant(Budget.pure(1.0))
    a.spend(acc.laplace_profile(2.0))  # ε = 0.5
    a.spend(acc.pure_dp_profile(0.25))
    with pytest.raises(BudgetExceeded) as info:
        a.spend(acc.laplace_profile(2.0))
    err = info.value
    assert "0.5" in err.requested
    assert "0.25" in err.remaining
    assert "0.25" in err.gap
    assert len(a.spent()) == 2  # nothing recorded
    assert a.remaining() == 0.25


def test_can_spend_is_a_dry_run() -> None:
    a = Accountant(Budget.pure(1.0))
    assert a.can_spend(acc.laplace_profile(1.0))
    assert a.spent() == ()
    assert not a.can_spend(acc.gaussian_profile(1.0))  # ε = ∞


def test_exact_rational_totals() -> None:
    # 0.1 + 0.2 in floats is 0.30000000000000004; the accountant adds exact rationals of the
    # float costs, so the total is exactly Fraction(0.1) + Fraction(0.2).
    a = Accountant(Budget.pure(0.5))
    a.spend(acc.pure_dp_profile(0.1))
    a.spend(acc.pure_dp_profile(0.2))
    left = Fraction(0.5) - Fraction(0.1) - Fraction(0.2)
    assert Fraction(a.remaining()) <= left
    assert a.remaining() == pytest.approx(0.2, abs=1e-15)


@settings(max_examples=40)
@given(costs=st.lists(st.floats(0.0, 0.3), min_size=1, max_size=40), budget=st.floats(0.0, 2.0))
def test_never_overspends(costs: list[float], budget: float) -> None:
    a = Accountant(Budget.pure(budget))
    accepted: list[float] = []
    for c in costs:
        p = acc.pure_dp_profile(c)
        if a.can_spend(p):
            a.spend(p)
            accepted.append(c)
        else:
            with pytest.raises(BudgetExceeded):
                a.spend(p)
    # A float budget means its shortest decimal (infodp._exact, the one converter).
    assert sum(Fraction(c) for c in accepted) <= parse_exact("budget", budget)
    assert len(a.spent()) == len(accepted)
    restored = Accountant.from_json(a.to_json())
    assert restored.remaining() == a.remaining()
    assert restored.spent() == a.spent()


def test_approx_budget_uses_tight_composition() -> None:
    # Gaussians with σ = 20: after k spends the composition is one Gaussian with σ/√k.
    budget = Budget.approx(1.0, 1e-5)
    a = Accountant(budget)
    g = acc.gaussian_profile(20.0)
    n = 0
    while a.can_spend(g):
        a.spend(g)
        n += 1
        assert n < 1000
    composed = acc.gaussian_profile(20.0).repeat(n)
    assert composed.delta(1.0) <= 1e-5
    assert acc.gaussian_profile(20.0).repeat(n + 1).delta(1.0) > 1e-5 * 0.99

    # Exact count from Balle & Wang 2018, Thm 8 (k Gaussians = one with σ/√k): the tight
    # accountant may lose at most one spend to its pessimistic discretisation.
    def exact_delta(k: int) -> float:
        mu = math.sqrt(k) / 20.0
        return float(stats.norm.cdf(mu / 2 - 1 / mu) - math.e * stats.norm.cdf(-mu / 2 - 1 / mu))

    k_max = max(k for k in range(1, 200) if exact_delta(k) <= 1e-5)
    assert n in (k_max - 1, k_max)
    with pytest.raises(BudgetExceeded) as info:
        a.spend(g)
    assert "δ" in info.value.requested
    state = json.loads(a.to_json())
    assert sum(item["count"] for item in state["spent"]) == n  # identical spends merged
    restored = Accountant.from_json(a.to_json())
    assert restored.remaining() == pytest.approx(a.remaining())


def test_rdp_budget_checks_every_order() -> None:
    a = Accountant(Budget.rdp([2.0, 8.0], [1.0, 3.0]))
    g = acc.gaussian_profile(2.0)  # RDP α/8: 0.25 at 2, 1.0 at 8
    a.spend(g)
    a.spend(g)
    a.spend(g)
    assert a.remaining() == {2.0: 0.25, 8.0: 0.0}
    with pytest.raises(BudgetExceeded, match="α=2"):
        a.spend(acc.gaussian_profile(1.0))
    # Order 8 is exhausted: any positive cost there is refused.
    assert not a.can_spend(acc.gaussian_profile(100.0))
    assert Accountant.from_json(a.to_json()).remaining() == a.remaining()


def test_nats_budget_at_level_alpha() -> None:
    # information(1) of the Gaussian is its capacity bound Δ²/(4σ²) nats (Cover & Thomas 2006,
    # Thm 9.4.1), half its RDP diameter 1/(2σ²).
    a = Accountant(Budget.nats(1.0, 0.5))
    a.spend(acc.gaussian_profile(2.0))  # 1/16 nats
    assert a.remaining() == pytest.approx(0.4375)
    with pytest.raises(BudgetExceeded, match="nats"):
        a.spend(acc.gaussian_profile(0.5))  # 2 nats
    b = Accountant(Budget.nats(math.inf, 1.0))
    assert not b.can_spend(acc.gaussian_profile(1.0))
    assert b.can_spend(acc.laplace_profile(1.0))
    assert Accountant.from_json(b.to_json()).budget == b.budget


def test_json_state_is_validated_on_load() -> None:
    a = Accountant(Budget.pure(1.0))
    a.spend(acc.laplace_profile(4.0))
    good = json.loads(a.to_json())
    tampered = dict(good, totals=["0"])
    with pytest.raises(ParameterError, match="totals"):
        Accountant.from_json(json.dumps(tampered))
    over = dict(good, spent=[{"mechanism": "laplace", "scale": 0.5}])
    with pytest.raises(ParameterError, match="exceeds the budget"):
        Accountant.from_json(json.dumps(over))
    with pytest.raises(ParameterError, match="state"):
        Accountant.from_json("not json")
    with pytest.raises(ParameterError, match="version"):
        Accountant.from_json(json.dumps(dict(good, version=99)))
    with pytest.raises(ParameterError, match="budget"):
        Accountant.from_json(json.dumps(dict(good, budget={"currency": "pure", "eps": 1})))
    with pytest.raises(ParameterError, match="mechanism"):
        Accountant.from_json(json.dumps(dict(good, spent=[{"mechanism": "nope"}])))


def test_budget_validation() -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        Budget.pure(-1.0)
    with pytest.raises(ParameterError, match="delta"):
        Budget.approx(1.0, 1.5)
    with pytest.raises(ParameterError, match="orders"):
        Budget.rdp([2.0], [1.0, 2.0])
    with pytest.raises(ParameterError, match="alpha"):
        Budget.nats(0.5, 1.0)
    with pytest.raises(ParameterError, match="budget"):
        Accountant("pure")  # type: ignore[arg-type]


def test_spec_round_trip_of_every_constructor() -> None:
    profiles = [
        acc.laplace_profile(2.0, 3.0),
        acc.gaussian_profile(1.5),
        acc.discrete_laplace_profile(1.0, 2),
        acc.discrete_gaussian_profile(2.0, 3),
        acc.randomized_response_profile(1.0, 4),
        acc.pure_dp_profile(0.3),
        acc.subsampled_gaussian_profile(1.1, 0.01),
        acc.approximate_dp_profile(1.0, 1e-7),
        acc.compose(acc.gaussian_profile(1.0).repeat(3), acc.laplace_profile(1.0)),
        acc.parallel(acc.gaussian_profile(1.0), acc.laplace_profile(1.0)),
        acc.subsampled_gaussian_profile(1.1, 0.01).group(2),
    ]
    for p in profiles:
        spec = json.loads(json.dumps(acc.profile_to_spec(p)))
        assert acc.profile_from_spec(spec) == p


def test_spec_rejects_unknown_keys() -> None:
    with pytest.raises(ParameterError, match="sigam"):
        acc.profile_from_spec({"mechanism": "gaussian", "sigma": 1.0, "sigam": 2})
    with pytest.raises(ParameterError, match="count"):
        acc.profile_from_spec({"mechanism": "gaussian", "sigma": 1.0, "count": 0})


@pytest.mark.slow
def test_state_with_a_discrete_subsampled_gaussian_round_trips() -> None:
    # SubsampledGaussian.profile() is the discrete lattice pair; an accountant that spent it
    # must still serialise (the curator persists accountant state as JSON).
    from infodp.mechanisms.subsampled import SubsampledGaussian

    step = SubsampledGaussian(1.0, 0.01, clip_norm=1.0).profile()
    a = Accountant(Budget.approx(10.0, 1e-5))
    a.spend(step.repeat(10))
    b = Accountant.from_json(a.to_json())
    assert b.remaining() == a.remaining()


def test_an_approx_budget_without_delta_is_a_pure_one() -> None:
    # (ε, 0)-DP is pure ε-DP (Dwork & Roth 2014, Definition 2.4 with δ = 0): the spends' pure
    # ε add up exactly (their Theorem 3.16), a Gaussian (δ(ε) > 0 at every ε) never fits, and
    # a pure ε far below one ulp of the budget is refused once the budget is full.
    account = Accountant(Budget.approx(1, 0))
    assert not account.can_spend(acc.gaussian_profile(100.0))
    for _ in range(4):
        account.spend(acc.laplace_profile(4.0))  # ε = 1/4 each, exactly
    assert not account.can_spend(acc.pure_dp_profile(1e-300))
    with pytest.raises(BudgetExceeded) as refused:
        account.spend(acc.laplace_profile(1e6))
    assert (refused.value.requested, refused.value.remaining) == ("ε=1e-06 at δ=0", "ε=0 at δ=0")
    assert len(account.spent()) == 4
