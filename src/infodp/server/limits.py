"""Request limits of the HTTP service: a per-analyst token-bucket rate limit, a body-size cap.

The rate limit is a token bucket per analyst, shared by all of their keys (Turner 1986; the
scheme of RFC 2697's single-rate meter): ``burst`` tokens, refilled at ``rate`` per second; a
request takes one token or is refused with 429 and a ``Retry-After`` in whole seconds
(rounded up). The body cap refuses a declared ``Content-Length`` above the limit at once and
counts streamed (chunked) bodies as they arrive, so no request can make the server buffer
more than ``max_bytes``.

>>> t = [0.0]
>>> rl = RateLimiter(rate=1.0, burst=2, clock=lambda: t[0])
>>> [rl.acquire("k") for _ in range(3)]
[0.0, 0.0, 1.0]
>>> t[0] = 1.0
>>> rl.acquire("k")
0.0
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

from infodp._validate import as_positive, as_positive_int

__all__ = [
    "MAX_JSON_CONTAINERS",
    "MAX_JSON_KEYS",
    "BodySizeLimit",
    "KeySlots",
    "RateLimiter",
    "SlotsBusy",
    "body_problem",
    "replay_body",
    "retry_after_seconds",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the whole buffered ``body`` once, then the client's own
    messages (a middleware that has read the body passes it on this way)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class RateLimiter:
    """Token buckets by name (the service's: one per analyst, see
    :attr:`~infodp.server.auth.Identity.limits`); thread-safe.

    >>> rl = RateLimiter(rate=2.0, burst=1, clock=lambda: 0.0)
    >>> rl.acquire("a"), rl.acquire("a"), rl.acquire("b")
    (0.0, 0.5, 0.0)
    """

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 100_000,
    ) -> None:
        self.rate = as_positive("rate", rate)
        self.burst = as_positive_int("burst", burst)
        self._clock = clock
        self._max_keys = max_keys
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}

    def acquire(self, key: str) -> float:
        """Take one token for ``key``: 0.0 when allowed, else the seconds to wait (> 0)."""
        now = self._clock()
        with self._lock:
            tokens, last = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            if len(self._buckets) > self._max_keys:  # forget idle buckets (they are full again)
                self._buckets.clear()
            return (1.0 - tokens) / self.rate


class KeySlots:
    """At most ``limit`` requests holding a slot per name; the rest wait in the event loop.

    The service names slots by analyst (:attr:`~infodp.server.auth.Identity.limits`), so all
    of an analyst's keys share them. A waiting request holds no worker thread (it waits in an
    ``asyncio.Semaphore`` before its handler is dispatched), so one analyst's heavy queries
    occupy at most ``limit`` of the server's threads whatever they send and however many keys
    they hold, and the other analysts keep theirs. At most ``max_waiting`` requests of one
    name wait, each at most ``wait_timeout`` seconds; beyond
    that :meth:`hold` raises :class:`SlotsBusy` (the service answers 429).

    >>> import asyncio
    >>> slots = KeySlots(1, max_waiting=0, wait_timeout=1.0)
    >>> async def two():
    ...     async with slots.hold("k"):
    ...         try:
    ...             async with slots.hold("k"):
    ...                 return "second ran"
    ...         except SlotsBusy:
    ...             return "second refused"
    >>> asyncio.run(two())
    'second refused'
    """

    def __init__(self, limit: int, *, max_waiting: int = 64, wait_timeout: float = 60.0) -> None:
        self.limit = as_positive_int("limit", limit)
        self.max_waiting = int(max_waiting)
        self.wait_timeout = as_positive("wait_timeout", wait_timeout)
        self._state: dict[str, tuple[asyncio.Semaphore, list[int]]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Run the body holding one of ``key``'s slots (waiting for one if need be).

        ``key`` names whose share this is (the service passes the analyst's bucket)."""
        state = self._state.get(key)
        if state is None:
            state = self._state[key] = (asyncio.Semaphore(self.limit), [0])
        sem, waiting = state
        if sem.locked():
            if waiting[0] >= self.max_waiting:
                raise SlotsBusy(self.limit)
            waiting[0] += 1
            try:
                await asyncio.wait_for(sem.acquire(), timeout=self.wait_timeout)
            except TimeoutError:
                raise SlotsBusy(self.limit) from None
            finally:
                waiting[0] -= 1
        else:
            await sem.acquire()
        try:
            yield
        finally:
            sem.release()


