"""The curator as an HTTP service (issue 6): FastAPI over :class:`infodp.curator.Curator`.

Dwork & Roth's (2014) interactive curator "exposes an interface to which the analyst can issue
queries"; analysts are not trusted with the data, so this service is the security boundary. It never
returns a row of data: every answer is a noisy aggregate released by the curator, whose cost
the ledger reserved durably (fsync'd) before the data was touched (DESIGN.md), so a crash or a
race can lose budget but never overspend it. Routes (all under ``/v1``):

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
``POST /v1/synopses/{name}/query``     answer from a synopsis (post-processing)         free
``GET  /v1/admin/ledger``              the whole ledger (admin token only)              free
``GET  /v1/admin/keys``                issued key ids, never secrets (admin token)      free
=====================================  ===============================================  ======

Keys are created and revoked only with the admin CLI (``infodp analyst add/key/revoke``);
see :mod:`infodp.server.auth`. Errors use one format (:mod:`infodp.server.errors`).

>>> app = create_app()
>>> sorted(p for p in app.openapi()["paths"] if p.startswith("/v1/b"))
['/v1/budget']
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr
from starlette.exceptions import HTTPException as StarletteHTTPException

from infodp._jsonable import to_jsonable
from infodp.errors import BudgetExceeded, InfodpError, ParameterError, QueryFailed
from infodp.server.auth import Identity, KeyStore, key_store_path, parse_bearer
from infodp.server.errors import (
    ApiError,
    budget_error,
    error_responses,
    internal_error,
)
from infodp.server.limits import (
    BodySizeLimit,
    KeySlots,
    RateLimiter,
    SlotsBusy,
    retry_after_seconds,
)

__all__ = [
    "ADMIN_TOKEN_ENV",
    "API_VERSION",
    "QueryRequest",
    "ServerSettings",
    "Service",
    "SynopsisQueryRequest",
    "SynopsisRequest",
    "admin_token_hash",
    "admin_token_hash_from_env",
    "create_app",
]

API_VERSION = "1.0.0"

log = logging.getLogger("infodp.server")

_MAX_SQL = 20_000

# A number in a request body: JSON numbers and decimal strings only (true/false are not
# numbers); the text is parsed by infodp._exact.parse_exact with bounded length and exponent.
_Number = StrictInt | StrictFloat | StrictStr


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """How a service runs: the store, the limits and the (optional) admin token's hash.

    ``rate`` requests per second per key with bursts of ``burst``, at most
    ``max_concurrent_per_key`` CPU-heavy requests (queries, estimates, synopsis releases and
    queries) in flight per key, each query interrupted after ``query_timeout`` seconds
    (a constant error, the cost stays spent); bodies of at most
    ``max_body_bytes``. ``admin_token_sha256`` is the hex SHA-256 of the admin token (the
    token itself is never kept); None disables the admin routes. ``keep_open``: each worker
    thread keeps its read-only DuckDB connection open (about half the latency of opening the
    store per query, see BENCHMARKS.md "curator"); datasets registered while the service runs
    then wait for it to stop, and are seen after a restart.

    >>> ServerSettings("store.duckdb").rate, ServerSettings("store.duckdb", burst=5).burst
    (50.0, 5)
    """

    db: str
    rate: float = 50.0
    burst: int = 100
    max_body_bytes: int = 64 * 1024
    admin_token_sha256: str | None = None
    keep_open: bool = True
    max_concurrent_per_key: int = 1
    query_timeout: float = 30.0
    duckdb_threads: int | None = 1


class QueryRequest(BaseModel):
    """A query and the privacy it may spend (ε, δ as numbers or exact decimal strings).

    >>> QueryRequest(sql="SELECT COUNT(*) FROM people", epsilon="0.1").delta
    0
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"sql": "SELECT region, COUNT(*) FROM people GROUP BY region", "epsilon": 0.1},
                {"sql": "SELECT AVG(age) FROM people WHERE region = 'north'", "epsilon": "0.05"},
            ]
        },
    )

    sql: str = Field(min_length=1, max_length=_MAX_SQL)
    epsilon: _Number = Field(description="ε this query spends (> 0).")
    delta: _Number = Field(
        0, description="δ (DP partition selection, or Gaussian noise: it is (ε, δ)-DP)."
    )
    confidence: StrictFloat | StrictInt = Field(
        0.95, description="Level of the confidence intervals, in (0, 1)."
    )
    noise: Literal["laplace", "gaussian"] = Field(
        "laplace", description="Noise for counts and sums: discrete Laplace or Gaussian."
    )


