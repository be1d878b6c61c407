"""Synthetic data: infodp's AIM and MST against smartnoise-synth's MST and AIM and infodp's own
histogram synopsis, on a generated census-like table.

The table (12 columns, 100 000 rows by default) is generated here with a fixed generator, with
dependencies between age, education, occupation, hours, income, marital status, relationship
and home ownership; it is never fetched nor committed. Every method sees the same discretised
table (infodp's :class:`~infodp.synthetic.domain.Domain`: categories as declared, numbers in 16
bins of the declared bounds), and the error of a synthetic table is the average, over every
2-way and 3-way marginal, of the total-variation distance between its marginal and the true one.

* infodp AIM and MST: :func:`infodp.synthetic.release.synthesize_codes` at (ε, δ);
* smartnoise-synth MST and AIM (``snsynth``, which uses Private-PGM): run by
  ``benchmarks/_smartnoise_synth_runner.py`` with the interpreter of its own environment
  (``--peer-python``, default ``/work/venvs/synth/bin/python``), never imported here, at the same
  (ε, δ), the columns declared categorical (its preprocessing reads each column's set of codes
  from the table, which infodp takes from the declaration), its fitted model drawing rows
  i.i.d.: with mbi 1.1's default randomized rounding, pairs off the model's tree come out
  correlated by the rows' positions (total-variation error up to 0.47 on such pairs at ε = 10,
  0.34 on average), which would misrepresent the algorithm;
* the histogram synopsis: every 2-way and 3-way marginal released as its own synopsis
  (:meth:`infodp.curator.Curator.release_synopsis`, discrete Laplace, pure ε) at ε/K each for
  K marginals (sequential composition), its error measured on the noisy marginals themselves
  (negative cells set to 0).

Time is wall-clock per release, including the peer's process start. One repetition per cell
(the machine is shared): differences smaller than the spread seen across ε are noise.

``python benchmarks/synthetic.py`` (add ``--rows 20000`` for a quick run).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from infodp.curator.declaration.source import load_schema
from infodp.mechanisms.sampling import CryptoRandomSource
from infodp.synthetic.domain import Domain
from infodp.synthetic.measure import marginal
from infodp.synthetic.release import synthesize_codes

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import markdown_table, write_section

EPSILONS = (0.1, 1.0, 10.0)
DELTA = 1e-6
BINS = 16
RUNNER = Path(__file__).resolve().parent / "_smartnoise_synth_runner.py"

EDUCATION = ["none", "primary", "some-hs", "hs", "some-college", "bachelor", "master", "doctorate"]
OCCUPATION = [f"occ{i}" for i in range(10)]
MARITAL = ["never", "married", "divorced", "separated", "widowed"]
RELATIONSHIP = ["husband", "wife", "own-child", "unmarried", "other", "not-in-family"]
RACE = ["r1", "r2", "r3", "r4", "r5"]
REGION = [f"region{i}" for i in range(9)]
CITIZEN = ["native", "naturalised", "non-citizen"]

DECLARATION: dict[str, Any] = {
    "table": "census",
    "privacy_unit": "row",
    "columns": {
        "age": {"type": "int", "bounds": [17, 90]},
        "sex": {"type": "category", "categories": ["f", "m"]},
        "race": {"type": "category", "categories": RACE},
        "education": {"type": "category", "categories": EDUCATION},
        "marital": {"type": "category", "categories": MARITAL},
        "relationship": {"type": "category", "categories": RELATIONSHIP},
        "occupation": {"type": "category", "categories": OCCUPATION},
        "hours": {"type": "int", "bounds": [1, 99]},
        "income": {"type": "float", "bounds": [0, 200000]},
        "region": {"type": "category", "categories": REGION},
        "citizen": {"type": "category", "categories": CITIZEN},
        "owner": {"type": "bool"},
    },
}


def census(rows: int, generator: int = 20260101) -> pd.DataFrame:
    """A census-like table with realistic dependencies (fixed generator, no download)."""
    rng = np.random.default_rng(generator)
    age = np.clip(rng.gamma(6.0, 7.0, rows) + 17, 17, 90).astype(int)
    sex = rng.choice(["f", "m"], rows)
    region = rng.choice(len(REGION), rows, p=np.linspace(2, 1, len(REGION)) / 13.5)
    race = (region + rng.choice(3, rows, p=[0.7, 0.2, 0.1])) % len(RACE)
    edu = np.clip(rng.normal(3 + (age < 25) * -1 + (age > 30) * 0.7, 1.5, rows), 0, 7).astype(int)
    occupation = np.clip(edu + rng.integers(-2, 3, rows) + (sex == "m") * 1, 0, 9)
    hours = np.clip(rng.normal(38 + (sex == "m") * 5 + occupation, 9, rows), 1, 99).astype(int)
    income = np.clip(
        np.exp(rng.normal(9.2 + 0.18 * edu + 0.01 * hours + 0.004 * (age - 17), 0.5, rows)),
        0,
        200000,
    )
    married = rng.random(rows) < np.clip((age - 20) / 40, 0.02, 0.65)
    marital = np.where(married, 1, np.where(age > 65, rng.choice([2, 4], rows), 0))
    marital = np.where((marital == 1) & (rng.random(rows) < 0.08), 3, marital)
    relationship = np.where(
        marital == 1,
        np.where(sex == "m", 0, 1),
        np.where(age < 25, 2, rng.choice([3, 4, 5], rows)),
    )
    citizen = np.where(race >= 3, rng.choice(3, rows, p=[0.4, 0.3, 0.3]), 0)
    owner = rng.random(rows) < 1 / (1 + np.exp(-(np.log(income) - 10.3) - (age - 45) / 20))
    return pd.DataFrame(
        {
            "age": age,
            "sex": sex,
            "race": np.array(RACE)[race],
            "education": np.array(EDUCATION)[edu],
            "marital": np.array(MARITAL)[marital],
            "relationship": np.array(RELATIONSHIP)[relationship],
            "occupation": np.array(OCCUPATION)[occupation],
            "hours": hours,
            "income": income,
            "region": np.array(REGION)[region],
            "citizen": np.array(CITIZEN)[citizen],
            "owner": owner,
        }
    )


def workload(d: int) -> list[tuple[int, ...]]:
    """Every 2-way and 3-way marginal."""
    return [c for k in (2, 3) for c in itertools.combinations(range(d), k)]


def tv_error(truth: np.ndarray, synth: np.ndarray, sizes: tuple[int, ...]) -> float:
    """Average total-variation distance over every 2-way and 3-way marginal."""
    errors = []
    for c in workload(len(sizes)):
        p = marginal(truth, sizes, c) / truth.shape[0]
        q = marginal(synth, sizes, c).astype(np.float64)
        q = q / max(q.sum(), 1.0)
        errors.append(0.5 * float(np.abs(p - q).sum()))
    return float(np.mean(errors))


def histogram_error(
    codes: np.ndarray, sizes: tuple[int, ...], epsilon: float
) -> tuple[float, float]:
    """The synopsis baseline: each workload marginal a synopsis at ε/K (error, seconds)."""
    from infodp.curator import Curator

    work = workload(len(sizes))
    names = [f"c{i}" for i in range(len(sizes))]
    frame = pd.DataFrame(codes, columns=names)
    declaration = {
        "table": "codes",
        "privacy_unit": "row",
        "columns": {
            n: {"type": "int", "bounds": [0, s - 1]} for n, s in zip(names, sizes, strict=True)
        },
    }
    with tempfile.TemporaryDirectory() as d:
        cur = Curator(os.path.join(d, "s.duckdb"))
        cur.register_dataset("codes", frame, declaration)
        cur.add_analyst("bench", "codes", epsilon=epsilon)
        each = Fraction(str(epsilon)) / len(work)
        started = time.perf_counter()
        errors = []
        for i, c in enumerate(work):
            syn = cur.release_synopsis(
                "bench", f"m{i}", "codes", [names[j] for j in c], epsilon=each
            )
            noisy = np.maximum(np.asarray(syn.counts, dtype=np.float64), 0.0)
            noisy = noisy / max(noisy.sum(), 1.0)
            p = marginal(codes, sizes, c) / codes.shape[0]
            errors.append(0.5 * float(np.abs(p - noisy).sum()))
        seconds = time.perf_counter() - started
        cur.close()
    return float(np.mean(errors)), seconds


def peer(
    python: str, method: str, codes_csv: str, out_csv: str, epsilon: float, timeout: float
) -> tuple[str, float]:
    """Run smartnoise-synth in its own environment; (status, seconds)."""
    config = {
        "method": method,
        "input": codes_csv,
        "output": out_csv,
        "epsilon": epsilon,
        "delta": DELTA,
        "draw": "sample",
    }
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [python, str(RUNNER), json.dumps(config)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - started
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        return "failed: " + (done.stderr.strip().splitlines() or ["?"])[-1][:120], seconds
    return "ok", seconds


def spread(rows: int, runs: int) -> None:
    """The run-to-run spread of infodp's AIM and MST (what "within noise" means for one run)."""
    frame = census(rows)
    schema = load_schema(DECLARATION)
    domain = Domain.of(schema, list(DECLARATION["columns"]), BINS)
    codes = domain.encode(frame)
    source = CryptoRandomSource()
    for eps in (0.1, 1.0):
        for method in ("aim", "mst"):
            errs = []
            for _ in range(runs):
                out = synthesize_codes(
                    codes,
                    domain,
                    epsilon=eps,
                    delta=DELTA,
                    method=method,
                    rows=rows,
                    source=source,
                )
                errs.append(tv_error(codes, domain.encode(out.frame), domain.sizes))
            print(
                f"infodp {method.upper()} ε={eps:g}: mean {np.mean(errs):.4f}, "
                f"sd {np.std(errs, ddof=1):.4f} over {runs} runs",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--peer-python", default="/work/venvs/synth/bin/python")
    parser.add_argument("--mst-timeout", type=float, default=400.0, help="seconds per peer MST")
    parser.add_argument("--aim-timeout", type=float, default=4800.0, help="seconds per peer AIM")
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--spread",
        type=int,
        default=0,
        help="only repeat infodp's AIM and MST this many times at ε = 0.1 and 1 and print the "
        "mean and standard deviation of their error (the noise of one run; nothing written)",
    )
    args = parser.parse_args()
    if args.spread:
        spread(args.rows, args.spread)
        return

    frame = census(args.rows)
    schema = load_schema(DECLARATION)
    domain = Domain.of(schema, list(DECLARATION["columns"]), BINS)
    codes = domain.encode(frame)
    sizes = domain.sizes
    source = CryptoRandomSource()
    results: dict[tuple[str, float], tuple[str, str]] = {}
    with tempfile.TemporaryDirectory() as d:
        codes_csv = os.path.join(d, "codes.csv")
        pd.DataFrame(codes, columns=domain.names).to_csv(codes_csv, index=False)
        for eps in EPSILONS:
            for method in ("aim", "mst"):
                started = time.perf_counter()
                out = synthesize_codes(
                    codes,
                    domain,
                    epsilon=eps,
                    delta=DELTA,
                    method=method,
                    rows=args.rows,
                    source=source,
                )
                seconds = time.perf_counter() - started
                synth = domain.encode(out.frame)
                err = tv_error(codes, synth, sizes)
                results[(f"infodp {method.upper()}", eps)] = (f"{err:.4f}", f"{seconds:.1f}")
                print(f"infodp {method} eps={eps}: {err:.4f} in {seconds:.1f}s", flush=True)
            err, seconds = histogram_error(codes, sizes, eps)
            results[("infodp histogram synopses", eps)] = (f"{err:.4f}", f"{seconds:.1f}")
            print(f"histogram eps={eps}: {err:.4f} in {seconds:.1f}s", flush=True)
            if args.no_peer:
                continue
            for method in ("mst", "aim"):
                out_csv = os.path.join(d, f"peer_{method}_{eps}.csv")
                limit = args.mst_timeout if method == "mst" else args.aim_timeout
                status, seconds = peer(args.peer_python, method, codes_csv, out_csv, eps, limit)
                label = f"smartnoise-synth {method.upper()}"
                if status == "ok":
                    synth = pd.read_csv(out_csv)[list(domain.names)].to_numpy(dtype=np.int64)
                    err = tv_error(codes, synth, sizes)
                    results[(label, eps)] = (f"{err:.4f}", f"{seconds:.1f}")
                else:
                    results[(label, eps)] = (status, f"{seconds:.1f}")
                print(f"{label} eps={eps}: {results[(label, eps)]}", flush=True)

    labels = list(dict.fromkeys(k[0] for k in results))
    header = ["method"] + [f"TV ε={e:g}" for e in EPSILONS] + [f"s ε={e:g}" for e in EPSILONS]
    table = [
        [label]
        + [results.get((label, e), ("—", "—"))[0] for e in EPSILONS]
        + [results.get((label, e), ("—", "—"))[1] for e in EPSILONS]
        for label in labels
    ]
    body = (
        f"Average total-variation error over all {len(workload(len(sizes)))} 2-way and 3-way "
        f"marginals of a generated census-like table ({args.rows} rows, {len(sizes)} columns, "
        f"numbers in {BINS} bins; domain sizes {list(sizes)}), δ = {DELTA:g}; time in seconds "
        "per release (the peer's includes starting its process). One repetition per cell on a "
        "shared 2-core machine. infodp's AIM fits a junction-tree model by mirror descent and "
        "plans its rounds from a noisy row count (`infodp.synthetic.aim`); the histogram "
        "synopses answer each marginal from its own noisy histogram at ε/K. A peer run is "
        f"stopped after {args.mst_timeout:g} s (MST) or {args.aim_timeout:g} s (AIM); "
        "`timeout` marks one that did not finish.\n\n" + markdown_table(header, table)
    )
    print(body)
    if not args.no_write:
        command = "python benchmarks/synthetic.py" + (
            f" --rows {args.rows}" if args.rows != 100_000 else ""
        )
        write_section("synthetic data", command, body)


if __name__ == "__main__":
    main()
