"""A certified Gaussian envelope for the discrete Gaussian pair of *any* integer shift vector.

The secure release of :class:`~infodp.mechanisms.subsampled.SubsampledGaussian` adds
N_Z(0, s²) noise to every coordinate of a sum of lattice vectors; one row moves the sum by an
integer vector v with ‖v‖² ≤ n (n = ⌊(C/grid)²⌋). The privacy of a row is the pair
P_v = N_Z^d(v, s²) against Q = N_Z^d(0, s²) (subsampled). Its privacy loss
log P_v/Q (k) = (2 v·k − ‖v‖²)/(2s²) depends on k only through T = v·k, so the pair is the
pair of laws of T + ‖v‖² and T with T = Σ_i v_i K_i, K_i ~ N_Z(0, s²) i.i.d. Unlike the
continuous Gaussian this is not a function of ‖v‖ alone: the shift (3, 4) leaks more than
the shift (5, 0) on coarse lattices. This module bounds every such pair by one continuous
Gaussian pair N(r′, 1) against N(0, 1), in three steps.

1. **Convex order** (:func:`convex_dominating_sigma`). K ~ N_Z(0, s²) is smaller in the
   convex order than Y ~ N(0, s′²) for the certified s′ (s′² ≈ s² + 1/12, Sheppard's
   correction): E(K − a)₊ ≤ E(Y − a)₊ for all a, checked exactly between consecutive
   integers (the stop-loss transform of K is linear there, that of Y convex) and, in the far
   tail, by a survival-function comparison. Both laws are symmetric with mean 0, so this is
   the convex order (Shaked & Shanthikumar 2007, "Stochastic Orders", Thm 3.A.1), which is
   closed under independent sums and scaling (ibid., Thm 3.A.12): T ≤_cx N(0, ‖v‖² s′²).

2. **Hockey-stick bound.** δ_v(ε) = Σ (P_v − e^ε Q)₊ = E[g(T)] with the convex function
   g(t) = (e^{(2t − ‖v‖²)/(2s²)} − e^ε)₊, so δ_v(ε) ≤ E[g(N(0, ‖v‖² s′²))] =
   e^ζ δ_r(ε − ζ), where δ_r is the hockey-stick curve of N(r, 1) against N(0, 1)
   (Balle & Wang 2018, "Improving the Gaussian mechanism", Thm 8), r = ‖v‖ s′/s² and
   ζ = (r² − ‖v‖²/s²)/2. It increases with ‖v‖, so ‖v‖² = n is the worst case.

3. **A genuine pair** (:func:`dominating_gaussian_ratio`). e^ζ δ_r(ε − ζ) is not the curve of
   a pair (its mass is e^ζ > 1), so a ratio r′ > r is found with δ_{r′}(ε) ≥ e^ζ δ_r(ε − ζ)
   for all ε ≥ 0: on a grid (both curves decrease, so δ_{r′}(ε_{i+1}) ≥ e^ζ δ_r(ε_i − ζ)
   covers [ε_i, ε_{i+1}]) and beyond it by Gordon's and the Mills-ratio bounds. For ε < 0
   the identity δ(ε) = 1 − e^ε + e^ε δ(−ε), which holds for both symmetric pairs, carries
   the bound over.

Hence the discrete pair of every shift vector is dominated by the Gaussian pair of ratio r′
for all ε, and so (Blackwell 1953) the Poisson-subsampled discrete pair by the subsampled
Gaussian with noise multiplier 1/r′ in both add and remove directions: the subsampled curve
is q·δ(1 + (e^ε − 1)/q), resp. (1 − e^ε(1 − q))·δ(log(e^ε q/(1 − e^ε(1 − q)))), an
increasing function of the base curve.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt
from scipy import special

from infodp._validate import as_positive, as_positive_int
from infodp.errors import ParameterError

__all__ = ["MAX_SIGMA_UNITS", "convex_dominating_sigma", "dominating_gaussian_ratio"]

ArrayF = npt.NDArray[np.float64]

MAX_SIGMA_UNITS = 2.0**16
"""Largest noise standard deviation, in lattice units, that the certificate handles."""

# Stop-loss checks run over at most this many integers (plus a 20 s tail window).
_WINDOW = 500_000
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _log_stop_loss_gauss(a: ArrayF, sd: float) -> ArrayF:
    """log E(Y − a)₊ for Y ~ N(0, sd²), a ≥ 0: log(sd·(φ(t) − t Φ̄(t))), t = a/sd.

    φ(t) − tΦ̄(t) = φ(t)(1 − t·M(t)) with the Mills ratio M(t) = Φ̄(t)/φ(t) =
    √(π/2)·erfcx(t/√2), so no underflow; the relative error grows like t² ulps (t ≤ 1e3 here).
    """
    t = a / sd
    mills = math.sqrt(math.pi / 2) * special.erfcx(t / math.sqrt(2))
    one_minus = np.maximum(1.0 - t * mills, 0.0)
    with np.errstate(divide="ignore"):
        out: ArrayF = math.log(sd) - 0.5 * t * t - _LOG_SQRT_2PI + np.log(one_minus)
    return out


def _stop_loss_holds(s: float, sp: float) -> bool:
    """Whether E(K − a)₊ ≤ E(Y − a)₊ for all a, K ~ N_Z(0, s²), Y ~ N(0, sp²) (sp > s)."""
    kappa = (sp * sp - s * s) / (s * s * sp * sp)  # 1/s² − 1/sp²

    # Tail a ≥ a_max: P(K > y) ≤ e^{−y²/2s²}(1 + s²/y)/Z (sum ≤ first term + integral) and
    # P(Y > y) ≥ φ(y/sp)·(y/sp)/((y/sp)² + 1) (Gordon 1941). The log-ratio has derivative
    # ≤ −κy + 1/y < 0 for y ≥ 1/√κ, so where it is ≤ 0 at some a_max ≥ 1/√κ it stays so;
    # integrating the survival functions from a gives the stop-loss order for a ≥ a_max.
    def tail_ok(y: float) -> bool:  # with Z ≥ 1 (its k = 0 term)
        u = y / sp
        log_k = -(y * y) / (2 * s * s) + math.log1p(s * s / y)
        log_y = -0.5 * u * u - _LOG_SQRT_2PI + math.log(u / (u * u + 1.0))
        return log_k + 1e-9 <= log_y

    a_max = math.ceil(max(1.0 / math.sqrt(kappa), 2.0)) + 1
    while not tail_ok(float(a_max)):
        a_max = math.ceil(1.25 * a_max)
        if a_max > 2 * _WINDOW:
            return False
    k_max = a_max + math.ceil(20.0 * s) + 2
    k = np.arange(0, k_max + 1, dtype=np.float64)
    log_w = -(k * k) / (2 * s * s)
    # The far tail's weights underflow to 0.0; fsum up to the last nonzero one is the same
    # correctly rounded sum (exact zeros change no partial) at a fraction of the cost.
    w = np.exp(log_w)
    log_z = math.log(2.0 * math.fsum(w[: np.flatnonzero(w)[-1] + 1].tolist()) - 1.0)  # ≤ log Z
    log_p = log_w - log_z  # over-stated masses
    # Log domain throughout (the far tail underflows): log S0[j] = log P(K ≥ j) and
    # m[j] = E[K | K ≥ j] by reverse log-cumulative sums, so π_K(a) = S0[j+1]·(m[j+1] − a)
    # on [j, j + 1] loses only ~(a/s)² ulps to cancellation.
    log_s0 = np.logaddexp.accumulate(log_p[::-1])[::-1]
    with np.errstate(divide="ignore"):
        log_s1 = np.logaddexp.accumulate((np.log(k) + log_p)[::-1])[::-1]
    mean_above = np.exp(log_s1 - log_s0)
    # Beyond k_max: Σ_{k > K} k e^{−k²/2s²} ≤ s² e^{−K²/2s²} (decreasing summand, K ≥ s).
    log_beyond = 2.0 * math.log(s) - (k_max * k_max) / (2 * s * s) - log_z
    j = np.arange(0, a_max, dtype=np.int64)  # intervals [j, j + 1]
    # Check both ends and the interior critical point where Φ̄(a/sp) = P(K > a): π_Y − π_K
    # is convex on the interval (π_K is linear there), so these bound its minimum.
    with np.errstate(divide="ignore"):
        crit = -sp * special.ndtri(np.exp(log_s0[j + 1]))  # Φ̄⁻¹(P(K > a))
    inside = (crit > j) & (crit < j + 1)
    points = np.concatenate([j.astype(np.float64), j + 1.0, np.where(inside, crit, j + 0.5)])
    # log_s0 and mean_above at j + 1 for the three copies of j (slices tiled, not gathered).
    above = slice(1, a_max + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_pi_k = np.tile(log_s0[above], 3) + np.log(np.tile(mean_above[above], 3) - points)
        log_pi_k = np.logaddexp(log_pi_k, log_beyond) + 1e-9  # rounding of the sums
        log_y = _log_stop_loss_gauss(points, sp) - 1e-9
        return bool(np.all(log_pi_k <= log_y))  # NaN (lost precision) fails


@functools.lru_cache(maxsize=256)
def convex_dominating_sigma(sigma_units: float) -> float:
    """A certified s′ with N_Z(0, s²) ≤_cx N(0, s′²) (module docstring, step 1).

    s′² = s² + c with c from 1/12 (Sheppard's correction) up, so s′/s − 1 ≈ 1/(24 s²) for
    moderate s (1e-2 at s = 2, 2e-5 at s = 64); for large s, c is raised so that the exact
    check stays within a bounded window (s′/s − 1 ≈ 6e-4 at s = 5000, 0.09 at 2**16).

    >>> sp = convex_dominating_sigma(2.0)
    >>> 2.0 < sp < 2.03
    True
    """
    s = as_positive("sigma_units", sigma_units)
    if s > MAX_SIGMA_UNITS:
        raise ParameterError(
            "sigma_units", sigma_units, f"at most {MAX_SIGMA_UNITS:g} lattice units"
        )
    # The tail check needs κ = 1/s² − 1/s′² ≳ 2 log(√(2π)·W/s)/W² at the window end W.
    c = max(1.05 / 12.0, 2.0 * s**4 * math.log(max(3.0 * _WINDOW / s, 3.0)) / _WINDOW**2)
    for _ in range(120):
        sp = math.nextafter(math.sqrt(s * s + c), math.inf)
        if _stop_loss_holds(s, sp):
            return sp
        c *= 1.1
    raise ParameterError("sigma_units", sigma_units, "a noise whose convex order is certifiable")


def _log_delta_gauss(r: float, eps: ArrayF) -> ArrayF:
    """log δ_r(ε) = log(Φ̄(ε/r − r/2) − e^ε Φ̄(ε/r + r/2)) (Balle & Wang 2018, Thm 8)."""
    lo = special.log_ndtr(-(eps / r - r / 2))
    hi = eps + special.log_ndtr(-(eps / r + r / 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        out: ArrayF = lo + np.log1p(-np.exp(np.minimum(hi - lo, 0.0)))
    return out


def _envelope_holds(r: float, zeta: float, rp: float, kappa: float) -> bool:
    """Whether δ_{rp}(ε) ≥ e^ζ δ_r(ε − ζ) for all ε ≥ 0 (module docstring, step 3)."""
    inv = 1.0 / (r * r) - 1.0 / (rp * rp)
    # Beyond ε_R the tail log-ratio R(ε) (below) decreases; see the derivative bound there.
    eps_r = (zeta / (r * r) + 2.0 / rp) / inv
    end = max(eps_r, rp * (1.0 + 2.0 / rp + rp / 2.0), zeta + r * r, 1.0)

    def tail_ratio(e: float) -> float:
        # log of e^ζ φ(y)/y over φ(x)(x r′ − 1)/((x² + 1)(x + r′)): an upper bound on the
        # envelope over a lower bound on δ_{r′} (Gordon 1941 and Φ̄(t) ≤ φ(t)/t).
        x = e / rp - rp / 2
        y = (e - zeta) / r - r / 2
        return (
            zeta
            - 0.5 * y * y
            - math.log(y)
            + 0.5 * x * x
            - math.log(x * rp - 1.0)
            + math.log(x * x + 1.0)
            + math.log(x + rp)
        )

    for _ in range(64):
        if tail_ratio(end) <= -1e-9:
            break
        end *= 1.5
    else:
        return False
    # Grid 0 = ε_0 < ε_1 < … ≥ end: steps κ·min(r, 1)/8 up to 1, then ratio 1 + κ/8 (the
    # advantage of r′ over r grows like κ·max(ε, r)²/r² and the slope of log δ like ε/r²).
    linear = np.linspace(0.0, 1.0, math.ceil(8.0 / (kappa * min(r, 1.0))) + 1)
    count = math.ceil(math.log(max(end, 1.0)) / math.log1p(kappa / 8.0)) + 1
    if linear.size + count > 4_000_000:
        return False
    grid = np.concatenate([linear, np.exp(np.arange(1, count + 1) * math.log1p(kappa / 8.0))])
    # A ratio r′ too small for the envelope fails at the start of the grid (near ε = 0) in
    # practice: its first nodes are checked alone first, the same elementwise values as in
    # the whole grid's check, which then runs only for an r′ that passes them.
    for stop in (min(_FIRST_NODES, grid.size), grid.size):
        upper = zeta + _log_delta_gauss(r, grid[: stop - 1] - zeta) + 1e-9
        lower = _log_delta_gauss(rp, grid[1:stop]) - 1e-9
        if not np.all(lower >= upper):
            return False
    return True


# Nodes checked before the whole grid by :func:`_envelope_holds`.
_FIRST_NODES = 64


@functools.lru_cache(maxsize=256)
def dominating_gaussian_ratio(sigma_units: float, norm2_units: int) -> float:
    """A ratio r′ such that, for every integer vector v with ‖v‖² ≤ ``norm2_units``, the pair
    N_Z^d(v, s²) against N_Z^d(0, s²) (any d) is dominated by N(r′, 1) against N(0, 1).

    >>> r = dominating_gaussian_ratio(2.0, 25)   # shifts of norm ≤ 5 under s = 2
    >>> 2.5 < r < 3.1
    True
    """
    s = as_positive("sigma_units", sigma_units)
    n = as_positive_int("norm2_units", norm2_units)
    sp = convex_dominating_sigma(s)
    r0 = math.sqrt(n) / s
    r = math.nextafter(r0 * (sp / s), math.inf)
    zeta = math.nextafter(0.5 * (r * r - r0 * r0), math.inf)
    kappa = 1e-4
    while kappa < 4.0:
        rp = r * (1.0 + kappa)
        if _envelope_holds(r, zeta, rp, kappa):
            return rp
        kappa *= 1.6
    raise ParameterError(
        "sigma_units",
        sigma_units,
        f"wide enough against shifts of squared norm {n} for a Gaussian envelope",
    )
