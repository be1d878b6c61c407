"""The grid quantile's law against an independent, point-by-point exponential mechanism.

The reference (``tests/_quantile_reference.py``) enumerates every grid point c of lo..hi, counts the
rows below, at and above it by brute force, scores it by the distance from q·n to the ranks
it occupies and weighs it by exp(−ε·score/(2Δ)) in 40-digit arithmetic (McSherry & Talwar
2007; Dwork & Roth 2014, Def. 3.4), with Δ = max(q, 1 − q) per row (OpenDP's quantile
scorer uses the same constant). The mechanism under test groups the points into runs
(gaps between order statistics and tied values; Smith 2011) and samples a run, then a point.
Its exact law must equal the reference point by point, and its draws must follow it
(chi-square over many draws). The properties of the score (zero at the quantile, a rank
bound, sensitivity) are checked by brute force on random data.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _quantile_reference import (
    brute_score,
    chi_square_pvalue,
    mechanism_law,
    reference_law,
)
from infodp.mechanisms.quantile import (
    ExponentialQuantile,
    grid_quantile,
    grid_quantile_law,
    score_sensitivity,
)
from infodp.mechanisms.sampling import InsecureSeededSource


def as_histogram(data: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    values, counts = np.unique(np.asarray(data, dtype=np.int64), return_counts=True)
    return values, counts.astype(np.int64)


# (name, data, lo, hi): heavily tied data and uniform data
DATASETS = [
    ("all equal", [9] * 12, 0, 20),
    ("two values 40/60", [3] * 4 + [15] * 6, 0, 20),
    ("40% zeros", [0] * 8 + list(range(5, 17)), 0, 20),
    ("uniform", list(range(0, 21)), 0, 20),
    ("all at the lower bound", [0] * 7, 0, 12),
    ("empty", [], -5, 5),
]
TIED_AND_UNIFORM = DATASETS[:4]
LEVELS = [Fraction(1, 2), Fraction(9, 10), Fraction(1, 4), Fraction(0), Fraction(1)]


@pytest.mark.parametrize(("name", "data", "lo", "hi"), DATASETS, ids=[d[0] for d in DATASETS])
@pytest.mark.parametrize("q", LEVELS, ids=str)
@pytest.mark.parametrize("epsilon", [Fraction(1, 2), Fraction(3)], ids=str)
def test_law_is_the_exponential_mechanism_over_every_grid_point(
    name: str, data: list[int], lo: int, hi: int, q: Fraction, epsilon: Fraction
) -> None:
    law = grid_quantile_law(*as_histogram(data), lo, hi, q)
    got = mechanism_law(law, lo, hi, epsilon, score_sensitivity(1, q))
    want = reference_law(data, lo, hi, q, epsilon, 1)
    assert sum(law.mults.tolist()) == hi - lo + 1  # the runs tile the grid
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "data", "lo", "hi"), TIED_AND_UNIFORM, ids=[d[0] for d in TIED_AND_UNIFORM]
)
@pytest.mark.parametrize("q", [Fraction(1, 2), Fraction(9, 10)], ids=str)
def test_draws_follow_the_reference_law(
    name: str, data: list[int], lo: int, hi: int, q: Fraction
) -> None:
    epsilon = Fraction(1)
    src = InsecureSeededSource(sum(data) + q.denominator, i_understand_this_is_not_private=True)
    mech = ExponentialQuantile(epsilon, 1)
    values, counts = as_histogram(data)
    draws = [mech.release_grid(values, counts, lo, hi, q, source=src) for _ in range(4000)]
    want = reference_law(data, lo, hi, q, epsilon, 1)
    assert chi_square_pvalue(draws, want, lo) > 1e-4
    # and in total variation, against the reference (sampling error ~ sqrt(k / n) ≈ 0.07)
    emp = np.bincount(np.asarray(draws) - lo, minlength=hi - lo + 1) / len(draws)
    assert 0.5 * np.abs(emp - np.asarray(want)).sum() < 0.08


def test_tied_data_answer_the_tied_value() -> None:
    # 40 rows all equal to 90 in [0, 100] at ε = 10: the one-sided score tied every candidate;
    # here every other point has score ≥ 20 rows, weight e^(-200) each.
    src = InsecureSeededSource(5, i_understand_this_is_not_private=True)
    law = grid_quantile_law(np.array([90]), np.array([40]), 0, 100, Fraction(1, 2))
    draws = {grid_quantile(law, Fraction(10), Fraction(1, 2), src) for _ in range(200)}
    assert draws == {90}


def test_a_group_without_rows_is_uniform_over_the_grid() -> None:
    src = InsecureSeededSource(6, i_understand_this_is_not_private=True)
    empty = np.zeros(0, dtype=np.int64)
    law = grid_quantile_law(empty, empty, 3, 9, Fraction(1, 2))
    draws = [grid_quantile(law, Fraction(1), Fraction(1), src) for _ in range(2100)]
    assert chi_square_pvalue(draws, [1 / 7] * 7, 3) > 1e-4


def test_huge_level_denominators_use_exact_integers() -> None:
    # q with a denominator so large that b·n leaves int64: the Python-integer path
    q = Fraction(1, 3) + Fraction(1, 10**30)
    data = [1, 2, 2, 7]
    law = grid_quantile_law(*as_histogram(data), 0, 8, q)
    assert isinstance(law.scores, list)
    got = mechanism_law(law, 0, 8, Fraction(2), score_sensitivity(1, q))
    np.testing.assert_allclose(got, reference_law(data, 0, 8, q, Fraction(2), 1), rtol=1e-12)
    src = InsecureSeededSource(7, i_understand_this_is_not_private=True)
    assert 0 <= grid_quantile(law, Fraction(2), score_sensitivity(1, q), src) <= 8


small_data = st.lists(st.integers(0, 12), max_size=25)
levels = st.fractions(min_value=0, max_value=1, max_denominator=20)


@settings(max_examples=60, deadline=None)
@given(data=small_data, q=levels)
def test_score_is_zero_at_the_quantile_and_bounds_both_rank_violations(
    data: list[int], q: Fraction
) -> None:
    law = grid_quantile_law(*as_histogram(data), 0, 12, q)
    n = len(data)
    per_point: dict[int, Fraction] = {}
    for start, mult, s in zip(law.starts.tolist(), law.mults.tolist(), law.scores, strict=True):
        for c in range(start, start + mult):
            per_point[c] = Fraction(int(s), law.denominator)
    assert sorted(per_point) == list(range(13))
    for c, s in per_point.items():
        assert s == brute_score(data, c, q)
        # rank error: at most q·n + s rows below and (1 − q)·n + s rows above (both sides)
        assert sum(1 for x in data if x < c) <= q * n + s
        assert sum(1 for x in data if x > c) <= (1 - q) * n + s
    assert min(per_point.values()) == 0  # the best point is a q-quantile (an exact rank)


@settings(max_examples=60, deadline=None)
@given(data=small_data, extra=st.integers(0, 12), q=levels)
def test_one_more_row_moves_every_score_by_at_most_the_sensitivity(
    data: list[int], extra: int, q: Fraction
) -> None:
    # the neighbouring dataset (add/remove one row), scored independently point by point
    bound = score_sensitivity(1, q)
    for c in range(13):
        assert abs(brute_score([*data, extra], c, q) - brute_score(data, c, q)) <= bound


def test_bad_histograms_are_refused() -> None:
    from infodp.errors import ParameterError

    with pytest.raises(ParameterError, match="values"):
        grid_quantile_law(np.array([3, 3]), np.array([1, 1]), 0, 9, Fraction(1, 2))
    with pytest.raises(ParameterError, match="values"):
        grid_quantile_law(np.array([10]), np.array([1]), 0, 9, Fraction(1, 2))
    with pytest.raises(ParameterError, match="counts"):
        grid_quantile_law(np.array([3]), np.array([0]), 0, 9, Fraction(1, 2))
    with pytest.raises(ParameterError, match="q"):
        grid_quantile_law(np.array([3]), np.array([1]), 0, 9, Fraction(3, 2))


# -- MIN and MAX: the extremes aimed at rank t (extreme_target) ---------------------------------


@pytest.mark.parametrize(("name", "data", "lo", "hi"), DATASETS, ids=[d[0] for d in DATASETS])
@pytest.mark.parametrize("q", [Fraction(0), Fraction(1)], ids=str)
@pytest.mark.parametrize("aim", [0, 3, 40])
def test_extreme_law_aimed_at_rank_t_is_the_reference(
    name: str, data: list[int], lo: int, hi: int, q: Fraction, aim: int
) -> None:
    law = grid_quantile_law(*as_histogram(data), lo, hi, q, target=aim)
    got = mechanism_law(law, lo, hi, Fraction(2), score_sensitivity(1, q))
    want = reference_law(data, lo, hi, q, Fraction(2), 1, aim=aim)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)


@settings(max_examples=60, deadline=None)
@given(data=small_data, extra=st.integers(0, 12), aim=st.integers(0, 8), top=st.booleans())
def test_aimed_extreme_score_keeps_sensitivity_one_per_row(
    data: list[int], extra: int, aim: int, top: bool
) -> None:
    # τ = min(t, n/2) moves with n: still at most 1 per added or removed row (brute force)
    q = Fraction(int(top))
    for c in range(13):
        moved = brute_score([*data, extra], c, q, aim) - brute_score(data, c, q, aim)
        assert abs(moved) <= score_sensitivity(1, q) == 1
        # and the promise: at most t + score rows lie past c on the extreme's side
        past = sum(1 for x in data if (x > c if top else x < c))
        assert past <= aim + brute_score(data, c, q, aim)


def test_extreme_target_is_the_utility_theorem_rank() -> None:
    import math

    from infodp.mechanisms.quantile import extreme_target

    # ⌈(2m/ε)(ln K + ln 20)⌉ (Dwork & Roth 2014, Thm 3.11 at β = 1/20)
    for eps, m, k in ((Fraction(1, 10), 1, 101), (Fraction(10), 3, 2**21 + 1)):
        want = math.ceil(float(2 * m / eps) * (math.log(k) + math.log(20)))
        assert extreme_target(eps, m, k) == want


def test_aimed_rank_is_refused_for_inner_quantiles() -> None:
    from infodp.errors import ParameterError

    with pytest.raises(ParameterError, match="target"):
        grid_quantile_law(np.array([3]), np.array([1]), 0, 9, Fraction(1, 2), target=2)


# -- resolution: the grid against Smith's continuous mechanism ---------------------------------


def _smith_expected_error(
    x: np.ndarray, low: float, high: float, q: float, eps: float, delta: float | None = None
) -> float:
    """E|answer − P_q| of Smith (2011)'s continuous mechanism on the raw values, closed form:
    the gap between order statistics k and k + 1 with probability ∝ length ×
    exp(−ε·|k − q·n|/(2Δ)), Δ = max(q, 1 − q) unless given, then uniform within it."""
    truth = float(np.quantile(x, q))
    edges = np.concatenate([[low], np.sort(x), [high]])
    delta = max(q, 1 - q) if delta is None else delta
    gamma = eps / (2 * delta) * np.abs(np.arange(len(x) + 1) - q * len(x))
    a, b = edges[:-1], edges[1:]
    w = (b - a) * np.exp(-(gamma - gamma.min()))
    mid, width = (a + b) / 2, np.where(b > a, b - a, 1.0)
    err = np.where(truth <= a, mid - truth, truth - mid)
    inside = (a < truth) & (truth < b)
    err = np.where(inside, ((truth - a) ** 2 + (b - truth) ** 2) / (2 * width), err)
    return float((w * err).sum() / w.sum())


def _p90_grid_expected_error(x: np.ndarray, step: float, eps: float) -> float:
    """E|answer − P90| of the grid exponential mechanism over [0, 300 000] on ``step``, from
    its exact law (each run of equally scored points uniform), Δ = 0.9."""
    q = Fraction(9, 10)
    values, counts = as_histogram(np.floor(x / step + 0.5).astype(np.int64).tolist())
    law = grid_quantile_law(values, counts, 0, round(300_000 / step), q)
    scores = np.array([int(s) for s in law.scores], dtype=np.float64) / law.denominator
    w = law.mults.astype(np.float64) * np.exp(-eps / (2 * 0.9) * (scores - scores.min()))
    truth = float(np.quantile(x, 0.9))
    err = 0.0
    for start, mult, weight in zip(
        law.starts.tolist(), law.mults.tolist(), w / w.sum(), strict=True
    ):
        if weight > 1e-18:
            err += weight * float(np.abs((start + np.arange(mult)) * step - truth).mean())
    return err


@pytest.mark.parametrize("eps", [1.0, 10.0])
def test_the_release_grid_costs_little_against_the_continuous_mechanism(eps: float) -> None:
    # A float column on [0, 300 000] is snapped to the grid 0.25 (2^-21 of its bound): the
    # grid mechanism's expected error of P90 is within 5% of Smith's gridless one.
    x = np.clip(np.random.default_rng(2026).lognormal(10.5, 0.8, 20_000), 0, 300_000)
    err = _p90_grid_expected_error(x, 0.25, eps)
    assert err <= 1.05 * _smith_expected_error(x, 0, 300_000, 0.9, eps)


@pytest.mark.parametrize("eps", [1.0, 10.0])
def test_the_p90_grid_is_as_accurate_as_the_continuous_mechanism(eps: float) -> None:
    # The grid a float column's P90 is answered on (the sum grid 0.25 split in 16): the
    # expected error, in closed form, is within 1% of Smith's gridless mechanism at infodp's
    # Δ = 0.9 and no more than that of diffprivlib's law (Smith's with Δ = 1, which its
    # quantile passes to its exponential mechanism).
    from infodp.curator.declaration.schema import ColumnSpec
    from infodp.curator.plan.grid import quantile_grid

    x = np.clip(np.random.default_rng(2026).lognormal(10.5, 0.8, 20_000), 0, 300_000)
    grid = quantile_grid(ColumnSpec("v", "float", bounds=(0.0, 300_000.0)), Fraction(9, 10))
    assert grid.step == 0.25 / 16 and (grid.lo, grid.hi) == (0, round(300_000 / grid.step))
    err = _p90_grid_expected_error(x, grid.step, eps)
    assert err <= 1.01 * _smith_expected_error(x, 0, 300_000, 0.9, eps)
    assert err <= _smith_expected_error(x, 0, 300_000, 0.9, eps, delta=1.0)
