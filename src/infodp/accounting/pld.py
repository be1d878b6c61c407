"""Privacy loss distributions (PLDs) with pessimistic "connect-the-dots" discretisation.

The privacy loss of a pair (P, Q) is L = log(dP/dQ)(Y) with Y ~ P, and its hockey-stick
divergence is δ(ε) = E_P[(1 − e^{ε−L})₊] plus the mass of L = +∞ (Sommer, Meiser & Mohammadi
2019; Koskela, Jälkö & Honkela 2020). Composition of mechanisms adds independent losses, so
PLDs compose by convolution.

Discretisation (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022, "Connect the Dots",
Algorithm 1): the exact δ(ε_i) is computed at grid points ε_i = i·h and a discrete PLD on the
grid is built whose δ-curve is the linear interpolation of those points in the variable e^ε.
Since δ is convex in e^ε, the interpolation lies above the true curve, so the discrete PLD is a
*dominating pair* (pessimistic) and stays so under composition. Loss beyond the upper grid
point is placed at +∞ (mass δ(ε_n)); mass below the lower point is moved up to it.

Composition: pairs by FFT convolution; k-fold self-composition by one power in the frequency
domain, on a window chosen with a Chernoff bound whose tail mass (≤ 1e-15 per side) is added to
the +∞ mass. Add/remove neighbouring (subsampled mechanisms) keeps both directions and reports
the maximum, as dp-accounting does.

Floating-point rounding in the FFT is not bounded rigorously (as in dp-accounting); negative
round-off is clipped to zero.

>>> pld = PrivacyLossDistribution.from_laplace(scale=1.0, sensitivity=1.0, interval=1e-4)
>>> round(pld.delta(1.0), 9), round(pld.epsilon(0.0), 4)
(0.0, 1.0)
>>> g = PrivacyLossDistribution.from_gaussian(1.0, 1.0, 1e-4)
>>> round(g.self_compose(4).delta(1.0), 4) == round(
...     PrivacyLossDistribution.from_gaussian(0.5, 1.0, 1e-4).delta(1.0), 4)
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

# scipy loads on first use: the curator's per-query summaries of discrete Laplace
# compositions (FFT products, Chernoff windows) run on numpy alone.
from infodp._scipy import signal, special
from infodp._validate import (
    as_nonnegative,
    as_positive,
    as_positive_int,
    as_probability,
    as_real,
)
from infodp.accounting.discrete_gaussian import EXACT_SIGMA as _DGAUSS_EXACT_SIGMA
from infodp.accounting.discrete_gaussian import WINDOW_WIDTH as _DSG_WIDTH
from infodp.accounting.discrete_gaussian import cdf_upper as _dgauss_cdf_upper
from infodp.accounting.discrete_gaussian import log_normaliser_lower as _dgauss_log_z
from infodp.accounting.discrete_gaussian import log_outside_upper as _dgauss_log_out
from infodp.accounting.rdp import _logsumexp_rows
from infodp.errors import InternalError, ParameterError

__all__ = ["MAX_POINTS", "TAIL_MASS", "PLDTooLarge", "PrivacyLossDistribution"]

ArrayF = npt.NDArray[np.float64]

TAIL_MASS = 1e-15
"""Largest probability mass moved to +∞ loss by one truncation (per side)."""

MAX_POINTS = 2**24
"""Largest grid (number of loss values) a PLD may use; beyond it :class:`PLDTooLarge`."""


class PLDTooLarge(ParameterError):
    """The PLD would need more than MAX_POINTS grid points at this interval."""

    def __init__(self, points: int, interval: float) -> None:
        super().__init__(
            "value_discretization_interval",
            interval,
            f"coarser: this PLD would need {points} grid points (limit {MAX_POINTS})",
        )


def _unique_ints(x: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``np.unique`` of a 1-D integer array without importing numpy.ma (np.unique does).

    >>> _unique_ints(np.array([3, 1, 3, 2])).tolist()
    [1, 2, 3]
    """
    s = np.sort(x)
    if s.size == 0:
        return s
    return s[np.concatenate(([True], s[1:] != s[:-1]))]


def _check_size(points: int, interval: float) -> None:
    if points > MAX_POINTS:
        raise PLDTooLarge(points, interval)


#: Gaussian quantile of the discretisation tails, −Φ⁻¹(1e-17) (= -scipy.special.ndtri(1e-17),
#: checked in tests/accounting/test_pld.py); a literal so that importing this module does not
#: load scipy.
_Z_TAIL = 8.493793224109599


#: Blocks of the discrete Gaussian PLD span at most h/16 of loss when that keeps ~2^20 atoms.
_DGAUSS_REFINE = 16


def _dgauss_loss_range(s: float, d: int) -> tuple[int, float]:
    """Cut K (|k| ≤ K kept, P[N < −K] ≤ ~1e-17) and the loss step Δ/σ² between neighbours."""
    cut = math.ceil(_Z_TAIL * s) + 1
    return cut, d / (s * s)


def _dgauss_pmf_blocked(s: float, d: int, interval: float) -> _PMF:
    """Pessimistic PLD of the discrete Gaussian (shift Δ) in O(loss range / h) atoms.

    The loss L(k) = (Δ² − 2kΔ)/(2σ²) decreases in k by Δ/σ² per step. The k in [−K, K] are
    grouped into blocks (e_{j−1}, e_j] of w = max(1, ⌊hσ²/(rΔ)⌋) consecutive integers, whose
    losses span less than h/r (r ≤ 16); each block's mass goes to its highest loss L(e_{j−1} + 1).
    Masses come from upper bounds C_j ≥ P[N ≤ e_j] (:func:`_dgauss_cdf_upper`, made
    non-decreasing): C_0 ≥ P[N ≤ −K − 1] goes to +∞, block j gets C_j − C_{j−1}, the last
    block (which also takes every k > K) 1 − C_{n−1}. The loss is then stochastically above
    the true loss (P[L̂ ≥ L(e_j + 1)] = C_j ≥ P[L ≥ L(e_j + 1)]), so every δ(ε) is an upper
    bound on the discrete Gaussian's (Meiser & Mohammadi 2018: losses rounded up dominate).
    """
    cut, step = _dgauss_loss_range(s, d)
    span = 2 * cut * step / interval  # grid steps covered (≤ MAX_POINTS, checked by the caller)
    # Blocks span ≤ h/r: r up to 16 while the atoms stay below ~2^20, so the upward shift of
    # each block (at most its span) costs little beside the grid's own h.
    r = max(1, min(_DGAUSS_REFINE, int(2**20 / max(span, 1.0))))
    w = max(1.0, math.floor(interval / (r * step)))
    n = math.ceil(2 * cut / w)
    ends = np.minimum(-cut - 1 + w * np.arange(n + 1, dtype=np.float64), float(cut))
    cdf = np.maximum.accumulate(_dgauss_cdf_upper(s, ends))
    cdf[-1] = 1.0  # the last block takes the lower tail k > K (lowest losses)
    masses = np.diff(cdf)
    losses = (d * d - 2.0 * (ends[:-1] + 1.0) * d) / (2 * s * s)
    return _pmf_from_atoms(interval, losses, masses, float(cdf[0]))


