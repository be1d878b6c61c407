"""Tests for ``infodp divergence`` (src/infodp/cli/information.py).

Expected numbers are closed forms: D_2(Ber(½)‖Ber(0.9)) = log(0.25/0.9 + 0.25/0.1) by van Erven &
Harremoës 2014, eq. (1); randomized response with p = ¾ has D_∞ = ln 3 (seeds/002) and
δ(ε) = ¾ − e^ε/4 below ln 3.
"""

from __future__ import annotations

import math

import pytest

from _cli_errors import json_error
from _cli_json import cli_json
from infodp.cli import main


def _run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    return cli_json(capsys, "divergence", *args, "--json")


def test_json_has_nats_bits_and_echo(capsys: pytest.CaptureFixture[str]) -> None:
    payload = _run_json(capsys, "--p", "0.5,0.5", "--q", "0.9,0.1", "--alpha", "2")
    expected = math.log(0.25 / 0.9 + 0.25 / 0.1)
    assert payload["nats"] == pytest.approx(expected, rel=1e-12)
    assert payload["bits"] == pytest.approx(expected / math.log(2), rel=1e-12)
    assert payload["alpha"] == 2.0
    assert payload["p"] == [0.5, 0.5]
    assert payload["q"] == [0.9, 0.1]
    assert payload["total_variation"] == pytest.approx(0.4)
    assert "bits" in payload["units"]  # type: ignore[operator]


@pytest.mark.parametrize("text", ["inf", "Infinity", "∞"])
def test_alpha_inf_is_max_divergence(capsys: pytest.CaptureFixture[str], text: str) -> None:
    payload = _run_json(capsys, "--p", "0.75,0.25", "--q", "0.25,0.75", "--alpha", text)
    assert payload["alpha"] == "inf"  # JSON has no infinity literal: the string "inf"
    assert payload["nats"] == pytest.approx(math.log(3), rel=1e-14)


def test_default_alpha_is_kl_and_epsilon_gives_tight_delta(
    capsys: pytest.CaptureFixture[str],
) -> None:
    payload = _run_json(capsys, "--p", "0.75,0.25", "--q", "0.25,0.75", "--epsilon", "0.5")
    assert payload["alpha"] == 1.0
    assert payload["nats"] == pytest.approx(0.5 * math.log(3), rel=1e-14)  # KL of ln3-RR
    assert payload["delta"] == pytest.approx(0.75 - math.exp(0.5) / 4, rel=1e-14)


def test_infinite_divergence_is_the_string_inf(capsys: pytest.CaptureFixture[str]) -> None:
    payload = _run_json(capsys, "--p", "0.5,0.5", "--q", "1,0", "--alpha", "2")
    assert payload["nats"] == "inf"
    assert payload["bits"] == "inf"


def test_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["divergence", "--p", "0.75,0.25", "--q", "0.25,0.75", "--alpha", "inf"]) == 0
    out = capsys.readouterr().out
    assert "1.09861 nats" in out
    assert "bits" in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--p", "0.5,0.6", "--q", "0.5,0.5"], "p must sum to 1"),
        (["--p", "0.5,0.5", "--q", "0.2,0.3,0.5"], "q"),
        (["--p", "0.5,x", "--q", "0.5,0.5"], "--p"),
        (["--p", "0.5,0.5", "--q", "0.5,0.5", "--alpha", "-1"], "--alpha"),
        (["--p", "0.5,0.5", "--q", "0.5,0.5", "--alpha", "nan"], "--alpha"),
        (["--p", "0.5,0.5", "--q", "0.5,0.5", "--epsilon", "nan"], "--epsilon"),
        (["--p", "0.5,0.5"], "--q"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    assert main(["divergence", *args, "--json"]) == 2
    captured = capsys.readouterr()
    json_error(captured.out, captured.err, 2)
    assert captured.err.count("\n") == 1
    assert "Traceback" not in captured.err
    assert needle in captured.err
