"""The article's Rényi capacity C_α = sup_P D_α(P_XY ‖ P_X P_Y): search and certificates."""

from __future__ import annotations

import heapq
import itertools
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.optimize import minimize

from infodp.channel._numerics import (
    _INF,
    FloatArray,
    _drop_null_outputs,
    _expand_outputs,
    _log,
    _log_matmul_exp,
    _log_scale,
    _lse,
    _order_allowance,
    _pairwise_renyi,
    _softmax,
)
from infodp.channel.certificates import CellBounds, bisect, cell_bounds, tangent_basis
from infodp.channel.regions import Regions, local_regions
from infodp.channel.result import CapacityResult
from infodp.channel.shannon import _shannon_capacity
from infodp.channel.sibson import _sibson_capacity


def _renyi_information(
    W: FloatArray, logW: FloatArray, p: FloatArray, alpha: float
) -> tuple[float, FloatArray]:
    """I_α(P; W) = D_α(P_XY ‖ P_X P_Y) ("Differential Privacy and Information Theory", 2022,
    "Mutual information") and ∂I_α/∂P.

    I_α = 1/(α−1) log G,  G = Σ_x P_x Σ_y q_y (W_xy/q_y)^α,  q = PW  (for α ≠ 1, α < ∞).
    ∂G/∂P_x = A_x + (1−α) Σ_y W_xy t_y with A_x = Σ_y q_y (W_xy/q_y)^α, t_y = Σ_x P_x (W_xy/q_y)^α.
    """
    q = p @ W
    log_q = _log(q)
    log_p = _log(p)
    with np.errstate(invalid="ignore"):
        log_r = np.where(W > 0, logW - log_q[None, :], -np.inf)
    ar = alpha * log_r
    log_a = _lse(log_q[None, :] + ar, axis=1)
    log_g = _lse(log_p + log_a)
    value = log_g / (alpha - 1.0)
    log_t = _lse(log_p[:, None] + ar, axis=0)
    with np.errstate(under="ignore", over="ignore"):
        grad_g = np.exp(log_a - log_g) + (1.0 - alpha) * (W @ np.exp(log_t - log_g))
    return float(value), grad_g / (alpha - 1.0)


_Z_BOUND = 35.0
_LOG_TINY = math.log(float(np.finfo(np.float64).tiny)) + 1.0  # W^α is a normal float above


def _local_max_renyi(
    W: FloatArray, logW: FloatArray, alpha: float, start: FloatArray
) -> tuple[float, FloatArray]:
    """Local maximum of I_α over the simplex from ``start`` (L-BFGS-B on softmax logits)."""

    def negative(z: FloatArray) -> tuple[float, FloatArray]:
        p = _softmax(z)
        value, grad = _renyi_information(W, logW, p, alpha)
        gz = p * (grad - float(p @ grad))
        return -value, -gz

    z0 = np.clip(_log(np.maximum(start, 1e-15)), -_Z_BOUND, _Z_BOUND)
    z0 = np.clip(z0 - z0.max(), -_Z_BOUND, _Z_BOUND)
    res = minimize(
        negative,
        z0,
        jac=True,
        method="L-BFGS-B",
        bounds=[(-_Z_BOUND, _Z_BOUND)] * len(z0),
        options={"maxiter": 500, "ftol": 1e-15, "gtol": 1e-12},
    )
    p = _softmax(np.asarray(res.x, dtype=np.float64))
    value, _ = _renyi_information(W, logW, p, alpha)
    return value, p


