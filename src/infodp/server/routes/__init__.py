"""The service's routes, one router per group of resources (all under ``/v1``).

:data:`ROUTERS` lists them in the order :func:`infodp.server.create_app` includes them, which
is the order of the paths in the OpenAPI document.

>>> [len(r.routes) for r in ROUTERS]
[1, 2, 2, 2, 4, 2]
"""

from __future__ import annotations

from fastapi import APIRouter

from infodp.server.routes import admin, budget, datasets, health, queries, synopses

__all__ = ["ROUTERS"]

#: health, datasets, budget and ledger, queries (estimate, query), synopses, admin.
ROUTERS: tuple[APIRouter, ...] = (
    health.router,
    datasets.router,
    budget.router,
    queries.router,
    synopses.router,
    admin.router,
)
