"""How faithful a synthetic table is, computed from released values only (free to publish).

For every measured clique: the total-variation distance between the synthetic rows' marginal
and the noisy measurement (made non-negative), beside the distance the noise alone is expected
to cause, E‖N‖₁/(2N) ≈ √(2/π)·σ·cells/(2N) for N the released total (a synthetic marginal
cannot be judged more precisely than its measurement). For every workload clique: the distance
between the synthetic rows and the fitted model (the error of drawing finitely many rows).
Nothing here reads the private table.

>>> import numpy as np
>>> from fractions import Fraction
>>> from infodp.synthetic.measure import Measurement
>>> from infodp.synthetic.model import SyntheticModel, TreeModel
>>> ms = [Measurement((0,), np.array([50, 50]), Fraction(1))]
>>> rows = np.array([[0], [1]] * 50)
>>> r = fidelity_report(TreeModel.fit((2,), ms), ms, rows, (2,), [(0,)])
>>> r["measured"][0]["tv_to_measurement"], r["workload"][0]["tv_to_model"]
(0.0, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp.synthetic.measure import Clique, Measurement, marginal
from infodp.synthetic.model import SyntheticModel, simplex_projection

__all__ = ["fidelity_report", "tv"]


def tv(p: npt.NDArray[np.float64], q: npt.NDArray[np.float64]) -> float:
    """Total-variation distance ½‖p − q‖₁ of two distributions (each normalised here).

    >>> tv(np.array([1.0, 0.0]), np.array([1.0, 1.0]))
    0.5
    """
    ps, qs = float(p.sum()), float(q.sum())
    a = p / ps if ps > 0 else np.full_like(p, 1.0 / p.size)
    b = q / qs if qs > 0 else np.full_like(q, 1.0 / q.size)
    return round(0.5 * float(np.abs(a - b).sum()), 12)


def fidelity_report(
    model: SyntheticModel,
    measurements: Sequence[Measurement],
    rows: npt.NDArray[np.int64],
    sizes: Sequence[int],
    workload: Sequence[Clique],
) -> dict[str, Any]:
    """The fidelity report (see module) of synthetic ``rows`` drawn from ``model``."""
    measured: list[dict[str, Any]] = []
    seen: set[Clique] = set()
    for m in reversed(measurements):  # the latest (least noisy) measurement of each clique
        if m.clique in seen:
            continue
        seen.add(m.clique)
        synth = marginal(rows, sizes, m.clique).astype(np.float64)
        truth = simplex_projection(m.values.astype(np.float64), max(model.total, 1.0))
        noise = math.sqrt(2 / math.pi) * float(m.sigma) * m.values.size / (2 * model.total)
        measured.append(
            {
                "clique": list(m.clique),
                "tv_to_measurement": tv(synth, truth),
                "expected_noise_tv": round(min(1.0, noise), 12),
            }
        )
    work: list[dict[str, Any]] = [
        {
            "clique": list(c),
            "tv_to_model": tv(marginal(rows, sizes, c).astype(np.float64), model.counts(c)),
        }
        for c in workload
    ]
    return {
        "measured": measured[::-1],
        "workload": work,
        "mean_tv_to_measurement": _mean([r["tv_to_measurement"] for r in measured]),
        "mean_tv_to_model": _mean([r["tv_to_model"] for r in work]),
        "note": "computed from released values only (noisy measurements, the model, the rows)",
    }


def _mean(xs: list[float]) -> float:
    return round(float(np.mean(xs)), 12) if xs else 0.0
