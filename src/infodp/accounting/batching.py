"""Training runs accounted as their batches are drawn, with the neighbouring relation named.

DP-SGD clips every example's gradient to norm C, sums a batch and adds N(0, (zC)²) noise.
How the batch is drawn changes the guarantee; accounting a fixed-size or shuffled loop as if
it were Poisson-sampled can understate ε (Lebeda, Regehr, Kamath & Steinke 2024, "Avoiding
Pitfalls for Privacy Accounting of Subsampled Mechanisms under Composition"; Chua, Ghazi,
Kamath, Kumar, Manurangsi, Sinha & Zhang 2024, "How Private are DP-SGD Implementations?").
Every bound here is a certified upper bound and says which relation it is for:

``add_remove``  D′ is D with one example added or removed;
``replace_one`` D′ is D with one example replaced by another (substitution).

Schemes (one step; a run composes ``steps`` of them):

- ``poisson`` — each example joins the batch independently with probability q.
  add/remove: the Poisson-subsampled Gaussian pair (Mironov, Talwar & Zhang 2019; tight,
  Zhu, Dong & Wang 2022, Theorem 11). replace/one: given the example is not drawn the two
  batches coincide, given it is drawn they differ by one substitution (norm ≤ 2C), so by
  advanced joint convexity (Balle, Barthe & Gaboardi 2018, Theorem 2) the step is dominated by
  the subsampled pair of base N(2, z²) vs N(0, z²): the subsampled Gaussian with noise
  multiplier z/2 at rate q.
- ``fixed_size`` — a uniformly random batch of b of the n examples (without replacement),
  γ = b/n. replace_one: Balle, Barthe & Gaboardi 2018, Theorem 10 (and Zhu, Dong & Wang
  2022 for the full curve): the same pair, noise multiplier z/2 at rate γ. add_remove: the
  batch size is fixed, so when the example is drawn another one is not; coupling that
  batch with one of D′ is one substitution (norm ≤ 2C), so the same bound holds with
  γ = b/n, n the larger dataset (Lebeda et al. 2024, Section 3). The Poisson figure at q = γ
  (noise multiplier z, sensitivity 1) is *not* an upper bound here.
- ``with_replacement`` — b independent uniform draws. Every batch sum has norm at most
  b·C, so the sums of *any* two batches differ by at most 2b·C: under either relation one
  step is the Gaussian mechanism with sensitivity 2b (exact curve: Balle & Wang 2018,
  Theorem 8), whatever the coupling of the two batches. Sensitivity b is *not* enough under
  add/remove: with D′ = D ∪ {x}, D's examples all −C and x = +C, a batch of D′ that draws x
  k times moves by 2k·C (at b = 2, σ = 1 the exact ε(10⁻⁵) of that pair is above 18.9,
  the sensitivity-b figure 10.0). No amplification is claimed: an amplified bound exists
  for one step (Balle, Barthe & Gaboardi 2018, Section 5, via group privacy of the k draws)
  but is not implemented, so this is the no-amplification bound, loose by design.
- ``shuffled`` — each epoch the data is shuffled and split into disjoint batches, every
  example used exactly once per epoch. No amplification bound for shuffled batches is known
  (Chua et al. 2024 show the Poisson figure can understate it badly), so only the
  no-amplification bound is given: per epoch the example meets one step, a Gaussian with
  sensitivity 2 (replace/one; an example replaced in place), composed over the epochs. Under
  add/remove a shuffle moves every later example to another batch, so no bound is claimed
  and a :class:`~infodp.errors.ParameterError` says so.

>>> run = training_run(1.0, scheme="poisson", relation="add_remove", steps=1000,
...                    batch_size=100, dataset_size=10_000)
>>> run.relation, run.amplified, round(run.epsilon(1e-5), 2)
('add_remove', True, 1.83)
>>> fixed = training_run(1.0, scheme="fixed_size", relation="replace_one", steps=1000,
...                      batch_size=100, dataset_size=10_000)
>>> fixed.epsilon(1e-5) > run.epsilon(1e-5)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from infodp._validate import as_positive, as_positive_int, as_probability
from infodp.accounting import profile as _p
from infodp.errors import ParameterError

__all__ = ["RELATIONS", "SCHEMES", "TrainingRun", "step_profile", "training_run"]

RELATIONS = ("add_remove", "replace_one")
"""Neighbouring relations: one example added/removed, or one example replaced."""

SCHEMES = ("poisson", "fixed_size", "with_replacement", "shuffled")
"""Ways a training loop draws its batches."""

_SOURCES = {
    ("poisson", "add_remove"): "Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019)",
    ("poisson", "replace_one"): "advanced joint convexity (Balle, Barthe & Gaboardi 2018, Thm 2)",
    ("fixed_size", "replace_one"): "sampling without replacement (Balle et al. 2018, Thm 10)",
    ("fixed_size", "add_remove"): "fixed batch size: one substitution (Lebeda et al. 2024)",
    ("with_replacement", "add_remove"): "no amplification: batch sums differ by ≤ 2b (Gaussian)",
    ("with_replacement", "replace_one"): "no amplification: batch sums differ by ≤ 2b (Gaussian)",
    ("shuffled", "replace_one"): "no amplification: one step per epoch (none known for shuffling)",
}


@dataclass(frozen=True)
class TrainingRun:
    """A training run's certified profile with the scheme and relation it holds for."""

    profile: _p.PrivacyProfile
    scheme: str
    relation: str
    amplified: bool
    source: str

    def epsilon(self, delta: float) -> float:
        """Certified ε at ``delta`` under :attr:`relation`."""
        return self.profile.epsilon(delta)

    def to_dict(self, delta: float) -> dict[str, Any]:
        """The run's ε at ``delta`` with the scheme, relation and the bound's source."""
        return {
            "epsilon": self.epsilon(delta),
            "delta": delta,
            "scheme": self.scheme,
            "neighbouring_relation": self.relation,
            "amplified": self.amplified,
            "source": self.source,
        }


