"""Curator accounting: many queries on one approx budget, and COUNT queries per budget.

1. ``--queries N`` sequential Gaussian COUNT queries through :class:`infodp.curator.Curator`
   on one approx (ε, δ) budget; the latency of the 10th and of the last (median of a window of
   10 around each, and of the 1000 queries from the 6th and the last 1000, which a busy
   machine disturbs less) — accounting is incremental, so the last should be no slower than
   the 10th.
   Two budgets: a loose one (the declared basic sum already fits) and a tight one, the ε of
   the N-fold composition at δ = 10⁻⁶ (plus 0.1%), where the last queries are admitted only by
   the tight PLD composition; its slowest query (the PLD look-ahead) is reported too.
2. How many COUNT queries with a 95% half-width of ``--halfwidth`` fit in (1, 1e-6):
   infodp discrete Laplace under basic composition, infodp discrete Gaussian under the
   approx (PLD) accountant, OpenDP (its Gaussian measurement, zCDP composition and its own
   zCDP → (ε, δ) conversion; only when ``opendp`` is installed) and Tumult Analytics' rule
   (ρ-zCDP with Gaussian noise of σ² = 1/(2ρ) per count, ρ adds, budget ρ from (1, 1e-6) by
   Bun & Steinke 2016 Prop. 1.3 — computed from that documented rule, tmlt.analytics is not
   installed here).

Run: ``python3 -m benchmarks.curator_accounting [--queries 10000]``
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import markdown_table, write_section
from infodp.accounting.accountant import Accountant, Budget
from infodp.accounting.conversions import zcdp_to_epsilon
from infodp.curator.engine import Curator
from infodp.mechanisms import DiscreteGaussianMechanism, DiscreteLaplaceMechanism

BUDGET = (1.0, 1e-6)
BETA = 0.05


def sequential(n: int, tight: bool = False) -> list[float]:
    """Latency (s) of each of ``n`` sequential queries on one approx budget."""
    budget = Budget.approx(float(n), 1e-3)
    if tight:
        one = DiscreteGaussianMechanism.calibrate(0.1, 1e-9).profile()
        eps = one.repeat(n).epsilon(1e-6) * 1.001
        budget = Budget.approx(float(f"{eps:.6g}"), 1e-6)
    with tempfile.TemporaryDirectory() as d:
        cur = Curator(Path(d) / "s.duckdb")
        frame = pd.DataFrame({"v": np.arange(1000) % 7})
        schema = {
            "table": "t",
            "privacy_unit": "row",
            "columns": {"v": {"type": "int", "bounds": [0, 6]}},
        }
        cur.register_dataset("t", frame, schema)
        cur.add_analyst("a", "t", budget=budget)
        times = []
        for _ in range(n):
            t = time.perf_counter()
            cur.query("a", "SELECT COUNT(*) FROM t", epsilon="0.1", delta="1e-9", noise="gaussian")
            times.append(time.perf_counter() - t)
        cur.close()
    return times


def _late_over_early(times: list[float]) -> float:
    """Median latency of the last 1000 queries over that of queries 6-1005 (warm-up left out)."""
    return statistics.median(times[-1000:]) / statistics.median(times[5:1005])


def _summary(times: list[float]) -> str:
    first, last = statistics.median(times[5:15]), statistics.median(times[-10:])
    k = max(10, min(1000, len(times) // 10))
    head, tail = statistics.median(times[5 : 5 + k]), statistics.median(times[-k:])
    return (
        f"around the 10th query {first * 1e3:.2f} ms, around the {len(times)}th "
        f"{last * 1e3:.2f} ms (ratio {last / first:.2f}); queries 6–{5 + k} "
        f"{head * 1e3:.2f} ms, the last {k} {tail * 1e3:.2f} ms (ratio {tail / head:.2f})"
    )


def laplace_basic(h: int) -> tuple[int, float]:
    """Queries at the least ε whose discrete Laplace half-width is ≤ h; basic composition."""
    lo, hi = 1e-6, 10.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if DiscreteLaplaceMechanism(1 / mid).halfwidth(BETA) <= h else (mid, hi)
    eps = Fraction(hi).limit_denominator(10**12)
    while DiscreteLaplaceMechanism(float(1 / eps)).halfwidth(BETA) > h:
        eps *= Fraction(1001, 1000)
    return int(Fraction(BUDGET[0]) / eps), float(eps)


def gaussian_approx(h: int) -> tuple[int, float]:
    """Queries with a discrete Gaussian of half-width ≤ h on the approx (PLD) accountant."""
    lo, hi = h / 4.0, float(h)  # the largest σ whose half-width (exact tail) is ≤ h
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if DiscreteGaussianMechanism(mid).halfwidth(BETA) <= h else (lo, mid)
    sigma = lo
    profile = DiscreteGaussianMechanism(sigma).profile()
    acc = Accountant(Budget.approx(*BUDGET))
    n = 0
    while acc.can_spend(profile):
        acc.spend(profile)
        n += 1
    return n, sigma


def opendp_count(h: int) -> tuple[int, float] | None:
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    # OpenDP's own accuracy ↔ scale (discrete Gaussian, 95%).
    scale = dp.accuracy_to_discrete_gaussian_scale(float(h), BETA)
    space = dp.atom_domain(T=int), dp.absolute_distance(T=int)
    meas = space >> dp.m.then_gaussian(scale)
    n = 1
    while True:
        comp = dp.c.make_composition([meas] * (n + 1))
        approx = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(comp), BUDGET[1])
        eps, _ = approx.map(1)
        if eps > BUDGET[0]:
            return n, scale
        n += 1


def tumult_rule(h: int) -> tuple[int, float]:
    """Tumult: ρ-zCDP count with discrete Gaussian σ² = 1/(2ρ); budget ρ from (1, 1e-6)."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if zcdp_to_epsilon(mid, BUDGET[1]) <= BUDGET[0] else (lo, mid)
    sigma = h / 1.959963984540054  # Gaussian 97.5% quantile: a 95% interval of ± h
    rho_query = 1 / (2 * sigma * sigma)
    return int(lo / rho_query), sigma


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--halfwidth", type=int, default=100)
    parser.add_argument(
        "--json", metavar="PATH", help="Write the figures to PATH (JSON), not BENCHMARKS.md."
    )
    args = parser.parse_args()
    loose = sequential(args.queries)
    tight = sequential(args.queries, tight=True)
    if args.json:
        figures = {
            "approx budget: median query ms": statistics.median(loose) * 1e3,
            "tight budget: median query ms": statistics.median(tight) * 1e3,
            "approx budget: last 1000 / first 1000 (median)": _late_over_early(loose),
            "tight budget: last 1000 / first 1000 (median)": _late_over_early(tight),
        }
        Path(args.json).write_text(json.dumps(figures, indent=1))
        return
    rows = [
        ["infodp discrete Laplace, basic composition", *map(str, laplace_basic(args.halfwidth))],
        [
            "infodp discrete Gaussian, approx (PLD) accountant",
            *map(str, gaussian_approx(args.halfwidth)),
        ],
    ]
    od = opendp_count(args.halfwidth)
    rows.append(
        ["OpenDP Gaussian, zCDP → approx-DP", *map(str, od)]
        if od is not None
        else ["OpenDP", "not installed", ""]
    )
    rows.append(["Tumult rule (ρ-zCDP, computed, not run)", *map(str, tumult_rule(args.halfwidth))])
    body = (
        f"Sequential Gaussian COUNT queries on one approx budget, median latency: "
        f"{_summary(loose)}. On a tight budget (the last queries admitted by the PLD only): "
        f"{_summary(tight)}; slowest query {max(tight) * 1e3:.0f} ms.\n\n"
        f"COUNT queries with a 95% half-width of ±{args.halfwidth} that fit in "
        f"(ε, δ) = {BUDGET}:\n\n"
        + markdown_table(["system", "queries", "ε per query (Laplace) / σ"], rows)
    )
    command = f"python3 -m benchmarks.curator_accounting --queries {args.queries}"
    write_section("curator_accounting", command, body)
    print(body)


if __name__ == "__main__":
    main()
