"""``infodp explain``: JSON contract, human output, HTML file and one-line errors.

Expected values are closed forms: KL of ε-DP = ε·tanh(ε/2) (Cuff & Yu 2016, Property 1), the
Gaussian KL μ²/2 and RDP αμ²/2 (Mironov 2017, Prop. 7), Laplace pure ε = Δ/b per release and
kΔ/b for k compositions (Dwork & Roth 2014, Thm 3.16), e^ε/(1+e^ε) success (KOV 2015).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from infodp.cli import main

LN2 = math.log(2.0)


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["explain", *args, "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    payload: dict[str, Any] = json.loads(out)
    return payload


def test_epsilon_delta_json(capsys: pytest.CaptureFixture[str]) -> None:
    # the "DP and Information Theory" (2022) article's example: ε = 1, δ = 0.01 on census-like data.
    d = run_json(capsys, "--epsilon", "1", "--delta", "0.01", "--rows", "10000")
    assert d["epsilon"] == 1.0 and d["delta"] == 0.01
    assert d["nats"] == {"1": None, "2": None, "inf": None}
    assert d["bits"] == {"1": None, "2": None, "inf": None}
    assert d["unbounded_probability"] == 0.01
    assert d["posterior_odds_bound"] == pytest.approx(math.e)
    assert d["posterior_odds_bound_probability"] == pytest.approx(0.99)
    assert d["conditional"]["bits"]["inf"] == pytest.approx(1 / LN2)  # "approx. 1.44 bits"
    assert d["attacker_success_max"] == pytest.approx((math.e + 0.01) / (1 + math.e), rel=1e-6)
    assert d["min_entropy_leakage_bound"] == pytest.approx(
        math.log(2 * (math.e + 0.01) / (1 + math.e)), rel=1e-6
    )
    assert d["expected_exposed_individuals"] == pytest.approx(100.0)
    assert any("1/N" in w for w in d["warnings"])
    # Trade-off region of (ε, δ)-DP (Kairouz, Oh & Viswanath 2015, Theorem 2.1).
    for row in d["tradeoff"]:
        a = row["false_positive_rate"]
        kov = max(0.0, 0.99 - math.e * a, (0.99 - a) / math.e)
        assert row["false_negative_rate_at_least"] == pytest.approx(kov, abs=1e-9)


def test_pure_epsilon_json(capsys: pytest.CaptureFixture[str]) -> None:
    d = run_json(capsys, "--epsilon", "0.5")
    assert d["delta"] == 0.0 and d["pure"] is True
    assert d["nats"]["1"] == pytest.approx(0.5 * math.tanh(0.25), rel=1e-9)
    assert d["nats"]["inf"] == pytest.approx(0.5)
    assert d["bits"]["inf"] == pytest.approx(0.5 / LN2)
    assert d["attacker_success_max"] == pytest.approx(math.exp(0.5) / (1 + math.exp(0.5)))
    assert "expected_exposed_individuals" not in d


def test_group_json(capsys: pytest.CaptureFixture[str]) -> None:
    d = run_json(capsys, "--epsilon", "0.5", "--group", "4")
    assert d["group"]["size"] == 4
    # kε, "DP and Information Theory" (2022) group privacy
    assert d["group"]["nats"]["inf"] == pytest.approx(2.0)


def test_gaussian_mechanism_json(capsys: pytest.CaptureFixture[str]) -> None:
    d = run_json(
        capsys, "--mechanism", "gaussian", "--sigma", "2", "--compositions", "4", "--delta", "1e-6"
    )
    # 4 compositions of σ = 2: RDP(2) = 4·2/(2·4) = 1; at level 1 the Shannon capacity of each
    # use is ≤ Δ²/(4σ²) = 1/16 (Cover & Thomas 2006, Thm 9.4.1), so 4 uses give 1/4 — below
    # the KL diameter 1/2.
    assert d["nats"]["1"] == pytest.approx(0.25, rel=1e-6)
    assert d["nats"]["2"] == pytest.approx(1.0, rel=1e-6)
    assert d["nats"]["inf"] is None
    assert d["delta"] == 1e-6
    assert d["spec"] == {"mechanism": "gaussian", "sigma": 2.0, "count": 4}


def test_laplace_mechanism_json(capsys: pytest.CaptureFixture[str]) -> None:
    d = run_json(
        capsys, "--mechanism", "laplace", "--scale", "2", "--sensitivity", "1",
        "--compositions", "3",
    )  # fmt: skip
    assert d["pure"] is True and d["delta"] == 0.0
    assert d["epsilon"] == pytest.approx(1.5)
    assert d["nats"]["inf"] == pytest.approx(1.5)


def test_subsampled_gaussian_mechanism_json(capsys: pytest.CaptureFixture[str]) -> None:
    d = run_json(
        capsys, "--mechanism", "subsampled-gaussian", "--noise-multiplier", "1.0",
        "--sampling-rate", "0.01", "--steps", "100", "--delta", "1e-5",
    )  # fmt: skip
    assert d["nats"]["1"] is not None and d["nats"]["1"] > 0
    assert 0 < d["epsilon"] < 10


def test_same_epsilon_as_infodp_account(capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["--mechanism", "gaussian", "--sigma", "2", "--compositions", "4", "--delta", "1e-5"]
    assert main(["account", *flags, "--json"]) == 0
    account = json.loads(capsys.readouterr().out)
    d = run_json(capsys, *flags)
    assert d["epsilon"] == pytest.approx(account["epsilon"], rel=1e-9)
    # And both are at least the exact ε of a Gaussian with μ = 1 at δ = 1e-5 (Balle & Wang
    # 2018, Theorem 8): δ(ε) = Φ(½ − ε) − e^ε Φ(−½ − ε) gives ε ≈ 3.7295.
    from scipy import optimize, stats

    def delta_of(e: float) -> float:
        return float(stats.norm.cdf(0.5 - e) - math.exp(e) * stats.norm.cdf(-0.5 - e))

    exact = optimize.brentq(lambda e: delta_of(e) - 1e-5, 0.0, 50.0, xtol=1e-12)
    assert exact - 1e-9 <= d["epsilon"] <= exact + 5e-3


def test_approximate_dp_mechanism_and_spec_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    d = run_json(
        capsys, "--mechanism", "approximate-dp", "--epsilon", "1", "--delta-mechanism", "0.01"
    )
    assert (d["epsilon"], d["delta"]) == (1.0, pytest.approx(0.01))
    assert d["nats"]["1"] is None and d["unbounded_probability"] == pytest.approx(0.01)
    spec = tmp_path / "seq.json"
    spec.write_text(
        json.dumps(
            [
                {"mechanism": "laplace", "scale": 2.0, "count": 2},
                {"mechanism": "pure-dp", "epsilon": 0.5},
            ]
        )
    )
    d = run_json(capsys, "--spec", str(spec))
    assert d["pure"] is True and d["epsilon"] == pytest.approx(1.5)  # 2·(1/2) + 0.5
    assert d["spec"][1]["mechanism"] == "pure-dp"


def test_human_output_is_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--epsilon", "1", "--delta", "0.01", "--rows", "1000"]) == 0
    out = capsys.readouterr().out
    for word in ("nats", "bits", "unbounded", "not a guarantee", "1.443", "Warning", "false-"):
        assert word in out


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_delta_output_leads_with_what_is_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    # (ε, δ) = (1, 1e-5): counting the δ event nothing is bounded, so the report leads with
    # the odds e^ε and the trade-off region (Kairouz, Oh & Viswanath 2015, Thm 2.1), then the
    # leakage with probability 1 − δ; no table of "unbounded" cells and no table of 1s.
    assert main(["explain", "--epsilon", "1", "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    flat = _flat(out)
    assert f"One individual: ε = 1 = {1 / LN2:.4g} bits per person, δ = 1e-05" in out
    assert "(nats)," not in out and "ε = 1 (nats)" not in out
    lead = (
        "What (ε, δ) guarantees: with probability 1 − δ = 0.99999 per release, an attacker's "
        f"odds about any one person grow by at most e^ε = {math.e:.4g}, and no membership test "
        "beats the trade-off below; with probability δ = 1e-05 the release may reveal that "
        "person outright."
    )
    assert lead in flat
    order = [
        lead,
        "Attacker views",
        "Hypothesis test 'is this person in the data?'",
        "With probability 1 − δ = 0.99999 (not a guarantee: with probability δ, unbounded): "
        "information per individual",
        "Markov tail at α = 2, with probability 1 − δ = 0.99999: P(one release teaches ≥ R)",
        "Counting the δ event, the leakage at α = 1, 2 and ∞ is unbounded: a release that fails "
        "(probability δ = 1e-05) may reveal a person's row outright, and (ε, δ) says nothing of "
        "how much it reveals then, so the leakage figures above hold with probability 1 − δ "
        "only",
    ]
    at = [flat.index(part) for part in order]
    assert at == sorted(at)
    # No cell reads "unbounded" (the one line above says why), and the tail is not all 1s:
    # at R = 2 bits it is (e^C − 1)/(e^R − 1) with C = D_2 of 1-randomized response,
    # log(p²/(1 − p) + (1 − p)²/p), p = e/(1 + e) (Mironov 2017, Prop. 5; Markov).
    assert not any("│" in line and "unbounded" in line for line in out.splitlines())
    p = math.e / (1 + math.e)
    c2 = math.log(p**2 / (1 - p) + (1 - p) ** 2 / p)
    tail_rows = {
        cells[0]: cells[1]
        for line in out.split("P(one release teaches ≥ R)", 1)[1].splitlines()
        if (cells := [c.strip() for c in line.strip("│ ").split("│")]) and len(cells) == 2
    }
    assert tail_rows["2"] == f"{(math.exp(c2) - 1) / 3:.4g}"
    assert tail_rows["8"] != "1"


def test_pure_output_names_epsilon_in_bits(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--epsilon", "0.5"]) == 0
    out = capsys.readouterr().out
    assert f"One individual: ε = 0.5 = {0.5 / LN2:.4g} bits per person, δ = 0 (pure ε-DP)" in out
    assert "What (ε, δ) guarantees" not in out  # nothing is unbounded: the usual tables
    assert "Information per individual" in out


@pytest.mark.slow
def test_html_option_writes_a_report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    d = run_json(capsys, "--epsilon", "1", "--html", str(target))
    assert d["html"] == str(target)
    assert target.read_text(encoding="utf-8").count("data:image/svg+xml;base64,") == 4


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--epsilon", "-1"], "epsilon"),
        (["--epsilon", "1", "--delta", "2"], "delta"),
        (["--epsilon", "1", "--rows", "0"], "rows"),
        (["--delta", "0.1"], "--epsilon"),
        (["--mechanism", "cauchy", "--scale", "1"], "--mechanism"),
        (["--mechanism", "gaussian"], "--sigma"),
        (["--mechanism", "gaussian", "--sigma", "1", "--scale", "2"], "--scale"),
        (["--epsilon", "1", "--sigma", "2"], "--mechanism"),
        (["--mechanism", "gaussian", "--sigma", "1", "--epsilon", "1"], "--epsilon"),
        (
            ["--mechanism", "laplace", "--scale", "1", "--steps", "2", "--compositions", "3"],
            "--steps",
        ),
        (["--spec", "/nonexistent/spec.json"], "--spec"),
        (["--mechanism", "gaussian", "--sigma", "-1"], "sigma"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    assert main(["explain", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and fragment in captured.err
    assert "Traceback" not in captured.err


def test_html_into_a_missing_directory_is_refused_without_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "no" / "such" / "report.html"
    for as_json in ([], ["--json"]):
        code = main(["explain", "--epsilon", "1", "--html", str(target), *as_json])
        out, err = capsys.readouterr()
        assert code == 2 and "Traceback" not in err + out
        assert "--html" in err + out and "existing directory" in err + out
    assert not (tmp_path / "no").exists()
