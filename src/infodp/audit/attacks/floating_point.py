"""Mironov's floating-point attack on textbook Laplace sampling.

Mironov (2012), "On significance of the least significant bits for differential privacy"
(CCS 2012): the textbook sampler ``x + s·(−b·ln U)`` (U uniform on the 2^53-point grid
that ``random()`` produces, s a random sign) evaluated in doubles reaches only a *porous*
subset of the doubles, and that subset depends on the true value x. An attacker who sees an
output y simply checks whether y is reachable from x and from x': an unreachable input is ruled
out with certainty, which no ε-DP mechanism allows. "A few queries" (Mironov, abstract) rule
out the wrong input almost surely.

infodp's release path (:class:`~infodp.mechanisms.laplace.LaplaceMechanism`) has nothing to
find: it snaps the value to a power-of-two grid and adds *exact* discrete Laplace noise
(Canonne, Kamath & Steinke 2020, Algorithm 2, in :mod:`infodp.mechanisms.sampling`), so every
grid point is reachable from every input and the attacker can only guess (success ≈ ½).

>>> r = floating_point_attack(epsilon=0.1, queries=5, trials=200, rng=0)
>>> r.naive_success > r.dp_ceiling > 0.5, abs(r.infodp_success - 0.5) < 0.15
(True, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp._jsonable import json_key
from infodp._validate import as_positive, as_positive_int, as_real
from infodp.audit.attacks._result import AttackResult
from infodp.audit.estimators import clopper_pearson
from infodp.mechanisms.sampling import RandomSource, as_generator, require_secure_source

__all__ = [
    "FloatingPointResult",
    "floating_point_attack",
    "naive_laplace",
    "reachable_from",
    "snapped_laplace_release",
]

ArrayF = npt.NDArray[np.float64]
_ULP_GRID = 2.0**-53  # numpy's random() and the textbook U: multiples of 2^-53
_MAX_WINDOW = 256  # beyond this many candidate U values we call the output reachable


def naive_laplace(value: float, scale: float, size: int, rng: Any = None) -> ArrayF:
    """The *textbook, insecure* floating-point Laplace sampler (for the attack only).

    ``value + s·(−scale·ln U)``, U = k·2^-53 with k uniform in [1, 2^53), s = ±1: the inverse
    CDF method of Dwork & Roth's Laplace mechanism as most libraries wrote it before 2012.
    NOT PRIVATE (that is the point of this module).

    >>> naive_laplace(0.0, 1.0, 3, rng=0).shape
    (3,)
    """
    x = as_real("value", value)
    b = as_positive("scale", scale)
    n = as_positive_int("size", size, minimum=0)
    gen = as_generator(rng)
    k = gen.integers(1, 2**53, size=n)
    sign = gen.integers(0, 2, size=n) * 2 - 1
    return np.asarray(x + sign * (-b * np.log(k * _ULP_GRID)), dtype=np.float64)


def reachable_from(outputs: Any, value: float, scale: float) -> npt.NDArray[np.bool_]:
    """Whether each output can be produced by :func:`naive_laplace` from ``value`` (exact test).

    Inverts the sampler: the candidate grid points k near ``2^53·exp(−|y − x|/b)`` (the whole
    range whose noise could round to y, plus a margin) are pushed forward through the very
    same floating-point operations and compared with y bit for bit (Mironov 2012). When
    more than 256 candidates would be needed the output is declared reachable (never a false
    "unreachable": the attacker only rules out what is certainly impossible).

    >>> y = naive_laplace(0.0, 1.0, 1000, rng=1)
    >>> bool(reachable_from(y, 0.0, 1.0).all())
    True
    """
    y = np.asarray(outputs, dtype=np.float64)
    x = as_real("value", value)
    b = as_positive("scale", scale)
    mag = np.abs(y - x)
    with np.errstate(over="ignore", under="ignore"):
        kstar = np.floor(np.exp(-mag / b) / _ULP_GRID)
    # Noise values that round to y span about ulp(y) (+ ulp of the subtraction); the grid
    # points mapping there number about ulp·k/b.
    ulp = np.spacing(np.abs(y)) + np.spacing(mag)
    need = np.ceil(ulp * np.maximum(kstar, 1.0) / b) + 3.0
    window = int(min(_MAX_WINDOW, float(np.max(need)) if y.size else 0.0))
    ok = need > _MAX_WINDOW
    k0 = kstar.astype(np.int64)
    for d in range(-window, window + 1):
        k = np.clip(k0 + d, 1, 2**53 - 1)
        noise = -b * np.log(k * _ULP_GRID)
        ok |= (x + noise == y) | (x - noise == y)
    return ok


def snapped_laplace_release(
    value: float, scale: float, source: RandomSource | None = None
) -> float:
    """One release of infodp's :class:`~infodp.mechanisms.laplace.LaplaceMechanism`
    (sensitivity 1): the value snapped to the grid 2^-10, plus exact discrete Laplace noise
    (CKS 2020) from a cryptographic source. Every output is a grid multiple, whatever the input.

    >>> y = snapped_laplace_release(3.0, 1.0)
    >>> (y / 2.0**-10).is_integer()
    True
    """
    from infodp.mechanisms.laplace import LaplaceMechanism

    return float(
        LaplaceMechanism(as_positive("scale", scale), 1.0).release(
            as_real("value", value), source=require_secure_source(source)
        )
    )


@dataclass(frozen=True)
class FloatingPointResult(AttackResult):
    """Outcome of the floating-point attack game (success rates are fractions of trials)."""

    epsilon: float = field(metadata=json_key("epsilon_per_query"))
    queries: int
    trials: int
    naive_success: float
    naive_success_lower: float = field(metadata=json_key("naive_success_lower_95"))
    naive_ruled_out: float = field(metadata=json_key("naive_fraction_ruled_out"))
    infodp_success: float
    infodp_success_upper: float = field(metadata=json_key("infodp_success_upper_95"))
    infodp_ruled_out: float = field(metadata=json_key("infodp_fraction_ruled_out"))
    infodp_trials: int
    dp_ceiling: float

    def _summary(self) -> str:
        return (
            f"naive float Laplace: the attacker wins {self.naive_success:.1%} of games "
            f"(an ε-DP mechanism allows at most {self.dp_ceiling:.1%}); infodp's "
            f"release: {self.infodp_success:.1%} (chance is 50%)."
        )


def floating_point_attack(
    epsilon: float = 0.1,
    queries: int = 10,
    trials: int = 2000,
    *,
    infodp_trials: int | None = None,
    rng: Any = None,
    source: RandomSource | None = None,
) -> FloatingPointResult:
    """Play the distinguishing game: secret x ∈ {0, 1} (sensitivity 1), ``queries`` releases
    with Laplace scale 1/ε each; the attacker rules out inputs from which an output is
    unreachable and guesses at random if both (or neither) remain.

    ``dp_ceiling`` is the best success any (queries·ε)-DP mechanism allows with a uniform
    secret: e^{kε}/(1 + e^{kε}) (Kairouz, Oh & Viswanath 2015, Thm 2.1; Dwork & Roth's (2014)
    distinguishing game). Returns success rates for the naive sampler and for infodp's release
    path (``infodp_trials`` games, default ``min(trials, 500)``; ``source`` for its exact noise).
    """
    eps = as_positive("epsilon", epsilon)
    q = as_positive_int("queries", queries)
    t = as_positive_int("trials", trials)
    ti = as_positive_int("infodp_trials", infodp_trials or min(t, 500))
    gen = as_generator(rng)
    scale = 1.0 / eps
    total = q * eps
    ceiling = 1.0 / (1.0 + math.exp(-total)) if total < 700 else 1.0

    def play(samples: ArrayF, secret: npt.NDArray[np.int64], test: Any) -> tuple[int, int]:
        ok0 = test(samples, 0.0).all(axis=1)
        ok1 = test(samples, 1.0).all(axis=1)
        coin = gen.integers(0, 2, size=len(secret))
        guess = np.where(ok0 & ~ok1, 0, np.where(ok1 & ~ok0, 1, coin))
        ruled = int(np.count_nonzero(ok0 != ok1))
        return int(np.count_nonzero(guess == secret)), ruled

    secret = gen.integers(0, 2, size=t)
    naive = np.stack([naive_laplace(float(s), scale, q, gen) for s in secret])
    wins, ruled = play(
        naive, secret, lambda y, v: reachable_from(y.reshape(-1), v, scale).reshape(y.shape)
    )

    src = require_secure_source(source)
    secret_i = gen.integers(0, 2, size=ti)
    released = np.asarray(
        [[snapped_laplace_release(float(s), scale, src) for _ in range(q)] for s in secret_i]
    )
    grid = 2.0**-10  # LaplaceMechanism's default grid for sensitivity 1

    def on_grid(y: ArrayF, v: float) -> npt.NDArray[np.bool_]:
        # The release path's support is the whole grid, from either input.
        return np.asarray(np.floor(y / grid) == y / grid)

    wins_i, ruled_i = play(released, secret_i, on_grid)
    return FloatingPointResult(
        epsilon=eps,
        queries=q,
        trials=t,
        naive_success=wins / t,
        naive_success_lower=clopper_pearson(wins, t, side="lower")[0],
        naive_ruled_out=ruled / t,
        infodp_success=wins_i / ti,
        infodp_success_upper=clopper_pearson(wins_i, ti, side="upper")[1],
        infodp_ruled_out=ruled_i / ti,
        dp_ceiling=ceiling,
        infodp_trials=ti,
    )
