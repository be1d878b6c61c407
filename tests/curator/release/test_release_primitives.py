"""Release primitives, accuracy bounds and the global information bound, against independent
references: direct summation of the discrete Laplace pmf P(y) = (1−p)/(1+p)·p^|y|
(Canonne–Kamath–Steinke 2020, Def. 1), numerical convolution, Blahut–Arimoto channel capacity,
and the closed forms quoted in the design (ln(1 + A/(2b)), ½ ln(1 + A²/(4σ²))).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infodp.curator.plan.grid import grid_step
from infodp.curator.publish.synopsis import chernoff_halfwidth
from infodp.curator.release.noise import require_release_source
from infodp.curator.rules.budget_info import _dlap_abs_mean as dlap_abs_mean
from infodp.curator.rules.budget_info import _dlap_entropy as dlap_entropy
from infodp.curator.rules.budget_info import (
    discrete_laplace_information,
    gaussian_information,
    laplace_information,
)
from infodp.errors import ParameterError
from infodp.mechanisms.laplace import DiscreteLaplaceMechanism
from infodp.mechanisms.quantile import exponential_mechanism
from infodp.mechanisms.sampling import InsecureSeededSource


def dlap_halfwidth(scale: float, beta: float) -> int:
    return DiscreteLaplaceMechanism(scale).halfwidth(beta)


def release_integer(value: int, sensitivity: int, epsilon: Fraction, source: object) -> int:
    """The curator's release of one integer: the discrete Laplace mechanism object."""
    if sensitivity == 0:
        return value
    if epsilon <= 0:
        raise ParameterError("epsilon", float(epsilon), "positive")
    mech = DiscreteLaplaceMechanism(float(Fraction(sensitivity) / epsilon), sensitivity)
    return int(mech.release_batch([value], source=require_release_source(source))[0])


def pmf(scale: float, support: int) -> tuple[np.ndarray, np.ndarray]:
    ys = np.arange(-support, support + 1)
    p = math.exp(-1 / scale)
    return ys, (1 - p) / (1 + p) * p ** np.abs(ys)


@pytest.mark.parametrize("scale", [0.3, 1.0, 2.5, 10.0, 73.0])
@pytest.mark.parametrize("beta", [0.05, 0.01, 0.2])
def test_halfwidth_is_the_smallest_valid_k(scale: float, beta: float) -> None:
    ys, w = pmf(scale, int(scale * 80) + 50)
    k = dlap_halfwidth(scale, beta)
    assert w[np.abs(ys) > k].sum() <= beta
    if k > 0:
        assert w[np.abs(ys) > k - 1].sum() > beta


@pytest.mark.parametrize("scale", [0.5, 3.0, 40.0])
def test_abs_mean_and_entropy_match_direct_sums(scale: float) -> None:
    ys, w = pmf(scale, int(scale * 120) + 50)
    assert dlap_abs_mean(scale) == pytest.approx(float((np.abs(ys) * w).sum()), rel=1e-9)
    assert dlap_entropy(scale) == pytest.approx(float(-(w * np.log(w)).sum()), rel=1e-9)


def test_release_integer_noise_has_the_stated_spread() -> None:
    src = InsecureSeededSource(11, i_understand_this_is_not_private=True)
    draws = np.array([release_integer(100, 2, Fraction(1, 2), src) - 100 for _ in range(4000)])
    scale = 4.0  # sensitivity / epsilon
    expected = dlap_abs_mean(scale)
    # E|Y| within 4 standard errors (Var|Y| <= E Y^2 = 2p/(1-p)^2)
    p = math.exp(-1 / scale)
    se = math.sqrt(2 * p / (1 - p) ** 2 / len(draws))
    assert abs(np.abs(draws).mean() - expected) < 4 * se
    assert release_integer(7, 0, Fraction(1), None) == 7
    with pytest.raises(ParameterError):
        release_integer(1, 1, Fraction(0), src)


