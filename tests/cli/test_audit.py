"""``infodp audit`` / ``infodp attack``: the documented forms, one JSON object, one-line
errors with exit status 2."""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path

import pytest

from _cli_json import cli_json
from infodp.cli import main

_json = cli_json


@pytest.mark.slow
def test_audit_laplace_issue_form(capsys: pytest.CaptureFixture[str]) -> None:
    p = _json(
        capsys, "audit", "--mechanism", "laplace", "--scale", "1", "--sensitivity", "1",
        "--claimed-epsilon", "1", "--samples", "1000000", "--seed", "1", "--json",
    )  # fmt: skip
    # Laplace with scale 1 and sensitivity 1 is exactly 1-DP (Dwork & Roth 2014, Thm 3.6).
    assert 0.95 <= p["epsilon_lower"] <= 1.0
    assert p["confidence"] == 0.95 and p["verdict"] == "consistent"


@pytest.mark.slow
def test_audit_flags_miscalibration(capsys: pytest.CaptureFixture[str]) -> None:
    # status 4: a violation fails a CI job (documented exit status 4)
    p = _json(
        capsys, "audit", "--mechanism", "laplace", "--scale", "0.5", "--claimed-epsilon", "1",
        "--samples", "100000", "--seed", "2", "--json", status=4,
    )  # fmt: skip
    assert p["verdict"] == "violation" and 1.0 < p["epsilon_lower"] <= 2.0


def test_audit_default_claim_is_the_mechanism_profile(capsys: pytest.CaptureFixture[str]) -> None:
    p = _json(
        capsys, "audit", "--mechanism", "randomized-response", "--epsilon", "2", "--samples",
        "1e5", "--seed", "3", "--json",
    )  # fmt: skip
    assert p["claimed_epsilon"] == pytest.approx(2.0)
    assert p["verdict"] == "consistent" and p["epsilon_lower"] <= 2.0


def test_audit_user_callable(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "user_rr.py").write_text(
        textwrap.dedent(
            """
            import random
            def release(dataset):
                # randomized response with ε = log 3: keep the bit with probability 3/4
                bit = dataset[0]
                return bit if random.random() < 0.75 else 1 - bit
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    # The user's callable draws from the unseeded global random: the lower bound holds with
    # the audit's confidence only. At the default 95% it exceeded the true ε in about one run
    # in a few dozen (1.106 > log 3 was seen); at 1 - 1e-6 a false failure is that rare.
    p = _json(
        capsys, "audit", "--callable", "user_rr:release", "--dataset", "[0]", "--neighbour",
        "[1]", "--claimed-epsilon", "0.5", "--samples", "20000", "--confidence", "0.999999",
        "--json", status=4,
    )  # fmt: skip
    # The true ε is log 3 ≈ 1.0986 > 0.5: with 20000 samples the audit refutes the claim.
    assert p["verdict"] == "violation" and 0.5 < p["epsilon_lower"] <= math.log(3)


def test_audit_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "audit",
                "--mechanism",
                "gaussian",
                "--sigma",
                "1",
                "--claimed-delta",
                "1e-3",
                "--samples",
                "20000",
                "--seed",
                "4",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "verdict: consistent" in out and "nats" in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["audit", "--samples", "10"], "--mechanism/--callable"),
        (["audit", "--mechanism", "laplace", "--samples", "ten"], "--samples"),
        (["audit", "--mechanism", "laplace", "--scale", "-1"], "scale"),
        (
            ["audit", "--callable", "nomodule_xyz:f", "--dataset", "[0]", "--neighbour", "[1]"],
            "--callable",
        ),
        (["audit", "--callable", "json:dumps", "--dataset", "[0"], "--dataset"),
        (["audit", "--callable", "json:dumps", "--dataset", "[0]"], "--dataset/--neighbour"),
        (["audit", "--callable", "json", "--dataset", "[0]", "--neighbour", "[1]"], "--callable"),
        (["audit", "--mechanism", "laplace", "--confidence", "1"], "confidence"),
        (["attack", "coding", "--rows", "3"], "--rows"),
        (["attack", "coding", "--bits", "40"], "bits"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("floating-point", ["--queries", "5", "--trials", "300"]),
        ("averaging", ["--epsilon", "0.5", "--queries", "2000", "--trials", "200"]),
        ("coding", ["--bits", "6", "--trials", "300"]),
        ("correlated", ["--rows", "50", "--trials", "2000"]),
        ("epsilon-delta", ["--delta", "0.01", "--bits", "2048", "--trials", "20000"]),
    ],
)
def test_attack_commands(capsys: pytest.CaptureFixture[str], name: str, extra: list[str]) -> None:
    p = _json(capsys, "attack", name, "--seed", "5", *extra, "--json")
    assert p["attack"] == name and p["summary"]
    if name == "floating-point":
        assert p["naive_success"] > p["dp_ceiling"]
    if name == "averaging":
        assert p["infodp_refused"] is True and p["infodp_answered"] == 2
    if name == "coding":
        assert p["linear"]["information_rate_bits_per_query"] <= p["capacity_bits_per_query"]
    if name == "correlated":
        assert p["unconditional_mi_nats"] > p["mi_dp_bound_nats"]
    if name == "epsilon-delta":
        assert p["delta_audit_verdict"] == "consistent"
        assert p["claimed_information_alpha1_nats"] == "inf"
