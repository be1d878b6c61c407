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
group. Up to :data:`EXACT_GROUPS` groups are composed by :func:`infodp.accounting.compose`;
beyond, :class:`ScheduleProfile` builds all groups' connect-the-dots PLDs on common grid
nodes in vectorised blocks and composes them as one product of characteristic functions
(Zhu, Dong & Wang 2022), with the same certified truncation. The result is a certified upper
bound; its excess over the exact schedule shrinks with ``resolution`` (about three times
``resolution`` relatively in ε).

>>> runs = [(1.0 + i / 1000, 0.01, 10) for i in range(100)]     # 100 distinct σ, 10 steps each
>>> p = schedule_profile(runs)
>>> exact = compose(*(subsampled_gaussian_profile(s, q).repeat(k) for s, q, k in runs))
>>> 1.0 <= p.epsilon(1e-5) / exact.epsilon(1e-5) < 1.001
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp._validate import as_positive, as_positive_int, as_probability
from infodp.accounting.pld import (
    _CHERNOFF_TS,
    _PMF,
    _Z_TAIL,
    PrivacyLossDistribution,
    _check_size,
    _chernoff_window,
    _next_fast_len,
    _subsampled_gaussian_deltas,
    _trim,
)
from infodp.accounting.profile import (
    DEFAULT_INTERVAL,
    ComposedProfile,
    PrivacyProfile,
    SubsampledGaussianProfile,
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

DEFAULT_RESOLUTION = 2.5e-4
"""Relative width of the σ and q grid cells: on DP-SGD schedules ε grows by about 3 times
this relatively (σ and q each move by half a cell on average), so the certified value stays
within 1e-3 of the exact schedule's."""

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
    profile = compose(*parts)
    if len(groups) <= EXACT_GROUPS or any(q >= 1.0 for _, q in groups):
        return profile
    assert isinstance(profile, ComposedProfile)
    return ScheduleProfile(profile.parts)


@dataclass(frozen=True)
class ScheduleProfile(ComposedProfile):
    """Many distinct subsampled Gaussian steps; its PLD is built in vectorised blocks.

    The same composition as :class:`ComposedProfile` (Rényi, KL and the rest unchanged), but
    the PLD neither builds one object per step nor one full-length FFT per step: the steps'
    connect-the-dots pmfs (Doroshenko et al. 2022, Algorithm 1) are computed in blocks on
    common grid nodes in one numpy pass each; a block is composed as the product of its
    steps' characteristic functions raised to their counts (Koskela, Jälkö & Honkela 2020;
    Zhu, Dong & Wang 2022) on its own short window, and the blocks' pmfs are then multiplied
    the same way at the length of the whole composition. Every truncation is certified as in
    :mod:`infodp.accounting.pld` (Chernoff window, the mass beyond it put at +∞ loss) and
    connect-the-dots dominates on any node set, so this is an upper bound like composing the
    parts one by one (equal to it within ~1e-5 relatively on DP-SGD schedules).
    """

    def _pld(self, interval: float) -> PrivacyLossDistribution:
        steps = [(p, k) for p, k in self.parts if isinstance(p, SubsampledGaussianProfile)]
        if len(steps) != len(self.parts):
            return super()._pld(interval)
        sigmas = np.array([p.noise_multiplier for p, _ in steps], dtype=np.float64)
        rates = np.array([p.sampling_rate for p, _ in steps], dtype=np.float64)
        counts = np.array([k for _, k in steps], dtype=np.float64)
        return PrivacyLossDistribution(
            interval,
            tuple(
                _compose_steps(sigmas, rates, counts, remove, interval) for remove in (True, False)
            ),
        )


ArrayF = npt.NDArray[np.float64]

# Floats in one block of step curves (a few tens of MB with its temporaries).
_BLOCK = 2**20
# Moment generating function cells: one per node where |loss| ≤ _FINE_LOSS nats, beyond it
# cells _CELL_GROWTH wider (relatively) than the loss they start at.
_FINE_LOSS = 0.01
_CELL_GROWTH = 0.1
# δ is evaluated at every node where |ε| ≤ _FINE_NODES nats and at every _TAIL_STRIDE-th
# beyond (measured: ε changes by < 1e-5 relatively on DP-SGD schedules).
_FINE_NODES = 0.1
_TAIL_STRIDE = 8


def _ranges(
    sigmas: ArrayF, rates: ArrayF, remove: bool, h: float
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Grid nodes [lo, hi] of each step's loss (as ``from_subsampled_gaussian``)."""
    log1mq = np.log1p(-rates)
    y_hi = 1 + _Z_TAIL * sigmas
    loss_hi = np.logaddexp(log1mq, np.log(rates) + (2 * y_hi - 1) / (2 * sigmas**2))
    lo, hi = (log1mq, loss_hi) if remove else (-loss_hi, -log1mq)
    return np.floor(lo / h).astype(np.int64), np.ceil(hi / h).astype(np.int64)


def _blocks(
    sigmas: ArrayF, rates: ArrayF, remove: bool, h: float
) -> Iterator[tuple[npt.NDArray[np.intp], int, ArrayF, ArrayF]]:
    """(step indices, first node, pmfs as rows, +∞ masses) on common nodes, block by block.

    Connect-the-dots (Doroshenko et al. 2022, Algorithm 1) on the nodes of :func:`_nodes`:
    mass y_{i−1} + z_i at node i with y_i = Δδ_i/(e^{−g_i} − 1), z_i = Δδ_i/(e^{g_i} − 1)
    (g_i the gap to the next node), y_{−1} = 1 − δ_0, and the last δ at +∞. A block's nodes
    cover every step's own range; on the extra nodes δ is exact
    (1 − e^ε below the least loss), and more nodes only tighten the dominating pair.
    """
    lo, hi = _ranges(sigmas, rates, remove, h)
    order = np.argsort(hi - lo, kind="stable")
    start = 0
    while start < order.size:
        stop = start + 1
        b_lo, b_hi = int(lo[order[start]]), int(hi[order[start]])
        while stop < order.size:
            n_lo = min(b_lo, int(lo[order[stop]]))
            n_hi = max(b_hi, int(hi[order[stop]]))
            if (stop - start + 1) * (n_hi - n_lo + 1) > _BLOCK:
                break
            b_lo, b_hi, stop = n_lo, n_hi, stop + 1
        idx = order[start:stop]
        start = stop
        _check_size(b_hi - b_lo + 1, h)
        nodes = _nodes(b_lo, b_hi, h)
        d = _subsampled_gaussian_deltas(
            sigmas[idx, None], rates[idx, None], (nodes * h).astype(np.float64)[None, :], remove
        )
        # δ is non-increasing in ε; round-off that breaks this is repaired upwards.
        d = np.maximum.accumulate(d[:, ::-1], axis=1)[:, ::-1]
        dd = np.diff(d, axis=1)
        gaps = np.diff(nodes) * h
        at = np.empty_like(d)
        at[:, 0] = 1.0 - d[:, 0]
        at[:, 1:] = dd / np.expm1(-gaps)
        at[:, :-1] += dd / np.expm1(gaps)
        np.maximum(at, 0.0, out=at)
        mass = np.zeros((idx.size, b_hi - b_lo + 1))
        mass[:, nodes - b_lo] = at
        yield idx, b_lo, mass, d[:, -1].copy()


def _nodes(lo: int, hi: int, h: float) -> npt.NDArray[np.int64]:
    """Grid nodes where δ is evaluated: every node where |ε| ≤ _FINE_NODES, every
    _TAIL_STRIDE-th beyond (the tails carry little mass; connect-the-dots is a dominating
    pair on any nodes, Doroshenko et al. 2022, so sparser tail nodes only loosen it there)."""
    every = np.arange(lo, hi + 1, dtype=np.int64)
    keep = (np.abs(every * h) <= _FINE_NODES) | (every % _TAIL_STRIDE == 0)
    keep[0] = keep[-1] = True
    return np.asarray(every[keep], dtype=np.int64)


def _cell_starts(first: int, n: int, h: float) -> npt.NDArray[np.intp]:
    """First node of each cell: single nodes where |loss| ≤ _FINE_LOSS (the bulk of a DP-SGD
    step's loss), then cells growing by _CELL_GROWTH, so the rounding inside a cell stays a
    small fraction of its loss."""
    loss = (first + np.arange(n, dtype=np.float64)) * h
    # Index of each node's cell, monotone in the node: the bulk one by one, then log-spaced.
    key = np.where(
        np.abs(loss) <= _FINE_LOSS,
        np.round(loss / h),
        np.sign(loss)
        * (
            _FINE_LOSS / h
            + np.floor(
                np.log(np.maximum(np.abs(loss), _FINE_LOSS) / _FINE_LOSS) / math.log1p(_CELL_GROWTH)
            )
        ),
    )
    return np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))


