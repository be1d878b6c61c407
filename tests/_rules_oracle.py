"""Independent oracles for the aggregate rules' tests (tests/curator/rules/).

* :func:`brute_l1`: a measurement's L1 sensitivity by enumeration: one unit of up to m rows,
  each row any value of a small grid in any of two disjoint cells, is added to (or removed
  from) a table; each cell's aggregate moves by the sum of the unit's rows' contributions
  there, so the L1 change is Σ_cells |Σ_rows g(v)| whatever the rest of the table (McSherry
  2009, Thm 4 for the disjoint cells; Dwork & Roth 2014, Def. 3.1 for L1 sensitivity).
* :func:`dlap_information`: min(ln(A + 1), ln(2e(A/2 + E|N| + 1/4)) − H(N)) for discrete
  Laplace noise of scale b (the bound of ``curator/rules/budget_info.py``: Cover & Thomas 2006,
  Thm 12.1.1), with E|N| and H(N) summed term by term from the pmf
  (1 − p)/(1 + p)·p^|k|, p = e^(−1/b), at 40 digits (not from the closed forms).
* :func:`coverage_floor`: the least empirical coverage accepted for a stated level over n
  independent draws (three binomial standard deviations below it).
* :func:`simulated_cells`: a rule's released cells for n independent draws of the noise
  around fixed exact values (the release path's own noise sampler and layout).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import mpmath

from _stores import TEXT, cats, one_table
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.plan.nodes import Aggregate, Measurement
from infodp.curator.price.cost import plan_cost
from infodp.curator.price.layout import Layout
from infodp.curator.release.noise import draw_noise
from infodp.curator.rules.base import Cells
from infodp.curator.sql.parse import parse_query
from infodp.mechanisms.sampling import InsecureSeededSource


def brute_l1(
    contribution: Callable[[int], int], values: Sequence[int], m: int, cells: int = 2
) -> int:
    """max over one unit's 1..m rows (value, cell) of Σ_cells |Σ_rows contribution(value)|."""
    slots = [(v, c) for v in values for c in range(cells)]
    best = 0
    for size in range(1, m + 1):
        for unit in itertools.combinations_with_replacement(slots, size):
            per_cell = [0] * cells
            for v, c in unit:
                per_cell[c] += contribution(v)
            best = max(best, sum(abs(x) for x in per_cell))
    return best


def dlap_information(width: int, scale: float) -> float:
    """The discrete Laplace information bound (module docstring), at 40 digits."""
    if width == 0:
        return 0.0
    with mpmath.workdps(40):
        p = mpmath.exp(-1 / mpmath.mpf(scale))
        z = (1 - p) / (1 + p)
        mean_abs = entropy = mpmath.mpf(0)
        k = 0
        while True:
            pk = z * p**k * (1 if k == 0 else 2)  # P(|N| = k)
            if pk < mpmath.mpf(10) ** -45 and k > 10:
                break
            mean_abs += k * pk
            entropy -= pk * mpmath.log(z * p**k)
            k += 1
        bound = mpmath.log(2 * mpmath.e * (mpmath.mpf(width) / 2 + mean_abs + mpmath.mpf(1) / 4))
        return float(min(mpmath.log(width + 1), bound - entropy))


def coverage_floor(level: float, n: int) -> float:
    """Three binomial standard deviations below ``level`` over ``n`` draws."""
    return level - 3 * math.sqrt(level * (1 - level) / n)


def simulated_cells(
    sql: str,
    schema: DatasetSchema,
    exact: Mapping[Measurement, int],
    n: int,
    *,
    epsilon: Fraction,
    beta: float,
    seed: int,
) -> tuple[Aggregate, Cells]:
    """The first aggregate of ``sql`` and its released cells for ``n`` independent noise draws
    around the ``exact`` measurement values (grid units)."""
    plan = parse_query(sql, schema)
    cost = plan_cost(plan, schema, epsilon, Fraction(0), None)
    source = InsecureSeededSource(seed, i_understand_this_is_not_private=True)
    noise = draw_noise(cost.parts, n, source)
    cols: list[list[int | None]] = []
    for p, z in zip(cost.parts, noise, strict=True):
        assert z is not None
        cols.append([exact[p.measurement] + d for d in z])
    rows: list[Any] = list(zip(*cols, strict=True))
    keys = [(str(j),) for j in range(n)]
    layout = Layout.of(plan, schema, cost, beta)
    return plan.aggregates[0], layout.cells(keys, rows, cols, {})


def table_schema(
    m: int = 1, low: float = 0, high: float = 9, rows: int | None = None, kind: str = "int"
) -> DatasetSchema:
    """Table ``t``: a bounded column ``x`` of ``kind``, an unbounded text column ``c``, an
    unbounded float ``u``, a category ``g`` (a, b); units of up to ``m`` rows (``pid``)."""
    from infodp.curator.declaration.source import load_schema

    spec: dict[str, Any] = one_table(
        "t",
        {
            "x": {"type": kind, "bounds": [low, high]},
            "c": TEXT,
            "u": {"type": "float"},
            "g": cats("a", "b"),
        },
        unit="row" if m == 1 else "pid",
    )
    if m > 1:
        spec["max_rows_per_unit"] = m
        spec["columns"]["pid"] = {"type": "int"}
    if rows is not None:
        spec["public_rows"] = rows
    return load_schema(spec)
