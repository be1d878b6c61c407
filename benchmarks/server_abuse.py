"""Benchmark: one abusive analyst must not slow the others down (the curator's HTTP service).

``python3 -m benchmarks.server_abuse [--rows 1000000] [--groups 1900] [--heavy 41]
[--victim 200] [--workers 2,0]``

A synthetic table of ``--rows`` rows (DuckDB's generator, fixed seed) with an int column
``g`` declaring ``--groups`` keys, a float ``x`` in [0, 1000] and a 4-category column ``c``.
A real ``infodp serve`` runs on 127.0.0.1, once per ``--workers`` setting (by default one
worker process per core, then none), with its default limits (1 heavy request in flight
per key, the others waiting in the event loop; 1 DuckDB thread per query; 30 s deadline).
Phase 1 ("idle"): the victim analyst sends ``--victim`` sequential DP
``SELECT c, COUNT(*) FROM t GROUP BY c`` queries alone. Phase 2 ("abused"): the abuser
fires ``--heavy`` concurrent
``SELECT g, MEDIAN(x) FROM t GROUP BY g`` queries (``--groups`` cells × 1024 histogram bins
each, ε = 1e-4, the heaviest query the declared-cells caps allow) and, while they run, the
victim sends the same sequential queries. Reported: the victim's p50/p99 latency in both
phases and their ratio per setting (the goal: p99 within 3× of idle), and what the abuser got
back.
The section "server abuse" of BENCHMARKS.md is rewritten with the results.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb

from benchmarks._report import markdown_table, write_section

VICTIM_SQL = "SELECT c, COUNT(*) FROM t GROUP BY c"
HEAVY_SQL = "SELECT g, MEDIAN(x) FROM t GROUP BY g"


def schema(groups: int) -> dict[str, object]:
    """The declared schema: g an int with ``groups`` keys, x a bounded float, c 4 categories."""
    return {
        "table": "t",
        "privacy_unit": "row",
        "columns": {
            "g": {"type": "int", "bounds": [0, groups - 1]},
            "x": {"type": "float", "bounds": [0, 1000]},
            "c": {"type": "category", "categories": ["a", "b", "c", "d"]},
        },
    }


def make_parquet(path: Path, rows: int, groups: int) -> None:
    """A reproducible synthetic table written by DuckDB (fixed seed)."""
    con = duckdb.connect()
    con.execute("SELECT setseed(0.42)")
    con.execute(
        f"COPY (SELECT CAST(floor(random() * {groups}) AS BIGINT) AS g, random() * 1000 AS x, "
        "chr(97 + CAST(floor(random() * 4) AS INTEGER)) AS c "
        f"FROM range({rows})) TO '{path}' (FORMAT parquet)"
    )
    con.close()


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100])."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


def victim(url: str, key: str, count: int, stop: threading.Event | None) -> list[float]:
    """Sequential victim queries; latencies in seconds (stops early when ``stop`` is set)."""
    from infodp.client import Client

    out: list[float] = []
    with Client(url, key, timeout=300) as client:
        client.budgets()
        for _ in range(count):
            if stop is not None and stop.is_set():
                break
            t0 = time.perf_counter()
            client.query(VICTIM_SQL, epsilon="0.001")
            out.append(time.perf_counter() - t0)
    return out


def abuse(url: str, key: str, heavy: int, outcomes: Counter[str], done: threading.Event) -> float:
    """``heavy`` concurrent heavy queries from one key; returns the wall time until all end."""
    from infodp.client import ApiError, Client

    lock = threading.Lock()

    def one() -> None:
        try:
            with Client(url, key, timeout=600) as client:
                client.query(HEAVY_SQL, epsilon="0.0001")
                result = "200 answered"
        except ApiError as err:
            result = f"{err.status} {getattr(err, 'code', '')}".strip()
        except Exception as err:  # counted and reported
            result = type(err).__name__
        with lock:
            outcomes[result] += 1

    threads = [threading.Thread(target=one) for _ in range(heavy)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=3600)
    done.set()
    return time.perf_counter() - t0


def run(db: Path, work: Path, keys: dict[str, str], workers: int, args: Any) -> dict[str, Any]:
    """Both phases against one ``infodp serve --workers WORKERS``."""
    # The test suite's server harness (tests/_server_harness.py; not shipped in the wheel).
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from _server_harness import ServerProcess

    with ServerProcess(db, log_path=work / "server.log", workers=workers) as server:
        victim(server.url, keys["victim"], 5, None)  # warm-up
        idle = victim(server.url, keys["victim"], args.victim, None)
        outcomes: Counter[str] = Counter()
        done = threading.Event()
        wall = [0.0]

        def run_abuse() -> None:
            wall[0] = abuse(server.url, keys["abuser"], args.heavy, outcomes, done)

        abuser = threading.Thread(target=run_abuse)
        abuser.start()
        time.sleep(0.5)  # let the heavy queries arrive first
        abused = victim(server.url, keys["victim"], args.victim, done)
        abuser.join(timeout=3600)
    return {"idle": idle, "abused": abused, "outcomes": outcomes, "wall": wall[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=1900)
    parser.add_argument("--heavy", type=int, default=41, help="Concurrent heavy queries.")
    parser.add_argument("--victim", type=int, default=200, help="Victim queries per phase.")
    parser.add_argument(
        "--workers",
        default=None,
        help="Comma-separated worker-process counts to serve with, each its own run "
        "(default: one per core, then 0 = everything in the server process).",
    )
    parser.add_argument("--no-write", action="store_true", help="Do not touch BENCHMARKS.md.")
    args = parser.parse_args()

    from infodp.curator.engine import Curator
    from infodp.server.pool import default_workers

    configs = (
        [default_workers(), 0]
        if args.workers is None
        else [int(w) for w in str(args.workers).split(",")]
    )
    results: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        parquet = work / "t.parquet"
        make_parquet(parquet, args.rows, args.groups)
        db = work / "store.duckdb"
        setup = Curator(db)
        setup.register_dataset("t", str(parquet), schema(args.groups))
        keys = {
            "victim": setup.add_analyst("victim", "t", epsilon=10**9),
            "abuser": setup.add_analyst("abuser", "t", epsilon=10**9),
        }
        setup.close()
        for workers in configs:
            results[workers] = run(db, work, keys, workers, args)

    def ms(x: float) -> str:
        return f"{x * 1000:.1f}"

    rows = []
    verdicts = []
    for workers, r in results.items():
        idle, abused = r["idle"], r["abused"]
        ratio = percentile(abused, 99) / percentile(idle, 99)
        got = ", ".join(f"{n} × {k}" for k, n in sorted(r["outcomes"].items()))
        rows.append(
            [
                f"`--workers {workers}`",
                ms(percentile(idle, 50)),
                ms(percentile(idle, 99)),
                f"{len(abused)}",
                ms(percentile(abused, 50)),
                ms(percentile(abused, 99)),
                f"**{ratio:.2f}×**",
                f"{r['wall']:.1f} s: {got}",
            ]
        )
        verdicts.append(f"`--workers {workers}`: {ratio:.2f}×")
    table = markdown_table(
        [
            "server",
            "idle p50 ms",
            "idle p99 ms",
            "abused queries",
            "abused p50 ms",
            "abused p99 ms",
            "abused p99 / idle p99",
            "abuser's queries",
        ],
        rows,
    )
    body = (
        f"One store of {args.rows:,} synthetic rows; a real `infodp serve` on loopback with its "
        "default limits (at most 1 heavy request — a query, estimate, synopsis release or "
        "synopsis query — in flight per key, the rest waiting in the event loop without a "
        "worker thread; 1 DuckDB thread per query; a 30 s deadline interrupting DuckDB), once "
        "per `--workers` setting: N worker processes run the noise, the aggregate and the "
        "rendering of every answer, each with its own read-only store connection, while the "
        "server process keeps authentication, limits and the ledger (0: everything in the "
        f"server process). Idle: the victim sends {args.victim} sequential `{VICTIM_SQL}` "
        f"(ε = 0.001) alone. Abused: the abuser sends {args.heavy} concurrent `{HEAVY_SQL}` "
        f"({args.groups} declared cells × 1024 histogram bins, ε = 1e-4) and meanwhile the "
        "victim sends the same sequential queries.\n\n"
        f"{table}\n\n"
        f"Victim p99 under abuse / idle p99 ({'; '.join(verdicts)}; goal: within 3×). The knob "
        "is `--workers` (default: one per core): with the abuser's work in a process of its "
        "own, the victim no longer waits for the server's interpreter lock at every hand-over; "
        "the per-key slot (`--max-concurrent 1`) keeps the abuser to one worker, so a victim "
        "always finds another free, and DuckDB runs one thread per query. On a machine shared "
        "with other jobs single numbers vary a lot."
    )
    print(body)
    if not args.no_write:
        command = (
            "python3 -m benchmarks.server_abuse "
            f"--rows {args.rows} --groups {args.groups} --heavy {args.heavy} "
            f"--victim {args.victim}"
        )
        if args.workers is not None:
            command += f" --workers {args.workers}"
        write_section("server abuse", command, body)


if __name__ == "__main__":
    main()
