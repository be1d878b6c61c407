"""Tests of the secure exact samplers, the random sources and the fast simulators.

Exactness: every sampler is driven by a source that enumerates all its random choices with
their exact probabilities (Fractions), so the sampler's exact output distribution on the
explored paths is computed, plus the exact mass of the unexplored paths. The target pmf
(Canonne, Kamath & Steinke 2020, arXiv:2004.00010, Algorithms 1-3 and their definitions of
Bernoulli(exp(-gamma)), Lap_Z and N_Z) must lie in [explored, explored + unexplored].
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from infodp.errors import ParameterError
from infodp.mechanisms import sampling
from infodp.mechanisms.sampling import (
    CryptoRandomSource,
    InsecureSeededSource,
    RandomSource,
    bernoulli,
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
    geometric_exp,
    require_secure_source,
    simulate_discrete_gaussian,
    simulate_discrete_laplace,
    uniform_int,
)


class _Restart(Exception):
    """A rejection sampler started a second round: the round's mass is 'restart'."""


class _Branch(Exception):
    def __init__(self, probs: list[Fraction | float], prob: Fraction | float) -> None:
        self.probs = probs
        self.prob = prob


class _ReplaySource(RandomSource):
    """Replays a prefix of choices; raises _Branch at the first choice beyond it.

    With ``record_exp`` a Bernoulli(exp(-gamma)) draw is one two-way branch whose
    probabilities are recorded (as floats: exp is irrational) instead of being expanded into
    CKS Algorithm 1's own choices, which is checked exactly on its own.
    """

    def __init__(self, prefix: tuple[int, ...], record_exp: bool, one_round: bool) -> None:
        self.prefix = prefix
        self.record_exp = record_exp
        self.one_round = one_round
        self.rounds = 0
        self.i = 0
        self.prob: Fraction | float = Fraction(1)

    def _choose(self, probs: list[Fraction | float]) -> int:
        if self.i >= len(self.prefix):
            raise _Branch(probs, self.prob)
        c = self.prefix[self.i]
        self.i += 1
        self.prob *= probs[c]
        return c

    def randbelow(self, n: int) -> int:
        self.rounds += 1
        if self.one_round and self.rounds > 1:
            raise _Restart
        return self._choose([Fraction(1, n)] * n)

    def bernoulli(self, numerator: int, denominator: int) -> bool:
        p = Fraction(numerator, denominator)
        return self._choose([p, 1 - p]) == 0

    def bernoulli_exp(self, gamma: Fraction) -> bool:
        if not self.record_exp:
            return super().bernoulli_exp(gamma)
        p = math.exp(-float(gamma))
        return self._choose([p, 1 - p]) == 0


def _enumerate(
    sampler: Callable[[RandomSource], object],
    threshold: float,
    record_exp: bool = False,
    one_round: bool = False,
) -> tuple[dict[object, Fraction | float], Fraction | float]:
    """Output probabilities over all paths of probability >= threshold, and the rest's mass.

    With ``one_round`` only the first round of a rejection sampler is enumerated (a second
    uniform draw raises _Restart) and the output is renormalised by the accepted mass, which
    is exact since the rounds of a rejection sampler are independent and identical.
    """
    out: dict[object, Fraction | float] = defaultdict(Fraction)
    unexplored: Fraction | float = Fraction(0)
    stack: list[tuple[int, ...]] = [()]
    while stack:
        prefix = stack.pop()
        src = _ReplaySource(prefix, record_exp, one_round)
        try:
            y = sampler(src)
        except _Restart:
            y = "restart"
        except _Branch as br:
            for i, p in enumerate(br.probs):
                if p == 0:
                    continue
                q = br.prob * p
                if q < threshold:
                    unexplored += q
                else:
                    stack.append((*prefix, i))
            continue
        out[y] += src.prob
    if one_round:
        restart = out.pop("restart", 0)
        accepted = 1 - restart
        # an unexplored path may end in any outcome, including a restart: P(y) lies in
        # [a_y/(1-r), (a_y+u)/(1-r-u)], whose width is at most 2u/(1-r-u)
        out = {y: p / accepted for y, p in out.items()}
        unexplored = 2 * unexplored / (accepted - unexplored)
    return dict(out), unexplored


def _check_exact(
    explored: dict[object, Fraction | float],
    unexplored: Fraction | float,
    target: dict[int, float],
) -> None:
    # every path accounted for (exactly, up to the float-recorded exp branches)
    total = float(sum(explored.values()))
    assert total <= 1 + 1e-12
    assert total + float(unexplored) >= 1 - 1e-12
    assert unexplored < 1e-3  # the bracket is informative
    for y, p in target.items():
        lo = float(explored.get(y, Fraction(0)))
        assert lo <= p + 1e-12, (y, lo, p)
        assert p <= lo + float(unexplored) + 1e-12, (y, lo, p, float(unexplored))
    # and nothing outside the target support
    assert set(explored) <= set(target)


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(7, 3)])
def test_bernoulli_exp_exact_probability(gamma: Fraction) -> None:
    # CKS 2020 Algorithm 1: P[True] = exp(-gamma).
    explored, unexplored = _enumerate(lambda s: bernoulli_exp(gamma, s), 1e-9)
    p_true = math.exp(-float(gamma))
    _check_exact(explored, unexplored, {True: p_true, False: 1 - p_true})  # type: ignore[dict-item]


def test_bernoulli_and_uniform_exact() -> None:
    explored, unexplored = _enumerate(lambda s: bernoulli(Fraction(2, 7), s), 0)
    assert unexplored == 0 and explored == {True: Fraction(2, 7), False: Fraction(5, 7)}
    explored, unexplored = _enumerate(lambda s: uniform_int(5, s), 0)
    assert explored == {k: Fraction(1, 5) for k in range(5)}


def test_geometric_exact() -> None:
    gamma = Fraction(1, 2)
    explored, unexplored = _enumerate(lambda s: geometric_exp(gamma, s), 1e-8, record_exp=True)
    q = math.exp(-0.5)
    _check_exact(explored, unexplored, {k: (1 - q) * q**k for k in range(60)})


