"""``infodp audit`` and ``infodp attack``: measure privacy from the outside.

Examples::

    infodp audit --mechanism laplace --scale 1 --sensitivity 1 --claimed-epsilon 1 \\
        --samples 1000000 --json
    infodp audit --callable mymodule:release --dataset '[0]' --neighbour '[1]' \\
        --claimed-epsilon 1 --samples 20000 --json
    infodp attack floating-point --json
    infodp attack coding --epsilon 1 --bits 8 --json

``audit`` prints ``epsilon_lower`` (a lower bound on ε holding with probability ``confidence``),
``verdict`` (``consistent`` or ``violation``), δ/KL/mutual-information lower bounds in nats and
the event that distinguishes the two datasets. A progress bar appears on a terminal only, never
with ``--json``. Exit status: 0 when the claim is consistent with the samples, 4 when the
verdict is a violation (the output is printed first), 2 for bad input.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
from collections.abc import Callable
from typing import Any

import click

from infodp._format import format_number as _fmtn
from infodp._validate import as_positive, as_positive_int, as_real
from infodp.audit.auditor import REFERENCE_MECHANISMS, audit, reference_mechanism
from infodp.cli._common import EXIT_VIOLATION, emit, json_option
from infodp.cli._mechanism_flags import flag, mechanism_options
from infodp.errors import ParameterError
from infodp.mechanisms.registry import PARAMETERS

__all__ = ["COMMANDS", "attack", "audit_command"]

# The parameters of every reference simulator, in the registry's order of parameters.
_REFERENCE_PARAMETERS = [
    p for p in PARAMETERS if any(p in params for params in REFERENCE_MECHANISMS.values())
]


def _count(name: str, text: str) -> int:
    try:
        value = float(text)
    except ValueError:
        raise ParameterError(name, text, "a positive integer (e.g. 1000000 or 1e6)") from None
    return as_positive_int(name, value, minimum=4)


def _load_callable(spec: str) -> Callable[..., Any]:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ParameterError("--callable", spec, "of the form module:function")
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ParameterError("--callable", spec, f"an importable module ({err})") from None
    finally:
        if added:
            sys.path.remove(cwd)
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise ParameterError("--callable", spec, f"a name defined in module {module_name}")
    if not callable(target):
        raise ParameterError("--callable", spec, "a callable taking the dataset")
    return target  # type: ignore[no-any-return]


def _json_arg(name: str, text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        raise ParameterError(name, text, "valid JSON (e.g. '[0, 1]')") from None


def _render_audit(p: dict[str, Any]) -> None:
    conf = p["confidence"]
    click.echo(f"mechanism: {p['mechanism']}  ({p['samples_per_side']} samples per dataset)")
    click.echo(f"datasets: {json.dumps(p['dataset'])} vs {json.dumps(p['neighbour'])}")
    click.echo(
        f"ε ≥ {_fmtn(p['epsilon_lower'], 6)} with {conf:.0%} confidence  (event: {p['event']})"
    )
    if p["delta_lower"] is not None:
        click.echo(f"δ({_fmtn(p['delta_epsilon'], 6)}) ≥ {_fmtn(p['delta_lower'], 6)}")
    click.echo(f"KL divergence ≥ {_fmtn(p['kl_lower_nats'], 6)} nats")
    click.echo(
        f"information leaked (uniform secret bit) ≥ {_fmtn(p['mi_lower_nats'], 6)} nats "
        f"= {_fmtn(p['mi_lower_bits'], 6)} bits"
    )
    for check in p["checks"]:
        mark = "VIOLATED" if check["violated"] else "ok"
        click.echo(
            f"  {check['name']}: lower {_fmtn(check['lower'], 6)} vs claim "
            f"{_fmtn(check['claimed'], 6)}  {mark}"
        )
    click.echo(f"verdict: {p['verdict']}")


@click.command("audit")
@click.option(
    "--mechanism",
    type=click.Choice(sorted(REFERENCE_MECHANISMS)),
    help="A reference mechanism on a sum query (numpy simulator).",
)
@click.option("--callable", "callable_spec", help="module:function taking the dataset (JSON).")
@click.option("--dataset", help="JSON dataset D (default for --mechanism: [0]).")
@click.option("--neighbour", help="JSON neighbouring dataset D' (default: [sensitivity]).")
@mechanism_options(
    _REFERENCE_PARAMETERS,
    {"sensitivity": "Sensitivity of the sum query.", "epsilon": "The mechanism's own ε."},
)
@click.option("--claimed-epsilon", type=float, help="Claimed ε (default: the mechanism's).")
@click.option("--claimed-delta", type=float, default=0.0, show_default=True, help="The claimed δ.")
@click.option("--delta-epsilon", type=float, help="ε at which to bound δ (default: claimed ε).")
@click.option("--samples", default="1000000", show_default=True, help="Samples per dataset.")
@click.option(
    "--confidence",
    type=float,
    default=0.95,
    show_default=True,
    help="Probability with which the lower bounds hold.",
)
@click.option("--seed", type=int, help="Seed of the simulation (reproducible audits).")
@json_option
def audit_command(
    mechanism: str | None,
    callable_spec: str | None,
    dataset: str | None,
    neighbour: str | None,
    claimed_epsilon: float | None,
    claimed_delta: float,
    delta_epsilon: float | None,
    samples: str,
    confidence: float,
    seed: int | None,
    as_json: bool,
    **flags: float | None,
) -> None:
    """Audit a mechanism as a black box: lower bounds on ε, δ and information; a verdict."""
    if (mechanism is None) == (callable_spec is None):
        raise ParameterError("--mechanism/--callable", None, "exactly one of the two")
    n = _count("--samples", samples)
    d0 = _json_arg("--dataset", dataset)
    d1 = _json_arg("--neighbour", neighbour)
    profile = None
    if mechanism is not None:
        params = {k: v for k, v in flags.items() if v is not None}
        mech, own, ref0, ref1 = reference_mechanism(mechanism, **params)
        target: Any = mech
        d0 = ref0 if d0 is None else d0
        d1 = ref1 if d1 is None else d1
        if claimed_epsilon is None:
            profile = own
    else:
        given = [flag(k) for k, v in flags.items() if v is not None]
        if given:
            raise ParameterError(f"--callable does not take {', '.join(given)}.")
        if d0 is None or d1 is None:
            raise ParameterError("--dataset/--neighbour", None, "both given with --callable")
        target = _load_callable(str(callable_spec))
    if claimed_epsilon is not None:
        as_real("--claimed-epsilon", claimed_epsilon, allow_inf=True)
    result = audit(
        target,
        d0,
        d1,
        samples=n,
        confidence=confidence,
        claimed_epsilon=claimed_epsilon,
        claimed_delta=claimed_delta,
        claimed_profile=profile,
        delta_epsilon=delta_epsilon,
        rng=seed,
        progress=not as_json,
    )
    payload = result.to_dict()
    emit(payload, as_json, _render_audit)
    if payload.get("verdict") == "violation":
        # A CI job auditing a mechanism must fail when the claim is refuted.
        raise click.exceptions.Exit(EXIT_VIOLATION)


# ---- attacks ----------------------------------------------------------------------------------


def _render_attack(p: dict[str, Any]) -> None:
    click.echo(f"attack: {p['attack']}")
    for key, value in p.items():
        if key in ("attack", "summary"):
            continue
        if isinstance(value, float):
            click.echo(f"  {key}: {_fmtn(value, 6)}")
        else:
            click.echo(f"  {key}: {value}")
    click.echo(p.get("summary", ""))


ATTACKS = ("floating-point", "averaging", "coding", "correlated", "epsilon-delta", "insertion")


@click.command("attack")
@click.argument("name", type=click.Choice(ATTACKS))
@click.option("--epsilon", type=float, help="ε of each query (attack-specific default).")
@click.option("--delta", type=float, help="δ of the (ε, δ) mechanism (epsilon-delta).")
@click.option("--queries", type=int, help="Number of queries (floating-point, averaging).")
@click.option("--bits", type=int, help="Secret bits (coding) / row bits (epsilon-delta).")
@click.option("--rows", type=int, help="Rows in the database (correlated).")
@click.option("--trials", type=int, help="Independent repetitions of the attack.")
@click.option("--noise", type=click.Choice(["laplace", "gaussian"]), help="Noise (insertion).")
@click.option("--false-alarm", type=float, help="Detector false-alarm rate a (insertion).")
@click.option("--detection", type=float, help="Largest detection probability b (insertion).")
@click.option("--seed", type=int, help="Seed (simulation only).")
@json_option
def attack(
    name: str,
    epsilon: float | None,
    delta: float | None,
    queries: int | None,
    bits: int | None,
    rows: int | None,
    trials: int | None,
    noise: str | None,
    false_alarm: float | None,
    detection: float | None,
    seed: int | None,
    as_json: bool,
) -> None:
    """Run one of the attacks from the sources and compare its success with theory."""
    from infodp.audit import attacks

    kwargs: dict[str, Any] = {"rng": seed}
    if epsilon is not None:
        kwargs["epsilon"] = as_positive("--epsilon", epsilon)
    if trials is not None:
        kwargs["trials"] = as_positive_int("--trials", trials)
    options = {
        "delta": delta,
        "queries": queries,
        "bits": bits,
        "rows": rows,
        "noise": noise,
        "false_alarm": false_alarm,
        "detection": detection,
    }
    accepted = {
        "floating-point": ("queries",),
        "averaging": ("queries",),
        "coding": ("bits",),
        "correlated": ("rows",),
        "epsilon-delta": ("delta", "bits"),
        "insertion": ("delta", "noise", "false_alarm", "detection"),
    }[name]
    for key, value in options.items():
        if value is None:
            continue
        if key not in accepted:
            raise ParameterError(f"attack {name} does not take --{key.replace('_', '-')}.")
        kwargs[key] = value
    runners: dict[str, Callable[..., Any]] = {
        "floating-point": attacks.floating_point_attack,
        "averaging": attacks.averaging_attack,
        "coding": attacks.coding_attack,
        "correlated": attacks.correlated_attack,
        "epsilon-delta": attacks.epsilon_delta_attack,
        "insertion": attacks.insertion_attack,
    }
    result = runners[name](**kwargs)
    payload = {"attack": name, **result.to_dict()}
    for key, value in list(payload.items()):
        if isinstance(value, float) and math.isnan(value):
            payload[key] = None
    emit(payload, as_json, _render_attack)


COMMANDS: list[click.Command] = [audit_command, attack]
