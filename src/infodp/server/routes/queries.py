"""Queries: the estimate of a query's cost and accuracy (free), and its DP answer (charged).

Each route parses the body into a :class:`~infodp.curator.request.Request`, makes one curator
call (which refuses an analyst without a budget on the query's dataset before anything else,
:class:`~infodp.curator.request.NoBudget`, a 403) and renders its result.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from infodp.curator.request import Request as CuratorRequest
from infodp.server.deps import AUTH, Heavy, guard, guard_async, json_response, service_of
from infodp.server.errors import error_responses
from infodp.server.models import QueryRequest

__all__ = ["estimate", "query", "router"]

router = APIRouter()


def _parsed(body: QueryRequest) -> CuratorRequest:
    return CuratorRequest.parse(
        body.sql,
        epsilon=body.epsilon,
        delta=body.delta,
        confidence=body.confidence,
        noise=body.noise,
    )


@router.post("/v1/estimate", tags=["queries"], responses=error_responses(*AUTH, 400, 403, 413))
def estimate(request: Request, body: QueryRequest, who: Heavy) -> JSONResponse:
    """A query's cost (ε, δ, information) and per-measurement accuracy; nothing is spent."""
    svc = service_of(request)
    return json_response(
        guard("estimate", lambda: svc.estimate(who.analyst, _parsed(body)).to_dict())
    )


@router.post(
    "/v1/query",
    tags=["queries"],
    responses=error_responses(*AUTH, 400, 403, 409, 413, 500),
)
async def query(request: Request, body: QueryRequest, who: Heavy) -> Response:
    """Answer ``sql`` with DP noise, charged to the caller (as ``infodp query --json``).

    The answer is released when the query's time budget is spent (the service's answer time
    per table read); a query that overruns it yields its default outcome, with the same
    status, charge and shape (see the curator's threat model).
    """
    started = time.monotonic()
    svc = service_of(request)

    async def answer() -> Response:
        return await svc.answer_on_time(who.analyst, _parsed(body), started)

    response: Response = await guard_async("query", answer)
    return response
