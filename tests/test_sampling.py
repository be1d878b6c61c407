"""Tests of the secure exact samplers, the random sources and the fast simulators.

Exactness: every sampler is driven by a source that enumerates all its random choices with
their exact probabilities (Fractions), so the sampler's exact output distribution on the
explored paths is computed, plus the exact mass of the unexplored paths. The target pmf
(Canonne, Kamath & Steinke 2020, arXiv:2004.00010, Algorithms 1-3 and their definitions of
Bernoulli(exp(-gamma)), Lap_Z and N_Z) must lie in [explored, explored + unexplored].
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
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
    public = {n for n in vars(sampling) if not n.startswith("_")}
    imported = {"Any", "ABC", "Fraction", "abstractmethod", "annotations", "math", "np", "npt"}
    imported |= {"random", "secrets", "as_positive", "as_positive_int", "ParameterError"}
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
