"""Limits and the one JSON error format of the HTTP service ("Limits and errors").

A real server on loopback for 413/429/400/404; the 500 path (an unexpected error must not leak
its message) is exercised in-process with FastAPI's TestClient, because a healthy curator
offers no way to provoke it from outside.
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _server_harness import ServerProcess, build_store, get_json
from infodp.curator.engine import Curator
from infodp.server.auth import KeyStore, key_store_path
from infodp.server.errors import ApiError
from infodp.server.limits import RateLimiter, retry_after_seconds

RATE = 0.2  # one token per 5 s: a slow machine cannot refill the bucket mid-test
BURST = 3
MAX_BODY = 2048


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ServerProcess, dict[str, str]]]:
    d = tmp_path_factory.mktemp("limits")
    # One analyst per bad-query case: the rate limit is per analyst, so each case needs a
    # fresh analyst (a fresh key of the same analyst would share the spent bucket).
    fresh = [(f"q{i}", "people", 100) for i in range(len(BAD_QUERIES))]
    db, keys = build_store(d, [("alice", "people", 100), ("bob", "people", 100), *fresh])
    with ServerProcess(db, rate=RATE, burst=BURST, max_body=MAX_BODY) as server:
        yield server, keys


def _error(payload: dict[str, Any]) -> dict[str, Any]:
    assert set(payload) == {"error"}, payload
    err = payload["error"]
    assert isinstance(err["code"], str) and isinstance(err["message"], str)
    return dict(err)


@pytest.mark.slow  # real server processes
def test_rate_limit_is_per_analyst_with_retry_after(
    served: tuple[ServerProcess, dict[str, str]],
) -> None:
    """The bucket is the analyst's: once one key has used the burst, the analyst's second key
    is refused too, while another analyst's key is served."""
    server, keys = served
    statuses = []
    headers_429: dict[str, str] = {}
    for _ in range(BURST + 4):  # bounded: a full bucket plus four
        status, payload, headers = get_json(server.port, "GET", "/v1/budget", key=keys["alice"])
        statuses.append(status)
        if status == 429:
            assert _error(payload)["code"] == "rate_limited"
            headers_429 = headers
    # Token bucket (RFC 2697 single-rate meter): a burst of BURST passes, then refusals (the
    # bucket refills at 0.2/s, so at most one more may slip through while we loop).
    assert statuses[:BURST] == [200] * BURST
    assert statuses.count(429) >= 3
    assert 1 <= int(headers_429["retry-after"]) <= 5
    # A second key of the same analyst shares the spent bucket: 429, naming the analyst's
    # shared limit.
    second = KeyStore(key_store_path(server.db)).issue("alice")
    status, payload, _ = get_json(server.port, "GET", "/v1/budget", key=second)
    assert status == 429 and "per analyst" in _error(payload)["message"]
    # Another analyst's bucket is their own.
    other = KeyStore(key_store_path(server.db)).issue("bob")
    assert get_json(server.port, "GET", "/v1/budget", key=other)[0] == 200


@pytest.mark.slow  # real server processes
def test_body_size_limit_is_413(served: tuple[ServerProcess, dict[str, str]]) -> None:
    server, _ = served
    sql = "SELECT COUNT(*) FROM people WHERE region = '" + "x" * (MAX_BODY + 10) + "'"
    key = KeyStore(key_store_path(server.db)).issue("bob")
    status, payload, _ = get_json(
        server.port, "POST", "/v1/query", {"sql": sql, "epsilon": 0.1}, key=key
    )
    assert status == 413 and _error(payload)["code"] == "payload_too_large"
    assert str(MAX_BODY) in payload["error"]["message"]


