"""The backend contract: a typed plan in, bounded exact aggregates out (DuckDB and Spark).

A backend is the only part of the curator that touches the sensitive rows. It

1. **registers** a source: copies the declared columns into a *bounded copy* (values cleaned
   by their null policy, clamped to their bounds and snapped to the release grid of
   :mod:`infodp.curator.grid`) and returns the row count (the data owner's to see, never an
   analyst's) and whether every privacy unit is within ``max_rows_per_unit``;
2. **checks** a plan before the budget is reserved: whatever the engine refuses for the query's
   shape alone (not its data) is refused then, with a data-free message, at no cost;
3. **aggregates**: runs the plan on the bounded copy inside the engine, applies the per-unit
   row and group limits there, and returns only the bounded integer aggregates
   (:class:`ExactAggregates`) to the driver, interrupting the engine at the deadline
   (:class:`QueryDeadline`).

Noise, prices and the ledger are the curator's (:mod:`infodp.curator.release`,
:mod:`infodp.curator.cost`, :mod:`infodp.curator.ledger`) and never depend on the backend.

>>> from infodp.curator.backends.duckdb import DuckDBBackend
>>> isinstance(DuckDBBackend(":memory:"), Backend)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from infodp._lazy import lazy_module
from infodp.curator.plan import Measurement, QueryPlan
from infodp.curator.schema import DatasetSchema
from infodp.errors import InfodpError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
else:
    np = lazy_module("numpy")  # imported on first use: a Laplace query never needs it

__all__ = ["BACKENDS", "Backend", "ExactAggregates", "QueryDeadline"]

#: The backends a dataset may be registered with (``duckdb`` is the default).
BACKENDS: tuple[str, ...] = ("duckdb", "spark")


@dataclass(frozen=True, slots=True)
class ExactAggregates:
    """Bounded, pre-noise integer aggregates per group (never leaves the engine).

    ``values[group][i]`` is measurement i (None for quantile measurements); ``histograms``
    maps (group, measurement index) of a quantile to a (2, d) array: the group's distinct
    snapped values (grid units, ascending) and how many bounded rows hold each.
    """

    values: dict[tuple[str, ...], tuple[int | None, ...]]
    histograms: dict[tuple[tuple[str, ...], int], npt.NDArray[np.int64]]


class QueryDeadline(InfodpError):
    """A query ran past its deadline and was interrupted."""


@runtime_checkable
class Backend(Protocol):
    """What the curator needs from an engine (see the module docstring)."""

    def connect(self, *, read_only: bool) -> Any:
        """A handle for :meth:`aggregate` (it has ``close()``)."""
        ...

    def register(self, name: str, source: Any, schema: DatasetSchema) -> tuple[int, bool]:
        """Make the bounded copy of ``source`` as dataset ``name``; (rows, units within m)."""
        ...

    def drop(self, name: str) -> None:
        """Remove dataset ``name``'s bounded copy (a registration that failed after it)."""
        ...

    def check(
        self,
        plan: QueryPlan,
        schema: DatasetSchema,
        ms: Sequence[Measurement],
        *,
        unit_rows_ok: bool,
    ) -> None:
        """Refuse (ParameterError, data-free) a plan the engine cannot run; reads no data."""
        ...

    def aggregate(
        self,
        con: Any,
        plan: QueryPlan,
        schema: DatasetSchema,
        ms: Sequence[Measurement],
        *,
        unit_rows_ok: bool,
        deadline: float | None = None,
    ) -> ExactAggregates:
        """The bounded aggregates of ``plan``; :class:`QueryDeadline` after ``deadline`` s."""
        ...
