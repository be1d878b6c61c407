"""The mechanism flags of the CLI, read from the mechanism registry.

``infodp account``, ``explain`` and ``audit`` take a mechanism's parameters as flags
(``--scale``, ``--sigma``, …); their options, types and help lines come from
:data:`infodp.mechanisms.registry.PARAMETERS`, and a flag set becomes an accounting spec
(:mod:`infodp.accounting.spec`) in one place. The mechanism's own δ is ``--delta-mechanism``
(``--delta`` is the target δ of the report); a ``--spec`` file is read by :func:`read_spec`.

>>> mechanism_spec("laplace", scale=2.0, compositions=3)
{'mechanism': 'laplace', 'scale': 2.0, 'count': 3}
>>> flag("noise_multiplier"), flag("delta")
('--noise-multiplier', '--delta-mechanism')
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

from infodp.errors import ParameterError
from infodp.mechanisms.registry import PARAMETERS, REGISTRY

__all__ = ["dest", "flag", "mechanism_options", "mechanism_spec", "read_spec", "spec_parameters"]


def flag(key: str) -> str:
    """The CLI flag of a mechanism parameter (or of its click destination)."""
    if key in ("delta", "mech_delta"):
        return "--delta-mechanism"
    return "--" + key.replace("_", "-")


def dest(key: str) -> str:
    """The click parameter name of a mechanism parameter."""
    return "mech_delta" if key == "delta" else key


def _key(name: str) -> str:
    return "delta" if name == "mech_delta" else name


def _integer(key: str) -> bool:
    # Whole-number parameters other than a sensitivity (which is real for most mechanisms,
    # and checked to be whole for the discrete ones by mechanism_spec).
    return key != "sensitivity" and any(key in row.integers for row in REGISTRY.values())


def spec_parameters() -> tuple[str, ...]:
    """Every parameter some accounting spec takes, in :data:`PARAMETERS` order."""
    used = {p for row in REGISTRY.values() if row.has_spec for p in row.parameters}
    return tuple(p for p in PARAMETERS if p in used)


def mechanism_options(
    keys: Iterable[str], helps: dict[str, str] | None = None
) -> Callable[[Any], Any]:
    """A decorator adding one option per mechanism parameter in ``keys`` (default None each)."""
    ordered = list(keys)

    def decorate(command: Any) -> Any:
        for key in reversed(ordered):
            text = (helps or {}).get(key, PARAMETERS[key])
            kind = int if _integer(key) else float
            command = click.option(flag(key), dest(key), type=kind, default=None, help=text)(
                command
            )
        return command

    return decorate


def mechanism_spec(mechanism: str, **options: Any) -> dict[str, Any]:
    """The profile spec (:mod:`infodp.accounting.spec`) of ``--mechanism`` and its flags.

    Flags mean what they mean for ``infodp account``; ``steps``/``compositions`` give the
    count, and flags the mechanism does not take are refused (a typo must not change a claim).
    """
    row = REGISTRY.get(mechanism)
    if row is None or not row.has_spec:
        names = sorted(n for n, r in REGISTRY.items() if r.has_spec)
        raise ParameterError("--mechanism", mechanism, "one of " + ", ".join(names))
    spec: dict[str, Any] = {"mechanism": mechanism}
    for name, value in options.items():
        if value is not None and _key(name) in PARAMETERS:
            spec[_key(name)] = value
    if "sensitivity" in spec and "sensitivity" in row.integers:
        s = float(spec["sensitivity"])
        if not s.is_integer():
            raise ParameterError("--sensitivity", s, "an integer for discrete mechanisms")
        spec["sensitivity"] = int(s)
    missing = [k for k in row.required if k not in spec]
    if missing:
        raise ParameterError(f"--mechanism {mechanism} needs {', '.join(map(flag, missing))}.")
    unused = sorted(set(spec) - {"mechanism"} - set(row.parameters))
    if unused:
        raise ParameterError(
            f"--mechanism {mechanism} does not take {', '.join(map(flag, unused))}."
        )
    counts = {c for c in (options.get("steps"), options.get("compositions")) if c is not None}
    if len(counts) > 1:
        raise ParameterError("--steps/--compositions", sorted(counts), "one count (synonyms)")
    if counts:
        spec["count"] = counts.pop()
    return spec


def read_spec(path: str) -> Any:
    """The JSON of a ``--spec`` file (the format of :mod:`infodp.accounting.spec`)."""
    try:
        return json.loads(Path(path).read_text())
    except OSError as err:
        raise ParameterError("--spec", path, f"a readable file ({err.strerror})") from None
    except ValueError:
        raise ParameterError("--spec", path, "a file holding valid JSON") from None