class SlotsBusy(Exception):
    """Too many requests of one analyst are running or waiting (see :class:`KeySlots`)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"at most {limit} heavy requests run at once per analyst")
        self.limit = limit


class BodySizeLimit:
    """ASGI middleware: refuse request bodies larger than ``max_bytes`` with a JSON 413.

    >>> import asyncio
    >>> sent = []
    >>> async def app(scope, receive, send): raise AssertionError("not reached")
    >>> async def receive(): return {"type": "http.request", "body": b"x" * 10}
    >>> async def send(message): sent.append(message)
    >>> asyncio.run(BodySizeLimit(app, 4)({"type": "http", "headers": []}, receive, send))
    >>> sent[0]["status"]
    413
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = int(max_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared < 0 or declared > self.max_bytes:
                    await self._refuse(send, declared)
                    return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await self._refuse(send, size)
                return
            chunks.append(body)
            more = bool(message.get("more_body", False))
        await self.app(scope, replay_body(b"".join(chunks), receive), send)

    async def _refuse(self, send: Send, size: int) -> None:
        what = "an invalid Content-Length" if size < 0 else f"{size} bytes"
        body = json.dumps(
            {
                "error": {
                    "code": "payload_too_large",
                    "message": f"request body must be at most {self.max_bytes} bytes; got {what}.",
                }
            }
        ).encode()
        status = 400 if size < 0 else 413
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def retry_after_seconds(wait: float) -> int:
    """Whole seconds to wait, rounded up (at least 1).

    >>> retry_after_seconds(0.2), retry_after_seconds(1.0)
    (1, 1)
    """
    return max(1, math.ceil(wait))


#: Most arrays and objects in a request body, counted as ``[`` and ``{`` bytes (inside strings
#: too: an over-count only refuses a strange body); the service's bodies hold at most 2.
MAX_JSON_CONTAINERS = 64
#: Most keys in a request body, counted as ``:`` bytes (inside strings too); the service's
#: bodies hold at most 6.
MAX_JSON_KEYS = 256

_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


def body_problem(body: bytes) -> str | None:
    """Why a JSON request body is refused before it is parsed (None: it may be parsed).

    Checked on the raw bytes, in time linear in the body and without building anything:
    UTF-8 only (RFC 8259, section 8.1: JSON exchanged between systems is UTF-8; a NUL byte
    or a byte-order mark means another encoding, which a parser would otherwise guess), at
    most :data:`MAX_JSON_CONTAINERS` arrays and objects (which also bounds the nesting depth)
    and at most :data:`MAX_JSON_KEYS` keys.

    >>> body_problem(b'{"sql": "SELECT 1", "epsilon": 0.1}') is None
    True
    >>> body_problem(b"[" * 30000 + b"]" * 30000)[:40]
    'request body must hold at most 64 JSON a'
    >>> body_problem('{"epsilon": 0.1}'.encode("utf-16"))[:45]
    'request body must be JSON encoded in UTF-8 (n'
    """
    if body.startswith(_BOMS) or b"\x00" in body:
        return "request body must be JSON encoded in UTF-8 (no byte-order mark, no NUL bytes)"
    containers = body.count(b"[") + body.count(b"{")
    if containers > MAX_JSON_CONTAINERS:
        return (
            f"request body must hold at most {MAX_JSON_CONTAINERS} JSON arrays and objects "
            f"('[' and '{{' bytes, in strings too); got {containers}"
        )
    keys = body.count(b":")
    if keys > MAX_JSON_KEYS:
        return (
            f"request body must hold at most {MAX_JSON_KEYS} JSON keys "
            f"(':' bytes, in strings too); got {keys}"
        )
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return "request body must be JSON encoded in UTF-8"
    return None
