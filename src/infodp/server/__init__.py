"""The curator as an HTTP service: FastAPI app, API keys, limits, one JSON error format.

Run it with ``infodp serve --db FILE``; talk to it with :class:`infodp.client.Client`.

>>> from infodp.server import create_app
>>> create_app().title
'infodp curator'
"""

from __future__ import annotations

import typing as _typing

from infodp._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from infodp.server.app import API_VERSION, ServerSettings, admin_token_hash, create_app
    from infodp.server.auth import Identity, KeyStore, key_store_path, parse_bearer
    from infodp.server.errors import ApiError
    from infodp.server.limits import BodySizeLimit, RateLimiter
    from infodp.server.openapi import openapi_document, write_openapi

# Imported on first use (infodp._lazy): a service's worker process imports
# infodp.server.pool, which needs none of the web stack (FastAPI costs ~0.5 s per start).
__getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        "API_VERSION": "infodp.server.app",
        "ServerSettings": "infodp.server.app",
        "admin_token_hash": "infodp.server.app",
        "create_app": "infodp.server.app",
        "Identity": "infodp.server.auth",
        "KeyStore": "infodp.server.auth",
        "key_store_path": "infodp.server.auth",
        "parse_bearer": "infodp.server.auth",
        "ApiError": "infodp.server.errors",
        "BodySizeLimit": "infodp.server.limits",
        "RateLimiter": "infodp.server.limits",
        "openapi_document": "infodp.server.openapi",
        "write_openapi": "infodp.server.openapi",
    },
)

__all__ = [
    "API_VERSION",
    "ApiError",
    "BodySizeLimit",
    "Identity",
    "KeyStore",
    "RateLimiter",
    "ServerSettings",
    "admin_token_hash",
    "create_app",
    "key_store_path",
    "openapi_document",
    "parse_bearer",
    "write_openapi",
]
