"""Faults: the server is SIGKILLed during a burst of queries and restarted.

"The ledger is consistent (every released answer is charged; nothing charged twice), and the
service comes back on the same store." docs/architecture.md's contract: a release happens only
after its
cost is durably reserved, so a crash can lose budget (an entry left 'reserved'), never privacy.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from _ledgers import store_ledger
from _server_harness import ServerProcess, build_store, get_json
from infodp.client import Client

# Every test on both ledger storages (SQLite, PostgreSQL: tests/conftest.py).
pytestmark = pytest.mark.usefixtures("ledger_kind")

THREADS = 8
MAX_PER_THREAD = 40
SQL = "SELECT region, COUNT(*) FROM people GROUP BY region"


def _burst(
    url: str, key: str, stop: threading.Event
) -> tuple[list[dict[str, Any]], list[int], list[threading.Thread]]:
    answers: list[dict[str, Any]] = []
    attempts = [0] * THREADS
    lock = threading.Lock()

    def run(i: int) -> None:
        client = Client(url, key, timeout=60)
        try:
            for _ in range(MAX_PER_THREAD):
                if stop.is_set():
                    return
                attempts[i] += 1
                try:
                    r = client.query(SQL, epsilon="0.01")
                except (OSError, http.client.HTTPException):
                    return  # the server died under us (refused, reset or a cut response)
                with lock:
                    answers.append(r)
        finally:
            client.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    return answers, attempts, threads  # filled in by the running threads


@pytest.mark.slow  # real server processes
def test_sigkill_during_a_burst_leaves_a_consistent_ledger(tmp_path: Path) -> None:
    db, keys = build_store(tmp_path, [("alice", "people", 100)], rows=100)
    key = keys["alice"]
    server = ServerProcess(db).start()
    stop = threading.Event()
    try:
        answers, attempts, threads = _burst(server.url, key, stop)
        deadline = time.monotonic() + 120
        while len(answers) < 12 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(answers) >= 12, "the burst did not get going"
        server.kill()  # SIGKILL in the middle of the burst
        stop.set()
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads)
        received = list(answers)
        sent = sum(attempts)
    finally:
        stop.set()
        server.stop()

    led = store_ledger(db)
    # 1. Consistent: the stored spend equals the sum over spending entries, within the budget.
    assert led.check() == []
    entries = {e.id: e for e in led.entries("alice")}
    spending = [e for e in entries.values() if e.status in ("reserved", "released", "failed")]
    budget = led.budget("alice", "people")
    assert budget.spent_epsilon == sum((e.epsilon for e in spending), Fraction(0))
    # 2. Every answer a client received is charged, as a released entry holding that answer.
    ids = [a["entry"] for a in received]
    assert len(ids) == len(set(ids))  # no entry answered twice
    for a in received:
        e = entries[a["entry"]]
        assert e.status == "released" and e.epsilon == Fraction(1, 100)
        assert json.loads(e.result_json or "{}")["rows"] == a["rows"]
    # 3. Nothing charged twice: at most one entry per request sent, none without a request;
    #    only requests in flight at the kill can be left 'reserved' (budget lost, not privacy).
    assert len(received) <= len(spending) <= sent
    assert sum(e.status == "reserved" for e in spending) <= THREADS
    spent_before = budget.spent_epsilon

    # 4. The service comes back on the same store and carries on from the same ledger.
    with ServerProcess(db) as again:
        status, payload, _ = get_json(again.port, "GET", "/v1/budget", key=key)
        assert status == 200
        exact = payload["budgets"][0]["exact"]
        assert Fraction(exact["spent_epsilon"]) == spent_before
        with Client(again.url, key) as client:
            r = client.query(SQL, epsilon="0.01")
        assert r["entry"] > max(entries)
        assert Fraction(r["remaining"]["exact"]["spent_epsilon"]) == spent_before + Fraction(1, 100)
    assert store_ledger(db).check() == []
