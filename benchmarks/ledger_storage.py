"""Benchmark: the ledger's storage layer alone (no privacy accounting), beside plain SQLite.

``python3 -m benchmarks.ledger_storage [--writes 400] [--reps 5]``

Durable writes (each fsync'd before its caller goes on) of one row into a SQLite file in WAL
mode, by 1 and by 8 threads of one process:

* ``sqlite3`` (the peer): each thread its own connection, ``synchronous=FULL``, one
  ``BEGIN IMMEDIATE … COMMIT`` per write, waiting in SQLite's busy handler;
* ``Database.submit`` (:mod:`infodp.curator.ledger.storage`): the same writes through the
  ledger's group commit (writes that arrive while one commits share the next transaction
  and its fsync); the leader/follower queue is the only difference.

Median and min of ``--reps`` runs per line, the lines interleaved in each repetition so
machine load hits all alike. The section "ledger_storage" of BENCHMARKS.md is rewritten.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._report import markdown_table, write_section
from infodp.curator.ledger.storage import Database

_TABLE = "CREATE TABLE IF NOT EXISTS t (v INTEGER NOT NULL)"


def _plain(path: Path) -> Callable[[int], None]:
    local = threading.local()

    def write(v: int) -> None:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            local.conn = conn
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (v) VALUES (?)", (v,))
        conn.execute("COMMIT")

    return write


def _grouped(path: Path) -> Callable[[int], None]:
    db = Database(path)
    db.pin()

    def write(v: int) -> None:
        db.submit(
            lambda conn: conn.execute("INSERT INTO t (v) VALUES (?)", (v,)).lastrowid, guarded=True
        )

    return write


def _run(make: Callable[[Path], Callable[[int], None]], threads: int, writes: int) -> float:
    """Durable writes per second."""
    path = Path(tempfile.mkdtemp()) / "x.db"
    setup = Database(path, create=True)
    with setup.transaction() as conn:
        conn.execute(_TABLE)
    setup.close()
    write = make(path)
    per = writes // threads

    def work(k: int) -> None:
        for i in range(per):
            write(k * per + i)

    pool = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    start = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return per * threads / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    """Run the comparison and write its section."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=400)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    lines = [(f"sqlite3, {n} thread{'s' * (n > 1)}", _plain, n) for n in (1, 8)] + [
        (f"Database.submit, {n} thread{'s' * (n > 1)}", _grouped, n) for n in (1, 8)
    ]
    rates: dict[str, list[float]] = {name: [] for name, _, _ in lines}
    for _ in range(args.reps):
        for name, make, n in lines:
            rates[name].append(_run(make, n, args.writes))
    rows = [[name, f"{statistics.median(r):,.0f}", f"{max(r):,.0f}"] for name, r in rates.items()]
    table = markdown_table(["writer", "durable writes/s (median)", "best"], rows)
    body = (
        f"{args.writes} durable one-row writes per run, {args.reps} interleaved runs; no "
        "privacy accounting is involved (the storage layer is measured on its own).\n\n" + table
    )
    print(body)
    write_section(
        "ledger_storage",
        f"python3 -m benchmarks.ledger_storage --writes {args.writes} --reps {args.reps}",
        body,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