def _renyi_bnb_upper(
    W: FloatArray,
    logW: FloatArray,
    alpha: float,
    lower: float,
    budget: int,
    tol: float,
    deadline: float = math.inf,
) -> float:
    """Certified upper bound on C_α by branch and bound over the input simplex.

    With G(P) = Σ_x P_x A_x(P), A_x(P) = Σ_y W_xy^α (PW)_y^{1−α}: for α > 1, A_x is convex in P
    (t ↦ t^{1−α} is convex), so on a sub-simplex A_x ≤ U_x = max over its vertices; then
    G ≤ Σ_x P_x U_x, a linear form whose maximum is at a vertex. For α < 1, A_x is concave and
    the same argument bounds G from below, i.e. I_α = log G/(α−1) from above. Simplices are split
    at their longest edge, largest bound first; those that cannot exceed ``lower`` + tol are set
    aside with their bound. The result is the largest bound of all remaining pieces (also
    when stopped by ``budget`` simplices or at ``deadline``, ``time.monotonic()``).
    """
    n = W.shape[0]
    aL = np.where(W > 0, alpha * logW, -np.inf)
    cache: dict[bytes, FloatArray] = {}

    def log_a(v: FloatArray) -> FloatArray:
        key = v.tobytes()
        if key not in cache:
            q = v @ W
            with np.errstate(invalid="ignore"):
                lb = np.where(q > 0, (1.0 - alpha) * _log(q), np.inf if alpha > 1 else -np.inf)
            cache[key] = _log_matmul_exp(aL, lb[:, None])[:, 0]
        return cache[key]

    def bound(verts: FloatArray) -> float:
        la = np.stack([log_a(v) for v in verts])  # vertex × input
        ext = la.max(axis=0) if alpha > 1 else la.min(axis=0)
        with np.errstate(invalid="ignore"):
            terms = np.where(verts > 0, _log(verts) + ext[None, :], -np.inf)
        g = _lse(terms, axis=1)
        return float((g.max() if alpha > 1 else g.min()) / (alpha - 1.0))

    root = np.eye(n)
    heap: list[tuple[float, int, FloatArray]] = [(-bound(root), 0, root)]
    counter = 1
    pruned = -_INF
    edges = list(itertools.combinations(range(n), 2))
    while heap and counter < budget and time.monotonic() <= deadline:
        neg_ub, _, verts = heapq.heappop(heap)
        if -neg_ub <= lower + tol:
            heapq.heappush(heap, (neg_ub, 0, verts))
            break
        i, j = max(edges, key=lambda ij: float(np.abs(verts[ij[0]] - verts[ij[1]]).sum()))
        mid = 0.5 * (verts[i] + verts[j])
        for replaced in (i, j):
            child = verts.copy()
            child[replaced] = mid
            ub = bound(child)
            counter += 1
            if ub > lower + tol:
                heapq.heappush(heap, (-ub, counter, child))
            else:
                pruned = max(pruned, ub)  # a set-aside simplex still bounds C_α by its bound
    return max([-item[0] for item in heap] + [pruned, lower])


@dataclass(slots=True)
class _Search:
    """Best attained value of I_α so far (a lower bound on C_α) and its input."""

    value: float
    p: FloatArray
    local_searches: int = 0


def _branch_and_bound(
    W: FloatArray,
    logW: FloatArray,
    alpha: float,
    search: _Search,
    tol: float,
    max_cells: int,
    deadline: float,
    progress: bool,
    on_round: Callable[[float, int], None] | None = None,
    regions: Regions | None = None,
) -> tuple[float, int]:
    """Certified upper bound on C_α by best-first branch and bound on simplicial cells.

    Cells of the input simplex are bounded by :func:`~infodp.channel.certificates.cell_bounds`
    in batches; the batch with the largest bounds is split at longest edges. A cell whose bound
    is within 0.9·``tol`` of the best attained value is set aside (its bound still counts in
    the result); centre values and local ascents from promising centres raise the attained
    value (``search``, updated in place). A child keeps at most its parent's bound (it lies
    inside the parent); batches are bounded on up to four threads (:func:`_workers`). Stops
    when the largest bound is within ``tol`` of the attained value, after ``max_cells``
    cells, or at ``deadline`` (``time.monotonic()``), returning the best upper bound so far
    and the number of cells evaluated. A cell inside one of the certified ``regions``
    (:mod:`~infodp.channel.regions`) takes the region's bound.
    """
    n = W.shape[0]
    with np.errstate(under="ignore"):
        A = np.where(W > 0, np.exp(alpha * np.where(W > 0, logW, 0.0)), 0.0)
    Z = tangent_basis(n)
    root = np.eye(n)[None]
    cells_left = _Cells(root, cell_bounds(W, A, alpha, root, Z).upper)
    cells = 1
    set_aside = -_INF
    rounds = 0
    bar = _progress_bar(progress)
    workers = _workers()
    pool = ThreadPoolExecutor(workers) if workers > 1 else None
    try:
        while True:
            threshold = search.value + 0.9 * tol
            drop = cells_left.ub <= threshold
            if drop.any():
                set_aside = max(set_aside, float(cells_left.ub[drop].max()))
                cells_left.remove(np.flatnonzero(drop))
            V, ub = cells_left.V, cells_left.ub
            upper = max(float(ub.max()) if len(ub) else -_INF, set_aside, search.value)
            if bar is not None:
                bar.update(upper - search.value, cells)
            if on_round is not None:
                on_round(upper - search.value, cells)
            if (
                upper - search.value <= tol
                or not len(V)
                or cells >= max_cells
                or time.monotonic() > deadline
            ):
                return upper, cells
            batch = min(len(V), 256 if n > 5 else 128, _batch_limit(n, W.shape[1]))
            pick = np.argpartition(-ub, batch - 1)[:batch] if batch < len(V) else np.arange(len(V))
            parents, parent_ub = V[pick], ub[pick]
            cells_left.remove(np.sort(pick))
            children = bisect(parents, W, A, alpha)
            bounds = _bounds(pool, workers, W, A, alpha, children, Z)
            cells += len(children)
            rounds += 1
            best = int(np.argmax(bounds.centre_value))
            if bounds.centre_value[best] > search.value:
                search.value = float(bounds.centre_value[best])
                search.p = bounds.centre[best]
            if rounds % 8 == 1:
                # ascend from the centre of the most promising child
                start = bounds.centre[int(np.argmax(bounds.upper))]
                value, p = _local_max_renyi(W, logW, alpha, start)
                search.local_searches += 1
                if value > search.value:
                    search.value, search.p = value, p
            # a child lies inside its parent, so the parent's bound holds for it too
            child_ub = np.minimum(bounds.upper, np.tile(parent_ub, 2))
            if regions is not None and len(regions):
                child_ub = np.minimum(child_ub, regions.cap(children))
            cells_left.add(children, child_ub)
    finally:
        if pool is not None:
            pool.shutdown()
        if bar is not None:
            bar.close()


