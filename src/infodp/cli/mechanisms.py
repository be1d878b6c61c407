"""``infodp calibrate``: the noise a mechanism needs for a target (ε, δ).

gaussian → ``sigma`` (analytic, Balle & Wang 2018) and ``sigma_classic`` (Dwork & Roth 2014,
Theorem A.1; ``null`` when ε > 1, where it does not hold); laplace → ``scale`` = Δ/ε;
discrete-gaussian → ``sigma``; discrete-laplace → ``scale``; staircase → ``gamma``;
randomized-response → ``keep_probability`` (``--k`` values); exponential → ``factor``
ε/(2Δu); subsampled-gaussian → ``noise_multiplier`` for ``--steps`` steps at
``--sampling-rate``. Every answer also gives
``release``: the parameters of infodp's secure release (grid, inflated sensitivity, noise),
whose profile meets the target.
"""

from __future__ import annotations

from typing import Any

import click

from infodp._validate import as_nonnegative, as_positive, as_positive_int
from infodp.cli._common import emit, json_option
from infodp.errors import ParameterError

__all__ = ["COMMANDS", "calibrate"]

_MECHANISMS = (
    "gaussian",
    "laplace",
    "discrete-gaussian",
    "discrete-laplace",
    "staircase",
    "randomized-response",
    "exponential",
    "subsampled-gaussian",
)


def _calibrate(
    mechanism: str,
    epsilon: float,
    delta: float,
    sensitivity: float,
    *,
    k: int = 2,
    sampling_rate: float = 0.01,
    steps: int = 1,
) -> dict[str, Any]:
    from infodp.mechanisms.base import round_up
    from infodp.mechanisms.gaussian import (
        DiscreteGaussianMechanism,
        GaussianMechanism,
        analytic_gaussian_sigma,
        classic_gaussian_sigma,
    )
    from infodp.mechanisms.laplace import DiscreteLaplaceMechanism, LaplaceMechanism

    eps = as_positive("epsilon", epsilon)
    dlt = as_nonnegative("delta", delta)
    sens = as_positive("sensitivity", sensitivity)
    out: dict[str, Any] = {
        "mechanism": mechanism,
        "epsilon": eps,
        "delta": dlt,
        "sensitivity": sens,
    }
    if mechanism in ("gaussian", "discrete-gaussian") and not 0 < dlt < 1:
        raise ParameterError("delta", delta, "in (0, 1) for a Gaussian mechanism")
    if mechanism == "gaussian":
        out["sigma"] = analytic_gaussian_sigma(eps, dlt, sens)
        out["sigma_classic"] = classic_gaussian_sigma(eps, dlt, sens) if eps <= 1 else None
        if eps > 1:
            out["note"] = "classic calibration holds only for epsilon <= 1 (Dwork & Roth A.1)"
        g = GaussianMechanism.calibrate(eps, dlt, sens)
        out["release"] = {
            "sigma": g.sigma,
            "grid": g.grid,
            "integer_sensitivity": g.integer_sensitivity,
            "delta_at_epsilon": g.profile().delta(eps),
        }
    elif mechanism == "laplace":
        # textbook Laplace scale Δ/ε (Dwork et al. 2006), rounded up so that Δ/scale ≤ ε
        out["scale"] = round_up(lambda b: sens / b <= eps, sens / eps, "scale")
        lap = LaplaceMechanism.calibrate(eps, dlt, sens)
        out["release"] = {
            "scale": lap.scale,
            "grid": lap.grid,
            "integer_sensitivity": lap.integer_sensitivity,
            "epsilon": lap.profile().pure_epsilon(),
        }
    elif mechanism == "discrete-gaussian":
        d = as_positive_int("sensitivity", sens)
        dg = DiscreteGaussianMechanism.calibrate(eps, dlt, d)
        out["sigma"] = dg.sigma
        out["release"] = {"sigma": dg.sigma, "delta_at_epsilon": dg.profile().delta(eps)}
    elif mechanism == "discrete-laplace":
        d = as_positive_int("sensitivity", sens)
        dl = DiscreteLaplaceMechanism.calibrate(eps, dlt, d)
        out["scale"] = dl.scale
        out["release"] = {"scale": dl.scale, "epsilon": dl.profile().pure_epsilon()}
    elif mechanism == "staircase":
        from infodp.mechanisms.staircase import StaircaseMechanism

        st = StaircaseMechanism.calibrate(eps, dlt, sens)
        out["gamma"] = st.gamma
        out["release"] = {
            "grid": st.grid,
            "period": st.period,
            "step": st.step,
            "epsilon": st.profile().pure_epsilon(),
        }
    elif mechanism == "randomized-response":
        from infodp.mechanisms.randomized_response import RandomizedResponse

        rr = RandomizedResponse.calibrate(eps, dlt, sens, k=as_positive_int("k", k, minimum=2))
        out["k"] = rr.k
        out["keep_probability"] = rr.keep_probability
        out["release"] = {"epsilon": rr.profile().pure_epsilon()}
    elif mechanism == "exponential":
        from infodp.mechanisms.exponential import ExponentialMechanism

        em = ExponentialMechanism.calibrate(eps, dlt, sens)
        out["factor"] = eps / (2 * sens)
        out["release"] = {"epsilon": em.profile().pure_epsilon()}
    elif mechanism == "subsampled-gaussian":
        from infodp.mechanisms.subsampled import SubsampledGaussian

        if not 0 < dlt < 1:
            raise ParameterError("delta", delta, "in (0, 1) for a Gaussian mechanism")
        n = as_positive_int("steps", steps)
        sg = SubsampledGaussian.calibrate(eps, dlt, sens, sampling_rate, n)
        out["sampling_rate"] = sg.sampling_rate
        out["steps"] = n
        out["noise_multiplier"] = sg.noise_multiplier
        out["sigma"] = sg.sigma
        out["release"] = {"epsilon_at_delta": sg.profile().repeat(n).epsilon(dlt)}
    else:  # click.Choice makes this unreachable
        raise ParameterError("mechanism", mechanism, f"one of {', '.join(_MECHANISMS)}")
    return out


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
    type=click.Choice(_MECHANISMS),
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
    payload = _calibrate(
        mechanism, epsilon, delta, sensitivity, k=k, sampling_rate=sampling_rate, steps=steps
    )
    emit(payload, as_json, _render)


COMMANDS: list[click.Command] = [calibrate]
