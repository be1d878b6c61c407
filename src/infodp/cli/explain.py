"""``infodp explain``: what a given ε, δ or mechanism means in nats, bits and attacker odds.

Two forms::

    infodp explain --epsilon 1 --delta 0.01 [--rows N] [--group K] [--html FILE] [--json]
    infodp explain --mechanism gaussian --sigma 2 --compositions 10 [--delta 1e-6] ...

The mechanism flags are those of ``infodp account``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import click

from infodp.cli._common import emit, json_option
from infodp.errors import ParameterError

__all__ = ["COMMANDS", "MECHANISMS", "explain_command", "mechanism_profile"]

#: Mechanisms ``--mechanism`` accepts, and the flags each one needs.
MECHANISMS: dict[str, tuple[str, ...]] = {
    "laplace": ("scale",),
    "gaussian": ("sigma",),
    "discrete-laplace": ("scale",),
    "discrete-gaussian": ("sigma",),
    "subsampled-gaussian": ("noise_multiplier", "sampling_rate"),
}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def mechanism_profile(mechanism: str, **options: Any) -> Any:
    """The privacy profile of ``--mechanism`` with its flags (as ``infodp account`` reads them).

    ``compositions`` (k-fold repetition of the whole mechanism) and, for
    ``subsampled-gaussian``, ``steps`` multiply; unused flags are refused.

    >>> p = mechanism_profile("laplace", scale=2.0, sensitivity=1.0, compositions=3)
    >>> round(p.pure_epsilon(), 6)
    1.5
    """
    from infodp import accounting

    if mechanism not in MECHANISMS:
        raise ParameterError("--mechanism", mechanism, "one of " + ", ".join(MECHANISMS))
    needed = MECHANISMS[mechanism]
    for name in needed:
        if options.get(name) is None:
            raise ParameterError(f"{_flag(name)} is required with --mechanism {mechanism}")
    allowed = {*needed, "compositions"}
    if mechanism != "subsampled-gaussian":
        allowed.add("sensitivity")
    else:
        allowed.add("steps")
    for name, value in options.items():
        if value is not None and name not in allowed:
            raise ParameterError(f"{_flag(name)} does not apply to --mechanism {mechanism}")
    sensitivity = options.get("sensitivity")
    if mechanism == "laplace":
        profile = accounting.laplace_profile(options["scale"], sensitivity or 1.0)
    elif mechanism == "gaussian":
        profile = accounting.gaussian_profile(options["sigma"], sensitivity or 1.0)
    elif mechanism == "discrete-laplace":
        profile = accounting.discrete_laplace_profile(options["scale"], _int(sensitivity))
    elif mechanism == "discrete-gaussian":
        profile = accounting.discrete_gaussian_profile(options["sigma"], _int(sensitivity))
    else:
        profile = accounting.subsampled_gaussian_profile(
            options["noise_multiplier"], options["sampling_rate"]
        )
        steps = options.get("steps") or 1
        if steps > 1:
            profile = profile.repeat(steps)
    k = options.get("compositions") or 1
    return profile.repeat(k) if k > 1 else profile


def _int(value: float | None) -> int:
    if value is None:
        return 1
    if not float(value).is_integer() or value < 1:
        raise ParameterError("--sensitivity", value, "a positive integer for a discrete mechanism")
    return int(value)


def _text(x: float | None, digits: int = 4) -> str:
    if x is None:
        return "unbounded"
    if math.isinf(x):
        return "∞"
    return f"{x:.{digits}g}"


def _render(payload: dict[str, Any]) -> None:
    from rich.console import Console

    console = Console(file=sys.stdout, width=110, soft_wrap=False)
    _render_one(console, payload, "One individual")
    if "group" in payload:
        _render_one(console, payload["group"], f"A group of {payload['group']['size']}")
    if payload.get("html"):
        console.print(f"HTML report written to {payload['html']}")


def _render_one(console: Any, p: dict[str, Any], heading: str) -> None:
    from rich.table import Table

    title = f"{heading}: ε = {_text(p['epsilon'])} nats, δ = {_text(p['delta'], 3)}" + (
        " (pure ε-DP)" if p["pure"] else ""
    )
    leak = Table(title=title, title_justify="left")
    for col in ("level α", "nats / individual", "bits / individual", "meaning"):
        leak.add_column(col, justify="left" if col in ("level α", "meaning") else "right")
    meanings = {
        "1": "Shannon rate: what a determined attacker extracts",
        "2": "collision level",
        "inf": "worst case: the most one output reveals",
    }
    for key in ("1", "2", "inf"):
        leak.add_row(
            key.replace("inf", "∞"), _text(p["nats"][key]), _text(p["bits"][key]), meanings[key]
        )
    console.print(leak)
    cond = p.get("conditional")
    if cond is not None and any(v is None for v in p["nats"].values()):
        console.print(
            f"[italic]Not a guarantee: only with probability {cond['probability']:.6g} "
            f"(1 − δ) is the leakage at most {_text(cond['nats']['1'])} nats "
            f"({_text(cond['bits']['1'])} bits) at α = 1 and {_text(cond['nats']['inf'])} nats "
            f"({_text(cond['bits']['inf'])} bits) in the worst case; with probability "
            f"δ = {p['delta']:.3g} it is unbounded.[/italic]"
        )
    attack = Table(title="Attacker views", title_justify="left")
    attack.add_column("view")
    attack.add_column("bound", justify="right")
    attack.add_row("posterior odds multiplied by at most e^ε", _text(p["posterior_odds_bound"]))
    attack.add_row("best success, in/out guessing game", _text(p["attacker_success_max"]))
    attack.add_row(
        "  from (ε, δ) alone: (e^ε + δ)/(1 + e^ε)", _text(p["attacker_success_epsilon_delta"])
    )
    attack.add_row("  seed 002's looser ½ + ε/2", _text(p["attacker_success_seed002"]))
    attack.add_row(
        "min-entropy leakage, binary secret (nats)", _text(p["min_entropy_leakage_bound"])
    )
    console.print(attack)
    rates = Table(title="Releases an attacker needs (Shannon rate, at least)", title_justify="left")
    rates.add_column("bits about one individual", justify="right")
    rates.add_column("releases", justify="right")
    for bits, n in p["releases_for_bits"].items():
        rates.add_row(bits, "1 (with prob. δ)" if n is None else _text(n, 8))
    console.print(rates)
    tail = Table(
        title=f"Markov tail at α = {_text(p['tail_alpha'])}: P(one release teaches ≥ R)",
        title_justify="left",
    )
    tail.add_column("R (bits)", justify="right")
    tail.add_column("probability at most", justify="right")
    for row in p["tail"]:
        tail.add_row(_text(row["leak_nats"] / math.log(2), 3), _text(row["probability_at_most"]))
    console.print(tail)
    if "rows" in p:
        console.print(
            f"N = {p['rows']} rows: expected individuals whose protection fails per release "
            f"(δ·N) = {_text(p['expected_exposed_individuals'])}"
        )
    for w in p["warnings"]:
        console.print(f"[bold red]Warning:[/bold red] {w}")


@click.command("explain")
@click.option("--epsilon", type=float, default=None, help="ε in nats (or a target ε).")
@click.option("--delta", type=float, default=None, help="δ (or a target δ for --mechanism).")
@click.option("--mechanism", type=str, default=None, help="One of: " + ", ".join(MECHANISMS))
@click.option("--scale", type=float, default=None, help="Laplace noise scale b.")
@click.option("--sensitivity", type=float, default=None, help="Sensitivity (default 1).")
@click.option("--sigma", type=float, default=None, help="Gaussian noise standard deviation.")
@click.option("--noise-multiplier", type=float, default=None, help="σ / clipping norm.")
@click.option("--sampling-rate", type=float, default=None, help="Poisson sampling rate q.")
@click.option("--steps", type=int, default=None, help="Subsampled steps (default 1).")
@click.option("--compositions", type=int, default=None, help="Repeat the mechanism k times.")
@click.option("--rows", type=int, default=None, help="Rows N in the table (for δ·N).")
@click.option("--group", type=int, default=1, show_default=True, help="Group size k.")
@click.option("--tail-alpha", type=float, default=2.0, show_default=True, help="α of the tail.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None)
@json_option
def explain_command(
    epsilon: float | None,
    delta: float | None,
    mechanism: str | None,
    scale: float | None,
    sensitivity: float | None,
    sigma: float | None,
    noise_multiplier: float | None,
    sampling_rate: float | None,
    steps: int | None,
    compositions: int | None,
    rows: int | None,
    group: int,
    tail_alpha: float,
    html_path: str | None,
    as_json: bool,
) -> None:
    """Explain what an ε/δ or a mechanism leaks: nats and bits per individual, attacker odds."""
    from infodp.explain import explain, explain_epsilon_delta, write_html

    mech_flags = {
        "scale": scale,
        "sensitivity": sensitivity,
        "sigma": sigma,
        "noise_multiplier": noise_multiplier,
        "sampling_rate": sampling_rate,
        "steps": steps,
        "compositions": compositions,
    }
    if mechanism is None:
        for name, value in mech_flags.items():
            if value is not None:
                raise ParameterError(f"{_flag(name)} needs --mechanism")
        if epsilon is None:
            raise ParameterError("--epsilon is required (or give --mechanism)")
        report = explain_epsilon_delta(
            epsilon, 0.0 if delta is None else delta, rows=rows, group=group, tail_alpha=tail_alpha
        )
    else:
        if epsilon is not None and delta is not None:
            raise ParameterError(
                "give at most one of --epsilon / --delta with --mechanism (the other follows)"
            )
        profile = mechanism_profile(mechanism, **mech_flags)
        report = explain(
            profile, epsilon=epsilon, delta=delta, rows=rows, group=group, tail_alpha=tail_alpha
        )
    payload = report.to_dict()
    if mechanism is not None:
        payload["mechanism"] = {"name": mechanism, **{k: v for k, v in mech_flags.items() if v}}
    if html_path is not None:
        payload["html"] = str(write_html(report, Path(html_path)))
    emit(payload, as_json, _render)


COMMANDS: list[click.Command] = [explain_command]
