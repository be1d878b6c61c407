"""The curator's speed before and after a change of its sources, in the same run.

Runs ``benchmarks.curator``, ``benchmarks.server_load`` and ``benchmarks.curator_accounting``
(each with ``--json``) against two source trees of infodp — this checkout's ``src`` and an
older one extracted beside it, e.g. ``git archive 99bee50 src | tar -x -C /tmp/infodp-before``
— alternating the trees round by round (before, after, then after, before, ...) so that both
see the same machine. Every benchmark script is this checkout's; only the library differs.
Each figure is reported as the median over rounds for each tree and as the factor by which
the change made it worse (time after / before; throughput before / after): above 1.10 is a
regression of more than 10%.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks._report import markdown_table, write_section

ROOT = Path(__file__).resolve().parent.parent

#: The benchmarks compared, with the arguments each runs with by default.
BENCHMARKS: dict[str, str] = {
    "curator": "--sizes 1000000,10000000 --reps 30 --no-peers",
    "server_load": "--rows 1000000 --queries 400 --seconds 15 --repeat 1",
    "curator_accounting": "--queries 2000",
    "answer_time": "--parts service --rows 1000000 --people 200000 --visits 2000000 --reps 15",
}


def run_once(module: str, args: str, src: Path) -> dict[str, float]:
    """One run of ``benchmarks.<module>`` with ``src`` first on the path; its figures."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "figures.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(ROOT)])}
        command = [sys.executable, "-m", f"benchmarks.{module}", *shlex.split(args)]
        subprocess.run([*command, "--json", str(out)], cwd=ROOT, env=env, check=True)
        figures: dict[str, float] = json.loads(out.read_text())
    return figures


def worse_by(name: str, before: float, after: float) -> float:
    """How many times worse ``after`` is (time: after / before; throughput: before / after).

    >>> worse_by("x: queries/s", 200.0, 100.0), worse_by("x, ms", 2.0, 1.0)
    (2.0, 0.5)
    """
    if before <= 0 or after <= 0:
        return float("nan")
    return before / after if name.endswith("queries/s") else after / before


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before-src", required=True, help="The older tree's src directory.")
    parser.add_argument("--before-label", default="before", help="What the older tree is.")
    parser.add_argument("--rounds", type=int, default=2, help="Runs of each tree.")
    parser.add_argument(
        "--only", default=",".join(BENCHMARKS), help="Comma-separated benchmarks to compare."
    )
    args = parser.parse_args(argv)
    trees = {"before": Path(args.before_src).resolve(), "after": ROOT / "src"}
    rows: list[list[str]] = []
    for module in args.only.split(","):
        runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
        for r in range(args.rounds):
            order = ("before", "after") if r % 2 == 0 else ("after", "before")
            for which in order:
                runs[which].append(run_once(module, BENCHMARKS[module], trees[which]))
        for name in runs["after"][0]:
            b = statistics.median(run[name] for run in runs["before"])
            a = statistics.median(run[name] for run in runs["after"])
            factor = worse_by(name, b, a)
            flag = " (worse by more than 10%)" if factor > 1.10 else ""
            rows.append([module, name, f"{b:.2f}", f"{a:.2f}", f"{factor:.2f}{flag}"])
            print(" | ".join(rows[-1]), flush=True)
    body = (
        f"The curator benchmarks run against two source trees in one run, alternating: "
        f"`{args.before_label}` and this commit's `src`; each benchmark script is this "
        f"commit's, with these arguments: "
        + "; ".join(f"`{m} {BENCHMARKS[m]}`" for m in args.only.split(","))
        + f". Median of {args.rounds} runs per tree. *Worse by* is after / before for "
        "times and before / after for throughput (1.00: unchanged; above 1.10: more than "
        "10% worse). The machine is shared with other jobs, so single numbers vary by tens "
        "of percent.\n\n"
        + markdown_table(["benchmark", "figure", args.before_label, "after", "worse by"], rows)
    )
    command = (
        f"python3 -m benchmarks.before_after --before-src {args.before_src} "
        f"--before-label '{args.before_label}' --rounds {args.rounds} --only {args.only}"
    )
    everything = args.only == ",".join(BENCHMARKS)
    name = "curator before and after" + ("" if everything else f": {args.only}")
    write_section(name, command, body)


if __name__ == "__main__":
    main()
