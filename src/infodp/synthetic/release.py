"""One synthetic release: discretise, measure under zCDP (AIM or MST), fit, draw rows, report.

The privacy-relevant steps are :func:`~infodp.synthetic.aim.aim` /
:func:`~infodp.synthetic.mst.mst` (every private count goes through the exact discrete Gaussian,
every choice through the exponential mechanism, spending at most ρ in total); the model fit, the
rows and the fidelity report are post-processing (Dwork & Roth 2014, Prop. 2.1). The rows are
drawn with a generator keyed from the curator's random source, so a test source reproduces them.

>>> import pandas as pd
>>> from infodp.curator.declaration.source import load_schema
>>> from infodp.mechanisms.sampling import InsecureSeededSource
>>> s = load_schema({"table": "t", "privacy_unit": "row", "columns": {
...     "g": {"type": "category", "categories": ["a", "b"]},
...     "x": {"type": "int", "bounds": [0, 3]}}})
>>> frame = pd.DataFrame({"g": ["a", "b"] * 50, "x": [0, 3] * 50})
>>> src = InsecureSeededSource(2, i_understand_this_is_not_private=True)
>>> out = synthesize(frame, s, epsilon=50.0, delta=1e-6, source=src)
>>> pairs = list(zip(out.frame["g"].tolist(), out.frame["x"].tolist()))
>>> sum(p in {("a", 0), ("b", 3)} for p in pairs) >= 0.9 * len(pairs)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd  # type: ignore[import-untyped]

from infodp.curator.declaration.schema import DatasetSchema
from infodp.errors import ParameterError
from infodp.mechanisms.sampling import RandomSource
from infodp.synthetic.aim import aim, all_pairs
from infodp.synthetic.budget import rho_for
from infodp.synthetic.domain import Domain
from infodp.synthetic.fidelity import fidelity_report
from infodp.synthetic.guarantee import ZCDPGuarantee
from infodp.synthetic.measure import Clique
from infodp.synthetic.mst import Fit, mst

__all__ = ["MAX_ROWS", "METHODS", "SyntheticData", "parse_workload", "synthesize"]

#: The algorithms offered (AIM is the default).
METHODS = ("aim", "mst")
#: Most synthetic rows one release may draw.
MAX_ROWS = 1_000_000


@dataclass(frozen=True)
class SyntheticData:
    """A synthetic table and what produced it (everything here is released)."""

    domain: Domain
    fit: Fit
    frame: pd.DataFrame
    epsilon: float
    delta: float
    rho: Fraction
    method: str
    workload: tuple[Clique, ...]
    fidelity: dict[str, Any]

    def explanation(self) -> dict[str, Any]:
        """The cost per person: ε, δ, ρ and the leakage in bits (:func:`infodp.explain.explain`
        of the ρ-zCDP guarantee, :class:`~infodp.synthetic.guarantee.ZCDPGuarantee`)."""
        from infodp.explain import explain

        e = explain(ZCDPGuarantee(float(self.rho)), delta=self.delta)
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "rho": float(self.rho),
            "rho_exact": str(self.rho),
            "rho_spent_exact": str(self.fit.spent),
            "bits_per_person": dict(e.bits),
            "nats_per_person": dict(e.nats),
            "summary": (
                f"ε = {self.epsilon:g}, δ = {self.delta:g} (ρ = {float(self.rho):.4g}-zCDP): "
                f"at most {e.bits['1']:.4g} bits per person (α = 1, Shannon), "
                f"{e.bits['2']:.4g} bits (α = 2)"
            ),
            "steps": [{"step": s, "rho": str(r)} for s, r in self.fit.steps],
        }


def parse_workload(domain: Domain, workload: object) -> tuple[Clique, ...]:
    """Cliques (attribute positions) of a workload given as lists of 1 to 3 column names."""
    if workload is None:
        return tuple(all_pairs(len(domain.names)))
    if isinstance(workload, (str, bytes)) or not isinstance(workload, Sequence) or not workload:
        raise ParameterError("workload", workload, "a non-empty list of lists of 1 to 3 columns")
    lower = {n.lower(): i for i, n in enumerate(domain.names)}
    out: list[Clique] = []
    for item in workload:
        names = [item] if isinstance(item, str) else item
        if not isinstance(names, Sequence) or not 1 <= len(names) <= 3:
            raise ParameterError("workload", item, "a list of 1 to 3 of the released columns")
        if any(not isinstance(n, str) or n.lower() not in lower for n in names):
            raise ParameterError("workload", list(names), f"columns among {list(domain.names)}")
        clique = tuple(sorted({lower[n.lower()] for n in names}))
        if len(clique) != len(names):
            raise ParameterError("workload", list(names), "distinct columns")
        out.append(clique)
    return tuple(dict.fromkeys(out))


def check_options(method: object, rows: object) -> None:
    """Refuse an unknown method or a bad row count (before anything is spent)."""
    if method not in METHODS:
        raise ParameterError("method", method, " or ".join(METHODS))
    if rows is not None and (
        isinstance(rows, bool) or not isinstance(rows, int) or not 1 <= rows <= MAX_ROWS
    ):
        raise ParameterError("rows", rows, f"an integer from 1 to {MAX_ROWS}")


def synthesize_codes(
    codes: npt.NDArray[np.int64],
    domain: Domain,
    *,
    epsilon: float,
    delta: float,
    method: str = "aim",
    workload: tuple[Clique, ...] | None = None,
    rows: int | None = None,
    source: RandomSource,
    sensitivity: int = 1,
) -> SyntheticData:
    """:func:`synthesize` on a table already encoded by ``domain``."""
    check_options(method, rows)
    rho = rho_for(epsilon, delta)
    work = workload if workload is not None else tuple(all_pairs(len(domain.names)))
    sizes = domain.sizes
    if method == "aim":
        fit = aim(codes, sizes, rho, source=source, workload=work, sensitivity=sensitivity)
    else:
        fit = mst(codes, sizes, rho, source=source, sensitivity=sensitivity)
    n = rows if rows is not None else min(MAX_ROWS, max(1, round(fit.model.total)))
    rng = np.random.default_rng(int.from_bytes(source.random_bytes(16), "big"))
    drawn = fit.sample_compressed(n, rng)
    model_sizes = fit.compression.sizes if fit.compression is not None else sizes
    report = fidelity_report(fit.model, fit.measurements, drawn, model_sizes, work)
    synth = fit.decompress(drawn, rng)
    return SyntheticData(
        domain,
        fit,
        domain.decode(synth, rng),
        float(epsilon),
        float(delta),
        rho,
        method,
        work,
        report,
    )


def synthesize(
    frame: pd.DataFrame,
    schema: DatasetSchema,
    *,
    epsilon: float,
    delta: float,
    columns: Sequence[str] | None = None,
    method: str = "aim",
    workload: object = None,
    bins: int = 32,
    rows: int | None = None,
    source: RandomSource,
    sensitivity: int = 1,
) -> SyntheticData:
    """A synthetic table of ``frame`` (one row per person unless ``sensitivity`` says more) at
    (``epsilon``, ``delta``): AIM (default) or MST over the declared ``columns`` (default: every
    column with declared categories or bounds)."""
    cols = list(columns) if columns is not None else default_columns(schema)
    domain = Domain.of(schema, cols, bins)
    work = parse_workload(domain, workload)
    return synthesize_codes(
        domain.encode(frame),
        domain,
        epsilon=epsilon,
        delta=delta,
        method=method,
        workload=work,
        rows=rows,
        source=source,
        sensitivity=sensitivity,
    )


def default_columns(schema: DatasetSchema) -> list[str]:
    """The columns a synthetic table holds by default: those with declared categories or
    bounds, the privacy unit excluded."""
    unit = schema.privacy_unit.lower()
    return [
        c.name
        for c in schema.columns
        if c.name.lower() != unit
        and ((c.type == "category" and c.categories is not None) or c.bounds is not None)
    ]
