"""The one step of a query that reads the data: noise, bounded aggregate, release.

A :class:`Runner` takes a :class:`~infodp.curator.answer.result.Reservation` (the cost already
durably reserved, or committed with its fsync still to come) and returns the
:class:`~infodp.curator.answer.result.Released` table: it draws the noise (independent of the data,
so before the aggregate), has the backend compute the bounded aggregates, releases every cell
through its rule (:mod:`infodp.curator.release.cells`) and applies the query's free post-processing.
It writes nothing to the ledger, so it may run in another process over the same store
(:mod:`infodp.server.pool`). :class:`~infodp.curator.answer.result.StoreNotOpened` says that the
store could not be opened and nothing of the data was touched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from infodp.curator.answer.result import Released, Reservation, StoreNotOpened
from infodp.curator.backends.base import Backend, ExactAggregates
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.ledger import Ledger
from infodp.curator.plan.nodes import QueryPlan
from infodp.curator.price.book import REMEMBERED
from infodp.curator.price.cost import QueryCost
from infodp.curator.price.layout import Layout
from infodp.curator.release.cells import CellNoise, draw_cell_noise, release
from infodp.curator.release.overlap import background
from infodp.curator.store.connections import Connections, ReadConnection
from infodp.mechanisms.sampling import RandomSource

__all__ = ["Hook", "Runner"]

#: Called with a stage name ("reserved", "aggregated") and the ledger entry (for tests).
Hook = Callable[[str, int], None]


class Runner:
    """Runs reserved queries over one store's engines (see the module docstring)."""

    def __init__(
        self,
        connections: Connections,
        ledger: Ledger,
        source: RandomSource,
        *,
        query_timeout: float | None,
        hook: Hook | None = None,
    ) -> None:
        self.connections, self.ledger, self.source = connections, ledger, source
        self.query_timeout, self.hook = query_timeout, hook
        # Release layouts of priced queries, by (plan, cost, level) identity (see layout).
        self._layouts: dict[tuple[int, int, float], tuple[QueryPlan, QueryCost, Layout]] = {}

    def at(self, stage: str, entry: int) -> None:
        """Tell the hook (if any) that ``entry`` reached ``stage``."""
        if self.hook is not None:
            self.hook(stage, entry)

    def _engine(self, table: str) -> Backend:
        try:
            return self.connections.engine(table)
        except Exception as err:
            raise StoreNotOpened(f"store not opened: {type(err).__name__}") from err

    def _connect(self, engine: Backend) -> ReadConnection:
        try:
            return self.connections.open(engine)
        except Exception as err:
            raise StoreNotOpened(f"store not opened: {type(err).__name__}") from err

    def _aggregate(
        self,
        engine: Backend,
        con: ReadConnection,
        reserved: Reservation,
        deadline: float | None = None,
    ) -> ExactAggregates:
        ms = tuple(p.measurement for p in reserved.cost.parts)
        limit = self.query_timeout
        if deadline is not None:
            limit = deadline if limit is None else min(limit, deadline)
        return engine.aggregate(
            con,
            reserved.plan,
            reserved.schema,
            ms,
            unit_rows_ok=reserved.unit_rows_ok,
            deadline=limit,
        )

    def _noise(self, reserved: Reservation) -> CellNoise | None:
        # With declared keys the released cells are known in advance and the noise does not
        # depend on the data: one exact batch per measurement, drawn before the aggregate.
        plan, cost = reserved.plan, reserved.cost
        if plan.needs_partition_selection:
            return None  # the cells are known only after the selection
        # The declared cells as the release reads them (the layout's list: no copy to match).
        layout = self.layout(plan, reserved.schema, cost, 1 - reserved.confidence)
        return self.draw_noise(plan, cost, layout.keys)

    def _released(
        self, reserved: Reservation, exact: ExactAggregates, drawn: CellNoise | None
    ) -> Released:
        self.at("aggregated", reserved.entry)
        plan, schema, cost = reserved.plan, reserved.schema, reserved.cost
        released = self.release(plan, schema, cost, exact, 1 - reserved.confidence, drawn)
        return reserved.finish(released)

    def run(self, reserved: Reservation, deadline: float | None = None) -> Released:
        """Draw the noise, aggregate the store and release the answer of a reservation;
        ``deadline``: seconds after which the aggregate is interrupted (at most the query
        timeout)."""
        engine = self._engine(reserved.plan.table)
        con = self._connect(engine)
        try:
            drawn = self._noise(reserved)
            exact = self._aggregate(engine, con, reserved, deadline)
            self.connections.done(con)
        except BaseException:
            self.connections.discard(con)
            raise
        return self._released(reserved, exact, drawn)

    def default(self, reserved: Reservation) -> Released:
        """The reservation's default outcome: its release on the empty dataset, with noise
        drawn as for any release. It reads nothing of the data, so its content and the time
        it takes depend on the query and the declaration only (the outcome a predictable
        transaction yields when it overruns its time, Haeberlen, Pierce & Narayan 2011, §5)."""
        return self._released(reserved, ExactAggregates({}, {}), self._noise(reserved))

    def run_overlapped(self, reserved: Reservation) -> Released:
        """:meth:`run` for a reservation whose fsync is still to come: the fsync runs while
        DuckDB aggregates on a helper thread (both release the interpreter lock), the noise is
        drawn before both, and nothing is released before the fsync has returned.

        The reservation was committed before the aggregate started, so the charge survives
        this process dying at any point after it (only a power loss could undo a commit not
        yet fsync'd, and then nothing had left). If the fsync fails, the aggregate is
        interrupted and abandoned (nothing of it is used) and the failure is raised at once,
        without waiting for it: the caller's outcome is the constant failure, at a time that
        does not depend on the data.
        """
        engine = self._engine(reserved.plan.table)
        if engine is not self.connections.backend:
            # Spark runs for seconds (and keeps its own per-thread job state): the fsync
            # first, then the query as the service's workers run it.
            self.ledger.sync()
            return self.run(reserved)
        # The noise is drawn first, not beside the aggregate or after it: interpreter work on
        # this thread while DuckDB runs slows DuckDB's client, and right after the scan the
        # caches are cold (benchmarks/curator_timeline.py). If the fsync below fails, the
        # noise is dropped unseen.
        drawn = self._noise(reserved)
        con = self._connect(engine)
        job = background(lambda: self._aggregate(engine, con, reserved))
        try:
            self.ledger.sync()  # the charge is durable from here on
            exact = job.result()
        except BaseException:
            self.connections.abandon(con, job)
            raise
        self.connections.done(con)
        return self._released(reserved, exact, drawn)

    def draw_noise(
        self, plan: QueryPlan, cost: QueryCost, keys: Sequence[tuple[str, ...]] | None = None
    ) -> CellNoise:
        """Noise for every cell (:func:`~infodp.curator.release.cells.draw_cell_noise`)."""
        return draw_cell_noise(plan, cost, self.source, keys)

    def release(
        self,
        plan: QueryPlan,
        schema: DatasetSchema,
        cost: QueryCost,
        exact: ExactAggregates,
        beta: float,
        noise: CellNoise | None = None,
    ) -> Released:
        """The answer from the exact aggregates (:func:`~infodp.curator.release.cells.release`)."""
        return release(self.layout(plan, schema, cost, beta), cost, exact, self.source, noise)

    def layout(
        self, plan: QueryPlan, schema: DatasetSchema, cost: QueryCost, beta: float
    ) -> Layout:
        """What a release of ``plan`` at level ``beta`` needs that depends on the query only
        (declared keys, positions, half-widths, grid steps): made once per priced query,
        remembered by the identity of its (immutable) plan and cost."""
        slot = (id(plan), id(cost), beta)
        hit = self._layouts.get(slot)
        if hit is not None and hit[0] is plan and hit[1] is cost:
            return hit[2]
        layout = Layout.of(plan, schema, cost, beta)
        if len(self._layouts) >= REMEMBERED:
            self._layouts.clear()
        self._layouts[slot] = (plan, cost, layout)  # the references keep the ids unique
        return layout
