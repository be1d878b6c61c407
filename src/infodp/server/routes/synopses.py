"""Synopses: released once (charged), then queried for free (post-processing)."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from infodp.curator.ledger.shown_times import coarse_entry
from infodp.server.deps import AUTH, Analyst, Heavy, guard, json_response, service_of
from infodp.server.errors import ApiError, error_responses
from infodp.server.models import SynopsisQueryRequest, SynopsisRequest, SyntheticRequest

__all__ = ["query_synopsis", "release_synopsis", "release_synthetic", "router", "synopses"]

router = APIRouter()


@router.get("/v1/synopses", tags=["synopses"], responses=error_responses(*AUTH))
def synopses(request: Request, who: Analyst) -> JSONResponse:
    """Released synopses on datasets where the caller has a budget."""
    svc = service_of(request)
    led = svc.curator.ledger
    mine = {b.dataset for b in guard("synopses", led.budgets) if b.analyst == who.analyst}
    # Times to the second (infodp.curator.ledger.shown_times): no release time to read.
    listed = [coarse_entry(s) for s in guard("synopses", led.synopses) if s["dataset"] in mine]
    return json_response({"synopses": listed})


@router.post(
    "/v1/synopses",
    tags=["synopses"],
    responses=error_responses(*AUTH, 400, 403, 409, 413, 500),
)
def release_synopsis(request: Request, body: SynopsisRequest, who: Heavy) -> JSONResponse:
    """Publish a noisy histogram once (charged to the caller); query it later for free.

    Released when the service's answer time for one table is spent, as a query is."""
    started = time.monotonic()
    svc = service_of(request)
    name = svc.dataset_or_403(who.analyst, body.dataset)
    syn = guard(
        "release",
        lambda: svc.release_synopsis(
            who.analyst, body.name, name, body.columns, epsilon=body.epsilon, started=started
        ),
    )
    remaining = svc.curator.ledger.budget(who.analyst, name)
    return json_response(
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


@router.post(
    "/v1/synopses/synthetic",
    tags=["synopses"],
    responses=error_responses(*AUTH, 400, 403, 409, 413, 500),
)
def release_synthetic(request: Request, body: SyntheticRequest, who: Heavy) -> JSONResponse:
    """Release a synthetic table once (charged ε and δ to the caller, AIM or MST over declared
    marginals); SQL over it is then free (``POST /v1/synopses/{name}/query``)."""
    started = time.monotonic()
    svc = service_of(request)
    name = svc.dataset_or_403(who.analyst, body.dataset)
    table = guard(
        "release", lambda: svc.release_synthetic(who.analyst, body, name, started=started)
    )
    remaining = svc.curator.ledger.budget(who.analyst, name)
    return json_response(
        {
            "synthetic": table.name,
            "dataset": table.dataset,
            "columns": list(table.frame.columns),
            "rows": len(table.frame),
            "method": table.spec["method"],
            "explanation": table.explanation,
            "fidelity": table.fidelity,
            "remaining": remaining.to_dict(),
        }
    )


@router.post(
    "/v1/synopses/{name}/query",
    tags=["synopses"],
    responses=error_responses(*AUTH, 400, 404, 413),
)
def query_synopsis(
    request: Request, name: str, body: SynopsisQueryRequest, who: Heavy
) -> JSONResponse:
    """Answer ``sql`` from a released synopsis: no data access, nothing spent."""
    svc = service_of(request)
    led = svc.curator.ledger
    mine = {b.dataset for b in guard("synopsis", led.budgets) if b.analyst == who.analyst}
    stored = {s["dataset"] for s in guard("synopsis", led.synopses) if s["name"] == name}
    found = sorted(stored & mine)
    if not found:
        # Same answer whether it does not exist or is on someone else's dataset.
        raise ApiError(404, "not_found", f"no synopsis {name[:80]!r} on your datasets")
    if len(found) > 1:
        raise ApiError(
            400, "bad_query", f"synopsis {name[:80]!r} exists on several of your datasets"
        )
    answer = guard(
        "synopsis",
        lambda: svc.run(
            who.analyst,
            "query_synopsis",
            name,
            body.sql,
            confidence=body.confidence,
            dataset=found[0],
        ),
    )
    return json_response(answer)