# The cell bounds hold a few dozen (children × n × m) float arrays at once, and each output's
# own extremum (α > 2) arrays over the n(n−1)/2 edges of a cell: with 8 inputs and 3 000
# outputs, 512 children took 2.4 GB at α = 50, and 2²¹ elements still 0.8 GB at α = 5.
# Children × n × m is kept at most 2²⁰ (8 MB per array; 0.4 GB there), which leaves the batch
# at 256 up to n·m = 2 048 (8 inputs × 256 outputs).
_CELL_ELEMENTS = 2**20


def _batch_limit(n: int, m: int) -> int:
    """The most parents per round whose children's (2 × batch, n, m) arrays stay within
    :data:`_CELL_ELEMENTS` elements (at least 8).

    >>> _batch_limit(8, 64), _batch_limit(8, 3000)
    (1024, 21)
    """
    return max(8, _CELL_ELEMENTS // (2 * n * m))


class _Cells:
    """The cells still to be refined and their upper bounds, in a buffer that grows by
    doubling; removal moves cells from the end into the holes, so a round costs time in
    proportion to the cells it touches, not to all cells kept."""

    __slots__ = ("_V", "_size", "_ub")

    def __init__(self, V: FloatArray, ub: FloatArray) -> None:
        self._V, self._ub, self._size = V.copy(), ub.copy(), len(V)

    @property
    def V(self) -> FloatArray:
        out: FloatArray = self._V[: self._size]
        return out

    @property
    def ub(self) -> FloatArray:
        out: FloatArray = self._ub[: self._size]
        return out

    def add(self, V: FloatArray, ub: FloatArray) -> None:
        end = self._size + len(V)
        if end > len(self._V):
            grown = max(end, 2 * len(self._V))
            self._V = np.concatenate([self.V, np.empty((grown - self._size, *V.shape[1:]))])
            self._ub = np.concatenate([self.ub, np.empty(grown - self._size)])
        self._V[self._size : end], self._ub[self._size : end] = V, ub
        self._size = end

    def remove(self, index: npt.NDArray[np.intp]) -> None:
        """Drop the cells at ``index`` (sorted, distinct)."""
        kept = self._size - len(index)
        holes = index[index < kept]
        movers = np.setdiff1d(np.arange(kept, self._size), index, assume_unique=True)
        self._V[holes], self._ub[holes] = self._V[movers], self._ub[movers]
        self._size = kept


def _workers() -> int:
    """Threads for cell bounds: the cores this process may use, at most 4 (numpy releases
    the GIL inside the batched products, eigendecompositions and reductions)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - platforms without affinity
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


def _bounds(
    pool: ThreadPoolExecutor | None,
    workers: int,
    W: FloatArray,
    A: FloatArray,
    alpha: float,
    V: FloatArray,
    Z: FloatArray,
) -> CellBounds:
    """:func:`cell_bounds` of a batch, in equal parts on the pool's threads."""
    parts = min(workers, len(V) // 64)
    if parts <= 1 or pool is None:
        return cell_bounds(W, A, alpha, V, Z)
    chunks = np.array_split(V, parts)
    results = list(pool.map(lambda chunk: cell_bounds(W, A, alpha, chunk, Z), chunks))
    return CellBounds(
        np.concatenate([r.upper for r in results]),
        np.concatenate([r.centre_value for r in results]),
        np.concatenate([r.centre for r in results]),
    )


class _Bar:
    """A rich progress bar on the terminal showing the bracket width."""

    def __init__(self) -> None:
        from rich.progress import Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("C_alpha branch and bound"),
            TextColumn("width {task.fields[width]:.3g} nats"),
            TextColumn("{task.fields[cells]} cells"),
            TimeElapsedColumn(),
            transient=True,
        )
        self._task = self._progress.add_task("bnb", total=None, width=math.inf, cells=0)
        self._progress.start()

    def update(self, width: float, cells: int) -> None:
        self._progress.update(self._task, width=width, cells=cells)

    def close(self) -> None:
        self._progress.stop()


def _progress_bar(progress: bool) -> _Bar | None:
    if not progress:
        return None
    from rich.console import Console

    return _Bar() if Console(stderr=True).is_terminal else None


def _renyi_capacity(
    matrix: FloatArray,
    alpha: float,
    tol: float,
    n_starts: int,
    rng: np.random.Generator,
    refine_budget: int,
    time_budget: float = math.inf,
    progress: bool = False,
    on_round: Callable[[float, int], None] | None = None,
) -> CapacityResult:
    """The article's C_α = sup_P I_α(X;Y): a global-search lower bound and a certified upper.

    I_α is not concave in P, so the lower bound is the best of several local searches (from
    the uniform input, the Shannon and Sibson optima, the two-point inputs on the most distant
    row pairs and random starts) and of the cell centres visited by the branch and bound; it
    is attained, never extrapolated. The upper bound is the smallest of: the diameter
    max_{x,x'} D_α(W_x‖W_x') ("Differential Privacy and Information Theory", 2022, "Sibson's
    definition"), for α < 1 Shannon's capacity
    (C_α is non-decreasing in α, the 2022 article), and, when ``refine_budget`` > 0 cells, the
    branch
    and bound of :func:`_branch_and_bound` (stopped early by ``time_budget`` seconds); for
    two or three inputs also the one-cell-at-a-time vertex bound :func:`_renyi_bnb_upper`.
    The branch and bound also bounds its cells by the certified regions and the expansion
    about the best local maximum of :mod:`~infodp.channel.regions` (except at α = 2, where
    the cell bounds alone were faster).
    """
    started = time.monotonic()
    W = _drop_null_outputs(matrix)
    n, m = W.shape
    D = _pairwise_renyi(W, alpha)
    diameter = float(D.max())
    if math.isinf(alpha):
        # C_∞ = max_{x,x'} D_∞(W_x‖W_x') exactly ("Differential Privacy and Information Theory",
        # 2022, "Connecting differential privacy to
        # Shannon"); the supremum is approached by (1−t)δ_{x'} + tδ_x as t → 0, not attained.
        x, xp = np.unravel_index(int(np.argmax(D)), D.shape)
        p = np.zeros(n)
        p[xp] = 1.0
        return CapacityResult(
            lower=max(diameter - _order_allowance(diameter, m, alpha, _log_scale(W)), 0.0),
            upper=diameter + _order_allowance(diameter, m, alpha, _log_scale(W)),
            input_distribution=p,
            output_distribution=_expand_outputs(matrix, W[xp]),
            iterations=0,
            definition="renyi",
            alpha=alpha,
            converged=True,
            method="C_inf equals the diameter (pure epsilon); supremum not attained",
        )
    logW = _log(W)
    upper = diameter
    upper_method = "diameter"
    starts: list[FloatArray] = [np.full(n, 1.0 / n)]
    shannon = _shannon_capacity(W, 1e-10, 5000)
    starts.append(np.asarray(shannon.input_distribution))
    if alpha < 1 and shannon.upper < upper:
        upper, upper_method = shannon.upper, "Shannon capacity (monotone in alpha)"
    starts.append(np.asarray(_sibson_capacity(W, alpha, 1e-8, 300).input_distribution))
    if n > 1:
        order = np.argsort(-(D + D.T), axis=None)
        seen: set[tuple[int, int]] = set()
        for flat in order:
            x, xp = divmod(int(flat), n)
            if x >= xp or (x, xp) in seen:
                continue
            seen.add((x, xp))
            for t in (0.25, 0.75):
                p = np.full(n, 1e-9)
                p[x] += 1.0 - t
                p[xp] += t
                starts.append(p / p.sum())
            if len(seen) >= 3:
                break
    starts.extend(rng.dirichlet(np.full(n, 0.5), size=n_starts))
    search = _Search(-_INF, starts[0])
    found: list[tuple[float, FloatArray]] = []
    for start in starts:
        if found and time.monotonic() > started + time_budget:
            break  # the budget covers the searches too (0.3 s each with 8 × 3 000)
        value, p = _local_max_renyi(W, logW, alpha, start)
        found.append((value, p))
        search.local_searches += 1
        if value > search.value:
            search.value, search.p = value, p
    cells = 0
    # For α > 2 an output y that some input cannot produce makes C_α infinite: with mass t on
    # the inputs S_y that can, and the rest on one that cannot, G ≥ c·t·t^{1−α} = c·t^{2−α} → ∞
    # as t → 0 (for α ≤ 2 each term P_x W_xy^α q_y^{1−α} ≤ W_xy stays bounded). No cell bound
    # can then close the bracket, and every certified upper end is ∞: the diameter (∞ here,
    # as W_xy > 0 = W_x′y) is the answer, without refining cells to the budget.
    unbounded = alpha > 2.0 and bool((W == 0).any())
    if unbounded:
        upper, upper_method = _INF, "diameter (C_alpha is infinite: a zero in W and alpha > 2)"
    if refine_budget > 0 and n > 1 and upper - search.value > tol and not unbounded:
        # At α = 2 the ratio-expansion cell bound leaves the regions nothing to prune, and
        # their caps cost time (8 inputs, four random channels with 5–64 outputs: the same
        # cells to width 1e-3, 1.3–2.2× faster without them)
        # The regions compute W^α in floats: where it falls below the normal range their
        # bounds could drop a large term, so they are used only where it does not (the cell
        # bounds round W^α up instead; the regions only save time)
        positive = W[W > 0]
        representable = bool(alpha * math.log(float(positive.min())) > _LOG_TINY)
        use_regions = alpha != 2.0 and representable
        regions = local_regions(W, alpha, found) if use_regions else None
        bnb, cells = _branch_and_bound(
            W,
            logW,
            alpha,
            search,
            tol,
            refine_budget,
            started + time_budget,
            progress,
            on_round,
            regions,
        )
        if bnb < upper:
            upper, upper_method = bnb, f"branch and bound on {cells} simplicial cells"
        if n <= 3 and upper - search.value > tol and time.monotonic() < started + time_budget:
            vertex = _renyi_bnb_upper(
                W, logW, alpha, search.value, refine_budget, tol, started + time_budget
            )
            if vertex < upper:
                upper, upper_method = vertex, "vertex branch and bound"
    method = f"lower: best of {search.local_searches} local searches"
    method += f"{' and cell centres' if cells else ''}; upper: {upper_method}"
    scale = _log_scale(W)
    best_value, best_p = search.value, search.p / search.p.sum()
    lower = max(best_value - _order_allowance(best_value, m + n, alpha, scale), 0.0)
    upper = max(upper + _order_allowance(upper, m + n, alpha, scale), lower)
    return CapacityResult(
        lower=lower,
        upper=upper,
        input_distribution=best_p,
        output_distribution=_expand_outputs(matrix, best_p @ W),
        iterations=search.local_searches + cells,
        definition="renyi",
        alpha=alpha,
        converged=upper - lower <= tol,
        method=method,
    )
