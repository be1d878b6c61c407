"""One analyst gets one share of the service, however many keys they hold.

Every per-client limit (rate, heavy slots, in-flight gate) is per analyst, and the worker
pool hands workers out by analyst (:class:`~infodp.server.fair.FairQueue`): at most
``workers - 1`` each, a freed worker to the waiting analyst holding the fewest, then to the
one served least recently. The queue's rules are checked directly and deterministically;
the slots in process with a curator stub; the latency end to end on a real ``infodp serve``
in test_pool.py.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest

from _server_harness import wait_for
from infodp.curator.engine import Curator
from infodp.errors import ParameterError
from infodp.server.auth import KeyStore, key_store_path
from infodp.server.fair import FairQueue


def _wait_for(condition: Any, seconds: float = 10.0) -> bool:
    return wait_for(condition, seconds, 0.005)


# -- the fair queue -------------------------------------------------------------------------------


def _taker(q: FairQueue[str], analyst: str, order: list[str], got: list[str]) -> threading.Thread:
    """A caller of ``analyst`` that takes a thing, notes who got it, and keeps it."""

    def run() -> None:
        item = q.take(analyst, timeout=30.0)
        assert item is not None
        order.append(analyst)
        got.append(item)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_later_analyst_gets_the_next_free_worker_before_the_first_ones_backlog() -> None:
    """A holds the only worker with five more callers waiting; B arrives last, yet the freed
    worker goes to B (holding none, never served) before A's backlog; then they alternate."""
    q: FairQueue[str] = FairQueue(cap=1)
    q.add("w")
    assert q.take("A", timeout=1.0) == "w"
    order: list[str] = []
    got: list[str] = []
    threads = []
    for i in range(5):
        threads.append(_taker(q, "A", order, got))
        assert _wait_for(lambda n=i + 1: q.waiting() == n)
    threads.append(_taker(q, "B", order, got))
    assert _wait_for(lambda: q.waiting() == 6)
    q.give_back("A", "w")
    assert _wait_for(lambda: order == ["B"])
    # B's turn ends; A (served least recently) is next, and A's own callers keep their order.
    q.give_back("B", got[-1])
    assert _wait_for(lambda: order == ["B", "A"])
    for n in range(4):
        q.give_back("A", got[-1])
        assert _wait_for(lambda n=n: len(order) == 3 + n)
    for thread in threads:
        thread.join(timeout=10)
    assert order == ["B"] + ["A"] * 5 and q.waiting() == 0


def test_no_analyst_holds_every_worker_while_another_waits() -> None:
    """Three workers, cap two: A's many callers get two, the third stays for B (taken at
    once); freed workers go round robin between the analysts waiting."""
    q: FairQueue[str] = FairQueue(cap=2)
    for w in ("w1", "w2", "w3"):
        q.add(w)
    held = [q.take("A", timeout=1.0), q.take("A", timeout=1.0)]
    assert None not in held
    # A is at their cap: their third caller waits though a worker is idle ...
    assert q.take("A", timeout=0.05) is None
    assert q.idle() == 1
    # ... and B gets it at once.
    b = q.take("B", timeout=1.0)
    assert b is not None and q.held("A") == 2 and q.held("B") == 1
    order: list[str] = []
    got: list[str] = []
    threads = [_taker(q, "A", order, got) for _ in range(3)]
    assert _wait_for(lambda: q.waiting() == 3)
    threads += [_taker(q, "B", order, got) for _ in range(2)]
    assert _wait_for(lambda: q.waiting() == 5)
    # B frees one: A is at their cap, so it goes back to B's waiting caller, never to A.
    q.give_back("B", b)
    assert _wait_for(lambda: order == ["B"])
    assert q.held("A") == 2
    # A frees one: it returns to A (B holds one as well, A is served least recently).
    q.give_back("A", held.pop())
    assert _wait_for(lambda: order == ["B", "A"])
    assert max(q.held("A"), q.held("B")) <= 2
    # Everyone finishes: every caller is served, and nobody ever held more than the cap.
    while len(order) < 5:
        done = len(order)
        q.give_back(order[-1], got[-1])
        assert q.held("A") <= 2 and q.held("B") <= 2
        assert _wait_for(lambda done=done: len(order) == done + 1)
    for thread in threads:
        thread.join(timeout=10)
    assert sorted(order) == ["A", "A", "A", "B", "B"]


def test_a_lost_worker_still_frees_the_analysts_share() -> None:
    """A worker killed at its deadline is given back as None: the analyst's count drops, so
    their next caller is served by the replacement (and by an idle one at once)."""
    q: FairQueue[str] = FairQueue(cap=1)
    q.add("w1")
    q.add("w2")
    assert q.take("A", timeout=1.0) is not None
    assert q.take("A", timeout=0.05) is None  # at the cap
    q.give_back("A", None)
    assert q.held("A") == 0 and q.take("A", timeout=1.0) is not None


def test_the_cap_must_be_positive() -> None:
    with pytest.raises(ParameterError, match="cap"):
        FairQueue(cap=0)


# -- heavy slots shared by an analyst's keys (in process) -----------------------------------------


@pytest.mark.slow
def test_heavy_slots_are_shared_by_an_analysts_keys(tmp_path: Any) -> None:
    """Alice's second key waits for the slot her first key's estimate holds (one heavy
    request per analyst), while Bob's estimate runs at once."""
    from _server_harness import build_store
    from infodp.server.app import ServerSettings, create_app

    db, keys = build_store(tmp_path, [("alice", "people", 10), ("bob", "people", 10)])
    second = KeyStore(key_store_path(db)).issue("alice")
    app = create_app(ServerSettings(db, max_concurrent_per_analyst=1))
    curator = Curator(db)
    entered: list[str] = []
    release = threading.Event()
    original = curator.estimate_for

    def slow(analyst: str, request: Any) -> Any:
        entered.append(analyst)
        if analyst == "alice":
            release.wait(30)
        return original(analyst, request)

    curator.estimate_for = slow  # type: ignore[method-assign]
    app.state.service.curator = curator
    body = {"sql": "SELECT COUNT(*) FROM people", "epsilon": 0.1}

    async def scenario() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:

            async def post(key: str) -> int:
                headers = {"Authorization": f"Bearer {key}"}
                r = await client.post("/v1/estimate", json=body, headers=headers, timeout=60)
                return r.status_code

            first = asyncio.create_task(post(keys["alice"]))
            for _ in range(1000):
                if entered:
                    break
                await asyncio.sleep(0.01)
            assert entered == ["alice"]
            other = asyncio.create_task(post(second))
            await asyncio.sleep(0.5)
            assert entered == ["alice"]  # her second key waits for her one slot
            assert await post(keys["bob"]) == 200  # another analyst is not delayed
            assert entered == ["alice", "bob"]
            release.set()
            return [await first, await other]

    try:
        assert asyncio.run(scenario()) == [200, 200]
        assert entered == ["alice", "bob", "alice"]
    finally:
        release.set()
        app.state.service.close()
        curator.close()
