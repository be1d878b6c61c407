"""The curator as an HTTP service: FastAPI over :class:`infodp.curator.Curator`.

Dwork & Roth's (2014) interactive curator "exposes an interface to which the analyst can issue
queries"; analysts are not trusted with the data, so this service is the security boundary. It never
returns a row of data: every answer is a noisy aggregate released by the curator, whose cost
the ledger reserved durably (fsync'd) before the data was touched (docs/architecture.md), so a
crash or a race can lose budget but never overspend it. Routes (all under ``/v1``):

=====================================  ===============================================  ======
``GET  /v1/health``                    readiness (no key)                               free
``GET  /v1/datasets``                  public metadata: schema, bounds, categories      free
``GET  /v1/datasets/{name}``           one dataset's public metadata                    free
``GET  /v1/budget``                    the caller's budgets (all datasets)              free
``GET  /v1/ledger``                    the caller's own ledger entries                  free
``POST /v1/estimate``                  cost and accuracy of a query, nothing spent      free
``POST /v1/query``                     a DP answer (same object as ``infodp query``)    ε, δ
``GET  /v1/synopses``                  released synopses on the caller's datasets       free
``POST /v1/synopses``                  release a synopsis (non-interactive mode)        ε
``POST /v1/synopses/synthetic``        release a synthetic table (AIM or MST)           ε, δ
``POST /v1/synopses/{name}/query``     answer from a synopsis (post-processing)         free
``GET  /v1/admin/ledger``              the whole ledger (admin token only)              free
``GET  /v1/admin/keys``                issued key ids, never secrets (admin token)      free
=====================================  ===============================================  ======

``GET /`` (no key) answers a JSON object naming the API documentation (``/v1/docs``) and the
OpenAPI document (``/v1/openapi.json``); a path no route serves answers 404 naming them too.

Each group of routes is a router of its own in :mod:`infodp.server.routes` (health, datasets,
budget and ledger, queries, synopses, admin); the state behind them is
:class:`~infodp.server.service.Service`, and what they share (authentication, slots, error
mapping) is in :mod:`infodp.server.deps`.

Keys are created and revoked only with the admin CLI (``infodp analyst add/key/revoke``);
see :mod:`infodp.server.auth`. Errors use one format (:mod:`infodp.server.errors`).

>>> app = create_app()
>>> sorted(p for p in app.openapi()["paths"] if p.startswith("/v1/b"))
['/v1/budget']
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from infodp.errors import ParameterError
from infodp.server._heap import freeze_heap
from infodp.server.errors import ApiError, internal_error
from infodp.server.gate import RequestGate
from infodp.server.limits import BodySizeLimit
from infodp.server.models import QueryRequest, SynopsisQueryRequest, SynopsisRequest
from infodp.server.routes import ROUTERS
from infodp.server.service import API_VERSION, ServerSettings, Service

__all__ = [
    "ADMIN_TOKEN_BITS",
    "ADMIN_TOKEN_ENV",
    "API_VERSION",
    "DESCRIPTION",
    "NO_ROUTE",
    "QueryRequest",
    "ServerSettings",
    "Service",
    "SynopsisQueryRequest",
    "SynopsisRequest",
    "admin_token_hash",
    "admin_token_hash_from_env",
    "create_app",
    "token_entropy_bits",
]


#: The API's description (CommonMark, as the documentation page renders it): everything
#: in angle brackets is inside a code span, so no viewer takes ``<key>`` for an HTML tag.
DESCRIPTION = (
    "Differentially private SQL over a curated store. Every answer is a noisy aggregate "
    "whose cost the ledger reserved before the data was touched.\n\n"
    "Authenticate with the header `Authorization: Bearer <key>`. A key is either the "
    "43-character key `infodp analyst add` prints or a server key "
    "`idp_<16 hex digits>.<43 characters>` from `infodp analyst key`; keys are issued and "
    "revoked only with the admin CLI.\n\n"
    'Errors: `{"error": {"code": ..., "message": ...}}`.'
)


def create_app(settings: ServerSettings | None = None) -> FastAPI:
    """The ASGI app; without ``settings`` it only describes itself (OpenAPI export)."""
    app = FastAPI(
        title="infodp curator",
        version=API_VERSION,
        description=DESCRIPTION,
        docs_url=None,  # served offline by install_docs below
        redoc_url=None,
        openapi_url="/v1/openapi.json",
        # No 307 to the slash-less route: its Location would be built from the Host header.
        redirect_slashes=False,
        lifespan=None if settings is None else _serving,
    )
    from infodp.server.docs_ui import install_docs

    install_docs(app)
    if settings is not None:
        app.state.service = Service(settings)
        max_body = settings.max_body_bytes
    else:
        max_body = ServerSettings("").max_body_bytes

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, err: ApiError) -> JSONResponse:
        return JSONResponse(err.payload(), status_code=err.status, headers=err.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, err: RequestValidationError) -> JSONResponse:
        parts = []
        for e in err.errors()[:5]:
            loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
            parts.append(f"{loc}: {e.get('msg', 'invalid')}")
        return JSONResponse(
            {"error": {"code": "bad_request", "message": "invalid request: " + "; ".join(parts)}},
            status_code=400,
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, err: StarletteHTTPException) -> JSONResponse:
        codes = {404: "not_found", 405: "method_not_allowed", 400: "bad_request"}
        code = codes.get(err.status_code, "http_error")
        message = str(err.detail) if err.status_code < 500 else "internal server error"
        if err.status_code == 404 and err.detail == "Not Found":  # no route has this path
            message = NO_ROUTE
        return JSONResponse(
            {"error": {"code": code, "message": message}},
            status_code=err.status_code,
            headers=getattr(err, "headers", None),
        )

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, err: Exception) -> JSONResponse:
        api = internal_error(err, "request")
        return JSONResponse(api.payload(), status_code=500)

    for router in ROUTERS:
        app.include_router(router)
    app.add_middleware(BodySizeLimit, max_bytes=max_body)
    # Added last, so outermost: keys are verified, limited and their bodies bounded before
    # anything else runs (infodp.server.gate).
    app.add_middleware(
        RequestGate,
        service=lambda: getattr(app.state, "service", None),
        in_flight=ServerSettings("").max_in_flight_per_analyst
        if settings is None
        else settings.max_in_flight_per_analyst,
    )
    return app


@contextlib.asynccontextmanager
async def _serving(app: FastAPI) -> AsyncIterator[None]:
    """Before the first request: keep the start-up heap out of the collector's full passes
    (:mod:`infodp.server._heap`), with what queries import lazily imported first (this
    process prices every query, and releases them too when it has no worker processes), and
    the access log's key redaction (:mod:`infodp.server.access_log`) installed. At shutdown
    (SIGTERM, SIGINT), the worker processes are told to stop and are reaped."""
    from infodp.server import access_log
    from infodp.server.pool import _WARM

    access_log.install()  # no key or query string in the access log
    service = getattr(app.state, "service", None)
    freeze_heap(*(_WARM if service is not None else ()))
    try:
        yield
    finally:
        if service is not None:
            service.close()


#: The 404 of a path no route serves: where the routes are described.
NO_ROUTE = "no such route; the API is described at /v1/docs (OpenAPI document: /v1/openapi.json)"


#: Environment variable that may hold the admin token instead of a file.
ADMIN_TOKEN_ENV = "INFODP_ADMIN_TOKEN"


def admin_token_hash(path: str | Path) -> str:
    """SHA-256 (hex) of the admin token stored in a file (surrounding whitespace ignored).

    The file must not be readable by group or others (mode 0600 or 0400): a token others can
    read is not a secret.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "t")
    >>> from pathlib import Path
    >>> _ = Path(p).write_text("Qm7xT2vLp9RkW4sZb8NcY3hJ\\n")
    >>> os.chmod(p, 0o600)
    >>> admin_token_hash(p) == hashlib.sha256(b"Qm7xT2vLp9RkW4sZb8NcY3hJ").hexdigest()
    True
    """
    p = Path(path)
    if not p.is_file():
        raise ParameterError("--admin-token-file", str(path), "an existing file")
    token = p.read_text().strip()
    digest = _token_digest(token)
    mode = p.stat().st_mode & 0o777
    if mode & 0o077:
        raise ParameterError(
            "--admin-token-file",
            f"{p.name} (mode {mode:04o})",
            f"readable by its owner only (chmod 600 {p.name}), or pass the token in "
            f"${ADMIN_TOKEN_ENV}",
        )
    return digest


def admin_token_hash_from_env() -> str | None:
    """SHA-256 (hex) of the admin token in ``$INFODP_ADMIN_TOKEN`` (None when unset).

    >>> import os
    >>> os.environ.pop(ADMIN_TOKEN_ENV, None) and None
    >>> admin_token_hash_from_env() is None
    True
    """
    token = os.environ.get(ADMIN_TOKEN_ENV)
    return None if token is None else _token_digest(token.strip())


#: Least estimated entropy of an admin token, in bits (a 16-byte random token has 128 bits,
#: which the estimate below puts at 77 bits or more).
ADMIN_TOKEN_BITS = 72

_TOKEN_RULE = (
    f"at least 16 characters and about {ADMIN_TOKEN_BITS} bits of entropy, i.e. random "
    "characters, not a repeated or short alphabet (generate one with: python3 -c "
    "'import secrets; print(secrets.token_urlsafe(32))')"
)


def token_entropy_bits(token: str) -> float:
    """An estimate of a token's entropy: its length times the Shannon entropy of its
    character frequencies (Shannon 1948), in bits. A repeated character scores 0; random
    characters score about length × log2(alphabet).

    >>> token_entropy_bits("a" * 16), token_entropy_bits("abcd" * 4)
    (0.0, 32.0)
    """
    n = len(token)
    if n == 0:
        return 0.0
    counts = Counter(token)
    return max(0.0, -n * sum(c / n * math.log2(c / n) for c in counts.values()))


def _token_digest(token: str) -> str:
    bits = token_entropy_bits(token)
    if len(token) < 16 or bits < ADMIN_TOKEN_BITS:
        # Never the token itself: its length and estimated entropy only.
        raise ParameterError(
            "admin token", f"{len(token)} characters, about {bits:.0f} bits", _TOKEN_RULE
        )
    return hashlib.sha256(token.encode()).hexdigest()
