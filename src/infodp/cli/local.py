"""``infodp local``: locally private frequency estimation (simulate, or estimate from reports).

Examples::

    infodp local simulate --mechanism oue --epsilon 1 --domain 8 --users 100000 --json
    infodp local simulate --mechanism krr --epsilon 2 --domain 3 --users 10000 \\
        --distribution 0.5,0.3,0.2 --seed 1 --json
    infodp local estimate --mechanism krr --epsilon 1 --domain 4 --reports reports.txt --json

``--reports`` holds one report per line: an item index (krr), a column index (hadamard), a bit
string such as ``0101`` (oue, rappor) or ``seed,bucket`` (olh). ``simulate`` draws users from
``--distribution`` (uniform by default) with a seeded numpy simulator (not private) and prints
``estimate``, ``variance`` (exact, at the true frequencies), ``consistent`` and
``capacity_nats`` (per-report capacity upper bounds at α = 1, 2, ∞; ``null`` where the
channel is too large to build).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from infodp.cli._common import emit, json_option, parse_floats
from infodp.errors import ParameterError
from infodp.local import MECHANISMS

__all__ = ["COMMANDS", "local"]


def _build(
    mechanism: str, epsilon: float, domain: int, bits: int | None, hashes: int | None
) -> Any:
    from infodp.local import randomizer

    options: dict[str, Any] = {}
    if bits is not None or hashes is not None:
        if mechanism != "rappor":
            raise ParameterError("--bits/--hashes are only for --mechanism rappor.")
        options = {"bits": bits, "hashes": 1 if hashes is None else hashes}
    return randomizer(mechanism, epsilon, domain, **options)


def _capacities(mech: Any) -> dict[str, float | None]:
    try:
        return dict(mech.capacities())
    except ParameterError:
        return {"1": None, "2": None, "inf": mech.channel_epsilon_bound()}


def _render(p: dict[str, Any]) -> None:
    click.echo(f"mechanism {p['mechanism']} at epsilon {p['epsilon']} ({p['users']} users)")
    for v, (e, var, c) in enumerate(
        zip(p["estimate"], p["variance"], p["consistent"], strict=True)
    ):
        click.echo(f"  item {v}: {e:.6f} ± {var**0.5:.6f}  (consistent {c:.6f})")
    caps = p.get("capacity_nats")
    if caps:
        click.echo(f"per-report capacity (nats): {caps}")


_common = [
    click.option("--mechanism", required=True, help="|".join(MECHANISMS)),
    click.option("--epsilon", type=float, required=True, help="ε of each report (> 0)."),
    click.option("--domain", type=int, required=True, help="Number of items k (>= 2)."),
    click.option("--bits", type=int, help="RAPPOR Bloom filter bits (default: one per item)."),
    click.option("--hashes", type=int, help="RAPPOR hash functions (default 1)."),
]


def _with_common(f: Any) -> Any:
    for option in reversed(_common):
        f = option(f)
    return f


@click.group("local")
def local() -> None:
    """Local differential privacy: client-side randomizers and frequency estimation."""


@local.command("simulate")
@_with_common
@click.option("--users", type=int, required=True, help="Number of users N.")
@click.option("--distribution", help="Comma-separated item frequencies (default uniform).")
@click.option("--seed", type=int, help="Seed of the simulation (not private).")
@json_option
def simulate(
    mechanism: str,
    epsilon: float,
    domain: int,
    bits: int | None,
    hashes: int | None,
    users: int,
    distribution: str | None,
    seed: int | None,
    as_json: bool,
) -> None:
    """Simulate N users reporting through a randomizer and estimate the frequencies."""
    mech = _build(mechanism, epsilon, domain, bits, hashes)
    dist = None if distribution is None else parse_floats("--distribution", distribution)
    est = mech.simulate(users, dist, rng=seed)
    payload = {
        "mechanism": mechanism,
        "epsilon": mech.epsilon,
        "domain": mech.domain,
        **est.to_dict(),
        "capacity_nats": _capacities(mech),
    }
    emit(payload, as_json, _render)


def _parse_report(mechanism: str, line: str, number: int) -> Any:
    text = line.strip()
    try:
        if mechanism in ("krr", "hadamard"):
            return int(text)
        if mechanism == "olh":
            seed, bucket = text.split(",")
            return (int(seed), int(bucket))
        return tuple(int(ch) for ch in text.replace(",", "").replace(" ", ""))
    except ValueError:
        raise ParameterError(
            "--reports", f"line {number}", f"a report in the {mechanism} format"
        ) from None


@local.command("estimate")
@_with_common
@click.option("--reports", type=click.Path(dir_okay=False), required=True, help="Reports file.")
@json_option
def estimate(
    mechanism: str,
    epsilon: float,
    domain: int,
    bits: int | None,
    hashes: int | None,
    reports: str,
    as_json: bool,
) -> None:
    """Estimate item frequencies from collected reports (post-processing: no extra cost)."""
    mech = _build(mechanism, epsilon, domain, bits, hashes)
    try:
        lines = Path(reports).read_text(encoding="utf-8").splitlines()
    except OSError:
        raise ParameterError("--reports", reports, "a readable file") from None
    parsed = [_parse_report(mechanism, line, i + 1) for i, line in enumerate(lines) if line.strip()]
    est = mech.estimate(parsed)
    payload = {"mechanism": mechanism, "epsilon": mech.epsilon, "domain": mech.domain}
    payload.update(est.to_dict())
    emit(payload, as_json, _render)


COMMANDS: list[click.Command] = [local]
