"""Marginals against pandas, the discrete Gaussian's scale against σ² = Δ²/(2ρ), integer
releases, and an empirical audit of one measurement on neighbouring tables."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from infodp.accounting.conversions import zcdp_to_epsilon
from infodp.audit.auditor import VectorisedMechanism, audit
from infodp.mechanisms.sampling import InsecureSeededSource, discrete_gaussian_batch
from infodp.synthetic.budget import gaussian_rho, sigma_for
from infodp.synthetic.measure import marginal, measure


def _source(k: int) -> InsecureSeededSource:
    return InsecureSeededSource(k, i_understand_this_is_not_private=True)


def test_marginal_matches_a_pandas_crosstab() -> None:
    rng = np.random.default_rng(1)
    codes = rng.integers(0, [3, 4, 2], size=(500, 3)).astype(np.int64)
    got = marginal(codes, (3, 4, 2), (0, 2)).reshape(3, 2)
    frame = pd.DataFrame(codes, columns=["a", "b", "c"])
    want = pd.crosstab(frame["a"], frame["c"]).reindex(index=range(3), columns=range(2))
    assert got.tolist() == want.fillna(0).astype(int).values.tolist()


@pytest.mark.parametrize("rho", [Fraction(1, 50), Fraction(1, 2)])
def test_noise_variance_matches_sigma_for_the_share(rho: Fraction) -> None:
    codes = np.zeros((10, 1), dtype=np.int64)
    sigma = sigma_for(rho)
    draws = np.concatenate(
        [measure(codes, (500,), (0,), sigma, _source(k)).values[1:] for k in range(8)]
    )
    want = 1 / (2 * float(rho))  # σ² = Δ²/(2ρ) with Δ = 1
    # The discrete Gaussian's variance is within 1e-3 of σ² once σ ≥ 1 (CKS 2020, Cor. 9);
    # 3992 draws: the sample variance's relative s.e. is √(2/3992) ≈ 2.2%.
    assert np.var(draws) == pytest.approx(want, rel=0.1)
    assert abs(float(np.mean(draws))) < 5 * math.sqrt(want / draws.size)


def test_released_counts_are_python_exact_integers() -> None:
    codes = np.array([[0], [1], [1]], dtype=np.int64)
    m = measure(codes, (3,), (0,), Fraction(7, 3), _source(2))
    assert m.values.dtype == np.int64
    stored = m.to_dict()["values"]
    assert isinstance(stored, list) and all(type(v) is int for v in stored)
    # No float ever touched a count: the noisy values minus the exact counts are integers
    # whatever σ (a rational), and they round-trip through JSON.
    assert type(m).from_dict(m.to_dict()).values.tolist() == m.values.tolist()


def _measured(sigma: Fraction, clique: tuple[int, ...] = (0,)) -> VectorisedMechanism:
    """The measured cell a neighbour changes: its exact count (:func:`marginal`; cell 1 of the
    one-way marginal, or the row count AIM plans its rounds with for ``clique`` = ()) plus the
    secure discrete Gaussian :func:`measure` adds, drawn in batches by the same sampler."""

    def sample(table: list[int], size: int, rng: np.random.Generator) -> np.ndarray:
        codes = np.array(table, dtype=np.int64).reshape(-1, 1)
        exact = int(marginal(codes, (2,), clique)[-1])
        source = _source(int(rng.integers(2**31)))
        return exact + np.asarray(discrete_gaussian_batch(sigma, size, source), dtype=np.float64)

    return VectorisedMechanism(sample, "measured marginal cell")


@pytest.mark.slow
@pytest.mark.parametrize("clique", [(0,), ()], ids=["one-way cell", "row count"])
def test_audit_of_one_measurement_stays_below_its_charge(clique: tuple[int, ...]) -> None:
    rho = Fraction(1, 2)
    sigma = sigma_for(rho)  # σ = 1
    delta = 1e-3
    charged = zcdp_to_epsilon(float(gaussian_rho(sigma)), delta)
    table = [0, 0, 1, 1, 1]
    neighbour = [*table, 1]  # one more person, in cell 1
    result = audit(
        _measured(sigma, clique),
        table,
        neighbour,
        samples=200_000,
        claimed_epsilon=charged,
        claimed_delta=delta,
        rng=3,
    )
    assert result.verdict == "consistent"
    assert 0.3 < result.epsilon_lower <= charged


@pytest.mark.slow
def test_audit_catches_a_measurement_with_too_little_noise() -> None:
    # The same charge claimed for tables six people apart (a sensitivity of 6, not 1): the
    # audit must see more loss than charged, so the test above can fail.
    sigma = sigma_for(Fraction(1, 2))
    delta = 1e-3
    charged = zcdp_to_epsilon(float(gaussian_rho(sigma)), delta)
    result = audit(
        _measured(sigma),
        [0] * 5,
        [0] * 5 + [1] * 6,
        samples=200_000,
        claimed_epsilon=charged,
        claimed_delta=delta,
        rng=3,
    )
    assert result.verdict == "violation"
