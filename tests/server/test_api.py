"""Public surface of the service modules: ``__all__`` lists exactly the public names (as httpx does,
"a test asserts __all__ matches the public names")."""

from __future__ import annotations

import importlib
import inspect

import pytest

MODULES = [
    "infodp.server.app",
    "infodp.server.deps",
    "infodp.server.models",
    "infodp.server.service",
    "infodp.server.routes",
    "infodp.server.routes.admin",
    "infodp.server.routes.budget",
    "infodp.server.routes.datasets",
    "infodp.server.routes.health",
    "infodp.server.routes.queries",
    "infodp.server.routes.synopses",
    "infodp.server.auth",
    "infodp.server.errors",
    "infodp.server.limits",
    "infodp.server.gate",
    "infodp.server.protocol",
    "infodp.server.openapi",
    "infodp.client",
    "infodp.cli.server",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_matches_public_definitions(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(module.__all__)
    assert all(hasattr(module, n) for n in exported)
    defined = {
        n
        for n, obj in vars(module).items()
        if not n.startswith("_")
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and getattr(obj, "__module__", None) == name
    }
    if name == "infodp.cli.server":
        # Click commands are objects, not functions; only COMMANDS is the module's API.
        assert exported == {"COMMANDS"}
        return
    assert defined <= exported, defined - exported


def test_every_route_comes_from_a_router() -> None:
    """create_app only assembles: each /v1 route is defined once, in one router module."""
    from fastapi.routing import APIRoute

    from infodp.server.app import create_app
    from infodp.server.routes import ROUTERS

    paths = create_app().openapi()["paths"]
    served = [(path, method) for path, ops in paths.items() for method in ops]
    routes = [r for router in ROUTERS for r in router.routes if isinstance(r, APIRoute)]
    declared = [(r.path, m.lower()) for r in routes for m in sorted(r.methods)]
    assert served == declared
    assert {r.endpoint.__module__ for r in routes} == {
        f"infodp.server.routes.{m}"
        for m in ("health", "datasets", "budget", "queries", "synopses", "admin")
    }


def test_package_reexports() -> None:
    import infodp.server as server

    for n in server.__all__:
        assert getattr(server, n) is not None
    assert {"create_app", "KeyStore", "ServerSettings", "write_openapi"} <= set(server.__all__)


def test_every_public_callable_has_a_docstring() -> None:
    for name in MODULES[:-1]:
        module = importlib.import_module(name)
        for n in module.__all__:
            obj = getattr(module, n)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                assert obj.__doc__ and obj.__doc__.strip(), f"{name}.{n}"
