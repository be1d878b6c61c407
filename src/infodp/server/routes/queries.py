"""Queries: the estimate of a query's cost and accuracy (free), and its DP answer (charged)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from infodp.server.auth import Identity
from infodp.server.deps import AUTH, Heavy, guard, json_response, service_of
from infodp.server.errors import error_responses
from infodp.server.models import QueryRequest
from infodp.server.service import Service

__all__ = ["estimate", "query", "router"]

router = APIRouter()


@router.post("/v1/estimate", tags=["queries"], responses=error_responses(*AUTH, 400, 403, 413))
def estimate(request: Request, body: QueryRequest, who: Heavy) -> JSONResponse:
    """A query's cost (ε, δ, information) and per-measurement accuracy; nothing is spent."""
    svc = service_of(request)
    return json_response(guard("estimate", lambda: _estimate(svc, who, body)))


@router.post(
    "/v1/query",
    tags=["queries"],
    responses=error_responses(*AUTH, 400, 403, 409, 413, 500),
)
def query(request: Request, body: QueryRequest, who: Heavy) -> Response:
    """Answer ``sql`` with DP noise, charged to the caller (as ``infodp query --json``)."""
    svc = service_of(request)
    plan, _, _ = svc.plan(body.sql, who.analyst)
    svc.budget_or_403(who.analyst, plan.table)
    response: Response = guard(
        "query",
        lambda: svc.answer(
            who.analyst,
            body.sql,
            epsilon=body.epsilon,
            delta=body.delta,
            confidence=body.confidence,
            noise=body.noise,
        ),
    )
    return response


def _estimate(svc: Service, identity: Identity, body: QueryRequest) -> dict[str, Any]:
    plan, _, _ = svc.plan(body.sql, identity.analyst)
    budget = svc.budget_or_403(identity.analyst, plan.table)
    est = svc.run(
        "estimate",
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
