"""Benchmark: where one service-path query spends its time, step by step.

``python3 -m benchmarks.curator_timeline [--rows 1000000] [--reps 60]``

The query of ``benchmarks/curator.py`` (100 groups, COUNT and SUM, ε = 1) on a kept-open
reader (``Curator(db, keep_open=True).query``), with DuckDB alone on the same file timed in
turn with it (one of each per repetition). Every step of the query path is wrapped with a
``time.perf_counter`` stamp: the table gives, for each stamp, the median time since the query
started, so the work before the aggregate starts (pricing, the reservation's transaction),
the aggregate on its helper thread (next to the reservation's fsync on the calling thread),
and the work after it (noise, release, answer, ledger completion) can be read off
directly. The stamps cost about a microsecond each.

The section "curator_timeline" of BENCHMARKS.md is rewritten with the results.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb

from benchmarks._report import markdown_table, write_section
from benchmarks.curator import PLAIN, SCHEMA, SQL, make_parquet

#: (object, attribute, label): the steps stamped, in the order they run.
_STEPS = [
    ("infodp.curator.engine:Curator", "_reserve", "price, check and reserve (calling thread)"),
    ("infodp.curator.ledger:Ledger", "reserve", "the reservation's transaction"),
    ("infodp.curator.backends.duckdb:DuckDBBackend", "aggregate", "DuckDB aggregate (helper)"),
    ("infodp.curator.ledger:Ledger", "sync", "the reservation's fsync (calling thread)"),
    ("infodp.curator.release.runner:Runner", "draw_noise", "noise (calling thread)"),
    ("infodp.curator.release.runner:Runner", "release", "release: values and intervals"),
    ("infodp.curator.answer.settlement:Settlement", "result", "the answer object"),
    ("infodp.curator.ledger:Ledger", "complete_later", "completion handed to the ledger"),
]


def _stamp(stamps: dict[str, float], target: str, name: str, label: str) -> None:
    import importlib

    module, cls_name = target.split(":")
    cls = getattr(importlib.import_module(module), cls_name)
    fn = getattr(cls, name)

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        stamps[label + " starts"] = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            stamps[label + " ends"] = time.perf_counter()

    setattr(cls, name, wrapped)


def timeline(rows: int, reps: int, workdir: Path) -> tuple[float, float, dict[str, float]]:
    """(DuckDB alone, the service query, {stamp: median ms since the query started})."""
    from infodp.curator.engine import Curator

    parquet = workdir / "t.parquet"
    make_parquet(parquet, rows)
    db = workdir / "store.duckdb"
    setup = Curator(db)
    setup.register_dataset("t", str(parquet), SCHEMA)
    setup.add_analyst("bench", "t", epsilon=10**9)
    setup.close()
    stamps: dict[str, float] = {}
    for target, name, label in _STEPS:
        _stamp(stamps, target, name, label)
    # DuckDB alone reads a copy: the curator plans without column statistics, a database-wide
    # DuckDB setting that a second connection to the same file in this process must share.
    plain_db = workdir / "plain.duckdb"
    shutil.copyfile(db, plain_db)
    con = duckdb.connect(str(plain_db), read_only=True)
    service = Curator(db, keep_open=True)
    for _ in range(5):  # warm-up: the query is priced, checked and prepared
        con.execute(PLAIN).fetchall()
        service.query("bench", SQL, epsilon=1)
    plain: list[float] = []
    total: list[float] = []
    since: dict[str, list[float]] = defaultdict(list)
    for _ in range(reps):
        start = time.perf_counter()
        con.execute(PLAIN).fetchall()
        plain.append(time.perf_counter() - start)
        stamps.clear()
        start = time.perf_counter()
        service.query("bench", SQL, epsilon=1)
        total.append(time.perf_counter() - start)
        for label, at in stamps.items():
            since[label].append(at - start)
    service.close()
    con.close()
    medians = {label: statistics.median(v) * 1000 for label, v in since.items()}
    return statistics.median(plain) * 1000, statistics.median(total) * 1000, medians


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=60)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        plain, total, medians = timeline(args.rows, args.reps, Path(tmp))
    table = [
        [label, f"{at:.3f}"] for label, at in sorted(medians.items(), key=lambda item: item[1])
    ]
    table.append(["the answer is back", f"{total:.3f}"])
    for label, at in table:
        print(f"{at:>9} ms  {label}")
    print(f"DuckDB alone {plain:.3f} ms, the service query {total:.3f} ms ({total / plain:.2f}x)")
    body = (
        f"One `SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g` over {args.rows:,} rows (100 "
        "groups, ε = 1) on a kept-open reader, step by step: for each step's start and end, "
        f"the median over {args.reps} queries of the time since the query started (ms). "
        "DuckDB runs the aggregate on a helper thread while the calling thread fsyncs the "
        "reservation; the noise is drawn when both are done, and nothing is released before. "
        f"Medians of the whole query: DuckDB alone {plain:.2f} ms (timed in turn with it), "
        f"the service query {total:.2f} ms ({total / plain:.2f}x).\n\n"
        + markdown_table(["step", "ms since the query started"], table)
        + "\n\nThe machine is shared with other jobs, so single numbers vary by tens of percent."
    )
    command = f"python3 -m benchmarks.curator_timeline --rows {args.rows} --reps {args.reps}"
    write_section("curator_timeline", command, body)


if __name__ == "__main__":
    main()
