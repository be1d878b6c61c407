"""the "DP and Information Theory" (2022) article's (ε, δ) catastrophe: the (ε, δ) audit passes,
the α = 1 information is unbounded."""

from __future__ import annotations

import math

import pytest

from infodp.accounting import approximate_dp_profile
from infodp.audit import audit
from infodp.audit.attacks import catastrophe_mechanism, epsilon_delta_attack


@pytest.mark.slow
def test_catastrophe_passes_the_delta_audit_but_leaks_unboundedly() -> None:
    r = epsilon_delta_attack(
        epsilon=1.0, delta=0.01, bits=4096, samples=100_000, trials=100_000, rng=61
    )
    assert r.delta_audit_verdict == "consistent"
    assert r.delta_audit_epsilon_lower <= 1.0
    assert r.pure_audit_verdict == "violation" and r.pure_audit_epsilon_lower > 1.0
    # infodp's own accounting: an (ε, δ) profile bounds nothing at α = 1.
    assert r.claimed_information == math.inf
    # Pure ε-DP caps C_1 at ε·tanh(ε/2) (KL of randomized response, Kairouz et al. 2015).
    assert r.pure_dp_information_ceiling == pytest.approx(math.tanh(0.5), rel=1e-12)
    # Lower bound δ_lo·k·log 2, below the exact δ·k·log 2 and far above the ε-DP ceiling.
    assert r.pure_dp_information_ceiling < r.information_lower <= 0.01 * 4096 * math.log(2)
    assert r.bits_to_exceed_ceiling == math.floor(math.tanh(0.5) / (0.01 * math.log(2))) + 1
    # Expected number of queries until the dataset is published: 1/δ (geometric mean).
    assert abs(r.queries_until_published - 100) < 5 * 100 / math.sqrt(1000)


def test_information_grows_linearly_with_row_size() -> None:
    small = epsilon_delta_attack(1.0, 0.01, 1000, samples=1000, trials=50_000, rng=62)
    large = epsilon_delta_attack(1.0, 0.01, 100_000, samples=1000, trials=50_000, rng=62)
    assert large.information_lower > 50 * small.information_lower


def test_auditor_notes_unbounded_alpha_one() -> None:
    mech = catastrophe_mechanism(1.0, 0.01)
    res = audit(
        mech,
        [0],
        [1],
        samples=20_000,
        claimed_profile=approximate_dp_profile(1.0, 0.01),
        claimed_delta=0.01,
        rng=63,
    )
    assert res.claimed_information == math.inf
    assert any("unbounded" in note for note in res.notes)