def _log_mgfs(first: int, mass: ArrayF, h: float) -> tuple[ArrayF, ArrayF]:
    """Upper bounds on log E[e^{±tL}] of each row at the Chernoff orders (rows × orders).

    As ``pld._log_mgf_bounds``, the pmf is summed over cells of the grid with every loss
    rounded up (for +t) or down (for −t), which can only increase the moment generating
    function; here the cells are single nodes in the bulk, where rounding would shift the
    window of thousands of composed steps, and log-spaced in the tails.
    """
    rows, n = mass.shape
    starts = _cell_starts(first, n, h)
    ends = np.concatenate([starts[1:], [n]]) - 1
    with np.errstate(divide="ignore"):
        logp = np.log(np.add.reduceat(mass, starts, axis=1))
    base = (first + starts) * h
    up = (first + ends) * h
    ts = _CHERNOFF_TS[:, None, None]
    pos = np.empty((rows, ts.size))
    neg = np.empty((rows, ts.size))
    for r in range(0, rows, 16):
        lp = logp[None, r : r + 16, :]
        for out, x in ((pos, lp + ts * up), (neg, lp - ts * base)):
            top = np.max(x, axis=2, keepdims=True)
            top = np.where(np.isfinite(top), top, 0.0)
            with np.errstate(divide="ignore", under="ignore"):
                out[r : r + 16] = (top + np.log(np.exp(x - top).sum(axis=2, keepdims=True)))[
                    :, :, 0
                ].T
    return pos, neg


