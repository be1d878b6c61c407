"""``infodp demo``: the main job, on real numbers.

Three short acts: (1) what ε is as information — Warner's (1965) coin-flip randomized
response as a channel, its capacities in nats and bits; (2) accounting — a DP-SGD run's certified ε
and what the often-quoted (ε = 1, δ = 0.01) buys; (3) the curator — a DP SQL session
over a synthetic census of 1 000 000 people with a durable budget (Dwork & Roth's (2014) trusted
curator), ending with a refused over-budget query.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from infodp._format import format_number as _fmtn
from infodp.accounting import subsampled_gaussian_profile
from infodp.channel import Channel
from infodp.cli._common import RULE_WIDTH, emit, json_option, output_console
from infodp.explain import explain_epsilon_delta
from infodp.units import nats_to_bits


def _information_act() -> dict[str, Any]:
    # Dwork & Roth 2014: answer truthfully on heads, otherwise answer by a second coin flip; the
    # probability ratio of "yes" is 3, so ε = ln 3. As a channel it is binary randomized response.
    coin_flip = Channel.randomized_response(2, math.log(3))
    shannon = coin_flip.shannon_capacity()
    sibson2 = coin_flip.sibson_capacity(2.0)
    renyi2 = coin_flip.renyi_capacity(2.0)
    return {
        "mechanism": "coin-flip randomized response (Dwork & Roth 2014), epsilon = ln 3",
        "matrix": coin_flip.matrix.tolist(),
        "pure_epsilon": coin_flip.epsilon(),
        "capacity_nats": {
            "1": [shannon.lower, shannon.upper],
            "2_sibson": [sibson2.lower, sibson2.upper],
            "2": [renyi2.lower, renyi2.upper],
            "inf": [coin_flip.epsilon(), coin_flip.epsilon()],
        },
        "diameter_2": coin_flip.diameter(2.0),
    }


def _accounting_act() -> dict[str, Any]:
    dpsgd = subsampled_gaussian_profile(1.0, 0.01).repeat(10_000)
    t0 = time.perf_counter()
    eps = dpsgd.epsilon(1e-5)
    seconds = time.perf_counter() - t0
    default = explain_epsilon_delta(1.0, 0.01, rows=1_000_000)
    return {
        "dp_sgd": {
            "noise_multiplier": 1.0,
            "sampling_rate": 0.01,
            "steps": 10_000,
            "delta": 1e-5,
            "epsilon": eps,
            "seconds": seconds,
            "information_nats_alpha1": dpsgd.information(1.0),
        },
        "epsilon_1_delta_0.01": {
            "bits_alpha1_if_no_failure": (default.conditional_bits or {}).get("1"),
            "bits_worst_if_no_failure": (default.conditional_bits or {}).get("inf"),
            "attacker_success_max": default.attacker_success_max,
            "expected_exposed_individuals_of_1e6": default.expected_exposed_individuals,
        },
    }


def _rule(console: Console, title: str) -> None:
    from rich.rule import Rule

    console.print(Rule(title), width=min(console.width, RULE_WIDTH))


def _render(payload: dict[str, Any], console: Console) -> None:
    info = payload["information"]
    _rule(console, "1. ε is an amount of information")
    table = Table(title=info["mechanism"])
    table.add_column("level α")
    table.add_column("capacity (nats per person)", justify="right")
    table.add_column("bits", justify="right")
    rows = [
        ("1 (Shannon, MI-DP)", info["capacity_nats"]["1"]),
        ("2 (Sibson radius)", info["capacity_nats"]["2_sibson"]),
        ("2 (Rényi capacity C₂)", info["capacity_nats"]["2"]),
        ("∞ (pure ε)", info["capacity_nats"]["inf"]),
    ]
    for label, (lo, hi) in rows:
        nats = f"{_fmtn(hi, 6)}" if hi - lo < 1e-6 else f"[{_fmtn(lo, 6)}, {_fmtn(hi, 6)}]"
        table.add_row(label, nats, f"{_fmtn(nats_to_bits(hi))}")
    console.print(table)
    console.print(
        "A determined attacker learns at most "
        f"{_fmtn(nats_to_bits(info['capacity_nats']['1'][1]))} bits about one person per answer "
        f"(Shannon rate); the worst case is ln 3 = {_fmtn(info['pure_epsilon'])} nats."
    )
    acc = payload["accounting"]
    _rule(console, "2. Accounting")
    sgd = acc["dp_sgd"]
    console.print(
        f"DP-SGD, noise multiplier {sgd['noise_multiplier']}, sampling rate "
        f"{sgd['sampling_rate']}, {_fmtn(sgd['steps'])} steps: "
        f"certified ε = {_fmtn(sgd['epsilon'])} at "
        f"δ = {_fmtn(sgd['delta'])} ({sgd['seconds'] * 1000:.0f} ms, tight PLD)."
    )
    d = acc["epsilon_1_delta_0.01"]
    console.print(
        "The (ε, δ) warning (“Differential Privacy and Information Theory”, 2022), "
        "ε = 1, δ = 0.01: with probability 0.99 at most "
        f"{_fmtn(d['bits_worst_if_no_failure'])} bits per query leak in the worst case "
        f"({_fmtn(d['bits_alpha1_if_no_failure'])} at the Shannon rate), but with probability "
        "0.01 everything may; on a table of 1,000,000 people that is "
        f"{_fmtn(d['expected_exposed_individuals_of_1e6'])} people unprotected in expectation."
    )
    _rule(console, "3. The curator")


@click.command()
@click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("infodp-demo.duckdb"),
    show_default=True,
    help="Store for the synthetic census (created on first use, reused afterwards).",
)
@click.option(
    "--rows", type=click.IntRange(min=1000), default=1_000_000, show_default=True, hidden=True
)
@json_option
def demo(db_path: Path, rows: int, as_json: bool) -> None:
    """Demonstrate infodp: ε as information, accounting, and a DP SQL session."""
    from infodp.curator.demo import run_demo
    from infodp.errors import ParameterError

    if not db_path.parent.is_dir():
        raise ParameterError("--db", str(db_path), "a file in an existing directory")
    if db_path.exists() and not _is_duckdb(db_path):
        # Never opened as a store: nothing of the file is read but its header.
        raise ParameterError("--db", str(db_path), "a new file or a store an earlier demo made")
    started = time.perf_counter()
    console = output_console()
    payload: dict[str, Any] = {
        "information": _information_act(),
        "accounting": _accounting_act(),
    }
    if not as_json:
        _render(payload, console)
    payload["curator"] = run_demo(db_path, as_json=as_json, console=console, rows=rows)
    payload["seconds"] = time.perf_counter() - started
    emit(payload, as_json, lambda _p: None)


def _is_duckdb(path: Path) -> bool:
    """Whether ``path`` is a DuckDB database file (its header's magic bytes)."""
    try:
        with path.open("rb") as f:
            return f.read(12)[8:12] == b"DUCK"
    except OSError:
        return False


COMMANDS: list[click.Command] = [demo]
