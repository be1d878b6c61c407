"""Readiness of the service (no key): a load balancer's health check.

200 when this server can serve: it is up, its store is open and its ledger answers (a
PostgreSQL ledger shared by a fleet is read once per check); 503 with ``Retry-After`` while
the ledger cannot be reached (a database restart), so a balancer sends the requests to the
servers that can charge them (docs/deployment.md). A registered dataset this server
cannot open is named under ``unavailable_datasets``, with the reason.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from infodp.server.deps import service_of
from infodp.server.errors import ApiError, error_responses
from infodp.server.service import API_VERSION

__all__ = ["health", "router"]

router = APIRouter()


@router.get("/v1/health", tags=["service"], responses=error_responses(503))
def health(request: Request) -> dict[str, Any]:
    """Readiness: the service is up and its store is open."""
    # ... and its ledger answers: 503 while it cannot be reached (the module doc).
    svc = service_of(request)
    if not svc.ledger_answers():
        raise ApiError(503, "unavailable", "the ledger cannot be reached; retry", retry_after=1)
    out: dict[str, Any] = {"status": "ok", "api_version": API_VERSION}
    if svc.unopenable:  # registered, but not readable here (infodp.curator.store.availability)
        out["unavailable_datasets"] = svc.unopenable
    return out
