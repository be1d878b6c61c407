"""Accuracy benchmark: COUNT, SUM, AVG, VARIANCE and STDDEV against the peers that run.

``PYTHONPATH=$PWD/src /work/venvs/peers/bin/python -m benchmarks.accuracy [--runs 100]
[--tumult-runs 5]``

One seeded table of 100 000 people (one row each; add/remove-one neighbours) with a skewed
income (log-normal, clamped to the declared bounds [0, 300 000], integers). For ε ∈ {0.1, 1,
10} and every aggregate, each library releases the answer ``--runs`` times (Tumult, whose
every answer is a Spark job, ``--tumult-runs`` times) and the table reports the mean and the
95th percentile of the absolute error against the exact value on the clamped data; where the
library states a 95% interval, its coverage and median half-width.

- infodp: end to end through :class:`~infodp.curator.engine.Curator` (SQL, ledger, exact
  discrete Laplace on the OS CSPRNG, DuckDB), ``confidence=0.95``;
- OpenDP (core combinators; its polars API needs polars, absent here): discrete Laplace on
  the clamped integer sums and the count, ε split evenly; AVG and VARIANCE are formed from
  them (Σx/n, Σx²/n − (Σx/n)²) as OpenDP's documentation does for unknown n; its stated
  interval is ``discrete_laplacian_scale_to_accuracy`` for COUNT and SUM (none for the
  ratios);
- diffprivlib: ``tools.count_nonzero``, ``sum``, ``mean``, ``var``, ``std``. Its mean, var
  and std treat the row count as public (replace-one neighbours), a weaker relation than
  the others', so their errors are not directly comparable; no intervals;
- Tumult Analytics: ``QueryBuilder.count``, ``sum``, ``average``, ``variance``, ``stdev``
  under ``AddOneRow`` (pure DP); no intervals;
- SmartNoise SQL: run when ``snsql`` imports, reported as not run otherwise.

A hand-written mean, ``SUM(income) / COUNT(income)``, is run through infodp beside AVG
(measured as AVG, :mod:`infodp.curator.sql.post.ratio`), and so is the way main measured it: the
sum and the count noised apart and divided (``SELECT SUM(income), COUNT(income)``).

Then the quantile part (``benchmarks/_accuracy_quantiles.py``): MIN and MAX of the income and
of a second seeded column of heights (both extremes inside the bounds), before (main's method,
the plain q = 0 / 1 quantile, computed from its exact law in the same run) and after (exact
and ``--runs`` observed answers); the 90th percentile at ε = 1 and 10 against diffprivlib and
Smith's continuous mechanism without a grid (``--p90-rows``, ``--p90-reps``); and the stated
95% rank error against the exact 95th percentile of the rank error on several data shapes.
Writes the "accuracy" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._report import markdown_table, write_section

ROWS = 100_000
LOW, HIGH = 0, 300_000
H_LOW, H_HIGH = 0, 300
EPSILONS = (0.1, 1.0, 10.0)
AGGREGATES = ("COUNT", "SUM", "AVG", "SUM/COUNT", "VARIANCE", "STDDEV")
#: Aggregates only infodp runs: the hand-written mean, and main's way of measuring it.
OURS_ONLY = ("SUM/COUNT", "SUM/COUNT as main")
PEER_AGGREGATES = tuple(a for a in AGGREGATES if a not in OURS_ONLY)
SQL = {
    "COUNT": "SELECT COUNT(*) FROM t",
    "SUM": "SELECT SUM(income) FROM t",
    "AVG": "SELECT AVG(income) FROM t",
    "SUM/COUNT": "SELECT SUM(income) / COUNT(income) FROM t",
    "SUM/COUNT as main": "SELECT SUM(income), COUNT(income) FROM t",
    "VARIANCE": "SELECT VARIANCE(income) FROM t",
    "STDDEV": "SELECT STDDEV(income) FROM t",
}
SCHEMA = {
    "table": "t",
    "privacy_unit": "row",
    "columns": {"income": {"type": "int", "bounds": [LOW, HIGH]}},
}

#: One peer's answers for one (aggregate, ε): values and, when stated, (low, high) intervals.
Answers = tuple[list[float], list[tuple[float, float]] | None]


def make_table(seed: int = 20261127) -> np.ndarray:
    rng = np.random.default_rng(seed)
    income = np.round(rng.lognormal(10.5, 0.8, ROWS))
    return np.clip(income, LOW, HIGH).astype(np.int64)


def make_heights(seed: int = 170) -> np.ndarray:
    """Heights in whole cm, normal(170, 10): both extremes far inside [0, 300]."""
    rng = np.random.default_rng(seed)
    return np.clip(np.round(rng.normal(170, 10, ROWS)), H_LOW, H_HIGH).astype(np.int64)


def truths(x: np.ndarray) -> dict[str, float]:
    xf = x.astype(np.float64)
    return {
        "COUNT": float(x.size),
        "SUM": float(x.sum()),
        "AVG": float(xf.mean()),
        "SUM/COUNT": float(xf.mean()),
        "SUM/COUNT as main": float(xf.mean()),
        "VARIANCE": float(xf.var(ddof=1)),
        "STDDEV": float(xf.std(ddof=1)),
    }


def _not_run(err: BaseException) -> str:
    return f"not run: {type(err).__name__}: {' '.join(str(err).split())[:70]}"


# -- infodp ------------------------------------------------------------------------------------


def run_infodp(
    x: np.ndarray, heights: np.ndarray, runs: int, workdir: Path
) -> tuple[dict[tuple[str, float], Answers], dict[tuple[str, str, float], list[float]]]:
    """The aggregates' answers, and the observed MIN/MAX per (column, function, ε)."""
    import pandas as pd

    from infodp.curator.engine import Curator

    curator = Curator(workdir / "store.duckdb", keep_open=True)
    curator.register_dataset("t", pd.DataFrame({"income": x}), SCHEMA)
    h_schema = {
        "table": "h",
        "privacy_unit": "row",
        "columns": {"height": {"type": "int", "bounds": [H_LOW, H_HIGH]}},
    }
    curator.register_dataset("h", pd.DataFrame({"height": heights}), h_schema, independent=True)
    for name in ("t", "h"):
        curator.add_analyst("bench", name, epsilon=10**9)
    out: dict[tuple[str, float], Answers] = {}
    for agg in (*AGGREGATES, "SUM/COUNT as main"):
        for eps in EPSILONS:
            values, intervals = [], []
            for _ in range(runs):
                r = curator.query("bench", SQL[agg], epsilon=eps, confidence=0.95)
                if agg == "SUM/COUNT as main":  # divided after the noise, no interval
                    values.append(float(r.rows[0][0]) / max(1.0, float(r.rows[0][1])))
                    continue
                values.append(float(r.rows[0][0]))
                lo, hi = r.confidence_intervals[0][0]
                intervals.append((float(lo), float(hi)))
            out[(agg, eps)] = (values, intervals or None)
    extremes: dict[tuple[str, str, float], list[float]] = {}
    for column, table in (("income", "t"), ("height", "h")):
        for func in ("MIN", "MAX"):
            for eps in EPSILONS:
                sql = f"SELECT {func}({column}) FROM {table}"
                extremes[(column, func, eps)] = [
                    float(curator.query("bench", sql, epsilon=eps).rows[0][0]) for _ in range(runs)
                ]
    curator.close()
    return out, extremes


