"""``infodp design``: the least-leaking channel for a distortion budget.

Examples::

    infodp design --prior 0.25,0.25,0.25,0.25 --distortion hamming --max-distortion 0.2 \\
        --objective epsilon --json
    infodp design --prior 0.5,0.3,0.2 --distortion absolute --max-distortion 0.4 \\
        --objective mutual-information --curve 0.1,0.2,0.4 --html curve.html --json
    infodp design --worst-case --distortion-csv d.csv --max-distortion 0.3 --objective epsilon

With ``--json`` it prints one object with ``lower``, ``upper`` (nats), ``distortion``,
``channel`` (rows) and, with ``--curve``, ``curve`` (one entry per budget).
"""

from __future__ import annotations

from typing import Any

import click

from infodp.cli._common import command_line, emit, json_option, parse_floats
from infodp.errors import ParameterError

__all__ = ["COMMANDS", "design_command"]

_OBJECTIVES = ("epsilon", "mutual-information", "sibson", "maximal-leakage")


def _render(p: dict[str, Any]) -> None:
    click.echo(f"objective: {p['objective']}" + (f" (alpha {p['alpha']})" if p["alpha"] else ""))
    click.echo(f"least leakage in [{p['lower']:.9g}, {p['upper']:.9g}] nats")
    click.echo(f"achieved distortion {p['distortion']:.9g} (budget {p['max_distortion']:.9g})")
    click.echo("channel P(y|x):")
    for row in p["channel"]:
        click.echo("  " + " ".join(f"{v:.6f}" for v in row))
    for point in p.get("curve", []):
        click.echo(
            f"  D = {point['max_distortion']:.6g}: [{point['lower']:.6g}, {point['upper']:.6g}]"
        )


@click.command("design")
@click.option("--prior", help="Comma-separated prior on the values (sums to 1).")
@click.option("--worst-case", is_flag=True, help="Every value must meet the budget (no prior).")
@click.option("--alphabet", help="Comma-separated numeric values (default 0, 1, ..., k-1).")
@click.option(
    "--distortion",
    type=click.Choice(["hamming", "absolute", "squared"]),
    help="Named distortion on the alphabet.",
)
@click.option("--distortion-csv", type=click.Path(dir_okay=False), help="Distortion matrix CSV.")
@click.option("--max-distortion", type=float, required=True, help="Budget D on E d(X, Y).")
@click.option("--objective", default="epsilon", show_default=True, help="|".join(_OBJECTIVES))
@click.option("--alpha", type=float, help="Rényi order for --objective sibson (in [1, inf]).")
@click.option("--curve", help="Comma-separated budgets: also compute the trade-off curve.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Write the curve plot.")
@json_option
def design_command(
    prior: str | None,
    worst_case: bool,
    alphabet: str | None,
    distortion: str | None,
    distortion_csv: str | None,
    max_distortion: float,
    objective: str,
    alpha: float | None,
    curve: str | None,
    html_path: str | None,
    as_json: bool,
) -> None:
    """Find the channel that leaks the least while E d(X, Y) <= D (certified, in nats)."""
    import numpy as np

    from infodp.design import design, distortion_matrix, read_distortion_csv, tradeoff_curve
    from infodp.design.html import write_curve_html

    if objective not in _OBJECTIVES:
        raise ParameterError("--objective", objective, "one of " + ", ".join(_OBJECTIVES))
    if (prior is None) == (not worst_case):
        raise ParameterError("--prior/--worst-case", None, "exactly one of the two")
    if (distortion is None) == (distortion_csv is None):
        raise ParameterError("--distortion/--distortion-csv", None, "exactly one of the two")
    p = None if prior is None else np.array(parse_floats("--prior", prior))
    if distortion_csv is not None:
        if alphabet is not None:
            raise ParameterError("--alphabet is not used with --distortion-csv.")
        d = read_distortion_csv(distortion_csv)
    else:
        if alphabet is not None:
            values: Any = parse_floats("--alphabet", alphabet)
        elif p is not None:
            values = int(p.size)
        else:
            raise ParameterError("--alphabet", None, "given with --worst-case and --distortion")
        d = distortion_matrix(str(distortion), values)
    if html_path is not None and curve is None:
        raise ParameterError("--html", html_path, "used together with --curve")
    result = design(p, d, max_distortion, objective=objective, alpha=alpha)
    payload = result.to_dict()
    if curve is not None:
        points = tradeoff_curve(
            p, d, parse_floats("--curve", curve), objective=objective, alpha=alpha
        )
        payload["curve"] = [
            {k: r.to_dict()[k] for k in ("max_distortion", "lower", "upper", "distortion")}
            for r in points
        ]
        if html_path is not None:
            inputs = {"command": command_line("design")}
            payload["html"] = str(write_curve_html(points, html_path, inputs=inputs))
    emit(payload, as_json, _render)


COMMANDS: list[click.Command] = [design_command]
