"""Servers sharing one PostgreSQL ledger share their per-analyst limits, and a balancer can
tell a server that cannot reach the ledger.

Two limiter (or slot) objects on one database stand for two servers. The oracles: the token
bucket's count (``burst`` requests, then none at a rate that refills nothing during the
test), a held slot refusing the second holder, a dead server's slot coming back, and the
health route answering 503 exactly while the database is stopped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _asgi import call
from _postgres import cluster
from _stores import one_table
from infodp.curator.engine import Curator
from infodp.curator.ledger import Ledger
from infodp.server.fleet import FleetLimiter, FleetSlots, Settler
from infodp.server.limits import SlotsBusy

pytestmark = pytest.mark.postgres


def test_the_rate_limit_holds_across_servers(pg_cluster: Any) -> None:
    url = pg_cluster.new_schema()
    one, two = FleetLimiter(url, rate=1e-6, burst=5), FleetLimiter(url, rate=1e-6, burst=5)
    waits = [(one if i % 2 else two).acquire("alice") for i in range(8)]
    assert [w == 0.0 for w in waits] == [True] * 5 + [False] * 3  # 5 for the whole fleet
    assert all(w > 1000 for w in waits[5:])  # (1 - tokens) / rate: days at this rate
    assert FleetLimiter(url, rate=1e-6, burst=5).acquire("bob") == 0.0  # buckets per analyst


def test_concurrency_per_analyst_holds_across_servers(pg_cluster: Any) -> None:
    url = pg_cluster.new_schema()
    one = FleetSlots(url, 1, max_waiting=0, wait_timeout=0.5)
    two = FleetSlots(url, 1, max_waiting=1, wait_timeout=0.3)

    async def scenario() -> list[str]:
        seen: list[str] = []
        async with one.hold("alice"):
            try:
                async with two.hold("alice"):
                    seen.append("second ran")
            except SlotsBusy:
                seen.append("second refused")
            async with two.hold("bob"):
                seen.append("other analyst ran")
        async with two.hold("alice"):
            seen.append("after release")
        return seen

    assert asyncio.run(scenario()) == [
        "second refused",
        "other analyst ran",
        "after release",
    ]


def test_a_dead_servers_slot_comes_back(pg_cluster: Any) -> None:
    url = pg_cluster.new_schema()
    dead = FleetSlots(url, 1)
    alive = FleetSlots(url, 1, max_waiting=0, wait_timeout=0.3)
    assert dead._try("alice") is not None  # taken, never released
    with pytest.raises(SlotsBusy):
        asyncio.run(_enter(alive))
    dead._conn.drop()  # its session ends, as when the process dies
    alive.max_waiting, alive.wait_timeout = 1, 20.0  # (the server ends the session soon after)
    assert asyncio.run(_enter(alive)) == "ran"


async def _enter(slots: FleetSlots) -> str:
    async with slots.hold("alice"):
        return "ran"


def test_health_is_503_while_the_ledger_is_unreachable(tmp_path: Path) -> None:
    from infodp.server.app import ServerSettings, create_app

    with cluster() as pg:
        url = pg.new_schema()
        db = tmp_path / "s.duckdb"
        schema = one_table("t", {"x": {"type": "int"}})
        schema["columns"]["x"]["bounds"] = [0, 9]  # type: ignore[index]
        cur = Curator(db, ledger=url)
        cur.register_dataset("t", pd.DataFrame({"x": [1, 2, 3]}), schema)
        cur.close()
        app = create_app(ServerSettings(str(db)))
        try:
            assert call(app, "GET", "/v1/health").status_code == 200
            pg.stop("immediate")
            r = call(app, "GET", "/v1/health")
            assert r.status_code == 503 and r.headers["retry-after"] == "1"
            assert r.json()["error"]["message"] == "the ledger cannot be reached; retry"
            pg.start()
            assert call(app, "GET", "/v1/health").status_code == 200
        finally:
            app.state.service.close()


def test_an_unreachable_database_falls_back_to_this_servers_limits(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from _postgres import _free_port

    url = f"postgresql://u@127.0.0.1:{_free_port()}/x"
    limiter = FleetLimiter(url, rate=1e-6, burst=1)
    with caplog.at_level(logging.WARNING, logger="infodp.server"):
        assert [limiter.acquire("a"), limiter.acquire("a") > 0] == [0.0, True]
    assert "fleet rate limit unavailable (OperationalError): local limit" in caplog.text
    slots = FleetSlots(url, 1, max_waiting=0, wait_timeout=0.3)
    assert asyncio.run(_enter(slots)) == "ran"  # this server's own slots


def test_the_settler_settles_and_says_so(pg_cluster: Any, caplog: pytest.LogCaptureFixture) -> None:
    url = pg_cluster.new_schema()
    led = Ledger(url)
    led.register_dataset("t", "{}", rows=1, source="-")
    led.add_analyst("a", "t", Fraction(1), Fraction(0))
    entry = led.reserve("a", "t", "q", Fraction(1, 4), Fraction(0), 0.0)
    with caplog.at_level(logging.WARNING, logger="infodp.server"):
        settler = Settler(led, lease=0.2)
        try:
            deadline = time.monotonic() + 20
            while led.entry(entry).status == "reserved":
                assert time.monotonic() < deadline
                time.sleep(0.05)
        finally:
            settler.stop()
    assert "settled 1 reservation(s) of a stopped server" in caplog.text
    assert led.budget("a", "t").spent_epsilon == Fraction(1, 4)
    led.close()


def test_an_unreachable_ledger_is_503_not_500(caplog: pytest.LogCaptureFixture) -> None:
    from infodp.curator.ledger.postgres import Unreachable
    from infodp.server.errors import internal_error

    with caplog.at_level(logging.WARNING, logger="infodp.server"):
        err = internal_error(Unreachable("server closed the connection"), "query")
    assert (err.status, err.message, err.headers) == (
        503,
        "the ledger cannot be reached; retry",
        {"Retry-After": "1"},
    )
    assert "ledger unreachable in query: server closed the connection" in caplog.text