# -- OpenDP --------------------------------------------------------------------------------------


def run_opendp(x: np.ndarray, runs: int) -> dict[tuple[str, float], Answers]:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    data = [int(v) for v in x]
    squares = [int(v) * int(v) for v in x]
    add_remove = dp.symmetric_distance()
    space = dp.vector_domain(dp.atom_domain(T="i64")), add_remove
    bounded = dp.vector_domain(dp.atom_domain(bounds=(LOW, HIGH), T="i64")), add_remove
    bounded_sq = dp.vector_domain(dp.atom_domain(bounds=(0, HIGH * HIGH), T="i64")), add_remove

    chains = {
        "count": dp.t.make_count(*space),
        "sum": dp.t.make_sum(*bounded),
        "sq": dp.t.make_sum(*bounded_sq),
    }
    # Each clamped aggregate is computed once by OpenDP's transformation; every run then draws
    # OpenDP's discrete Laplace for it (the same release as chain >> then_laplace, without
    # passing the 100 000 values to the library again for every draw).
    exact = {
        "count": chains["count"](data),
        "sum": chains["sum"](data),
        "sq": chains["sq"](squares),
    }
    scalar = dp.atom_domain(T="i64"), dp.absolute_distance(T="i64")

    def measure(kind: str, eps: float) -> Any:
        chain = chains[kind]
        scale = dp.binary_search_param(
            lambda s: chain >> dp.m.then_laplace(s), d_in=1, d_out=eps, T=float
        )
        noise = dp.m.make_laplace(*scalar, scale)
        return (lambda: noise(exact[kind])), scale

    out: dict[tuple[str, float], Answers] = {}
    for eps in EPSILONS:
        (count1, scale_c), (sum1, scale_s) = measure("count", eps), measure("sum", eps)
        count2, sum2 = measure("count", eps / 2)[0], measure("sum", eps / 2)[0]
        count3, sum3 = measure("count", eps / 3)[0], measure("sum", eps / 3)[0]
        sq3 = measure("sq", eps / 3)[0]
        acc_c = dp.discrete_laplacian_scale_to_accuracy(scale_c, 0.05)
        acc_s = dp.discrete_laplacian_scale_to_accuracy(scale_s, 0.05)
        res: dict[str, tuple[list[float], list[tuple[float, float]] | None]] = {
            a: ([], [] if a in ("COUNT", "SUM") else None) for a in PEER_AGGREGATES
        }
        for _ in range(runs):
            c = float(count1())
            s = float(sum1())
            res["COUNT"][0].append(c)
            res["SUM"][0].append(s)
            res["COUNT"][1].append((c - acc_c, c + acc_c))  # type: ignore[union-attr]
            res["SUM"][1].append((s - acc_s, s + acc_s))  # type: ignore[union-attr]
            n2 = max(1.0, float(count2()))
            res["AVG"][0].append(min(HIGH, max(LOW, float(sum2()) / n2)))
            n3 = max(2.0, float(count3()))
            mean = float(sum3()) / n3
            var = min((HIGH - LOW) ** 2 / 4, max(0.0, float(sq3()) / n3 - mean * mean))
            var *= n3 / (n3 - 1)
            res["VARIANCE"][0].append(var)
            res["STDDEV"][0].append(math.sqrt(var))
        for agg in PEER_AGGREGATES:
            out[(agg, eps)] = res[agg]
    return out


