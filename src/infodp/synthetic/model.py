"""MST's estimate behind the synthetic rows: a tree-structured graphical model fitted to the noisy
marginals (post-processing only: it reads released counts, never the data). AIM's model, whose
pairs may form cycles, is :mod:`infodp.synthetic.junction`.

The measured cliques are single attributes and pairs whose pairs form a forest (MST selects a
spanning tree; the junction tree of a forest has cliques of two attributes, so exact inference
is a product of matrices and the fit below is closed-form). The fit, per the estimator of
McKenna, Miklau & Sheldon (2021, §4) for a tree:

1. every attribute's one-way distribution is the inverse-variance weighted mean of every noisy
   marginal containing it, summed down to it (a sum of k cells has variance k·σ²), and the total
   is the weighted mean of the measured totals; the vector is projected onto the scaled simplex
   {x ≥ 0, Σx = N} (Euclidean projection, Duchi et al. 2008, Fig. 1), so it is non-negative;
2. every edge's table is the weighted mean of its measurements, projected the same way, then
   made consistent with both one-way distributions by iterative proportional fitting
   (Deming & Stephan 1940);
3. the model is P(root) · Π P(child | parent) over each tree of the forest; a marginal of two
   or three attributes is a product of the conditional tables along the paths joining them
   (through their median node), and rows are drawn root to leaves.

>>> import numpy as np
>>> from fractions import Fraction
>>> from infodp.synthetic.measure import Measurement
>>> ms = [Measurement((0, 1), np.array([40, 10, 10, 40]), Fraction(1))]
>>> m = TreeModel.fit((2, 2), ms)
>>> round(m.total), np.round(m.joint((0, 1)), 3).tolist()
(100, [[0.4, 0.1], [0.1, 0.4]])
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from infodp.errors import InternalError
from infodp.synthetic.measure import Clique, Measurement

__all__ = [
    "SyntheticModel",
    "TreeModel",
    "draw_conditional",
    "is_forest",
    "simplex_projection",
]

Array = npt.NDArray[np.float64]

#: Rounds of iterative proportional fitting per edge table.
IPF_ROUNDS = 30


class SyntheticModel(Protocol):
    """What a fitted model offers the release: its total, its answers and its rows (a
    :class:`TreeModel` for MST, a :class:`infodp.synthetic.junction.JunctionModel` for AIM)."""

    @property
    def total(self) -> float: ...

    @property
    def edges(self) -> list[tuple[int, int]]: ...

    def counts(self, clique: Clique) -> Array: ...

    def sample(self, rows: int, rng: np.random.Generator) -> npt.NDArray[np.int64]: ...


def simplex_projection(v: Array, total: float) -> Array:
    """The Euclidean projection of ``v`` onto {x ≥ 0, Σx = total} (Duchi et al. 2008).

    >>> simplex_projection(np.array([3.0, -1.0, 1.0]), 2.0).tolist()
    [2.0, 0.0, 0.0]
    """
    if total <= 0:
        return np.zeros_like(v)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - total
    k = np.arange(1, v.size + 1)
    r = int(np.nonzero(u - css / k > 0)[0][-1])
    theta = css[r] / (r + 1)
    return np.asarray(np.maximum(v - theta, 0.0), dtype=np.float64)


def is_forest(n: int, edges: Sequence[tuple[int, int]]) -> bool:
    """Whether ``edges`` on nodes 0 … n − 1 form a forest (no cycle).

    >>> is_forest(3, [(0, 1), (1, 2)]), is_forest(3, [(0, 1), (1, 2), (0, 2)])
    (True, False)
    """
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra == rb:
            return False
        parent[ra] = rb
    return True


def _sum_to(m: Measurement, sizes: Sequence[int], i: int) -> tuple[Array, Array]:
    """The measurement summed down to attribute ``i``, and each summed cell's variance."""
    shape = [sizes[j] for j in m.clique]
    table = m.values.astype(np.float64).reshape(shape)
    var = m.variances.reshape(shape)
    axis = m.clique.index(i)
    other = tuple(a for a in range(len(shape)) if a != axis)
    summed = table.sum(axis=other) if other else table
    var = var.sum(axis=other) if other else var
    return np.asarray(summed, dtype=np.float64), np.asarray(var, dtype=np.float64)


