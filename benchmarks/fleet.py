"""Benchmark: the ledger on PostgreSQL (a fleet's) beside SQLite (one host's), in one run.

``python3 -m benchmarks.fleet [--rows 200000] [--charges 400] [--queries 200] [--seconds 15]``

A throw-away PostgreSQL cluster (initdb + pg_ctl as an unprivileged user on a loopback port,
``fsync`` and ``synchronous_commit`` on, as in production) is started for the run. Measured:

* charges per second: :meth:`Ledger.reserve` (durable, fsync'd) by 1 and 8 threads of one
  process, on a SQLite file and on PostgreSQL;
* p50/p99 of a DP query through :meth:`Curator.query` in-process (1 thread, store kept
  open), with each ledger;
* queries per second of 1, 2 and 3 ``infodp serve`` processes (``--workers 0``) on one
  PostgreSQL ledger, 16 clients (16 analysts) spread over them — on a 2-core machine
  shared by the servers, the clients and PostgreSQL;
* the time a surviving server takes to settle a dead server's reservations once their lease
  has expired (:mod:`infodp.curator.ledger.leases`).

The section "fleet" of BENCHMARKS.md is rewritten.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import tempfile
import threading
import time
from fractions import Fraction
from pathlib import Path

from benchmarks._report import markdown_table, write_section
from benchmarks.server_load import CLIENTS, SCHEMA, SQL, load, make_parquet, percentile

LEASE = 4.0


def _charges(target: str, threads: int, total: int) -> float:
    from infodp.curator.ledger import Ledger

    led = Ledger(target)
    led.register_dataset("t", "{}", rows=1, source="-")
    led.add_analyst("a", "t", Fraction(10**9), Fraction(0))
    led.reserve("a", "t", "warm", Fraction(1), Fraction(0), 0.0)
    per = total // threads
    barrier = threading.Barrier(threads + 1)

    def run() -> None:
        barrier.wait()
        for i in range(per):
            led.reserve("a", "t", f"q{i}", Fraction(1), Fraction(0), 0.0)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for w in workers:
        w.start()
    barrier.wait()
    t0 = time.perf_counter()
    for w in workers:
        w.join()
    rate = per * threads / (time.perf_counter() - t0)
    assert led.verify() == []
    led.close()
    return rate


def _query_latency(db: Path, ledger: str | None, parquet: Path, n: int) -> tuple[float, float]:
    from infodp.curator.engine import Curator

    cur = Curator(db, ledger=ledger)
    cur.register_dataset("t", str(parquet), SCHEMA)
    cur.add_analyst("bench", "t", epsilon=10**9)
    cur.query("bench", SQL, epsilon=1)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        cur.query("bench", SQL, epsilon=1)
        times.append(time.perf_counter() - t0)
    cur.close()
    return statistics.median(times), percentile(times, 99)


def _fleet_throughput(
    work: Path, url: str, parquet: Path, servers: int, queries: int, seconds: float
) -> float:
    import infodp.curator.store.database as store
    from _server_harness import ServerProcess
    from infodp.curator.engine import Curator

    db = work / f"fleet{servers}.duckdb"
    real = store.default_ledger
    store.default_ledger = lambda _db: url  # type: ignore[assignment]
    try:
        setup = Curator(db)
    finally:
        store.default_ledger = real  # type: ignore[assignment]
    setup.register_dataset("t", str(parquet), SCHEMA)
    keys = []
    for i in range(CLIENTS):
        setup.add_analyst(f"b{i}", "t", epsilon=10**9)
        keys.append(setup.ledger.issue_key(f"b{i}"))
    setup.close()
    procs = [
        ServerProcess(db, workers=0, log_path=work / f"fleet{servers}-{i}.log")
        for i in range(servers)
    ]
    for p in procs:
        p.start()
    try:
        results: list[dict[str, float]] = []

        def one(i: int, warm: bool) -> None:
            mine = keys[i::servers]
            r = load(procs[i].url, mine, len(mine), 2 * len(mine) if warm else queries, seconds)
            if not warm:
                results.append(r)

        for warm in (True, False):
            ts = [threading.Thread(target=one, args=(i, warm)) for i in range(servers)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        return sum(r["qps"] for r in results)
    finally:
        for p in procs:
            p.stop()


def _settle_time(work: Path, url: str) -> tuple[float, int]:
    """(seconds from the lease's end to the last settlement, entries) for reservations a
    process left open (as a killed server does), settled by one running server."""
    import infodp.curator.store.database as store
    from _server_harness import ServerProcess
    from infodp.curator.engine import Curator
    from infodp.curator.ledger import Ledger

    db = work / "settle.duckdb"
    real = store.default_ledger
    store.default_ledger = lambda _db: url  # type: ignore[assignment]
    try:
        setup = Curator(db)
    finally:
        store.default_ledger = real  # type: ignore[assignment]
    setup.register_dataset("t", str(work / "t.parquet"), SCHEMA)
    setup.add_analyst("a", "t", epsilon=10**9)
    setup.close()
    survivor = ServerProcess(db, workers=0, log_path=work / "settle.log")
    survivor.args += ["--reservation-lease", str(LEASE)]
    survivor.start()
    try:
        dead = Ledger(url, create=False)
        ids = [dead.reserve("a", "t", SQL, Fraction(1), Fraction(0), 0.0) for _ in range(50)]
        dead.close()  # never finished: the server that reserved them is gone
        watch = Ledger(url, create=False)
        deadline = time.monotonic() + 10 * LEASE + 60
        while any(watch.entry(i).status == "reserved" for i in ids):
            if time.monotonic() > deadline:
                raise RuntimeError("the reservations were never settled")
            time.sleep(0.05)
        entries = [watch.entry(i) for i in ids]
        watch.close()
    finally:
        survivor.stop()
    late = max(
        dt.datetime.fromisoformat(e.finished or "").timestamp()
        - dt.datetime.fromisoformat(e.created).timestamp()
        - LEASE
        for e in entries
    )
    return late, len(entries)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--charges", type=int, default=400, help="Reservations per run.")
    parser.add_argument("--queries", type=int, default=200, help="Queries per latency run.")
    parser.add_argument("--seconds", type=float, default=15.0, help="Wall time per HTTP run.")
    parser.add_argument("--no-write", action="store_true", help="Do not touch BENCHMARKS.md.")
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from _postgres import cluster

    with tempfile.TemporaryDirectory() as tmp, cluster(fsync=True) as pg:
        work = Path(tmp)
        os.chmod(work, 0o755)
        parquet = work / "t.parquet"
        make_parquet(parquet, args.rows)
        charges = []
        for threads in (1, 8):
            sqlite = _charges(str(work / f"c{threads}.ledger"), threads, args.charges)
            postgres = _charges(pg.new_schema(), threads, args.charges)
            charges.append([f"{threads} thread(s)", f"{sqlite:,.0f}", f"{postgres:,.0f}"])
        lat_sqlite = _query_latency(work / "q1.duckdb", None, parquet, args.queries)
        lat_pg = _query_latency(work / "q2.duckdb", pg.new_schema(), parquet, args.queries)
        fleet = []
        for servers in (1, 2, 3):
            qps = _fleet_throughput(
                work, pg.new_schema(), parquet, servers, 10 * args.queries, args.seconds
            )
            fleet.append([str(servers), f"{qps:.1f}"])
        late, settled = _settle_time(work, pg.new_schema())

    def ms(x: float) -> str:
        return f"{x * 1000:.1f}"

    body = (
        "Ledger charges (durable `Ledger.reserve`, one process; SQLite in WAL mode with "
        "`synchronous=FULL`, PostgreSQL 15 on loopback with `fsync` and `synchronous_commit` "
        f"on), {args.charges} per run:\n\n"
        + markdown_table(["writers", "SQLite charges/s", "PostgreSQL charges/s"], charges)
        + f"\n\nA DP `{SQL}` (100 categories, {args.rows:,} rows) through `Curator.query` "
        f"in-process, 1 thread, store kept open, {args.queries} queries:\n\n"
        + markdown_table(
            ["ledger", "p50 ms", "p99 ms"],
            [
                ["SQLite", ms(lat_sqlite[0]), ms(lat_sqlite[1])],
                ["PostgreSQL", ms(lat_pg[0]), ms(lat_pg[1])],
            ],
        )
        + f"\n\n`infodp serve --workers 0` processes on one PostgreSQL ledger, {CLIENTS} "
        f"clients ({CLIENTS} analysts, one keep-alive connection each) spread evenly over "
        f"them, at most {10 * args.queries} queries or {args.seconds:g} s per server:\n\n"
        + markdown_table(["servers", "queries/s (all servers)"], fleet)
        + "\n\nThis machine has 2 cores, shared by the servers, PostgreSQL and the clients: "
        "a second or third server adds no CPU, only processes competing for the same two "
        "cores, so throughput does not grow with servers here (each query is CPU-bound: "
        "parse, plan, aggregate, noise, JSON). A fleet adds throughput when its servers run "
        "on hosts of their own; the ledger's share is one short transaction per group of "
        "charges under the ledger's lock (see the charges/s above).\n\n"
        f"Settling a dead server's reservations: {settled} reservations left open by a "
        f"process that stopped, lease {LEASE:g} s, one surviving server: the last was settled "
        f"{late:.2f} s after its lease expired (the settler looks every lease/4 s). The "
        "machine is shared with other jobs, so single numbers vary by tens of percent."
    )
    print(body)
    if not args.no_write:
        write_section("fleet", " ".join(["python3 -m benchmarks.fleet", *sys.argv[1:]]), body)


if __name__ == "__main__":
    main()