def _product_of_powers(
    spectra: npt.NDArray[np.complex128], counts: ArrayF
) -> npt.NDArray[np.complex128]:
    """Π_g spectra[g]^{counts[g]} by repeated squaring (multiplications only, no logarithms).

    Every |φ| ≤ 1 (a sub-probability's transform), so a product can only underflow where the
    final value is below the smallest float anyway.
    """
    k = counts.astype(np.int64)
    out = np.prod(spectra, axis=0, where=((k & 1) == 1)[:, None])
    base, k = spectra, k >> 1
    while np.any(k):
        live = k > 0
        base, k = base[live] ** 2, k[live]
        out *= np.prod(base, axis=0, where=((k & 1) == 1)[:, None])
        k = k >> 1
    return np.asarray(out, dtype=np.complex128)


def _compose_steps(sigmas: ArrayF, rates: ArrayF, counts: ArrayF, remove: bool, h: float) -> _PMF:
    """One direction's pmf of the composition of every step taken ``counts`` times.

    Blocks of steps are composed on their own short windows (:func:`_compose_block`); the
    block pmfs, kept (a few hundred thousand floats in all), are then multiplied in the
    Fourier domain at the length of the whole composition's certified window.
    """
    blocks: list[tuple[int, ArrayF]] = []
    log_pos = np.zeros(_CHERNOFF_TS.size)
    log_neg = np.zeros(_CHERNOFF_TS.size)
    full_lo = full_hi = 0
    log_fin = tails = 0.0
    with np.errstate(divide="ignore", under="ignore"):
        for idx, first, mass, inf in _blocks(sigmas, rates, remove, h):
            b_lo, block, b_tail = _compose_block(first, mass, counts[idx], h)
            log_fin += float(counts[idx] @ np.log1p(-np.minimum(inf, 1.0)))
            tails += b_tail
            # The block's own moments (not its steps'): its pmf is what enters the sum.
            pos, neg = _log_mgfs(b_lo, block[None, :], h)
            log_pos += pos[0]
            log_neg += neg[0]
            full_lo += b_lo
            full_hi += b_lo + block.size - 1
            blocks.append((b_lo, block))
    lo, hi, tail = _chernoff_window(h, full_lo, full_hi, log_pos, log_neg)
    _check_size(hi - lo + 1, h)
    # The length holds the window (wrapping inside it would move mass down) and every block.
    size = _next_fast_len(max(hi - lo + 1, *(block.size for _, block in blocks)))
    product = np.ones(size // 2 + 1, dtype=np.complex128)
    with np.errstate(under="ignore"):
        for _, block in blocks:
            # Π_b φ_b (Koskela, Jälkö & Honkela 2020): the transform of a sum.
            product *= np.fft.rfft(block, size)
    composed = np.fft.irfft(product, size)
    window = composed[(lo - full_lo + np.arange(hi - lo + 1)) % size]
    inf_mass = -math.expm1(log_fin) if log_fin > -math.inf else 1.0
    return _trim(h, lo, window, inf_mass + tails + tail)


def _compose_block(first: int, mass: ArrayF, counts: ArrayF, h: float) -> tuple[int, ArrayF, float]:
    """(first node, pmf, mass put at +∞) of one block's steps composed, on its own window.

    A block holds a few hundred steps, whose sum spans far fewer nodes than the whole
    schedule's: its steps' transforms are taken at that short length (Chernoff window of the
    block, the mass beyond it counted at +∞ as in :func:`_compose_steps`), and only the
    block's pmf is transformed at the full length.
    """
    pos, neg = _log_mgfs(first, mass, h)
    n = int(counts.sum())
    b_full_lo, b_full_hi = n * first, n * (first + mass.shape[1] - 1)
    lo, hi, tail = _chernoff_window(h, b_full_lo, b_full_hi, counts @ pos, counts @ neg)
    _check_size(hi - lo + 1, h)
    size = _next_fast_len(max(hi - lo + 1, mass.shape[1]))
    spectrum = _product_of_powers(np.fft.rfft(mass, size, axis=1), counts)
    block = np.fft.irfft(spectrum, size)[(lo - b_full_lo + np.arange(hi - lo + 1)) % size]
    return lo, np.maximum(block, 0.0), tail


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
