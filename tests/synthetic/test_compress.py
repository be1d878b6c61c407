"""Domain compression (McKenna, Miklau & Sheldon 2021): the mapping reads only noisy counts,
decompression follows the noisy proportions, nothing changes when nothing is merged, and at a
small ε it lowers MST's error on a table with many rare values."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pytest

from infodp.mechanisms.sampling import InsecureSeededSource
from infodp.synthetic.aim import aim
from infodp.synthetic.budget import rho_for, sigma_for
from infodp.synthetic.compress import Compression
from infodp.synthetic.measure import Measurement, marginal, measure
from infodp.synthetic.model import TreeModel
from infodp.synthetic.mst import mst, mst_split


def _source(k: int) -> InsecureSeededSource:
    return InsecureSeededSource(k, i_understand_this_is_not_private=True)


def _rare_table(
    rows: int, sizes: tuple[int, ...], k: int, rare_share: float = 0.01
) -> npt.NDArray[np.int64]:
    """Correlated columns, each with 3 common values and many rare ones (``rare_share`` of the
    rows in all)."""
    rng = np.random.default_rng(k)
    base = rng.integers(0, 3, rows)
    cols = []
    for size in sizes:
        col = np.where(rng.random(rows) < 0.8, base, rng.integers(0, 3, rows))
        rare = rng.random(rows) < rare_share
        cols.append(np.where(rare, rng.integers(3, size, rows), col))
    return np.column_stack(cols).astype(np.int64)


def _two_way_tv(
    truth: npt.NDArray[np.int64], synth: npt.NDArray[np.int64], sizes: tuple[int, ...]
) -> float:
    errs = []
    for c in itertools.combinations(range(len(sizes)), 2):
        p = marginal(truth, sizes, c) / truth.shape[0]
        q = marginal(synth, sizes, c) / synth.shape[0]
        errs.append(0.5 * float(np.abs(p - q).sum()))
    return float(np.mean(errs))


def test_merged_values_are_those_below_three_sigma_when_two_or_more() -> None:
    y = np.array([500, 5, 10, -3, 0, 29, 400, 30])
    c = Compression.of(
        (8, 3),
        [
            Measurement((0,), y, Fraction(10)),
            Measurement((1,), np.array([0, 100, 100]), Fraction(10)),
        ],
    )
    oracle = [v for v in range(8) if y[v] < 30]
    assert c.merged[0].tolist() == oracle
    assert c.sizes == (8 - len(oracle) + 1, 3)  # one rare value alone is not merged
    assert c.merged[1].size == 0
    kept = [v for v in range(8) if v not in oracle]
    assert [int(c.forward[0][v]) for v in kept] == list(range(len(kept)))
    assert {int(c.forward[0][v]) for v in oracle} == {len(kept)}
    one = c.compress_measurement(Measurement((0,), y, Fraction(10)))
    assert one.values.tolist() == [int(y[v]) for v in kept] + [int(y[oracle].sum())]


@pytest.mark.slow
def test_mapping_depends_only_on_the_noisy_counts() -> None:
    # Two tables with the same one-way marginals but different pairs: the same source gives the
    # same noisy one-way counts, hence the same mapping, whatever the joint data.
    sizes = (12, 12, 12)
    a = _rare_table(4000, sizes, 1)
    b = a.copy()
    b[:, 1] = np.random.default_rng(9).permutation(b[:, 1])
    rho = rho_for(0.1, 1e-6)
    fa = mst(a, sizes, rho, source=_source(4))
    fb = mst(b, sizes, rho, source=_source(4))
    assert fa.compression is not None and fb.compression is not None
    assert fa.compression.active
    for x, y in zip(fa.compression.forward, fb.compression.forward, strict=True):
        assert x.tolist() == y.tolist()
    # The oracle: replay the one-way measurements and threshold them by hand.
    sigma1 = sigma_for(mst_split(rho, 3)[0] / 3, 1)
    src = _source(4)
    for i in range(3):
        y = measure(a, sizes, (i,), sigma1, src).values
        rare = [v for v in range(12) if y[v] < 3 * float(sigma1)]
        assert fa.compression.merged[i].tolist() == (rare if len(rare) >= 2 else [])


@pytest.mark.parametrize("positive", [True, False], ids=["proportional", "uniform"])
def test_decompression_follows_the_noisy_proportions(positive: bool) -> None:
    y = np.array([900, 5, 10, -3, 0, 20, 700]) if positive else np.array([900, -1, 0, -7, 800])
    c = Compression.of((y.size,), [Measurement((0,), y, Fraction(10))])
    merged = c.merged[0]
    draws = 40_000
    rows = c.decompress(
        np.full((draws, 1), c.sizes[0] - 1, dtype=np.int64), np.random.default_rng(3)
    )
    w = np.maximum(y[merged], 0).astype(np.float64)
    p = w / w.sum() if positive else np.full(merged.size, 1 / merged.size)
    freq = np.bincount(rows[:, 0], minlength=y.size)[merged] / draws
    se = np.sqrt(p * (1 - p) / draws)
    assert np.all(np.abs(freq - p) <= 5 * se + 1e-12)
    assert set(rows[:, 0].tolist()) <= set(merged.tolist())
    kept = c.decompress(np.array([[0], [1]]), np.random.default_rng(0))
    assert (
        kept[:, 0].tolist() == [int(v) for v in range(y.size) if v not in set(merged.tolist())][:2]
    )


@pytest.mark.slow
@pytest.mark.parametrize("method", ["mst", "aim"])
def test_nothing_merged_at_a_huge_epsilon_equals_the_uncompressed_path(method: str) -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(0, 4, 3000)
    codes = np.column_stack([a, (a + rng.integers(0, 2, 3000)) % 4, rng.integers(0, 3, 3000)])
    sizes = (4, 4, 3)
    fn = mst if method == "mst" else aim
    on = fn(codes, sizes, Fraction(1000), source=_source(7), compress=True)
    off = fn(codes, sizes, Fraction(1000), source=_source(7), compress=False)
    assert on.compression is not None and not on.compression.active
    assert [m.values.tolist() for m in on.measurements] == [
        m.values.tolist() for m in off.measurements
    ]
    assert on.model.edges == off.model.edges
    s_on = on.sample(500, np.random.default_rng(1))
    s_off = off.sample(500, np.random.default_rng(1))
    assert s_on.tolist() == s_off.tolist()


@pytest.mark.slow
def test_compression_lowers_mst_error_at_small_epsilon() -> None:
    # 27 rare values per column, ~110 rows each: all below 3σ₁ ≈ 600 at ε = 0.1, so the
    # uncompressed fit projects most of them to zero; merged, their mass survives.
    sizes = (30, 30, 30, 30, 30)
    codes = _rare_table(20_000, sizes, 2, rare_share=0.15)
    rho = rho_for(0.1, 1e-6)
    errs: dict[bool, list[float]] = {True: [], False: []}
    for k in range(3):
        for compress in (True, False):
            fit = mst(codes, sizes, rho, source=_source(k), compress=compress)
            synth = fit.sample(codes.shape[0], np.random.default_rng(k))
            errs[compress].append(_two_way_tv(codes, synth, sizes))
    assert np.mean(errs[True]) < np.mean(errs[False]), errs


def test_a_merged_cell_is_weighed_by_its_summed_variance() -> None:
    # Attribute 0 has a one-way measurement whose last cell sums 4 cells (variance 4σ²) and a
    # pair measurement (σ² per cell; summed over 2 columns: 2σ²). The fitted one-way is the
    # inverse-variance mean, cell by cell (closed form), before the simplex projection.
    one = Measurement((0,), np.array([600, 300, 100]), Fraction(1), np.array([1, 1, 4]))
    pair = Measurement((0, 1), np.array([290, 290, 150, 150, 60, 60]), Fraction(1))
    assert Measurement.from_dict(one.to_dict()).variances.tolist() == [1.0, 1.0, 4.0]
    model = TreeModel.fit((3, 2), [one, pair])
    pair_sum = np.array([580.0, 300.0, 120.0])
    w_one, w_pair = 1 / np.array([1.0, 1.0, 4.0]), 1 / 2.0
    expected = (w_one * one.values + w_pair * pair_sum) / (w_one + w_pair)
    # totals: 1000 and 1000, so the total is 1000; the projection onto {x ≥ 0, Σx = 1000}
    # of a positive vector shifts every cell by the same amount.
    assert model.total == pytest.approx(1000.0)
    shifted = expected - (expected.sum() - 1000) / 3
    assert model.one_way[0] * model.total == pytest.approx(shifted)
    # With every cell weighed by σ² alone the merged cell would come out differently.
    flat = (one.values + w_pair * pair_sum) / (1 + w_pair)
    assert abs(shifted[2] - (flat - (flat.sum() - 1000) / 3)[2]) > 1
