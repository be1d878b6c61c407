"""Call an ASGI app in-process (httpx's ASGITransport; starlette's TestClient warns here)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

__all__ = ["call"]


def call(
    app: Any, method: str, path: str, body: Any = None, *, key: str | None = None
) -> httpx.Response:
    """One request to ``app``; exceptions inside the app become its error responses."""

    async def run() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            headers = {} if key is None else {"Authorization": f"Bearer {key}"}
            return await client.request(method, path, json=body, headers=headers)

    return asyncio.run(run())
