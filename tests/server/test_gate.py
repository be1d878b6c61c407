"""Per-key limits on every analyst request, free ones included, and on connections.

One analyst's cheap requests (free estimates from many threads, 64 KiB bodies of thousands of
keys or arrays nested thousands deep, stalled half-open connections) used to slow every other
analyst down: those requests were authenticated, limited and validated only after the whole
body had been parsed. These tests check the limits themselves (no timing): the abusive key
is answered 429/413/400 while another key is served, a body's shape is refused before it is
parsed, and nothing is charged for a refused request. The latency under that mix is measured
by ``benchmarks/server_abuse.py`` (BENCHMARKS.md, "server abuse: cheap requests").
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from _server_harness import ServerProcess, build_store, get_json
from infodp.curator.ledger import Ledger
from infodp.server.auth import Identity
from infodp.server.deps import Analyst, Heavy
from infodp.server.errors import ApiError
from infodp.server.gate import RequestGate
from infodp.server.limits import MAX_JSON_CONTAINERS, MAX_JSON_KEYS, RateLimiter, body_problem
from infodp.server.protocol import MAX_HALF_OPEN

RATE = 0.2  # one token per 5 s: the bucket does not refill during a test
BURST = 4
COUNT = {"sql": "SELECT COUNT(*) FROM people", "epsilon": 0.1}
MANY_KEYS = ("{" + ",".join(f'"k{i}":0' for i in range(6500)) + "}").encode()
DEEP = ('{"sql":' + "[" * 30000 + "]" * 30000 + ', "epsilon": 0.1}').encode()


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ServerProcess, dict[str, str]]]:
    d = tmp_path_factory.mktemp("gate")
    analysts = [("abuser", "people", 100), ("victim", "people", 100), ("shaper", "people", 100)]
    db, keys = build_store(d, analysts)
    with ServerProcess(db, rate=RATE, burst=BURST, workers=0) as server:
        yield server, keys


def _spent(db: str, analyst: str) -> tuple[Any, Any, int]:
    led = Ledger(db + ".ledger")
    b = led.budget(analyst, "people")
    return b.spent_epsilon, b.spent_delta, len(led.entries(analyst))


def _post(port: int, path: str, raw: bytes, key: str) -> tuple[int, dict[str, Any]]:
    status, payload, _ = get_json(
        port, "POST", path, raw=raw, key=key, headers={"Content-Type": "application/json"}
    )
    return status, payload


@pytest.mark.slow  # real server processes
def test_body_shape_is_refused_before_parsing_and_nothing_is_charged(
    served: tuple[ServerProcess, dict[str, str]],
) -> None:
    server, keys = served
    before = _spent(server.db, "shaper")
    for path in ("/v1/query", "/v1/estimate"):
        status, payload = _post(server.port, path, DEEP, keys["shaper"])
        assert status == 400 and payload["error"]["code"] == "bad_request", payload
        assert f"at most {MAX_JSON_CONTAINERS} JSON arrays" in payload["error"]["message"]
        status, payload = _post(server.port, path, MANY_KEYS, keys["shaper"])
        assert status == 400 and f"at most {MAX_JSON_KEYS} JSON keys" in payload["error"]["message"]
    assert _spent(server.db, "shaper") == before


@pytest.mark.slow  # real server processes
def test_the_abusive_key_is_limited_and_another_key_is_still_served(
    served: tuple[ServerProcess, dict[str, str]],
) -> None:
    server, keys = served
    before = _spent(server.db, "abuser")
    statuses = []
    for i in range(BURST + 3):  # bounded: a full bucket plus three, free requests only
        body = json.dumps(COUNT).encode() if i % 2 else MANY_KEYS
        statuses.append(_post(server.port, "/v1/estimate", body, keys["abuser"]))
    codes = [s for s, _ in statuses]
    # Token bucket (RFC 2697 single-rate meter) over free requests too, refused bodies included.
    assert codes[:BURST] == [400, 200] * (BURST // 2) and codes[BURST:].count(429) >= 2
    limited = [p for s, p in statuses if s == 429]
    assert all(p["error"]["code"] == "rate_limited" for p in limited)
    # A paid query over the rate is refused before anything is reserved.
    status, payload = _post(server.port, "/v1/query", json.dumps(COUNT).encode(), keys["abuser"])
    assert status == 429 and _spent(server.db, "abuser") == before
    # The other analyst's key has its own bucket: served and charged as usual.
    status, payload = _post(server.port, "/v1/query", json.dumps(COUNT).encode(), keys["victim"])
    assert status == 200, payload
    assert _spent(server.db, "victim")[2] >= 1


@pytest.mark.slow  # real server processes
def test_stalled_connections_of_one_address_evict_each_other(
    served: tuple[ServerProcess, dict[str, str]],
) -> None:
    """MAX_HALF_OPEN + 8 connections that never finish their headers: the oldest ones are
    closed by the server, and a complete request on a new connection is still answered."""
    server, _ = served
    stalled = []
    try:
        for _ in range(MAX_HALF_OPEN + 8):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            sock.sendall(b"POST /v1/estimate HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            stalled.append(sock)
        first = stalled[0]
        first.settimeout(30)  # bounded wait for the server's close
        assert first.recv(1) == b""
        status, _, _ = get_json(server.port, "GET", "/v1/health")
        assert status == 200
    finally:
        for sock in stalled:
            sock.close()


@pytest.mark.slow  # real server processes
def test_oversized_headers_are_refused(served: tuple[ServerProcess, dict[str, str]]) -> None:
    server, _ = served
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"p" * (70 * 1024))
        sock.sendall(b"\r\n\r\n")
        reply = sock.recv(4096)
    assert reply.startswith(b"HTTP/1.1 400")


# -- the gate in process (no network) ------------------------------------------------------------


class _Service:
    """The part of Service the gate uses."""

    def __init__(self, rate: float = 1000.0, burst: int = 1000) -> None:
        self.limiter = RateLimiter(rate, burst, clock=lambda: 0.0)
        self.settings = type("S", (), {"max_body_bytes": 64 * 1024})()

    async def identify(self, scope: dict[str, Any]) -> Identity:
        for name, value in scope["headers"]:
            who = value.decode().partition(" ")[2].strip()
            if name == b"authorization" and who:
                return Identity(who, "key:" + who)
        raise ApiError(401, "unauthorized", "missing API key")

    def rate_limited(self, wait: float) -> ApiError:
        return ApiError(429, "rate_limited", "over the rate", retry_after=1)


def _run(gate: RequestGate, key: str, body: bytes, path: str = "/v1/estimate") -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []
    scope = {
        "type": "http",
        "path": path,
        "method": "POST",
        "headers": [(b"authorization", f"Bearer {key}".encode())],
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def go() -> None:
        await gate(scope, receive, send)

    asyncio.run(go())
    return int(sent[0]["status"]), b"".join(m.get("body", b"") for m in sent[1:])


def test_refused_bodies_never_reach_the_app() -> None:
    reached: list[bytes] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    svc = _Service()
    gate = RequestGate(app, lambda: svc)
    for body in (DEEP, MANY_KEYS, '{"epsilon": 0.1}'.encode("utf-16"), b"\xef\xbb\xbf{}"):
        status, _ = _run(gate, "k", body)
        assert status == 400
    assert reached == []
    status, _ = _run(gate, "k", json.dumps(COUNT).encode())
    assert status == 200 and reached == [json.dumps(COUNT).encode()]
    # Over the body limit: 413 before the app.
    status, _ = _run(gate, "k", b"{" + b" " * (64 * 1024) + b"}")
    assert status == 413 and len(reached) == 1
    # Without a key: 401 from the gate, the body unread.
    status, _ = _run(gate, "", b"{}")
    assert status == 401 and len(reached) == 1


@pytest.mark.slow
def test_in_flight_requests_are_limited_per_key_and_other_keys_pass() -> None:
    """One key's requests beyond ``in_flight`` wait (bounded), then 429; another key is
    admitted at once."""
    release = asyncio.Event()
    inside: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        inside.append(scope["state"]["infodp_identity"].analyst)
        if scope["state"]["infodp_identity"].analyst == "abuser":
            await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    svc = _Service()
    gate = RequestGate(app, lambda: svc, in_flight=2, max_waiting=1, wait_timeout=30)
    statuses: list[int] = []

    def call(key: str) -> Any:
        sent: list[dict[str, Any]] = []
        scope = {"type": "http", "path": "/v1/estimate", "method": "POST",
                 "headers": [(b"authorization", f"Bearer {key}".encode())]}  # fmt: skip

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"{}", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)
            if message["type"] == "http.response.start":
                statuses.append(int(message["status"]))

        return gate(scope, receive, send)

    async def scenario() -> None:
        running = [asyncio.create_task(call("abuser")) for _ in range(3)]  # 2 in, 1 waiting
        for _ in range(10):
            await asyncio.sleep(0)
        await call("abuser")  # no room to wait: 429
        assert statuses == [429]
        await call("victim")  # another key: admitted at once
        assert statuses == [429, 200]
        release.set()
        await asyncio.gather(*running)

    asyncio.run(scenario())
    assert sorted(statuses) == [200, 200, 200, 200, 429]
    assert inside.count("abuser") == 3 and inside.count("victim") == 1


def test_body_problem_counts_on_raw_bytes() -> None:
    ok = json.dumps({"sql": "SELECT x::INT FROM t WHERE s = ':[{'", "epsilon": "0.1"}).encode()
    assert body_problem(ok) is None
    assert body_problem(b"[" * (MAX_JSON_CONTAINERS + 1)) is not None
    assert body_problem(b"[" * MAX_JSON_CONTAINERS) is None
    assert body_problem(b":" * (MAX_JSON_KEYS + 1)) is not None
    assert body_problem('{"sql": "é"}'.encode("latin-1")) is not None  # not UTF-8
    assert body_problem('{"sql": "é"}'.encode()) is None
    for encoding in ("utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig"):
        assert body_problem('{"epsilon": 0.1}'.encode(encoding)) is not None, encoding


def test_the_gated_paths_are_the_routes_that_take_an_analyst_key() -> None:
    # Read from the routers, not from a list: every route whose OpenAPI operation names the
    # bearer key and is not an admin route (the analyst routes of docs/curator.md's table)
    # is gated, and nothing else is (health, admin, the API description, unknown paths).
    from infodp.server import create_app
    from infodp.server.gate import gated

    spec = create_app(None).openapi()
    analyst, other = set(), set()
    for path, operations in spec["paths"].items():
        for op in operations.values():
            keyed = bool(op.get("security")) and "admin" not in op.get("tags", [])
            concrete = path.replace("{name}", "some-name")
            (analyst if keyed else other).add(concrete)
    assert analyst and other
    assert {p for p in analyst if not gated(p)} == set()
    assert {p for p in other if gated(p)} == set()
    assert not gated("/") and not gated("/v1/docs") and not gated("/v1/datasets/a/b")


def test_a_new_analyst_route_is_gated_without_a_list_to_edit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fastapi import APIRouter

    from infodp.server import gate, routes

    # FastAPI reads the (postponed) annotations from the module's globals: Analyst and Heavy
    # are imported at the top.
    router = APIRouter()

    @router.get("/v1/new/{name}")
    def new(name: str, who: Analyst) -> str:
        return name

    @router.post("/v1/heavy")
    def heavy(who: Heavy) -> None:
        return None

    @router.get("/v1/open")
    def open_route() -> None:
        return None

    monkeypatch.setattr(routes, "ROUTERS", (*routes.ROUTERS, router))
    gate.analyst_paths.cache_clear()
    try:
        assert gate.gated("/v1/new/x") and gate.gated("/v1/heavy")
        assert not gate.gated("/v1/open") and not gate.gated("/v1/new/x/y")
    finally:
        gate.analyst_paths.cache_clear()
