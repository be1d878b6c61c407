"""``infodp account``: certified ε of a mechanism run many times, or of a spec file.

Examples::

    infodp account --mechanism subsampled-gaussian --noise-multiplier 1.0 \\
        --sampling-rate 0.01 --steps 10000 --delta 1e-5 --json
    infodp account --mechanism laplace --scale 10 --sensitivity 1 --compositions 1000 \\
        --delta 1e-6
    infodp account --mechanism gaussian --sigma 5 --compositions 10 --delta 1e-5
    infodp account --spec sequence.json --delta 1e-5 --json
    infodp account --schedule schedule.csv --delta 1e-5 --json

The spec JSON format is documented in :mod:`infodp.accounting.spec`; a schedule is a CSV file
with header ``steps,noise_multiplier,sampling_rate``, one row per run of identical
Poisson-subsampled Gaussian steps (:mod:`infodp.accounting.schedule`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

from infodp._format import format_number as _fmtn
from infodp._validate import as_positive, as_probability
from infodp.accounting import conversions, rdp
from infodp.accounting.profile import DEFAULT_INTERVAL, PrivacyProfile
from infodp.accounting.spec import profile_from_spec
from infodp.cli._common import emit, json_option
from infodp.cli._mechanism_flags import (
    mechanism_options,
    mechanism_spec,
    read_spec,
    spec_parameters,
)
from infodp.errors import ParameterError
from infodp.mechanisms.registry import REGISTRY
from infodp.units import nats_to_bits

__all__ = ["COMMANDS", "account"]


def _build(
    mechanism: str | None, spec_file: str | None, options: dict[str, Any]
) -> tuple[PrivacyProfile, dict[str, Any]]:
    if (mechanism is None) == (spec_file is None):
        raise ParameterError("--mechanism/--spec", None, "exactly one of --mechanism or --spec")
    if spec_file is not None:
        spec = read_spec(spec_file)
        return profile_from_spec(spec, where="--spec"), spec
    spec = mechanism_spec(str(mechanism), **options)
    if options.get("group") is not None:
        spec["group"] = options["group"]
    return profile_from_spec(spec, where="options"), spec


def _finite_or_none(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x


@click.command("account")
@click.option(
    "--mechanism",
    type=click.Choice(sorted(name for name, row in REGISTRY.items() if row.has_spec)),
    help="Mechanism to account (or use --spec).",
)
@click.option("--spec", "spec_file", type=click.Path(dir_okay=False), help="JSON spec file.")
@click.option(
    "--schedule",
    "schedule_file",
    type=click.Path(dir_okay=False),
    help="CSV of DP-SGD runs: steps,noise_multiplier,sampling_rate (Poisson, add/remove).",
)
@mechanism_options(spec_parameters())
@click.option("--steps", type=int, help="Number of runs (synonym of --compositions).")
@click.option("--compositions", type=int, help="Number of runs (synonym of --steps).")
@click.option("--group", type=int, help="Group size (group privacy for k individuals).")
@click.option("--delta", type=float, default=1e-5, show_default=True, help="Target δ.")
@click.option(
    "--interval",
    type=float,
    default=DEFAULT_INTERVAL,
    show_default=True,
    help="PLD discretisation interval (nats).",
)
@json_option
def account(
    mechanism: str | None,
    spec_file: str | None,
    delta: float,
    interval: float,
    as_json: bool,
    **options: Any,
) -> None:
    """Certified ε(δ) of a mechanism composed many times (tight PLD, RDP, pure ε).

    "epsilon" is the certified tight bound (minimum of the PLD, RDP and pure-ε bounds, each
    an upper bound); "epsilon_rdp" is the RDP conversion alone (Canonne, Kamath & Steinke
    2020), for comparison with RDP accountants.
    """
    d = as_probability("--delta", delta)
    h = as_positive("--interval", interval)
    schedule_file = options.pop("schedule_file", None)
    if schedule_file is not None:
        if mechanism is not None or spec_file is not None:
            raise ParameterError("--schedule", schedule_file, "used without --mechanism/--spec")
        emit(_schedule_payload(schedule_file, d, h), as_json, _render_schedule)
        return
    profile, spec = _build(mechanism, spec_file, options)
    eps_pld = profile.pld(h).epsilon(d)
    eps_rdp = conversions.rdp_to_epsilon(profile.rdp(rdp.DEFAULT_ORDERS), rdp.DEFAULT_ORDERS, d)
    eps_pure = profile.pure_epsilon()
    epsilon = max(0.0, min(eps_pld, eps_rdp, eps_pure))
    info = profile.information(1.0)
    payload: dict[str, Any] = {
        "spec": spec,
        "delta": d,
        "epsilon": epsilon,
        "epsilon_pld": eps_pld,
        "epsilon_rdp": eps_rdp,
        "epsilon_pure": eps_pure,
        "zcdp_rho": profile.zcdp_rho(),
        "information_nats": info,
        "information_bits": nats_to_bits(info),
        "interval": h,
        "note": "every epsilon is a certified upper bound; epsilon is the smallest of them",
    }

    def render(p: dict[str, Any]) -> None:
        click.echo(
            f"ε = {_fmtn(p['epsilon'], 6)} at δ = {_fmtn(p['delta'])} (certified upper bound)"
        )
        click.echo(f"  PLD (grid {_fmtn(p['interval'])} nats): ε = {_fmtn(p['epsilon_pld'], 6)}")
        click.echo(f"  RDP conversion:            ε = {_fmtn(p['epsilon_rdp'], 6)}")
        click.echo(f"  pure ε:                    {_fmtn(p['epsilon_pure'], 6)}")
        if p["zcdp_rho"] is not None:
            click.echo(f"  zCDP ρ:                    {_fmtn(p['zcdp_rho'], 6)}")
        click.echo(
            f"  information (level α=1) ≤ {_fmtn(p['information_nats'], 6)} nats"
            f" = {_fmtn(p['information_bits'], 6)} bits per individual"
        )

    emit(payload, as_json, render)


def _read_text(path: str, flag: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as err:
        raise ParameterError(flag, path, f"a readable file ({err.strerror})") from None


def _schedule_payload(path: str, delta: float, interval: float) -> dict[str, Any]:
    from infodp.accounting.schedule import (
        DEFAULT_RESOLUTION,
        read_schedule_csv,
        round_steps,
        schedule_epsilon,
    )

    runs = read_schedule_csv(_read_text(path, "--schedule"), where="--schedule")
    return {
        "schedule": path,
        "runs": len(runs),
        "steps": sum(k for _, _, k in runs),
        "groups": len(round_steps(runs)),
        "resolution": DEFAULT_RESOLUTION,
        "delta": delta,
        "epsilon": schedule_epsilon(runs, delta, interval=interval),
        "interval": interval,
        "sampling": "poisson",
        "neighbouring_relation": "add_remove",
        "note": "certified upper bound: sigma rounded down and q rounded up onto a grid of "
        "relative width 'resolution' before composing",
    }


def _render_schedule(p: dict[str, Any]) -> None:
    click.echo(
        f"ε = {_fmtn(p['epsilon'], 6)} at δ = {_fmtn(p['delta'])} (certified upper bound; "
        f"Poisson sampling, add/remove one example)"
    )
    click.echo(f"  {p['steps']} steps in {p['runs']} runs, composed as {p['groups']} groups")


COMMANDS: list[click.Command] = [account]
