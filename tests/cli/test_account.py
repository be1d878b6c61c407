"""``infodp account``: exact CLI forms, checked against dp-accounting and closed forms."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import optimize, stats

from _cli_json import cli_json
from infodp.cli import main


def _run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    return cli_json(capsys, "account", *args, "--json")


@pytest.mark.slow
def test_dp_sgd_form(capsys: pytest.CaptureFixture[str]) -> None:
    payload = _run_json(
        capsys, "--mechanism", "subsampled-gaussian", "--noise-multiplier", "1.0",
        "--sampling-rate", "0.01", "--steps", "10000", "--delta", "1e-5",
    )  # fmt: skip
    event = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0)), 10000
    )
    pld = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    pld.compose(event)
    rdp = rdp_privacy_accountant.RdpAccountant()
    rdp.compose(event)
    # Tight value ≈ 6.1877 (dp-accounting PLD); RDP gives ≈ 6.71.
    assert payload["epsilon"] == pytest.approx(pld.get_epsilon(1e-5), rel=1e-4)
    # Our orders include dp-accounting's, so our RDP conversion is never looser than theirs.
    assert payload["epsilon_rdp"] <= rdp.get_epsilon(1e-5) * (1 + 1e-9)
    assert payload["epsilon_rdp"] == pytest.approx(rdp.get_epsilon(1e-5), rel=1e-6)
    assert payload["epsilon"] <= payload["epsilon_rdp"]
    assert payload["epsilon_pure"] == "inf"


def test_laplace_form(capsys: pytest.CaptureFixture[str]) -> None:
    payload = _run_json(
        capsys, "--mechanism", "laplace", "--scale", "10", "--sensitivity", "1",
        "--compositions", "1000", "--delta", "1e-6",
    )  # fmt: skip
    assert payload["epsilon"] == pytest.approx(18.950, abs=2e-3)
    assert payload["epsilon_pure"] == pytest.approx(100.0)
    assert payload["epsilon"] <= payload["epsilon_rdp"]


def test_gaussian_form_is_exact_gaussian(capsys: pytest.CaptureFixture[str]) -> None:
    payload = _run_json(
        capsys, "--mechanism", "gaussian", "--sigma", "5", "--compositions", "10", "--delta", "1e-5"
    )
    mu = math.sqrt(10) / 5  # 10 Gaussians = one Gaussian with σ/√10 (Balle & Wang 2018)

    def delta(e: float) -> float:
        return float(
            stats.norm.cdf(mu / 2 - e / mu) - math.exp(e) * stats.norm.cdf(-mu / 2 - e / mu)
        )

    exact = optimize.brentq(lambda e: delta(e) - 1e-5, 0, 50)
    assert exact <= payload["epsilon"] <= exact + 5e-4
    assert payload["zcdp_rho"] == pytest.approx(10 / 50)


def test_spec_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = {
        "compose": [
            {"mechanism": "gaussian", "sigma": 5.0, "count": 3},
            {"mechanism": "laplace", "scale": 2.0},
        ]
    }
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    payload = _run_json(capsys, "--spec", str(path), "--delta", "1e-6")
    # Independent: dp-accounting PLD of the same heterogeneous sequence.
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(5.0), 3))
    acc.compose(dp_event.LaplaceDpEvent(2.0))
    assert payload["epsilon"] == pytest.approx(acc.get_epsilon(1e-6), rel=1e-3)
    assert payload["spec"] == spec


def test_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["account", "--mechanism", "pure-dp", "--epsilon", "0.5", "--steps", "2"]) == 0
    out = capsys.readouterr().out
    assert "certified upper bound" in out
    assert "nats" in out


@pytest.mark.parametrize(
    "args",
    [
        ["--mechanism", "gaussian"],  # missing --sigma
        ["--mechanism", "gaussian", "--sigma", "1", "--scale", "2"],  # option that does not apply
        ["--mechanism", "laplace", "--scale", "-1"],
        ["--mechanism", "laplace", "--scale", "1", "--delta", "2"],
        ["--mechanism", "laplace", "--scale", "1", "--steps", "3", "--compositions", "4"],
        [],  # neither --mechanism nor --spec
        ["--spec", "/nonexistent/spec.json"],
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["account", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_bad_spec_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"mechanism": "gaussian", "sigma": 1.0, "sigam": 1}))
    assert main(["account", "--spec", str(path)]) == 2
    assert "sigam" in capsys.readouterr().err
    path.write_text("{not json")
    assert main(["account", "--spec", str(path)]) == 2
    assert "JSON" in capsys.readouterr().err


def test_group_and_delta_zero(capsys: pytest.CaptureFixture[str]) -> None:
    # Group of 3 for Laplace(2) is Laplace with sensitivity 3: pure ε = 3/2 (Dwork & Roth,
    # Thm 2.2), which is also ε at δ = 0.
    payload = _run_json(
        capsys, "--mechanism", "laplace", "--scale", "2", "--group", "3", "--delta", "0"
    )
    assert payload["epsilon"] == pytest.approx(1.5, abs=1e-9)
    assert payload["spec"]["group"] == 3
