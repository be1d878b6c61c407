"""Benchmark: whole-process CLI start-up and a CLI query, beside bare Python and Python+DuckDB.

``python3 -m benchmarks.cli_startup [--rows 1000000] [--reps 7] [--before SRC]``

Each line is a fresh process, timed from spawn to exit (median and min of ``--reps`` runs
after one warm-up; all in the same run, interleaved so machine load hits all alike):

* ``python3 -c pass`` — the floor for any Python command;
* ``infodp --help`` — the CLI's start-up (target: within 8× of the floor);
* ``python3 -c "import duckdb; …"`` — a Python process opening the 1M-row demo store and
  running the same grouped aggregate without noise (the peer);
* ``python3 -c "import sqlglot, duckdb, click"`` — the imports every infodp query process
  needs (the floor under the next lines; a pure-ε COUNT does not import numpy, an AVG's
  interval does, on a helper thread: :mod:`infodp.cli._prefetch`);
* ``infodp query … --json (COUNT only)`` — the grouped COUNT alone as a DP query;
* ``infodp query … --json`` — the same aggregate as a DP query, end to end (parse, plan,
  ledger reservation, bounded aggregation, noise, leakage summary, ledger completion;
  target: within 2× of the peer);
* with ``--before SRC`` (an older ``src`` tree, e.g. ``git archive REV src | tar -x -C DIR``
  then ``--before DIR/src``): the same query with that tree's infodp, in the same rounds.

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
COUNT_SQL = "SELECT region, COUNT(*) FROM census GROUP BY region"


def _build_store(directory: Path, rows: int) -> Path:
    from infodp.curator import Curator
    from infodp.curator.demo import CENSUS_SCHEMA, census_frame

    db = directory / "demo.duckdb"
    cur = Curator(db)
    cur.register_dataset("census", census_frame(rows), CENSUS_SCHEMA)
    cur.add_analyst("alice", "census", epsilon=10_000)
    cur.close()
    return db


def _tree_env(env: dict[str, str], src: Path) -> dict[str, str]:
    """``env`` with ``src`` first on the path; its bytecode compiled (as ``pip install`` does)."""
    compileall.compile_dir(str(src / "infodp"), quiet=1)
    out = dict(env)
    out["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    return out


def _time(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--before", type=Path, default=None, help="an older src tree")
    args = parser.parse_args()

    base = dict(os.environ)
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    env = _tree_env(base, ROOT / "src")
    py = sys.executable
    cli = [py, "-c", "import sys; from infodp.cli import main; sys.exit(main())"]
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        db = _build_store(where, args.rows)
        query = [*cli, "query", "--db", str(db), "--analyst", "alice", "--epsilon", "0.1"]
        cases: dict[str, tuple[list[str], dict[str, str]]] = {
            "python3 -c pass": ([py, "-c", "pass"], env),
            "infodp --help": ([*cli, "--help"], env),
            "python3 + duckdb aggregate": (
                [
                    py,
                    "-c",
                    f"import duckdb; c = duckdb.connect({str(db)!r}, read_only=True); "
                    f"print(c.execute({PLAIN!r}).fetchall())",
                ],
                env,
            ),
            # What any infodp query process must import (parse: sqlglot; store: duckdb; the
            # CLI: click): the floor under the figures below. A COUNT prices, explains and
            # draws its noise on Python floats and integers, without numpy; the AVG's
            # interval needs numpy, imported on a helper thread (infodp.cli._prefetch).
            "python3 -c 'import sqlglot, duckdb, click'": (
                [py, "-c", "import sqlglot, duckdb, click"],
                env,
            ),
            "infodp query --json (COUNT only)": ([*query, COUNT_SQL, "--json"], env),
            "infodp query --json": ([*query, SQL, "--json"], env),
        }
        if args.before is not None:
            before = _tree_env(base, args.before.resolve())
            cases["infodp query --json, before"] = ([*query, SQL, "--json"], before)
        times: dict[str, list[float]] = {name: [] for name in cases}
        for argv, case_env in cases.values():
            _time(argv, case_env, where)  # warm-up: OS file cache, bytecode
        for _ in range(args.reps):
            for name, (argv, case_env) in cases.items():
                times[name].append(_time(argv, case_env, where))
    med = {k: statistics.median(v) for k, v in times.items()}
    rows = [[name, f"{med[name] * 1000:.0f}", f"{min(times[name]) * 1000:.0f}"] for name in cases]
    help_ratio = med["infodp --help"] / med["python3 -c pass"]
    query_ratio = med["infodp query --json"] / med["python3 + duckdb aggregate"]
    floor_ratio = (
        med["python3 -c 'import sqlglot, duckdb, click'"] / med["python3 + duckdb aggregate"]
    )
    peer = med["python3 + duckdb aggregate"]
    before_note = ""
    if args.before is not None:
        before_ratio = med["infodp query --json, before"] / peer
        before_note = f" Before (`--before {args.before}`): **{before_ratio:.1f}×**."
    body = (
        f"Whole processes, {args.reps} repetitions each (interleaved), after one warm-up; "
        f"demo census with {args.rows:,} rows; query `{SQL}` at ε = 0.1 (and, for the "
        f"COUNT line, `{COUNT_SQL}`).\n\n"
        + markdown_table(["process", "median ms", "min ms"], rows)
        + f"\n\n`infodp --help` / bare Python: **{help_ratio:.1f}×** (target ≤ 8×). "
        f"`infodp query` / Python+DuckDB: **{query_ratio:.1f}×** (target ≤ 2×; COUNT only: "
        f"**{med['infodp query --json (COUNT only)'] / peer:.1f}×**); its imports alone: "
        f"**{floor_ratio:.1f}×**.{before_note}\n"
    )
    command = f"python3 -m benchmarks.cli_startup --rows {args.rows} --reps {args.reps}"
    if args.before is not None:
        command += f" --before {args.before}"
    write_section("cli_startup", command, body)
    print(body)


if __name__ == "__main__":
    main()