@dataclass(frozen=True, eq=False)
class _PMF:
    """Sub-probability mass on losses (offset + i)·h, plus mass at +∞."""

    interval: float
    offset: int
    probs: ArrayF
    infinity_mass: float

    @property
    def losses(self) -> ArrayF:
        return (self.offset + np.arange(self.probs.size, dtype=np.float64)) * self.interval

    @functools.cached_property
    def _tails(self) -> tuple[ArrayF, ArrayF]:
        # A[m] = Σ_{i≥m} p_i and log B[m] = log Σ_{i≥m} p_i e^{−l_i}; index n is the empty sum.
        p = self.probs
        return _tail_sums(self.losses, p)

    def delta(self, eps: float) -> float:
        if eps == math.inf:
            return self.infinity_mass
        a, log_b = self._tails
        idx = int(np.searchsorted(self.losses, eps, side="right"))
        value = self.infinity_mass + a[idx] - math.exp(min(eps + log_b[idx], 700.0))
        return float(min(max(value, self.infinity_mass), 1.0))

    def epsilon(self, delta: float) -> float:
        if delta < self.infinity_mass:
            return math.inf
        if self.probs.size == 0:
            return -math.inf
        a, log_b = self._tails
        losses = self.losses
        with np.errstate(over="ignore"):
            grid_delta = self.infinity_mass + a[1:] - np.exp(losses + log_b[1:])
        # grid_delta[m] = δ(l_m), non-increasing (round-off repaired upwards, pessimistic);
        # find the first m with δ(l_m) ≤ delta.
        grid_delta = np.maximum.accumulate(grid_delta[::-1])[::-1]
        m = int(np.searchsorted(-grid_delta, -delta, side="left"))
        if m >= losses.size:
            m = losses.size - 1
        numerator = self.infinity_mass + a[m] - delta
        if numerator <= 0 or log_b[m] == -np.inf:
            eps = float(losses[m - 1]) if m > 0 else -math.inf
        else:
            eps = math.log(numerator) - float(log_b[m])
        upper = float(losses[m])
        lower = float(losses[m - 1]) if m > 0 else -math.inf
        return float(min(max(eps, lower), upper))


def _tail_sums(losses: ArrayF, probs: ArrayF) -> tuple[ArrayF, ArrayF]:
    """A[m] = Σ_{i≥m} p_i and log B[m] = log Σ_{i≥m} p_i e^{−l_i} for ascending losses.

    B is summed relative to the smallest loss; terms that underflow only make B smaller and
    hence δ = A − e^ε·B larger (pessimistic). Index n holds the empty sums.
    """
    if probs.size == 0:
        return np.zeros(1), np.full(1, -np.inf)
    a = np.concatenate([np.cumsum(probs[::-1])[::-1], [0.0]])
    ref = float(losses[0])
    b = np.cumsum((probs * np.exp(ref - losses))[::-1])[::-1]
    with np.errstate(divide="ignore"):
        log_b = np.concatenate([np.log(b) - ref, [-np.inf]])
    return a, log_b


def _trim(interval: float, offset: int, probs: ArrayF, infinity_mass: float) -> _PMF:
    """Clip round-off, move ≤ TAIL_MASS from the top to +∞ and from the bottom upwards."""
    p = np.maximum(probs, 0.0)
    if p.size == 0:
        return _PMF(interval, offset, p, min(1.0, infinity_mass))
    top = np.cumsum(p[::-1])
    n_top = int(np.searchsorted(top, TAIL_MASS, side="right"))  # entries with tail ≤ TAIL_MASS
    moved_up = float(top[n_top - 1]) if n_top > 0 else 0.0
    end = p.size - n_top
    bottom = np.cumsum(p[:end])
    n_low = int(np.searchsorted(bottom, TAIL_MASS, side="right"))
    if n_low >= end:
        n_low = max(end - 1, 0)
    kept = p[n_low:end].copy()
    if kept.size and n_low > 0:
        kept[0] += float(bottom[n_low - 1])
    kept.setflags(write=False)
    return _PMF(interval, offset + n_low, kept, min(1.0, infinity_mass + moved_up))


