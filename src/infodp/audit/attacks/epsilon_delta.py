"""The (ε, δ) catastrophe (“Differential Privacy and Information Theory” (2022), "Hacking (ε,
δ)-privacy").

A mechanism that runs an ε-DP mechanism g with probability 1 − δ and *publishes the whole
dataset* with probability δ is (ε, δ)-DP:

    P(f(D) ∈ E) = (1 − δ) P(g(D) ∈ E) + δ P(h(D) ∈ E) ≤ e^ε P(f(D') ∈ E) + δ.

So an (ε, δ) audit passes. Yet at α = 1 nothing is bounded: with probability δ the attacker
reads the individual's row exactly, so for a row carrying k bits of entropy
I(X_i; Y) ≥ δ·k·log 2 — growing without limit in the size of the row, while every ε-DP
mechanism has Shannon capacity at most the KL bound ε·tanh(ε/2) (Kairouz, Oh & Viswanath 2015:
randomized response is extremal; ``pure_dp_profile(ε).information(1)``). infodp's own
accounting says so: ``approximate_dp_profile(ε, δ).information(1) == inf``. The expected number
of queries until the whole dataset is published is 1/δ (“Differential Privacy and Information
Theory” (2022)).

This module builds the mechanism, audits it against the (ε, δ) claim and against the pure-ε
claim, and measures the information lower bound empirically: the attacker's predictor is exact
when the dataset is published and uniform otherwise, so its cross-entropy is
(1 − δ̂)·k log 2 and I(X_i; Y) ≥ δ_lo·k·log 2 with δ_lo the Clopper–Pearson lower bound on the
publication rate (Barber–Agakov bound, as in :mod:`infodp.audit.information`).

>>> r = epsilon_delta_attack(epsilon=1.0, delta=0.01, bits=4096, samples=100_000, rng=0)
>>> r.delta_audit_verdict, r.pure_audit_verdict, r.claimed_information
('consistent', 'violation', inf)
>>> r.information_lower > r.pure_dp_information_ceiling
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp._jsonable import json_key
from infodp._validate import as_positive, as_positive_int, as_probability
from infodp.accounting import approximate_dp_profile, pure_dp_profile
from infodp.audit.attacks._result import AttackResult
from infodp.audit.auditor import VectorisedMechanism, audit
from infodp.audit.estimators import clopper_pearson
from infodp.mechanisms.sampling import as_generator
from infodp.units import LN2

__all__ = ["EpsilonDeltaResult", "catastrophe_mechanism", "epsilon_delta_attack"]

ArrayF = npt.NDArray[np.float64]
_PUBLISHED = 1e9  # outputs beyond ±1e9 encode "the dataset itself" (never reached by noise)


def catastrophe_mechanism(epsilon: float, delta: float) -> VectorisedMechanism:
    """The (ε, δ)-DP mechanism that publishes its input with probability δ.

    On a one-bit dataset [x]: with probability 1 − δ, x + Laplace(1/ε) (ε-DP); with
    probability δ, the dataset itself, encoded as the output ``(2x − 1)·1e9`` (an injective
    encoding, outside the range the noise ever reaches in practice).

    >>> m = catastrophe_mechanism(1.0, 0.5)
    >>> out = m.sample([1], 1000, np.random.default_rng(0))
    >>> bool(np.any(out == 1e9)), bool(np.any(out == -1e9))
    (True, False)
    """
    eps = as_positive("epsilon", epsilon)
    dlt = as_probability("delta", delta)

    def sample(dataset: Any, size: int, rng: np.random.Generator) -> ArrayF:
        x = float(np.sum(np.asarray(dataset, dtype=np.float64)))
        noisy = x + rng.laplace(0.0, 1.0 / eps, size=size)
        publish = rng.random(size) < dlt
        return np.where(publish, (2.0 * x - 1.0) * _PUBLISHED, noisy)

    return VectorisedMechanism(sample, f"catastrophe(epsilon={eps:g}, delta={dlt:g})")


@dataclass(frozen=True)
class EpsilonDeltaResult(AttackResult):
    """Outcome of the (ε, δ) catastrophe demonstration (information in nats)."""

    epsilon: float
    delta: float
    bits: int = field(metadata=json_key("row_bits"))
    samples: int = field(metadata=json_key("samples_per_side"))
    delta_audit_verdict: str
    delta_audit_epsilon_lower: float
    delta_audit_delta_lower: float
    pure_audit_verdict: str
    pure_audit_epsilon_lower: float
    claimed_information: float = field(metadata=json_key("claimed_information_alpha1_nats"))
    information_lower: float = field(metadata=json_key("information_lower_nats"))
    pure_dp_information_ceiling: float = field(
        metadata=json_key("pure_dp_information_ceiling_nats")
    )
    bits_to_exceed_ceiling: int = field(metadata=json_key("row_bits_to_exceed_ceiling"))
    queries_until_published: float
    queries_until_published_theory: float

    def _summary(self) -> str:
        return (
            f"(ε, δ) = ({self.epsilon:g}, {self.delta:g}) audit: "
            f"{self.delta_audit_verdict}; yet at α = 1 the claim bounds nothing "
            f"(information ∞) and a {self.bits}-bit row leaks ≥ "
            f"{self.information_lower:.3g} nats per query, above the "
            f"{self.pure_dp_information_ceiling:.3g} nats any ε-DP query allows; the "
            f"whole dataset is out after ~{self.queries_until_published:.0f} queries."
        )


def epsilon_delta_attack(
    epsilon: float = 1.0,
    delta: float = 1e-3,
    bits: int = 65_536,
    *,
    samples: int = 200_000,
    trials: int = 200_000,
    rng: Any = None,
) -> EpsilonDeltaResult:
    """Audit the catastrophe mechanism and measure the information it leaks at α = 1.

    ``samples`` outputs per dataset for the two audits ((ε, δ) claim: consistent; pure ε
    claim: a violation once the publication events are seen); ``trials`` releases for the
    information bound on a ``bits``-bit row and for the number of queries until publication.
    """
    eps = as_positive("epsilon", epsilon)
    dlt = as_probability("delta", delta, open_low=True, open_high=True)
    k = as_positive_int("bits", bits)
    n = as_positive_int("samples", samples, minimum=4)
    t = as_positive_int("trials", trials)
    gen = as_generator(rng)
    mech = catastrophe_mechanism(eps, dlt)
    claimed = approximate_dp_profile(eps, dlt)
    loose = audit(mech, [0], [1], samples=n, claimed_profile=claimed, claimed_delta=dlt, rng=gen)
    strict = audit(mech, [0], [1], samples=n, claimed_epsilon=eps, rng=gen)

    published = int(np.count_nonzero(gen.random(t) < dlt))
    p_lower = clopper_pearson(published, t, side="lower")[0]
    info_lower = p_lower * k * LN2
    ceiling = pure_dp_profile(eps).information(1.0)
    need = math.floor(ceiling / (dlt * LN2)) + 1
    waits = gen.geometric(dlt, size=1000)
    return EpsilonDeltaResult(
        epsilon=eps,
        delta=dlt,
        bits=k,
        samples=n,
        delta_audit_verdict=loose.verdict,
        delta_audit_epsilon_lower=loose.epsilon_lower,
        delta_audit_delta_lower=loose.delta_lower if loose.delta_lower is not None else 0.0,
        pure_audit_verdict=strict.verdict,
        pure_audit_epsilon_lower=strict.epsilon_lower,
        claimed_information=claimed.information(1.0),
        information_lower=info_lower,
        pure_dp_information_ceiling=ceiling,
        bits_to_exceed_ceiling=need,
        queries_until_published=float(np.mean(waits)),
        queries_until_published_theory=1.0 / dlt,
    )
