"""Randomized response, binary and k-ary, sampled exactly.

k-ary randomized response reports the true value with probability e^ε/(e^ε + k − 1) and
each other value with probability 1/(e^ε + k − 1) (Warner 1965; Kairouz, Oh & Viswanath
2014, "Extremal Mechanisms for Local DP"). The coin-flip scheme of Dwork & Roth 2014 (answer
truthfully on heads, else answer with a second coin) is binary RR with ε = ln 3.

The release draws a uniform candidate and accepts it outright if it is the true value, else
with probability e^{−ε} (Bernoulli(exp(−ε)) by CKS 2020 Algorithm 1): the accepted output is
the truth with probability 1/(1 + (k − 1)e^{−ε}) = e^ε/(e^ε + k − 1), exactly.

>>> rr = RandomizedResponse.coin_flip()
>>> round(rr.keep_probability, 6), round(rr.profile().pure_epsilon(), 6)
(0.75, 1.098612)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp._validate import as_nonnegative, as_positive_int
from infodp.accounting import PrivacyProfile, randomized_response_profile
from infodp.errors import ParameterError
from infodp.mechanisms.base import ChannelView, Mechanism
from infodp.mechanisms.sampling import as_generator, bernoulli_exp, require_secure_source

__all__ = ["RandomizedResponse"]


@dataclass(frozen=True)
class RandomizedResponse(Mechanism):
    """k-ary randomized response on {0, ..., k − 1} with privacy parameter ε (pure ε-DP).

    >>> from infodp.mechanisms.sampling import InsecureSeededSource
    >>> rr = RandomizedResponse(2.0, k=4)
    >>> rr.release(3, source=InsecureSeededSource(0, i_understand_this_is_not_private=True)) in range(4)
    True
    """  # noqa: E501

    epsilon: float
    k: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", as_nonnegative("epsilon", self.epsilon))
        object.__setattr__(self, "k", as_positive_int("k", self.k, minimum=2))

    @classmethod
    def coin_flip(cls) -> RandomizedResponse:
        """Dwork & Roth's (2014) two-coin scheme: P(truthful report) = 1/2 + 1/4 = 3/4, ε = ln 3."""
        return cls(math.log(3.0), 2)

    @classmethod
    def calibrate(
        cls, epsilon: float, delta: float = 0.0, sensitivity: float = 1.0, k: int = 2
    ) -> RandomizedResponse:
        """RR at exactly ``epsilon`` (``delta`` and ``sensitivity`` unused: one row, pure DP)."""
        as_nonnegative("delta", delta)
        return cls(epsilon, k)

    @property
    def keep_probability(self) -> float:
        """e^ε/(e^ε + k − 1) = 1/(1 + (k − 1)e^{−ε})."""
        return 1.0 / (1.0 + (self.k - 1) * math.exp(-self.epsilon))

    def probabilities(self, value: int) -> npt.NDArray[np.float64]:
        """The output distribution given ``value``."""
        x = self._check(value)
        other = math.exp(-self.epsilon) * self.keep_probability
        p = np.full(self.k, other)
        p[x] = self.keep_probability
        return p

    def _check(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ParameterError("value", value, f"an integer in [0, {self.k - 1}]")
        if not 0 <= int(value) < self.k:
            raise ParameterError("value", value, f"an integer in [0, {self.k - 1}]")
        return int(value)

    def profile(self) -> PrivacyProfile:
        """``randomized_response_profile(epsilon, k)``."""
        return randomized_response_profile(self.epsilon, self.k)

    def release(self, value: Any, *, source: Any = None) -> int:
        """Report ``value`` through randomized response (exact sampler, secure source)."""
        x = self._check(value)
        src = require_secure_source(source)
        gamma = Fraction(self.epsilon)
        while True:
            y = src.randbelow(self.k)
            if y == x or bernoulli_exp(gamma, src):
                return y

    def simulate(self, value: Any, size: int, rng: Any = None) -> npt.NDArray[np.int64]:
        """Simulation only, NOT private: ``size`` numpy draws of the report."""
        n = as_positive_int("size", size, minimum=0)
        return as_generator(rng).choice(self.k, size=n, p=self.probabilities(value))

    def channel(self, inputs: Sequence[int] | None = None) -> ChannelView:
        """The exact k × k channel (rows for ``inputs``, default all k values).

        >>> round(RandomizedResponse.coin_flip().channel().channel.epsilon(), 6)
        1.098612
        """
        from infodp.channel import Channel

        xs = list(range(self.k)) if inputs is None else [self._check(x) for x in inputs]
        rows = np.array([self.probabilities(x) for x in xs])
        return ChannelView(Channel(rows, inputs=xs, outputs=list(range(self.k))), 0.0, "exact")
