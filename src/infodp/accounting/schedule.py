"""Heterogeneous DP-SGD schedules: many distinct (σ, q) steps certified by pessimistic grouping.

Noise decay, growing batches or adaptive clipping give every step its own noise multiplier σ
and sampling rate q; composing one distinct PLD per step costs a PLD and an FFT each. Here
every step is first moved to a step that leaks at least as much: σ rounded *down* and q
rounded *up* onto geometric grids of ratio ``1 + resolution``. The Poisson-subsampled
Gaussian's privacy curve is monotone in both — a smaller σ dominates by post-processing
(adding independent noise; Blackwell 1953), and the subsampled curve q·δ(log(1 + (e^ε − 1)/q))
(Balle, Barthe & Gaboardi 2018, Theorem 9; Zhu, Dong & Wang 2022, Theorem 11) grows with q
and with the base curve — so each rounded step's pair dominates the true one, and so does
their composition (Zhu, Dong & Wang 2022, Theorem 10). Identical rounded steps are then one
group, composed by one FFT power each (:func:`infodp.accounting.compose`). The result is a
certified upper bound; its excess over the exact schedule shrinks with ``resolution``
(about ``resolution`` relatively in ε).

>>> runs = [(1.0 + i / 1000, 0.01, 10) for i in range(100)]     # 100 distinct σ, 10 steps each
>>> p = schedule_profile(runs)
>>> exact = compose(*(subsampled_gaussian_profile(s, q).repeat(k) for s, q, k in runs))
>>> 1.0 <= p.epsilon(1e-5) / exact.epsilon(1e-5) < 1.001
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from infodp._validate import as_positive, as_positive_int, as_probability
from infodp.accounting.profile import (
    DEFAULT_INTERVAL,
    PrivacyProfile,
    compose,
    pure_dp_profile,
    subsampled_gaussian_profile,
)
from infodp.errors import ParameterError

__all__ = [
    "DEFAULT_RESOLUTION",
    "EXACT_GROUPS",
    "read_schedule_csv",
    "round_steps",
    "schedule_epsilon",
    "schedule_profile",
]

DEFAULT_RESOLUTION = 5e-4
"""Relative width of the σ and q grid cells (ε grows by about this much relatively)."""

EXACT_GROUPS = 64
"""Schedules with at most this many distinct (σ, q) are composed exactly, without rounding."""


def _down(x: float, log_ratio: float) -> float:
    # The grid point at or below x; the product is checked so rounding never lands above x.
    g = math.exp(math.floor(math.log(x) / log_ratio) * log_ratio)
    while g > x:
        g = math.nextafter(g, 0.0)
    return g


def _up(x: float, log_ratio: float, cap: float = 1.0) -> float:
    g = math.exp(math.ceil(math.log(x) / log_ratio) * log_ratio)
    while g < x:
        g = math.nextafter(g, math.inf)
    return min(g, cap)


def round_steps(
    runs: Iterable[tuple[float, float, int]],
    resolution: float = DEFAULT_RESOLUTION,
    *,
    optimistic: bool = False,
) -> dict[tuple[float, float], int]:
    """(σ rounded down, q rounded up) → number of steps, for runs of (σ, q, steps).

    At most :data:`EXACT_GROUPS` distinct steps are kept as they are. ``optimistic=True``
    rounds the other way (σ up, q down): a *lower* bound on the schedule's curve, used only to
    measure how much the pessimistic rounding adds (never to certify).

    >>> runs = [(1.0 + i * 1e-5, 0.01, 1) for i in range(100)]
    >>> [(round(s, 4), k) for (s, q), k in round_steps(runs, resolution=1e-3).items()]
    [(1.0, 100)]
    """
    r = as_positive("resolution", resolution)
    if r >= 1:
        raise ParameterError("resolution", resolution, "a relative cell width in (0, 1)")
    log_ratio = math.log1p(r)
    exact = _distinct(runs)
    if len(exact) <= EXACT_GROUPS:
        return exact
    groups: dict[tuple[float, float], int] = {}
    for (s, rate), k in exact.items():
        if optimistic:
            key = (_up(s, log_ratio, cap=math.inf), max(_down(rate, log_ratio), 1e-300))
        else:
            key = (_down(s, log_ratio), _up(rate, log_ratio))
        groups[key] = groups.get(key, 0) + k
    return groups


def _distinct(runs: Iterable[tuple[float, float, int]]) -> dict[tuple[float, float], int]:
    groups: dict[tuple[float, float], int] = {}
    for i, run in enumerate(runs):
        try:
            sigma, q, steps = run
        except (TypeError, ValueError):
            raise ParameterError(
                f"runs[{i}]", run, "a (noise_multiplier, sampling_rate, steps) triple"
            ) from None
        s = as_positive(f"runs[{i}].noise_multiplier", sigma)
        rate = as_probability(f"runs[{i}].sampling_rate", q)
        k = as_positive_int(f"runs[{i}].steps", steps, minimum=0)
        if k == 0 or rate == 0.0:
            continue
        groups[(s, rate)] = groups.get((s, rate), 0) + k
    return groups


def schedule_profile(
    runs: Iterable[tuple[float, float, int]],
    resolution: float = DEFAULT_RESOLUTION,
    *,
    optimistic: bool = False,
) -> PrivacyProfile:
    """Certified profile of a schedule of (noise multiplier, sampling rate, steps) runs.

    Poisson sampling, add/remove-one neighbours (as Opacus and dp-accounting).
    ``optimistic=True`` is the lower bracket of :func:`round_steps` (not a certificate).

    >>> schedule_profile([(1.0, 0.01, 100), (1.0, 0.0, 5)]) == subsampled_gaussian_profile(
    ...     1.0, 0.01).repeat(100)
    True
    """
    groups = round_steps(runs, resolution, optimistic=optimistic)
    if not groups:
        return pure_dp_profile(0.0)
    parts = [
        subsampled_gaussian_profile(s, q).repeat(k) if k > 1 else subsampled_gaussian_profile(s, q)
        for (s, q), k in sorted(groups.items())
    ]
    return compose(*parts)


def read_schedule_csv(text: str, *, where: str = "schedule") -> list[tuple[float, float, int]]:
    """Runs from CSV text with header ``steps,noise_multiplier,sampling_rate`` (any order).

    >>> read_schedule_csv("steps,noise_multiplier,sampling_rate\\n100,1.1,0.01\\n")
    [(1.1, 0.01, 100)]
    """
    import csv
    import io

    reader = csv.DictReader(io.StringIO(text))
    need = {"steps", "noise_multiplier", "sampling_rate"}
    fields = set(reader.fieldnames or ())
    if fields != need:
        raise ParameterError(
            f"{where} header", sorted(fields), "exactly steps,noise_multiplier,sampling_rate"
        )
    runs: list[tuple[float, float, int]] = []
    for line, row in enumerate(reader, start=2):
        runs.append(_row(row, f"{where} line {line}"))
    if not runs:
        raise ParameterError(where, "no rows", "at least one run of steps")
    return runs


def _row(row: dict[str, Any], where: str) -> tuple[float, float, int]:
    try:
        steps = int(row["steps"])
        sigma = float(row["noise_multiplier"])
        q = float(row["sampling_rate"])
    except (TypeError, ValueError):
        raise ParameterError(
            where, "<row>", "steps (integer), noise_multiplier, sampling_rate"
        ) from None
    return (
        as_positive(f"{where} noise_multiplier", sigma),
        as_probability(f"{where} sampling_rate", q),
        as_positive_int(f"{where} steps", steps, minimum=0),
    )


def schedule_epsilon(
    runs: Iterable[tuple[float, float, int]],
    delta: float,
    *,
    resolution: float = DEFAULT_RESOLUTION,
    interval: float = DEFAULT_INTERVAL,
) -> float:
    """Certified ε of a schedule at ``delta``: the PLD of the grouped steps on one grid.

    Up to :data:`EXACT_GROUPS` distinct steps also take the RDP bound; beyond, tabulating
    thousands of RDP curves would cost more than the PLD and the PLD is the tighter bound.

    >>> round(schedule_epsilon([(1.0, 0.01, 1000)], 1e-5), 3)
    1.828
    """
    runs = list(runs)
    groups = round_steps(runs, resolution)
    profile = schedule_profile(runs, resolution)
    return profile.epsilon(delta, interval=interval, with_rdp=len(groups) <= EXACT_GROUPS)
