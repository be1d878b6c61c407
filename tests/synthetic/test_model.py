"""The tree model against closed forms, and releases that match the truth when ε is huge."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from _stores import cats, ints, one_table
from infodp.curator.declaration.source import load_schema
from infodp.errors import ParameterError
from infodp.mechanisms.sampling import InsecureSeededSource
from infodp.synthetic import synthesize
from infodp.synthetic.measure import Measurement
from infodp.synthetic.model import TreeModel, simplex_projection


def _source(k: int) -> InsecureSeededSource:
    return InsecureSeededSource(k, i_understand_this_is_not_private=True)


def test_simplex_projection_is_the_closest_feasible_point() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        v = rng.normal(size=5) * 3
        x = simplex_projection(v, 4.0)
        assert x.min() >= 0 and x.sum() == pytest.approx(4.0)
        # KKT: x = max(v − θ, 0) for one θ; every positive entry shares v − x.
        shift = (v - x)[x > 0]
        assert np.allclose(shift, shift[0])
        assert np.all(v[x == 0] <= shift[0] + 1e-12)


def test_chain_joint_equals_the_closed_form_product() -> None:
    # A chain 0 - 1 - 2 with exact (noise-free) tables: P(a, c) = Σ_b P(a, b) P(c | b).
    p01 = np.array([[30, 10], [20, 40]], dtype=np.int64)
    p12 = np.array([[45, 5], [10, 40]], dtype=np.int64)
    ms = [
        Measurement((0, 1), p01.ravel(), Fraction(1)),
        Measurement((1, 2), p12.ravel(), Fraction(1)),
    ]
    m = TreeModel.fit((2, 2, 2), ms)
    cond = p12 / p12.sum(axis=1, keepdims=True)
    want = (p01 / 100) @ cond
    assert np.allclose(m.joint((0, 2)), want, atol=1e-3)
    want3 = np.einsum("ab,bc->abc", p01 / 100, cond)
    assert np.allclose(m.joint((0, 1, 2)), want3, atol=1e-3)
    assert np.allclose(m.joint((2, 0)), want.T, atol=1e-3)


SCHEMA = load_schema(
    one_table("people", {"age": ints(0, 7), "edu": cats("a", "b", "c"), "region": cats("n", "s")})
)


def _people(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    age = rng.integers(0, 8, n)
    edu = np.array(["a", "b", "c"])[np.minimum(age // 3, 2)]
    region = np.where(rng.random(n) < 0.3, "n", "s")
    return pd.DataFrame({"age": age, "edu": edu, "region": region})


@pytest.mark.slow
@pytest.mark.parametrize("method", ["aim", "mst"])
def test_with_a_huge_epsilon_the_synthetic_marginals_are_the_true_ones(method: str) -> None:
    frame = _people(4000)
    out = synthesize(frame, SCHEMA, epsilon=2000.0, delta=1e-6, method=method, source=_source(5))
    # Oracle: pandas on the true table; age → edu is a function and region independent, so
    # a tree holds every two-way marginal exactly.
    for a, b in itertools.combinations(["age", "edu", "region"], 2):
        true = frame.groupby([a, b]).size() / len(frame)
        synth = out.frame.groupby([a, b]).size() / len(out.frame)
        joined = pd.concat([true, synth], axis=1).fillna(0.0)
        assert 0.5 * float((joined[0] - joined[1]).abs().sum()) < 0.03, (a, b)
    assert abs(len(out.frame) - len(frame)) < 10


@pytest.mark.slow
def test_fidelity_report_reads_released_values_only() -> None:
    out = synthesize(_people(2000), SCHEMA, epsilon=1.0, delta=1e-6, source=_source(6))
    report = out.fidelity
    assert {r["clique"] == [0] for r in report["measured"]} >= {True}
    assert all(0 <= r["tv_to_model"] <= 1 for r in report["workload"])
    assert report["note"].startswith("computed from released values only")


def test_refusals_of_options_say_what_is_allowed() -> None:
    with pytest.raises(ParameterError, match="aim or mst"):
        synthesize(_people(10), SCHEMA, epsilon=1.0, delta=1e-6, method="pgm", source=_source(1))
    with pytest.raises(ParameterError, match="a list of 1 to 3 of the released columns"):
        synthesize(
            _people(10),
            SCHEMA,
            epsilon=1.0,
            delta=1e-6,
            workload=[["age", "edu", "region", "age"]],
            source=_source(1),
        )
    with pytest.raises(ParameterError, match="an integer from 1 to"):
        synthesize(_people(10), SCHEMA, epsilon=1.0, delta=1e-6, rows=0, source=_source(1))
