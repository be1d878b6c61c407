"""Pure local randomizers: k-ary randomized response, OUE, OLH and Hadamard response.

Each is ε-LDP, releases with exact samplers on the secure source, and plugs its support
probabilities (p, q) into the estimator of :mod:`infodp.local.base` (Wang et al. 2017):

============  ==========================  ======================  ==========================
randomizer    p                           q                       source
============  ==========================  ======================  ==========================
k-ary RR      e^ε/(e^ε + k − 1)           1/(e^ε + k − 1)         Warner 1965; Wang §4.1
OUE           1/2                         1/(e^ε + 1)             Wang et al. 2017, §4.3
OLH           e^ε/(e^ε + g − 1)           1/g, g = ⌊e^ε + 1⌉      Wang et al. 2017, §4.4
Hadamard      e^ε/(e^ε + 1)               1/2                     Acharya, Sun & Zhang 2019
============  ==========================  ======================  ==========================

>>> rr = KRandomizedResponse(math.log(3), 2)      # Warner's (1965) coin-flip scheme
>>> round(rr.p, 6), round(rr.channel().epsilon(), 6)
(0.75, 1.098612)
"""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from infodp._validate import as_positive, as_positive_int
from infodp.accounting import PrivacyProfile, randomized_response_profile
from infodp.errors import ParameterError
from infodp.local.base import (
    FloatArray,
    IntArray,
    LocalRandomizer,
    check_channel_size,
    logistic_bernoulli,
)
from infodp.mechanisms.randomized_response import RandomizedResponse
from infodp.mechanisms.sampling import require_secure_source

__all__ = [
    "HadamardResponse",
    "KRandomizedResponse",
    "OptimizedLocalHashing",
    "OptimizedUnaryEncoding",
    "binary_randomized_response",
]


@dataclass(frozen=True)
class _Checked(LocalRandomizer):
    """The fields (ε, k) of every randomizer dataclass below, validated and normalised once."""

    epsilon: float
    domain: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", as_positive("epsilon", self.epsilon))
        object.__setattr__(self, "domain", as_positive_int("domain", self.domain, minimum=2))


def _binomial_support(counts: IntArray, p: float, q: float, gen: np.random.Generator) -> IntArray:
    """C_v = Bin(n_v, p) + Bin(n − n_v, q): the support count of each item (marginally exact)."""
    n = int(counts.sum())
    return gen.binomial(counts, p) + gen.binomial(n - counts, q)


@dataclass(frozen=True)
class KRandomizedResponse(_Checked):
    """k-ary randomized response (direct encoding): report the truth w.p. e^ε/(e^ε + k − 1)."""

    @property
    def p(self) -> float:
        return 1.0 / (1.0 + (self.domain - 1) * math.exp(-self.epsilon))

    @property
    def q(self) -> float:
        return math.exp(-self.epsilon) * self.p

    def profile(self) -> PrivacyProfile:
        """``randomized_response_profile(ε, k)`` (exact RDP and PLD of the channel)."""
        return randomized_response_profile(self.epsilon, self.domain)

    def release(self, value: int, *, source: Any = None) -> int:
        """The report: :class:`~infodp.mechanisms.RandomizedResponse`'s exact sampler."""
        return RandomizedResponse(self.epsilon, self.domain).release(
            self._item(value), source=source
        )

    def supports(self, report: Any) -> IntArray:
        out = np.zeros(self.domain, dtype=np.int64)
        out[self._item(report)] = 1
        return out

    def _simulate_support(self, counts: IntArray, gen: np.random.Generator) -> IntArray:
        total = np.zeros(self.domain, dtype=np.int64)
        for v, n_v in enumerate(counts):
            row = np.full(self.domain, self.q)
            row[v] = self.p
            total += gen.multinomial(int(n_v), row / row.sum())
        return total

    def _channel_matrix(self) -> tuple[FloatArray, list[Any]]:
        W = np.full((self.domain, self.domain), self.q)
        np.fill_diagonal(W, self.p)
        return W / W.sum(axis=1, keepdims=True), list(range(self.domain))


def binary_randomized_response(epsilon: float = math.log(3.0)) -> KRandomizedResponse:
    """Binary randomized response; the default ε = ln 3 is Warner's (1965) coin-flip scheme.

    >>> round(binary_randomized_response().p, 6)
    0.75
    """
    return KRandomizedResponse(epsilon, 2)