def _connect_dots(interval: float, nodes: npt.NDArray[np.int64], deltas: ArrayF) -> _PMF:
    """Doroshenko et al. 2022, Algorithm 1: PLD on ``nodes``·h whose δ-curve interpolates.

    Mass at ε_i is y_{i−1} + z_i with y_0 = 1 − δ_1,
    y_i = (δ_{i+1} − δ_i)/(e^{ε_i − ε_{i+1}} − 1), z_i = (δ_{i+1} − δ_i)/(e^{ε_{i+1} − ε_i} − 1),
    z_n = 0; mass at +∞ is δ_n (same algorithm as dp-accounting's
    ``create_pmf_pessimistic_connect_dots``).
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    # δ is non-increasing in ε; round-off that breaks this is repaired upwards (pessimistic).
    d = np.maximum.accumulate(np.clip(np.asarray(deltas, dtype=np.float64), 0.0, 1.0)[::-1])[::-1]
    if nodes.size == 0 or nodes.size != d.size or np.any(np.diff(nodes) <= 0):
        raise InternalError("connect-the-dots needs strictly increasing nodes with deltas")
    gaps = np.diff(nodes).astype(np.float64) * interval
    dd = np.diff(d)
    y = np.concatenate([[1.0 - d[0]], dd / np.expm1(-gaps)])
    z = np.concatenate([dd / np.expm1(gaps), [0.0]])
    mass = np.maximum(y + z, 0.0)
    dense = np.zeros(int(nodes[-1] - nodes[0]) + 1)
    dense[nodes - nodes[0]] = mass
    return _trim(interval, int(nodes[0]), dense, float(d[-1]))


def _pmf_from_atoms(interval: float, losses: ArrayF, masses: ArrayF, infinity_mass: float) -> _PMF:
    """Connect-the-dots PLD of a discrete loss distribution (nodes at ⌊l/h⌋ and ⌈l/h⌉)."""
    keep = masses > 0
    losses, masses = losses[keep], masses[keep]
    if losses.size == 0:
        # Everything at +∞ loss (e.g. (ε, δ = 1)): no finite atoms to connect.
        empty = np.zeros(0)
        empty.setflags(write=False)
        return _PMF(interval, 0, empty, min(1.0, infinity_mass))
    scaled = losses / interval
    if scaled.size:
        if not np.abs(scaled).max() < 2.0**62:
            # Grid indices beyond int64 (a huge ε on a fine grid): no grid can hold them, and
            # casting them would overflow.
            raise PLDTooLarge(2**62, interval)
        _check_size(int(np.ceil(scaled.max()) - np.floor(scaled.min())) + 1, interval)
    nodes = _unique_ints(np.concatenate([np.floor(scaled), np.ceil(scaled)]).astype(np.int64))
    order = np.argsort(losses)
    ls, ms = losses[order], masses[order]
    a, log_b = _tail_sums(ls, ms)
    eps = nodes * interval
    idx = np.searchsorted(ls, eps, side="right")
    deltas = infinity_mass + a[idx] - np.exp(np.minimum(eps + log_b[idx], 700.0))
    return _connect_dots(interval, nodes, np.clip(deltas, infinity_mass, 1.0))


#: Above this sensitivity the discrete Laplace PLD is built from closed-form tail sums.
_DLAP_ATOMS_MAX = 2048
#: Absolute slack added to the closed-form δ at every node (pessimistic: it moves that much
#: mass to +∞); it covers the few roundings of each closed-form value.
_DLAP_SLACK = 2.0**-49


def _dlap_pmf_closed(lam: float, d: int, interval: float) -> _PMF:
    """:func:`_pmf_from_atoms` of the discrete Laplace's losses, in closed form (2λ ≤ h).

    The atoms (see :meth:`PrivacyLossDistribution.from_discrete_laplace`, r = e^{−λ}) are Δλ
    w.p. 1/(1+r), −Δλ w.p. r^Δ/(1+r) and λ(Δ − 2k) w.p. (1−r)/(1+r)·r^k for 0 < k < Δ: an
    arithmetic progression with step 2λ ≤ h, so ⌊l/h⌋ and ⌈l/h⌉ cover every grid index from
    ⌊−Δλ/h⌋ to ⌈Δλ/h⌉. At a node ε, δ(ε) = Σ_{l > ε} p_l (1 − e^{ε − l}) (Doroshenko et al.
    2022, the δ-curve that connect-the-dots interpolates); with the K middle atoms above ε
    (those with k < (Δ − ε/λ)/2) the geometric series give
    Σ_{k≤K} (1−r)/(1+r)·r^k = r(1 − r^K)/(1+r) and
    Σ_{k≤K} (1−r)/(1+r)·r^k e^{−λ(Δ−2k)} = e^{−λΔ}(e^{λK} − 1)/(1+r).
    An atom equal to ε adds 0 whichever side it is counted on.
    """
    top = d * lam
    if not top / interval < 2.0**62:
        raise PLDTooLarge(2**62, interval)
    lo_node, hi_node = math.floor(-top / interval), math.ceil(top / interval)
    _check_size(hi_node - lo_node + 1, interval)
    nodes = np.arange(lo_node, hi_node + 1, dtype=np.int64)
    eps = nodes * interval
    r = math.exp(-lam)
    norm = 1.0 + r
    kk = np.clip(np.ceil((d - eps / lam) / 2.0) - 1.0, 0.0, d - 1.0)  # middle atoms above ε
    x = lam * kk
    y = eps - top  # ≤ h: e^{ε − Δλ} never overflows
    a = r * -np.expm1(-x) / norm
    e_b = np.empty_like(x)
    small = x < 700.0
    e_b[small] = np.exp(y[small]) * np.expm1(x[small])
    e_b[~small] = np.exp(y[~small] + x[~small]) - np.exp(y[~small])
    e_b /= norm
    above_top = eps < top  # the atom Δλ lies above ε
    a += np.where(above_top, 1.0 / norm, 0.0)
    e_b += np.where(above_top, np.exp(np.minimum(y, 0.0)) / norm, 0.0)
    above_bottom = eps < -top  # the atom −Δλ lies above ε (its e^{ε}·p e^{Δλ} is e^{ε}/(1+r))
    a += np.where(above_bottom, math.exp(-top) / norm, 0.0)
    e_b += np.where(above_bottom, np.exp(np.minimum(eps, 0.0)) / norm, 0.0)
    deltas = a - e_b + _DLAP_SLACK
    return _connect_dots(interval, nodes, np.clip(deltas, 0.0, 1.0))


def _log_mgf_bounds(pmf: _PMF, ts: ArrayF) -> tuple[ArrayF, ArrayF]:
    """Upper bounds on log E[e^{tL}] and log E[e^{−tL}] (t > 0) of one pmf (sub-probability).

    The pmf is binned into ≤ 1024 coarse cells; losses rounded up (for +t) or down (for −t)
    can only increase the moment generating function, so the bounds stay valid.
    """
    n = pmf.probs.size
    width = max(1, math.ceil(n / 1024))
    cells = math.ceil(n / width)
    padded = np.zeros(cells * width)
    padded[:n] = pmf.probs
    mass = padded.reshape(cells, width).sum(axis=1)
    base = (pmf.offset + np.arange(cells, dtype=np.float64) * width) * pmf.interval
    up_losses = np.minimum(base + (width - 1) * pmf.interval, (pmf.offset + n - 1) * pmf.interval)
    with np.errstate(divide="ignore"):
        logp = np.log(mass)
    log_m_pos = _logsumexp_rows(logp[None, :] + ts[:, None] * up_losses[None, :])
    log_m_neg = _logsumexp_rows(logp[None, :] - ts[:, None] * base[None, :])
    return np.asarray(log_m_pos, dtype=np.float64), np.asarray(log_m_neg, dtype=np.float64)


#: Orders t of the Chernoff bounds P(S ≥ s) ≤ M(t) e^{−ts} that choose a composition's window.
_CHERNOFF_TS = np.geomspace(1e-4, 1e4, 65)


def _chernoff_window(
    h: float, full_lo: int, full_hi: int, log_m_pos: ArrayF, log_m_neg: ArrayF
) -> tuple[int, int, float]:
    """Grid window [lo, hi] of a sum of losses and the certified mass outside it.

    ``log_m_pos``/``log_m_neg`` bound log E[e^{±tS}] at :data:`_CHERNOFF_TS`; at most
    TAIL_MASS lies beyond each end by the Chernoff bound, and the bound on what does is returned
    (to be added to the +∞ mass).
    """
    ts = _CHERNOFF_TS
    log_tau = math.log(TAIL_MASS)
    hi = min(full_hi, math.ceil(float(np.min((log_m_pos - log_tau) / ts)) / h))
    lo = max(full_lo, math.floor(float(np.max((log_tau - log_m_neg) / ts)) / h))
    if lo > hi:
        lo, hi = full_lo, full_hi
    tail = 0.0
    if hi < full_hi:
        tail += float(np.exp(np.min(log_m_pos - ts * (hi + 1) * h)))
    if lo > full_lo:
        tail += float(np.exp(np.min(log_m_neg + ts * (lo - 1) * h)))
    return lo, hi, tail


def _compose_many(items: Sequence[tuple[_PMF, int]]) -> _PMF:
    """Composition of pmf_i taken k_i times each: one product of FFT powers.

    The window [lo, hi] (grid indices of the sum) is chosen with the Chernoff bound
    P(S ≥ s) ≤ Π M_i(t)^{k_i} e^{−ts} so that at most TAIL_MASS lies beyond each end; that
    certified tail mass is added to +∞. The cyclic convolution folds the outside mass back
    into the window, which only adds mass (it is counted once more at +∞).
    """
    h = items[0][0].interval
    log_fin = sum(
        k * math.log1p(-p.infinity_mass) if p.infinity_mass < 1 else -math.inf for p, k in items
    )
    inf = -math.expm1(log_fin) if log_fin > -math.inf else 1.0
    if any(p.probs.size == 0 for p, _ in items):
        return _PMF(h, 0, np.zeros(0), 1.0 if inf >= 1.0 else inf)
    full_lo = sum(k * p.offset for p, k in items)
    full_hi = sum(k * (p.offset + p.probs.size - 1) for p, k in items)
    ts = _CHERNOFF_TS
    log_m_pos = np.zeros(ts.shape)
    log_m_neg = np.zeros(ts.shape)
    for p, k in items:
        pos, neg = _log_mgf_bounds(p, ts)
        log_m_pos += k * pos
        log_m_neg += k * neg
    lo, hi, tail = _chernoff_window(h, full_lo, full_hi, log_m_pos, log_m_neg)
    width = hi - lo + 1
    _check_size(width, h)
    size = _next_fast_len(max(width, *(p.probs.size for p, _ in items)))
    log_r = np.zeros(size // 2 + 1)
    angle = np.zeros(size // 2 + 1)
    # Single parts (distinct steps of a schedule) multiply directly: |X| ≤ 1 only shrinks, and
    # what underflows is below e^{−745}, which the logarithmic branch drops too.
    direct = np.ones(size // 2 + 1, dtype=np.complex128)
    with np.errstate(divide="ignore", under="ignore"):
        for p, k in items:
            spectrum = np.fft.rfft(p.probs, size)
            if k == 1:
                direct *= spectrum
                continue
            log_r += k * np.log(np.abs(spectrum))
            angle += k * np.angle(spectrum)
    # Π X_i^{k_i} only where it does not underflow (|·| < e^{−745} is 0 in float64 anyway).
    keep = log_r > -745.0
    product = np.zeros(log_r.shape, dtype=np.complex128)
    product[keep] = np.exp(log_r[keep] + 1j * angle[keep]) * direct[keep]
    composed = np.fft.irfft(product, size)
    window = composed[(lo - full_lo + np.arange(width)) % size]
    return _trim(h, lo, window, inf + tail)


def _next_fast_len(n: int) -> int:
    """The smallest 5-smooth number (2^a·3^b·5^c) ≥ n: a fast real FFT length for pocketfft
    (as ``scipy.fft.next_fast_len(n, real=True)``, without loading scipy).

    >>> [_next_fast_len(n) for n in (1, 7, 11, 97, 1025)]
    [1, 8, 12, 100, 1080]
    """
    best = 1 << max(0, (n - 1).bit_length())  # a power of two is always 5-smooth
    p5 = 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            # the least power of two lifting p35 to at least n
            q = p35 if p35 >= n else p35 << ((-(-n // p35)) - 1).bit_length()
            best = min(best, q)
            p35 *= 3
        p5 *= 5
    return best


def _self_compose(pmf: _PMF, k: int) -> _PMF:
    if k == 1:
        return pmf
    return _compose_many([(pmf, k)])


def _compose_pair(a: _PMF, b: _PMF) -> _PMF:
    if a.probs.size == 0 or b.probs.size == 0:
        return _PMF(a.interval, a.offset + b.offset, np.zeros(0), 1.0)
    _check_size(a.probs.size + b.probs.size - 1, a.interval)
    probs = signal.fftconvolve(a.probs, b.probs)
    inf = 1.0 - (1.0 - a.infinity_mass) * (1.0 - b.infinity_mass)
    return _trim(a.interval, a.offset + b.offset, np.asarray(probs, dtype=np.float64), inf)


def _log_sub(log_x: ArrayF, log_y: ArrayF) -> ArrayF:
    """log(e^x − e^y) for x ≥ y (−inf where equal)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = np.minimum(log_y - log_x, 0.0)
        return np.asarray(log_x + np.log(-np.expm1(diff)), dtype=np.float64)


