"""Benchmark: whole-process CLI start-up and a CLI query, beside bare Python and Python+DuckDB.

``python3 -m benchmarks.cli_startup [--rows 1000000] [--reps 7]``

Each line is a fresh process, timed from spawn to exit (median and min of ``--reps`` runs
after one warm-up; all in the same run, interleaved so machine load hits all alike):

* ``python3 -c pass`` — the floor for any Python command;
* ``infodp --help`` — the CLI's start-up (target: within 8× of the floor);
* ``python3 -c "import duckdb; …"`` — a Python process opening the 1M-row demo store and
  running the same grouped aggregate without noise (the peer);
* ``python3 -c "import sqlglot, duckdb, click"`` — the imports every infodp query process
  needs (the floor under the next line; a pure-ε query does not import numpy);
* ``infodp query … --json`` — the same aggregate as a DP query, end to end (parse, plan,
  ledger reservation, bounded aggregation, noise, leakage summary, ledger completion;
  target: within 2× of the peer).

The store is the demo census (:func:`infodp.curator.demo.census_frame`) built once in a
temporary directory with an analyst whose budget outlasts the repetitions. Bytecode is
precompiled first (as ``pip install`` does), so no process pays for compiling sources.
The section "cli_startup" of BENCHMARKS.md is rewritten with the results.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._report import ROOT, markdown_table, write_section

SQL = "SELECT region, COUNT(*), AVG(income) FROM census GROUP BY region"
PLAIN = "SELECT region, count(*), avg(income) FROM census GROUP BY region"


def _build_store(directory: Path, rows: int) -> Path:
    from infodp.curator import Curator
    from infodp.curator.demo import CENSUS_SCHEMA, census_frame

    db = directory / "demo.duckdb"
    cur = Curator(db)
    cur.register_dataset("census", census_frame(rows), CENSUS_SCHEMA)
    cur.add_analyst("alice", "census", epsilon=10_000)
    cur.close()
    return db


def _time(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()

    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    src = ROOT / "src"
    env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    compileall.compile_dir(str(src / "infodp"), quiet=1)
    py = sys.executable
    cli = [py, "-c", "import sys; from infodp.cli import main; sys.exit(main())"]
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        db = _build_store(where, args.rows)
        cases = {
            "python3 -c pass": [py, "-c", "pass"],
            "infodp --help": [*cli, "--help"],
            "python3 + duckdb aggregate": [
                py,
                "-c",
                f"import duckdb; c = duckdb.connect({str(db)!r}, read_only=True); "
                f"print(c.execute({PLAIN!r}).fetchall())",
            ],
            # What any infodp query process must import (parse: sqlglot; store: duckdb; the
            # CLI: click): the floor under the figure below. A pure-ε query prices, explains
            # and draws its noise on Python floats and integers, without numpy.
            "python3 -c 'import sqlglot, duckdb, click'": [
                py,
                "-c",
                "import sqlglot, duckdb, click",
            ],
            "infodp query --json": [
                *cli,
                "query",
                "--db",
                str(db),
                "--analyst",
                "alice",
                "--epsilon",
                "0.1",
                SQL,
                "--json",
            ],
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for argv in cases.values():
            _time(argv, env, where)  # warm-up: OS file cache, bytecode
        for _ in range(args.reps):
            for name, argv in cases.items():
                times[name].append(_time(argv, env, where))
    med = {k: statistics.median(v) for k, v in times.items()}
    rows = [[name, f"{med[name] * 1000:.0f}", f"{min(times[name]) * 1000:.0f}"] for name in cases]
    help_ratio = med["infodp --help"] / med["python3 -c pass"]
    query_ratio = med["infodp query --json"] / med["python3 + duckdb aggregate"]
    floor_ratio = (
        med["python3 -c 'import sqlglot, duckdb, click'"] / med["python3 + duckdb aggregate"]
    )
    body = (
        f"Whole processes, {args.reps} repetitions each (interleaved), after one warm-up; "
        f"demo census with {args.rows:,} rows; query `{SQL}` at ε = 0.1.\n\n"
        + markdown_table(["process", "median ms", "min ms"], rows)
        + f"\n\n`infodp --help` / bare Python: **{help_ratio:.1f}×** (target ≤ 8×). "
        f"`infodp query` / Python+DuckDB: **{query_ratio:.1f}×** (target ≤ 2×); its "
        f"imports alone: **{floor_ratio:.1f}×**.\n"
    )
    command = f"python3 -m benchmarks.cli_startup --rows {args.rows} --reps {args.reps}"
    write_section("cli_startup", command, body)
    print(body)


if __name__ == "__main__":
    main()