# -- diffprivlib -----------------------------------------------------------------------------


def run_diffprivlib(x: np.ndarray, runs: int) -> dict[tuple[str, float], Answers]:
    import warnings

    from diffprivlib import tools
    from diffprivlib.utils import PrivacyLeakWarning

    warnings.simplefilter("ignore", PrivacyLeakWarning)
    xf = x.astype(np.float64)
    ones = np.ones(ROWS)
    bounds = (float(LOW), float(HIGH))
    calls: dict[str, Callable[[float], float]] = {
        "COUNT": lambda e: float(tools.count_nonzero(ones, epsilon=e)),
        "SUM": lambda e: float(tools.sum(xf, epsilon=e, bounds=bounds)),
        "AVG": lambda e: float(tools.mean(xf, epsilon=e, bounds=bounds)),
        "VARIANCE": lambda e: float(tools.var(xf, epsilon=e, bounds=bounds)),
        "STDDEV": lambda e: float(tools.std(xf, epsilon=e, bounds=bounds)),
    }
    return {
        (agg, eps): ([calls[agg](eps) for _ in range(runs)], None)
        for agg in PEER_AGGREGATES
        for eps in EPSILONS
    }


# -- Tumult Analytics ----------------------------------------------------------------------------


def run_tumult(x: np.ndarray, runs: int, workdir: Path) -> dict[tuple[str, float], Answers]:
    import os
    import sys

    import pandas as pd
    from pyspark.sql import SparkSession
    from tmlt.analytics import AddOneRow, PureDPBudget, QueryBuilder, Session

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers run this interpreter
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.warehouse.dir", str(workdir / "spark-warehouse"))
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    frame = spark.createDataFrame(pd.DataFrame({"income": x.astype(np.int64)})).cache()
    frame.count()
    session = Session.from_dataframe(
        PureDPBudget(float("inf")), "t", frame, protected_change=AddOneRow()
    )
    builders: dict[str, Callable[[], Any]] = {
        "COUNT": lambda: QueryBuilder("t").count(),
        "SUM": lambda: QueryBuilder("t").sum("income", LOW, HIGH),
        "AVG": lambda: QueryBuilder("t").average("income", LOW, HIGH),
        "VARIANCE": lambda: QueryBuilder("t").variance("income", LOW, HIGH),
        "STDDEV": lambda: QueryBuilder("t").stdev("income", LOW, HIGH),
    }
    out: dict[tuple[str, float], Answers] = {}
    try:
        for agg in PEER_AGGREGATES:
            for eps in EPSILONS:
                values = []
                for _ in range(runs):
                    row = session.evaluate(builders[agg](), PureDPBudget(eps)).collect()[0]
                    values.append(float(row[0]))
                out[(agg, eps)] = (values, None)
                print("Tumult", agg, eps, flush=True)
    finally:
        spark.stop()
    return out


