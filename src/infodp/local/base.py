"""What every local randomizer shares: the support-set frequency estimator and its variance.

In the local model each person randomises their own value before it leaves their device
(Warner 1965; Erlingsson, Pihur & Korolova 2014). Wang, Blocki, Li &
Jha (2017, "Locally differentially private protocols for frequency estimation", USENIX
Security, §3 and Thm 2) put the protocols in one frame: a report y *supports* a set of
items, the true item with probability p and any other item with probability q. With
C_v reports supporting v among n,

    f̂_v = (C_v / n − q) / (p − q)       (unbiased),
    Var f̂_v = q(1 − q) / (n (p − q)²) + f_v (1 − p − q) / (n (p − q))     (exact, Eq. (2)).

The variance is exact for a fixed population (reports independent given the values): it is
Σ_users Var(1[y supports v]) / (n(p − q))².

:func:`project_to_simplex` is the consistency post-processing: the Euclidean projection onto
{f ≥ 0, Σ f = 1} (Duchi et al. 2008, Fig. 1), which is the "Norm-Sub" method of Wang, Lopuhaä-
Zwakenberg, Li, Skoric & Li (2020, NDSS): subtract one constant and clip at zero.

>>> project_to_simplex([0.7, 0.5, -0.1]).round(6).tolist()
[0.6, 0.4, 0.0]
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp._jsonable import FieldsJSON
from infodp._validate import as_positive_int
from infodp.accounting import PrivacyProfile, pure_dp_profile
from infodp.channel import Channel
from infodp.errors import ParameterError

__all__ = ["FrequencyEstimate", "LocalRandomizer", "project_to_simplex"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Channels with more outputs than this are not built (capacities need the full matrix).
MAX_CHANNEL_OUTPUTS = 4096
#: Width of the α = 2 capacity bracket :meth:`LocalRandomizer.capacities` stops at (nats).
CAPACITY_TOL = 1e-6


def project_to_simplex(values: Any) -> FloatArray:
    """The closest probability vector in Euclidean distance (Duchi et al. 2008).

    >>> project_to_simplex([0.2, 0.2]).tolist()
    [0.5, 0.5]
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or v.size == 0 or not np.isfinite(v).all():
        raise ParameterError("values", f"array of shape {v.shape}", "a finite 1-d vector")
    u = np.sort(v)[::-1]
    css = np.cumsum(u)
    ks = np.arange(1, v.size + 1)
    rho = int(np.nonzero(u * ks > css - 1.0)[0][-1])
    theta = (css[rho] - 1.0) / (rho + 1.0)
    out = np.clip(v - theta, 0.0, None)
    return np.asarray(out / out.sum(), dtype=np.float64)


@dataclass(frozen=True)
class FrequencyEstimate(FieldsJSON):
    """Unbiased frequencies, their variance (per item), and the consistent version.

    ``estimate`` is unbiased (it may be negative and need not sum to one); ``variance`` is
    Wang et al.'s exact variance at ``estimate`` clipped to [0, 1] (a plug-in) unless the
    true frequencies were given; ``consistent`` is :func:`project_to_simplex` of
    ``estimate`` (biased, never worse in L2).
    """

    estimate: FloatArray
    variance: FloatArray
    consistent: FloatArray
    users: int