def _dlap_pmf(scale: float, support: range) -> dict[int, float]:
    # Lap_Z(b): P(y) = (1 - e^{-1/b}) / (1 + e^{-1/b}) e^{-|y|/b}  (CKS 2020, Definition 2)
    q = math.exp(-1 / scale)
    return {y: (1 - q) / (1 + q) * q ** abs(y) for y in support}


@pytest.mark.parametrize("scale", [Fraction(1), Fraction(3, 2), Fraction(2, 3)])
def test_discrete_laplace_exact(scale: Fraction) -> None:
    explored, unexplored = _enumerate(lambda s: discrete_laplace(scale, s), 1e-13, True, True)
    _check_exact(explored, unexplored, _dlap_pmf(float(scale), range(-80, 81)))


def test_discrete_laplace_exact_detects_wrong_scale() -> None:
    # The check must be able to fail: compare scale-1 output with the scale-1.1 pmf.
    explored, unexplored = _enumerate(lambda s: discrete_laplace(Fraction(1), s), 1e-13, True, True)
    with pytest.raises(AssertionError):
        _check_exact(explored, unexplored, _dlap_pmf(1.1, range(-80, 81)))


class _Tail(Exception):
    pass


@pytest.mark.parametrize("sigma", [Fraction(1), Fraction(3, 2), Fraction(7, 3)])
def test_discrete_gaussian_exact(sigma: Fraction, monkeypatch: pytest.MonkeyPatch) -> None:
    # N_Z(0, s^2): P(y) = exp(-y^2/(2 s^2)) / sum_z exp(-z^2/(2 s^2))  (CKS 2020, Definition 1).
    # Algorithm 3 is checked given an oracle for its Lap_Z proposal (Algorithm 2 is checked
    # exactly above): the proposal is one recorded branch over |y| <= 30 plus a tail branch.
    def laplace_oracle(scale: Fraction, src: RandomSource) -> int:
        assert isinstance(src, _ReplaySource)
        src.rounds += 1
        if src.rounds > 1:
            raise _Restart
        support = list(range(-30, 31))
        pmf = _dlap_pmf(float(scale), range(-30, 31))
        probs: list[Fraction | float] = [pmf[y] for y in support]
        probs.append(1 - sum(pmf.values()))
        c = src._choose(probs)
        if c == len(support):
            raise _Tail
        return support[c]

    monkeypatch.setattr(sampling, "discrete_laplace", laplace_oracle)

    def run(src: RandomSource) -> object:
        try:
            return discrete_gaussian(sigma, src)
        except _Tail:
            return "tail"

    explored, unexplored = _enumerate(run, 0, True, True)
    unexplored += explored.pop("tail", 0.0)
    s = float(sigma)
    w = {y: math.exp(-(y * y) / (2 * s * s)) for y in range(-30, 31)}
    z = sum(w.values())
    _check_exact(explored, unexplored, {y: v / z for y, v in w.items()})


# ----------------------------------------------------------------- goodness of fit (fixed seeds)


def _chisquare_pvalue(samples: np.ndarray, pmf: Callable[[int], float], lo: int, hi: int) -> float:
    """Chi-square GOF with tails lumped into the end bins [.., lo] and [hi, ..]."""
    ks = np.arange(lo, hi + 1)
    probs = np.array([pmf(int(k)) for k in ks])
    tail_lo = sum(pmf(int(k)) for k in range(lo - 400, lo))
    tail_hi = sum(pmf(int(k)) for k in range(hi + 1, hi + 401))
    probs[0] += tail_lo
    probs[-1] += tail_hi
    clipped = np.clip(samples, lo, hi)
    observed = np.array([(clipped == k).sum() for k in ks])
    expected = probs / probs.sum() * samples.size
    return float(stats.chisquare(observed, expected).pvalue)


def test_release_samplers_goodness_of_fit() -> None:
    src = InsecureSeededSource(2024, i_understand_this_is_not_private=True)
    n = 3000
    lap = np.array([discrete_laplace(Fraction(5, 2), src) for _ in range(n)])
    assert _chisquare_pvalue(lap, lambda k: _dlap_pmf(2.5, range(k, k + 1))[k], -6, 6) > 1e-3
    sig = 2.5
    z = sum(math.exp(-(y * y) / (2 * sig * sig)) for y in range(-60, 61))
    gau = np.array([discrete_gaussian(Fraction(5, 2), src) for _ in range(n)])
    assert _chisquare_pvalue(gau, lambda k: math.exp(-(k * k) / (2 * sig * sig)) / z, -5, 5) > 1e-3


def test_simulators_goodness_of_fit() -> None:
    lap = simulate_discrete_laplace(2.5, 20000, rng=11)
    assert _chisquare_pvalue(lap, lambda k: _dlap_pmf(2.5, range(k, k + 1))[k], -8, 8) > 1e-3
    sig = 4.0
    z = sum(math.exp(-(y * y) / (2 * sig * sig)) for y in range(-80, 81))
    gau = simulate_discrete_gaussian(sig, 20000, rng=12)
    assert _chisquare_pvalue(gau, lambda k: math.exp(-(k * k) / (2 * sig * sig)) / z, -9, 9) > 1e-3
    # For large sigma the discrete Gaussian is close to N(0, sigma^2): KS against the normal.
    big = simulate_discrete_gaussian(300.0, 5000, rng=13)
    assert stats.kstest(big / 300.0, "norm").pvalue > 1e-3


def test_gof_detects_wrong_distribution() -> None:
    # Sanity: the GOF helper rejects samples from the wrong scale.
    lap = simulate_discrete_laplace(3.5, 20000, rng=11)
    assert _chisquare_pvalue(lap, lambda k: _dlap_pmf(2.5, range(k, k + 1))[k], -8, 8) < 1e-6


# ----------------------------------------------------------------- sources and the release path