class SynopsisQueryRequest(BaseModel):
    """A query answered from a released synopsis (free).

    >>> SynopsisQueryRequest(sql="SELECT COUNT(*) FROM people").confidence
    0.95
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"sql": "SELECT COUNT(*) FROM people GROUP BY region"}]},
    )

    sql: str = Field(min_length=1, max_length=_MAX_SQL)
    confidence: StrictFloat | StrictInt = 0.95


class SynopsisRequest(BaseModel):
    """Release a noisy histogram over ``columns`` of ``dataset`` once (costs ``epsilon``).

    >>> SynopsisRequest(name="r", dataset="people", columns=["region"], epsilon=0.5).columns
    ['region']
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"name": "regions", "dataset": "people", "columns": ["region"], "epsilon": 0.5}
            ]
        },
    )

    name: str = Field(min_length=1, max_length=200)
    dataset: str = Field(min_length=1, max_length=200)
    columns: list[Annotated[str, Field(max_length=200)]] = Field(min_length=1, max_length=32)
    epsilon: _Number


class Service:
    """The state behind the routes: the curator(s), the key store and the rate limiters.

    >>> import tempfile
    >>> from infodp.server._harness import build_store
    >>> db, keys = build_store(tempfile.mkdtemp(), [("alice", "people", 1)], rows=8)
    >>> svc = Service(ServerSettings(db))
    >>> svc.budget_or_403("alice", "people").epsilon
    Fraction(1, 1)
    """

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self._local = threading.local()
        self._override: Any = None
        self.curator  # noqa: B018 - open the store now, so a bad store fails at start-up
        self.keys = KeyStore(key_store_path(settings.db))
        self.limiter = RateLimiter(settings.rate, settings.burst)
        self.slots = KeySlots(settings.max_concurrent_per_key)
        # Failed authentications are limited per client address, so keys cannot be guessed
        # at the full request rate.
        self.failures = RateLimiter(settings.rate, max(settings.burst, 20))

    @property
    def curator(self) -> Any:
        """This worker thread's :class:`~infodp.curator.Curator` over the store.

        One per thread: with ``keep_open`` each holds its own read-only DuckDB connection (a
        connection must not run two queries at once) and its own ledger connection; the
        ledger's BEGIN IMMEDIATE transactions keep them consistent with each other, exactly
        as between processes.
        """
        if self._override is not None:
            return self._override
        cur = getattr(self._local, "curator", None)
        if cur is None:
            from infodp.curator.engine import Curator

            cur = Curator(
                self.settings.db,
                keep_open=self.settings.keep_open,
                query_timeout=self.settings.query_timeout,
                duckdb_threads=self.settings.duckdb_threads,
            )
            self._local.curator = cur
        return cur

    @curator.setter
    def curator(self, value: Any) -> None:
        # For tests: one curator (e.g. with a patched method) for every thread.
        self._override = value

    # -- authentication ------------------------------------------------------------------------

    def _analysts(self) -> list[str]:
        return sorted({b.analyst for b in self.curator.ledger.budgets()})

    def _verify(self, kind: str, token: str) -> Identity | None:
        if kind == "server":
            return self.keys.verify(token)
        return self.keys.verify_ledger_key(token, self._analysts(), self.curator.ledger)

    def _is_admin(self, token: str) -> bool:
        want = self.settings.admin_token_sha256
        if want is None:
            return False
        got = hashlib.sha256(token.encode()).hexdigest()
        return hmac.compare_digest(got, want)

    def _unauthorized(self, request: Request, message: str) -> ApiError:
        host = request.client.host if request.client is not None else "?"
        wait = self.failures.acquire("ip:" + host)
        if wait > 0:
            return ApiError(
                429,
                "rate_limited",
                "too many failed authentications from this address; retry later",
                retry_after=retry_after_seconds(wait),
            )
        return ApiError(401, "unauthorized", message, headers={"WWW-Authenticate": "Bearer"})

    def _limit(self, bucket: str) -> None:
        wait = self.limiter.acquire(bucket)
        if wait > 0:
            raise ApiError(
                429,
                "rate_limited",
                f"rate limit of {self.settings.rate:g} requests/s (burst {self.settings.burst}) "
                "exceeded for this key; retry later",
                retry_after=retry_after_seconds(wait),
            )

    def analyst(self, request: Request) -> Identity:
        """The analyst a request's bearer key belongs to (401 / 429 otherwise)."""
        kind, token = parse_bearer(request.headers.get("authorization"))
        if kind == "missing" or token is None:
            if kind == "missing":
                raise self._unauthorized(
                    request, "missing API key: send 'Authorization: Bearer <key>'"
                )
            raise self._unauthorized(
                request, "malformed Authorization header: expected 'Bearer <key>'"
            )
        identity = self._verify(kind, token)
        if identity is None:
            raise self._unauthorized(request, "unknown or revoked API key")
        self._limit(identity.key_id)
        return identity

    def admin(self, request: Request) -> None:
        """Allow only the admin token: 401 without a valid key, 403 for analyst keys."""
        header = request.headers.get("authorization")
        kind, token = parse_bearer(header)
        if kind == "missing":
            raise self._unauthorized(request, "missing admin token")
        raw = (header or "").strip().partition(" ")[2].strip()
        if (header or "").strip().lower().startswith("bearer ") and self._is_admin(raw):
            self._limit("admin")
            return
        if token is not None and self._verify(kind, token) is not None:
            raise ApiError(403, "forbidden", "admin routes do not accept analyst keys")
        raise self._unauthorized(request, "unknown admin token")

    # -- helpers -------------------------------------------------------------------------------

    def budget_or_403(self, analyst: str, dataset: str) -> Any:
        """The caller's budget on ``dataset``; 403 when they have none there."""
        try:
            return self.curator.ledger.budget(analyst, dataset)
        except ParameterError:
            raise ApiError(403, "forbidden", f"you have no budget on dataset {dataset!r}") from None

    def dataset_or_403(self, analyst: str, name: str) -> str:
        """The registered name of ``name`` when ``analyst`` holds a budget on it.

        403 otherwise, with the same body whether the dataset does not exist or belongs to
        others (the message quotes the caller's own text), so dataset names are not revealed.
        """
        for b in self.curator.ledger.budgets():
            if b.analyst == analyst and b.dataset.lower() == name.lower():
                return str(b.dataset)
        raise ApiError(403, "forbidden", f"you have no budget on a dataset named {name[:80]!r}")

    def plan(self, sql: str, analyst: str | None = None) -> tuple[Any, Any, int | None]:
        """(plan, schema, declared row bound) of ``sql``; 400 for anything the curator refuses.

        With ``analyst``, a table they hold no budget on is a 403 before anything else is
        looked at (the same whether it exists or not).
        """
        import sqlglot.errors

        try:
            if analyst is not None:
                from infodp.curator.sql import referenced_table

                self.dataset_or_403(analyst, referenced_table(sql))
            plan, schema, rows, _ = self.curator.plan(sql)
        except ParameterError as err:
            raise ApiError(400, "bad_query", str(err)) from None
        except sqlglot.errors.SqlglotError:
            raise ApiError(400, "bad_query", "sql could not be parsed") from None
        return plan, schema, rows


