"""The curator releases through infodp.mechanisms objects and is priced by their profiles.

Independent references: the mechanisms' own pmfs (chi-square of the released noise), the
composition rules of the accounting layer (RDP adds at a fixed order, Mironov 2017, Prop. 1;
PLD composition for δ(ε)), the black-box auditor's lower bound, and zCDP → (ε, δ)
(Bun & Steinke 2016, Prop. 1.3) for the zCDP budget equivalent to (1, 1e-6).
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from _stores import cats, ints, one_table
from infodp.accounting import compose
from infodp.accounting.accountant import Accountant, Budget
from infodp.accounting.conversions import zcdp_to_epsilon
from infodp.accounting.spec import profile_from_spec
from infodp.curator.engine import Curator
from infodp.errors import BudgetExceeded
from infodp.mechanisms import DiscreteGaussianMechanism, DiscreteLaplaceMechanism
from infodp.mechanisms.sampling import InsecureSeededSource

CATS = [f"c{i:02d}" for i in range(100)]
SCHEMA = one_table("t", {"g": cats(*CATS), "v": ints(0, 5)}, public_rows=5000)


def seeded(seed: int) -> InsecureSeededSource:
    return InsecureSeededSource(seed, i_understand_this_is_not_private=True)


def frame() -> pd.DataFrame:
    rng = np.random.default_rng(9)
    return pd.DataFrame({"g": rng.choice(CATS, 5000), "v": rng.integers(0, 6, 5000)})


def curator(path: Path, seed: int = 0) -> Curator:
    # keep_open: one read connection (nothing is registered after the first query), not a
    # DuckDB open per release: the budget tests release until refused.
    cur = Curator(path, source=seeded(seed), keep_open=True)
    cur.register_dataset("t", frame(), SCHEMA)
    return cur


def pvalue(noise: list[int], mech: DiscreteLaplaceMechanism | DiscreteGaussianMechanism) -> float:
    """Chi-square of the noise against the mechanism's own pmf, tails lumped."""
    half = max(3, int(2 * float(getattr(mech, "scale", getattr(mech, "sigma", 1.0)))))
    ks = np.arange(-half, half + 1, dtype=np.int64)
    probs = mech._noise_pmf(ks)
    tail = (1.0 - probs.sum()) / 2
    probs[0] += tail
    probs[-1] += tail
    observed = np.bincount(np.clip(noise, -half, half) + half, minlength=ks.size)
    return float(stats.chisquare(observed, probs / probs.sum() * len(noise)).pvalue)


@pytest.mark.slow  # ~0.7 CPU-s (measured)
@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_every_cell_noise_follows_the_mechanism_pmf(tmp_path: Path, noise: str) -> None:
    sql = "SELECT g, COUNT(*) FROM t GROUP BY g"
    draws: list[int] = []
    mech = None
    for seed in range(4):
        cur = curator(tmp_path / f"{noise}{seed}.duckdb", seed)
        cur.add_analyst("a", "t", epsilon=10, delta="1e-3")
        exact = cur.exact_aggregates(sql).values
        result = cur.query("a", sql, epsilon="0.5", delta="1e-5", noise=noise)
        part = result.cost.parts[0]
        mech = part.mechanism
        expected = DiscreteGaussianMechanism if noise == "gaussian" else DiscreteLaplaceMechanism
        assert isinstance(mech, expected)
        draws += [
            int(raw[0] or 0) - int(exact.get((row[0],), (0,))[0] or 0)
            for row, raw in zip(result.rows, result.noisy, strict=True)
        ]
        cur.close()
    assert mech is not None and len(draws) == 400
    assert pvalue(draws, mech) > 1e-3
    # the check has power: the same noise is far from a mechanism 1.6x noisier
    wider = (
        DiscreteGaussianMechanism(mech.sigma * 1.6)
        if noise == "gaussian"
        else DiscreteLaplaceMechanism(mech.scale * 1.6)
    )
    assert pvalue(draws, wider) < 1e-4


@pytest.mark.slow
def test_charged_profile_is_the_composition_of_the_measurements(tmp_path: Path) -> None:
    cur = curator(tmp_path / "c.duckdb")
    cur.add_analyst("a", "t", budget=Budget.approx(10.0, 1e-3))
    sql = "SELECT AVG(v), COUNT(*) FROM t WHERE g = 'c01'"
    result = cur.query("a", sql, epsilon=1, delta="1e-6", noise="gaussian")
    charged = profile_from_spec(cur.ledger.entry_profile(result.entry_id))
    parts = [p.mechanism.profile() for p in result.cost.parts]
    assert len(parts) == 3  # csum(v), count(v), count(*)
    reference = compose(*parts)
    orders = [1.5, 2.0, 4.0, 8.0, 32.0]
    assert np.allclose(charged.rdp(orders), [sum(p.rdp(a) for p in parts) for a in orders])
    for eps in (0.25, 0.5, 1.0, 2.0):
        assert charged.delta(eps) == pytest.approx(reference.delta(eps), rel=1e-9, abs=1e-15)
    for alpha in (1.0, 2.0, math.inf):
        direct = sum(p.information(alpha) for p in parts) if alpha == 1.0 else None
        got = charged.information(alpha)
        assert got == pytest.approx(reference.information(alpha), rel=1e-9)
        if direct is not None:  # KL adds under composition (chain rule)
            assert got == pytest.approx(direct, rel=1e-9)
    leak = result.leakage["nats"]
    assert leak["1"] == pytest.approx(charged.information(1.0), rel=1e-6)


