"""Every curator module declares ``__all__`` = its public names (as httpx does)."""

from __future__ import annotations

import importlib
import inspect

import pytest

MODULES = [
    "infodp.curator",
    "infodp.curator.declaration.schema",
    "infodp.curator.sql.parse",
    "infodp.curator.plan.nodes",
    "infodp.curator.engine",
    "infodp.curator.request",
    "infodp.curator.answer.render",
    "infodp.curator.session",
    "infodp.curator.ledger",
    "infodp.curator.ledger.accounts",
    "infodp.curator.ledger.charging",
    "infodp.curator.ledger.completions",
    "infodp.curator.ledger.facade",
    "infodp.curator.ledger.flusher",
    "infodp.curator.ledger.grants",
    "infodp.curator.ledger.integrity",
    "infodp.curator.ledger.keys",
    "infodp.curator.ledger.records",
    "infodp.curator.ledger.storage",
    "infodp.curator.ledger.synopses",
    "infodp.curator.release.noise",
    "infodp.curator.price.cost",
    "infodp.curator.plan.grid",
    "infodp.curator.publish.synopsis",
    "infodp.curator.rules.budget_info",
    "infodp.curator.demo",
    "infodp.curator.backends.base",
    "infodp.curator.backends.duckdb",
    "infodp.curator.backends.spark",
    "infodp.curator.backends.spark.backend",
    "infodp.curator.backends.spark.progress",
    "infodp.curator.backends.spark.settings",
    "infodp.curator.backends.spark.writer",
    "infodp.curator.backends.bounding",
    "infodp.curator.backends.compile",
    "infodp.curator.backends.dialects",
    "infodp.cli.curator",
    "infodp.cli.query",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_lists_the_public_names(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(module.__all__)
    assert all(hasattr(module, n) for n in exported)
    if name == "infodp.curator":
        return  # the package re-exports
    defined = {
        n
        for n, obj in vars(module).items()
        if not n.startswith("_")
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and getattr(obj, "__module__", None) == name
    }
    assert defined <= exported, sorted(defined - exported)