def test_exponential_mechanism_frequencies() -> None:
    # P(j) ∝ exp(-ε s_j / (2Δ)) (McSherry & Talwar 2007) with ε = 2, Δ = 1: weights e^0, e^-1, e^-3
    src = InsecureSeededSource(5, i_understand_this_is_not_private=True)
    scores = [Fraction(0), Fraction(1), Fraction(3)]
    n = 6000
    counts = np.bincount(
        [exponential_mechanism(scores, Fraction(2), Fraction(1), src) for _ in range(n)],
        minlength=3,
    )
    w = np.exp([-0.0, -1.0, -3.0])
    expected = w / w.sum() * n
    sd = np.sqrt(expected * (1 - w / w.sum()))
    assert np.all(np.abs(counts - expected) < 4.5 * sd)


class _CountingSource(InsecureSeededSource):
    """A seeded source that counts the random bytes and integers it hands out."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed, i_understand_this_is_not_private=True)
        self.used = 0

    def randbelow(self, n: int) -> int:
        self.used += 1
        return super().randbelow(n)

    def random_bytes(self, n: int) -> bytes:
        self.used += n
        return super().random_bytes(n)


def test_exponential_mechanism_work_does_not_depend_on_the_scores() -> None:
    # A rejection loop ran a data-dependent number of rounds (one candidate holding all the
    # mass took ~n rounds, a flat score one): the inverse CDF draws the same randomness for
    # every score vector of the same length (a second round has probability < n·1e-37).
    flat = [Fraction(0)] * 1025
    peaked = [Fraction(0)] + [Fraction(10**6)] * 1024
    ramp = [Fraction(i, 7) for i in range(1025)]
    used = []
    for scores in (flat, peaked, ramp):
        src = _CountingSource(3)
        for _ in range(5):
            exponential_mechanism(scores, Fraction(1, 10), Fraction(1), src)
        used.append(src.used)
    assert used[0] == used[1] == used[2]


@pytest.mark.slow  # ~0.6 CPU-s (measured)
def test_exponential_mechanism_matches_exact_probabilities_chi_square() -> None:
    # Independent check with scipy: P(j) = exp(-γ_j) / Σ exp(-γ_i), γ_j = ε s_j / (2Δ)
    # (McSherry & Talwar 2007), including weights far below the first round's precision.
    from scipy import stats

    src = InsecureSeededSource(11, i_understand_this_is_not_private=True)
    scores = [Fraction(0), Fraction(1, 3), Fraction(2), Fraction(5, 2), Fraction(400)]
    n = 20000
    counts = np.bincount(
        [exponential_mechanism(scores, Fraction(2), Fraction(1), src) for _ in range(n)],
        minlength=5,
    )
    w = np.exp([-float(s) for s in scores])
    p = w / w.sum()
    assert counts[4] == 0  # probability e^-400 / Σ
    assert stats.chisquare(counts[:4], p[:4] / p[:4].sum() * n).pvalue > 1e-4


@pytest.mark.slow
def test_exponential_mechanism_refinement_rounds_are_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    # Force every draw past the float round (bounds [0, scale] decide nothing), so the exact
    # decimal refinement alone decides; frequencies still match the exact probabilities.
    from scipy import stats

    from infodp.mechanisms import quantile as noise

    monkeypatch.setattr(noise, "_float_round", lambda g: ([0] * len(g), [2**60] * len(g), 2**60))
    src = InsecureSeededSource(12, i_understand_this_is_not_private=True)
    scores = [Fraction(0), Fraction(1), Fraction(3, 2)]
    n = 6000
    counts = np.bincount(
        [exponential_mechanism(scores, Fraction(2), Fraction(1), src) for _ in range(n)],
        minlength=3,
    )
    w = np.exp([-float(s) for s in scores])
    assert stats.chisquare(counts, w / w.sum() * n).pvalue > 1e-4


def test_exponential_mechanism_rows_matches_exact_probabilities() -> None:
    # Each row is an independent draw with P(j) ∝ exp(−ε s_j / (2Δ)) (McSherry & Talwar
    # 2007); scipy's chi-square against the exact weights, pooled over identical rows.
    from scipy import stats

    from infodp.mechanisms.quantile import exponential_mechanism_rows

    src = InsecureSeededSource(21, i_understand_this_is_not_private=True)
    row = np.array([0, 1, 3, 2], dtype=np.int64)  # scores over denominator 2
    rows = np.tile(row, (5000, 1))
    counts = np.bincount(
        exponential_mechanism_rows(rows, 2, Fraction(2), Fraction(1), src), minlength=4
    )
    w = np.exp(-row / 2.0)
    assert stats.chisquare(counts, w / w.sum() * len(rows)).pvalue > 1e-4


def test_exponential_mechanism_rows_use_the_same_randomness_for_any_data() -> None:
    from infodp.mechanisms.quantile import exponential_mechanism_rows

    used = []
    for rows in (
        np.zeros((50, 1025), dtype=np.int64),
        np.tile(np.abs(np.arange(1025) - 512), (50, 1)).astype(np.int64),
        np.tile(np.r_[0, np.full(1024, 10**9)], (50, 1)).astype(np.int64),
    ):
        src = _CountingSource(4)
        exponential_mechanism_rows(rows, 1, Fraction(1, 100), Fraction(1), src)
        used.append(src.used)
    assert used[0] == used[1] == used[2]


def test_exponential_mechanism_rows_refinement_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every first-round decision is withheld, so the exact decimal rounds decide alone.
    from scipy import stats

    from infodp.mechanisms import quantile as noise

    real = noise._decide

    def undecided_first(u: int, bits: int, c_low: object, c_high: object) -> int:
        return -1 if bits < 200 else real(u, bits, c_low, c_high)

    monkeypatch.setattr(noise, "_decide", undecided_first)
    src = InsecureSeededSource(22, i_understand_this_is_not_private=True)
    row = np.array([0, 2, 1], dtype=np.int64)
    counts = np.bincount(
        noise.exponential_mechanism_rows(np.tile(row, (3000, 1)), 1, Fraction(1), Fraction(1), src),
        minlength=3,
    )
    w = np.exp(-row / 2.0)
    assert stats.chisquare(counts, w / w.sum() * 3000).pvalue > 1e-4


def test_release_paths_refuse_sources_that_are_not_secure() -> None:
    from infodp.curator.engine import Curator
    from infodp.curator.plan.nodes import Measurement
    from infodp.curator.price.cost import MeasurementCost
    from infodp.curator.release.noise import quantile_draws
    from infodp.mechanisms.sampling import RandomSource

    class Predictable(RandomSource):  # secure = False, and no explicit opt-in
        def randbelow(self, n: int) -> int:
            return 0

    with pytest.raises(ParameterError, match="secure RandomSource"):
        require_release_source(Predictable())
    with pytest.raises(ParameterError, match="secure RandomSource"):
        quantile_draws(
            MeasurementCost(Measurement("quantile", "x", Fraction(1, 2)), Fraction(1), 1, 1.0),
            [None],
            0,
            1,
            Predictable(),
        )
    with pytest.raises(ParameterError, match="secure RandomSource"):
        release_integer(1, 1, Fraction(1), Predictable())
    with pytest.raises(ParameterError, match="secure RandomSource"):
        Curator("never-created.duckdb", source=Predictable())
    seeded = InsecureSeededSource(1, i_understand_this_is_not_private=True)
    assert require_release_source(seeded) is seeded


def test_grid_step_is_a_power_of_two() -> None:
    for low, high, integer in [
        (0, 500000, False),
        (-3.5, 2.0, False),
        (0, 1e9, True),
        (0, 0, False),
    ]:
        g = grid_step(low, high, integer)
        assert math.log2(g).is_integer()
        assert g <= max(abs(low), abs(high), 1) / 2**19 or g == 1.0


def test_issue_closed_forms() -> None:
    # log(1 + A/(2b)) for Laplace, ½ log(1 + A²/(4σ²)) for Gaussian
    assert laplace_information(6.0, 1.5) == pytest.approx(math.log(1 + 6 / 3))
    assert gaussian_information(6.0, 1.5) == pytest.approx(0.5 * math.log(1 + 36 / 9))
    with pytest.raises(ParameterError):
        laplace_information(1.0, 0.0)
    with pytest.raises(ParameterError):
        gaussian_information(-1.0, 1.0)


def blahut_arimoto(channel: np.ndarray, iterations: int = 3000) -> float:
    """Capacity (nats) of a discrete channel P(y|x) (Blahut 1972; Arimoto 1972)."""
    n = channel.shape[0]
    px = np.full(n, 1.0 / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        logw = np.where(channel > 0, np.log(channel), 0.0)
        for _ in range(iterations):
            py = px @ channel
            d = (channel * (logw - np.log(np.where(py > 0, py, 1.0)))).sum(axis=1)
            px = px * np.exp(d)
            px /= px.sum()
        py = px @ channel
        d = (channel * (logw - np.log(np.where(py > 0, py, 1.0)))).sum(axis=1)
    return float(px @ d)


@pytest.mark.parametrize(("width", "scale"), [(1, 0.5), (4, 1.0), (10, 3.0), (30, 2.0)])
def test_information_bound_is_above_the_channel_capacity(width: int, scale: float) -> None:
    support = width + int(scale * 60) + 20
    ys = np.arange(-support, support + 1)
    p = math.exp(-1 / scale)
    rows = []
    for x in range(width + 1):
        rows.append((1 - p) / (1 + p) * p ** np.abs(ys - x))
    channel = np.array(rows)
    channel /= channel.sum(axis=1, keepdims=True)
    capacity = blahut_arimoto(channel)
    bound = discrete_laplace_information(width, scale)
    assert capacity <= bound + 1e-9
    assert bound <= math.log(width + 1) + 1e-12


@settings(max_examples=60, deadline=None)
@given(
    a=st.floats(0, 1e7, allow_nan=False),
    b=st.floats(1e-2, 1e6, allow_nan=False),
    factor=st.floats(1.0, 10.0),
)
def test_information_bound_monotone(a: float, b: float, factor: float) -> None:
    # more range can only add information; more noise can only remove it (data processing)
    base = discrete_laplace_information(a, b)
    assert base >= 0
    assert discrete_laplace_information(a * factor, b) >= base - 1e-12
    assert discrete_laplace_information(a, b * factor) <= base + 1e-12


@pytest.mark.parametrize(("k", "scale", "beta"), [(2, 1.0, 0.05), (5, 3.0, 0.05), (20, 2.0, 0.01)])
def test_chernoff_halfwidth_covers_exact_convolution(k: int, scale: float, beta: float) -> None:
    support = int(scale * 60) + 30
    _, w = pmf(scale, support)
    total = np.array([1.0])
    for _ in range(k):
        total = np.convolve(total, w)
    ys = np.arange(-(len(total) // 2), len(total) // 2 + 1)
    h = chernoff_halfwidth([1.0] * k, scale, beta)
    assert total[np.abs(ys) >= h].sum() <= beta
    # and not absurdly loose: within 2x of the exact (1 - beta) half-width
    exact = min(int(t) for t in range(len(total)) if total[np.abs(ys) > t].sum() <= beta)
    assert h <= 2 * (exact + 1)


def test_buffered_crypto_source_is_uniform_and_fork_safe() -> None:
    import os

    from infodp.curator.release.noise import BufferedCryptoSource

    src = BufferedCryptoSource(block=64)  # tiny blocks exercise the refill path
    n = 30000
    counts = np.bincount([src.randbelow(6) for _ in range(n)], minlength=6)
    sd = math.sqrt(n * (1 / 6) * (5 / 6))
    assert np.all(np.abs(counts - n / 6) < 5 * sd)
    assert src.randbelow(1) == 0
    big = 2**70 + 3
    assert all(0 <= src.randbelow(big) < big for _ in range(100))
    # a forked child must not replay the parent's buffered bytes
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.write(write, str(src.randbelow(2**60)).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = int(os.read(read, 64))
    assert child != src.randbelow(2**60)
