"""``infodp divergence``: Rényi divergence (and optionally the tight δ) of two distributions.

A thin wrapper over :func:`infodp.information.renyi_divergence` and
:func:`infodp.information.hockey_stick_divergence`. Results are in nats, with the same value in
bits beside it under the key ``bits`` (bits = nats / ln 2).

>>> from infodp.cli import main
>>> main(["divergence", "--p", "0.75,0.25", "--q", "0.25,0.75", "--alpha", "inf"])
D_inf(P‖Q) = 1.09861 nats (1.58496 bits)
0
"""

from __future__ import annotations

import math
from typing import Any

import click

from infodp._format import format_number as _fmtn
from infodp._validate import as_real
from infodp.cli._common import emit, json_option, parse_alpha, parse_floats
from infodp.information.divergence import (
    hockey_stick_divergence,
    renyi_divergence,
    total_variation,
)
from infodp.units import nats_to_bits

__all__ = ["COMMANDS", "divergence"]


def _order_label(alpha: float) -> str:
    return "inf" if math.isinf(alpha) else f"{_fmtn(alpha)}"


def _render(payload: dict[str, Any]) -> None:
    label = _order_label(payload["alpha"])
    nats, bits = payload["nats"], payload["bits"]
    click.echo(f"D_{label}(P‖Q) = {_fmtn(nats, 6)} nats ({_fmtn(bits, 6)} bits)")
    if "delta" in payload:
        click.echo(
            f"tight δ at ε = {_fmtn(payload['epsilon'])}: {_fmtn(payload['delta'], 6)} "
            "(hockey-stick divergence E_{e^ε}(P‖Q))"
        )


@click.command("divergence")
@click.option("--p", "p_text", required=True, help="Distribution P: comma-separated probabilities.")
@click.option("--q", "q_text", required=True, help="Distribution Q: same length as P.")
@click.option(
    "--alpha",
    "alpha_text",
    default="1",
    show_default=True,
    help="Rényi order in [0, inf]: 1 is KL, inf the max-divergence (pure ε).",
)
@click.option(
    "--epsilon",
    "epsilon_text",
    default=None,
    help="Also report the tight δ at this ε (hockey-stick divergence).",
)
@json_option
def divergence(
    p_text: str, q_text: str, alpha_text: str, epsilon_text: str | None, as_json: bool
) -> None:
    """Rényi divergence D_α(P‖Q) of two discrete distributions, in nats and bits."""
    p = parse_floats("--p", p_text)
    q = parse_floats("--q", q_text)
    alpha = parse_alpha(alpha_text)
    nats = renyi_divergence(p, q, alpha)
    payload: dict[str, Any] = {
        "measure": "renyi_divergence",
        "alpha": alpha,
        "p": p,
        "q": q,
        "nats": nats,
        "bits": nats_to_bits(nats),
        "units": {"nats": "natural logarithm", "bits": "base-2 logarithm (nats / ln 2)"},
        "total_variation": total_variation(p, q),
    }
    if epsilon_text is not None:
        epsilon = as_real("--epsilon", epsilon_text.strip(), allow_inf=True)
        payload["epsilon"] = epsilon
        payload["delta"] = hockey_stick_divergence(p, q, epsilon)
    emit(payload, as_json, _render)


COMMANDS: list[click.Command] = [divergence]
