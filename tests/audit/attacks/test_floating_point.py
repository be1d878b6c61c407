"""Mironov (2012) floating-point attack: near-certain against textbook float Laplace, chance
against infodp's snapped exact release."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from infodp.audit.attacks import (
    floating_point_attack,
    naive_laplace,
    reachable_from,
    snapped_laplace_release,
)
from infodp.errors import ParameterError
from infodp.mechanisms.sampling import InsecureSeededSource


@pytest.mark.parametrize("scale", [0.5, 1.0, 10.0, 1000.0])
@pytest.mark.parametrize("value", [0.0, 1.0, -3.25])
def test_reachability_has_no_false_negatives(scale: float, value: float) -> None:
    # Every output the sampler really produced from ``value`` must test reachable from it
    # (otherwise the attacker would rule out the truth).
    y = naive_laplace(value, scale, 20_000, rng=21)
    assert reachable_from(y, value, scale).all()


def test_outputs_from_zero_are_often_unreachable_from_one() -> None:
    # Mironov 2012: the textbook sampler's support is porous and depends on the input.
    y = naive_laplace(0.0, 10.0, 20_000, rng=22)
    assert reachable_from(y, 1.0, 10.0).mean() < 0.6


def test_naive_attack_near_certain_and_beyond_any_dp_guarantee() -> None:
    r = floating_point_attack(epsilon=0.1, queries=10, trials=2000, rng=23, infodp_trials=300)
    # Kairouz–Oh–Viswanath 2015, Thm 2.1: a (kε)-DP mechanism allows success ≤ e^{kε}/(1+e^{kε}).
    assert r.dp_ceiling == pytest.approx(1 / (1 + math.exp(-1.0)))
    assert r.naive_success >= 0.99
    assert r.naive_success_lower > r.dp_ceiling
    # infodp's release path: every grid point reachable from either input, success ≈ ½.
    assert r.infodp_ruled_out == 0.0
    wins = round(r.infodp_success * r.infodp_trials)
    assert stats.binomtest(wins, r.infodp_trials, 0.5).pvalue > 1e-3
    assert r.infodp_success_upper < 0.6


def test_single_query_success_matches_the_ruled_out_fraction() -> None:
    # With one query the attacker is right whenever the wrong input is ruled out, else a coin:
    # success = ruled + (1 − ruled)/2 (up to the coin's sampling noise).
    r = floating_point_attack(epsilon=0.1, queries=1, trials=4000, rng=24, infodp_trials=50)
    expected = r.naive_ruled_out + (1 - r.naive_ruled_out) / 2
    assert r.naive_success == pytest.approx(expected, abs=4 * math.sqrt(0.25 / 4000))
    assert r.naive_success > r.dp_ceiling


def test_release_is_on_the_grid_and_refuses_seeds() -> None:
    src = InsecureSeededSource(5, i_understand_this_is_not_private=True)
    ys = np.array([snapped_laplace_release(0.3, 4.0, src) for _ in range(200)])
    grid = 2.0**-10
    assert np.all(np.floor(ys / grid) == ys / grid)
    with pytest.raises(ParameterError, match="source"):
        snapped_laplace_release(0.0, 1.0, 42)  # type: ignore[arg-type]


def test_bad_parameters() -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        floating_point_attack(epsilon=0)
    with pytest.raises(ParameterError, match="queries"):
        floating_point_attack(queries=0)
