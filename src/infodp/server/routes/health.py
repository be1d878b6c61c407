"""Readiness of the service (no key)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from infodp.server.deps import service_of
from infodp.server.service import API_VERSION

__all__ = ["health", "router"]

router = APIRouter()


@router.get("/v1/health", tags=["service"])
def health(request: Request) -> dict[str, Any]:
    """Readiness: the service is up and its store is open."""
    service_of(request)
    return {"status": "ok", "api_version": API_VERSION}