def _gaussian_delta(sigma: float, sensitivity: float, eps: ArrayF) -> ArrayF:
    # Balle & Wang 2018, Theorem 8: δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ).
    u = sensitivity / (2 * sigma)
    v = eps * sigma / sensitivity
    return np.exp(_log_sub(special.log_ndtr(u - v), eps + special.log_ndtr(-u - v)))


def _laplace_delta(eps0: float, eps: ArrayF) -> ArrayF:
    # Laplace pair Lap(0,b) vs Lap(Δ,b), ε0 = Δ/b: δ(ε) = 1 − e^{(ε−ε0)/2} on [−ε0, ε0],
    # 1 − e^ε below −ε0 and 0 above ε0 (e.g. dp-accounting LaplacePrivacyLoss).
    mid = -np.expm1(np.minimum((eps - eps0) / 2, 0.0))
    low = -np.expm1(np.minimum(eps, 0.0))
    return np.where(eps >= eps0, 0.0, np.where(eps <= -eps0, low, mid))


def _subsampled_gaussian_deltas(
    sigma: float | ArrayF, q: float | ArrayF, eps: ArrayF, remove: bool
) -> ArrayF:
    """Hockey-stick δ(ε) of the two add/remove pairs of the Poisson-subsampled Gaussian.

    remove: P = (1−q)N(0,σ²) + qN(1,σ²), Q = N(0,σ²); loss log(1−q+q e^{(2y−1)/(2σ²)}) is
    increasing in y, so δ = P(Y > y*) − e^ε Q(Y > y*) at the loss level set y*.
    add: P = N(0,σ²), Q = the mixture; loss is the negative of the above.
    (Mironov, Talwar & Zhang 2019; Koskela et al. 2020; as in dp-accounting.)
    ``sigma`` and ``q`` broadcast against ``eps`` (many steps' curves in one pass).
    """
    s_all, q_all, e_all = np.broadcast_arrays(
        np.asarray(sigma, dtype=np.float64),
        np.asarray(q, dtype=np.float64),
        np.asarray(eps, dtype=np.float64),
    )
    log1mq_all = np.log1p(-q_all)
    out = np.empty(e_all.shape)
    if remove:
        below = e_all <= log1mq_all
        out[below] = -np.expm1(e_all[below])
        rest = ~below
        e, s, qq = e_all[rest], s_all[rest], q_all[rest]
        logq = np.log(qq)
        # y* = σ² log((e^ε − (1−q))/q) + 1/2, e^ε − (1−q) = expm1(ε) + q.
        log_num = np.log(np.expm1(e) + qq)
        ystar = s**2 * (log_num - logq) + 0.5
        # δ = q Φ̄((y*−1)/σ) − (e^ε − (1−q)) Φ̄(y*/σ)
        out[rest] = np.exp(
            _log_sub(
                logq + special.log_ndtr(-(ystar - 1) / s),
                log_num + special.log_ndtr(-ystar / s),
            )
        )
    else:
        above = e_all >= -log1mq_all
        out[above] = 0.0
        rest = ~above
        e, s, qq, log1mq = e_all[rest], s_all[rest], q_all[rest], log1mq_all[rest]
        logq = np.log(qq)
        # y* with e^{−ε} = 1 − q + q e^{(2y−1)/(2σ²)}; e^{−ε} − (1−q) = expm1(−ε) + q > 0.
        ystar = s**2 * (np.log(np.expm1(-e) + qq) - logq) + 0.5
        # δ = Φ(y*/σ)(1 − e^ε(1−q)) − e^ε q Φ((y*−1)/σ)
        log_first = special.log_ndtr(ystar / s) + np.log(-np.expm1(e + log1mq))
        log_second = e + logq + special.log_ndtr((ystar - 1) / s)
        out[rest] = np.exp(_log_sub(log_first, log_second))
    return np.clip(out, 0.0, 1.0)


