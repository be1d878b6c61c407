"""``/v1/docs``: Swagger UI served from the package's own assets (works without internet).

The JavaScript, CSS and favicon come from the ``swagger-ui-py`` package (Apache-2.0; Swagger UI
5.x as package data, which reads the OpenAPI 3.1 document the server produces; Swagger UI 4
could not) and are served under ``/v1/docs/assets``; the page names no external URL, so the
API documentation loads on an offline machine.

``/`` (no key) answers a short JSON object naming the page and the OpenAPI document, so a
person who opens the server's address is pointed at the documentation instead of a 404.

>>> import asyncio, httpx
>>> app = FastAPI()
>>> install_docs(app)
>>> async def root() -> dict:
...     transport = httpx.ASGITransport(app=app)
...     async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
...         return (await c.get("/")).json()
>>> asyncio.run(root())["docs"]
'/v1/docs'
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["ASSETS", "DOCS", "ROOT", "install_docs"]

DOCS = "/v1/docs"
ASSETS = "/v1/docs/assets"
#: What ``/`` answers (relative paths: nothing is built from the request's Host header).
ROOT = {
    "service": "infodp curator",
    "message": "the HTTP API is under /v1: documentation at /v1/docs, "
    "OpenAPI document at /v1/openapi.json",
    "docs": DOCS,
    "openapi": "/v1/openapi.json",
    "health": "/v1/health",
}


def install_docs(app: FastAPI, openapi_url: str = "/v1/openapi.json") -> None:
    """Add the offline Swagger UI page at :data:`DOCS`, its assets at :data:`ASSETS` and
    ``/`` answering :data:`ROOT`."""
    static = str(files("swagger_ui") / "static")
    app.mount(ASSETS, StaticFiles(directory=static), name="docs-assets")

    @app.get(DOCS, include_in_schema=False)
    async def _docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} — API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
            # Each operation open with its parameters and schemas; no external validator.
            swagger_ui_parameters={"docExpansion": "full", "validatorUrl": None},
        )

    @app.get("/", include_in_schema=False)
    async def _root() -> JSONResponse:
        return JSONResponse(dict(ROOT, openapi=openapi_url))