class LocalRandomizer(ABC):
    """A client-side ε-LDP randomizer on the items {0, …, k − 1} with a support-set estimator.

    Subclasses give ``p``/``q`` (support probabilities), ``release`` (exact sampler on a
    secure source), ``supports`` (which items a report supports), ``_simulate_support``
    (numpy simulation of the support counts, NOT private) and ``channel``.
    """

    epsilon: float
    domain: int

    @property
    @abstractmethod
    def p(self) -> float:
        """P(report supports v | value v)."""

    @property
    @abstractmethod
    def q(self) -> float:
        """P(report supports v | value ≠ v)."""

    @abstractmethod
    def release(self, value: int, *, source: Any = None) -> Any:
        """One report of ``value`` (exact sampling; a secure source unless in test mode)."""

    @abstractmethod
    def supports(self, report: Any) -> IntArray:
        """The items a report supports (0/1 vector of length ``domain``)."""

    @abstractmethod
    def _simulate_support(self, counts: IntArray, gen: np.random.Generator) -> IntArray:
        """Support counts C_v for a population with ``counts`` users per item (simulation)."""

    @abstractmethod
    def _channel_matrix(self) -> tuple[FloatArray, list[Any]]:
        """The exact per-report channel matrix and its output labels."""

    # ---- shared --------------------------------------------------------------------------

    @property
    def support_size(self) -> int:
        """Length of a support vector (the domain; RAPPOR: its Bloom filter bits)."""
        return self.domain

    def _item(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ParameterError("value", "<private>", f"an integer in [0, {self.domain - 1}]")
        if not 0 <= int(value) < self.domain:
            raise ParameterError("value", "<private>", f"an integer in [0, {self.domain - 1}]")
        return int(value)

    def profile(self) -> PrivacyProfile:
        """The pure-ε profile of one report (every ε-LDP randomizer is ε-DP on one row)."""
        return pure_dp_profile(self.epsilon)

    def channel(self) -> Channel:
        """The exact channel P(report | value) (refused when it has > 4096 outputs)."""
        W, labels = self._channel_matrix()
        return Channel(W, inputs=list(range(self.domain)), outputs=labels)

    def capacities(self) -> dict[str, float]:
        """Per-report Rényi capacity upper ends at α = 1, 2, ∞ (nats), from :class:`Channel`.

        Each is the certified upper end of its bracket. At α = 2 the branch and bound stops
        once the bracket is within :data:`CAPACITY_TOL` nats: its last digits are the costly
        ones (OLH's channel of 1 024 outputs took minutes to reach 1e-9, a tenth of a second
        to reach 1e-6), and a looser bracket only moves the upper end up.
        """
        ch = self.channel()
        return {
            "1": ch.capacity(1.0).upper,
            "2": ch.capacity(2.0, tol=CAPACITY_TOL).upper,
            "inf": ch.capacity(math.inf).upper,
        }

    def channel_epsilon_bound(self) -> float:
        """C_∞ = pure ε of one report (equal to the claimed ε; tests check it on the channel)."""
        return self.epsilon

    def variance(self, frequencies: Any, users: int) -> FloatArray:
        """Exact Var f̂_v for true ``frequencies`` and ``users`` reports (Wang et al. Eq. (2))."""
        f = np.asarray(frequencies, dtype=np.float64)
        n = as_positive_int("users", users)
        p, q = self.p, self.q
        return q * (1 - q) / (n * (p - q) ** 2) + f * (1 - p - q) / (n * (p - q))

    def estimate_from_support(
        self, support: Any, users: int, *, true_frequencies: Any = None
    ) -> FrequencyEstimate:
        """Frequencies from support counts C_v (one per item) of ``users`` reports."""
        c, n = self._support_counts(support, users, f"one count per item ({self.domain})")
        est = (c / n - self.q) / (self.p - self.q)
        f = np.clip(est, 0.0, 1.0) if true_frequencies is None else true_frequencies
        return FrequencyEstimate(est, self.variance(f, n), project_to_simplex(est), n)

    def _support_counts(self, support: Any, users: int, allowed: str) -> tuple[FloatArray, int]:
        """The validated support counts (``support_size`` of them) and number of users."""
        n = as_positive_int("users", users)
        c = np.asarray(support, dtype=np.float64)
        if c.shape != (self.support_size,):
            raise ParameterError("support", f"shape {c.shape}", allowed)
        return c, n

    def estimate(self, reports: Sequence[Any]) -> FrequencyEstimate:
        """Frequencies from collected reports (server side; post-processing, free)."""
        if len(reports) == 0:
            raise ParameterError("reports", "an empty list", "at least one report")
        total = np.zeros(self.support_size, dtype=np.int64)
        for report in reports:
            total += self.supports(report)
        return self.estimate_from_support(total, len(reports))

    def simulate(self, users: int, distribution: Any = None, rng: Any = None) -> FrequencyEstimate:
        """Simulation only, NOT private: ``users`` drawn from ``distribution`` (default uniform).

        The variance reported is the exact one at the true population frequencies.
        """
        from infodp.mechanisms.sampling import as_generator

        n = as_positive_int("users", users)
        gen = as_generator(rng)
        if distribution is None:
            dist = np.full(self.domain, 1.0 / self.domain)
        else:
            from infodp._validate import as_probability_vector

            dist = as_probability_vector("distribution", distribution)
            if dist.size != self.domain:
                raise ParameterError(
                    "distribution", f"{dist.size} values", f"{self.domain} values (the domain)"
                )
        counts = gen.multinomial(n, dist).astype(np.int64)
        support = self._simulate_support(counts, gen)
        return self.estimate_from_support(support, n, true_frequencies=counts / n)


def check_channel_size(outputs: int) -> None:
    """Refuse to build channels with more than :data:`MAX_CHANNEL_OUTPUTS` outputs."""
    if outputs > MAX_CHANNEL_OUTPUTS:
        raise ParameterError(
            "domain", f"a channel with {outputs} outputs", f"at most {MAX_CHANNEL_OUTPUTS} outputs"
        )


def logistic_bernoulli(epsilon: float, source: Any) -> bool:
    """True with probability exactly 1/(1 + e^ε) (ε ≥ 0 as its exact float value).

    A fair coin says "false" outright; otherwise "true" is accepted with probability e^{−ε}
    (Canonne, Kamath & Steinke 2020, Alg. 1) and the draw is repeated on rejection, so
    P(true) = (e^{−ε}/2) / (1/2 + e^{−ε}/2) = 1/(1 + e^ε).
    """
    from fractions import Fraction

    from infodp.mechanisms.sampling import bernoulli_exp

    gamma = Fraction(epsilon)
    while True:
        if not source.bernoulli(1, 2):
            return False
        if bernoulli_exp(gamma, source):
            return True