@dataclass(frozen=True)
class OptimizedUnaryEncoding(_Checked):
    """OUE: one-hot encode, keep the true bit w.p. 1/2, set each other bit w.p. 1/(e^ε + 1)."""

    @property
    def p(self) -> float:
        return 0.5

    @property
    def q(self) -> float:
        return 1.0 / (1.0 + math.exp(self.epsilon))

    def release(self, value: int, *, source: Any = None) -> tuple[int, ...]:
        """The perturbed bit vector (fair coin for the true bit, exact 1/(1+e^ε) for others)."""
        x = self._item(value)
        src = require_secure_source(source)
        return tuple(
            int(src.bernoulli(1, 2)) if v == x else int(logistic_bernoulli(self.epsilon, src))
            for v in range(self.domain)
        )

    def supports(self, report: Any) -> IntArray:
        bits = np.asarray(report, dtype=np.int64)
        if bits.shape != (self.domain,) or not np.isin(bits, (0, 1)).all():
            raise ParameterError("report", "<report>", f"{self.domain} bits (0 or 1)")
        return bits

    def _simulate_support(self, counts: IntArray, gen: np.random.Generator) -> IntArray:
        return _binomial_support(counts, self.p, self.q, gen)

    def _channel_matrix(self) -> tuple[FloatArray, list[Any]]:
        check_channel_size(2**self.domain)
        outputs = list(itertools.product((0, 1), repeat=self.domain))
        bits = np.array(outputs, dtype=np.float64)  # outputs × k
        W = np.empty((self.domain, len(outputs)))
        for x in range(self.domain):
            prob_one = np.full(self.domain, self.q)
            prob_one[x] = self.p
            W[x] = np.prod(np.where(bits == 1, prob_one, 1 - prob_one), axis=1)
        return W, outputs


def _hash(seed: int, value: int, modulus: int) -> int:
    digest = hashlib.sha256(f"{seed}:{value}".encode()).digest()
    return int.from_bytes(digest[:8], "little") % modulus


@dataclass(frozen=True)
class OptimizedLocalHashing(_Checked):
    """OLH: hash the value into g = round(e^ε + 1) buckets, randomized response on the bucket.

    A report is ``(seed, bucket)``; the seed picks the hash function (SHA-256 of seed and
    value, a pseudo-random stand-in for the random hash family the analysis assumes).
    """

    @property
    def buckets(self) -> int:
        """g = round(e^ε + 1), at least 2 (Wang et al. 2017, §4.4)."""
        return max(2, round(math.exp(self.epsilon) + 1.0))

    @property
    def p(self) -> float:
        return 1.0 / (1.0 + (self.buckets - 1) * math.exp(-self.epsilon))

    @property
    def q(self) -> float:
        return 1.0 / self.buckets

    def release(self, value: int, *, source: Any = None) -> tuple[int, int]:
        x = self._item(value)
        src = require_secure_source(source)
        seed = src.randbelow(2**64)
        rr = RandomizedResponse(self.epsilon, self.buckets)
        return seed, rr.release(_hash(seed, x, self.buckets), source=src)

    def supports(self, report: Any) -> IntArray:
        try:
            seed, bucket = (int(part) for part in report)
        except (TypeError, ValueError):
            raise ParameterError("report", "<report>", "a (seed, bucket) pair") from None
        return np.array(
            [int(_hash(seed, v, self.buckets) == bucket) for v in range(self.domain)],
            dtype=np.int64,
        )

    def _simulate_support(self, counts: IntArray, gen: np.random.Generator) -> IntArray:
        return _binomial_support(counts, self.p, self.q, gen)

    def _channel_matrix(self) -> tuple[FloatArray, list[Any]]:
        """Channel with a uniformly random hash function H: [k] → [g] as part of the output."""
        g, k = self.buckets, self.domain
        check_channel_size(g ** (k + 1))
        outputs = [(h, y) for h in itertools.product(range(g), repeat=k) for y in range(g)]
        other = (1.0 - self.p) / (g - 1)
        W = np.array(
            [[(self.p if h[x] == y else other) / g**k for h, y in outputs] for x in range(k)]
        )
        return W, outputs


@dataclass(frozen=True)
class HadamardResponse(_Checked):
    """Hadamard response: item x owns the K/2 columns where row x+1 of the K×K Hadamard
    matrix is +1; the report is one of them w.p. e^ε/(e^ε + 1), else one of the others."""

    @property
    def size(self) -> int:
        """K: the smallest power of two above the domain size."""
        return 1 << self.domain.bit_length()

    def _owns(self, x: int, y: int) -> bool:
        return bin((x + 1) & y).count("1") % 2 == 0  # Sylvester: H[x+1, y] = +1

    @property
    def p(self) -> float:
        return 1.0 / (1.0 + math.exp(-self.epsilon))

    @property
    def q(self) -> float:
        return 0.5

    def release(self, value: int, *, source: Any = None) -> int:
        x = self._item(value)
        src = require_secure_source(source)
        inside = not logistic_bernoulli(self.epsilon, src)  # P = e^ε/(1 + e^ε)
        while True:
            y = src.randbelow(self.size)
            if self._owns(x, y) == inside:
                return y

    def supports(self, report: Any) -> IntArray:
        if isinstance(report, bool) or not isinstance(report, (int, np.integer)):
            raise ParameterError("report", "<report>", f"an integer in [0, {self.size - 1}]")
        if not 0 <= int(report) < self.size:
            raise ParameterError("report", "<report>", f"an integer in [0, {self.size - 1}]")
        return np.array([int(self._owns(v, int(report))) for v in range(self.domain)])

    def _simulate_support(self, counts: IntArray, gen: np.random.Generator) -> IntArray:
        return _binomial_support(counts, self.p, self.q, gen)

    def _channel_matrix(self) -> tuple[FloatArray, list[Any]]:
        K = self.size
        W = np.array(
            [
                [(2 * self.p if self._owns(x, y) else 2 * (1 - self.p)) / K for y in range(K)]
                for x in range(self.domain)
            ]
        )
        return W, list(range(K))
