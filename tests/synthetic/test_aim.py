"""AIM's round planning (McKenna et al. 2022, §4.4's yardstick: measuring r at σ leaves an
expected L1 error of √(2/π)·σ·n_r): the planned count of rounds keeps a median pair's expected
first-round TV error within FIRST_ROUND_TV, stays within [2·d, 16·d], and its count step is
charged like every other step."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from infodp.mechanisms.sampling import InsecureSeededSource
from infodp.synthetic.aim import ALPHA, FIRST_ROUND_TV, PLANNING_SHARE, aim, planned_rounds


def _first_round_tv(t: int, rho: Fraction, rows: float, cells: float, sensitivity: int) -> float:
    """The expected TV error of a first-round pair measurement, from its definition: a round's
    σ = Δ·√(T/(2αρ)) and E‖noise‖₁ = √(2/π)·σ per cell, over 2n."""
    sigma = sensitivity * math.sqrt(t / (2 * float(ALPHA) * float(rho)))
    return math.sqrt(2 / math.pi) * sigma * cells / (2 * rows)


@given(
    d=st.integers(2, 30),
    rho=st.fractions(Fraction(1, 10**7), Fraction(100)),
    rows=st.floats(1.0, 1e8),
    cells=st.floats(4.0, 1e4),
    sensitivity=st.integers(1, 5),
)
def test_the_planned_rounds_are_the_most_that_keep_the_first_round_useful(
    d: int, rho: Fraction, rows: float, cells: float, sensitivity: int
) -> None:
    t = planned_rounds(d, rho, rows, cells, sensitivity)
    assert 2 * d <= t <= 16 * d
    if 2 * d < t < 16 * d:  # inside the clamp, T is the largest count meeting the bound
        assert _first_round_tv(t, rho, rows, cells, sensitivity) <= FIRST_ROUND_TV * (1 + 1e-9)
        assert _first_round_tv(t + 1, rho, rows, cells, sensitivity) > FIRST_ROUND_TV
    elif t == 2 * d:  # clamped from below: even 2·d rounds are noisier than the bound
        assert _first_round_tv(t + 1, rho, rows, cells, sensitivity) > FIRST_ROUND_TV


@given(
    rho=st.fractions(Fraction(1, 10**6), Fraction(10)),
    more=st.fractions(Fraction(1), Fraction(100)),
    rows=st.floats(10.0, 1e7),
)
def test_more_budget_or_more_rows_never_plans_fewer_rounds(
    rho: Fraction, more: Fraction, rows: float
) -> None:
    base = planned_rounds(8, rho, rows, 30.0)
    assert planned_rounds(8, rho * more, rows, 30.0) >= base
    assert planned_rounds(8, rho, rows * float(more), 30.0) >= base


@pytest.mark.parametrize("rows", [0.0, -50.0])
def test_a_count_at_or_below_zero_plans_the_fewest_rounds(rows: float) -> None:
    assert planned_rounds(5, Fraction(1), rows, 20.0) == 10


@pytest.mark.slow
def test_the_planning_count_is_a_charged_step_and_the_total_stays_within_rho() -> None:
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 4, size=(2000, 3)).astype(np.int64)
    rho = Fraction(1, 50)
    src = InsecureSeededSource(5, i_understand_this_is_not_private=True)
    fit = aim(codes, (4, 4, 4), rho, source=src)
    name, charged = fit.steps[0]
    assert name.startswith("row count for planning")
    # The count's σ is rounded up, so it spends at most its share (Canonne, Kamath & Steinke
    # 2020, Thm 4: ρ = Δ²/(2σ²)).
    assert charged <= rho * PLANNING_SHARE
    assert charged >= rho * PLANNING_SHARE * (1 - Fraction(1, 10**6))
    assert fit.spent <= rho
    # Given rounds, nothing is spent on planning.
    given_rounds = aim(codes, (4, 4, 4), rho, source=src, rounds=48)
    assert not any(n.startswith("row count") for n, _ in given_rounds.steps)
    assert given_rounds.spent <= rho


@pytest.mark.slow
def test_a_small_budget_plans_fewer_rounds_than_a_large_one() -> None:
    """On 20 000 rows, ε ≈ 0.1 (ρ = 1/3000) plans the floor 2·d; ρ = 1 plans 16·d: the rounds
    named in the steps (one line per round after the one-way marginals) follow."""
    rng = np.random.default_rng(8)
    codes = rng.integers(0, 6, size=(20_000, 4)).astype(np.int64)
    src = InsecureSeededSource(6, i_understand_this_is_not_private=True)
    small = aim(codes, (6, 6, 6, 6), Fraction(1, 3000), source=src)
    large = aim(codes, (6, 6, 6, 6), Fraction(1), source=src)
    one_way_small = next(n for n, _ in small.steps if "one-way" in n)
    one_way_large = next(n for n, _ in large.steps if "one-way" in n)
    sigma_small = float(one_way_small.split("σ = ")[1])
    sigma_large = float(one_way_large.split("σ = ")[1])
    # σ of the one-way round = √(T/(2α(ρ − ρ_count))): recover T from it.
    t_small = round(sigma_small**2 * 2 * float(ALPHA) * float(Fraction(1, 3000)) * 0.99)
    t_large = round(sigma_large**2 * 2 * float(ALPHA) * 0.99)
    assert t_small == 8
    assert t_large == 64