def _check(scheme: str, relation: str) -> None:
    if scheme not in SCHEMES:
        raise ParameterError("scheme", scheme, "one of " + ", ".join(SCHEMES))
    if relation not in RELATIONS:
        raise ParameterError("relation", relation, "one of " + ", ".join(RELATIONS))
    if scheme == "shuffled" and relation == "add_remove":
        raise ParameterError(
            "relation",
            relation,
            "replace_one for shuffled batches (no bound is known under add/remove: a shuffle "
            "moves the later examples to other batches); use scheme='poisson' or fixed_size",
        )


def step_profile(
    noise_multiplier: float,
    *,
    scheme: str,
    relation: str,
    batch_size: int,
    dataset_size: int,
) -> _p.PrivacyProfile:
    """Certified profile of one noisy-gradient step (sensitivity C = 1 per example).

    For ``shuffled`` this is one epoch's worth for an example (the one step it is in).

    >>> poisson = step_profile(1.0, scheme="poisson", relation="add_remove",
    ...                        batch_size=1, dataset_size=10)
    >>> poisson == _p.subsampled_gaussian_profile(1.0, 0.1)
    True
    """
    _check(scheme, relation)
    z = as_positive("noise_multiplier", noise_multiplier)
    n = as_positive_int("dataset_size", dataset_size)
    b = as_positive_int("batch_size", batch_size)
    if b > n:
        raise ParameterError("batch_size", b, f"at most dataset_size = {n}")
    rate = as_probability("batch_size / dataset_size", b / n)
    if scheme == "poisson" and relation == "add_remove":
        return _p.subsampled_gaussian_profile(z, rate)
    if scheme in ("poisson", "fixed_size"):
        # Base pair N(2, z²) vs N(0, z²) subsampled at rate γ: noise multiplier z/2.
        return _p.subsampled_gaussian_profile(z / 2, rate)
    if scheme == "with_replacement":
        # Any two batch sums differ by ≤ 2b (each has norm ≤ b), under either relation.
        return _p.gaussian_profile(z, float(2 * b))
    return _p.gaussian_profile(z, 2.0)  # shuffled, replace_one: one step per epoch


def training_run(
    noise_multiplier: float,
    *,
    scheme: str,
    relation: str,
    batch_size: int,
    dataset_size: int,
    steps: int | None = None,
    epochs: float | None = None,
) -> TrainingRun:
    """Certified privacy of ``steps`` (or ``epochs``) noisy-gradient steps drawn by ``scheme``.

    ``epochs`` is converted to ⌈epochs·n/b⌉ steps; a shuffled run counts whole epochs, each
    one step per example (⌈steps·b/n⌉ epochs when given ``steps``).

    >>> training_run(1.0, scheme="shuffled", relation="replace_one", epochs=4,
    ...              batch_size=10, dataset_size=100).amplified
    False
    """
    step = step_profile(
        noise_multiplier,
        scheme=scheme,
        relation=relation,
        batch_size=batch_size,
        dataset_size=dataset_size,
    )
    b, n = int(batch_size), int(dataset_size)
    if (steps is None) == (epochs is None):
        raise ParameterError("steps/epochs", (steps, epochs), "exactly one of steps or epochs")
    if steps is not None:
        count = as_positive_int("steps", steps)
    else:
        count = math.ceil(as_positive("epochs", epochs) * n / b)
    if scheme == "shuffled":
        count = math.ceil(count * b / n)
    return TrainingRun(
        step.repeat(count),
        scheme,
        relation,
        amplified=scheme in ("poisson", "fixed_size"),
        source=_SOURCES[(scheme, relation)],
    )