@pytest.mark.slow
def test_avg_information_is_read_from_its_two_measurements(tmp_path: Path) -> None:
    cur = curator(tmp_path / "avg.duckdb")
    cur.add_analyst("a", "t", epsilon=5)
    result = cur.query("a", "SELECT AVG(v) FROM t", epsilon=1)
    # two discrete Laplace measurements at ε = 1/2: KL = ε + e^−ε − 1 each for the Laplace
    # (≈ 0.1065; the discrete one a little more), about 0.23 nats in all, not the 0.462 of a
    # single ε = 1 pure-DP bound.
    nats = result.to_dict()["cost"]["leakage"]["nats"]
    assert set(nats) >= {"1", "2", "inf"}
    assert 0.2 < nats["1"] < 0.25
    assert nats["inf"] == pytest.approx(1.0, rel=1e-6)


@pytest.mark.slow
def test_cost_is_never_below_what_an_audit_measures(tmp_path: Path) -> None:
    from infodp.audit.auditor import VectorisedMechanism, audit

    cur = curator(tmp_path / "au.duckdb")
    cur.add_analyst("a", "t", epsilon=5)
    result = cur.query("a", "SELECT COUNT(*) FROM t WHERE g = 'c02'", epsilon="0.5")
    mech = result.cost.parts[0].mechanism
    released = VectorisedMechanism(
        lambda d, n, rng: sum(d) + mech.simulate(0, n, rng), "curator COUNT"
    )
    charged = profile_from_spec(cur.ledger.entry_profile(result.entry_id))
    r = audit(released, [1], [0], samples=200_000, claimed_epsilon=0.5, rng=3)
    assert r.verdict == "consistent"
    assert r.epsilon_lower <= charged.pure_epsilon()
    assert r.epsilon_lower > 0.3  # the audit has power: the cost is nearly tight


def _gaussian_counts(cur: Curator) -> int:
    n = 0
    while True:
        try:
            cur.query("a", "SELECT COUNT(*) FROM t", epsilon="0.1", delta="1e-8", noise="gaussian")
        except BudgetExceeded:
            return n
        n += 1
        assert n < 400


@pytest.mark.slow  # ~2.8 CPU-s (measured)
def test_approx_budget_answers_at_least_fifty_gaussian_counts(tmp_path: Path) -> None:
    cur = curator(tmp_path / "ap.duckdb")
    cur.add_analyst("a", "t", budget=Budget.approx(1.0, 1e-6))
    n = _gaussian_counts(cur)
    assert n >= 50
    state = Accountant.from_json(cur.ledger.budget("a", "t").accountant_json or "")
    spent = compose(*state.spent())
    assert spent.delta(1.0) <= 1e-6  # the certified total is within the budget
    # and the refused query was refused by the tight composition, not by a looser bound
    assert compose(*state.spent(), state.spent()[0]).delta(1.0) > 1e-6
    # and under basic composition only ten would have fitted
    assert n > 10 * 4


@pytest.mark.slow  # ~2.8 CPU-s (measured)
def test_zcdp_budget_answers_at_least_fifty_gaussian_counts(tmp_path: Path) -> None:
    # The ρ whose (ε, δ) conversion is (1, 1e-6) (Bun & Steinke 2016, Prop. 1.3), by bisection.
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if zcdp_to_epsilon(mid, 1e-6) <= 1.0 else (lo, mid)
    cur = curator(tmp_path / "z.duckdb")
    cur.add_analyst("a", "t", budget=Budget.zcdp(lo))
    n = _gaussian_counts(cur)
    assert n >= 50
    state = Accountant.from_json(cur.ledger.budget("a", "t").accountant_json or "")
    rho = compose(*state.spent()).zcdp_rho()
    assert rho is not None and rho <= lo
    one = state.spent()[0].zcdp_rho()
    assert one is not None and rho + one > lo  # the refused one would not have fitted
    assert zcdp_to_epsilon(rho, 1e-6) <= 1.0


@pytest.mark.slow
@pytest.mark.parametrize(
    "budget",
    [
        None,
        Budget.pure(1.0),
        Budget.approx(1.0, 0.0),
        Budget.approx(1.0, 1e-6),
        Budget.zcdp(0.05),
        Budget.rdp([math.inf], [1.0]),
        Budget.nats(math.inf, 1.0),
    ],
    ids=["basic", "pure", "approx0", "approx", "zcdp", "rdp_inf", "nats_inf"],
)
def test_ten_tenths_fit_exactly_in_one(tmp_path: Path, budget: Budget | None) -> None:
    cur = curator(tmp_path / "ten.duckdb")
    if budget is None:
        cur.add_analyst("a", "t", epsilon=1)
    else:
        cur.add_analyst("a", "t", budget=budget)
    for _ in range(10):
        cur.query("a", "SELECT COUNT(*) FROM t", epsilon="0.1")
    with pytest.raises(BudgetExceeded):
        cur.query("a", "SELECT COUNT(*) FROM t", epsilon="0.1")


def test_accuracy_first_epsilon_reaches_the_target(tmp_path: Path) -> None:
    cur = curator(tmp_path / "acc.duckdb")
    sql = "SELECT COUNT(*) FROM t"
    eps = cur.epsilon_for(sql, accuracy=20, confidence=0.95)
    at = cur.estimate(sql, epsilon=eps, confidence=0.95)["accuracy"][0]["halfwidth"]
    assert at <= 20
    below = cur.estimate(sql, epsilon=eps * Fraction(99, 100), confidence=0.95)
    assert below["accuracy"][0]["halfwidth"] > 20 * 0.97
    # discrete Laplace: P(|Y| > h) = 2 q^(h+1)/(1 + q) ≤ 0.05 at the returned ε (closed form)
    q = math.exp(-float(eps))
    assert 2 * q ** (20 + 1) / (1 + q) <= 0.05
