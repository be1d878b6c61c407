"""``infodp capacity``: channels from flags or CSV, JSON contract, one-line errors (exit 2).

Expected numbers are closed forms (Cover & Thomas 2006 §7.1; Golomb 1980; seeds/000), not
values taken from infodp's own output.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from _cli_json import cli_json
from infodp.cli import main


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    return cli_json(capsys, "capacity", *args, "--json")


def _h(p: float) -> float:
    return -sum(t * math.log(t) for t in (p, 1 - p) if t > 0)


def test_bsc_json_keys_and_value(capsys: pytest.CaptureFixture[str]) -> None:
    payload = run_json(capsys, "--bsc", "0.11")
    expected = math.log(2) - _h(0.11)  # Shannon 1948
    assert payload["lower"] <= expected <= payload["upper"]
    assert payload["upper"] - payload["lower"] <= 1e-9
    assert payload["unit"] == "nats" and payload["alpha"] == 1.0
    assert payload["upper_bits"] == pytest.approx(payload["upper"] / math.log(2))
    assert payload["input_distribution"] == pytest.approx([0.5, 0.5], abs=1e-6)
    assert payload["inputs"] == [0, 1] and payload["converged"] is True


def test_erasure_and_z(capsys: pytest.CaptureFixture[str]) -> None:
    bec = run_json(capsys, "--erasure", "0.3")
    assert bec["lower"] <= 0.7 * math.log(2) <= bec["upper"]  # Elias 1955
    z = run_json(capsys, "--z", "0.5", "--definition", "shannon")
    assert z["lower"] <= math.log(1.25) <= z["upper"]  # log(1 + (1−p) p^{p/(1−p)}) at p = 1/2


def test_rr_infinity_is_epsilon(capsys: pytest.CaptureFixture[str]) -> None:
    payload = run_json(capsys, "--rr", "4,1.5", "--alpha", "inf")
    assert payload["alpha"] == "inf"  # strict JSON has no infinity literal
    assert payload["lower"] <= 1.5 <= payload["upper"]
    assert payload["definition"] == "renyi"


def test_sibson_on_bsc(capsys: pytest.CaptureFixture[str]) -> None:
    # seeds/000: the radius of the BSC is log 2 − H_α(p).
    p, alpha = 0.2, 3.0
    payload = run_json(capsys, "--bsc", str(p), "--alpha", "3", "--definition", "sibson")
    expected = math.log(2) + math.log(p**alpha + (1 - p) ** alpha) / (alpha - 1)
    assert payload["lower"] <= expected <= payload["upper"]


def test_matrix_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "w.csv"
    file.write_text("1,0,0\n0,1,0\n0,0,1\n")
    payload = run_json(capsys, "--matrix", str(file))
    assert payload["lower"] <= math.log(3) <= payload["upper"]
    assert payload["n_inputs"] == 3 and payload["n_outputs"] == 3


def test_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capacity", "--bsc", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "Shannon capacity (alpha = 1)" in out and "nats" in out and "bits" in out


def _fails(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["capacity", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    return captured.err


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--bsc", "1.5"), "--bsc"),
        (("--bsc", "abc"), "--bsc"),
        (("--bsc", "0.1", "--z", "0.2"), "exactly one"),
        ((), "exactly one"),
        (("--rr", "1,1.0"), "--rr K"),
        (("--rr", "3"), "--rr"),
        (("--rr", "3,-1"), "--rr EPS"),
        (("--bsc", "0.1", "--alpha", "-1"), "--alpha"),
        (("--bsc", "0.1", "--alpha", "nan"), "--alpha"),
        (("--bsc", "0.1", "--alpha", "2", "--definition", "shannon"), "--alpha"),
        (("--bsc", "0.1", "--definition", "gallager"), "--definition"),
        (("--bsc", "0.1", "--tol", "0"), "--tol"),
        (("--matrix", "/no/such/file.csv"), "--matrix"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], fragment: str
) -> None:
    assert fragment in _fails(capsys, *args)


def test_bad_matrix_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tmp_path / "text.csv"
    text.write_text("a,b\nc,d\n")
    assert "--matrix" in _fails(capsys, "--matrix", str(text))
    unnormalised = tmp_path / "rows.csv"
    unnormalised.write_text("0.5,0.5\n0.5,0.4\n")
    assert "row 1" in _fails(capsys, "--matrix", str(unnormalised))
