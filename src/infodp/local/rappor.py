"""RAPPOR (Erlingsson, Pihur & Korolova 2014): Bloom filter, permanent randomized response.

The value is hashed into a Bloom filter of ``bits`` bits with ``hashes`` hash functions; each
bit is kept with probability 1 − f/2 and flipped with probability f/2 (the permanent
randomized response, PRR). One report is ε-LDP with ε = 2h ln((1 − f/2)/(f/2)) (Erlingsson
et al. 2014, §3.2 and Thm 1: two values differ in at most 2h bits), so f/2 = 1/(1 + e^{ε/2h}).
*Basic* RAPPOR has one hash and one bit per item (no collisions: symmetric unary encoding,
Wang et al. 2017, §4.3); *one-time* RAPPOR is the general Bloom-filter PRR, reported once
(the instantaneous randomized response of repeated reports is not implemented).

The server turns bit counts c_i into unbiased estimates t_i = (c_i − n f/2)/(1 − f) of
Σ_v N_v [bit i ∈ Bloom(v)] and solves the Bloom system by least squares, N̂ = X⁺ t (unbiased
when X has full column rank). Every bit's count has variance n·(f/2)(1 − f/2) whatever the
values (the flip is symmetric), so Cov f̂ = (f/2)(1 − f/2) / (n(1 − f)²) · X⁺X⁺ᵀ exactly
(for basic RAPPOR this is Wang et al.'s SUE variance).

>>> r = Rappor(math.log(3), 4)                      # basic RAPPOR
>>> round(r.flip / 2, 6), round(r.channel().epsilon(), 6)
(0.366025, 1.098612)
"""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from infodp._validate import as_positive, as_positive_int
from infodp.errors import ParameterError
from infodp.local.base import (
    FloatArray,
    FrequencyEstimate,
    IntArray,
    LocalRandomizer,
    check_channel_size,
    logistic_bernoulli,
    project_to_simplex,
)
from infodp.mechanisms.sampling import require_secure_source

__all__ = ["Rappor"]


def _bloom(domain: int, bits: int, hashes: int) -> IntArray:
    X = np.zeros((bits, domain), dtype=np.int64)
    for v in range(domain):
        for i in range(hashes):
            digest = hashlib.sha256(f"rappor:{i}:{v}".encode()).digest()
            X[int.from_bytes(digest[:8], "little") % bits, v] = 1
    return X


@dataclass(frozen=True)
class Rappor(LocalRandomizer):
    """RAPPOR at level ε on ``domain`` items; ``bits=None`` and ``hashes=1`` is basic RAPPOR."""

    epsilon: float
    domain: int
    bits: int | None = None
    hashes: int = 1
    _X: IntArray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = as_positive("epsilon", self.epsilon)
        k = as_positive_int("domain", self.domain, minimum=2)
        h = as_positive_int("hashes", self.hashes)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "domain", k)
        object.__setattr__(self, "hashes", h)
        if self.bits is None:
            if h != 1:
                raise ParameterError("bits", None, "given when hashes > 1 (the Bloom filter size)")
            X = np.eye(k, dtype=np.int64)
        else:
            m = as_positive_int("bits", self.bits, minimum=2)
            object.__setattr__(self, "bits", m)
            X = _bloom(k, m, h)
            if np.linalg.matrix_rank(X) < k:
                raise ParameterError(
                    "bits",
                    m,
                    f"large enough that the {k} Bloom patterns are linearly independent",
                )
        object.__setattr__(self, "_X", X)

    @property
    def support_size(self) -> int:
        return int(self._X.shape[0])

    @property
    def flip(self) -> float:
        """f: each bit is replaced by a fair coin with probability f (flipped w.p. f/2)."""
        return 2.0 / (1.0 + math.exp(self.epsilon / (2 * self.hashes)))

    @property
    def p(self) -> float:
        """P(bit reported 1 | bit set) = 1 − f/2."""
        return 1.0 - self.flip / 2

    @property
    def q(self) -> float:
        """P(bit reported 1 | bit clear) = f/2."""
        return self.flip / 2

    def release(self, value: int, *, source: Any = None) -> tuple[int, ...]:
        """The PRR bit vector; each bit flipped with probability exactly 1/(1 + e^{ε/2h})."""
        x = self._item(value)
        src = require_secure_source(source)
        gamma = self.epsilon / (2 * self.hashes)
        return tuple(int(b) ^ int(logistic_bernoulli(gamma, src)) for b in self._X[:, x].tolist())

    def supports(self, report: Any) -> IntArray:
        bits = np.asarray(report, dtype=np.int64)
        if bits.shape != (self.support_size,) or not np.isin(bits, (0, 1)).all():
            raise ParameterError("report", "<report>", f"{self.support_size} bits (0 or 1)")
        return bits

    def variance(self, frequencies: Any, users: int) -> FloatArray:
        """Exact Var f̂_v = (f/2)(1 − f/2)/(n(1 − f)²) · (X⁺X⁺ᵀ)_vv (independent of f)."""
        n = as_positive_int("users", users)
        pinv = np.linalg.pinv(self._X.astype(np.float64))
        scale = self.q * (1 - self.q) / (n * (self.p - self.q) ** 2)
        return np.asarray(scale * np.sum(pinv**2, axis=1), dtype=np.float64)

    def estimate_from_support(
        self, support: Any, users: int, *, true_frequencies: Any = None
    ) -> FrequencyEstimate:
        """Frequencies from the per-bit counts of ``users`` reports (least squares)."""
        c, n = self._support_counts(support, users, f"{self.support_size} bit counts")
        t = (c - n * self.q) / (self.p - self.q)
        est = np.linalg.lstsq(self._X.astype(np.float64), t, rcond=None)[0] / n
        return FrequencyEstimate(est, self.variance(est, n), project_to_simplex(est), n)

    def _simulate_support(self, counts: IntArray, gen: np.random.Generator) -> IntArray:
        n = int(counts.sum())
        set_bits = self._X @ counts
        return gen.binomial(set_bits, self.p) + gen.binomial(n - set_bits, self.q)

    def _channel_matrix(self) -> tuple[FloatArray, list[Any]]:
        m = self.support_size
        check_channel_size(2**m)
        outputs = list(itertools.product((0, 1), repeat=m))
        out = np.array(outputs, dtype=np.float64)
        W = np.empty((self.domain, len(outputs)))
        for x in range(self.domain):
            prob_one = np.where(self._X[:, x] == 1, self.p, self.q)
            W[x] = np.prod(np.where(out == 1, prob_one, 1 - prob_one), axis=1)
        return W, outputs
