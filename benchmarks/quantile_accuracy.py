"""Accuracy of the 90th percentile: infodp against diffprivlib and Tumult Analytics.

One seeded table of ``--rows`` people (one row each, add/remove-one-row neighbours) with a
skewed income column (log-normal, clipped to the declared bounds [0, 300 000]). For each
ε in 0.1, 1 and 10, every library answers the 90th percentile ``--reps`` times with its own
(secure, where it has one) randomness; the table reports the mean and the 95th percentile of
the absolute error against the exact 90th percentile of the table (numpy's default, linear
interpolation). infodp runs ``SELECT QUANTILE(income, 0.9)`` through :class:`infodp.Session`
with the OS CSPRNG. diffprivlib runs in this process (``diffprivlib.tools.quantile``);
Tumult Analytics, which pins pyspark 3.5 and numpy 1, runs in its own environment
(``--tumult-python``) through ``benchmarks/_tumult_quantile_runner.py`` on the same data
written to Parquet, beside the rest; its answers are Spark jobs of seconds to a minute each, so
``--tumult-seconds`` may stop it after fewer rounds (one answer per ε each), which the table
then says. A peer that is missing or fails is reported as not run, with the reason.

Run (from the repository root)::

    PYTHONPATH=$PWD/src /work/venvs/peers/bin/python -m benchmarks.quantile_accuracy \
        --tumult-seconds 2520
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks._report import markdown_table, write_section

HERE = Path(__file__).resolve().parent
DEFAULT_TUMULT = Path("/work/venvs/tumult/bin/python")
EPSILONS = (0.1, 1.0, 10.0)
LOW, HIGH = 0.0, 300_000.0
Q = 0.9
SEED = 2026
COMMAND = "PYTHONPATH=$PWD/src /work/venvs/peers/bin/python -m benchmarks.quantile_accuracy"


def table(rows: int) -> pd.DataFrame:
    """The seeded income column: log-normal (median e^10.5 ≈ 36 000), clipped to the bounds."""
    rng = np.random.default_rng(SEED)
    income = np.clip(rng.lognormal(10.5, 0.8, rows), LOW, HIGH)
    return pd.DataFrame({"income": income})


def run_infodp(
    frame: pd.DataFrame, reps: int, epsilons: tuple[float, ...] = EPSILONS
) -> dict[float, list[float]]:
    from infodp import Session

    schema = {
        "table": "t",
        "privacy_unit": "row",
        "columns": {"income": {"type": "float", "bounds": [LOW, HIGH]}},
    }
    session = Session(frame, schema, epsilon=10**6)
    sql = f"SELECT QUANTILE(income, {Q}) FROM t"
    return {
        eps: [float(session.query(sql, epsilon=eps).rows[0][0]) for _ in range(reps)]
        for eps in epsilons
    }


def run_diffprivlib(
    frame: pd.DataFrame, reps: int, epsilons: tuple[float, ...] = EPSILONS
) -> dict[float, list[float]]:
    import warnings

    from diffprivlib.tools import quantile

    values = frame["income"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its budget accountant's notices
        return {
            eps: [float(quantile(values, Q, epsilon=eps, bounds=(LOW, HIGH))) for _ in range(reps)]
            for eps in epsilons
        }


class Tumult:
    """Tumult Analytics in its own environment, started at once so it runs beside the rest."""

    def __init__(self, frame: pd.DataFrame, reps: int, python: Path, seconds: float) -> None:
        self.version = "not run"
        self.start = time.perf_counter()
        self.proc: subprocess.Popen[str] | None = None
        self.tmp = tempfile.TemporaryDirectory()
        if not python.exists():
            self.why = f"no Tumult environment at {python} (see --tumult-python)"
            return
        self.why = ""
        path = Path(self.tmp.name) / "income.parquet"
        frame.to_parquet(path)
        config = {
            "path": str(path),
            "column": "income",
            "q": Q,
            "low": LOW,
            "high": HIGH,
            "epsilons": list(EPSILONS),
            "reps": reps,
            "seconds": seconds,
        }
        env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "SPARK_HOME"}}
        env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = str(python)
        self.proc = subprocess.Popen(
            [str(python), str(HERE / "_tumult_quantile_runner.py"), json.dumps(config)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def result(self) -> dict[float, list[float]]:
        try:
            if self.proc is None:
                raise RuntimeError(self.why)
            stdout, _ = self.proc.communicate(timeout=4 * 3600)
            lines = [line for line in stdout.splitlines() if line.startswith("{")]
            if self.proc.returncode != 0 or not lines:
                raise RuntimeError(f"exit {self.proc.returncode} (its messages are above)")
            out = json.loads(lines[-1])
            self.version = str(out["version"])
            return {float(e): list(map(float, vals)) for e, vals in out["answers"].items()}
        finally:
            self.tmp.cleanup()


def measure(name: str, fn: Callable[[], dict[float, list[float]]]) -> tuple[Any, float]:
    """(answers per ε, or the reason the library did not run; seconds until it finished)."""
    start = time.perf_counter()
    try:
        out: Any = fn()
    except Exception as err:  # report why the library did not run, keep the others
        out = f"not run: {type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}"
    seconds = time.perf_counter() - start
    print(f"{name}: {seconds:.1f} s", file=sys.stderr, flush=True)
    return out, seconds


def _version(module: str) -> str:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return "not installed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--tumult-python", type=Path, default=DEFAULT_TUMULT)
    parser.add_argument(
        "--tumult-seconds",
        type=float,
        default=float("inf"),
        help="stop Tumult's rounds (one answer per ε each) after this long",
    )
    parser.add_argument("--no-write", action="store_true", help="print, do not edit BENCHMARKS.md")
    args = parser.parse_args()

    frame = table(args.rows)
    truth = float(np.quantile(frame["income"].to_numpy(), Q))
    # Tumult runs while the others are measured, for at most --tumult-seconds.
    tumult = Tumult(frame, args.reps, args.tumult_python, args.tumult_seconds)
    results = {
        "infodp": measure("infodp", lambda: run_infodp(frame, args.reps)),
        "diffprivlib": measure("diffprivlib", lambda: run_diffprivlib(frame, args.reps)),
        "Tumult Analytics": measure("Tumult Analytics", tumult.result),
    }
    versions = {
        "infodp": "this checkout",
        "diffprivlib": _version("diffprivlib"),
        "Tumult Analytics": tumult.version,
    }
    header = ["library", *[f"ε = {e:g}: mean / p95 abs error" for e in EPSILONS]]
    rows: list[list[str]] = []
    summary: dict[str, dict[float, float]] = {}
    for name, (out, _) in results.items():
        if isinstance(out, str):
            rows.append([f"{name} ({versions[name]})", out, "", ""])
            continue
        cells = []
        label = f"{name} ({versions[name]})"
        if len(out[EPSILONS[0]]) < args.reps:
            label += f", {len(out[EPSILONS[0]])} answers per ε (time limit)"
        for eps in EPSILONS:
            err = np.abs(np.asarray(out[eps]) - truth)
            summary.setdefault(name, {})[eps] = float(err.mean())
            cells.append(f"{err.mean():.3g} / {np.percentile(err, 95):.3g}")
        rows.append([label, *cells])

    verdict = []
    if "infodp" in summary:
        ours = summary["infodp"]
        verdict.append(f"infodp at ε = 10: mean abs error {ours[10.0]:.3g} (goal: at most 5).")
        peers = {k: v for k, v in summary.items() if k != "infodp"}
        for name, theirs in peers.items():
            rel = "at most" if ours[1.0] <= theirs[1.0] else "ABOVE"
            verdict.append(
                f"infodp at ε = 1: {ours[1.0]:.3g}, {rel} {name}'s {theirs[1.0]:.3g} (same run)."
            )
    body = (
        f"The 90th percentile of a seeded skewed income column ({args.rows:,} people, one row "
        f"each, log-normal clipped to [0, 300 000]; exact value {truth:,.2f}), {args.reps} "
        "answers per library and ε, absolute error against the exact value. infodp answers "
        "on its release grid (step 0.25 here) with the exponential mechanism over every grid "
        "point, scored on both sides (Smith 2011 on the grid); diffprivlib samples Smith's "
        "continuous mechanism; Tumult Analytics its own exponential-mechanism quantile.\n\n"
        + markdown_table(header, rows)
        + "\n\n"
        + " ".join(verdict)
    )
    print(body)
    if not args.no_write:
        write_section("quantile accuracy", " ".join([COMMAND, *sys.argv[1:]]), body)


if __name__ == "__main__":
    main()