@dataclass(frozen=True, eq=False)
class PrivacyLossDistribution:
    """A pessimistic PLD on a grid of ``interval`` nats; one pmf per neighbouring direction.

    Build one with the ``from_*`` class methods (or ``PrivacyProfile.pld()``), compose with
    :meth:`compose` and :meth:`self_compose`, query with :meth:`delta` and :meth:`epsilon`.

    >>> rr = PrivacyLossDistribution.from_randomized_response(math.log(3), 2, 1e-4)
    >>> round(rr.delta(0.0), 6)                 # TV distance of RR(ln 3) = 1/2
    0.5
    """

    interval: float
    _pmfs: tuple[_PMF, ...]

    # ---- queries --------------------------------------------------------------------------
    @property
    def infinity_mass(self) -> float:
        """Largest probability of an infinite privacy loss over the directions."""
        return max(p.infinity_mass for p in self._pmfs)

    @property
    def num_directions(self) -> int:
        """1 for a symmetric pair, 2 for add/remove kept separately."""
        return len(self._pmfs)

    def support(self) -> tuple[float, float]:
        """Smallest and largest finite loss on the grid, over the directions."""
        # The ends of each grid, as ``losses`` computes them, without building the grid.
        lows = [float(p.offset) * p.interval for p in self._pmfs if p.probs.size]
        highs = [
            float(p.offset + p.probs.size - 1) * p.interval for p in self._pmfs if p.probs.size
        ]
        if not lows:
            return (math.inf, math.inf)
        return float(min(lows)), float(max(highs))

    def delta(self, epsilon: float) -> float:
        """Upper bound on the hockey-stick divergence δ(ε) (max over directions).

        >>> PrivacyLossDistribution.from_privacy_parameters(1.0, 1e-6, 1e-4).delta(2.0)
        1e-06
        """
        eps = as_real("epsilon", epsilon, allow_inf=True)
        if eps == -math.inf:
            return 1.0
        return max(p.delta(eps) for p in self._pmfs)

    def epsilon(self, delta: float) -> float:
        """Smallest ε ≥ 0 with δ(ε) ≤ ``delta`` for this PLD (``math.inf`` if none).

        >>> round(PrivacyLossDistribution.from_laplace(1.0, 1.0, 1e-4).epsilon(0.0), 6)
        1.0
        """
        d = as_probability("delta", delta)
        return float(max(max(p.epsilon(d) for p in self._pmfs), 0.0))

    # ---- composition ----------------------------------------------------------------------
    def compose(self, other: PrivacyLossDistribution) -> PrivacyLossDistribution:
        """PLD of running this mechanism and then ``other`` (FFT convolution)."""
        if not isinstance(other, PrivacyLossDistribution):
            raise ParameterError("other", other, "a PrivacyLossDistribution")
        if not math.isclose(self.interval, other.interval, rel_tol=1e-12):
            raise ParameterError(
                "other.interval", other.interval, f"equal to this PLD's interval {self.interval}"
            )
        if len(self._pmfs) == len(other._pmfs):
            pairs = list(zip(self._pmfs, other._pmfs, strict=True))
        elif len(self._pmfs) == 1:
            pairs = [(self._pmfs[0], p) for p in other._pmfs]
        elif len(other._pmfs) == 1:
            pairs = [(p, other._pmfs[0]) for p in self._pmfs]
        else:  # pragma: no cover - at most two directions exist
            raise InternalError("incompatible PLD directions")
        return PrivacyLossDistribution(self.interval, tuple(_compose_pair(a, b) for a, b in pairs))

    def self_compose(self, k: int) -> PrivacyLossDistribution:
        """PLD of k independent runs: one FFT power in the frequency domain."""
        n = as_positive_int("k", k)
        if n == 1:
            return self
        return PrivacyLossDistribution(
            self.interval, tuple(_self_compose(p, n) for p in self._pmfs)
        )

    @classmethod
    def compose_all(
        cls, items: Sequence[tuple[PrivacyLossDistribution, int]]
    ) -> PrivacyLossDistribution:
        """Composition of each PLD taken k times: one FFT product for the whole sequence.

        >>> g = PrivacyLossDistribution.from_gaussian(2.0, 1.0, 1e-4)
        >>> lap = PrivacyLossDistribution.from_laplace(1.0, 1.0, 1e-4)
        >>> a = PrivacyLossDistribution.compose_all([(g, 4), (lap, 1)]).epsilon(1e-6)
        >>> b = g.self_compose(4).compose(lap).epsilon(1e-6)
        >>> abs(a - b) < 1e-6
        True
        """
        if not items:
            raise ParameterError("items", items, "a non-empty list of (PLD, count) pairs")
        plds = [p for p, _ in items]
        counts = [as_positive_int("count", k) for _, k in items]
        h = plds[0].interval
        for p in plds:
            if not isinstance(p, PrivacyLossDistribution):
                raise ParameterError("items", p, "(PrivacyLossDistribution, count) pairs")
            if not math.isclose(p.interval, h, rel_tol=1e-12):
                raise ParameterError("items", "mixed intervals", "PLDs on the same grid")
        directions = max(len(p._pmfs) for p in plds)
        pmfs = []
        for d in range(directions):
            chosen = [
                (p._pmfs[d] if len(p._pmfs) > 1 else p._pmfs[0], k)
                for p, k in zip(plds, counts, strict=True)
            ]
            pmfs.append(
                chosen[0][0] if len(chosen) == 1 and chosen[0][1] == 1 else _compose_many(chosen)
            )
        return cls(h, tuple(pmfs))

    # ---- constructors ---------------------------------------------------------------------
    @classmethod
    def _from_curve(
        cls, interval: float, lo: float, hi: float, delta_fn: Callable[[ArrayF], ArrayF]
    ) -> _PMF:
        k_lo, k_hi = math.floor(lo / interval), math.ceil(hi / interval)
        _check_size(k_hi - k_lo + 1, interval)
        nodes = np.arange(k_lo, k_hi + 1, dtype=np.int64)
        return _connect_dots(
            interval, nodes, delta_fn(np.asarray(nodes * interval, dtype=np.float64))
        )

    @classmethod
    def from_gaussian(
        cls, sigma: float, sensitivity: float, interval: float
    ) -> PrivacyLossDistribution:
        """Gaussian mechanism N(0, σ²) with L2 sensitivity Δ; the loss is N(μ, 2μ), μ = Δ²/(2σ²).

        >>> round(PrivacyLossDistribution.from_gaussian(1.0, 1.0, 1e-4).delta(1.0), 5)
        0.12694
        """
        s = as_positive("sigma", sigma)
        d = as_positive("sensitivity", sensitivity)
        h = as_positive("interval", interval)
        mu = d * d / (2 * s * s)
        spread = _Z_TAIL * math.sqrt(2 * mu)
        pmf = cls._from_curve(h, mu - spread, mu + spread, lambda e: _gaussian_delta(s, d, e))
        return cls(h, (pmf,))

    @classmethod
    def from_laplace(
        cls, scale: float, sensitivity: float, interval: float
    ) -> PrivacyLossDistribution:
        """Laplace mechanism with scale b and L1 sensitivity Δ; the loss lies in [−Δ/b, Δ/b]."""
        b = as_positive("scale", scale)
        d = as_positive("sensitivity", sensitivity)
        h = as_positive("interval", interval)
        eps0 = d / b
        return cls(h, (cls._from_curve(h, -eps0, eps0, lambda e: _laplace_delta(eps0, e)),))

    @classmethod
    def from_randomized_response(
        cls, epsilon: float, k: int, interval: float
    ) -> PrivacyLossDistribution:
        """k-ary randomized response: losses ε, 0, −ε w.p. a, (k−2)b, b (a = e^ε b)."""
        eps = as_nonnegative("epsilon", epsilon)
        kk = as_positive_int("k", k, minimum=2)
        h = as_positive("interval", interval)
        b = 1.0 / (math.exp(eps) + kk - 1) if eps < 700 else 0.0
        a = 1.0 - (kk - 1) * b
        losses = np.array([eps, 0.0, -eps])
        masses = np.array([a, (kk - 2) * b, b])
        return cls(h, (_pmf_from_atoms(h, losses, masses, 0.0),))

    @classmethod
    def from_privacy_parameters(
        cls, epsilon: float, delta: float, interval: float
    ) -> PrivacyLossDistribution:
        """Dominating pair of (ε, δ)-DP (Kairouz, Oh & Viswanath 2015, Theorem 2.1).

        Loss +∞ w.p. δ, ε w.p. (1−δ)e^ε/(1+e^ε), −ε w.p. (1−δ)/(1+e^ε); its δ(ε′) for ε′ < ε
        is Property 3 of Ünsal & Önen 2023: 1 − (e^{ε′}+1)(1−δ)/(e^ε+1).
        """
        eps = as_nonnegative("epsilon", epsilon)
        dl = as_probability("delta", delta)
        h = as_positive("interval", interval)
        low = (1 - dl) * float(special.expit(-eps))
        losses = np.array([eps, -eps])
        masses = np.array([(1 - dl) - low, low])
        return cls(h, (_pmf_from_atoms(h, losses, masses, dl),))

    @classmethod
    def from_discrete_laplace(
        cls, scale: float, sensitivity: int, interval: float
    ) -> PrivacyLossDistribution:
        """Discrete Laplace P(k) ∝ r^{|k|}, r = e^{−1/scale}, shift Δ: finitely many losses.

        Loss λ(|k−Δ| − |k|): Δλ w.p. P(k ≤ 0) = 1/(1+r), −Δλ w.p. P(k ≥ Δ) = r^Δ/(1+r),
        λ(Δ − 2k) w.p. P(k) for 0 < k < Δ.
        """
        t = as_positive("scale", scale)
        d = as_positive_int("sensitivity", sensitivity)
        h = as_positive("interval", interval)
        lam = 1.0 / t
        if d > _DLAP_ATOMS_MAX and 2.0 * lam <= h:
            # Δ − 1 atoms spaced 2λ ≤ h apart (a curator sum has Δ in the millions): δ at the
            # grid nodes from geometric series instead of sorting and summing every atom.
            return cls(h, (_dlap_pmf_closed(lam, d, h),))
        # Here Δ ≤ 2048 or the atoms are > h apart, so the grid (checked before the Δ − 1
        # atoms are built) is at least as large as the atom count.
        span = 2.0 * d * lam / h
        if not span < 2.0**62:
            raise PLDTooLarge(2**62, h)
        _check_size(math.ceil(span) + 2, h)
        r = math.exp(-lam)
        k = np.arange(1, d, dtype=np.float64)
        losses = np.concatenate([[d * lam, -d * lam], lam * (d - 2 * k)])
        masses = np.concatenate(
            [[1 / (1 + r), math.exp(-lam * d) / (1 + r)], (1 - r) / (1 + r) * np.exp(-lam * k)]
        )
        return cls(h, (_pmf_from_atoms(h, losses, masses, 0.0),))

    @classmethod
    def from_discrete_gaussian(
        cls, sigma: float, sensitivity: int, interval: float
    ) -> PrivacyLossDistribution:
        """Discrete Gaussian P(k) ∝ e^{−k²/(2σ²)} (Canonne, Kamath & Steinke 2020), shift Δ.

        Loss at k is (Δ² − 2kΔ)/(2σ²). The support is cut where the remaining mass is below
        1e-17 per side; the high-loss tail goes to +∞, the low-loss tail to the lowest atom.
        Up to σ = 4096 one atom per k; above, blocks of consecutive k at their highest loss
        with rigorously bounded masses (:func:`_dgauss_pmf_blocked`), so memory and time grow
        with the loss range over h, not with σ. The grid size is checked before any array.

        >>> pld = PrivacyLossDistribution.from_discrete_gaussian(1.7e7, 2**21, 2e-4)
        >>> 0.0 < pld.delta(1.0) < 1e-3
        True
        """
        s = as_positive("sigma", sigma)
        d = as_positive_int("sensitivity", sensitivity)
        h = as_positive("interval", interval)
        cut, step = _dgauss_loss_range(s, d)
        span = 2 * cut * step / h  # grid points between the highest and lowest kept loss
        if not span < 2.0**62:
            raise PLDTooLarge(2**62, h)
        _check_size(math.ceil(span) + 2, h)
        if s > _DGAUSS_EXACT_SIGMA:
            return cls(h, (_dgauss_pmf_blocked(s, d, h),))
        big = math.ceil(40 * s) + 2
        ks = np.arange(-big, big + 1, dtype=np.float64)
        logw = -(ks * ks) / (2 * s * s)
        logp = logw - special.logsumexp(logw)
        p = np.exp(logp)
        keep = np.abs(ks) <= cut
        hi_tail = float(p[ks < -cut].sum())  # large negative k: large loss → +∞
        lo_tail = float(p[ks > cut].sum())
        kk = ks[keep]
        losses = (d * d - 2 * kk * d) / (2 * s * s)
        masses = p[keep].copy()
        masses[-1] += lo_tail
        return cls(h, (_pmf_from_atoms(h, losses, masses, hi_tail),))

    @classmethod
    def from_subsampled_gaussian(
        cls, noise_multiplier: float, sampling_rate: float, interval: float
    ) -> PrivacyLossDistribution:
        """Poisson-subsampled Gaussian, sensitivity 1, add/remove neighbours (two directions)."""
        s = as_positive("noise_multiplier", noise_multiplier)
        q = as_probability("sampling_rate", sampling_rate, open_low=True, open_high=True)
        h = as_positive("interval", interval)
        log1mq = math.log1p(-q)
        y_hi = 1 + _Z_TAIL * s
        loss_hi = float(np.logaddexp(log1mq, math.log(q) + (2 * y_hi - 1) / (2 * s * s)))
        remove = cls._from_curve(
            h, log1mq, loss_hi, lambda e: _subsampled_gaussian_deltas(s, q, e, remove=True)
        )
        add = cls._from_curve(
            h, -loss_hi, -log1mq, lambda e: _subsampled_gaussian_deltas(s, q, e, remove=False)
        )
        return cls(h, (remove, add))

    @classmethod
    def from_discrete_subsampled_gaussian(
        cls, sigma: float, sensitivity: int, sampling_rate: float, interval: float
    ) -> PrivacyLossDistribution:
        """Poisson-subsampled discrete Gaussian on the integers, add/remove (two directions).

        remove: P = (1−q)·N_Z(0, σ²) + q·N_Z(Δ, σ²), Q = N_Z(0, σ²), loss at k
        log(1 − q + q·e^{(2kΔ − Δ²)/(2σ²)}); add: P = Q of remove and vice versa (negated loss).
        Built exactly from the atoms k ∈ [−W, Δ + W], W = ⌈√150·σ⌉ + 2 (Canonne, Kamath &
        Steinke 2020, Definition 1 for the pmf); the P-mass outside is bounded by
        :func:`_dgauss_log_out` and put at +∞ loss, which only increases every δ(ε).

        >>> pld = PrivacyLossDistribution.from_discrete_subsampled_gaussian(0.4, 1, 0.1, 1e-4)
        >>> pld.delta(6.0) > 2.6e-3
        True
        """
        s = as_positive("sigma", sigma)
        d = as_positive_int("sensitivity", sensitivity)
        q = as_probability("sampling_rate", sampling_rate, open_low=True, open_high=True)
        h = as_positive("interval", interval)
        w = math.ceil(_DSG_WIDTH * s) + 2
        lo, hi = -w, d + w
        _check_size(hi - lo + 1, h)  # one atom per k: refused before the arrays are built
        ks = np.arange(lo, hi + 1, dtype=np.float64)
        log_z = _dgauss_log_z(s)  # ≤ the true log Z: in-window masses are over-, not under-stated
        log_p0 = -(ks * ks) / (2 * s * s) - log_z
        log_mix = np.logaddexp(
            math.log1p(-q) + log_p0, math.log(q) - ((ks - d) ** 2) / (2 * s * s) - log_z
        )
        loss = np.logaddexp(math.log1p(-q), math.log(q) + (2 * ks * d - d * d) / (2 * s * s))
        out_mix = math.exp(
            float(
                np.logaddexp(
                    math.log1p(-q) + _dgauss_log_out(s, 0.0, lo, hi),
                    math.log(q) + _dgauss_log_out(s, float(d), lo, hi),
                )
            )
        )
        out_p0 = math.exp(_dgauss_log_out(s, 0.0, lo, hi))
        remove = _pmf_from_atoms(h, loss, np.exp(log_mix), min(1.0, out_mix))
        add = _pmf_from_atoms(h, -loss, np.exp(log_p0), min(1.0, out_p0))
        return cls(h, (remove, add))

    @classmethod
    def maximum(cls, plds: Sequence[PrivacyLossDistribution]) -> PrivacyLossDistribution:
        """A PLD whose δ-curve dominates every input's (parallel composition: the worst part).

        The pointwise maximum of hockey-stick curves is convex in e^ε, so connect-the-dots on
        the common grid gives a valid dominating pair.
        """
        if not plds:
            raise ParameterError("plds", plds, "a non-empty list of PrivacyLossDistribution")
        h = plds[0].interval
        pmfs = [p for pld in plds for p in pld._pmfs]
        if any(not math.isclose(pld.interval, h, rel_tol=1e-12) for pld in plds):
            raise ParameterError("plds", "mixed intervals", "PLDs on the same grid")
        finite = [p for p in pmfs if p.probs.size]
        if not finite:
            return cls(h, (_PMF(h, 0, np.zeros(0), max(p.infinity_mass for p in pmfs)),))
        lo = min(p.offset for p in finite)
        hi = max(p.offset + p.probs.size - 1 for p in finite)
        nodes = np.arange(lo, hi + 1, dtype=np.int64)
        deltas = np.max([_grid_deltas(p, nodes) for p in pmfs], axis=0)
        return cls(h, (_connect_dots(h, nodes, deltas),))

    @classmethod
    def from_rdp_curve(
        cls,
        rdp: Callable[[ArrayF], float | ArrayF],
        pure_epsilon: float,
        interval: float,
    ) -> PrivacyLossDistribution:
        """A dominating PLD from an RDP curve alone (used where no exact PLD is known).

        Each ε gives the certified δ(ε) of the RDP conversion (Canonne, Kamath & Steinke 2020,
        Proposition 12); the true curve is convex in e^ε and below these points, hence below
        their lower convex envelope, through which connect-the-dots is drawn.
        """
        from infodp.accounting.conversions import rdp_to_delta
        from infodp.accounting.rdp import DEFAULT_ORDERS

        h = as_positive("interval", interval)
        values = np.asarray(rdp(DEFAULT_ORDERS), dtype=np.float64)
        top = pure_epsilon if math.isfinite(pure_epsilon) else 0.0
        if not math.isfinite(pure_epsilon):
            top = 1.0
            while rdp_to_delta(values, DEFAULT_ORDERS, top) > 1e-16 and top < 1e4:
                top *= 1.5
        k_top = math.ceil(top / h)
        nodes = _unique_ints(np.linspace(0, k_top, min(k_top + 1, 4001)).round().astype(np.int64))
        eps = nodes * h
        bounds = np.array([rdp_to_delta(values, DEFAULT_ORDERS, float(e)) for e in eps])
        if math.isfinite(pure_epsilon):
            bounds[eps >= pure_epsilon] = 0.0
        hull = _lower_convex_envelope(np.exp(eps), bounds)
        return cls(h, (_connect_dots(h, nodes, hull),))


