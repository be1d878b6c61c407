"""Publishing a synopsis: one noisy histogram released once, answered from for free.

The non-interactive release of Dwork & Roth (2014, "trusted curator"): the histogram over
declared columns is one ordinary COUNT(*) query, reserved, run and recorded like any other
(its cost is one query's); the noisy counts are stored, unclamped, with the entry that paid for
them, and every later answer from them is post-processing
(:meth:`~infodp.curator.publish.synopsis.Synopsis.answer`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from infodp._exact import float_up
from infodp.curator.answer.result import Released, Reservation
from infodp.errors import InternalError, ParameterError

if TYPE_CHECKING:
    from infodp.curator.answer.result import QueryResult
    from infodp.curator.declaration.schema import DatasetSchema
    from infodp.curator.ledger import Ledger
    from infodp.curator.publish.synopsis import Synopsis
    from infodp.curator.request import NumberInput

__all__ = ["release_synopsis"]


class Curator(Protocol):
    """What a synopsis release asks of the curator (:class:`infodp.curator.engine.Curator`,
    which calls this module: named as a protocol so the imports stay one-way)."""

    @property
    def ledger(self) -> Ledger: ...

    def schema(self, dataset: str) -> DatasetSchema: ...

    def reserve(self, analyst: str, sql: str, *, epsilon: NumberInput) -> Reservation: ...

    def run_reserved(self, reserved: Reservation, deadline: float | None = None) -> Released: ...

    def finish(self, reserved: Reservation, run: Callable[[], Released]) -> QueryResult: ...


def release_synopsis(
    curator: Curator,
    analyst: str,
    name: str,
    dataset: str,
    columns: Sequence[str],
    epsilon: NumberInput,
    run: Callable[[Reservation], Released] | None = None,
) -> Synopsis:
    """Publish a noisy histogram over ``columns`` once (see :meth:`Curator.release_synopsis`)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ParameterError("name", name, "an identifier (letters, digits, _)")
    schema = curator.schema(dataset)
    if schema.is_population:
        tables = ", ".join(m.table for m in schema.members)
        raise ParameterError(
            "dataset",
            dataset,
            f"a single-table dataset (a synopsis is a histogram of one table; the tables of "
            f"population {schema.table} ({tables}) are queried with SQL)",
        )
    # Names are unique per dataset: a collision reveals nothing about other datasets.
    if name in {s["name"] for s in curator.ledger.synopses() if s["dataset"] == schema.table}:
        raise ParameterError("name", name, f"a synopsis name not used yet on {schema.table}")
    cols = [schema.column(c).name for c in columns]
    if not cols or len(set(cols)) != len(cols):
        raise ParameterError("columns", list(columns), "one or more distinct column names")
    from infodp.curator.publish.synopsis import Synopsis, synopsis_keys

    keys = synopsis_keys(schema, cols)
    listed = ", ".join(f'"{c}"' for c in cols)
    sql = f'SELECT {listed}, COUNT(*) AS n FROM "{schema.table}" GROUP BY {listed}'
    reserved = curator.reserve(analyst, sql, epsilon=epsilon)
    release = curator.run_reserved if run is None else run
    result = curator.finish(reserved, lambda: release(reserved))
    # The unclamped noisy counts: clamping each cell at 0 would bias every sum of cells
    # upwards while the synopsis intervals assume zero-mean noise.
    counts = tuple(int(row[0] or 0) for row in result.noisy)
    if len(counts) != math.prod(len(k) for k in keys):
        raise InternalError("synopsis cells do not match the declared keys")
    part = result.cost.parts[0]
    syn = Synopsis(
        name, schema.table, tuple(cols), keys, counts, part.scale, float_up(part.epsilon)
    )
    curator.ledger.save_synopsis(
        name, schema.table, analyst, result.entry_id, syn.to_spec(), {"counts": list(counts)}
    )
    return syn
