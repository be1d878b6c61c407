"""The datasets an analyst may learn about: declared public metadata only."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from infodp.curator.declaration.schema import DatasetSchema
from infodp.server.deps import AUTH, Analyst, guard, json_response, service_of
from infodp.server.errors import ApiError, error_responses
from infodp.server.service import Service

__all__ = ["dataset", "datasets", "router"]

router = APIRouter()


@router.get("/v1/datasets", tags=["datasets"], responses=error_responses(*AUTH))
def datasets(request: Request, who: Analyst) -> JSONResponse:
    """The datasets the caller holds a budget on, with their declared public metadata."""
    svc = service_of(request)
    mine = _my_datasets(svc, who.analyst)
    records = guard("datasets", svc.curator.ledger.datasets)
    return json_response({"datasets": [_dataset_view(r) for r in records if r.name in mine]})


@router.get("/v1/datasets/{name}", tags=["datasets"], responses=error_responses(*AUTH, 404))
def dataset(request: Request, name: str, who: Analyst) -> JSONResponse:
    """One dataset's declared public metadata (only where the caller holds a budget)."""
    svc = service_of(request)
    mine = _my_datasets(svc, who.analyst)
    for r in guard("dataset", svc.curator.ledger.datasets):
        if r.name.lower() == name.lower() and r.name in mine:
            return json_response(_dataset_view(r))
    # Same answer whether it does not exist or the caller has no budget on it.
    raise ApiError(404, "not_found", f"no dataset {name[:80]!r} among your datasets")


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
        # The most rows one individual may have in any relation a query builds (declared, or
        # the default): a query over it is refused for free.
        "max_derived_rows_per_unit": DatasetSchema.from_dict(schema).work_limit,
        "schema": schema,
        "info_cap_bits": record.info_cap_bits,
    }


def _my_datasets(svc: Service, analyst: str) -> set[str]:
    """The datasets ``analyst`` holds a budget on (the only ones they may learn about)."""
    return {
        b.dataset for b in guard("datasets", svc.curator.ledger.budgets) if b.analyst == analyst
    }
