"""``infodp design``: the CLI contract (one JSON object, exit 2 on bad input)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from _cli_errors import json_error
from infodp.cli import main


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["design", *args, "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    payload = json.loads(out)
    assert isinstance(payload, dict)
    return payload


def test_documented_form(capsys: pytest.CaptureFixture[str]) -> None:
    p = _json(
        capsys,
        "--prior", "0.25,0.25,0.25,0.25", "--distortion", "hamming",
        "--max-distortion", "0.2", "--objective", "epsilon",
    )  # fmt: skip
    closed = math.log(3 * 0.8 / 0.2)  # k-ary RR (Wang, Ying & Zhang 2016)
    assert p["lower"] <= closed <= p["upper"]
    assert p["distortion"] <= 0.2
    assert len(p["channel"]) == 4 and all(abs(sum(r) - 1) < 1e-9 for r in p["channel"])


def test_curve_and_html(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "c.html"
    p = _json(
        capsys,
        "--prior", "0.5,0.5", "--distortion", "hamming", "--max-distortion", "0.2",
        "--objective", "mutual-information", "--curve", "0.1,0.2,0.4", "--html", str(out),
    )  # fmt: skip
    # binary symmetric source: R(D) = log 2 − h(D) (Cover & Thomas 2006, Thm 10.3.1)
    for point in p["curve"]:
        D = point["max_distortion"]
        closed = math.log(2) + D * math.log(D) + (1 - D) * math.log(1 - D)
        assert point["lower"] <= closed + 1e-12 <= point["upper"] + 2e-12
    assert out.read_text().count("data:image/png;base64,") == 1


def test_csv_matrix(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "d.csv"
    f.write_text("0,1\n1,0\n")
    p = _json(
        capsys, "--worst-case", "--distortion-csv", str(f), "--max-distortion", "0.25",
        "--objective", "maximal-leakage",
    )  # fmt: skip
    assert p["lower"] <= math.log(1.5) <= p["upper"]


@pytest.mark.parametrize(
    "args",
    [
        ["--prior", "0.3,0.3", "--distortion", "hamming", "--max-distortion", "0.1"],
        ["--prior", "0.5,0.5", "--distortion", "hamming", "--max-distortion", "-0.1"],
        [
            "--prior",
            "0.5,0.5",
            "--distortion",
            "absolute",
            "--max-distortion",
            "0.1",
            "--objective",
            "entropy",
        ],
        [
            "--prior",
            "0.5,0.5",
            "--distortion",
            "hamming",
            "--max-distortion",
            "0.1",
            "--objective",
            "sibson",
        ],
        ["--distortion", "hamming", "--max-distortion", "0.1"],
    ],
)
def test_bad_input_exits_2(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    assert main(["design", *args, "--json"]) == 2
    captured = capsys.readouterr()
    json_error(captured.out, captured.err, 2)
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
