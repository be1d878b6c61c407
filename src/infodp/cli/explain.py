"""``infodp explain``: what a given ε, δ or mechanism means in nats, bits and attacker odds.

Three forms::

    infodp explain --epsilon 1 --delta 0.01 [--rows N] [--group K] [--html FILE] [--json]
    infodp explain --mechanism gaussian --sigma 2 --compositions 10 [--delta 1e-6] ...
    infodp explain --spec sequence.json [--delta 1e-6] ...

The mechanism flags and the spec file are those of ``infodp account``
(:mod:`infodp.accounting.spec`): with a mechanism, ``--epsilon`` is the mechanism's own ε
(randomized response, pure-dp, approximate-dp) and ``--delta`` the target δ. ``--group K``
adds the view of a group of K individuals.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from infodp.cli._common import command_line, emit, json_option, output_console
from infodp.cli._mechanism_flags import flag as _flag
from infodp.cli._mechanism_flags import (
    mechanism_options,
    mechanism_spec,
    read_spec,
    spec_parameters,
)
from infodp.errors import ParameterError
from infodp.units import nats_to_bits

__all__ = ["COMMANDS", "DEFAULT_TARGET_DELTA", "explain_command", "mechanism_spec"]

#: Target δ with --mechanism/--spec when --delta is not given (the default of infodp account).
DEFAULT_TARGET_DELTA = 1e-5


def _schedule(path: str) -> Any:
    from infodp.accounting.schedule import read_schedule_csv, schedule_profile

    try:
        text = Path(path).read_text()
    except OSError as err:
        raise ParameterError("--schedule", path, f"a readable file ({err.strerror})") from None
    return schedule_profile(read_schedule_csv(text, where="--schedule"))


def _text(x: float | None, digits: int = 4) -> str:
    from infodp._format import format_number

    return format_number(x, digits, missing="unbounded")


def _render(payload: dict[str, Any]) -> None:
    console = output_console()
    _render_one(console, payload, "One individual")
    if "group" in payload:
        _render_one(console, payload["group"], f"A group of {payload['group']['size']}")
    if payload.get("html"):
        console.print(f"HTML report written to {payload['html']}")


def _view(p: dict[str, Any]) -> Any:
    """The attributes :mod:`infodp.explain.wording` reads, from a JSON payload."""
    from types import SimpleNamespace

    cond = p.get("conditional")
    return SimpleNamespace(
        epsilon=p["epsilon"],
        delta=p["delta"],
        nats=p["nats"],
        conditional_nats=None if cond is None else cond["nats"],
        posterior_odds_bound=p["posterior_odds_bound"],
    )


def _render_one(console: Any, p: dict[str, Any], heading: str) -> None:
    from rich.table import Table

    from infodp.explain.wording import (
        epsilon_phrase,
        guarantee_line,
        leads_with_one_minus_delta,
        unbounded_line,
    )

    view = _view(p)
    # Nothing is bounded once the δ event counts: lead with what (ε, δ) does bound.
    given = leads_with_one_minus_delta(view)
    title = f"{heading}: {epsilon_phrase(view)}, δ = {_text(p['delta'], 3)}" + (
        " (pure ε-DP)" if p["pure"] else ""
    )
    console.print(f"\n[bold]{title}[/bold]")
    if given:
        console.print(guarantee_line(view))
    else:
        _leak_table(console, p["nats"], "Information per individual")
        if p.get("caveat"):
            console.print(f"[italic]{p['caveat']}[/italic]")
    console.print("[bold]Attacker views[/bold]")
    attack = Table()
    attack.add_column("view")
    attack.add_column("bound", justify="right")
    odds = "posterior odds multiplied by at most e^ε"
    attack.add_row(
        odds + (" (on the 1 − δ event)" if p["delta"] > 0 else ""), _text(p["posterior_odds_bound"])
    )
    attack.add_row("best success, in/out guessing game", _text(p["attacker_success_max"]))
    attack.add_row(
        "  from (ε, δ) alone: (e^ε + δ)/(1 + e^ε)", _text(p["attacker_success_epsilon_delta"])
    )
    attack.add_row("  the linear bound ½ + ε/2", _text(p["attacker_success_linear"]))
    attack.add_row(
        "min-entropy leakage, binary secret (nats)", _text(p["min_entropy_leakage_bound"])
    )
    console.print(attack)
    console.print("[bold]Hypothesis test 'is this person in the data?'[/bold]")
    test = Table()
    test.add_column("false-positive rate", justify="right")
    test.add_column("false-negative rate at least", justify="right")
    for row in p["tradeoff"]:
        test.add_row(_text(row["false_positive_rate"]), _text(row["false_negative_rate_at_least"]))
    console.print(test)
    if given:
        _leak_table(
            console,
            p["conditional"]["nats"],
            f"With probability 1 − δ = {_text(1 - p['delta'], 8)} (not a guarantee: with "
            "probability δ, unbounded): information per individual",
        )
    console.print(
        "[bold]Releases an attacker needs to learn b bits (Shannon rate, at least)[/bold]"
    )
    rates = Table()
    rates.add_column("bits about one individual", justify="right")
    rates.add_column("releases", justify="right")
    cond_rates = (p.get("conditional") or {}).get("releases_for_bits", {})
    for bits, n in p["releases_for_bits"].items():
        if n is None:
            cell = "1 may do (prob. δ)" + (
                f"; else ≥ {_text(cond_rates[bits], 8)}" if bits in cond_rates else ""
            )
        else:
            cell = _text(n, 8)
        rates.add_row(bits, cell)
    console.print(rates)
    _tail_table(console, p, given)
    if given:
        console.print(f"[italic]{unbounded_line(view)}[/italic]")
    if "rows" in p:
        console.print(
            f"N = {p['rows']} rows: expected individuals whose protection fails per release "
            f"(δ·N) = {_text(p['expected_exposed_individuals'])}"
        )
    for w in p["warnings"]:
        console.print(f"[bold red]Warning:[/bold red] {w}")
    for r in p.get("results", ()):
        console.print(f"[bold]Also:[/bold] {r}")


def _leak_table(console: Any, nats: dict[str, float | None], heading: str) -> None:
    from rich.table import Table

    console.print(f"[bold]{heading}[/bold]")
    leak = Table()
    for col in ("level α", "nats / individual", "bits / individual", "meaning"):
        leak.add_column(col, justify="left" if col in ("level α", "meaning") else "right")
    meanings = {
        "1": "Shannon rate: what a determined attacker extracts",
        "2": "collision level",
        "inf": "worst case: the most one output reveals",
    }
    for key in ("1", "2", "inf"):
        n = nats[key]
        leak.add_row(
            key.replace("inf", "∞"),
            _text(n),
            _text(None if n is None else nats_to_bits(n)),
            meanings[key],
        )
    console.print(leak)


def _tail_table(console: Any, p: dict[str, Any], given: bool) -> None:
    """The Markov tail at ``tail_alpha``; with ``given``, the one on the 1 − δ event (the
    unconditional one is 1 everywhere: the leakage counting the δ event is unbounded)."""
    from rich.table import Table

    alpha = _text(p["tail_alpha"])
    rows = p["conditional"]["tail"] if given else p["tail"]
    when = f", with probability 1 − δ = {_text(1 - p['delta'], 8)}" if given else ""
    if all(r["probability_at_most"] >= 1.0 for r in rows):
        console.print(
            f"Markov tail at α = {alpha}: no level R is bounded below probability 1 here "
            "(the leakage at this α is unbounded)."
        )
        return
    console.print(f"[bold]Markov tail at α = {alpha}{when}: P(one release teaches ≥ R)[/bold]")
    tail = Table()
    tail.add_column("R (bits)", justify="right")
    tail.add_column("probability at most", justify="right")
    for row in rows:
        tail.add_row(_text(nats_to_bits(row["leak_nats"]), 3), _text(row["probability_at_most"]))
    console.print(tail)


@click.command("explain")
@click.option("--epsilon", type=float, default=None, help="ε (nats); or the ε of a mechanism.")
@click.option("--delta", type=float, default=None, help="δ; with --mechanism the target δ.")
@click.option(
    "--mechanism",
    type=str,
    default=None,
    help="A mechanism, as for infodp account (laplace, gaussian, …).",
)
@click.option("--spec", "spec_file", type=click.Path(dir_okay=False), help="JSON spec file.")
@click.option(
    "--schedule",
    "schedule_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="A training run: CSV steps,noise_multiplier,sampling_rate (as infodp account).",
)
@mechanism_options([k for k in spec_parameters() if k != "epsilon"])
@click.option("--steps", type=int, default=None, help="Runs (synonym of --compositions).")
@click.option("--compositions", type=int, default=None, help="Runs (synonym of --steps).")
@click.option("--rows", type=int, default=None, help="Rows N in the table (for δ·N).")
@click.option("--group", type=int, default=1, show_default=True, help="Also explain a group of k.")
@click.option("--tail-alpha", type=float, default=2.0, show_default=True, help="α of the tail.")
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write a self-contained HTML report with plots to this file.",
)
@json_option
def explain_command(
    epsilon: float | None,
    delta: float | None,
    mechanism: str | None,
    spec_file: str | None,
    rows: int | None,
    group: int,
    tail_alpha: float,
    html_path: str | None,
    as_json: bool,
    **options: Any,
) -> None:
    """Explain what ε, δ or a mechanism leaks: nats and bits per individual, attacker odds.

    Without --mechanism/--spec, --epsilon and --delta (default 0) are the guarantee to explain.
    With --mechanism (flags as for infodp account; --epsilon is then the mechanism's own ε)
    or --spec FILE, the report is at the target --delta (default 1e-5, as infodp account).
    """
    from infodp.accounting.spec import profile_from_spec
    from infodp.explain import explain, explain_epsilon_delta, write_html

    if html_path is not None and not Path(html_path).parent.is_dir():
        raise ParameterError("--html", html_path, "a file in an existing directory")
    schedule_file = options.pop("schedule_file", None)
    given = [k for k, v in options.items() if v is not None]
    extra: dict[str, Any] = {}
    if schedule_file is not None:
        if mechanism is not None or spec_file is not None or given or epsilon is not None:
            raise ParameterError("--schedule takes no mechanism flags (the file has them)")
        report = explain(
            _schedule(schedule_file),
            rows=rows,
            group=group,
            tail_alpha=tail_alpha,
            delta=DEFAULT_TARGET_DELTA if delta is None else delta,
        )
        extra["schedule"] = schedule_file
        extra["neighbouring_relation"] = "add_remove"
        extra["sampling"] = "poisson"
    elif mechanism is None and spec_file is None:
        if given:
            raise ParameterError(f"{_flag(given[0])} needs --mechanism")
        if epsilon is None:
            raise ParameterError("--epsilon is required (or give --mechanism or --spec)")
        report = explain_epsilon_delta(
            epsilon, 0.0 if delta is None else delta, rows=rows, group=group, tail_alpha=tail_alpha
        )
    else:
        if mechanism is not None and spec_file is not None:
            raise ParameterError("give only one of --mechanism or --spec")
        if spec_file is not None:
            if given or epsilon is not None:
                raise ParameterError("--spec takes no mechanism flags (put them in the file)")
            spec = read_spec(spec_file)
        else:
            spec = mechanism_spec(str(mechanism), epsilon=epsilon, **options)
        profile = profile_from_spec(spec, where="--spec" if spec_file else "options")
        target: dict[str, Any] = {"delta": DEFAULT_TARGET_DELTA if delta is None else delta}
        if isinstance(spec, dict) and spec.get("mechanism") == "approximate-dp" and delta is None:
            # Only (ε, δ) is known: explain it at its own ε (times the count).
            target = {"epsilon": float(spec["epsilon"]) * int(spec.get("count", 1))}
        report = explain(profile, rows=rows, group=group, tail_alpha=tail_alpha, **target)
        extra["spec"] = spec
    payload = report.to_dict()
    payload.update(extra)
    if html_path is not None:
        inputs = {"command": command_line("explain"), "spec": extra.get("spec")}
        try:
            payload["html"] = str(write_html(report, Path(html_path), inputs=inputs))
        except OSError as err:
            raise ParameterError(
                "--html", html_path, f"a file that can be written ({err.strerror})"
            ) from None
    emit(payload, as_json, _render)


COMMANDS: list[click.Command] = [explain_command]