def test_release_path_refuses_seeds() -> None:
    with pytest.raises(ParameterError, match="seed"):
        require_secure_source(123)
    with pytest.raises(ParameterError, match="seed"):
        require_secure_source(np.random.default_rng(0))
    with pytest.raises(ParameterError, match="i_understand_this_is_not_private"):
        InsecureSeededSource(5)
    assert isinstance(require_secure_source(None), CryptoRandomSource)
    assert require_secure_source(None).secure
    test_src = InsecureSeededSource(5, i_understand_this_is_not_private=True)
    assert require_secure_source(test_src) is test_src and not test_src.secure


def test_crypto_source_is_uniform() -> None:
    draws = np.array([CryptoRandomSource().randbelow(6) for _ in range(3000)])
    counts = np.bincount(draws, minlength=6)
    # Not seedable by design: alpha = 1e-6 keeps the false-alarm rate negligible.
    assert stats.chisquare(counts).pvalue > 1e-6


def test_seeded_source_reproducible_and_invalid_args() -> None:
    a = InsecureSeededSource(9, i_understand_this_is_not_private=True)
    b = InsecureSeededSource(9, i_understand_this_is_not_private=True)
    assert [discrete_laplace(Fraction(3), a) for _ in range(20)] == [
        discrete_laplace(Fraction(3), b) for _ in range(20)
    ]
    with pytest.raises(ParameterError):
        bernoulli_exp(Fraction(-1), a)
    with pytest.raises(ParameterError):
        discrete_laplace(Fraction(0), a)
    with pytest.raises(ParameterError):
        bernoulli(Fraction(3, 2), a)
    with pytest.raises(ParameterError):
        sampling.as_generator("seed")
    with pytest.raises(ParameterError):
        sampling.as_fraction("x", float("nan"))


def test_all_matches_public_names() -> None:
    # ("@py_builtins" etc. appear when pytest rewrites the module collected for its doctests)
    public = {n for n in vars(sampling) if not n.startswith(("_", "@"))}
    imported = {"Any", "ABC", "Fraction", "abstractmethod", "annotations", "math", "np", "npt"}
    imported |= {"TYPE_CHECKING", "lazy_module", "Sequence", "functools", "sys"}
    imported |= {"os", "random", "secrets", "as_positive", "as_positive_int", "ParameterError"}
    assert set(sampling.__all__) == public - imported


def test_bernoulli_exp_and_geometric_goodness_of_fit() -> None:
    src = InsecureSeededSource(77, i_understand_this_is_not_private=True)
    n = 4000
    for gamma in (Fraction(1, 5), Fraction(3, 2)):
        hits = sum(bernoulli_exp(gamma, src) for _ in range(n))
        p = math.exp(-float(gamma))
        assert stats.binomtest(hits, n, p).pvalue > 1e-3
    q = math.exp(-0.7)
    draws = np.array([geometric_exp(Fraction(7, 10), src) for _ in range(n)])
    ks = np.arange(0, 8)
    probs = (1 - q) * q**ks
    probs[-1] += q**8
    observed = np.array([(np.clip(draws, 0, 7) == k).sum() for k in ks])
    assert stats.chisquare(observed, probs * n).pvalue > 1e-3


# ------------------------------------------------ exact batch sampler (vectorised CKS Algorithm 2)


def test_uniform_from_words_is_exactly_uniform() -> None:
    # Feeding every possible word exactly once must yield every value below n exactly equally
    # often (the rejection threshold arithmetic is exact), for every n an 8-bit word can serve.
    every8 = np.arange(256, dtype=np.uint8)
    for n in range(2, 257):
        counts = np.bincount(sampling._uniform_from_words(every8, n), minlength=n)
        k = (n - 1).bit_length()
        assert counts.size == n and np.all(counts == 256 >> k), n
    every16 = np.arange(65536, dtype=np.uint16)
    for n in (257, 1000, 40000, 65535, 65536):
        counts = np.bincount(sampling._uniform_from_words(every16, n), minlength=n)
        assert counts.size == n and np.all(counts == 65536 >> (n - 1).bit_length()), n
    # 32- and 64-bit words: every pattern of the top k = 12 bits, with arbitrary low bits.
    low = np.random.default_rng(0).integers(0, 2**40, size=4096, dtype=np.uint64)
    for bits, n in ((32, 3000), (64, 3000)):
        dtype = np.uint32 if bits == 32 else np.uint64
        top = np.arange(4096, dtype=np.uint64) << np.uint64(bits - 12)
        words = (top | (low & np.uint64((1 << (bits - 12)) - 1))).astype(dtype)
        got = sampling._uniform_from_words(words, n)
        assert sorted(got.tolist()) == list(range(n))
    with pytest.raises(ParameterError):
        sampling._uniform_from_words(every8, 257)


def test_random_bytes_sources() -> None:
    a = InsecureSeededSource(3, i_understand_this_is_not_private=True)
    b = InsecureSeededSource(3, i_understand_this_is_not_private=True)
    assert a.random_bytes(33) == b.random_bytes(33) and len(a.random_bytes(7)) == 7
    assert a.random_bytes(0) == b"" and CryptoRandomSource().random_bytes(0) == b""
    assert len(CryptoRandomSource().random_bytes(50)) == 50

    class Fixed(RandomSource):  # the default random_bytes is built exactly on randbelow
        def randbelow(self, n: int) -> int:
            return n - 1

    assert Fixed().random_bytes(3) == b"\xff\xff\xff"
    # Byte frequencies of the seeded stream: chi-square against uniform on 0..255.
    counts = np.bincount(np.frombuffer(a.random_bytes(256 * 200), np.uint8), minlength=256)
    assert stats.chisquare(counts).pvalue > 1e-3


