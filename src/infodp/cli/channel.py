"""``infodp capacity``: certified capacity bracket of a discrete channel, in nats.

A thin wrapper over :class:`infodp.channel.Channel`. The channel is one of ``--bsc P``,
``--erasure E``, ``--z P``, ``--rr K,EPS`` or ``--matrix FILE.csv`` (one row per input, each
row a distribution over outputs). ``--definition`` chooses Shannon's capacity (α = 1),
Sibson's α-capacity (the radius) or the Rényi capacity C_α (the privacy level);
the output is a bracket ``[lower, upper]`` in nats plus the input distribution attaining
``lower``.

>>> from infodp.cli import main
>>> main(["capacity", "--erasure", "0.5"])
Shannon capacity (alpha = 1): [0.346574, 0.346574] nats ([0.5, 0.5] bits)
input distribution: 0: 0.5, 1: 0.5
0
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click
import numpy as np

from infodp._format import format_number as _fmtn
from infodp._validate import (
    as_nonnegative,
    as_positive,
    as_positive_int,
    as_probability,
)
from infodp.channel import DEFINITIONS, Channel
from infodp.cli._common import emit, json_option, parse_alpha, parse_floats
from infodp.errors import ParameterError
from infodp.units import nats_to_bits

__all__ = ["COMMANDS", "capacity"]


def _read_matrix(path: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    file = Path(path)
    if not file.is_file():
        raise ParameterError("--matrix", path, "an existing CSV file (one row per input)")
    try:
        with np.errstate(all="ignore"):
            matrix = np.loadtxt(file, delimiter=",", dtype=np.float64, ndmin=2)
    except (ValueError, OSError):
        raise ParameterError(
            "--matrix", path, "a CSV file of numbers, one row per input and one column per output"
        ) from None
    return matrix


def _channel(
    bsc: str | None, erasure: str | None, z: str | None, rr: str | None, matrix: str | None
) -> Channel:
    given = {
        name: value
        for name, value in (
            ("--bsc", bsc),
            ("--erasure", erasure),
            ("--z", z),
            ("--rr", rr),
            ("--matrix", matrix),
        )
        if value is not None
    }
    if len(given) != 1:
        raise ParameterError(
            "channel",
            ", ".join(given) or "none",
            "exactly one of --bsc P, --erasure E, --z P, --rr K,EPS, --matrix FILE.csv",
        )
    name, value = next(iter(given.items()))
    if name == "--matrix":
        return Channel(_read_matrix(value))
    numbers = parse_floats(name, value)
    if name == "--rr":
        if len(numbers) != 2:
            raise ParameterError("--rr", value, "K,EPS: an integer K >= 2 and epsilon >= 0")
        k = as_positive_int("--rr K", numbers[0], minimum=2)
        eps = as_nonnegative("--rr EPS", numbers[1], allow_inf=True)
        return Channel.randomized_response(k, eps)
    if len(numbers) != 1:
        raise ParameterError(name, value, "one probability in [0, 1]")
    prob = as_probability(name, numbers[0])
    if name == "--bsc":
        return Channel.binary_symmetric(prob)
    if name == "--erasure":
        return Channel.binary_erasure(prob)
    return Channel.z_channel(prob)


def _label(value: Any) -> Any:
    """Labels as JSON-friendly values (tuples become lists, other objects strings)."""
    if isinstance(value, tuple):
        return [_label(v) for v in value]
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def _render(payload: dict[str, Any]) -> None:
    names = {"shannon": "Shannon capacity", "sibson": "Sibson capacity", "renyi": "Rényi capacity"}
    alpha = payload["alpha"]
    name = names["shannon"] if alpha == 1 else names[payload["definition"]]
    alpha_text = "inf" if math.isinf(alpha) else f"{_fmtn(alpha)}"
    lower, upper = payload["lower"], payload["upper"]
    click.echo(
        f"{name} (alpha = {alpha_text}): [{_fmtn(lower, 6)}, {_fmtn(upper, 6)}] nats "
        f"([{_fmtn(nats_to_bits(lower), 6)}, {_fmtn(nats_to_bits(upper), 6)}] bits)"
    )
    if not payload["converged"]:
        click.echo(
            f"note: gap {_fmtn(payload['gap'])} nats is above the tolerance; {payload['method']}"
        )
    parts = [
        f"{label}: {_fmtn(prob, 6)}"
        for label, prob in zip(payload["inputs"], payload["input_distribution"], strict=True)
    ]
    click.echo("input distribution: " + ", ".join(parts))


@click.command("capacity")
@click.option("--bsc", default=None, help="Binary symmetric channel with crossover probability P.")
@click.option("--erasure", default=None, help="Binary erasure channel with erasure probability E.")
@click.option("--z", default=None, help="Z channel: input 1 is received as 0 with probability P.")
@click.option("--rr", default=None, help="K-ary randomized response at level EPS, as K,EPS.")
@click.option(
    "--matrix",
    default=None,
    help="CSV file with P(Y|X): one row per input, one column per output, rows summing to 1.",
)
@click.option(
    "--alpha",
    "alpha_text",
    default="1",
    show_default=True,
    help="Rényi order in (0, inf]; 1 is Shannon capacity, inf pure epsilon.",
)
@click.option(
    "--definition",
    type=click.Choice(list(DEFINITIONS)),
    default="renyi",
    show_default=True,
    help="shannon (alpha = 1), sibson (radius) or renyi (Rényi capacity C_alpha).",
)
@click.option(
    "--tol", "tol_text", default="1e-9", show_default=True, help="Target bracket width (nats)."
)
@json_option
def capacity(
    bsc: str | None,
    erasure: str | None,
    z: str | None,
    rr: str | None,
    matrix: str | None,
    alpha_text: str,
    definition: str,
    tol_text: str,
    as_json: bool,
) -> None:
    """Certified capacity bracket [lower, upper] of a channel, in nats per use."""
    alpha = parse_alpha(alpha_text)
    tol = as_positive("--tol", tol_text.strip())
    channel = _channel(bsc, erasure, z, rr, matrix)
    if definition == "shannon" and alpha != 1:
        raise ParameterError("--alpha", alpha_text, "1 with --definition shannon")
    result = channel.capacity(alpha, definition=definition, tol=tol)
    payload: dict[str, Any] = {
        "definition": definition,
        "alpha": alpha,
        "lower": result.lower,
        "upper": result.upper,
        "gap": result.gap,
        "unit": "nats",
        "lower_bits": nats_to_bits(result.lower),
        "upper_bits": nats_to_bits(result.upper),
        "converged": result.converged,
        "input_distribution": result.input_distribution.tolist(),
        "inputs": [_label(x) for x in channel.inputs],
        "iterations": result.iterations,
        "method": result.method,
        "n_inputs": channel.n_inputs,
        "n_outputs": channel.n_outputs,
    }
    emit(payload, as_json, _render)


COMMANDS: list[click.Command] = [capacity]
