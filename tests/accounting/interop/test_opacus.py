"""The Opacus-interface accountant and noise search, checked against Opacus' own accountants.

Opacus' RDP accountant (Mironov, Talwar & Zhang 2019, converted with Balle et al. 2020) is an
upper bound, looser than the tight PLD: infodp's certified ε must never exceed it and must
lie within RDP's known looseness below it. Opacus' PRV accountant (Gopi, Lee & Wutschitz
2021) refuses some inputs; infodp answers them. Opacus is imported without torch
(``tests/_opacus.py``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event as de
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

import _opacus
from infodp.accounting import subsampled_gaussian_profile
from infodp.accounting.interop import OpacusAccountant, get_noise_multiplier, register_opacus
from infodp.errors import ParameterError

ACC = _opacus.accountants()


def _rdp(history: list[tuple[float, float, int]], delta: float) -> float:
    acc = ACC.RDPAccountant()
    acc.history = list(history)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "optimal order is the largest alpha"
        return float(acc.get_epsilon(delta))


def _histories() -> list[list[tuple[float, float, int]]]:
    rng = np.random.default_rng(2024)
    out = []
    for _ in range(8):
        runs = int(rng.integers(1, 4))
        out.append(
            [
                (
                    float(np.exp(rng.uniform(math.log(0.6), math.log(5.0)))),
                    float(np.exp(rng.uniform(math.log(1e-3), math.log(0.1)))),
                    int(rng.integers(10, 1500)),
                )
                for _ in range(runs)
            ]
        )
    return out


@pytest.mark.slow  # seconds of CPU per history against Opacus's accountant
@pytest.mark.parametrize("history", _histories())
def test_never_above_opacus_rdp_and_within_its_looseness(
    history: list[tuple[float, float, int]],
) -> None:
    acc = OpacusAccountant()
    for z, q, k in history:
        for _ in range(k):
            acc.step(noise_multiplier=z, sample_rate=q)
    assert acc.history == history  # Opacus' format: consecutive identical steps merged
    eps = acc.get_epsilon(1e-5)
    rdp = _rdp(history, 1e-5)
    assert eps <= rdp
    # The tight value (dp_accounting's PLD, independent) is below RDP by at most RDP's
    # looseness; infodp is within 1e-3 of it, hence also within RDP's looseness.
    pld = PLDAccountant(value_discretization_interval=5e-5)
    for z, q, k in history:
        pld.compose(de.PoissonSampledDpEvent(q, de.GaussianDpEvent(z)), k)
    tight = pld.get_epsilon(1e-5)
    assert tight * (1 - 1e-4) <= eps <= tight * (1 + 1e-3)


# Inputs on which Opacus 1.6's PRV accountant raises ("Floating point errors will dominate")
# although ε is moderate (about 5 by RDP).
PRV_FAILS = [([(1.0, 0.01, 1000)], 1e-14), ([(1.0, 0.01, 1000)], 1e-15)]


@pytest.mark.parametrize(("history", "delta"), PRV_FAILS)
def test_answers_where_opacus_prv_raises(
    history: list[tuple[float, float, int]], delta: float
) -> None:
    prv = ACC.PRVAccountant()
    prv.history = list(history)
    with pytest.raises((RuntimeError, ValueError)):
        prv.get_epsilon(delta)
    acc = OpacusAccountant()
    acc.load_state_dict({"history": list(history), "mechanism": "prv"})
    eps = acc.get_epsilon(delta)
    # At δ this small infodp's PLD (certified tail mass ~1e-15 per step at +∞) cannot help and
    # its answer is the RDP conversion itself, rounded up (+1.2e-7 relative over Opacus' float).
    assert 0.01 <= eps <= _rdp(history, delta) * (1 + 1e-6)


@pytest.mark.parametrize(
    ("target", "q", "steps"),
    [(0.01, 0.01, 1000), (0.1, 0.2, 50), (1.0, 0.01, 1000), (10.0, 0.2, 50), (100.0, 0.01, 1000)],
)
@pytest.mark.slow  # seconds of CPU: out of the quick tier
def test_noise_multiplier_is_the_smallest_meeting_the_target(
    target: float, q: float, steps: int
) -> None:
    z = get_noise_multiplier(target_epsilon=target, target_delta=1e-5, sample_rate=q, steps=steps)
    acc = OpacusAccountant()
    acc.history = [(z, q, steps)]
    assert acc.get_epsilon(1e-5) <= target
    acc.history = [(z * 0.99, q, steps)]
    assert acc.get_epsilon(1e-5) > target
    # Opacus' RDP figure at that σ: above the target (RDP is looser), never below ours.
    assert _rdp([(z, q, steps)], 1e-5) >= acc.get_epsilon(1e-5) * 0.99


@pytest.mark.slow  # seconds of CPU per history against Opacus's accountant
def test_epochs_mean_steps_as_in_opacus() -> None:
    a = get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.01, epochs=3)
    b = get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.01, steps=300)
    assert a == b
    with pytest.raises(ParameterError, match="steps or epochs"):
        get_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.01)


def test_state_dict_round_trip_and_opacus_checkpoints() -> None:
    acc = OpacusAccountant()
    acc.step(noise_multiplier=1.1, sample_rate=0.01)
    acc.step(noise_multiplier=1.1, sample_rate=0.01)
    acc.step(noise_multiplier=0.9, sample_rate=0.02)
    state = acc.state_dict()
    assert state["mechanism"] == "infodp" and state["history"] == [
        (1.1, 0.01, 2),
        (0.9, 0.02, 1),
    ]
    again = OpacusAccountant()
    again.load_state_dict(state)
    assert again.get_epsilon(1e-5) == acc.get_epsilon(1e-5)
    assert len(again) == 2
    # An Opacus RDP checkpoint is re-certified as it is.
    rdp = ACC.RDPAccountant()
    rdp.step(noise_multiplier=1.1, sample_rate=0.01)
    again.load_state_dict(rdp.state_dict())
    assert again.history == [(1.1, 0.01, 1)]
    with pytest.raises(ParameterError, match="mechanism"):
        again.load_state_dict({"history": [], "mechanism": "moments"})
    with pytest.raises(ParameterError, match="history"):
        again.load_state_dict({})


def test_usable_by_privacy_engine_through_opacus_registry() -> None:
    # PrivacyEngine(accountant=name) calls opacus.accountants.create_accountant(name).
    register_opacus()
    acc = ACC.create_accountant("infodp")
    assert isinstance(acc, OpacusAccountant) and acc.mechanism() == "infodp"

    class Optimizer:  # what the engine's hook reads from a DPOptimizer
        noise_multiplier = 1.0
        accumulated_iterations = 1

    hook = acc.get_optimizer_hook_fn(sample_rate=0.01)
    for _ in range(100):
        hook(Optimizer())
    assert acc.history == [(1.0, 0.01, 100)]
    assert acc.get_epsilon(1e-5) == pytest.approx(
        subsampled_gaussian_profile(1.0, 0.01).repeat(100).epsilon(1e-5), rel=1e-3
    )
