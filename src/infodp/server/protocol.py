"""HTTP connections that cannot be held open for free: a header deadline and a cap on
half-open connections per client address (uvicorn's httptools protocol, extended).

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive`` seconds, but
a connection that sends part of a request's headers and stops (the "slowloris" pattern) is
kept for ever, and so are as many of them as a client opens. Here:

* a request's headers must be complete within ``header_timeout`` seconds of the connection's
  start, or of the previous response; else the connection is closed;
* the request line and headers together hold at most ``MAX_HEADER_BYTES`` bytes (400
  beyond, from uvicorn's parser-error path);
* a client address holds at most ``max_half_open`` connections that have not yet sent a
  complete request; one more closes its *oldest* such connection, so a flood of stalled
  connections evicts itself, while another client's connection (new, and complete within a
  millisecond) is not the one closed.

Whatever a key's requests cost once admitted is bounded by :mod:`infodp.server.gate`.

>>> cls = guarded_http(10.0, 64)
>>> cls.header_timeout, cls.max_half_open
(10.0, 64)
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["HEADER_TIMEOUT", "MAX_HALF_OPEN", "MAX_HEADER_BYTES", "GuardedHttp", "guarded_http"]

#: Seconds a request's headers may take to arrive.
HEADER_TIMEOUT = 10.0
#: Connections without a complete first request, per client address.
MAX_HALF_OPEN = 64
#: Bytes of request line and headers of one request.
MAX_HEADER_BYTES = 64 * 1024


class GuardedHttp(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header deadline and the half-open cap."""

    header_timeout: float = HEADER_TIMEOUT
    max_half_open: int = MAX_HALF_OPEN
    #: Half-open connections per address, oldest first (one event loop per server process).
    _half_open: ClassVar[dict[str, dict[GuardedHttp, None]]] = {}

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._address = self.client[0] if self.client else "?"
        waiting = self._half_open.setdefault(self._address, {})
        waiting[self] = None
        if len(waiting) > self.max_half_open:
            oldest = next(iter(waiting))
            oldest._forget()
            oldest.transport.close()
        self._arm()

    def on_message_begin(self) -> None:
        self._header_bytes = 0
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value))
        super().on_header(name, value)

    def _count(self, n: int) -> None:
        self._header_bytes = getattr(self, "_header_bytes", 0) + n
        if self._header_bytes > MAX_HEADER_BYTES:
            # Raised inside the parser's callback: uvicorn answers 400 and closes.
            raise ValueError(f"request line and headers over {MAX_HEADER_BYTES} bytes")

    def on_headers_complete(self) -> None:
        self._disarm()
        self._forget()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request's headers have the same deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._forget()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout, self._too_slow)

    def _disarm(self) -> None:
        timer = getattr(self, "_header_timer", None)
        if timer is not None:
            timer.cancel()
            self._header_timer = None

    def _forget(self) -> None:
        waiting = self._half_open.get(getattr(self, "_address", "?"))
        if waiting is not None:
            waiting.pop(self, None)
            if not waiting:
                self._half_open.pop(self._address, None)

    def _too_slow(self) -> None:
        self._header_timer = None
        # Only between requests: a request in progress (or a pipelined one) is never cut.
        if (self.cycle is None or self.cycle.response_complete) and not self.transport.is_closing():
            self.transport.close()


def guarded_http(header_timeout: float, max_half_open: int) -> type[GuardedHttp]:
    """A :class:`GuardedHttp` with these limits (uvicorn's ``http=`` takes a class)."""
    attrs: dict[str, Any] = {
        "header_timeout": float(header_timeout),
        "max_half_open": int(max_half_open),
        "_half_open": {},
    }
    return type("GuardedHttp", (GuardedHttp,), attrs)
