"""A graphical model on a junction tree, fitted to noisy marginals by mirror descent
(Private-PGM: McKenna, Sheldon & Miklau 2019, "Graphical-model based estimation and inference
for differential privacy", ICML, Algorithm 1): post-processing only, it reads released counts.

* Structure: the measured cliques' graph is made chordal by greedy elimination (each step removes
  the attribute whose neighbourhood has the fewest cells); the elimination cliques that are
  maximal, joined by a maximum-weight spanning tree on their intersections, form a junction
  tree (Jensen & Jensen 1994: a maximum-weight spanning tree of a chordal graph's clique graph
  has the running-intersection property). Separate components are joined by empty separators.
* Distribution: p(x) ∝ exp(Σ_C θ_C(x_C)); its clique marginals come from one upward and one
  downward pass of log-space sum-product messages (Koller & Friedman 2009, Alg. 10.2).
* Fit: minimise L(μ) = Σ_r ‖n·M_r(μ) − y_r‖²/σ_r² (each cell's variance bound) over the model's
  marginals μ by entropic mirror descent, θ ← θ − η·∇_μ L, with a halving step when L does not
  fall (the paper's Algorithm 1 with its backtracking). The total n is the inverse-variance
  mean of the measured totals. A previous model warm-starts the fit: θ_C = log p(x_C | x_S),
  its own marginals on the new cliques (exact when the old model fits the new tree).

>>> import numpy as np
>>> from fractions import Fraction
>>> from infodp.synthetic.measure import Measurement
>>> ms = [Measurement((0, 1), np.array([40, 10, 10, 40]), Fraction(1)),
...       Measurement((1, 2), np.array([45, 5, 5, 45]), Fraction(1))]
>>> m = JunctionModel.fit((2, 2, 2), ms)
>>> round(m.total), np.round(m.joint((0, 1)), 2).tolist()
(100, [[0.4, 0.1], [0.1, 0.4]])
>>> np.round(m.joint((0, 2)), 3).tolist()  # through x1: 0.4·0.9 + 0.1·0.1
[[0.37, 0.13], [0.13, 0.37]]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from infodp.synthetic.measure import Clique, Measurement
from infodp.synthetic.model import draw_conditional

__all__ = ["JunctionModel", "junction_cells", "triangulate"]

Array = npt.NDArray[np.float64]

#: Mirror-descent steps of a fit.
ITERATIONS = 250
_FLOOR = 1e-12  # log of a zero probability in a warm start


def triangulate(sizes: Sequence[int], cliques: Sequence[Clique]) -> list[Clique]:
    """Maximal cliques of a chordal graph holding every attribute and every clique's pairs.

    >>> triangulate((2, 2, 2, 2), [(0, 1), (1, 2), (2, 3), (0, 3)])
    [(0, 1, 3), (1, 2, 3)]
    """
    d = len(sizes)
    adj: dict[int, set[int]] = {i: set() for i in range(d)}
    for c in cliques:
        for a in c:
            adj[a].update(b for b in c if b != a)
    found: list[Clique] = []
    left = set(range(d))
    while left:
        v = min(left, key=lambda u: (math.prod(sizes[w] for w in adj[u] | {u}), u))
        nbrs = adj[v]
        found.append(tuple(sorted(nbrs | {v})))
        for a in nbrs:
            adj[a].update(nbrs - {a})
            adj[a].discard(v)
        del adj[v]
        left.remove(v)
    unique = sorted(set(found), key=lambda c: (-len(c), c))
    maximal = [c for c in unique if not any(set(c) < set(o) for o in unique)]
    return sorted(maximal)


def junction_cells(sizes: Sequence[int], cliques: Sequence[Clique]) -> int:
    """Cells of the junction tree that holds ``cliques`` (the model's size).

    >>> junction_cells((3, 4, 5), [(0, 1), (1, 2)])
    32
    """
    return sum(math.prod(sizes[i] for i in c) for c in triangulate(sizes, cliques))


def _spanning_tree(cliques: list[Clique]) -> list[int]:
    """Parent of each clique (−1 at the root, clique 0) in a maximum-weight spanning tree of
    the intersection graph (Kruskal, then oriented from the root)."""
    k = len(cliques)
    pairs = sorted(
        (
            (len(set(a) & set(b)), i, j)
            for i, a in enumerate(cliques)
            for j, b in enumerate(cliques)
            if i < j
        ),
        key=lambda t: (-t[0], t[1], t[2]),
    )
    group = list(range(k))

    def find(x: int) -> int:
        while group[x] != x:
            group[x] = group[group[x]]
            x = group[x]
        return x

    nbrs: dict[int, list[int]] = {i: [] for i in range(k)}
    for _, i, j in pairs:
        a, b = find(i), find(j)
        if a != b:
            group[a] = b
            nbrs[i].append(j)
            nbrs[j].append(i)
    parent = [-1] * k
    seen, queue = {0}, [0]
    while queue:
        u = queue.pop(0)
        for v in nbrs[u]:
            if v not in seen:
                seen.add(v)
                parent[v] = u
                queue.append(v)
    return parent


def _logsumexp(x: Array, axes: tuple[int, ...]) -> Array:
    """log Σ exp(x) over ``axes`` (those axes dropped), shifted by the maximum for range.

    The reductions are the ufuncs' own (``np.max``/``np.sum`` call the same ones through
    several Python layers; a fit calls this some 10⁵ times on small arrays).
    """
    if not axes:
        return x
    top = np.maximum.reduce(x, axis=axes, keepdims=True)
    if not math.isfinite(np.add.reduce(top, axis=None)):  # finite sum: every entry finite
        top = np.where(np.isfinite(top), top, 0.0)
    out = np.log(np.add.reduce(np.exp(x - top), axis=axes, keepdims=True)) + top
    kept = [n for i, n in enumerate(x.shape) if i not in axes]
    return np.asarray(out.reshape(kept), dtype=np.float64)


#: One tree edge of the sum-product schedule: (clique, parent, the clique's axes summed out
#: for their separator, the separator message's shape on the parent's axes, its shape on the
#: clique's axes, the parent's axes summed out for the separator).
_Edge = tuple[int, int, tuple[int, ...], list[int], list[int], tuple[int, ...]]


@dataclass
class JunctionModel:
    """A distribution over attributes of ``sizes`` on a junction tree of ``cliques``."""

    sizes: tuple[int, ...]
    total: float
    cliques: list[Clique]
    parent: list[int]
    theta: list[Array]
    beliefs: list[Array]

    # -- structure helpers ------------------------------------------------------------------
    def _sep(self, c: int) -> Clique:
        p = self.parent[c]
        return tuple(a for a in self.cliques[c] if a in self.cliques[p]) if p >= 0 else ()

    def _order(self) -> list[int]:
        kids: dict[int, list[int]] = {i: [] for i in range(len(self.cliques))}
        for c, p in enumerate(self.parent):
            if p >= 0:
                kids[p].append(c)
        order, queue = [], [0]
        while queue:
            u = queue.pop(0)
            order.append(u)
            queue.extend(kids[u])
        return order

    def _expand(self, msg: Array, sub: Clique, clique: Clique) -> Array:
        shape = [self.sizes[a] if a in sub else 1 for a in clique]
        return msg.reshape(shape)

    def _out(self, clique: Clique, sub: Clique) -> tuple[int, ...]:
        return tuple(i for i, a in enumerate(clique) if a not in sub)

    # -- inference --------------------------------------------------------------------------
    def _schedule(self) -> list[_Edge]:
        """The tree's edges from the root down (:data:`_Edge`): fixed while a fit runs, so
        computed once per fit instead of once per message."""
        cl, out = self.cliques, []
        for c in self._order()[1:]:
            p, sep = self.parent[c], self._sep(c)
            on_p = [self.sizes[a] if a in sep else 1 for a in cl[p]]
            on_c = [self.sizes[a] if a in sep else 1 for a in cl[c]]
            out.append((c, p, self._out(cl[c], sep), on_p, on_c, self._out(cl[p], sep)))
        return out

    def _calibrate(self, theta: list[Array], schedule: list[_Edge] | None = None) -> list[Array]:
        """Clique marginals (probabilities) of exp(Σθ), by sum-product on the tree
        (``schedule``: :meth:`_schedule`, when the caller keeps it)."""
        edges = self._schedule() if schedule is None else schedule
        up: dict[int, Array] = {}
        inner = list(theta)  # every update below makes a new array: θ is never written
        for c, p, out_c, on_p, _, _ in reversed(edges):
            up[c] = _logsumexp(inner[c], out_c)
            inner[p] = inner[p] + up[c].reshape(on_p)
        root = edges[0][1] if edges else 0
        belief = [np.empty(0)] * len(self.cliques)
        belief[root] = inner[root]
        for c, p, _, on_p, on_c, out_p in edges:
            down = _logsumexp(belief[p] - up[c].reshape(on_p), out_p)
            belief[c] = inner[c] + down.reshape(on_c)
        out = []
        for b in belief:
            z = _logsumexp(b, tuple(range(b.ndim)))
            out.append(np.asarray(np.exp(b - z), dtype=np.float64))
        return out

    @classmethod
    def fit(
        cls,
        sizes: Sequence[int],
        measurements: Sequence[Measurement],
        *,
        warm: JunctionModel | None = None,
        iterations: int = ITERATIONS,
    ) -> JunctionModel:
        """Fit to ``measurements`` (see module); ``warm`` starts from a previous model."""
        sizes = tuple(sizes)
        weights = [1.0 / max(float(m.variances.sum()), 1e-300) for m in measurements]
        total = (
            max(
                1.0,
                sum(w * float(m.values.sum()) for w, m in zip(weights, measurements, strict=True))
                / sum(weights),
            )
            if measurements
            else 1.0
        )
        cliques = triangulate(sizes, [m.clique for m in measurements if len(m.clique) > 1])
        parent = _spanning_tree(cliques)
        shapes = [tuple(sizes[a] for a in c) for c in cliques]
        model = cls(sizes, total, cliques, parent, [np.zeros(s) for s in shapes], [])
        if warm is not None:
            for c, clique in enumerate(cliques):
                sep = model._sep(c)
                joint = np.log(np.maximum(warm.joint(clique), _FLOOR))
                if sep:
                    joint = joint - model._expand(
                        np.log(np.maximum(warm.joint(sep), _FLOOR)), sep, clique
                    )
                model.theta[c] = joint
        home = [
            min(
                (c for c, cl in enumerate(cliques) if set(m.clique) <= set(cl)),
                key=lambda c: len(cliques[c]),
            )
            for m in measurements
        ]
        data = [
            (
                h,
                model._out(cliques[h], m.clique),
                m.values.astype(np.float64).reshape([sizes[a] for a in m.clique]),
                m.variances.reshape([sizes[a] for a in m.clique]),
            )
            for h, m in zip(home, measurements, strict=True)
            if m.clique
        ]

        # Each measurement's gradient, shaped on its home clique's axes (np.expand_dims).
        spread = [[1 if i in axes else n for i, n in enumerate(shapes[h])] for h, axes, *_ in data]

        def loss_and_grad(beliefs: list[Array]) -> tuple[float, list[Array]]:
            loss = 0.0
            grad = [np.zeros(s) for s in shapes]
            for (h, axes, y, var), on_h in zip(data, spread, strict=True):
                mu = total * (np.add.reduce(beliefs[h], axis=axes) if axes else beliefs[h])
                diff = mu - y
                loss += float(np.add.reduce(diff * diff / var, axis=None))
                g = 2.0 * total * diff / var
                grad[h] = grad[h] + (g.reshape(on_h) if axes else g)
            return loss, grad

        schedule = model._schedule()
        beliefs = model._calibrate(model.theta, schedule)
        loss, grad = loss_and_grad(beliefs)
        var_min = min((float(np.min(v)) for *_, v in data), default=1.0)
        step = var_min / (2.0 * total * total)
        for _ in range(iterations):
            for _try in range(30):
                theta = [t - step * g for t, g in zip(model.theta, grad, strict=True)]
                new = model._calibrate(theta, schedule)
                new_loss, new_grad = loss_and_grad(new)
                if new_loss <= loss:
                    break
                step /= 2
            else:
                break
            model.theta, beliefs, loss, grad = theta, new, new_loss, new_grad
            step *= 1.5
        model.beliefs = beliefs
        return model

    # -- the model's answers ----------------------------------------------------------------
    @property
    def edges(self) -> list[tuple[int, int]]:
        """Every pair of attributes that share a clique of the model."""
        return sorted({(a, b) for c in self.cliques for i, a in enumerate(c) for b in c[i + 1 :]})

    def _subtree(self, attrs: Clique) -> list[int]:
        """Cliques of the smallest subtree covering ``attrs`` (parents before children)."""
        homes = [next(c for c, cl in enumerate(self.cliques) if a in cl) for a in attrs]
        keep: set[int] = set()
        ancestors = []
        for h in homes:
            chain = [h]
            while self.parent[chain[-1]] >= 0:
                chain.append(self.parent[chain[-1]])
            ancestors.append(chain)
        common = set(ancestors[0]).intersection(*map(set, ancestors[1:]))
        for chain in ancestors:
            for c in chain:
                keep.add(c)
                if c in common:
                    break
        return [c for c in self._order() if c in keep]

    def joint(self, clique: Clique) -> Array:
        """The model's distribution of ``clique`` (one axis per attribute, in its order)."""
        for c, cl in enumerate(self.cliques):
            if set(clique) <= set(cl):
                b = self.beliefs[c]
                kept = tuple(a for a in cl if a in clique)
                m = b.sum(axis=self._out(cl, clique)) if len(kept) < len(cl) else b
                return np.asarray(np.transpose(m, [kept.index(a) for a in clique]), np.float64)
        nodes = self._subtree(clique)
        args: list[object] = []
        for c in nodes:
            args += [self.beliefs[c], list(self.cliques[c])]
            p = self.parent[c]
            if p in nodes:
                sep = self._sep(c)
                if sep:
                    marg = self.joint(sep)
                    args += [
                        np.where(marg > 0, 1.0 / np.where(marg > 0, marg, 1.0), 0.0),
                        list(sep),
                    ]
        out = np.einsum(*args, list(clique), optimize="greedy")  # type: ignore[call-overload]
        return np.asarray(out / max(float(out.sum()), 1e-300), dtype=np.float64)

    def counts(self, clique: Clique) -> Array:
        """The model's expected counts of ``clique`` (row-major), scaled to its total."""
        return np.asarray(self.joint(clique).ravel() * self.total, dtype=np.float64)

    def sample(self, rows: int, rng: np.random.Generator) -> npt.NDArray[np.int64]:
        """``rows`` rows of codes drawn clique by clique from the root."""
        out = np.zeros((rows, len(self.sizes)), dtype=np.int64)
        for c in self._order():
            cl, sep = self.cliques[c], self._sep(c)
            rest = tuple(a for a in cl if a not in sep)
            b = np.transpose(self.beliefs[c], [cl.index(a) for a in (*sep, *rest)])
            s_cells = math.prod(self.sizes[a] for a in sep)
            table = b.reshape(s_cells, -1)
            given = (
                np.ravel_multi_index(tuple(out[:, a] for a in sep), [self.sizes[a] for a in sep])
                if sep
                else np.zeros(rows, dtype=np.int64)
            )
            flat = draw_conditional(table, np.asarray(given, dtype=np.int64), rng)
            codes = np.unravel_index(flat, [self.sizes[a] for a in rest])
            for a, col in zip(rest, codes, strict=True):
                out[:, a] = col
        return out