@pytest.mark.slow  # real server processes
def test_chunked_body_over_the_limit_is_413(served: tuple[ServerProcess, dict[str, str]]) -> None:
    server, _ = served
    key = KeyStore(key_store_path(server.db)).issue("bob")
    # A chunked body declares no length: the limit must count the bytes as they arrive. The
    # whole request goes out in one write (3 KB), so the server has read it all when it answers.
    chunks = [b'{"sql": "', b"y" * 1500, b"z" * 1500, b'", "epsilon": 0.1}']
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
    head = (
        "POST /v1/query HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head + body)
        response = http.client.HTTPResponse(sock)
        response.begin()
        assert response.status == 413
        assert _error(json.loads(response.read()))["code"] == "payload_too_large"


@pytest.mark.slow  # real server processes
def test_unknown_route_and_method_use_the_error_format(
    served: tuple[ServerProcess, dict[str, str]],
) -> None:
    server, _ = served
    status, payload, _ = get_json(server.port, "GET", "/v1/nothing")
    assert status == 404 and _error(payload)["code"] == "not_found"
    status, payload, _ = get_json(server.port, "DELETE", "/v1/health")
    assert status == 405 and _error(payload)["code"] == "method_not_allowed"


BAD_QUERIES: list[tuple[dict[str, Any], str]] = [
    ({"sql": "SELECT * FROM people", "epsilon": 0.1}, "refused SQL construct"),
    ({"sql": "SELECT COUNT(*) FROM people", "epsilon": -1}, "epsilon"),
    ({"sql": "SELECT COUNT(*) FROM people", "epsilon": "nan"}, "epsilon"),
    # An astronomically large ε is refused (the curator's message names the noise scale).
    ({"sql": "SELECT COUNT(*) FROM people", "epsilon": "1e999999"}, "must be"),
    ({"sql": "SELECT SUM(secret) FROM people", "epsilon": 0.1}, "unknown column"),
    ({"sql": "SELECT 'unterminated", "epsilon": 0.1}, "could not be parsed"),
    ({"sql": "DROP TABLE people", "epsilon": 0.1}, "refused SQL construct"),
    ({"sql": "SELECT COUNT(*) FROM people", "epsilon": 0.1, "confidence": 2}, "confidence"),
    ({"sql": "SELECT COUNT(*) FROM people"}, "epsilon"),
    ({"epsilon": 0.1}, "sql"),
]


@pytest.mark.slow  # real server processes
@pytest.mark.parametrize("case", range(len(BAD_QUERIES)))
def test_bad_queries_are_400_and_spend_nothing(
    served: tuple[ServerProcess, dict[str, str]], case: int
) -> None:
    server, _ = served
    from infodp.curator.ledger import Ledger

    body, fragment = BAD_QUERIES[case]
    analyst = f"q{case}"  # a fresh analyst: a fresh rate-limit bucket
    led = Ledger(server.db + ".ledger")
    before = led.budget(analyst, "people")
    key = KeyStore(key_store_path(server.db)).issue(analyst)
    status, payload, _ = get_json(server.port, "POST", "/v1/query", body, key=key)
    assert status == 400, payload
    err = _error(payload)
    assert err["code"] in ("bad_query", "bad_request")
    assert fragment in err["message"]
    # No engine internals in the message.
    for leak in ("Traceback", "duckdb", "sqlglot", 'File "'):
        assert leak not in err["message"]
    assert led.budget(analyst, "people") == before


@pytest.mark.slow  # real server processes
def test_declared_length_over_the_limit_is_refused_before_the_body(
    served: tuple[ServerProcess, dict[str, str]],
) -> None:
    # The body never arrives: the server must answer from the header alone (no buffering).
    server, keys = served
    status, payload, headers = get_json(
        server.port,
        "POST",
        "/v1/query",
        raw=b"{}",
        key=keys["alice"],
        headers={"Content-Length": str(10 * MAX_BODY), "Content-Type": "application/json"},
        timeout=20.0,
    )
    assert status == 413 and _error(payload)["code"] == "payload_too_large"
    assert headers.get("connection") == "close"


# -- 500: generic message and error id, details only in the log --------------------------------


@pytest.mark.slow
def test_unexpected_errors_do_not_leak(
    copied_store: Callable[..., tuple[str, dict[str, str]]],
    tmp_path: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import asyncio

    import httpx

    from infodp.server.app import ServerSettings, create_app

    db, keys = copied_store(tmp_path, [("alice", "people", 10)])
    app = create_app(ServerSettings(db))
    secret = "row 17: alice, 42, HIV positive"

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(secret)

    curator = Curator(db)
    curator.answer = boom  # type: ignore[method-assign]  # what the route calls
    app.state.service.curator = curator  # every worker thread uses this one

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.post(
                "/v1/query",
                json={"sql": "SELECT COUNT(*) FROM people", "epsilon": 0.1},
                headers={"Authorization": f"Bearer {keys['alice']}"},
            )

    r = asyncio.run(call())
    assert r.status_code == 500
    err = r.json()["error"]
    assert err["code"] == "internal_error" and len(err["error_id"]) == 16
    assert secret not in r.text and "RuntimeError" not in r.text
    assert err["error_id"] in err["message"]
    # ... the details are in the server log, under the same id.
    assert any(
        err["error_id"] in rec.getMessage() and secret in rec.getMessage() for rec in caplog.records
    )


# -- the rate limiter's law -----------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    rate=st.floats(0.5, 50.0),
    burst=st.integers(1, 20),
    gaps=st.lists(st.floats(0.0, 2.0), min_size=1, max_size=60),
)
def test_token_bucket_never_admits_more_than_burst_plus_rate_times_time(
    rate: float, burst: int, gaps: list[float]
) -> None:
    # Token bucket (RFC 2697, single-rate meter): over any run of length T, at most
    # burst + rate·T requests pass.
    t = [0.0]
    limiter = RateLimiter(rate, burst, clock=lambda: t[0])
    admitted = 0
    for gap in gaps:
        t[0] += gap
        wait = limiter.acquire("k")
        assert wait >= 0.0
        admitted += wait == 0.0
    assert admitted <= burst + rate * t[0] + 1e-9
    # A refused request is told a wait after which it passes.
    if wait > 0:
        t[0] += wait + 1e-9
        assert limiter.acquire("k") == 0.0


def test_retry_after_rounds_up() -> None:
    assert [retry_after_seconds(x) for x in (1e-9, 0.999, 1.0, 1.0001, 7.2)] == [1, 1, 1, 2, 8]


def test_api_error_payload_shape() -> None:
    e = ApiError(409, "budget_exceeded", "m", extra={"gap": "epsilon=1"})
    assert e.payload() == {"error": {"code": "budget_exceeded", "message": "m", "gap": "epsilon=1"}}


@pytest.mark.slow
def test_failed_entries_do_not_leak_engine_messages(
    copied_store: Callable[..., tuple[str, dict[str, str]]], tmp_path: Any
) -> None:
    # A failure after the data was touched: the cost stays spent (docs/architecture.md), the
    # ledger keeps
    # the engine's message for the admin, and the analyst sees neither it nor the data.
    import asyncio

    import httpx

    from infodp.curator.ledger import Ledger
    from infodp.server.app import ServerSettings, create_app

    db, keys = copied_store(tmp_path, [("alice", "people", 10)])
    app = create_app(ServerSettings(db))
    secret = "Conversion Error: could not cast 'alice,42,HIV+' to BIGINT"

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(secret)

    curator = Curator(db)
    curator.backend.aggregate = broken  # type: ignore[method-assign]
    app.state.service.curator = curator  # every worker thread uses this one
    headers = {"Authorization": f"Bearer {keys['alice']}"}

    async def calls() -> tuple[httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            q = await client.post(
                "/v1/query",
                json={"sql": "SELECT COUNT(*) FROM people", "epsilon": 0.5},
                headers=headers,
            )
            led = await client.get("/v1/ledger", headers=headers)
            return q, led

    q, led = asyncio.run(calls())
    assert q.status_code == 500 and secret not in q.text and "Conversion" not in q.text
    assert led.status_code == 200 and "Conversion" not in led.text and "alice,42" not in led.text
    (entry,) = led.json()["entries"]
    assert entry["status"] == "failed" and "cost stays spent" in entry["error"]
    stored = Ledger(db + ".ledger").entries("alice")
    assert stored[0].error is not None and "Conversion" in stored[0].error
    assert Ledger(db + ".ledger").budget("alice", "people").spent_epsilon == Fraction(1, 2)


def test_key_slots_queue_one_key_and_leave_others_free() -> None:
    """At most ``limit`` holders per key; the next one waits (in the event loop) until a slot
    is given back, other keys are never delayed, and waiting is bounded in count and time."""
    import asyncio

    from infodp.server.limits import KeySlots, SlotsBusy

    async def scenario() -> list[str]:
        slots = KeySlots(1, max_waiting=1, wait_timeout=0.2)
        log: list[str] = []
        release = asyncio.Event()

        async def hold(key: str, name: str, wait_for: asyncio.Event | None = None) -> None:
            try:
                async with slots.hold(key):
                    log.append(f"{name} in")
                    if wait_for is not None:
                        await wait_for.wait()
                    log.append(f"{name} out")
            except SlotsBusy:
                log.append(f"{name} busy")

        first = asyncio.create_task(hold("a", "a1", release))
        await asyncio.sleep(0)
        second = asyncio.create_task(hold("a", "a2"))  # waits for a1
        await asyncio.sleep(0)
        await hold("a", "a3")  # a1 running, a2 waiting: no room to wait
        await hold("b", "b1")  # another key is not delayed
        release.set()
        await asyncio.gather(first, second)
        blocker = asyncio.Event()
        third = asyncio.create_task(hold("a", "a4", blocker))
        await asyncio.sleep(0)
        await hold("a", "a5")  # waits 0.2 s, then gives up
        blocker.set()
        await third
        return log

    log = asyncio.run(scenario())
    assert log == [
        "a1 in",
        "a3 busy",
        "b1 in",
        "b1 out",
        "a1 out",
        "a2 in",
        "a2 out",
        "a4 in",
        "a5 busy",
        "a4 out",
    ]
