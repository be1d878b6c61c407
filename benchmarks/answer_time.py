"""Benchmark: what bounded work and fixed answer times cost, on the service and over HTTP.

``PYTHONPATH=$PWD/src python3 -m benchmarks.answer_time [--rows 1000000] [--people 200000]
[--visits 2000000] [--reps 15] [--parts service,http] [--json PATH]``

Two queries, each on its own store: the single-table DP ``GROUP BY`` of
``benchmarks/curator.py`` (``--rows`` rows, 100 categories) and the three-table join of
``benchmarks/joins.py`` (``--people`` × ``--visits``, 50 public regions; same generator).

* ``service``: plain DuckDB (the limit) and infodp's service path (a kept-open
  :class:`~infodp.curator.engine.Curator` in this process), alternating: the work bound's cost
  (the bound check and filters moved before the joins) lands here. With ``--json`` the figures
  are written for ``benchmarks.before_after``, which runs this part against an older tree.
* ``http``: a real ``infodp serve`` (``--workers 2``) on loopback, one client, for each
  query: unpadded (``--answer-time 0``), with the default answer time (1 s per table read)
  and with a budget sized for this machine (``--tuned`` s per table). The padding's cost is
  the padded median minus the unpadded one; an answer is never released before its budget.

The section "answer time" of BENCHMARKS.md is rewritten with the results (not with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from benchmarks import curator as single
from benchmarks import joins
from benchmarks._report import markdown_table, write_section
from benchmarks.curator import interleaved


def _stores(work: Path, rows: int, people: int, visits: int) -> dict[str, tuple[Path, str, str]]:
    """{query name: (store, dataset SQL, plain SQL)} with an analyst 'bench' on each."""
    from infodp.curator.engine import Curator

    parquet = work / "t.parquet"
    single.make_parquet(parquet, rows)
    cur = Curator(work / "single.duckdb")
    cur.register_dataset("t", str(parquet), single.SCHEMA)
    cur.add_analyst("bench", "t", epsilon=10**9)
    cur.close()
    paths = joins.generate(work / "population", people, visits)
    cur = Curator(work / "join.duckdb", query_timeout=3600.0)
    cur.register_dataset("clinic", {n: str(p) for n, p in paths.items()}, joins.SCHEMA)
    cur.add_analyst("bench", "clinic", epsilon=10**9)
    cur.close()
    plain = work / "join-plain.duckdb"
    joins._views(duckdb.connect(str(plain)), paths, "TABLE").close()
    return {
        f"single table, {rows:,} rows": (work / "single.duckdb", single.SQL, single.PLAIN),
        f"join, {people:,} × {visits:,}": (work / "join.duckdb", joins.SQL, joins.SQL),
    }


def service(stores: dict[str, tuple[Path, str, str]], work: Path, reps: int) -> dict[str, float]:
    from infodp.curator.engine import Curator

    figures: dict[str, float] = {}
    for name, (db, sql, plain_sql) in stores.items():
        # Plain DuckDB reads a copy with DuckDB's defaults (the curator plans without column
        # statistics, a database-wide setting), or the tables loaded from the same files.
        plain_db = work / "join-plain.duckdb" if name.startswith("join") else work / "plain.duckdb"
        if not name.startswith("join"):
            shutil.copyfile(db, plain_db)
        con = duckdb.connect(str(plain_db), read_only=True)
        cur = Curator(db, keep_open=True, query_timeout=3600.0)
        medians = interleaved(
            {
                "plain DuckDB, no noise (the limit)": lambda c=con, q=plain_sql: c.execute(
                    q
                ).fetchall(),
                "infodp service path (kept open, in process)": lambda c=cur, q=sql: c.query(
                    "bench", q, epsilon=1
                ),
            },
            reps,
        )
        cur.close()
        con.close()
        for what, seconds in medians.items():
            figures[f"{name}: {what}, ms"] = seconds * 1000
        figures[f"{name}: service path × plain DuckDB"] = (
            medians["infodp service path (kept open, in process)"]
            / medians["plain DuckDB, no noise (the limit)"]
        )
    return figures


def http(stores: dict[str, tuple[Path, str, str]], reps: int, tuned: float) -> list[list[str]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from _server_harness import ServerProcess
    from infodp.client import Client
    from infodp.curator.engine import Curator
    from infodp.curator.relations import tables_read

    rows: list[list[str]] = []
    for name, (db, sql, _) in stores.items():
        cur = Curator(db)
        key = cur.ledger.issue_key("bench")
        cur.close()
        tables = len(tables_read(sql))
        medians: dict[float, float] = {}
        early = 0
        for per_table in (0.0, 1.0, tuned):
            server = ServerProcess(db, workers=2, answer_time=per_table, query_timeout=3600)
            server.start()
            client = Client(server.url, key)
            try:
                client.query(sql, epsilon=1)  # warm-up: first-query imports in a worker
                seen = _overruns(server.log_path)
                times = []
                for _ in range(reps if per_table < 1 else max(3, reps // 3)):
                    start = time.perf_counter()
                    client.query(sql, epsilon=1)
                    times.append(time.perf_counter() - start)
                    early += per_table > 0 and times[-1] < per_table * tables
                medians[per_table] = statistics.median(times)
                overran = _overruns(server.log_path) - seen
            finally:
                client.close()
                server.stop()
            label = (
                "unpadded (--answer-time 0)"
                if per_table == 0
                else (f"--answer-time {per_table:g} (budget {per_table * tables:g} s)")
            )
            cost = "" if per_table == 0 else f"{(medians[per_table] - medians[0.0]) * 1000:.0f}"
            rows.append([name, label, f"{medians[per_table] * 1000:.1f}", cost, str(overran)])
            print(" | ".join(rows[-1]), flush=True)
        assert early == 0, "an answer was released before its budget"
    return rows


def _overruns(log: Path) -> int:
    """Default outcomes the server has logged so far (the log is appended to)."""
    return log.read_text(errors="replace").count("overran its answer time")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--people", type=int, default=200_000)
    parser.add_argument("--visits", type=int, default=2_000_000)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--tuned", type=float, default=0.1, help="Seconds per table, tuned.")
    parser.add_argument("--parts", default="service,http")
    parser.add_argument("--json", metavar="PATH", help="Write the service figures to PATH.")
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        stores = _stores(work, args.rows, args.people, args.visits)
        figures = service(stores, work, args.reps) if "service" in parts else {}
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=1))
            return
        table = http(stores, args.reps, args.tuned) if "http" in parts else []
    body = (
        "Two DP queries, each on its own store: the single-table `GROUP BY` of "
        "`benchmarks/curator.py` and the three-table join of `benchmarks/joins.py` (same "
        "generators; sizes in the rows below). "
    )
    if figures:
        body += (
            "Service path: a kept-open `Curator` in process against plain DuckDB, "
            f"alternating, median of {args.reps} runs after a warm-up.\n\n"
            + markdown_table(["figure", "value"], [[k, f"{v:.2f}"] for k, v in figures.items()])
            + "\n\n"
        )
    if table:
        body += (
            "Over HTTP: a real `infodp serve --workers 2` on loopback, one client, the median "
            "latency of the same queries unpadded, with the default answer time (1 s per table "
            f"a query reads) and with {args.tuned:g} s per table; *cost* is the padded median "
            "minus the unpadded one; *overran* counts the answers released as default "
            "outcomes after the warm-up (the budget was too short). No answer was released "
            "before its budget.\n\n"
            + markdown_table(["query", "server", "median ms", "cost ms", "overran"], table)
        )
    command = "PYTHONPATH=$PWD/src python3 -m benchmarks.answer_time " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    write_section("answer time", command.strip(), body)


if __name__ == "__main__":
    main()
