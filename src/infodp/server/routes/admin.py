"""Admin routes (admin token only; never key management)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from infodp.server.deps import AUTH, Admin, guard, json_response, service_of
from infodp.server.errors import error_responses

__all__ = ["admin_keys", "admin_ledger", "router"]

router = APIRouter()


@router.get("/v1/admin/ledger", tags=["admin"], responses=error_responses(*AUTH, 403))
def admin_ledger(request: Request, _admin: Admin) -> JSONResponse:
    """The whole ledger: every budget and entry, and whether it is consistent."""
    led = service_of(request).curator.ledger
    return json_response(
        {
            "budgets": [b.to_dict() for b in guard("admin", led.budgets)],
            "entries": [e.to_dict() for e in guard("admin", led.entries)],
            "problems": guard("admin", led.check),
        }
    )


@router.get("/v1/admin/keys", tags=["admin"], responses=error_responses(*AUTH, 403))
def admin_keys(request: Request, _admin: Admin) -> JSONResponse:
    """Issued server key ids per analyst (never secrets or hashes)."""
    ks = service_of(request).keys
    return json_response({"keys": [k.to_dict() for k in guard("admin", ks.keys)]})
