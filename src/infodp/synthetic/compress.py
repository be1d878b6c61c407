"""Domain compression (McKenna, Miklau & Sheldon 2021, "Winning the NIST Contest: A scalable and
general approach to differentially private synthetic data", §4, MST's compress/decompress step).

Once every one-way marginal is measured (noisy counts y_v with noise σ₁), the values of an
attribute whose noisy count is below 3σ₁ are merged into one code, when there are at least two
of them; the kept values keep their order and the merged code comes last. Pair selection, pair
measurement and the model then work on the compressed domain: smaller tables, so less noise per
useful cell. The compressed one-way marginal's merged cell is the sum of the merged noisy counts;
its noise variance is k·σ₁² for k merged values, which the measurement records (``cells``) so
the model weighs it by that variance (the paper's rescaling of the merged row by 1/√k). A drawn
merged code is decompressed to one of its original values with probability ∝ max(y_v, 0)
(uniform when all are ≤ 0). MST compresses by default; AIM takes ``compress=True``.

Privacy: the mapping, the merged counts and the decompression read only released noisy counts,
never the data, so they are post-processing (Dwork & Roth 2014, Prop. 2.1) and the ρ charged is
unchanged; the later steps measure the compressed codes, whose marginals are sums of the
original marginals' cells and have the same sensitivity.

>>> import numpy as np
>>> from fractions import Fraction
>>> from infodp.synthetic.measure import Measurement
>>> one = Measurement((0,), np.array([50, 2, -1, 40, 1]), Fraction(2))
>>> c = Compression.of((5,), [one])
>>> c.sizes, c.forward[0].tolist()
((3,), [0, 2, 2, 1, 2])
>>> m = c.compress_measurement(one)
>>> m.values.tolist(), m.variances.tolist()
([50, 40, 2], [4.0, 4.0, 12.0])
>>> c.compress_codes(np.array([[0], [1], [3]])).ravel().tolist()
[0, 2, 1]
>>> rows = c.decompress(np.array([[2]] * 300), np.random.default_rng(0)).ravel()
>>> sorted(set(rows.tolist()))
[1, 4]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from infodp.synthetic.measure import Measurement

__all__ = ["THRESHOLD", "Compression"]

#: A value is merged when its noisy count is below THRESHOLD·σ₁ (the paper's 3σ).
THRESHOLD = 3


@dataclass(frozen=True)
class Compression:
    """Per attribute: ``forward`` maps original codes to compressed codes; ``merged`` lists the
    original values merged into the last code (empty when nothing is merged) and ``weights``
    their decompression probabilities; ``sizes`` are the compressed domain sizes."""

    forward: tuple[npt.NDArray[np.int64], ...]
    merged: tuple[npt.NDArray[np.int64], ...]
    weights: tuple[npt.NDArray[np.float64], ...]
    sizes: tuple[int, ...]

    @classmethod
    def identity(cls, sizes: Sequence[int]) -> Compression:
        """No value merged.

        >>> Compression.identity((2, 3)).sizes
        (2, 3)
        """
        return cls.of(sizes, [])

    @classmethod
    def of(cls, sizes: Sequence[int], ones: Sequence[Measurement]) -> Compression:
        """The compression the noisy one-way measurements ``ones`` imply (attributes without a
        one-way measurement are kept whole). Reads the noisy counts only."""
        by_attr = {m.clique[0]: m for m in ones if len(m.clique) == 1}
        forward: list[npt.NDArray[np.int64]] = []
        merged: list[npt.NDArray[np.int64]] = []
        weights: list[npt.NDArray[np.float64]] = []
        out_sizes: list[int] = []
        for i, size in enumerate(sizes):
            m = by_attr.get(i)
            rare = (
                m.values < THRESHOLD * float(m.sigma)
                if m is not None
                else np.zeros(size, dtype=bool)
            )
            if int(rare.sum()) < 2:
                rare = np.zeros(size, dtype=bool)
            kept = int((~rare).sum())
            fwd = np.full(size, kept, dtype=np.int64)
            fwd[~rare] = np.arange(kept, dtype=np.int64)
            forward.append(fwd)
            idx = np.nonzero(rare)[0].astype(np.int64)
            merged.append(idx)
            w = np.maximum(m.values[idx].astype(np.float64), 0.0) if m is not None else idx * 0.0
            weights.append(
                w / w.sum() if w.sum() > 0 else np.full(idx.size, 1.0 / max(idx.size, 1))
            )
            out_sizes.append(kept + (1 if idx.size else 0))
        return cls(tuple(forward), tuple(merged), tuple(weights), tuple(out_sizes))

    @property
    def active(self) -> bool:
        """Whether any value is merged."""
        return any(m.size for m in self.merged)

    def compress_codes(self, codes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The (n, d) code matrix on the compressed domain (unchanged when nothing is merged)."""
        if not self.active:
            return codes
        return np.column_stack([f[codes[:, i]] for i, f in enumerate(self.forward)])

    def compress_measurement(self, m: Measurement) -> Measurement:
        """A one-way measurement on the compressed domain: kept cells as they are, the merged
        cell the sum of the merged noisy counts (``cells`` records how many it sums)."""
        (i,) = m.clique
        idx = self.merged[i]
        if not idx.size:
            return m
        values = np.zeros(self.sizes[i], dtype=np.int64)
        np.add.at(values, self.forward[i], m.values)
        cells = np.bincount(self.forward[i], minlength=self.sizes[i]).astype(np.int64)
        return Measurement(m.clique, values, m.sigma, cells)

    def decompress(
        self, codes: npt.NDArray[np.int64], rng: np.random.Generator
    ) -> npt.NDArray[np.int64]:
        """Rows of compressed codes back on the original domain: a merged code becomes one of
        its values with probability ∝ max(y_v, 0) (no draw when nothing is merged)."""
        if not self.active:
            return codes
        out = np.empty_like(codes)
        for i, (fwd, idx, w) in enumerate(
            zip(self.forward, self.merged, self.weights, strict=True)
        ):
            back = np.empty(self.sizes[i], dtype=np.int64)
            back[fwd] = np.arange(fwd.size, dtype=np.int64)  # kept codes; merged slot fixed below
            col = back[codes[:, i]]
            if idx.size:
                hit = codes[:, i] == self.sizes[i] - 1
                col[hit] = idx[rng.choice(idx.size, size=int(hit.sum()), p=w)]
            out[:, i] = col
        return out
