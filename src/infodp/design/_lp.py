"""Linear programs with a certified lower bound (HiGHS primal + a repaired dual).

HiGHS (Huangfu & Hall 2018, through :func:`scipy.optimize.linprog`) returns a primal point and
dual multipliers that are optimal up to its tolerances. The primal point is checked by the
callers on the exact channel it defines; the dual is turned into a *rigorous* lower bound by
Lagrangian weak duality on a box: for any multipliers λ ≥ 0 (inequalities) and ν (equalities),

    min_{0 ≤ w ≤ u, A_ub w ≤ b_ub, A_eq w = b_eq} cᵀw  ≥  −λᵀb_ub − νᵀb_eq + Σ_j min(0, r_j) u_j,

with reduced costs r = c + A_ubᵀλ + A_eqᵀν (Boyd & Vandenberghe 2004, §5.2). Any numerical
error in λ, ν only loosens the bound; a relative allowance covers the rounding of the sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.optimize import linprog

from infodp.errors import InternalError

FloatArray = npt.NDArray[np.float64]

__all__ = ["LPResult", "solve_lp"]


@dataclass(frozen=True)
class LPResult:
    """A primal point ``x`` with value ``value`` and a certified lower bound ``lower``."""

    x: FloatArray
    value: float
    lower: float


def solve_lp(
    c: FloatArray,
    A_ub: sparse.csr_array | None,
    b_ub: FloatArray | None,
    A_eq: sparse.csr_array,
    b_eq: FloatArray,
    upper: FloatArray,
) -> LPResult:
    """Minimise ``cᵀw`` over ``0 ≤ w ≤ upper`` and the constraints (must be feasible)."""
    bounds = np.column_stack([np.zeros_like(upper), upper])
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
    if res.status != 0 or res.x is None:
        raise InternalError(f"HiGHS did not solve a feasible design LP: {res.message}")
    nu = -np.asarray(res.eqlin.marginals, dtype=np.float64)
    r = c + A_eq.T @ nu
    bound = -float(nu @ b_eq)
    scale = float(np.abs(nu @ b_eq))
    if A_ub is not None and b_ub is not None:
        lam = np.clip(-np.asarray(res.ineqlin.marginals, dtype=np.float64), 0.0, None)
        r = r + A_ub.T @ lam
        bound -= float(lam @ b_ub)
        scale += float(np.abs(lam @ b_ub))
    box = np.minimum(r, 0.0) * upper
    bound += math.fsum(box.tolist())
    scale += float(np.abs(box).sum())
    lower = bound - 1e-12 * (1.0 + scale)
    return LPResult(np.asarray(res.x, dtype=np.float64), float(res.fun), lower)
