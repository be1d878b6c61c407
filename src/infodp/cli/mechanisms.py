"""``infodp calibrate``: the noise a mechanism needs for a target (ε, δ).

gaussian → ``sigma`` (analytic, Balle & Wang 2018) and ``sigma_classic`` (Dwork & Roth 2014,
Theorem A.1; ``null`` when ε > 1, where it does not hold); laplace → ``scale`` = Δ/ε;
discrete-gaussian → ``sigma``; discrete-laplace → ``scale``; staircase → ``gamma``;
randomized-response → ``keep_probability`` (``--k`` values); exponential → ``factor``
ε/(2Δu); subsampled-gaussian → ``noise_multiplier`` for ``--steps`` steps at
``--sampling-rate``. Every answer also gives
``release``: the parameters of infodp's secure release (grid, inflated sensitivity, noise),
whose profile meets the target. The calibrations are the mechanism registry's
(:func:`infodp.mechanisms.registry.calibrate`).
"""

from __future__ import annotations

from typing import Any

import click

from infodp.cli._common import emit, json_option
from infodp.mechanisms.registry import calibrate as noise_for
from infodp.mechanisms.registry import calibrated

__all__ = ["COMMANDS", "calibrate"]


def _render(payload: dict[str, Any]) -> None:
    for key, value in payload.items():
        if isinstance(value, dict):
            click.echo(f"{key}:")
            for k, v in value.items():
                click.echo(f"  {k}: {v}")
        else:
            click.echo(f"{key}: {value}")


@click.command("calibrate")
@click.option(
    "--mechanism",
    type=click.Choice(calibrated()),
    required=True,
    help="Mechanism family to calibrate.",
)
@click.option("--epsilon", type=float, required=True, help="Target ε (nats).")
@click.option("--delta", type=float, default=0.0, show_default=True, help="Target δ.")
@click.option("--sensitivity", type=float, default=1.0, show_default=True, help="Sensitivity Δ.")
@click.option("--k", "k", type=int, default=2, show_default=True, help="RR: number of values.")
@click.option(
    "--sampling-rate", type=float, default=0.01, show_default=True, help="Poisson rate q."
)
@click.option("--steps", type=int, default=1, show_default=True, help="Composed steps.")
@json_option
def calibrate(
    mechanism: str,
    epsilon: float,
    delta: float,
    sensitivity: float,
    k: int,
    sampling_rate: float,
    steps: int,
    as_json: bool,
) -> None:
    """Noise parameters meeting a target (ε, δ); noise is always rounded up."""
    options: dict[str, Any] = {"k": k, "sampling_rate": sampling_rate, "steps": steps}
    payload = noise_for(mechanism, epsilon, delta, sensitivity, **options)
    emit(payload, as_json, _render)


COMMANDS: list[click.Command] = [calibrate]
