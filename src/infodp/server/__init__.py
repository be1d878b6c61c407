"""The curator as an HTTP service: FastAPI app, API keys, limits, one JSON error format.

Run it with ``infodp serve --db FILE``; talk to it with :class:`infodp.client.Client`.

>>> from infodp.server import create_app
>>> create_app().title
'infodp curator'
"""

from __future__ import annotations

from infodp.server.app import API_VERSION, ServerSettings, admin_token_hash, create_app
from infodp.server.auth import Identity, KeyStore, key_store_path, parse_bearer
from infodp.server.errors import ApiError
from infodp.server.limits import BodySizeLimit, RateLimiter
from infodp.server.openapi import openapi_document, write_openapi

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
