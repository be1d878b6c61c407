"""Averaging attack: the mean of many answers converges to the truth (Laplace variance 2b²),
and infodp's curator refuses the query that would overspend."""

from __future__ import annotations

import math

import numpy as np
import pytest

from infodp.audit.attacks import UnbudgetedCurator, averaging_attack
from infodp.mechanisms.sampling import InsecureSeededSource


def test_unbudgeted_curator_converges() -> None:
    c = UnbudgetedCurator((1, 0, 1, 1), epsilon=0.5)
    answers = c.answers(200_000, rng=51)
    # Laplace(b) has variance 2b² (b = 2): the mean's error is ~ √(8/200000) ≈ 0.0063.
    assert abs(answers.mean() - 3) < 5 * math.sqrt(8 / 200_000)
    assert np.var(answers) == pytest.approx(8.0, rel=0.03)


@pytest.mark.slow  # ~0.6 CPU-s (measured)
def test_naive_attack_wins_and_infodp_refuses() -> None:
    src = InsecureSeededSource(3, i_understand_this_is_not_private=True)
    r = averaging_attack(epsilon=0.25, queries=4000, budget=1.0, trials=1000, rng=52, source=src)
    # CLT: mean error sd = √2·(1/ε)/√q; E|error| = sd·√(2/π).
    sd = math.sqrt(2) * 4 / math.sqrt(4000)
    assert r.naive_error == pytest.approx(sd * math.sqrt(2 / math.pi), rel=0.1)
    assert r.naive_success >= 0.99 and r.naive_success_lower > r.dp_ceiling
    # Ledger: budget 1 at 0.25 per query → exactly 4 answers, the 5th is refused.
    assert r.infodp_answered == 4 and r.infodp_refused
    assert "budget exceeded" in r.infodp_refusal
    # With 4 answers the attacker stays under the ε = 1 ceiling e/(1+e) (up to sampling noise).
    assert r.infodp_success <= r.dp_ceiling + 3 * math.sqrt(0.25 / 1000)