def _service(request: Request) -> Service:
    svc = getattr(request.app.state, "service", None)
    if not isinstance(svc, Service):
        raise ApiError(503, "unavailable", "the service has no store configured")
    return svc


_bearer = HTTPBearer(auto_error=False, description="An analyst API key (or the admin token).")


def _analyst_dep(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Identity:
    return _service(request).analyst(request)


def _admin_dep(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    _service(request).admin(request)


Analyst = Annotated[Identity, Depends(_analyst_dep)]


async def _heavy_dep(request: Request, who: Analyst) -> AsyncIterator[Identity]:
    # CPU-heavy routes (queries, estimates, synopsis releases and queries) run holding one of
    # the key's slots; the wait happens in the event loop, before a worker thread is taken.
    try:
        async with _service(request).slots.hold("key:" + who.key_id):
            yield who
    except SlotsBusy as err:
        raise ApiError(
            429,
            "too_many_in_flight",
            f"at most {err.limit} queries, estimates or synopsis requests run at once per key "
            "and too many are waiting; retry later",
            retry_after=1,
        ) from None


Heavy = Annotated[Identity, Depends(_heavy_dep)]
Admin = Annotated[None, Depends(_admin_dep)]

_AUTH = (401, 429)


def _json(payload: Any) -> JSONResponse:
    return JSONResponse(to_jsonable(payload))


def _guard(where: str, call: Callable[[], Any]) -> Any:
    """Run a curator call: budget → 409, user errors → 400, anything else → 500 (logged)."""
    try:
        return call()
    except ApiError:
        raise
    except BudgetExceeded as err:
        raise budget_error(err) from None
    except QueryFailed:
        # One constant response whatever the cause (it could depend on the data).
        raise ApiError(500, "query_failed", QueryFailed.MESSAGE) from None
    except ParameterError as err:
        raise ApiError(400, "bad_query", str(err)) from None
    except InfodpError as err:
        raise internal_error(err, where) from None
    except Exception as err:
        raise internal_error(err, where) from None


_FAILURE_TEXT = {
    "failed": "the query failed after the data was touched; its cost stays spent",
    "cancelled": "the query failed before the data was touched; its cost was refunded",
    "released": "",
    "reserved": "",
}


def _dataset_view(record: Any) -> dict[str, Any]:
    # Public metadata only: the declared schema (bounds, categories, and the row count or its
    # bound when the owner declared them public) and the information cap. Never the measured
    # row count (private: it differs between neighbouring tables), data, the source path, or
    # what other analysts spent.
    schema = json.loads(record.schema_json)
    return {
        "name": record.name,
        "public_rows": schema.get("public_rows"),
        "public_max_rows": schema.get("public_max_rows"),
        "schema": schema,
        "info_cap_bits": record.info_cap_bits,
    }


def _my_datasets(svc: Service, analyst: str) -> set[str]:
    """The datasets ``analyst`` holds a budget on (the only ones they may learn about)."""
    return {
        b.dataset for b in _guard("datasets", svc.curator.ledger.budgets) if b.analyst == analyst
    }


def _estimate(svc: Service, identity: Identity, body: QueryRequest) -> dict[str, Any]:
    plan, _, _ = svc.plan(body.sql, identity.analyst)
    budget = svc.budget_or_403(identity.analyst, plan.table)
    est = svc.curator.estimate(
        body.sql,
        epsilon=body.epsilon,
        delta=body.delta,
        confidence=body.confidence,
        noise=body.noise,
    )
    cost = est["cost"]
    currency = getattr(budget, "currency", "basic")
    fits: bool | None = None
    if currency == "basic":
        # Basic composition (Dwork & Roth 2014, Thm 3.16): the ledger's own check, exactly.
        fits = (
            Fraction(cost["epsilon_exact"]) <= budget.remaining_epsilon
            and Fraction(cost["delta_exact"]) <= budget.remaining_delta
        )
    return {
        **est,
        "remaining": budget.to_dict(),
        "fits": fits,
        "notes": [
            "each half-width holds with the stated confidence for one cell of one measurement; "
            "AVG, VARIANCE and STDDEV combine measurements at split levels and depend on the data",
            "nothing was spent",
            *(
                []
                if fits is not None
                else [
                    f"the budget is kept in the accountant's currency ({currency}); whether "
                    "the query fits is decided by the ledger when it is run ('fits' is null)"
                ]
            ),
        ],
    }


def create_app(settings: ServerSettings | None = None) -> FastAPI:
    """The ASGI app; without ``settings`` it only describes itself (OpenAPI export)."""
    app = FastAPI(
        title="infodp curator",
        version=API_VERSION,
        description=(
            "Differentially private SQL over a curated store. Every answer is a noisy aggregate "
            "whose cost the ledger reserved before the data was touched. Authenticate with "
            "'Authorization: Bearer <key>' (keys are issued by the admin CLI). Errors: "
            '{"error": {"code": ..., "message": ...}}.'
        ),
        docs_url=None,  # served offline by install_docs below
        redoc_url=None,
        openapi_url="/v1/openapi.json",
        # No 307 to the slash-less route: its Location would be built from the Host header.
        redirect_slashes=False,
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
        return JSONResponse(
            {"error": {"code": code, "message": message}},
            status_code=err.status_code,
            headers=getattr(err, "headers", None),
        )

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, err: Exception) -> JSONResponse:
        api = internal_error(err, "request")
        return JSONResponse(api.payload(), status_code=500)

    # -- public --------------------------------------------------------------------------------

    @app.get("/v1/health", tags=["service"])
    def health(request: Request) -> dict[str, Any]:
        """Readiness: the service is up and its store is open."""
        _service(request)
        return {"status": "ok", "api_version": API_VERSION}

    # -- analyst routes ------------------------------------------------------------------------

    @app.get("/v1/datasets", tags=["datasets"], responses=error_responses(*_AUTH))
    def datasets(request: Request, who: Analyst) -> JSONResponse:
        """The datasets the caller holds a budget on, with their declared public metadata."""
        svc = _service(request)
        mine = _my_datasets(svc, who.analyst)
        records = _guard("datasets", svc.curator.ledger.datasets)
        return _json({"datasets": [_dataset_view(r) for r in records if r.name in mine]})

    @app.get("/v1/datasets/{name}", tags=["datasets"], responses=error_responses(*_AUTH, 404))
    def dataset(request: Request, name: str, who: Analyst) -> JSONResponse:
        """One dataset's declared public metadata (only where the caller holds a budget)."""
        svc = _service(request)
        mine = _my_datasets(svc, who.analyst)
        for r in _guard("dataset", svc.curator.ledger.datasets):
            if r.name.lower() == name.lower() and r.name in mine:
                return _json(_dataset_view(r))
        # Same answer whether it does not exist or the caller has no budget on it.
        raise ApiError(404, "not_found", f"no dataset {name[:80]!r} among your datasets")

    @app.get("/v1/budget", tags=["budget"], responses=error_responses(*_AUTH))
    def budget(request: Request, who: Analyst) -> JSONResponse:
        """The caller's budgets (spent and remaining ε, δ; exact fractions alongside)."""
        svc = _service(request)
        mine = [
            b.to_dict()
            for b in _guard("budget", svc.curator.ledger.budgets)
            if b.analyst == who.analyst
        ]
        return _json({"analyst": who.analyst, "budgets": mine})

    @app.get("/v1/ledger", tags=["budget"], responses=error_responses(*_AUTH, 400))
    def ledger(
        request: Request,
        who: Analyst,
        dataset: Annotated[str | None, Query(max_length=200)] = None,
        results: bool = False,
    ) -> JSONResponse:
        """The caller's own ledger entries, oldest first (with released answers if asked)."""
        svc = _service(request)
        entries = _guard("ledger", lambda: svc.curator.ledger.entries(who.analyst, dataset))
        out = []
        for e in entries:
            d = e.to_dict()
            # The stored failure reason can quote an engine message: analysts get its meaning.
            d["error"] = _FAILURE_TEXT.get(e.status) if e.error is not None else None
            if results and e.result_json is not None:
                d["result"] = json.loads(e.result_json)
            out.append(d)
        return _json({"analyst": who.analyst, "entries": out})

    @app.post("/v1/estimate", tags=["queries"], responses=error_responses(*_AUTH, 400, 403, 413))
    def estimate(request: Request, body: QueryRequest, who: Heavy) -> JSONResponse:
        """A query's cost (ε, δ, information) and per-measurement accuracy; nothing is spent."""
        svc = _service(request)
        return _json(_guard("estimate", lambda: _estimate(svc, who, body)))

    @app.post(
        "/v1/query",
        tags=["queries"],
        responses=error_responses(*_AUTH, 400, 403, 409, 413, 500),
    )
    def query(request: Request, body: QueryRequest, who: Heavy) -> JSONResponse:
        """Answer ``sql`` with DP noise, charged to the caller (as ``infodp query --json``)."""
        svc = _service(request)
        plan, _, _ = svc.plan(body.sql, who.analyst)
        svc.budget_or_403(who.analyst, plan.table)
        result = _guard(
            "query",
            lambda: svc.curator.query(
                who.analyst,
                body.sql,
                epsilon=body.epsilon,
                delta=body.delta,
                confidence=body.confidence,
                noise=body.noise,
            ),
        )
        return _json(result.to_dict())

    @app.get("/v1/synopses", tags=["synopses"], responses=error_responses(*_AUTH))
    def synopses(request: Request, who: Analyst) -> JSONResponse:
        """Released synopses on datasets where the caller has a budget."""
        svc = _service(request)
        led = svc.curator.ledger
        mine = {b.dataset for b in _guard("synopses", led.budgets) if b.analyst == who.analyst}
        listed = [s for s in _guard("synopses", led.synopses) if s["dataset"] in mine]
        return _json({"synopses": listed})

    @app.post(
        "/v1/synopses",
        tags=["synopses"],
        responses=error_responses(*_AUTH, 400, 403, 409, 413, 500),
    )
    def release_synopsis(request: Request, body: SynopsisRequest, who: Heavy) -> JSONResponse:
        """Publish a noisy histogram once (charged to the caller); query it later for free."""
        svc = _service(request)
        name = svc.dataset_or_403(who.analyst, body.dataset)
        syn = _guard(
            "release",
            lambda: svc.curator.release_synopsis(
                who.analyst, body.name, name, body.columns, epsilon=body.epsilon
            ),
        )
        remaining = svc.curator.ledger.budget(who.analyst, name)
        return _json(
            {
                "synopsis": syn.name,
                "dataset": syn.dataset,
                "columns": list(syn.columns),
                "cells": len(syn.counts),
                "epsilon": syn.epsilon,
                "noise_scale": syn.scale,
                "remaining": remaining.to_dict(),
            }
        )

    @app.post(
        "/v1/synopses/{name}/query",
        tags=["synopses"],
        responses=error_responses(*_AUTH, 400, 404, 413),
    )
    def query_synopsis(
        request: Request, name: str, body: SynopsisQueryRequest, who: Heavy
    ) -> JSONResponse:
        """Answer ``sql`` from a released synopsis: no data access, nothing spent."""
        svc = _service(request)
        led = svc.curator.ledger
        mine = {b.dataset for b in _guard("synopsis", led.budgets) if b.analyst == who.analyst}
        stored = {s["dataset"] for s in _guard("synopsis", led.synopses) if s["name"] == name}
        found = sorted(stored & mine)
        if not found:
            # Same answer whether it does not exist or is on someone else's dataset.
            raise ApiError(404, "not_found", f"no synopsis {name[:80]!r} on your datasets")
        if len(found) > 1:
            raise ApiError(
                400, "bad_query", f"synopsis {name[:80]!r} exists on several of your datasets"
            )
        answer = _guard(
            "synopsis",
            lambda: svc.curator.query_synopsis(
                name, body.sql, confidence=body.confidence, dataset=found[0]
            ),
        )
        return _json(answer)

    # -- admin routes (admin token only; never key management) --------------------------------

    @app.get("/v1/admin/ledger", tags=["admin"], responses=error_responses(*_AUTH, 403))
    def admin_ledger(request: Request, _admin: Admin) -> JSONResponse:
        """The whole ledger: every budget and entry, and whether it is consistent."""
        led = _service(request).curator.ledger
        return _json(
            {
                "budgets": [b.to_dict() for b in _guard("admin", led.budgets)],
                "entries": [e.to_dict() for e in _guard("admin", led.entries)],
                "problems": _guard("admin", led.check),
            }
        )

    @app.get("/v1/admin/keys", tags=["admin"], responses=error_responses(*_AUTH, 403))
    def admin_keys(request: Request, _admin: Admin) -> JSONResponse:
        """Issued server key ids per analyst (never secrets or hashes)."""
        ks = _service(request).keys
        return _json({"keys": [k.to_dict() for k in _guard("admin", ks.keys)]})

    app.add_middleware(BodySizeLimit, max_bytes=max_body)
    return app


#: Environment variable that may hold the admin token instead of a file.
ADMIN_TOKEN_ENV = "INFODP_ADMIN_TOKEN"


def admin_token_hash(path: str | Path) -> str:
    """SHA-256 (hex) of the admin token stored in a file (surrounding whitespace ignored).

    The file must not be readable by group or others (mode 0600 or 0400): a token others can
    read is not a secret.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "t")
    >>> from pathlib import Path
    >>> _ = Path(p).write_text("a-long-admin-token\\n")
    >>> os.chmod(p, 0o600)
    >>> admin_token_hash(p) == hashlib.sha256(b"a-long-admin-token").hexdigest()
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


def _token_digest(token: str) -> str:
    if len(token) < 16:
        raise ParameterError("admin token", f"{len(token)} characters", "at least 16 characters")
    return hashlib.sha256(token.encode()).hexdigest()
