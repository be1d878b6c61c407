"""Admission of every analyst request before the app does any work on it (ASGI middleware).

Per-key limits used to bound only the CPU-heavy routes; free requests were authenticated,
rate-limited and validated only after FastAPI had read and parsed their whole body, so one
analyst sending cheap requests — 64 KiB bodies of thousands of keys or arrays nested
thousands deep, from many threads — slowed every other analyst down. The gate answers each
request in this order, stopping at the first refusal:

1. **who** — the bearer key is verified (401, or 429 for an address failing too often);
2. **how many at once** — at most ``in_flight`` requests of one analyst (all of their keys
   together) are inside the app, the others wait in the event loop without a thread (at
   most ``max_waiting`` of them, else 429 after a short pause);
3. **how often** — the analyst's token bucket (:class:`~infodp.server.limits.RateLimiter`),
   shared by their keys; an over-rate request is answered 429 after a pause of
   :data:`PAUSE` seconds, holding its slot, so an analyst who ignores ``Retry-After`` gets
   at most ``in_flight / PAUSE`` refusals a second instead of being answered as fast as they
   can ask (a pause until the next token would be 1/rate, a few milliseconds);
4. **the body** — read up to the size limit (413), then its shape checked on the raw bytes
   before any JSON parsing (:func:`~infodp.server.limits.body_problem`: UTF-8 only, few
   arrays/objects, few keys; 400).

Only then is the request handed to the app, with the verified identity in its state (the
route dependencies do not verify it again). Admin routes and the key-free routes (``/``,
which names the documentation, health, the API description and its page) pass through.

>>> gated("/v1/estimate"), gated("/v1/health"), gated("/v1/admin/keys"), gated("/")
(True, False, False, False)
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import Callable
from typing import Any

from infodp.server.errors import ApiError, internal_error
from infodp.server.limits import (
    ASGIApp,
    KeySlots,
    Receive,
    Scope,
    Send,
    SlotsBusy,
    body_problem,
    replay_body,
)

__all__ = ["PAUSE", "RequestGate", "analyst_paths", "gated"]

#: Pause before a 429 answer (seconds).
PAUSE = 0.5

#: The state key under which the gate leaves the verified identity for the routes.
IDENTITY = "infodp_identity"


def gated(path: str) -> bool:
    """True for the analyst routes, which the gate admits (not ``/``, health, the API
    description, the admin routes or unknown paths, which the app answers itself)."""
    return any(p.fullmatch(path) for p in analyst_paths())


@functools.cache
def analyst_paths() -> tuple[re.Pattern[str], ...]:
    """The paths of every route that depends on an analyst's key, read from the routers
    (:data:`infodp.server.routes.ROUTERS`): a route added to a router is gated as soon as its
    endpoint asks for ``Analyst`` or ``Heavy``, with no list to keep in step. A ``{name}``
    segment matches any one segment.

    >>> sorted(p.pattern for p in analyst_paths())[:2]
    ['/v1/budget', '/v1/datasets']
    """
    from infodp.server.deps import analyst_dependency
    from infodp.server.routes import ROUTERS

    out: list[re.Pattern[str]] = []
    for router in ROUTERS:
        for route in router.routes:
            dependant = getattr(route, "dependant", None)
            path = getattr(route, "path", None)
            if dependant is None or path is None or not _needs(dependant, analyst_dependency):
                continue
            parts = re.split(r"(\{[^}]+\})", path)
            regex = "".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts)
            out.append(re.compile(regex))
    return tuple(out)


def _needs(dependant: Any, call: Callable[..., Any]) -> bool:
    """The route's dependency tree reaches ``call``."""
    return any(d.call is call or _needs(d, call) for d in dependant.dependencies)


class RequestGate:
    """ASGI middleware admitting analyst requests (see the module docstring).

    ``service`` returns the app's :class:`~infodp.server.service.Service` (None: no store,
    every request passes to the app, which answers 503).
    """

    def __init__(
        self,
        app: ASGIApp,
        service: Callable[[], Any],
        *,
        in_flight: int = 4,
        max_waiting: int = 64,
        wait_timeout: float = 60.0,
    ) -> None:
        self.app = app
        self.service = service
        self.slots = KeySlots(in_flight, max_waiting=max_waiting, wait_timeout=wait_timeout)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        svc = self.service() if scope["type"] == "http" else None
        if (
            svc is None
            or not gated(str(scope.get("path", "")))
            or _declared_over(scope, svc.settings.max_body_bytes)
        ):
            # A declared length over the limit is refused from the header alone by the body
            # limit inside, before any other work.
            await self.app(scope, receive, send)
            return
        try:
            identity = await svc.identify(scope)
        except ApiError as err:
            await _answer(send, err)
            return
        except Exception as err:  # the key store failed: the one 500 format, details logged
            await _answer(send, internal_error(err, "authentication"))
            return
        bucket = identity.limits  # the analyst's share, whichever of their keys asked
        try:
            async with self.slots.hold(bucket):
                wait = svc.limiter.acquire(bucket)
                if wait > 0:
                    await asyncio.sleep(PAUSE)
                    await _answer(send, svc.rate_limited(wait))
                    return
                body = await _read_body(receive, svc.settings.max_body_bytes)
                if isinstance(body, ApiError):
                    await _answer(send, body)
                    return
                if body is None:  # the client went away
                    return
                problem = body_problem(body) if body else None
                if problem is not None:
                    await _answer(send, ApiError(400, "bad_request", problem))
                    return
                scope.setdefault("state", {})[IDENTITY] = identity
                await self.app(scope, replay_body(body, receive), send)
        except SlotsBusy as err:
            await asyncio.sleep(PAUSE)
            await _answer(
                send,
                ApiError(
                    429,
                    "too_many_in_flight",
                    f"at most {err.limit} requests of one analyst (all of your keys together) "
                    "are served at once and too many are waiting; retry later",
                    retry_after=1,
                ),
            )


def _declared_over(scope: Scope, limit: int) -> bool:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return not 0 <= int(value) <= limit
            except ValueError:
                return True
    return False


async def _read_body(receive: Receive, limit: int) -> bytes | ApiError | None:
    """The whole body, or a 413 as soon as it exceeds ``limit`` bytes (None: disconnected)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return ApiError(
                413,
                "payload_too_large",
                f"request body must be at most {limit} bytes; got more than {limit} bytes.",
            )
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _answer(send: Send, err: ApiError) -> None:
    body = json.dumps(err.payload()).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    headers += [(k.lower().encode(), v.encode()) for k, v in err.headers.items()]
    if err.status == 413:  # the rest of the body is not read: the connection cannot be reused
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": err.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