def test_uniform_below_and_bernoulli_batch_frequencies() -> None:
    src = InsecureSeededSource(11, i_understand_this_is_not_private=True)
    for n in (2, 6, 1000, 3 * 2**40, 2**62):
        draws = sampling._uniform_below(n, 30000, src)
        assert draws.dtype == np.uint64 and int(draws.max()) < n
        # 6 bins of exactly equal mass when 6 | n, else value mod 2 (n even) / raw for n = 2.
        if n % 6 == 0:
            bins = (draws // np.uint64(n // 6)).astype(np.int64)
            assert stats.chisquare(np.bincount(bins, minlength=6)).pvalue > 1e-3
        else:
            assert stats.chisquare(np.bincount(draws % np.uint64(2), minlength=2)).pvalue > 1e-3
    # Bernoulli(a/b) as Uniform{0..b-1} < a (CKS 2020, Sec. 5.1): binomial test per (a, b).
    for a, b in ((1, 3), (7, 10), (1, 2**50)):
        hits = int((sampling._uniform_below(b, 20000, src) < np.uint64(a)).sum())
        assert stats.binomtest(hits, 20000, a / b).pvalue > 1e-3
    # Bernoulli(exp(-a/b)) (CKS 2020, Algorithm 1), per-element numerators over one denominator.
    num = np.repeat(np.array([0, 1, 5, 9], dtype=np.uint64), 8000)
    out = sampling._bernoulli_exp_unit_batch(num, 9, src)
    for j, a in enumerate((0, 1, 5, 9)):
        hits = int(out[j * 8000 : (j + 1) * 8000].sum())
        assert stats.binomtest(hits, 8000, math.exp(-a / 9)).pvalue > 1e-3
    # V ~ Geometric(1 - e^-1): P[V = v] = (1 - e^-1) e^-v (CKS 2020, Algorithm 2).
    v = sampling._geometric_exp1_batch(20000, src)
    ks = np.arange(8)
    probs = (1 - math.exp(-1)) * np.exp(-ks.astype(float))
    probs[-1] += math.exp(-8.0)
    observed = np.bincount(np.clip(v, 0, 7), minlength=8)
    assert stats.chisquare(observed, probs * v.size).pvalue > 1e-3


def _dlap_cdf(scale: Fraction, y: int) -> float:
    # P(Y <= y) for Lap_Z(b), p = e^{-1/b}: p^{-y}/(1+p) for y < 0 and 1 - p^{y+1}/(1+p) for
    # y >= 0 (the geometric sums of CKS 2020, Definition 2's pmf).
    x = float(1 / scale)
    p = math.exp(-x)
    if y < 0:
        return math.exp(y * x) / (1 + p)
    return 1 - math.exp(-(y + 1) * x) / (1 + p)


def _binned_pvalue(samples: list[int], scale: Fraction) -> float:
    """Chi-square GOF of integer samples against Lap_Z(scale) on bins at multiples of scale."""
    cuts = {math.floor(scale * Fraction(c, 10)) for c in (-30, -15, -7, -3, 0, 3, 7, 15, 30)}
    edges = sorted(cuts | {-1, 0})  # bins (-inf, e0], (e0, e1], ..., (e_last, inf)
    cdf = [0.0] + [_dlap_cdf(scale, e) for e in edges] + [1.0]
    probs = np.diff(cdf)
    # Python ints (the batch sampler returns any magnitude): bisect each sample into a bin.
    observed = np.bincount([bisect.bisect_left(edges, v) for v in samples], minlength=len(cdf) - 1)
    expected = probs * len(samples)
    keep = expected >= 5
    # bins too unlikely for chi-square must be (almost) empty: Poisson bound on their count
    assert observed[~keep].sum() <= 5 + 5 * expected[~keep].sum()
    if keep.sum() < 2:  # all the mass in one bin (tiny scale): the bound above is the test
        return 1.0
    return float(
        stats.chisquare(
            observed[keep], expected[keep] / expected[keep].sum() * observed[keep].sum()
        ).pvalue
    )


HUGE = Fraction(2**70, 3)  # numerator beyond 2^62: the batch falls back to the scalar sampler


@pytest.mark.parametrize(
    ("scale", "n", "seed"),
    [
        (Fraction(1), 6000, 1),
        (Fraction(5, 2), 6000, 2),
        (Fraction(1, 3), 6000, 3),  # fractional scale, tiny
        (Fraction(1, 1000), 2000, 4),  # almost always 0
        (Fraction(10**6), 6000, 5),  # huge
        (Fraction(7 * 10**12 + 1, 7), 4000, 6),  # large numerator and denominator
        (1 / Fraction(0.1), 4000, 7),  # scale 1/ε for a float ε: t ≈ 2^55, s ≈ 2^52
        (HUGE, 1500, 8),
    ],
)
def test_discrete_laplace_batch_goodness_of_fit(scale: Fraction, n: int, seed: int) -> None:
    # CKS 2020, Algorithm 2 target: P(y) ∝ exp(-|y|/scale) (Definition 2), chi-square on
    # bins whose exact masses come from the closed-form CDF.
    src = InsecureSeededSource(seed, i_understand_this_is_not_private=True)
    ys = sampling.discrete_laplace_batch(scale, n, src)
    assert len(ys) == n and all(type(y) is int for y in ys)
    assert _binned_pvalue(ys, scale) > 1e-3


def test_discrete_laplace_batch_gof_detects_wrong_scale() -> None:
    src = InsecureSeededSource(21, i_understand_this_is_not_private=True)
    ys = sampling.discrete_laplace_batch(Fraction(5, 2), 6000, src)
    assert _binned_pvalue(ys, Fraction(3)) < 1e-6


def test_discrete_laplace_batch_matches_scalar_sampler() -> None:
    # Two-sample chi-square (contingency) test: batch vs the scalar exact sampler.
    for scale, seed in ((Fraction(5, 2), 31), (Fraction(2, 3), 32)):
        a = InsecureSeededSource(seed, i_understand_this_is_not_private=True)
        b = InsecureSeededSource(seed + 100, i_understand_this_is_not_private=True)
        batch = np.clip(sampling.discrete_laplace_batch(scale, 4000, a), -6, 6)
        scalar = np.clip([discrete_laplace(scale, b) for _ in range(4000)], -6, 6)
        table = np.array([np.bincount(x + 6, minlength=13) for x in (batch, scalar)])
        table = table[:, table.sum(axis=0) > 0]
        assert stats.chi2_contingency(table).pvalue > 1e-3


def test_discrete_laplace_batch_exact_fallbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    # With the numpy range shrunk to 64, scale 40 finishes Algorithm 1 (den * k = 80 > 64) and
    # U + tV in Python, and scales with t or s above 64 use the scalar sampler: all exact.
    monkeypatch.setattr(sampling, "_BATCH_MAX", 64)
    for scale, seed in ((Fraction(40), 41), (Fraction(100), 42), (Fraction(7, 100), 43)):
        src = InsecureSeededSource(seed, i_understand_this_is_not_private=True)
        assert _binned_pvalue(sampling.discrete_laplace_batch(scale, 3000, src), scale) > 1e-3


def test_discrete_laplace_batch_refuses_seeds_and_bad_input() -> None:
    with pytest.raises(ParameterError, match="seed"):
        sampling.discrete_laplace_batch(Fraction(1), 5, 123)
    with pytest.raises(ParameterError, match="seed"):
        sampling.discrete_laplace_batch(Fraction(1), 5, np.random.default_rng(0))
    with pytest.raises(ParameterError, match="scale"):
        sampling.discrete_laplace_batch(Fraction(0), 5, None)
    with pytest.raises(ParameterError, match="size"):
        sampling.discrete_laplace_batch(Fraction(1), -1, None)
    assert sampling.discrete_laplace_batch(Fraction(1), 0, None) == []
    ys = sampling.discrete_laplace_batch(Fraction(10**9), 50, None)  # OS CSPRNG by default
    assert len(set(ys)) > 40


def test_geometric_batch_reads_the_bernoulli_stream_like_the_scalar_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # V = successes before the first failure, run after run, even when a run of successes
    # spans several vectorised blocks (the scalar loop of CKS 2020, Algorithm 2, step 5).
    # First case: a run longer than a block (size 3: blocks of 22); second case: a block that
    # ends with an open run after its only failure.
    cases = [
        ([True] * 50 + [False, False, True, True, False], [50, 0, 2]),
        ([False] + [True] * 21 + [True] * 5 + [False], [0, 26, 0]),
    ]
    stream = iter(())

    def recorded(num: np.ndarray, den: int, source: RandomSource) -> np.ndarray:
        nonlocal stream
        assert den == 1 and np.all(num == 1)  # Bernoulli(exp(-1))
        return np.array([next(stream) for _ in range(num.size)], dtype=bool)

    monkeypatch.setattr(sampling, "_bernoulli_exp_unit_batch", recorded)
    src = InsecureSeededSource(0, i_understand_this_is_not_private=True)
    for bits, expected in cases:
        stream = iter(bits + [False] * 1000)
        assert sampling._geometric_exp1_batch(3, src).tolist() == expected


def _dgauss_pvalue(samples: list[int], sigma: Fraction) -> float:
    """Chi-square GOF against N_Z(0, sigma^2) (CKS 2020, Definition 1), tails lumped."""
    s = float(sigma)
    half = max(1, math.ceil(2.5 * s))
    support = range(-half - int(12 * s) - 10, half + int(12 * s) + 11)
    w = {y: math.exp(-(y * y) / (2 * s * s)) for y in support}
    z = sum(w.values())
    probs = np.zeros(2 * half + 1)
    for y, wy in w.items():
        probs[min(max(y, -half), half) + half] += wy / z
    observed = np.bincount(np.clip(samples, -half, half) + half, minlength=2 * half + 1)
    expected = probs * len(samples)
    keep = expected >= 5
    assert observed[~keep].sum() <= 5 + 5 * expected[~keep].sum()
    if keep.sum() < 2:
        return 1.0
    scaled = expected[keep] / expected[keep].sum() * observed[keep].sum()
    return float(stats.chisquare(observed[keep], scaled).pvalue)


@pytest.mark.parametrize(
    ("sigma", "seed"),
    [
        (Fraction(5, 2), 51),
        (Fraction(1), 52),
        (Fraction(1, 3), 53),
        (Fraction(1, 1000), 54),
        (Fraction(81, 2), 55),
        (Fraction(0.3), 56),  # denominator 2^54: the acceptance step uses the scalar sampler
    ],
)
def test_discrete_gaussian_batch_goodness_of_fit(sigma: Fraction, seed: int) -> None:
    src = InsecureSeededSource(seed, i_understand_this_is_not_private=True)
    ys = sampling.discrete_gaussian_batch(sigma, 4000, src)
    assert len(ys) == 4000 and all(type(y) is int for y in ys)
    assert _dgauss_pvalue(ys, sigma) > 1e-3


def test_discrete_gaussian_batch_detects_wrong_sigma_and_matches_scalar() -> None:
    a = InsecureSeededSource(61, i_understand_this_is_not_private=True)
    b = InsecureSeededSource(62, i_understand_this_is_not_private=True)
    batch = sampling.discrete_gaussian_batch(Fraction(5, 2), 4000, a)
    assert _dgauss_pvalue(batch, Fraction(3)) < 1e-6  # power: sigma 3 is rejected
    scalar = [discrete_gaussian(Fraction(5, 2), b) for _ in range(4000)]
    table = np.array([np.bincount(np.clip(x, -7, 7) + 7, minlength=15) for x in (batch, scalar)])
    assert stats.chi2_contingency(table[:, table.sum(axis=0) > 0]).pvalue > 1e-3
    with pytest.raises(ParameterError, match="seed"):
        sampling.discrete_gaussian_batch(Fraction(1), 3, 7)
    with pytest.raises(ParameterError, match="sigma"):
        sampling.discrete_gaussian_batch(Fraction(-1), 3, None)


def _gaussian_gamma(a: int, sigma: Fraction) -> float:
    # CKS 2020, Algorithm 3: accept Y with probability exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)).
    t = math.floor(sigma) + 1
    return float((a - sigma * sigma / t) ** 2 / (2 * sigma * sigma))


def test_gaussian_accept_frequencies() -> None:
    # Per |y|, the acceptance frequency against exp(-gamma): gamma below and above 1 (the
    # whole part by one comparison with floor(2^64 e^-g)), for small and float-sized p, q.
    src = InsecureSeededSource(71, i_understand_this_is_not_private=True)
    for sigma, values in (
        (Fraction(5, 2), (0, 1, 3, 7)),
        (Fraction(0.3), (0, 1, 2)),  # denominator 2^54
        (Fraction(81, 2), (0, 40, 90, 130)),
        (Fraction(1, 3), (0, 1)),
    ):
        t = math.floor(sigma) + 1
        absy = [a for a in values for _ in range(6000)]
        words = sampling._Words(src, 1000)
        out = sampling._gaussian_accept(absy, sigma.numerator, sigma.denominator, t, words)
        for j, a in enumerate(values):
            hits = int(out[j * 6000 : (j + 1) * 6000].sum())
            p = math.exp(-_gaussian_gamma(a, sigma))
            assert stats.binomtest(hits, 6000, p).pvalue > 1e-3, (sigma, a)


def test_gaussian_accept_undecided_digits_are_resolved_exactly() -> None:
    # sigma = 3/2 (p = 3, q = 2), t = 2, |y| = 1: gamma = (1·4·2 − 9)^2 / (2·9·4·4) = 1/288
    # (whole part 0). A first word W = F_1 = floor(2^64/288) leaves [X_1 < 1/288] to the rest
    # (2^64 − 288 F_1)/288, which the source decides with one uniform integer below 288.
    den = 2 * 9 * 4 * 4
    f1 = (1 << 64) // den
    rest = (1 << 64) - f1 * den
    assert 0 < rest < den

    class Below(RandomSource):
        def __init__(self, value: int) -> None:
            self.value = value

        def randbelow(self, n: int) -> int:
            assert n == den
            return self.value

    # Rest decided 1 (A_1 = 1), then A_2 = 0 (word 2^64 − 1): K = 2 is even, rejected.
    # Rest decided 0 (A_1 = 0): K = 1 is odd, accepted. The first word (whole part) is unused.
    for below, accepted in ((rest - 1, False), (rest, True)):
        w = _Scripted([7, f1, 2**64 - 1, 0, 0, 0, 0], Below(below))
        assert bool(sampling._gaussian_accept([1], 3, 2, 2, w)[0]) is accepted  # type: ignore[arg-type]
    # Words either side of F_1 need no rest.
    for second, accepted in ((f1 - 1, False), (f1 + 1, True)):
        w = _Scripted([7, second, 2**64 - 1, 0, 0, 0, 0], Below(0))
        assert bool(sampling._gaussian_accept([1], 3, 2, 2, w)[0]) is accepted  # type: ignore[arg-type]
    # sigma = 1/3, t = 1, |y| = 3: gamma = (3 - 1/9)^2 · 9/2 = 37.56..., g = 37: the whole part
    # is [X < e^-37]; a first word equal to floor(2^64 e^-37) is resolved by the next digit.
    c37 = sampling._exp_neg_floor(37, 64)
    d2 = sampling._exp_neg_floor(37, 128) % 2**64
    for second, whole_ok in ((d2 - 1, True), (d2 + 1, False)):
        w = _Scripted([c37, second, *[2**64 - 1] * 6], Below(0))  # the digit comes first
        got = bool(sampling._gaussian_accept([3], 1, 3, 1, w)[0])  # type: ignore[arg-type]
        assert got is whole_ok  # the fraction's A_1 = 0 (word 2^64 - 1): accepted if whole_ok


# ------------------------------ one-pass batches (discrete_laplace_batches and its exact helpers)


class _Scripted:
    """A stand-in for sampling._Words handing out scripted words (then raising _NeedMore)."""

    def __init__(self, script: list[int], source: RandomSource | None = None) -> None:
        self.script, self.used, self._source = list(script), 0, source

    def take(self, count: int, dtype: object) -> np.ndarray:
        if self.used + count > len(self.script):
            raise _NeedMore
        out = np.array(self.script[self.used : self.used + count], dtype=dtype)
        self.used += count
        return out


class _NeedMore(Exception):
    pass


def _enumerate_words(
    run: Callable[[_Scripted], object], base: int, depth: int
) -> tuple[dict, Fraction]:
    """Every outcome of ``run`` over all word sequences of length <= depth (words < base), with
    its exact probability; also the mass of sequences still undecided at that depth."""
    outcomes: dict[object, Fraction] = defaultdict(Fraction)
    open_mass = Fraction(0)
    stack: list[list[int]] = [[w] for w in range(base)]
    while stack:
        prefix = stack.pop()
        try:
            result = run(_Scripted(prefix))
        except _NeedMore:
            if len(prefix) < depth:
                stack.extend([*prefix, w] for w in range(base))
            else:
                open_mass += Fraction(1, base ** len(prefix))
            continue
        outcomes[result] += Fraction(1, base ** len(prefix))
    return outcomes, open_mass


@pytest.mark.slow
def test_bernoulli_ratio_is_exact_by_enumeration() -> None:
    # Bernoulli(num/den) from 8-bit digit comparisons: enumerating every word sequence, the
    # mass of True is num/den up to the mass still undecided after 3 words (< 256^-2).
    for den in (1, 2, 3, 5, 7, 12, 40, 255, 256, 1000):
        for num in sorted({0, 1, den // 3, den // 2, den - 1, den}):

            def run(w: _Scripted, num: int = num, den: int = den) -> bool:
                a = np.array([num], dtype=np.uint64)
                b = np.array([den], dtype=np.uint64)
                return bool(sampling._bernoulli_ratio(a, b, w, np.uint8)[0])  # type: ignore[arg-type]

            outcomes, open_mass = _enumerate_words(run, 256, 3)
            p_true = outcomes.get(True, Fraction(0))
            assert p_true <= Fraction(num, den) <= p_true + open_mass, (num, den)
            assert open_mass < Fraction(1, 256**2)


def _digits_value(words: list[int], bits: int) -> tuple[Fraction, Fraction]:
    lo = sum(Fraction(w, 2 ** (bits * (i + 1))) for i, w in enumerate(words))
    return lo, lo + Fraction(1, 2 ** (bits * len(words)))


@pytest.mark.slow  # ~0.5 CPU-s (measured)
@given(
    den=st.integers(1, 2**31 - 1),
    frac=st.fractions(0, 1),
    seed=st.integers(0, 2**32),
)
@settings(max_examples=300, deadline=None)
def test_bernoulli_ratio_decides_only_when_certain(den: int, frac: Fraction, seed: int) -> None:
    # Property: the answer is [X < num/den] for every X consistent with the 32-bit words read
    # (the interval of X they pin down lies wholly on the answer's side of num/den).
    num = int(frac * den)
    rng = np.random.default_rng(seed)
    # Words near the boundary make the undecided branch likely: W ≈ num·2^32/den.
    near = (num << 32) // den
    script = [min(2**32 - 1, max(0, near + int(rng.integers(-2, 3))))]
    script += rng.integers(0, 2**32, size=40).tolist()
    w = _Scripted(script)
    got = bool(
        sampling._bernoulli_ratio(  # type: ignore[arg-type]
            np.array([num], np.uint64), np.array([den], np.uint64), w, np.uint32
        )[0]
    )
    lo, hi = _digits_value(script[: w.used], 32)
    if got:
        assert hi <= Fraction(num, den)
    else:
        assert lo >= Fraction(num, den)


@given(t=st.integers(1, 2**32), words=st.lists(st.integers(0, 2**32 - 1), min_size=8))
@settings(max_examples=300, deadline=None)
def test_uniform_below_fast_range_and_multiply_shift(t: int, words: list[int]) -> None:
    # Lemire (2019): an accepted word W gives floor(W·t / 2^32) < t; a word is rejected
    # exactly when (W·t mod 2^32) < 2^32 mod t.
    w = _Scripted(words)
    try:
        out = sampling._uniform_below_fast(np.array([t], np.uint64), w)  # type: ignore[arg-type]
    except _NeedMore:  # every scripted word rejected (possible only for large t)
        assert all((x * t) % 2**32 < 2**32 % t for x in words)
        return
    used = words[: w.used]
    assert all((x * t) % 2**32 < 2**32 % t for x in used[:-1])
    assert (used[-1] * t) % 2**32 >= 2**32 % t
    assert int(out[0]) == (used[-1] * t) >> 32 < t


def test_uniform_below_fast_is_exact_by_enumeration() -> None:
    # 8-bit words: over all 256 first words, every value below t is reached by the same number
    # of accepted words, and a rejected word starts the same draw afresh, so P[value] = mass at
    # depth 1 / (1 − rejected mass): the same for every value, exactly 1/t.
    for t in (1, 2, 3, 5, 6, 7, 100, 129, 255, 256):

        def run(w: _Scripted, t: int = t) -> int:
            one = np.array([t], np.uint64)
            return int(sampling._uniform_below_fast(one, w, np.uint8)[0])  # type: ignore[arg-type]

        outcomes, open_mass = _enumerate_words(run, 256, 1)
        assert set(outcomes) == set(range(t))
        assert len(set(outcomes.values())) == 1
        assert next(iter(outcomes.values())) / (1 - open_mass) == Fraction(1, t)
    with pytest.raises(ParameterError, match="dtype"):
        sampling._uniform_below_fast(np.array([3], np.uint64), _Scripted([1]), np.uint64)  # type: ignore[arg-type]


def _exp_neg_floor_independent(v: int, bits: int) -> int:
    # floor(2^bits / e^v) from the positive series e^v = sum v^k/k! (partial sums from below,
    # the tail below term·2 once v/(k+1) <= 1/2): a different route than the library's
    # alternating series for e^-1 raised to the power v.
    n = 4 * v + bits
    partial, term = Fraction(0), Fraction(1)
    for k in range(n):
        partial += term
        term = term * v / (k + 1)
    lo, hi = partial, partial + 2 * term
    a, b = math.floor((1 << bits) / hi), math.floor((1 << bits) / lo)
    assert a == b
    return a


def test_geometric_thresholds_are_exact() -> None:
    table = sampling._geometric_thresholds().tolist()
    assert table[0] == 0 and table == sorted(table) and len(table) == 45  # c_1 .. c_44 > 0
    for v in range(1, 46):
        assert sampling._exp_neg_floor(v, 64) == _exp_neg_floor_independent(v, 64)
        assert abs(sampling._exp_neg_floor(v, 64) / 2**64 - math.exp(-v)) < 2**-60
    for v in (1, 2, 30, 50):
        assert sampling._exp_neg_floor(v, 192) == _exp_neg_floor_independent(v, 192)


def test_geometric_exp1_fast_resolves_ties_digit_by_digit() -> None:
    # X's first word equal to c_v = floor(2^64 e^-v): the next digit of e^-v decides.
    c1 = sampling._exp_neg_floor(1, 64)
    d2 = sampling._exp_neg_floor(1, 128) % 2**64  # second 64-bit digit of e^-1
    for second, expected in ((d2 - 1, 1), (d2 + 1, 0)):  # X just below / above e^-1
        w = _Scripted([c1, second])
        assert sampling._geometric_exp1_fast(1, w).tolist() == [expected]  # type: ignore[arg-type]
        assert w.used == 2
    # X = 2^-65 (first word 0): V = #{v : 2^-65 < e^-v} = floor(65 ln 2) = 45.
    assert sampling._geometric_exp1_fast(1, _Scripted([0, 2**63])).tolist() == [45]  # type: ignore[arg-type]
    # A first word strictly between thresholds needs no more digits: V = floor(-ln X).
    for x in (0.9, 0.5, 0.2, 0.01, 1e-9):
        word = int(x * 2**64)
        got = sampling._geometric_exp1_fast(1, _Scripted([word])).tolist()  # type: ignore[arg-type]
        assert got == [math.floor(-math.log(x))]


def test_fast_helpers_goodness_of_fit() -> None:
    src = InsecureSeededSource(91, i_understand_this_is_not_private=True)
    words = sampling._Words(src, 1000)
    # V ~ Geometric(1 - e^-1): P[V = v] = (1 - e^-1) e^-v (CKS 2020, Algorithm 2).
    v = sampling._geometric_exp1_fast(30000, words)
    ks = np.arange(8)
    probs = (1 - math.exp(-1)) * np.exp(-ks.astype(float))
    probs[-1] += math.exp(-8.0)
    assert stats.chisquare(np.bincount(np.clip(v, 0, 7), minlength=8), probs * v.size).pvalue > 1e-3
    # Bernoulli(exp(-num/den)) (CKS 2020, Algorithm 1), per-element numerators and denominators.
    cases = [(0, 9), (1, 9), (5, 9), (9, 9), (3, 7), (2**25, 2**26 - 1)]
    num = np.repeat(np.array([a for a, _ in cases], np.uint64), 6000)
    den = np.repeat(np.array([b for _, b in cases], np.uint64), 6000)
    out = sampling._bernoulli_exp_rows(num, den, words)
    for j, (a, b) in enumerate(cases):
        hits = int(out[j * 6000 : (j + 1) * 6000].sum())
        assert stats.binomtest(hits, 6000, math.exp(-a / b)).pvalue > 1e-3
    # gamma = 1 with A_1 = 1 known (first=2), on bytes: Bernoulli(exp(-1)).
    one = np.ones(20000, np.uint64)
    hits = int(sampling._bernoulli_exp_rows(one, one, words, first=2, dtype=np.uint8).sum())
    assert stats.binomtest(hits, 20000, math.exp(-1)).pvalue > 1e-3
    # Denominators too wide for bytes after the first columns: the exact Python finish.
    big = np.full(4000, 2**53, np.uint64)
    hits = int(sampling._bernoulli_exp_rows(big // np.uint64(2), big, words, dtype=np.uint8).sum())
    assert stats.binomtest(hits, 4000, math.exp(-0.5)).pvalue > 1e-3
    # Uniforms below t (Lemire): equal-mass bins.
    t = np.full(30000, 6 * 10**6, np.uint64)
    u = sampling._uniform_below_fast(t, words)
    assert int(u.max()) < 6 * 10**6
    assert stats.chisquare(np.bincount((u // np.uint64(10**6)).astype(np.int64))).pvalue > 1e-3


@pytest.mark.parametrize(
    ("scales", "seed"),
    [
        ((Fraction(2), Fraction(4096000)), 101),  # the service query's COUNT and SUM
        ((Fraction(5, 2), Fraction(1, 3), Fraction(7, 1000)), 102),  # rational, tiny
        ((Fraction(2**26 - 1, 5), Fraction(2**26 + 1, 3)), 103),  # either side of the fast range
        ((Fraction(10**6, 7), 1 / Fraction(0.1), HUGE), 104),  # wide and scalar fallbacks
        ((Fraction(2**64 + 3, 2**63 + 1), Fraction(5, 2**70)), 105),  # denominators past 2^62
    ],
)
def test_discrete_laplace_batches_goodness_of_fit(scales: tuple[Fraction, ...], seed: int) -> None:
    # Every scale of one pass against Lap_Z(scale) (CKS 2020, Definition 2), chi-square on bins
    # whose masses come from the closed-form CDF; the sizes differ so the split is exercised.
    src = InsecureSeededSource(seed, i_understand_this_is_not_private=True)
    sizes = [3000 + 500 * j for j in range(len(scales))]
    if HUGE in scales:
        sizes[-1] = 300
    drawn = sampling.discrete_laplace_batches(list(scales), sizes, src)
    for ys, scale, n in zip(drawn, scales, sizes, strict=True):
        assert len(ys) == n and all(type(y) is int for y in ys)
        assert _binned_pvalue(ys, scale) > 1e-3, scale


def test_discrete_laplace_batches_match_the_scalar_sampler() -> None:
    # Two-sample chi-square (contingency) of the one-pass batch against the scalar sampler.
    a = InsecureSeededSource(111, i_understand_this_is_not_private=True)
    b = InsecureSeededSource(112, i_understand_this_is_not_private=True)
    scales = [Fraction(2, 3), Fraction(3)]
    batches = sampling.discrete_laplace_batches(scales, [4000, 4000], a)
    for scale, batch in zip(scales, batches, strict=True):
        scalar = [discrete_laplace(scale, b) for _ in range(4000)]
        table = np.array(
            [np.bincount(np.clip(x, -6, 6) + 6, minlength=13) for x in (batch, scalar)]
        )
        assert stats.chi2_contingency(table[:, table.sum(axis=0) > 0]).pvalue > 1e-3
    assert (
        _binned_pvalue(sampling.discrete_laplace_batches([Fraction(3)], [6000], a)[0], Fraction(4))
        < 1e-6
    )


def test_discrete_laplace_batches_read_the_source_a_bounded_number_of_times() -> None:
    # One read for the expected need, a top-up only when a rejection loop runs over.
    class Counting(InsecureSeededSource):
        reads = 0

        def random_bytes(self, n: int) -> bytes:
            Counting.reads += 1
            return super().random_bytes(n)

    worst = 0
    for seed in range(30):
        src = Counting(seed, i_understand_this_is_not_private=True)
        Counting.reads = 0
        sampling.discrete_laplace_batches([Fraction(2), Fraction(4096000)], [100, 100], src)
        worst = max(worst, Counting.reads)
    assert worst <= 3
    # numpy is imported here: from 9 draws on the vectorised pass runs (one read), below the
    # scalar sampler (integers from randbelow, no byte reads).
    src = Counting(0, i_understand_this_is_not_private=True)
    Counting.reads = 0
    assert len(sampling.discrete_laplace_batches([Fraction(2)], [9], src)[0]) == 9
    assert Counting.reads == 1
    Counting.reads = 0
    assert len(sampling.discrete_laplace_batches([Fraction(2)], [8], src)[0]) == 8
    assert Counting.reads == 0
    with pytest.raises(ParameterError, match="sizes"):
        sampling.discrete_laplace_batches([Fraction(1)], [1, 2], None)
    assert sampling.discrete_laplace_batches([], [], None) == []