def _weighted(parts: list[tuple[Array, Array]]) -> Array:
    """Inverse-variance weighted mean, cell by cell."""
    weights = [1.0 / np.maximum(var, 1e-300) for _, var in parts]
    total = sum(weights)
    out = sum((w / total) * v for (v, _), w in zip(parts, weights, strict=True))
    return np.asarray(out, dtype=np.float64)


@dataclass
class TreeModel:
    """A forest-structured distribution over attributes of ``sizes``, with ``total`` rows."""

    sizes: tuple[int, ...]
    total: float
    one_way: list[Array]
    tables: dict[tuple[int, int], Array]
    _cond: dict[tuple[int, int], Array] = field(default_factory=dict, repr=False)
    _component: list[int] = field(default_factory=list, repr=False)

    @classmethod
    def fit(cls, sizes: Sequence[int], measurements: Sequence[Measurement]) -> TreeModel:
        """Fit the model to noisy marginals of single attributes and forest-forming pairs."""
        sizes = tuple(sizes)
        edges = sorted({m.clique for m in measurements if len(m.clique) == 2})
        if any(len(m.clique) > 2 for m in measurements) or not is_forest(len(sizes), edges):
            raise InternalError("a tree model fits one-way and forest-forming two-way marginals")
        totals = [
            (np.array([float(m.values.sum())]), np.array([float(m.variances.sum())]))
            for m in measurements
        ]
        total = max(1.0, float(_weighted(totals)[0])) if totals else 1.0
        one_way: list[Array] = []
        for i, size in enumerate(sizes):
            parts = [_sum_to(m, sizes, i) for m in measurements if i in m.clique]
            est = _weighted(parts) if parts else np.full(size, total / size)
            p = simplex_projection(est, total) / total
            one_way.append(p)
        tables: dict[tuple[int, int], Array] = {}
        for a, b in edges:
            parts = [
                (m.values.astype(np.float64), m.variances)
                for m in measurements
                if m.clique == (a, b)
            ]
            raw = simplex_projection(_weighted(parts), total) / total
            tables[(a, b)] = _ipf(raw.reshape(sizes[a], sizes[b]), one_way[a], one_way[b])
        model = cls(sizes, total, one_way, tables)
        model._prepare()
        return model

    def _prepare(self) -> None:
        n = len(self.sizes)
        for (a, b), t in self.tables.items():
            self._cond[(a, b)] = _conditional(t, self.one_way[b])
            self._cond[(b, a)] = _conditional(t.T, self.one_way[a])
        comp = list(range(n))
        for a, b in self.tables:  # a forest: label each tree by a flood fill
            old, new = comp[a], comp[b]
            comp = [new if c == old else c for c in comp]
        self._component = comp

    @property
    def edges(self) -> list[tuple[int, int]]:
        """The model's pairs (a forest)."""
        return sorted(self.tables)

    def _neighbours(self, u: int) -> list[int]:
        return [b for (a, b) in self._cond if a == u]

    def path(self, u: int, v: int) -> list[int]:
        """The nodes from ``u`` to ``v`` in the forest (they must share a tree)."""
        prev: dict[int, int] = {u: u}
        queue = [u]
        while queue:
            x = queue.pop(0)
            if x == v:
                break
            for y in self._neighbours(x):
                if y not in prev:
                    prev[y] = x
                    queue.append(y)
        if v not in prev:
            raise InternalError("path between two trees of the forest")
        out = [v]
        while out[-1] != u:
            out.append(prev[out[-1]])
        return out[::-1]

    def _chain(self, u: int, v: int) -> Array:
        """P(v | u) as an (n_u, n_v) matrix (identity for u = v)."""
        nodes = self.path(u, v)
        m = np.eye(self.sizes[u])
        for x, y in itertools.pairwise(nodes):
            m = m @ self._cond[(x, y)]
        return m

    def joint(self, clique: Clique) -> Array:
        """The model's distribution of the attributes ``clique`` (an array, one axis each)."""
        groups: dict[int, list[int]] = {}
        for i in clique:
            groups.setdefault(self._component[i], []).append(i)
        out: Array = np.ones(())
        order: list[int] = []
        for members in groups.values():
            out = np.multiply.outer(out, self._tree_joint(members))
            order.extend(members)
        axes = [order.index(i) for i in clique]
        return np.asarray(np.transpose(out, axes), dtype=np.float64)

    def _tree_joint(self, members: list[int]) -> Array:
        if len(members) == 1:
            return self.one_way[members[0]]
        if len(members) > 3:
            raise InternalError("marginals of at most three attributes")
        paths = [set(self.path(members[0], x)) for x in members[1:]]
        if len(members) == 2:
            middle = members[0]
        else:
            common = paths[0] & paths[1] & set(self.path(members[1], members[2]))
            middle = next(iter(common))
        legs = [self._chain(middle, x) for x in members]
        p = self.one_way[middle]
        if len(members) == 2:
            return np.asarray(np.einsum("m,ma,mb->ab", p, *legs), dtype=np.float64)
        return np.asarray(np.einsum("m,ma,mb,mc->abc", p, *legs), dtype=np.float64)

    def counts(self, clique: Clique) -> Array:
        """The model's expected counts of ``clique`` (row-major), scaled to its total."""
        return np.asarray(self.joint(clique).ravel() * self.total, dtype=np.float64)

    def sample(self, rows: int, rng: np.random.Generator) -> npt.NDArray[np.int64]:
        """``rows`` rows of codes drawn root to leaves from the model."""
        n = len(self.sizes)
        out = np.zeros((rows, n), dtype=np.int64)
        done: set[int] = set()
        for root in range(n):
            if root in done:
                continue
            out[:, root] = draw_conditional(
                np.broadcast_to(self.one_way[root], (1, self.sizes[root])),
                np.zeros(rows, dtype=np.int64),
                rng,
            )
            done.add(root)
            queue = [root]
            while queue:
                u = queue.pop(0)
                for v in self._neighbours(u):
                    if v not in done:
                        out[:, v] = draw_conditional(self._cond[(u, v)], out[:, u], rng)
                        done.add(v)
                        queue.append(v)
        return out


