"""The caller's budgets and their own ledger entries."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from infodp.curator.ledger.shown_times import coarse_entry
from infodp.server.deps import AUTH, Analyst, guard, json_response, service_of
from infodp.server.errors import error_responses

__all__ = ["budget", "ledger", "router"]

router = APIRouter()


@router.get("/v1/budget", tags=["budget"], responses=error_responses(*AUTH))
def budget(request: Request, who: Analyst) -> JSONResponse:
    """The caller's budgets (spent and remaining ε, δ; exact fractions alongside)."""
    svc = service_of(request)
    mine = [
        b.to_dict() for b in guard("budget", svc.curator.ledger.budgets) if b.analyst == who.analyst
    ]
    return json_response({"analyst": who.analyst, "budgets": mine})


@router.get("/v1/ledger", tags=["budget"], responses=error_responses(*AUTH, 400))
def ledger(
    request: Request,
    who: Analyst,
    dataset: Annotated[str | None, Query(max_length=200)] = None,
    results: bool = False,
) -> JSONResponse:
    """The caller's own ledger entries, oldest first (with released answers if asked)."""
    svc = service_of(request)
    entries = guard("ledger", lambda: svc.curator.ledger.entries(who.analyst, dataset))
    out = []
    for e in entries:
        d = coarse_entry(e.to_dict())  # times to the second: no run time to read
        # The stored failure reason can quote an engine message: analysts get its meaning.
        d["error"] = _FAILURE_TEXT.get(e.status) if e.error is not None else None
        if results and e.result_json is not None:
            d["result"] = json.loads(e.result_json)
        out.append(d)
    return json_response({"analyst": who.analyst, "entries": out})


_FAILURE_TEXT = {
    "failed": "the query failed after the data was touched; its cost stays spent",
    "cancelled": "the query failed before the data was touched; its cost was refunded",
    "released": "",
    "reserved": "",
}
