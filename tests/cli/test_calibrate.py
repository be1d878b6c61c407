"""Tests of ``infodp calibrate`` (via infodp.cli.main and capsys).

Independent values: dp-accounting's analytic Gaussian calibration (Balle & Wang 2018), the
classic formula Δ√(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Theorem A.1), Laplace b = Δ/ε.
"""

from __future__ import annotations

import math

import dp_accounting
import pytest

from _cli_errors import json_error
from _cli_json import cli_json
from infodp.cli import main


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    return cli_json(capsys, "calibrate", *args, "--json")


def test_gaussian_keys(capsys: pytest.CaptureFixture[str]) -> None:
    p = _run(capsys, "--mechanism", "gaussian", "--epsilon", "1", "--delta", "1e-5")
    assert p["sigma"] == pytest.approx(dp_accounting.get_sigma_gaussian(1.0, 1e-5), rel=1e-6)
    assert p["sigma_classic"] == pytest.approx(math.sqrt(2 * math.log(1.25e5)), rel=1e-12)
    release = p["release"]
    assert isinstance(release, dict)
    assert release["delta_at_epsilon"] <= 1e-5
    assert release["sigma"] >= p["sigma"]


def test_gaussian_sensitivity_and_large_epsilon(capsys: pytest.CaptureFixture[str]) -> None:
    p = _run(
        capsys,
        "--mechanism",
        "gaussian",
        "--epsilon",
        "2",
        "--delta",
        "1e-6",
        "--sensitivity",
        "3",
    )
    assert p["sigma"] == pytest.approx(3 * dp_accounting.get_sigma_gaussian(2.0, 1e-6), rel=1e-6)
    assert p["sigma_classic"] is None and "classic" in str(p["note"])


def test_laplace_and_discrete(capsys: pytest.CaptureFixture[str]) -> None:
    p = _run(capsys, "--mechanism", "laplace", "--epsilon", "0.5", "--sensitivity", "2")
    assert p["scale"] == pytest.approx(4.0, rel=1e-15) and 2 / p["scale"] <= 0.5  # type: ignore[operator]
    p = _run(capsys, "--mechanism", "discrete-gaussian", "--epsilon", "1", "--delta", "1e-5")
    assert p["sigma"] >= dp_accounting.get_sigma_gaussian(1.0, 1e-5)  # type: ignore[operator]
    p = _run(capsys, "--mechanism", "discrete-laplace", "--epsilon", "1", "--sensitivity", "3")
    assert p["scale"] == pytest.approx(3.0)
    p = _run(capsys, "--mechanism", "staircase", "--epsilon", "2")
    assert p["gamma"] == pytest.approx(1 / (1 + math.e))


def test_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--mechanism", "laplace", "--epsilon", "1"]) == 0
    assert "scale: 1.0" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args",
    [
        ["--mechanism", "gaussian", "--epsilon", "1"],  # delta 0 impossible
        ["--mechanism", "gaussian", "--epsilon", "-1", "--delta", "1e-5"],
        ["--mechanism", "laplace", "--epsilon", "nan"],
        ["--mechanism", "discrete-laplace", "--epsilon", "1", "--sensitivity", "1.5"],
        ["--mechanism", "nope", "--epsilon", "1"],
    ],
)
def test_errors_exit_2_one_line(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    assert main(["calibrate", *args, "--json"]) == 2
    captured = capsys.readouterr()
    json_error(captured.out, captured.err, 2)
    assert captured.err.count("\n") == 1 and captured.err.startswith("infodp: error:")


@pytest.mark.slow  # ~3.7 CPU-s (measured)
def test_other_mechanisms(capsys: pytest.CaptureFixture[str]) -> None:
    p = _run(capsys, "--mechanism", "randomized-response", "--epsilon", str(math.log(3)))
    assert p["keep_probability"] == pytest.approx(0.75)  # Dwork & Roth 2014 §3.2 coin flip
    p = _run(capsys, "--mechanism", "randomized-response", "--epsilon", "1", "--k", "4")
    assert p["keep_probability"] == pytest.approx(math.e / (math.e + 3))
    p = _run(capsys, "--mechanism", "exponential", "--epsilon", "1", "--sensitivity", "2")
    assert p["factor"] == pytest.approx(0.25)
    p = _run(
        capsys,
        "--mechanism",
        "subsampled-gaussian",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--sampling-rate",
        "0.05",
        "--steps",
        "20",
    )
    acc = dp_accounting.pld.PLDAccountant()
    event = dp_accounting.PoissonSampledDpEvent(
        0.05, dp_accounting.GaussianDpEvent(p["noise_multiplier"])
    )  # type: ignore[arg-type]
    acc.compose(event, 20)
    assert acc.get_epsilon(1e-5) <= 1.0 * (1 + 2e-3)