# -- report --------------------------------------------------------------------------------------


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1e5 or abs(v) < 1e-2:
        return f"{v:.3g}"
    return f"{v:,.{max(0, 2 - math.floor(math.log10(abs(v))))}f}"


def summarise(answers: Answers, truth: float) -> list[str]:
    values, intervals = answers
    err = np.abs(np.array(values) - truth)
    cells = [_fmt(float(err.mean())), _fmt(float(np.quantile(err, 0.95)))]
    if intervals is None:
        return [*cells, "—", "—", "—"]
    lo = np.array([i[0] for i in intervals])
    hi = np.array([i[1] for i in intervals])
    cover = float(((lo <= truth) & (truth <= hi)).mean())
    half = float(np.median((hi - lo) / 2))
    ratio = half / float(np.quantile(err, 0.95)) if np.quantile(err, 0.95) > 0 else math.nan
    return [*cells, f"{cover:.2f}", _fmt(half), f"{ratio:.2f}"]


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--tumult-runs", type=int, default=5)
    parser.add_argument("--p90-rows", type=int, default=100_000)
    parser.add_argument("--p90-reps", type=int, default=100)
    args = parser.parse_args()
    x = make_table()
    heights = make_heights()
    truth = truths(x)
    results: dict[str, dict[tuple[str, float], Answers] | str] = {}
    extremes: dict[tuple[str, str, float], list[float]] = {}
    timing: dict[str, float] = {}

    def ours() -> dict[tuple[str, float], Answers]:
        answers, seen = run_infodp(x, heights, args.runs, work)
        extremes.update(seen)
        return answers

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        peers: list[tuple[str, Callable[[], dict[tuple[str, float], Answers]]]] = [
            ("infodp", ours),
            ("OpenDP", lambda: run_opendp(x, args.runs)),
            ("diffprivlib", lambda: run_diffprivlib(x, args.runs)),
        ]
        if args.tumult_runs > 0:
            peers.append(("Tumult Analytics", lambda: run_tumult(x, args.tumult_runs, work)))
        else:
            results["Tumult Analytics"] = "not run: --tumult-runs 0 (one Spark job per answer)"
        for name, fn in peers:
            start = time.perf_counter()
            try:
                results[name] = fn()
            except Exception as err:  # report why the peer did not run
                results[name] = _not_run(err)
            timing[name] = time.perf_counter() - start
            print(name, f"{timing[name]:.1f} s", flush=True)
        start = time.perf_counter()
        quantile_part = quantile_sections(x, heights, extremes, args, work)
        timing["quantile part"] = time.perf_counter() - start
    try:
        import snsql  # noqa: F401

        results["SmartNoise SQL"] = "not run: installed, but not wired into this benchmark"
    except Exception as err:
        results["SmartNoise SQL"] = _not_run(err)

    header = [
        "aggregate",
        "ε",
        "library",
        "mean abs error",
        "95th pct abs error",
        "95% interval coverage",
        "median half-width",
        "half-width / 95th pct error",
    ]
    rows: list[list[str]] = []
    for agg in (*AGGREGATES, "SUM/COUNT as main"):
        for eps in EPSILONS:
            for name, res in results.items():
                if isinstance(res, str) or (agg, eps) not in res:
                    continue
                label = agg if agg != "SUM/COUNT as main" else "SUM/COUNT (main: apart)"
                rows.append([label, f"{eps:g}", name, *summarise(res[(agg, eps)], truth[agg])])
    skipped = [f"- {name}: {res}" for name, res in results.items() if isinstance(res, str)]
    runs = {n: (args.tumult_runs if n == "Tumult Analytics" else args.runs) for n in results}
    body = (
        f"One seeded table of {ROWS:,} people, income log-normal clamped to [{LOW}, {HIGH:,}] "
        f"(exact: mean {truth['AVG']:,.1f}, standard deviation {truth['STDDEV']:,.1f}); "
        "add/remove-one neighbours, pure ε per query, 95% intervals. Runs per cell: "
        + ", ".join(f"{n} {r}" for n, r in runs.items() if not isinstance(results[n], str))
        + ". Versions: "
        + ", ".join(
            f"{d} {_version(d)}" for d in ("opendp", "diffprivlib", "tmlt.analytics", "pyspark")
        )
        + ".\n\n"
        "infodp's AVG/VARIANCE/STDDEV intervals invert the exact error law of the released ratio "
        "(`infodp.curator.rules.intervals`); a ratio near 1 in the last column means the stated "
        "interval is as narrow as the noise allows. OpenDP states intervals for COUNT and SUM "
        "only (`discrete_laplacian_scale_to_accuracy`); diffprivlib and Tumult state none. "
        "diffprivlib's mean/var/std take the row count as public (replace-one neighbours). "
        "SUM/COUNT is `SUM(income) / COUNT(income)` written by hand, which infodp now measures "
        "as AVG (same two measurements, same price); 'SUM/COUNT (main: apart)' is how main "
        "measured it, the sum and the count noised apart and divided. "
        "Wall time (all cells): "
        + ", ".join(f"{n} {t:.0f} s" for n, t in timing.items())
        + ".\n\n"
        + markdown_table(header, rows)
        + ("\n\n" + "\n".join(skipped) if skipped else "")
        + "\n\n"
        + quantile_part
    )
    command = (
        "PYTHONPATH=$PWD/src /work/venvs/peers/bin/python -m benchmarks.accuracy "
        f"--runs {args.runs} --tumult-runs {args.tumult_runs} --p90-rows {args.p90_rows} "
        f"--p90-reps {args.p90_reps}"
    )
    write_section("accuracy", command, body)


