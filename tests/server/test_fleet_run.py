"""A fleet under fire: 3 servers on one PostgreSQL ledger, 50 clients over 4 analysts for
60 s, servers SIGKILLed and restarted at random, and PostgreSQL itself restarted once.

The oracle is what the clients received, compared with the ledger read afterwards:

* every answer received is charged once: a 'released' entry holding that answer, or (its
  server was killed after sending it and before writing it down) an entry settled after
  the lease; no entry answers two requests (no double charge);
* per analyst, the ledger's spend equals the charges of the answers received, plus the
  reservations settled after their server died (lease), plus the entries whose answer was
  written but never reached its client because its server was killed or the database
  restarted under it (at most the requests in flight then, each charged once);
* nobody spends more than their budget; ``infodp ledger verify`` finds nothing;
* no 5xx answer, except during the restart window: from the database's stop until 15 s
  after it accepts connections again (a request that needs the ledger then is answered
  503 with Retry-After, and is charged at most once).

Loopback only; every loop is bounded by the run's deadline.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import threading
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from _postgres import cluster
from _server_harness import ServerProcess, build_store, get_json
from infodp.cli import main
from infodp.curator.ledger import Ledger
from infodp.curator.ledger.leases import SETTLED

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

SERVERS = 3
CLIENTS = 50
ANALYSTS = ["a0", "a1", "a2", "a3"]
BUDGET = 10  # ε each: some run out during the run (then 409s, never an overspend)
COST = Fraction(1, 100)
RUN = float(os.environ.get("INFODP_FLEET_SECONDS", "60"))
LEASE = 10.0
GRACE = 15.0
SQL = "SELECT region, COUNT(*) FROM people GROUP BY region"


class Fleet:
    """The servers, restarted on new ports; clients pick any live one."""

    def __init__(self, db: str, log_dir: Path) -> None:
        self.lock = threading.Lock()
        self.servers: list[ServerProcess] = []
        for i in range(SERVERS):
            s = ServerProcess(db, workers=0, log_path=log_dir / f"server{i}.log")
            s.args += ["--reservation-lease", str(LEASE), "--max-concurrent", "4"]
            self.servers.append(s)
        for s in self.servers:
            s.start()
        self.kills = 0

    def port(self) -> int:
        with self.lock:
            return random.choice(self.servers).port

    def kill_one(self) -> None:
        with self.lock:
            victim = random.choice(self.servers)
            victim.kill()
            self.kills += 1
        victim.start()  # on a new port; clients that try the old one are refused

    def stop(self) -> None:
        for s in self.servers:
            s.stop()


def test_a_fleet_keeps_every_guarantee_through_kills_and_a_database_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import infodp.curator.store.database as store

    with cluster() as pg:
        url = pg.new_schema()
        monkeypatch.setattr(store, "default_ledger", lambda db: url)
        db, keys = build_store(tmp_path, [(a, "people", BUDGET) for a in ANALYSTS], rows=200)
        fleet = Fleet(db, tmp_path)
        received: list[tuple[str, dict[str, Any]]] = []
        errors: list[tuple[float, int]] = []  # (time, status) of every 5xx
        sent = [0] * CLIENTS
        statuses: dict[int, int] = {}
        lock = threading.Lock()
        start = time.monotonic()
        deadline = start + RUN
        window: list[float] = []  # [database stopped, database back]

        def client(i: int) -> None:
            analyst = ANALYSTS[i % len(ANALYSTS)]
            while time.monotonic() < deadline:
                sent[i] += 1
                try:
                    status, payload, _ = get_json(
                        fleet.port(),
                        "POST",
                        "/v1/query",
                        {"sql": SQL, "epsilon": "0.01"},
                        key=keys[analyst],
                        timeout=60.0,
                    )
                except (OSError, http.client.HTTPException):
                    time.sleep(0.05)  # killed under us, or restarting: another server
                    continue
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1
                    if status == 200:
                        received.append((analyst, payload))
                    elif status >= 500:
                        errors.append((time.monotonic(), status))
                if status in (409, 429, 503):
                    time.sleep(0.2)

        def chaos() -> None:
            restarted = False
            while time.monotonic() < deadline - 8:
                time.sleep(random.uniform(4.0, 8.0))
                if not restarted and time.monotonic() > start + RUN / 2:
                    window.append(time.monotonic())
                    pg.restart(pause=1.0)
                    window.append(time.monotonic())
                    restarted = True
                else:
                    fleet.kill_one()

        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        threads.append(threading.Thread(target=chaos))
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=RUN + 120)
        assert not any(t.is_alive() for t in threads)
        print(f"statuses {statuses}, kills {fleet.kills}")
        assert len(window) == 2, "the database was not restarted"
        assert fleet.kills >= 3

        # The reservations of the killed servers are settled by the survivors (lease).
        settle_by = time.monotonic() + LEASE * 3 + 30
        led = Ledger(url, create=False)
        while any(e.status == "reserved" for e in led.entries()):
            assert time.monotonic() < settle_by, "open reservations were never settled"
            time.sleep(1.0)
        fleet.stop()

        entries = {e.id: e for e in led.entries()}
        ids = [p["entry"] for _, p in received]
        assert len(ids) == len(set(ids))  # no entry answered twice
        for analyst, p in received:
            e = entries[p["entry"]]
            assert (e.analyst, e.epsilon) == (analyst, COST)
            if e.status == "released":
                assert json.loads(e.result_json or "{}")["rows"] == p["rows"]
            else:  # its server died after sending it, before writing it down: settled
                assert (e.status, e.error) == ("failed", SETTLED)
        lost_bound = (fleet.kills + 1) * CLIENTS  # in flight when a server or the database died
        answered_ids = set(ids)
        for analyst in ANALYSTS:
            mine = [e for e in entries.values() if e.analyst == analyst]
            answered = [p for a, p in received if a == analyst]
            settled = [
                e
                for e in mine
                if e.status == "failed" and e.error == SETTLED and e.id not in answered_ids
            ]
            other = [
                e
                for e in mine
                if e.status in ("released", "failed")
                and e.id not in answered_ids
                and e.error != SETTLED
            ]
            spent = led.budget(analyst, "people").spent_epsilon
            charged = COST * (len(answered) + len(settled) + len(other))
            stored = sum((e.epsilon for e in mine if e.status != "cancelled"), Fraction(0))
            assert spent == charged == stored
            assert spent <= BUDGET
            assert len(other) <= lost_bound
            assert answered, f"{analyst} received no answer"
        assert led.verify() == [] and led.check() == []
        led.close()
        assert main(["ledger", "verify", "--db", db]) == 0
        stopped, back = window
        outside = [t for t, _ in errors if not stopped <= t <= back + GRACE]
        assert outside == [], f"{len(outside)} 5xx outside the database's restart window"
        print(
            f"fleet: {len(received)} answers, {sum(sent)} requests, {fleet.kills} kills, "
            f"{len(errors)} 5xx in the restart window; statuses {statuses}"
        )
