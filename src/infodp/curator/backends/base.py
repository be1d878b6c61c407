"""The backend contract: a typed plan in, bounded exact aggregates out (DuckDB and Spark).

A backend is the only part of the curator that touches the sensitive rows. It

1. **registers** a source: copies the declared columns into a *bounded copy* (values cleaned
   by their null policy, clamped to their bounds and snapped to the release grid of
   :mod:`infodp.curator.plan.grid`) and returns the row count (the data owner's to see, never an
   analyst's) and whether every privacy unit is within ``max_rows_per_unit``;
2. **checks** a plan before the budget is reserved: whatever the engine refuses for the query's
   shape alone (not its data) is refused then, with a data-free message, at no cost;
3. **aggregates**: runs the plan on the bounded copy inside the engine, applies the per-unit
   row and group limits there, and returns only the bounded integer aggregates
   (:class:`ExactAggregates`) to the driver, interrupting the engine at the deadline
   (:class:`QueryDeadline`).

Noise, prices and the ledger are the curator's (:mod:`infodp.curator.release.noise`,
:mod:`infodp.curator.price.cost`, :mod:`infodp.curator.ledger`) and never depend on the backend.

>>> from infodp.curator.backends.duckdb import DuckDBBackend
>>> isinstance(DuckDBBackend(":memory:"), Backend)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import NamedTuple, Protocol, TypeAlias, cast, runtime_checkable

from infodp._engines import names
from infodp._np import np, npt
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.plan.nodes import Measurement, QueryPlan
from infodp.errors import InfodpError

__all__ = [
    "BACKENDS",
    "Backend",
    "ExactAggregates",
    "QueryDeadline",
    "ReadConnection",
    "Registered",
    "SqlValue",
    "StoreInUse",
    "add_histograms",
    "rows_by_key",
    "sorted_histograms",
    "values_by_key",
]

#: One value of an aggregate statement's row as an engine's driver returns it (a group key,
#: an exact integer aggregate, or NULL).
SqlValue: TypeAlias = str | int | float | Decimal | bool | None

#: The backends a dataset may be registered with, the engine registry's names
#: (``infodp._engines``; its ``DEFAULT`` when none is named).
BACKENDS: tuple[str, ...] = names()


@dataclass(frozen=True, slots=True)
class ExactAggregates:
    """Bounded, pre-noise integer aggregates per group (never leaves the engine).

    ``values[group][i]`` is measurement i (None for quantile measurements); ``histograms``
    maps (group, measurement index) of a quantile to a (2, d) array: the group's distinct
    snapped values (grid units, ascending) and how many bounded rows hold each.
    """

    values: dict[tuple[str, ...], tuple[int | None, ...]]
    histograms: dict[tuple[tuple[str, ...], int], npt.NDArray[np.int64]]


class Registered(NamedTuple):
    """What a backend's registration of one table tells the owner: the rows kept, whether
    every unit is within its row limit, and how many rows without an id were left out (the
    id column's ``nulls: drop``; 0 otherwise).

    >>> Registered(10, True, 2).dropped
    2
    """

    rows: int
    unit_ok: bool
    dropped: int = 0


class QueryDeadline(InfodpError):
    """A query ran past its deadline and was interrupted."""


class StoreInUse(InfodpError):
    """Another process kept the store's lock past the wait (no path: this can reach an
    analyst through the service).

    >>> str(StoreInUse(120.0)).split(":")[0]
    'the store is in use by another process (a running infodp serve?)'
    """

    def __init__(self, seconds: float) -> None:
        super().__init__(
            "the store is in use by another process (a running infodp serve?): it kept the "
            f"store's lock for {seconds:g} s; stop that process and retry (register datasets "
            "before serving)"
        )
        self.seconds = seconds


class ReadConnection(Protocol):
    """A backend's read handle as the curator holds it: opaque (only the backend that made it
    runs statements on it, in :meth:`Backend.aggregate`); the curator closes it once its query
    is over."""

    def close(self) -> None: ...


@runtime_checkable
class Backend(Protocol):
    """What the curator needs from an engine (see the module docstring)."""

    def connect(self, *, read_only: bool) -> ReadConnection:
        """A handle for :meth:`aggregate` (it has ``close()``)."""
        ...

    def register(self, name: str, source: object, schema: DatasetSchema) -> Registered:
        """Make the bounded copy of ``source`` as dataset ``name`` (:class:`Registered`)."""
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
        con: ReadConnection,
        plan: QueryPlan,
        schema: DatasetSchema,
        ms: Sequence[Measurement],
        *,
        unit_rows_ok: bool,
        deadline: float | None = None,
    ) -> ExactAggregates:
        """The bounded aggregates of ``plan``; :class:`QueryDeadline` after ``deadline`` s."""
        ...


# -- the layout every backend gives ExactAggregates -------------------------------------------


def rows_by_key(
    rows: Sequence[Sequence[SqlValue]], ng: int
) -> dict[tuple[str, ...], tuple[int, ...]]:
    """``{(str(key), ...): (int(value or 0), ...)}`` of aggregate rows with ``ng`` key
    columns, rows with a NULL key left out (dropped by its null policy, never released);
    column at a time (C-level ``zip``/``map``): a row at a time is slower, after the engine
    has finished and before anything can be released (benchmarks/curator.py).

    >>> rows_by_key([("a", 1, None), (None, 2, 3)], 1)
    {('a',): (1, 0)}
    """
    if not rows:
        return {}
    columns = list(zip(*rows, strict=True))
    if any(None in col for col in columns[:ng]):
        rows = [row for row in rows if None not in row[:ng]]
        if not rows:
            return {}
        columns = list(zip(*rows, strict=True))
    # A column of text (DuckDB's VARCHAR keys) is its own str(): not converted again.
    keys_in = [col if set(map(type, col)) == {str} else map(str, col) for col in columns[:ng]]
    keys: list[tuple[str, ...]] = list(zip(*keys_in, strict=True)) if ng else [()] * len(rows)
    measured = [_ints(col) for col in columns[ng:]]
    return dict(zip(keys, zip(*measured, strict=True), strict=True))


def _ints(col: Sequence[SqlValue]) -> list[int]:
    if None in col:
        return [int(v or 0) for v in col]
    return list(map(int, cast("Sequence[str | int | float | Decimal]", col)))  # no NULL in it


def values_by_key(
    rows: Sequence[Sequence[SqlValue]], ng: int, ms: Sequence[Measurement]
) -> dict[tuple[str, ...], tuple[int | None, ...]]:
    """:func:`rows_by_key` of the aggregate statement's rows (one column per measurement
    of one value per group), with None in each histogram measurement's place.

    >>> values_by_key([("a", 4)], 1, [Measurement("quantile", "x"), Measurement("count_rows")])
    {('a',): (None, 4)}
    """
    plain = rows_by_key(rows, ng)
    if not any(m.kind.histogram for m in ms):
        # A dict of its own (rows_by_key makes a new one): handed over, not copied.
        return cast("dict[tuple[str, ...], tuple[int | None, ...]]", plain)
    out: dict[tuple[str, ...], tuple[int | None, ...]] = {}
    for key, measured in plain.items():
        it = iter(measured)
        out[key] = tuple(None if m.kind.histogram else next(it) for m in ms)
    return out


def sorted_histograms(
    gids: npt.NDArray[np.int64], bins: npt.NDArray[np.int64], counts: npt.NDArray[np.int64]
) -> list[npt.NDArray[np.int64]]:
    """Per group id 1, 2, ...: a (2, d) array of its distinct values (ascending) and counts.

    >>> h = sorted_histograms(np.array([1, 2, 1]), np.array([7, 3, 5]), np.array([1, 2, 3]))
    >>> [x.tolist() for x in h]
    [[[5, 7], [3, 1]], [[3], [2]]]
    """
    if gids.size == 0:
        return []
    order = np.lexsort((bins, gids))
    g, v, c = gids[order], bins[order], counts[order]
    cuts = np.flatnonzero(np.diff(g)) + 1
    return [np.stack([vs, cs]) for vs, cs in zip(np.split(v, cuts), np.split(c, cuts), strict=True)]


def add_histograms(
    out: ExactAggregates,
    index: int,
    width: int,
    key_columns: Sequence[object],
    gids: npt.NDArray[np.int64],
    bins: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int64],
) -> None:
    """Put measurement ``index``'s histogram rows into ``out``: one row per (group, grid
    value) with its count and dense group id ``gids`` (1, 2, ...), ``key_columns`` the key
    columns (arrays or lists, one entry per row); a new group's values are ``width`` Nones.
    A group with a NULL key (dropped by its null policy) is never released."""
    if gids.size == 0:
        return
    per_group = sorted_histograms(gids, bins, counts)
    _, first = np.unique(gids, return_index=True)
    cols = [np.ma.asarray(col)[first].tolist() for col in key_columns]
    for g in range(len(first)):
        raw = [col[g] for col in cols]
        if any(v is None for v in raw):
            continue
        key = tuple(str(v) for v in raw)
        out.histograms[(key, index)] = per_group[g]
        out.values.setdefault(key, (None,) * width)
