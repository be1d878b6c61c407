"""``infodp local``: the CLI contract and the numbers it prints."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from _cli_errors import json_error
from _cli_json import cli_json
from infodp.cli import main


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    return cli_json(capsys, "local", *args, "--json")


@pytest.mark.parametrize(
    "mechanism",
    # olh's capacity at α = 2 to 1e-9 took minutes; to LocalRandomizer's 1e-6, a tenth of a second.
    ["krr", "rappor", "oue", "olh", "hadamard"],
)
def test_simulate(capsys: pytest.CaptureFixture[str], mechanism: str) -> None:
    p = _json(
        capsys, "simulate", "--mechanism", mechanism, "--epsilon", "1.0", "--domain", "4",
        "--users", "50000", "--distribution", "0.1,0.2,0.3,0.4", "--seed", "3",
    )  # fmt: skip
    assert len(p["estimate"]) == len(p["variance"]) == 4
    for est, var, f in zip(p["estimate"], p["variance"], (0.1, 0.2, 0.3, 0.4), strict=True):
        assert abs(est - f) < 5 * math.sqrt(var)
    assert abs(p["capacity_nats"]["inf"] - 1.0) < 1e-9  # C_∞ = pure ε
    assert p["capacity_nats"]["1"] <= p["capacity_nats"]["2"] <= p["capacity_nats"]["inf"]
    assert abs(sum(p["consistent"]) - 1) < 1e-12 and min(p["consistent"]) >= 0


def test_large_domain_has_no_full_channel(capsys: pytest.CaptureFixture[str]) -> None:
    p = _json(
        capsys, "simulate", "--mechanism", "oue", "--epsilon", "2", "--domain", "64",
        "--users", "1000", "--seed", "0",
    )  # fmt: skip
    assert p["capacity_nats"] == {"1": None, "2": None, "inf": 2.0}


def test_estimate_from_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    reports = tmp_path / "r.txt"
    reports.write_text("0\n1\n1\n2\n")
    p = _json(
        capsys, "estimate", "--mechanism", "krr", "--epsilon", "1", "--domain", "3",
        "--reports", str(reports),
    )  # fmt: skip
    e, k = math.e, 3
    pp, q = e / (e + k - 1), 1 / (e + k - 1)
    assert abs(p["estimate"][1] - (0.5 - q) / (pp - q)) < 1e-12  # Wang et al. 2017, Eq. (1)


KRR = ["--mechanism", "krr", "--epsilon", "1", "--domain", "3"]


@pytest.mark.parametrize(
    "args",
    [
        ["simulate", "--mechanism", "krr", "--epsilon", "0", "--domain", "3", "--users", "10"],
        ["simulate", "--mechanism", "krr", "--epsilon", "-1", "--domain", "3", "--users", "9"],
        ["simulate", "--mechanism", "sue", "--epsilon", "1", "--domain", "3", "--users", "10"],
        ["simulate", "--mechanism", "krr", "--epsilon", "1", "--domain", "1", "--users", "10"],
        ["simulate", *KRR, "--users", "10", "--distribution", "0.5,0.2"],
        ["estimate", *KRR, "--reports", "/nonexistent/file"],
    ],
)
def test_bad_input_exits_2(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    assert main(["local", *args, "--json"]) == 2
    captured = capsys.readouterr()
    json_error(captured.out, captured.err, 2)
    assert captured.err.count("\n") == 1