def _conditional(table: Array, fallback: Array) -> Array:
    """Rows of ``table`` normalised to P(column | row); an empty row takes ``fallback``."""
    rows = table.sum(axis=1, keepdims=True)
    safe = np.where(rows > 0, rows, 1.0)
    cond = np.where(rows > 0, table / safe, fallback[None, :])
    s = cond.sum(axis=1, keepdims=True)
    uniform = np.full_like(cond, 1.0 / cond.shape[1])
    return np.asarray(np.where(s > 0, cond / np.where(s > 0, s, 1.0), uniform), dtype=np.float64)


def _ipf(table: Array, rows: Array, cols: Array) -> Array:
    """Scale ``table`` to the margins ``rows`` and ``cols`` (a little of the independent table
    is mixed in, so that every cell a margin needs can be reached)."""
    t = 0.999 * table + 0.001 * np.outer(rows, cols)
    for _ in range(IPF_ROUNDS):
        r = t.sum(axis=1)
        t = t * np.where(r > 0, rows / np.where(r > 0, r, 1.0), 0.0)[:, None]
        c = t.sum(axis=0)
        t = t * np.where(c > 0, cols / np.where(c > 0, c, 1.0), 0.0)[None, :]
    return np.asarray(t / max(t.sum(), 1e-300), dtype=np.float64)


def draw_conditional(
    cond: Array, given: npt.NDArray[np.int64], rng: np.random.Generator
) -> npt.NDArray[np.int64]:
    """One code per row from the rows of ``cond`` chosen by ``given`` (inverse CDF)."""
    cum = np.cumsum(cond, axis=1)
    out = np.zeros(given.size, dtype=np.int64)
    u = rng.random(given.size)
    for k in np.unique(given).tolist():
        at = given == k
        out[at] = np.searchsorted(cum[k], u[at] * cum[k, -1], side="right")
    return np.asarray(np.minimum(out, cond.shape[1] - 1), dtype=np.int64)
