"""The curator: DP SQL over an embedded DuckDB store with a durable privacy ledger.

SQL → immutable plan → cost → ledger reserve → bounded aggregate in DuckDB → exact discrete
noise → answer with confidence intervals, cost and leakage (docs/architecture.md). See
:class:`Curator`.

>>> from infodp.curator import Curator, load_schema, parse_query
>>> s = load_schema({"table": "t", "privacy_unit": "row",
...                  "columns": {"x": {"type": "int", "bounds": [0, 9]}}})
>>> parse_query("SELECT COUNT(*) FROM t", s).table
't'
"""

from __future__ import annotations

import typing as _typing

from infodp._lazy import lazy_exports as _lazy_exports
from infodp.curator.declaration.schema import ColumnSpec, DatasetSchema
from infodp.curator.engine import Curator, QueryCost, QueryResult, plan_cost
from infodp.curator.ledger import Budget, Entry, Ledger
from infodp.curator.plan.nodes import QueryPlan
from infodp.curator.request import Estimate, NoBudget, Priced, Request
from infodp.curator.sql.parse import parse_query
from infodp.curator.store.database import open_store, reinit_ledger

if _typing.TYPE_CHECKING:
    from infodp.curator.declaration.source import load_schema
    from infodp.curator.publish.synopsis import Synopsis
    from infodp.curator.rules.budget_info import (
        discrete_laplace_information,
        gaussian_information,
        laplace_information,
    )

# Imported on first use (infodp._lazy): a query process never builds a synopsis, reads a
# declaration file or prices information on its own.
__getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        "Synopsis": "infodp.curator.publish.synopsis",
        "load_schema": "infodp.curator.declaration.source",
        "discrete_laplace_information": "infodp.curator.rules.budget_info",
        "gaussian_information": "infodp.curator.rules.budget_info",
        "laplace_information": "infodp.curator.rules.budget_info",
    },
)

__all__ = [
    "Budget",
    "ColumnSpec",
    "Curator",
    "DatasetSchema",
    "Entry",
    "Estimate",
    "Ledger",
    "NoBudget",
    "Priced",
    "QueryCost",
    "QueryPlan",
    "QueryResult",
    "Request",
    "Synopsis",
    "discrete_laplace_information",
    "gaussian_information",
    "laplace_information",
    "load_schema",
    "open_store",
    "parse_query",
    "plan_cost",
    "reinit_ledger",
]
