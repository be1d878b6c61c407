"""What the routes share: the service of a request, authentication, slots and error mapping.

``Analyst`` (a valid analyst key), ``Heavy`` (the same, holding one of the analyst's slots
for CPU-heavy work) and ``Admin`` (the admin token) are FastAPI dependencies; :func:`guard` maps
curator errors onto the one JSON error format.

>>> AUTH
(401, 429, 503)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from infodp._jsonable import to_jsonable
from infodp.curator.request import NoBudget
from infodp.errors import BudgetExceeded, ParameterError, QueryFailed
from infodp.server.auth import Identity, parse_bearer
from infodp.server.errors import ApiError, budget_error, internal_error
from infodp.server.gate import IDENTITY
from infodp.server.limits import SlotsBusy
from infodp.server.pool import WorkerDeadline, WorkerUnavailable
from infodp.server.service import Service

__all__ = [
    "AUTH",
    "Admin",
    "Analyst",
    "Heavy",
    "analyst_dependency",
    "guard",
    "guard_async",
    "json_response",
    "service_of",
]


def service_of(request: Request) -> Service:
    """The :class:`Service` of the app serving ``request`` (503 when it has no store)."""
    svc = getattr(request.app.state, "service", None)
    if not isinstance(svc, Service):
        raise ApiError(503, "unavailable", "the service has no store configured")
    return svc


_bearer = HTTPBearer(auto_error=False, description="An analyst API key (or the admin token).")


async def analyst_dependency(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Identity:
    """The analyst a request's key names (every analyst route depends on it: the gate finds
    those routes by it, :func:`infodp.server.gate.analyst_paths`)."""
    svc = service_of(request)
    admitted = getattr(request.state, IDENTITY, None)
    if isinstance(admitted, Identity):
        return admitted  # verified and rate-limited by the gate (infodp.server.gate)
    if parse_bearer(request.headers.get("authorization"))[0] == "server":
        # A server key: one primary-key read of the key store and one salted hash, done in
        # the event loop (a hop to a worker thread and back costs more CPU than the check).
        return svc.analyst(request)
    # A ledger key is checked against every analyst's hash: in a worker thread.
    return await run_in_threadpool(svc.analyst, request)


def _admin_dep(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    service_of(request).admin(request)


Analyst = Annotated[Identity, Depends(analyst_dependency)]


async def _heavy_dep(request: Request, who: Analyst) -> AsyncIterator[Identity]:
    # CPU-heavy routes (queries, estimates, synopsis releases and queries) run holding one of
    # the analyst's slots (shared by all their keys: a second key is no second share); the
    # wait happens in the event loop, before a worker thread is taken.
    try:
        async with service_of(request).slots.hold(who.limits):
            yield who
    except SlotsBusy as err:
        raise ApiError(
            429,
            "too_many_in_flight",
            f"at most {err.limit} queries, estimates or synopsis requests run at once per "
            "analyst (shared by all of your keys) and too many are waiting; retry later",
            retry_after=1,
        ) from None


Heavy = Annotated[Identity, Depends(_heavy_dep)]
Admin = Annotated[None, Depends(_admin_dep)]

#: The errors every authenticated route may answer with (503: a PostgreSQL ledger that cannot
#: be reached, e.g. while its database restarts; the keys are checked against it).
AUTH = (401, 429, 503)


def json_response(payload: Any) -> JSONResponse:
    """``payload`` as strict JSON (numpy values and infinities converted)."""
    return JSONResponse(to_jsonable(payload))


def guard(where: str, call: Callable[[], Any]) -> Any:
    """Run a curator call: no budget on the dataset → 403, budget exceeded → 409, user errors
    → 400, a worker past its deadline (free routes) → 503, anything else → 500 (logged)."""
    try:
        return call()
    except ApiError:
        raise
    except Exception as err:
        raise _mapped(where, err) from None


async def guard_async(where: str, call: Callable[[], Awaitable[Any]]) -> Any:
    """:func:`guard` for a coroutine (the same mapping of errors)."""
    try:
        return await call()
    except ApiError:
        raise
    except Exception as err:
        raise _mapped(where, err) from None


def _mapped(where: str, err: Exception) -> ApiError:
    """The API error a curator error becomes (see :func:`guard`)."""
    if isinstance(err, NoBudget):
        # The same body whether the dataset exists or belongs to others.
        return ApiError(403, "forbidden", str(err))
    if isinstance(err, BudgetExceeded):
        return budget_error(err)
    if isinstance(err, QueryFailed):
        # One constant response whatever the cause (it could depend on the data).
        return ApiError(500, "query_failed", QueryFailed.MESSAGE)
    if isinstance(err, ParameterError):
        return ApiError(400, "bad_query", str(err))
    if isinstance(err, (WorkerDeadline, WorkerUnavailable)):
        # Raised here only by the free routes (estimate, synopsis query), where nothing was
        # charged or read: after a reservation the curator answers QueryFailed instead.
        return ApiError(503, "unavailable", str(err), retry_after=1)
    return internal_error(err, where)
