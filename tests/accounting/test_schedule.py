"""Heterogeneous schedules: pessimistic grouping is an upper bound, close to dp_accounting's
composition of every distinct step; the CLI reads the CSV form."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as dpa

from infodp.accounting.schedule import (
    EXACT_GROUPS,
    read_schedule_csv,
    round_steps,
    schedule_epsilon,
)
from infodp.cli import main
from infodp.errors import ParameterError


def _schedule(n: int, k: int) -> list[tuple[float, float, int]]:
    t = np.arange(n) / n
    sigma = 1.6 * (0.9 / 1.6) ** t  # noise decay
    q = 0.005 * (0.01 / 0.005) ** t  # growing batches
    return [(float(s), float(r), k) for s, r in zip(sigma, q, strict=True)]


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_rounding_dominates_each_step(seed: int) -> None:
    # Monotonicity behind the grouping, checked on dp_accounting's PLDs: σ rounded down and
    # q rounded up never lower δ(ε) (Balle, Barthe & Gaboardi 2018, Theorem 9).
    rng = np.random.default_rng(seed)
    sigma, q = float(rng.uniform(0.6, 3.0)), float(rng.uniform(1e-3, 0.1))
    ((s, r),) = round_steps([(sigma, q, 1)] * 1, resolution=1e-2) or [(sigma, q)]
    assert s <= sigma and r >= q
    true = dpa.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=1e-4)
    rounded = dpa.from_gaussian_mechanism(
        s * (1 - 1e-2), sampling_prob=min(1.0, r * (1 + 1e-2)), value_discretization_interval=1e-4
    )
    for eps in (0.0, 0.05, 0.2, 0.5, 1.0):
        assert rounded.get_delta_for_epsilon(eps) >= true.get_delta_for_epsilon(eps)


@pytest.mark.slow  # seconds of CPU: out of the quick tier
def test_grouped_schedule_is_an_upper_bound_close_to_dp_accounting() -> None:
    runs = _schedule(100, 12)  # 100 distinct steps (> EXACT_GROUPS)
    assert len(round_steps(runs, resolution=1e-2)) < 100 and EXACT_GROUPS < 100
    h = 2e-4
    pld = dpa.identity(value_discretization_interval=h)
    for s, r, k in runs:
        one = dpa.from_gaussian_mechanism(s, sampling_prob=r, value_discretization_interval=h)
        pld = pld.compose(one.self_compose(k))
    reference = float(pld.get_epsilon_for_delta(1e-5))
    # dp_accounting rounds each of its 100 compositions up by less than one grid step; the
    # grouped value is above the truth and within about the rounding's relative width.
    for resolution, slack in ((1e-2, 2e-2), (1e-3, 2e-3)):
        ours = schedule_epsilon(runs, 1e-5, resolution=resolution)
        assert reference - 100 * h <= ours <= reference * (1 + slack)


@pytest.mark.slow  # seconds of CPU: out of the quick tier
def test_vectorised_schedule_is_an_upper_bound_within_1e3_of_dp_accounting() -> None:
    # A random schedule of 72 distinct steps (more than EXACT_GROUPS, so the vectorised
    # blocks and the product of characteristic functions are used; at this size the steps
    # fill two blocks, so blocks are also multiplied together) against dp_accounting's
    # connect-the-dots PLD at its default grid 1e-4, every distinct step composed one by one
    # (Doroshenko et al. 2022): an independent pessimistic value, whose own discretisation
    # excess is far below the rounding of σ and q. Ours must lie above it and within 1e-3
    # relatively. The oracle costs ~0.22 CPU-s per distinct step, so the schedule is kept
    # just past what the vectorised path needs (200 steps took 48 CPU-s).
    steps = EXACT_GROUPS + 8
    rng = np.random.default_rng(2022)
    sigmas, rates = rng.uniform(0.8, 2.0, steps), rng.uniform(0.002, 0.02, steps)
    counts = rng.integers(1, 20, steps)
    runs = [(float(s), float(r), int(k)) for s, r, k in zip(sigmas, rates, counts, strict=True)]
    assert len(round_steps(runs)) == steps > EXACT_GROUPS
    h = 1e-4
    pld = dpa.identity(value_discretization_interval=h)
    for s, r, k in runs:
        one = dpa.from_gaussian_mechanism(s, sampling_prob=r, value_discretization_interval=h)
        pld = pld.compose(one.self_compose(k) if k > 1 else one)
    reference = float(pld.get_epsilon_for_delta(1e-5))
    ours = schedule_epsilon(runs, 1e-5)
    assert reference <= ours <= reference * (1 + 1e-3)


def test_csv_form_and_errors() -> None:
    runs = read_schedule_csv("sampling_rate,steps,noise_multiplier\n0.01,10,1.5\n0.02,5,1.2\n")
    assert runs == [(1.5, 0.01, 10), (1.2, 0.02, 5)]
    with pytest.raises(ParameterError, match="header"):
        read_schedule_csv("steps,sigma,q\n1,1,0.1\n")
    with pytest.raises(ParameterError, match="line 2"):
        read_schedule_csv("steps,noise_multiplier,sampling_rate\n1,-1,0.1\n")


def test_cli_account_schedule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "schedule.csv"
    path.write_text("steps,noise_multiplier,sampling_rate\n500,1.1,0.01\n500,0.9,0.02\n")
    assert main(["account", "--schedule", str(path), "--delta", "1e-5", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    expected = schedule_epsilon([(1.1, 0.01, 500), (0.9, 0.02, 500)], 1e-5)
    assert payload["epsilon"] == expected and math.isfinite(expected)
    assert payload["neighbouring_relation"] == "add_remove" and payload["steps"] == 1000
    bad = tmp_path / "bad.csv"
    bad.write_text("steps,sigma\n1,2\n")
    assert main(["account", "--schedule", str(bad)]) == 2


def test_cli_explain_schedule_bits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "schedule.csv"
    path.write_text("steps,noise_multiplier,sampling_rate\n1000,1.0,0.01\n")
    assert main(["explain", "--schedule", str(path), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["neighbouring_relation"] == "add_remove"
    # α = 1 and 2 are the composed RDP curve (Mironov 2017), in bits; α = ∞ is unbounded.
    from infodp.accounting import subsampled_gaussian_profile

    p = subsampled_gaussian_profile(1.0, 0.01).repeat(1000)
    assert payload["bits"]["2"] == pytest.approx(p.rdp(2.0) / math.log(2), rel=1e-9)
    assert payload["bits"]["1"] <= p.rdp(1.0) / math.log(2) * (1 + 1e-9)
    assert payload["bits"]["inf"] is None
