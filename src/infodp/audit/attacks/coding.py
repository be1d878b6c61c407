"""The "broken wifi" attack of “Differential Privacy and Information Theory” (2022): leak a secret
through many ε-DP queries with a code.

“Differential Privacy and Information Theory” (2022), "To Fix a Broken Wifi": an ε-DP query is a
noisy channel from one individual's row to
the output; by Shannon's theorem an error-correcting code turns n such queries into a reliable
link carrying up to n·C nats, where C is the channel's Shannon capacity (α = 1) — and by the
converse never more. Here each query is binary randomized response with parameter ε on one
chosen bit of a codeword computed from the individual's k-bit secret (pre-processing: still
ε-DP per query, by data processing), i.e. a binary symmetric channel with crossover
p = 1/(1 + e^ε) and capacity C = log 2 − H_b(p) nats.

Two codes: a repetition code (each bit r times, majority vote) and a random linear code
(a k × n binary generator matrix, maximum-likelihood = minimum-Hamming-distance decoding over
all 2^k codewords). The *achieved* rate is measured as information actually delivered: by
Fano's inequality (Cover & Thomas 2006, Thm 2.10.1) a block error rate P_e gives
I(S; Ŝ) ≥ k log 2 − h(P_e) − P_e log(2^k − 1) for a uniform secret S, and using the
Clopper–Pearson upper bound on P_e makes this a lower bound at 95% confidence. The rate per
query can then never exceed C (data processing + capacity of n independent uses), which is
what the tests check.

>>> r = coding_attack(epsilon=1.0, bits=6, trials=300, rng=0)
>>> r.linear.information_rate_bits <= r.capacity_bits
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from infodp._jsonable import FieldsJSON, json_key
from infodp._validate import as_positive, as_positive_int, as_probability
from infodp.audit.attacks._result import AttackResult
from infodp.audit.estimators import clopper_pearson
from infodp.channel import Channel
from infodp.errors import ParameterError
from infodp.mechanisms.sampling import as_generator
from infodp.units import nats_to_bits

__all__ = [
    "CodeResult",
    "CodingResult",
    "coding_attack",
    "fano_information_bits",
    "repetition_length",
]

IntArray = npt.NDArray[np.int64]


def fano_information_bits(bits: int, error: float) -> float:
    """Fano lower bound on I(S; Ŝ) in bits for a uniform k-bit secret and block error ``error``.

    k − h₂(P_e) − P_e·log₂(2^k − 1), clipped at 0 (Cover & Thomas 2006, Thm 2.10.1). It
    decreases in P_e on [0, 1 − 2^-k], so an upper bound on P_e gives a lower bound.

    >>> fano_information_bits(8, 0.0), round(fano_information_bits(8, 0.5), 4)
    (8.0, 3.0028)
    """
    k = as_positive_int("bits", bits)
    pe = as_probability("error", error)
    if pe >= 1.0 - 2.0**-k:
        return 0.0
    h = float(stats.entropy([pe, 1.0 - pe], base=2)) if 0 < pe < 1 else 0.0
    return max(0.0, k - h - pe * math.log2(2.0**k - 1.0))


def repetition_length(epsilon: float, bits: int, target_error: float) -> int:
    """Smallest odd r whose repetition code has block error ≤ ``target_error`` (exact binomial).

    >>> repetition_length(math.log(3), 1, 0.05)   # p = 1/4: P(Bin(9, 1/4) ≥ 5) ≈ 0.049
    9
    """
    eps = as_positive("epsilon", epsilon)
    k = as_positive_int("bits", bits)
    target = as_probability("target_error", target_error, open_low=True, open_high=True)
    p = 1.0 / (1.0 + math.exp(eps)) if eps < 700 else 0.0
    r = 1
    while r < 100_001:
        bit_error = float(stats.binom.sf(r // 2, r, p))
        if -math.expm1(k * math.log1p(-bit_error)) <= target:
            return r
        r += 2
    raise ParameterError("epsilon", epsilon, "large enough that a code of length ≤ 1e5 works")


@dataclass(frozen=True)
class CodeResult(FieldsJSON):
    """One code's measured performance; rates in bits per ε-DP query."""

    name: str = field(metadata=json_key("code"))
    queries: int
    nominal_rate_bits: float = field(metadata=json_key("nominal_rate_bits_per_query"))
    block_error: float
    block_error_upper: float = field(metadata=json_key("block_error_upper_95"))
    information_rate_bits: float = field(metadata=json_key("information_rate_bits_per_query"))


@dataclass(frozen=True)
class CodingResult(AttackResult):
    """The broken-wifi attack: two codes against the capacity of one ε-DP query."""

    epsilon: float = field(metadata=json_key("epsilon_per_query"))
    bits: int = field(metadata=json_key("secret_bits"))
    trials: int
    capacity_nats: float = field(metadata=json_key("capacity_nats_per_query"))
    capacity_bits: float = field(metadata=json_key("capacity_bits_per_query"))
    repetition: CodeResult
    linear: CodeResult

    def _summary(self) -> str:
        return (
            f"{self.bits}-bit secret: repetition code leaks "
            f"{self.repetition.information_rate_bits:.4f} bits/query, random linear code "
            f"{self.linear.information_rate_bits:.4f}; capacity of one ε-DP query is "
            f"{self.capacity_bits:.4f} bits (no code can beat it)."
        )


