"""The local model: each person randomises their own value; the server estimates frequencies.

Client-side randomizers (exact samplers on the secure source, each with its
:class:`~infodp.channel.Channel` and pure-ε profile) and server-side unbiased frequency
estimators with their exact variance (Wang, Blocki, Li & Jha 2017; Erlingsson, Pihur &
Korolova 2014) and consistency post-processing (Ünsal & Önen 2023, §5 on
estimating a distribution from locally private reports, Pastore & Gastpar 2021).

>>> from infodp.local import randomizer
>>> est = randomizer("oue", 1.0, 4).simulate(100_000, rng=0)
>>> bool(abs(est.estimate - 0.25).max() < 5 * est.variance.max() ** 0.5)
True
"""

from __future__ import annotations

from typing import Any

from infodp.errors import ParameterError
from infodp.local.base import FrequencyEstimate, LocalRandomizer, project_to_simplex
from infodp.local.randomizers import (
    HadamardResponse,
    KRandomizedResponse,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    binary_randomized_response,
)
from infodp.local.rappor import Rappor

__all__ = [
    "MECHANISMS",
    "RANDOMIZERS",
    "FrequencyEstimate",
    "HadamardResponse",
    "KRandomizedResponse",
    "LocalRandomizer",
    "OptimizedLocalHashing",
    "OptimizedUnaryEncoding",
    "Rappor",
    "binary_randomized_response",
    "project_to_simplex",
    "randomizer",
]

#: The local randomizers by name, the one table :func:`randomizer` and ``infodp local`` read.
#: (Local randomizers sit a layer above :mod:`infodp.mechanisms`, so they are not rows of the
#: central-model registry, :mod:`infodp.mechanisms.registry`.)
RANDOMIZERS: dict[str, type[LocalRandomizer]] = {
    "krr": KRandomizedResponse,
    "rappor": Rappor,
    "oue": OptimizedUnaryEncoding,
    "olh": OptimizedLocalHashing,
    "hadamard": HadamardResponse,
}

#: Names accepted by :func:`randomizer` and ``infodp local``.
MECHANISMS: tuple[str, ...] = tuple(RANDOMIZERS)


def randomizer(name: str, epsilon: float, domain: int, **options: Any) -> LocalRandomizer:
    """The randomizer called ``name`` (one of :data:`MECHANISMS`) at ``epsilon`` on ``domain``.

    >>> randomizer("sue", 1.0, 4)
    Traceback (most recent call last):
        ...
    infodp.errors.ParameterError: mechanism must be one of krr, rappor, oue, olh, hadamard; got 'sue'.
    """  # noqa: E501
    if name not in RANDOMIZERS:
        raise ParameterError("mechanism", name, "one of " + ", ".join(MECHANISMS))
    return RANDOMIZERS[name](epsilon, domain, **options)  # type: ignore[call-arg]