def _grid_deltas(pmf: _PMF, nodes: npt.NDArray[np.int64]) -> ArrayF:
    eps = nodes * pmf.interval
    if pmf.probs.size == 0:
        return np.full(eps.shape, pmf.infinity_mass)
    a, log_b = pmf._tails
    idx = np.searchsorted(pmf.losses, eps, side="right")
    values = pmf.infinity_mass + a[idx] - np.exp(np.minimum(eps + log_b[idx], 700.0))
    return np.asarray(np.clip(values, pmf.infinity_mass, 1.0), dtype=np.float64)


def _lower_convex_envelope(x: ArrayF, y: ArrayF) -> ArrayF:
    """Values at ``x`` of the lower convex envelope of the points (x, y) and (0, 1)."""
    pts_x = np.concatenate([[0.0], x])
    pts_y = np.concatenate([[1.0], y])
    hull: list[int] = []
    for i in range(pts_x.size):
        while len(hull) >= 2:
            i0, i1 = hull[-2], hull[-1]
            cross = (pts_x[i1] - pts_x[i0]) * (pts_y[i] - pts_y[i0]) - (pts_y[i1] - pts_y[i0]) * (
                pts_x[i] - pts_x[i0]
            )
            if cross <= 0:
                hull.pop()
            else:
                break
        hull.append(i)
    return np.asarray(np.interp(x, pts_x[hull], pts_y[hull]), dtype=np.float64)