def _bsc(codewords: IntArray, p: float, gen: np.random.Generator) -> IntArray:
    """Randomized response on every bit: each query keeps its bit with probability 1 − p."""
    flips = (gen.random(codewords.shape) < p).astype(np.int64)
    return np.asarray(codewords ^ flips, dtype=np.int64)


def _secrets(bits: int, trials: int, gen: np.random.Generator) -> IntArray:
    return np.asarray(gen.integers(0, 2, size=(trials, bits)), dtype=np.int64)


def _repetition(
    secrets: IntArray, r: int, p: float, gen: np.random.Generator
) -> npt.NDArray[np.bool_]:
    sent = np.repeat(secrets, r, axis=1)
    received = _bsc(sent, p, gen).reshape(secrets.shape[0], secrets.shape[1], r)
    decoded = (received.sum(axis=2) * 2 > r).astype(np.int64)
    return np.asarray((decoded != secrets).any(axis=1))


def _all_messages(bits: int) -> IntArray:
    idx = np.arange(2**bits, dtype=np.int64)
    return np.asarray((idx[:, None] >> np.arange(bits)) & 1, dtype=np.int64)


def _linear(
    secrets: IntArray, generator: IntArray, p: float, gen: np.random.Generator
) -> npt.NDArray[np.bool_]:
    bits = secrets.shape[1]
    book = (_all_messages(bits) @ generator) % 2  # 2^k × n codebook
    sent = (secrets @ generator) % 2
    received = _bsc(sent, p, gen)
    # ML decoding on a BSC with p < 1/2 = maximal agreement (±1 correlation).
    score = (2 * received - 1) @ (2 * book - 1).T
    best = np.argmax(score, axis=1)
    index = secrets @ (1 << np.arange(bits))
    return np.asarray(best != index)


def coding_attack(
    epsilon: float = 1.0,
    bits: int = 8,
    trials: int = 2000,
    *,
    target_error: float = 0.05,
    rng: Any = None,
) -> CodingResult:
    """Leak a ``bits``-bit secret through ε-DP randomized-response queries, with two codes.

    The repetition code uses the shortest length with exact block error ≤ ``target_error``;
    the random linear code uses the highest rate (from a grid of fractions of capacity) whose
    block error on a pilot of ``trials // 2`` secrets is ≤ ``target_error``. Both are then
    measured on ``trials`` fresh secrets. Capacity comes from :class:`infodp.channel.Channel`
    (certified upper end of the bracket).
    """
    eps = as_positive("epsilon", epsilon)
    k = as_positive_int("bits", bits)
    if k > 16:
        raise ParameterError("bits", bits, "an integer in [1, 16] (ML decoding is 2^bits-wide)")
    t = as_positive_int("trials", trials)
    target = as_probability("target_error", target_error, open_low=True, open_high=True)
    gen = as_generator(rng)
    p = 1.0 / (1.0 + math.exp(eps)) if eps < 700 else 0.0
    cap = Channel.randomized_response(2, eps).shannon_capacity()
    cap_nats = float(cap.upper)
    cap_bits = nats_to_bits(cap_nats)

    def measure(name: str, n: int, errors: npt.NDArray[np.bool_]) -> CodeResult:
        e = int(np.count_nonzero(errors))
        upper = clopper_pearson(e, t, side="upper")[1]
        return CodeResult(
            name=name,
            queries=n,
            nominal_rate_bits=k / n,
            block_error=e / t,
            block_error_upper=upper,
            information_rate_bits=fano_information_bits(k, upper) / n,
        )

    r = repetition_length(eps, k, target)
    repetition = measure(f"repetition x{r}", k * r, _repetition(_secrets(k, t, gen), r, p, gen))

    pilot = max(t // 2, 50)
    chosen: tuple[int, IntArray] | None = None
    for fraction in (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1):
        n = max(k, math.ceil(k / (fraction * cap_bits)))
        g = np.asarray(gen.integers(0, 2, size=(k, n)), dtype=np.int64)
        errs = _linear(_secrets(k, pilot, gen), g, p, gen)
        if np.mean(errs) <= target:
            chosen = (n, g)
            break
    if chosen is None:
        n = k * r
        chosen = (n, np.asarray(gen.integers(0, 2, size=(k, n)), dtype=np.int64))
    n, g = chosen
    linear = measure(f"random linear [{n}, {k}]", n, _linear(_secrets(k, t, gen), g, p, gen))
    return CodingResult(
        epsilon=eps,
        bits=k,
        trials=t,
        capacity_nats=cap_nats,
        capacity_bits=cap_bits,
        repetition=repetition,
        linear=linear,
    )
