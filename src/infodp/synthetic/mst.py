"""MST (McKenna, Miklau & Sheldon 2021, "Winning the NIST Contest", §4): one third of ρ measures
every one-way marginal, one third selects a maximum spanning tree of pairs with the exponential
mechanism, one third measures the tree's pairs; the model is that tree.

Selection follows the paper's Algorithm 2: the weight of a pair is the L1 distance between its
true marginal and the marginal the one-way measurements imply (independence); a spanning tree is
grown Kruskal-style, each of the d − 1 steps choosing among the pairs that join two trees by the
exponential mechanism (an L1 distance moves by at most the sensitivity m when one unit's rows
are added or removed).

>>> import numpy as np
>>> from fractions import Fraction
>>> from infodp.mechanisms.sampling import InsecureSeededSource
>>> rng = np.random.default_rng(0)
>>> a = rng.integers(0, 3, 2000); codes = np.column_stack([a, a, rng.integers(0, 2, 2000)])
>>> src = InsecureSeededSource(1, i_understand_this_is_not_private=True)
>>> fit = mst(codes, (3, 3, 2), Fraction(10), source=src)
>>> fit.spent <= Fraction(10), (0, 1) in fit.model.edges
(True, True)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from infodp.mechanisms.sampling import RandomSource
from infodp.synthetic.budget import em_epsilon_for, em_rho, gaussian_rho, sigma_for
from infodp.synthetic.compress import Compression
from infodp.synthetic.measure import Clique, Measurement, marginal, measure, select
from infodp.synthetic.model import SyntheticModel, TreeModel

__all__ = ["Fit", "mst", "mst_split"]


@dataclass(frozen=True)
class Fit:
    """A fitted model, its measurements, the ρ each step spent (exact) and the total; the model
    and the measurements are on the ``compression``'s domain (:mod:`infodp.synthetic.compress`;
    none: the original domain)."""

    model: SyntheticModel
    measurements: tuple[Measurement, ...]
    steps: tuple[tuple[str, Fraction], ...]
    compression: Compression | None = None

    def sample_compressed(self, rows: int, rng: np.random.Generator) -> npt.NDArray[np.int64]:
        """``rows`` rows drawn from the model, on the model's (compressed) domain."""
        return self.model.sample(rows, rng)

    def decompress(
        self, codes: npt.NDArray[np.int64], rng: np.random.Generator
    ) -> npt.NDArray[np.int64]:
        """Rows of :meth:`sample_compressed` back on the original domain."""
        return codes if self.compression is None else self.compression.decompress(codes, rng)

    def sample(self, rows: int, rng: np.random.Generator) -> npt.NDArray[np.int64]:
        """``rows`` rows on the original domain."""
        return self.decompress(self.sample_compressed(rows, rng), rng)

    @property
    def spent(self) -> Fraction:
        """The ρ spent by all steps (never above the budget)."""
        return sum((r for _, r in self.steps), Fraction(0))


def mst_split(rho: Fraction, d: int) -> tuple[Fraction, Fraction, Fraction]:
    """(one-way, selection, pairs) shares of ``rho``: thirds, summing to ρ exactly (one
    attribute: all of ρ to its one-way marginal).

    >>> sum(mst_split(Fraction(1, 7), 4)) == Fraction(1, 7)
    True
    """
    if d < 2:
        return rho, Fraction(0), Fraction(0)
    third = rho / 3
    return third, third, rho - 2 * third


def mst(
    codes: npt.NDArray[np.int64],
    sizes: Sequence[int],
    rho: Fraction,
    *,
    source: RandomSource,
    sensitivity: int = 1,
    compress: bool = True,
) -> Fit:
    """Run MST on the (n, d) code matrix at ``rho``-zCDP (L2 sensitivity ``sensitivity``); with
    ``compress``, the values whose noisy one-way count is below 3σ₁ are merged before selection
    (:mod:`infodp.synthetic.compress`, post-processing: the same ρ)."""
    d = len(sizes)
    share_one, share_select, share_pairs = mst_split(rho, d)
    steps: list[tuple[str, Fraction]] = []
    sigma1 = sigma_for(share_one / d, sensitivity)
    ones = [measure(codes, sizes, (i,), sigma1, source) for i in range(d)]
    steps.append(
        (f"{d} one-way marginals, σ = {float(sigma1):.4g}", d * gaussian_rho(sigma1, sensitivity))
    )
    if d < 2:
        return Fit(TreeModel.fit(sizes, ones), tuple(ones), tuple(steps))
    comp = Compression.of(sizes, ones) if compress else Compression.identity(sizes)
    codes, sizes = comp.compress_codes(codes), comp.sizes
    ones = [comp.compress_measurement(m) for m in ones]
    independent = TreeModel.fit(sizes, ones)
    pairs: list[Clique] = list(itertools.combinations(range(d), 2))
    weights = {
        p: float(np.abs(marginal(codes, sizes, p) - independent.counts(p)).sum()) for p in pairs
    }
    eps = em_epsilon_for(share_select / (d - 1))
    tree = _spanning_tree(d, pairs, weights, eps, float(sensitivity), source)
    steps.append((f"{d - 1} spanning-tree selections, ε = {float(eps):.4g}", (d - 1) * em_rho(eps)))
    sigma2 = sigma_for(share_pairs / (d - 1), sensitivity)
    twos = [measure(codes, sizes, p, sigma2, source) for p in tree]
    steps.append(
        (
            f"{d - 1} two-way marginals, σ = {float(sigma2):.4g}",
            (d - 1) * gaussian_rho(sigma2, sensitivity),
        )
    )
    measurements = tuple(ones + twos)
    return Fit(TreeModel.fit(sizes, measurements), measurements, tuple(steps), comp)


def _spanning_tree(
    d: int,
    pairs: list[Clique],
    weights: dict[Clique, float],
    eps: Fraction,
    sensitivity: float,
    source: RandomSource,
) -> list[Clique]:
    """d − 1 pairs chosen one by one by the exponential mechanism among those joining trees."""
    comp = list(range(d))
    chosen: list[Clique] = []
    for _ in range(d - 1):
        candidates = [p for p in pairs if comp[p[0]] != comp[p[1]]]
        pick = candidates[select([weights[p] for p in candidates], eps, sensitivity, source)]
        chosen.append(pick)
        old, new = comp[pick[0]], comp[pick[1]]
        comp = [new if c == old else c for c in comp]
    return chosen
