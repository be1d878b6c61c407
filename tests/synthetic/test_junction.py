"""The junction-tree model (McKenna, Sheldon & Miklau 2019, Algorithm 1) against independent
oracles: the running-intersection property checked directly, the model's marginals against the
full joint table built from its clique marginals (Π p(C) / Π p(S), Koller & Friedman 2009,
Thm 10.4), the fit's loss against cvxpy's optimum over the whole simplex, and rows against the
model's own distribution."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infodp.mechanisms.sampling import InsecureSeededSource
from infodp.synthetic.aim import aim
from infodp.synthetic.junction import JunctionModel, junction_cells, triangulate
from infodp.synthetic.measure import Measurement, marginal


def _exact(codes: np.ndarray, sizes: tuple[int, ...], clique: tuple[int, ...]) -> Measurement:
    return Measurement(clique, marginal(codes, sizes, clique), Fraction(1, 100))


@given(
    d=st.integers(2, 7),
    pairs=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=12),
)
@settings(max_examples=60)
def test_the_junction_tree_covers_every_clique_and_keeps_running_intersection(
    d: int, pairs: list[tuple[int, int]]
) -> None:
    cliques = sorted({(min(a, b), max(a, b)) for a, b in pairs if a != b and max(a, b) < d})
    sizes = tuple([2, 3, 2, 4, 2, 3, 2][:d])
    ms = [
        Measurement(c, np.ones(sizes[c[0]] * sizes[c[1]], dtype=np.int64), Fraction(1))
        for c in cliques
    ]
    model = JunctionModel.fit(sizes, ms, iterations=1)
    tree = model.cliques
    assert sorted({a for c in tree for a in c}) == list(range(d))
    for c in cliques:
        assert any(set(c) <= set(t) for t in tree)
    assert model.parent.count(-1) == 1 and model.parent[0] == -1
    for attr in range(d):  # the cliques holding attr form one connected subtree
        holding = {i for i, t in enumerate(tree) if attr in t}
        tops = [i for i in holding if model.parent[i] not in holding]
        assert len(tops) == 1
    assert junction_cells(sizes, cliques) == sum(math.prod(sizes[a] for a in t) for t in tree)


def _full_joint(model: JunctionModel) -> np.ndarray:
    """p(x) = Π_C p(x_C) / Π_S p(x_S) over the whole domain, cell by cell (an independent
    evaluation of the factorisation, no message passing)."""
    sizes = model.sizes
    out = np.zeros(sizes)
    for x in itertools.product(*(range(s) for s in sizes)):
        value = 1.0
        for c, clique in enumerate(model.cliques):
            value *= model.beliefs[c][tuple(x[a] for a in clique)]
            p = model.parent[c]
            sep = tuple(a for a in clique if p >= 0 and a in model.cliques[p])
            if p >= 0 and sep:
                s = model.joint(sep)[tuple(x[a] for a in sep)]
                value = value / s if s > 0 else 0.0
        out[x] = value
    return out


def test_marginals_across_cliques_equal_the_full_joint_table() -> None:
    rng = np.random.default_rng(3)
    sizes = (2, 3, 2, 3, 2)
    a = rng.integers(0, 2, 4000)
    b = (a + rng.integers(0, 2, 4000)) % 3
    c = (b + rng.integers(0, 2, 4000)) % 2
    e = (a + c + rng.integers(0, 2, 4000)) % 3
    f = rng.integers(0, 2, 4000)
    codes = np.column_stack([a, b, c, e, f]).astype(np.int64)
    ms = [_exact(codes, sizes, k) for k in [(0, 1), (1, 2), (2, 3), (0, 3), (4,)]]
    model = JunctionModel.fit(sizes, ms)
    full = _full_joint(model)
    assert full.sum() == pytest.approx(1.0, abs=1e-9)
    for k in (2, 3):
        for clique in itertools.combinations(range(5), k):
            other = tuple(i for i in range(5) if i not in clique)
            expected = full.sum(axis=other)
            assert np.allclose(model.joint(clique), expected, atol=1e-9), clique


def test_exact_marginals_are_reproduced_on_a_cycle() -> None:
    """Three pairwise-dependent attributes measured on a cycle (0,1), (1,2), (0,2): the model
    (one clique after triangulation) reproduces all three measured pair tables (no cell is
    empty: a structural zero is reached only as θ → −∞, slowly)."""
    rng = np.random.default_rng(5)
    sizes = (3, 3, 3)
    x = rng.integers(0, 3, 6000)
    y = (x + rng.choice(3, 6000, p=[0.6, 0.3, 0.1])) % 3
    z = (x + y + rng.choice(3, 6000, p=[0.7, 0.2, 0.1])) % 3
    codes = np.column_stack([x, y, z]).astype(np.int64)
    ms = [_exact(codes, sizes, k) for k in [(0, 1), (1, 2), (0, 2)]]
    model = JunctionModel.fit(sizes, ms, iterations=600)
    for m in ms:
        assert np.abs(model.counts(m.clique) - m.values).sum() / 6000 < 2e-3


def test_the_fit_reaches_the_least_squares_optimum_over_the_simplex() -> None:
    """Noisy, inconsistent measurements of a two-attribute domain: the model is the whole
    simplex, so cvxpy's minimum of Σ‖n·M_r p − y_r‖²/σ_r² over it is the fit's target."""
    sizes = (3, 4)
    ys = {
        (0, 1): np.array([30, 5, 8, 2, 4, 40, 6, 1, 3, 2, 50, 9]),
        (0,): np.array([48, 50, 60]),
        (1,): np.array([35, 50, 70, 12]),
    }
    sigmas = {(0, 1): Fraction(3), (0,): Fraction(2), (1,): Fraction(5)}
    ms = [Measurement(k, v.astype(np.int64), sigmas[k]) for k, v in ys.items()]
    model = JunctionModel.fit(sizes, ms, iterations=3000)
    n = model.total

    def loss(p: np.ndarray) -> float:
        t = p.reshape(sizes)
        parts = {(0, 1): t.ravel(), (0,): t.sum(axis=1), (1,): t.sum(axis=0)}
        return sum(float(np.sum((n * parts[k] - ys[k]) ** 2)) / float(sigmas[k]) ** 2 for k in ys)

    p = cp.Variable(12, nonneg=True)
    t = cp.reshape(p, sizes, order="C")
    objective = sum(
        cp.sum_squares(n * expr - ys[k]) / float(sigmas[k]) ** 2
        for k, expr in [((0, 1), p), ((0,), cp.sum(t, axis=1)), ((1,), cp.sum(t, axis=0))]
    )
    cp.Problem(cp.Minimize(objective), [cp.sum(p) == 1]).solve()
    best = loss(np.maximum(np.asarray(p.value), 0) / np.maximum(np.asarray(p.value), 0).sum())
    ours = loss(model.joint((0, 1)).ravel())
    assert ours <= best * 1.01 + 1e-6


def test_rows_follow_the_model() -> None:
    rng = np.random.default_rng(9)
    sizes = (3, 2, 4)
    a = rng.integers(0, 3, 5000)
    b = (a % 2 + (rng.random(5000) < 0.2)) % 2
    c = (a + b + rng.integers(0, 2, 5000)) % 4
    codes = np.column_stack([a, b, c]).astype(np.int64)
    model = JunctionModel.fit(sizes, [_exact(codes, sizes, k) for k in [(0, 1), (1, 2)]])
    rows = model.sample(200_000, np.random.default_rng(1))
    for clique in [(0, 1), (1, 2), (0, 2), (0, 1, 2)]:
        drawn = marginal(rows, sizes, clique) / 200_000
        # 200 000 draws: a cell's standard error is at most 0.0012, the TV of k cells about
        # 0.4·√k·0.0012 on average; 0.01 is far above it and far below a wrong model's error.
        assert 0.5 * np.abs(drawn - model.joint(clique).ravel()).sum() < 0.01


@pytest.mark.slow
def test_aim_measures_past_a_forest_when_the_data_has_a_cycle() -> None:
    """Pairwise dependence around a cycle: with a large budget AIM measures pairs that a forest
    could not hold, and the model reproduces every pair."""
    rng = np.random.default_rng(11)
    n = 20_000
    x = rng.integers(0, 3, n)
    y = (x + (rng.random(n) < 0.25)) % 3
    z = (x + 2 * y + (rng.random(n) < 0.25)) % 3
    codes = np.column_stack([x, y, z]).astype(np.int64)
    src = InsecureSeededSource(2, i_understand_this_is_not_private=True)
    fit = aim(codes, (3, 3, 3), Fraction(50), source=src)
    assert triangulate((3, 3, 3), fit.model.edges) == [(0, 1, 2)]
    for pair in [(0, 1), (1, 2), (0, 2)]:
        truth = marginal(codes, (3, 3, 3), pair)
        assert 0.5 * np.abs(fit.model.counts(pair) - truth).sum() / n < 0.01