def quantile_sections(
    x: np.ndarray,
    heights: np.ndarray,
    extremes: dict[tuple[str, str, float], list[float]],
    args: argparse.Namespace,
    work: Path,
) -> str:
    """MIN/MAX before and after, P90 against peers, rank error against its p95 (markdown)."""
    from fractions import Fraction

    from benchmarks import _accuracy_quantiles as aq
    from benchmarks.quantile_accuracy import table

    P90, MEDIAN = Fraction(9, 10), Fraction(1, 2)

    columns = {"income": (x, LOW, HIGH), "height": (heights, H_LOW, H_HIGH)}
    if extremes:
        head, rows = aq.extremes_table(columns, lambda c, f, e: extremes[(c, f, e)])
        minmax = markdown_table(head, rows)
    else:
        minmax = "not run: infodp did not run (see above)"
    p_head, p_rows, p_truth = aq.p90_table(args.p90_rows, args.p90_reps, work)
    rng = np.random.default_rng(101)
    p90_step = aq.p90_grid(0, 300_000).step
    points = round(300_000 / p90_step)
    income = np.clip(table(args.p90_rows)["income"].to_numpy(), 0, 300_000)
    snapped = np.floor(income / p90_step + 0.5)
    spread = rng.integers(0, 100_001, 1000)
    cases: list[aq.Case] = []
    for eps in (0.1, 1.0):
        cases += [
            (f"income, float (grid {p90_step:g})", snapped.astype(np.int64), 0, points, P90, eps),
            ("income, int", x, LOW, HIGH, P90, eps),
            ("income, int", x, LOW, HIGH, MEDIAN, eps),
            ("uniform on 0..100 000, 1 000 rows", spread, 0, 100_000, MEDIAN, eps),
            aq.worst_case(101, MEDIAN, eps),
            aq.worst_case(100_001, P90, eps),
        ]
    r_head, r_rows = aq.rank_error_table(cases)
    return (
        "### MIN and MAX: before (main) and after\n\n"
        "Mean absolute error in column units against the exact extreme. *Before* is main's "
        "method (the plain q = 0 / 1 quantile: every point between the declared bound and the "
        "true extreme scores 0), computed here from its exact law; *after* aims at the rank "
        "t = ⌈(2/ε)(ln K + ln 20)⌉ from the extreme (`infodp.mechanisms.quantile."
        "extreme_target`), exact and observed over "
        f"{args.runs} answers through the curator. The heights' extremes lie far inside "
        "[0, 300]: the shape the change is for. The income shows its cost: its maximum is the "
        "declared upper bound (the column is clamped, hundreds of rows sit on it), where the "
        "plain quantile is exact and aiming t rows inside can only lose; and its minimum lies "
        "close to the bound compared with how far apart its t smallest values are (a sparse "
        "lower tail), so at small ε the value of rank t is farther from the minimum than the "
        "plain quantile's near-uniform draw over [bound, minimum] is.\n\n"
        + minmax
        + "\n\n### 90th percentile against peers\n\n"
        f"The quantile benchmark's table ({args.p90_rows:,} rows, float income clipped to "
        f"[0, 300 000], exact P90 {p_truth:,.2f}); infodp answers on the P90's grid (step "
        f"{p90_step:g}: the sum grid's 0.25 split in 16, read from the stored values, "
        "`infodp.curator.plan.grid.quantile_grid`), diffprivlib samples Smith's continuous "
        "mechanism with Δ = 1; 'exact' rows are the expected error from the exact law (no "
        "sampling error): infodp's, diffprivlib's, and Smith's mechanism without a grid with "
        "infodp's Δ = max(q, 1 − q). Tumult Analytics is measured by "
        "`benchmarks/quantile_accuracy.py` (one Spark job per answer).\n\n"
        + markdown_table(p_head, p_rows)
        + "\n\n### Stated rank error against the exact 95th percentile\n\n"
        "The stated 95% rank error (2Δ/ε)·ln(k(1 − β)/β) over k + 1 grid points "
        "(`infodp.curator.rules.quantile.rank_error`) against the exact 95th percentile of the "
        "released point's rank error (its score, in rows), both from the exact law. The "
        "statement depends on public facts only and is attained by the shapes with all rows "
        "on one grid point, so no data-independent statement can be narrower for every "
        "dataset; on typical data the tail is thinner (only the few grid points near each rank "
        "share a score, not all of them), hence the ratio, which grows with ln(grid points). "
        "No pure-DP quantile can do better on every dataset: finding a point between the least "
        "and the greatest value of K candidates needs Ω(ln K / ε) rows for some dataset (the "
        "interior point problem; Bun, Nissim, Stemmer & Vadhan 2015, from Beimel, Nissim & "
        "Stemmer 2013), so a statement as narrow as the typical 95th percentile would have to "
        "depend on the data's spacing: a release of its own, with its own charge.\n\n"
        + markdown_table(r_head, r_rows)
    )


if __name__ == "__main__":
    main()
