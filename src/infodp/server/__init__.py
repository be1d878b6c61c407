"""The curator as an HTTP service: FastAPI app, API keys, limits, one JSON error format.

Run it with ``infodp serve --db FILE``; talk to it with :class:`infodp.client.Client`.

>>> from infodp.server import create_app
>>> create_app().title
'infodp curator'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from infodp.server.app import API_VERSION, ServerSettings, admin_token_hash, create_app
    from infodp.server.auth import Identity, KeyStore, key_store_path, parse_bearer
    from infodp.server.errors import ApiError
    from infodp.server.limits import BodySizeLimit, RateLimiter
    from infodp.server.openapi import openapi_document, write_openapi

#: Where each public name lives. They are imported when first asked for: a worker process
#: (``infodp.server.pool``) runs only the curator and never needs FastAPI, whose import is
#: about a third of a worker's start-up.
_HOMES = {
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
}

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


if not TYPE_CHECKING:

    def __getattr__(name: str) -> object:
        home = _HOMES.get(name)
        if home is None:
            try:  # a submodule, as an eager import of it used to leave it
                return importlib.import_module(f"{__name__}.{name}")
            except ModuleNotFoundError:
                raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
