"""Queries: the estimate of a query's cost and accuracy (free), and its DP answer (charged)."""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from infodp.errors import ParameterError
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
def query(request: Request, body: QueryRequest, who: Heavy) -> JSONResponse:
    """Answer ``sql`` with DP noise, charged to the caller (as ``infodp query --json``)."""
    svc = service_of(request)
    plan, _, _ = svc.plan(body.sql, who.analyst)
    svc.budget_or_403(who.analyst, plan.table)
    result = guard(
        "query",
        lambda: svc.curator.query(
            who.analyst,
            body.sql,
            epsilon=body.epsilon,
            delta=body.delta,
            confidence=body.confidence,
        ),
    )
    return json_response(result.to_dict())


def _estimate(svc: Service, identity: Identity, body: QueryRequest) -> dict[str, Any]:
    from infodp.curator.backends.duckdb import quantile_bins
    from infodp.curator.engine import (
        _float_up,
        _require_finite,
        as_budget_fraction,
        leakage_summary,
        plan_cost,
    )
    from infodp.curator.noise import dlap_halfwidth

    plan, schema, rows = svc.plan(body.sql, identity.analyst)
    budget = svc.budget_or_403(identity.analyst, plan.table)
    if not (isinstance(body.confidence, float | int) and 0 < body.confidence < 1):
        raise ParameterError("confidence", body.confidence, "a number in (0, 1)")
    eps = as_budget_fraction("epsilon", body.epsilon)
    dlt = as_budget_fraction("delta", body.delta, allow_zero=True)
    if dlt >= 1:
        raise ParameterError("delta", body.delta, "a probability in [0, 1)")
    cost = plan_cost(plan, schema, eps, dlt, rows)
    leak = leakage_summary(_float_up(cost.epsilon), _float_up(cost.delta), rows)
    _require_finite("the query's privacy summary", leak)
    beta = 1.0 - float(body.confidence)
    accuracy = []
    for p in cost.parts:
        m = p.measurement
        if m.kind == "quantile":
            if m.column is None:
                continue
            k = quantile_bins(schema.column(m.column))[0]
            # Dwork & Roth 2014, Thm 3.11 (as in Curator._answer): rank error at level β.
            rank = float(2 * p.sensitivity / p.epsilon) * (math.log(k + 1) + math.log(1 / beta))
            accuracy.append({"measurement": m.key, "rank_error": rank})
        else:
            # Discrete Laplace half-width with P(|Y| > h) ≤ β (infodp.curator.noise).
            h = dlap_halfwidth(p.scale, beta) * p.step
            accuracy.append({"measurement": m.key, "halfwidth": h, "noise_scale": p.scale * p.step})
    currency = getattr(budget, "currency", "basic")
    fits: bool | None = None
    if currency == "basic":
        # Basic composition (Dwork & Roth 2014, Thm 3.16): the ledger's own check, exactly.
        fits = cost.epsilon <= budget.remaining_epsilon and cost.delta <= budget.remaining_delta
    return {
        "cost": {
            **cost.to_dict(),
            "leakage": leak,
        },
        "accuracy": accuracy,
        "confidence": body.confidence,
        "cells": cost.cells,
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
