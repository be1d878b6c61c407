"""Audits of infodp's own mechanisms through their fast ``simulate`` samplers.

For every mechanism: the held-out ε lower bound never exceeds the ε its ``profile()`` claims
(that profile is the claim the auditor checks when none is given), and for Laplace at ε = 1
it reaches ≥ 95% of it with 10⁶ samples per side. The true ε of the snapped Laplace release
between values 0 and Δ is exactly scale⁻¹·Δ in grid units (both values are grid points; CKS
2020's discrete Laplace has privacy loss |k − k'|/t), i.e. 1 here, while the profile states
(Δ/g + 1)·g/scale (base.py's snapping bound), slightly more.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from infodp.audit import audit
from infodp.mechanisms import exponential as exp
from infodp.mechanisms import gaussian, laplace, staircase
from infodp.mechanisms import randomized_response as rr
from infodp.mechanisms import subsampled as sub

FACTORIES: list[tuple[str, Callable[[], Any], Any, Any]] = [
    ("laplace eps=1", lambda: laplace.LaplaceMechanism(1.0, sensitivity=1.0), 0.0, 1.0),
    ("laplace calibrated eps=0.5", lambda: laplace.LaplaceMechanism.calibrate(0.5), 0.0, 1.0),
    ("discrete laplace", lambda: laplace.DiscreteLaplaceMechanism.calibrate(1.0), 0, 1),
    ("discrete laplace sens 3", lambda: laplace.DiscreteLaplaceMechanism(4.0, 3), 5, 2),
]


@pytest.mark.slow  # ~0.8 CPU-s (measured)
@pytest.mark.parametrize(("name", "factory", "d0", "d1"), FACTORIES, ids=[f[0] for f in FACTORIES])
def test_audit_never_exceeds_the_mechanism_claim(
    name: str, factory: Callable[[], Any], d0: Any, d1: Any
) -> None:
    mech = factory()
    claim = mech.profile().pure_epsilon()
    for seed in (0, 1, 2):
        result = audit(mech, d0, d1, samples=200_000, rng=seed)
        assert result.claimed_epsilon == pytest.approx(claim)
        assert result.epsilon_lower <= claim
        assert result.verdict == "consistent"


@pytest.mark.slow
def test_laplace_mechanism_tight_at_a_million() -> None:
    mech = laplace.LaplaceMechanism(1.0, sensitivity=1.0)
    result = audit(mech, 0.0, 1.0, samples=1_000_000, rng=5)
    assert 0.95 <= result.epsilon_lower <= 1.0 <= mech.profile().pure_epsilon()


@pytest.mark.slow
def test_half_noise_laplace_mechanism_is_flagged() -> None:
    # Scale 0.5 while claiming the profile of scale 1: true ε = 2 > claimed ≈ 1.001.
    honest = laplace.LaplaceMechanism(1.0, sensitivity=1.0)
    cheat = laplace.LaplaceMechanism(0.5, sensitivity=1.0)
    result = audit(cheat, 0.0, 1.0, samples=200_000, claimed_profile=honest.profile(), rng=6)
    assert result.verdict == "violation"
    assert math.log(2) < result.epsilon_lower <= 2.0


def _never_above(mech: Any, d0: Any, d1: Any, delta: float = 0.0, samples: int = 200_000) -> float:
    claim = mech.profile().epsilon(delta)
    best = 0.0
    for seed in (0, 1):
        result = audit(mech, d0, d1, samples=samples, claimed_delta=delta, rng=seed)
        assert result.epsilon_lower <= claim
        assert result.verdict == "consistent"
        best = max(best, result.epsilon_lower)
    return best


@pytest.mark.slow  # ~0.6 CPU-s (measured)
def test_gaussian_mechanisms_at_delta() -> None:
    mech = gaussian.GaussianMechanism.calibrate(epsilon=1.0, delta=1e-3)
    assert _never_above(mech, 0.0, 1.0, delta=1e-3) > 0.5
    dmech = gaussian.DiscreteGaussianMechanism(2.0, 1)
    _never_above(dmech, 0, 1, delta=1e-3)


@pytest.mark.slow  # ~0.7 CPU-s (measured)
def test_staircase_mechanism() -> None:
    mech = staircase.StaircaseMechanism.calibrate(1.0)
    # The staircase is exactly ε-DP (Geng & Viswanath 2014): the audit gets close to 1.
    assert _never_above(mech, 0.0, 1.0) > 0.9


def test_randomized_response_mechanism() -> None:
    binary = rr.RandomizedResponse.calibrate(1.0)
    assert _never_above(binary, 0, 1) > 0.95  # Warner 1965: exactly ε
    kary = rr.RandomizedResponse(2.0, k=4)
    assert _never_above(kary, 0, 3) > 1.9


def test_exponential_and_report_noisy_max() -> None:
    # Neighbouring utility vectors differ by at most Δu = 1 in every coordinate.
    d0, d1 = [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]
    _never_above(exp.ExponentialMechanism(1.0), d0, d1)
    _never_above(exp.ReportNoisyMax(1.0, noise="exponential"), d0, d1)
    _never_above(exp.ReportNoisyMax(1.0, noise="gumbel"), d0, d1)


@pytest.mark.slow  # ~1.0 CPU-s (measured)
def test_subsampled_gaussian_add_remove() -> None:
    mech = sub.SubsampledGaussian(1.0, 0.5, clip_norm=1.0)
    # Add/remove-one neighbours (the relation of its profile, as in dp-accounting).
    eps = _never_above(mech, [[0.0]], [[0.0], [1.0]], delta=1e-3)
    assert eps > 0.3
