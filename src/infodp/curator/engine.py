"""The curator engine: SQL → plan → cost → ledger reserve → bounded aggregate → noise → answer.

:class:`Curator` ties the pieces of docs/architecture.md's picture together over one store (a
DuckDB file plus its ledger ``<file>.ledger``):

1. :func:`~infodp.curator.sql.parse.parse_query` turns the SQL into an immutable plan (refusals and
   bad input cost nothing);
2. :func:`plan_cost` splits the query's ε evenly over its distinct measurements (sequential
   composition, Dwork & Roth 2014, Thm 3.16); GROUP BY cells are disjoint, so a histogram costs
   the same as one cell (parallel composition, McSherry 2009, Thm 4) with the L1 sensitivity
   of the whole vector (a unit adds at most ``max_rows_per_unit`` rows in total);
3. the ledger reserves (ε, δ) and the information cost (committed *before* the data is
   touched, fsync'd before anything is released) — if opening the store fails the reservation
   is refunded, after that it stays spent;
4. the backend computes the bounded integer aggregates inside DuckDB (in :meth:`Curator.query`
   on a helper thread, while the reservation's fsync runs and the noise is drawn);
5. noise: exact discrete Laplace (counts and grid-snapped sums), the exponential mechanism
   (quantiles), DP partition selection for undeclared GROUP BY keys (Korolova et al. 2009;
   Wilson et al. 2020, "Differentially Private SQL with Bounded User Contribution");
6. the answer carries a confidence interval for every cell (or the quantile's rank error),
   its cost and the :func:`infodp.explain.explain` summary of that cost.

>>> import tempfile, os, pandas as pd
>>> from infodp.mechanisms.sampling import InsecureSeededSource
>>> d = tempfile.mkdtemp()
>>> cur = Curator(os.path.join(d, "store.duckdb"),
...               source=InsecureSeededSource(1, i_understand_this_is_not_private=True))
>>> frame = pd.DataFrame({"age": [30, 40, 50, 60], "region": ["n", "s", "n", "s"]})
>>> _ = cur.register_dataset("people", frame, {"table": "people", "privacy_unit": "row",
...     "columns": {"age": {"type": "int", "bounds": [0, 100]},
...                 "region": {"type": "category", "categories": ["n", "s"]}}})
>>> _ = cur.add_analyst("alice", "people", epsilon=1.0)
>>> r = cur.query("alice", "SELECT region, COUNT(*) FROM people GROUP BY region", epsilon=0.5)
>>> r.columns, [row[0] for row in r.rows], float(r.remaining.remaining_epsilon)
(('region', 'COUNT(*)'), ['n', 's'], 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from infodp._jsonable import JsonObject
from infodp._lazy import lazy_module
from infodp.curator.answer.render import answer_text
from infodp.curator.answer.result import QueryResult, Released, Reservation, StoreNotOpened
from infodp.curator.answer.settlement import Settlement
from infodp.curator.backends.base import ExactAggregates
from infodp.curator.backends.duckdb import DuckDBBackend
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.ledger import Budget, DeclarationChanged, Ledger
from infodp.curator.price.book import PriceBook
from infodp.curator.price.cost import (
    MAX_CELLS,
    MAX_QUANTILE_CELLS,
    PRIVACY_PARAMETER_RANGE,
    MeasurementCost,
    Noise,
    QueryCost,
    as_budget_fraction,
    leakage_of,
    plan_cost,
)
from infodp.curator.relations import resolve
from infodp.curator.release.noise import (
    BufferedCryptoSource,
    require_release_source,
)
from infodp.curator.release.runner import Runner
from infodp.curator.request import (
    Estimate,
    NoBudget,
    NumberInput,
    Planned,
    Priced,
    Request,
    Resolved,
    check_confidence,
)
from infodp.curator.rules import measurements
from infodp.curator.rules.base import ColumnAccuracy
from infodp.curator.sql.parse import parse_query
from infodp.curator.sql.post import inner_sql
from infodp.curator.store.connections import Connections, SparkOptions
from infodp.curator.store.database import open_for_queries
from infodp.curator.store.owner import DataOwner
from infodp.errors import ParameterError
from infodp.mechanisms.sampling import RandomSource

if TYPE_CHECKING:
    import numpy as np

    from infodp.curator.backends.spark import SparkBackend
    from infodp.curator.price import estimate as _estimate
    from infodp.curator.publish import synopsis_release as _synopses
    from infodp.curator.publish import synthetic as _synthetic
    from infodp.curator.publish.synopsis import Synopsis
    from infodp.curator.publish.synthetic import SyntheticOptions
    from infodp.curator.rules.column_accuracy import Accuracy
    from infodp.synthetic.table import SyntheticTable
else:  # imported on first use: a query needs no numpy, synopsis, synthetic table or estimate
    np = lazy_module("numpy")
    _estimate = lazy_module("infodp.curator.price.estimate")
    _synopses = lazy_module("infodp.curator.publish.synopsis_release")
    _synthetic = lazy_module("infodp.curator.publish.synthetic")

__all__ = [
    "MAX_CELLS",
    "MAX_QUANTILE_CELLS",
    "PRIVACY_PARAMETER_RANGE",
    "Curator",
    "Estimate",
    "MeasurementCost",
    "NoBudget",
    "Priced",
    "QueryCost",
    "QueryResult",
    "Released",
    "Request",
    "Reservation",
    "StoreNotOpened",
    "as_budget_fraction",
    "leakage_of",
    "plan_cost",
]


Hook = Callable[[str, int], None]
_T = TypeVar("_T")


class Curator(DataOwner):
    """A DP SQL curator over one store (DuckDB file + ledger).

    ``source``: the randomness for releases — None (default) is the OS CSPRNG; tests may pass
    an :class:`~infodp.mechanisms.sampling.InsecureSeededSource` (explicitly not private).

    ``keep_open``: keep one read-only DuckDB connection for the life of this object (a
    long-running service); by default each query opens and closes its own so that other
    processes can register datasets in between (a writer waits while any reader is open).
    ``one_shot`` (with ``keep_open``): a process that answers one query and exits (``infodp
    query``) opens the store once, for its id and for the answer.
    """

    def __init__(
        self,
        db: str | Path,
        *,
        source: RandomSource | None = None,
        timeout: float = 120.0,
        keep_open: bool = False,
        query_timeout: float | None = 60.0,
        duckdb_threads: int | None = None,
        ledger: str | Path | None = None,
        spark_master: str | None = None,
        spark_conf: Mapping[str, str] | Sequence[str] = (),
        progress: bool = False,
        one_shot: bool = False,
        _hook: Hook | None = None,
    ) -> None:
        # The noise source is checked first: a refused seed must not leave files behind.
        self._source: RandomSource = (
            BufferedCryptoSource() if source is None else require_release_source(source)
        )
        self.db = Path(db)
        self.backend = DuckDBBackend(self.db, timeout=timeout, threads=duckdb_threads)
        # The ledger must be this store's own (one store id in both), sound and present.
        self.ledger: Ledger
        self.ledger, con, known = open_for_queries(
            self.db, self.backend, timeout=timeout, ledger=ledger, one_shot=one_shot and keep_open
        )
        spark_options = SparkOptions(master=spark_master, conf=spark_conf, progress=progress)
        self._connections = Connections(
            self.db, self.backend, keep_open=keep_open, spark_options=spark_options
        )
        self._connections.kept = con
        if known is not None:
            self._connections.remember(known)
        # A one-shot process checks its statements on the connection it answers with (they
        # read no stored data, see DuckDBBackend.check) rather than starting a second DuckDB.
        self._one_shot = con is not None
        if query_timeout is not None and not (
            isinstance(query_timeout, (int, float)) and 0 < query_timeout < math.inf
        ):
            raise ParameterError("query_timeout", query_timeout, "a positive number of seconds")
        self.query_timeout = query_timeout
        # Priced queries, remembered (infodp.curator.price.book).
        self._book = PriceBook(self.ledger)
        # Outcomes recorded in the ledger (infodp.curator.answer.settlement).
        self._settlement = Settlement(self.ledger)
        # The step that reads the data (infodp.curator.release.runner).
        self._runner = Runner(
            self._connections, self.ledger, self._source, query_timeout=query_timeout, hook=_hook
        )

    def spark(self) -> SparkBackend:
        """The Spark backend of this store (made on first use; needs ``infodp[spark]``)."""
        return self._connections.spark()

    def dataset_backend(self, dataset: str) -> str:
        """Which backend holds ``dataset``: ``"duckdb"`` or ``"spark"`` (the store's catalogue)."""
        return self._connections.dataset_backend(dataset)

    def warm(self) -> None:
        """Open the kept read-only connection now (``keep_open``), not during the first query:
        what a service's worker does before it reports ready."""
        self._connections.done(self._connections.open())

    def close(self) -> None:
        """Close the kept DuckDB connection and the ledger connection."""
        self._connections.close()
        self.ledger.close()

    def schema(self, dataset: str) -> DatasetSchema:
        """The declared schema of a registered dataset."""
        return self._book.schema_of(self.ledger.dataset(dataset).schema_json)

    def plan(self, sql: str) -> Planned:
        """The plan of ``sql``, its schema, the declared public row bound and whether a unit's
        rows are bounded (:class:`~infodp.curator.request.Planned`); nothing is spent.

        The row bound is the schema's declaration (``public_rows``/``public_max_rows``), never
        the measured count, which is private.
        """
        inner = inner_sql(sql)  # the aggregate query measured (without HAVING, ORDER BY, …)
        record = self.ledger.dataset(self._book.dataset_of(inner))
        resolved = resolve(inner, self._book.schema_of(record.schema_json))
        schema, unit_ok = resolved.schema, record.unit_rows_ok and not resolved.row_cut
        return Planned(parse_query(resolved.sql, schema), schema, schema.row_bound, unit_ok)

    def exact_aggregates(self, sql: str) -> ExactAggregates:
        """The bounded pre-noise aggregates of ``sql``. NOT PRIVATE: for tests and audits only."""
        plan, schema, _, unit_ok = self.plan(sql)
        engine = self._connections.engine(plan.table)
        con = self._connections.open(engine)
        try:
            return engine.aggregate(con, plan, schema, measurements(plan), unit_rows_ok=unit_ok)
        finally:
            self._connections.done(con)

    # -- one query, one chain of records (infodp.curator.request) ------------------------------
    #
    # Request (parsed once, at the edge: the HTTP route, Session, or the plain-argument methods
    # below) → Resolved (_resolve: dataset, declaration and budget found once) → Priced
    # (PriceBook.priced) → Reservation (_reserve) → Released (Runner) → QueryResult
    # (Settlement). The plain-argument methods parse their arguments into a Request and join
    # the chain; nothing after the parse reads user input again.

    def budget_for(self, analyst: str, sql: str) -> Budget:
        """``analyst``'s budget on the dataset ``sql`` names, looked up before anything else of
        the query: :class:`NoBudget` (the same whether the dataset exists or not, so names of
        others' datasets are not revealed) when they hold none there."""
        inner = inner_sql(sql)
        budgets = self._budgets(analyst)
        try:
            dataset = self._book.dataset_of(inner, among=[b.dataset for b in budgets])
        except KeyError as err:
            raise NoBudget(str(err.args[0]).split(".")[0]) from None
        return next(b for b in budgets if b.dataset.lower() == dataset.lower())

    def _budgets(self, analyst: str) -> list[Budget]:
        return [b for b in self.ledger.budgets(analyst) if b.analyst == analyst]

    def _resolve(
        self, request: Request, analyst: str | None, *, remembered: bool = False
    ) -> Resolved:
        """The dataset ``request`` reads, its declaration and (``analyst``) the analyst's
        budget there, found once; :class:`NoBudget` first when the analyst holds none on it
        (:meth:`PriceBook.resolve <infodp.curator.price.book.PriceBook.resolve>`)."""
        budgets = None if analyst is None else self._budgets(analyst)
        return self._book.resolve(request, budgets, remembered=remembered)

    def price(self, request: Request) -> Priced:
        """Validate completely and price ``request``; nothing is spent and no data is read."""
        return self._book.price(request)

    def estimate_for(self, analyst: str, request: Request) -> Estimate:
        """:meth:`estimate` for ``analyst``: with their budget and whether the query fits it
        (:meth:`infodp.accounting.Accountant.can_spend`, every currency); :class:`NoBudget`
        first when they hold none on its dataset. Nothing is spent."""
        found = self._resolve(request, analyst)
        return _estimate.estimate_of(self._book.priced(found), request.confidence, found.budget)

    def answer(self, analyst: str, request: Request) -> QueryResult:
        """:meth:`query` of a parsed request, :class:`NoBudget` first (before the query is
        planned) when ``analyst`` holds no budget on its dataset."""
        return self._answer(analyst, request, owned=True)

    def reserve_for(self, analyst: str, request: Request) -> Reservation:
        """:meth:`reserve` of a parsed request, :class:`NoBudget` first as in :meth:`answer`."""
        return self._reserve(analyst, request, owned=True, durable=True)

    # -- the query path ------------------------------------------------------------------------

    def query(
        self,
        analyst: str,
        sql: str,
        *,
        epsilon: NumberInput,
        delta: NumberInput = 0,
        confidence: float = 0.95,
        noise: Noise | str = "laplace",
    ) -> QueryResult:
        """Answer ``sql`` with DP noise, charging ``epsilon`` (and ``delta``) to ``analyst``.

        ``noise``: ``"laplace"`` (discrete Laplace, pure ε) or ``"gaussian"`` (the discrete
        Gaussian calibrated to (ε, δ), δ > 0; it composes tightly in the approx, rdp and
        zcdp currencies).

        Raises :class:`~infodp.errors.BudgetExceeded` (nothing released, nothing spent) when
        the analyst's remaining budget or the dataset's information cap is too small.
        """
        req = Request.parse(sql, epsilon=epsilon, delta=delta, confidence=confidence, noise=noise)
        return self._answer(analyst, req, owned=False)

    def _answer(self, analyst: str, request: Request, *, owned: bool) -> QueryResult:
        """The answer of ``request`` (``owned``: resolved among the analyst's datasets, so
        :class:`NoBudget` comes first when they hold none on it)."""
        reserved = self._reserve(analyst, request, owned=owned, durable=False)

        def produce() -> tuple[QueryResult, Callable[[], str]]:
            result = self._settlement.result(reserved, self._runner.run_overlapped(reserved))
            # The ledger's copy is rendered when it is written (by the ledger's background
            # writer, in a batch), from the answer (frozen, summary included).
            return result, lambda: answer_text(result._payload(lists=False))

        return self._settlement.settle(reserved, produce, later=True)

    # The query path in three steps, so that a service can run the middle one (the only one
    # touching the data, and the CPU-heavy one) in a worker process of its own while the
    # ledger stays with the caller: ``reserve`` (validate completely, then reserve durably),
    # ``run_reserved`` (noise, aggregate, release; pure given the reservation) and ``finish``
    # (record the outcome; any failure after the reservation is one constant error).

    def reserve(
        self,
        analyst: str,
        sql: str,
        *,
        epsilon: NumberInput,
        delta: NumberInput = 0,
        confidence: float = 0.95,
        noise: Noise | str = "laplace",
    ) -> Reservation:
        """Validate and price ``sql`` completely, then reserve its cost durably (fsync'd).

        Nothing of the data is touched; a refusal (bad input, :class:`BudgetExceeded`) costs
        nothing. The reservation must then be passed to :meth:`finish`.
        """
        req = Request.parse(sql, epsilon=epsilon, delta=delta, confidence=confidence, noise=noise)
        return self._reserve(analyst, req, owned=False, durable=True)

    def _reserve(
        self, analyst: str, request: Request, *, owned: bool, durable: bool
    ) -> Reservation:
        """:meth:`reserve`; ``durable=False`` leaves the commit's fsync to :meth:`Ledger.sync`
        (:meth:`_run_overlapped` runs it while DuckDB aggregates). ``owned``: as in
        :meth:`_answer`."""
        who = analyst if owned else None
        try:
            resolved = self._resolve(request, who, remembered=True)
            return self._reserve_priced(analyst, resolved, durable=durable)
        except DeclarationChanged:
            # Priced with a declaration the ledger no longer holds (nothing was charged):
            # forget every remembered price and price again from the ledger's declaration.
            self._book.forget()
            return self._reserve_priced(analyst, self._resolve(request, who), durable=durable)

    def _reserve_priced(self, analyst: str, resolved: Resolved, *, durable: bool) -> Reservation:
        priced = self._book.priced(resolved)
        plan, cost = priced.plan, priced.cost
        self._connections.check(priced, on_kept=self._one_shot)
        entry = self.ledger.reserve(
            analyst,
            plan.table,
            resolved.request.sql,
            cost.epsilon,
            cost.delta,
            cost.information_nats,
            profile_spec=priced.profile_spec,
            durable=durable,
            declaration=(priced.schema_json, priced.unit_rows_ok),
        )
        self._runner.at("reserved", entry)
        return Reservation(
            analyst,
            plan,
            priced.schema,
            priced.unit_rows_ok,
            cost,
            priced.leakage,
            resolved.request.confidence,
            entry,
            priced.post,
        )

    def run_reserved(self, reserved: Reservation, deadline: float | None = None) -> Released:
        """Draw the noise, aggregate the store and release the answer of a reservation.

        The only step that reads the data (:class:`~infodp.curator.release.runner.Runner`). It
        writes
        nothing to the ledger, so it may run in another process over the same store
        (:mod:`infodp.server.pool`). Raises :class:`StoreNotOpened` when the store could not be
        opened (nothing was touched). ``deadline``: seconds after which the aggregate is
        interrupted (at most the query timeout).
        """
        return self._runner.run(reserved, deadline)

    def finish(self, reserved: Reservation, run: Callable[[], Released]) -> QueryResult:
        """Run ``run`` (:meth:`run_reserved`, here or elsewhere) and record its outcome.

        After the reservation a failure can depend on the data (a row reaching an expression,
        the time a statement takes): the analyst sees one constant :class:`QueryFailed`,
        whatever its cause, and the charge stays. The cause goes to the ledger only. Only a
        store that could not be opened (:class:`StoreNotOpened`) refunds the reservation.
        """
        return self._settlement.settle(
            reserved, lambda: self._settlement.result_text(reserved, run())
        )

    def finish_json(self, reserved: Reservation, run: Callable[[], str]) -> str:
        """:meth:`finish` for an answer already rendered as JSON text (by :meth:`release_json`,
        typically in a worker process): the same recording, and the text is returned as is."""

        def produce() -> tuple[str, str]:
            text = run()
            return text, text

        return self._settlement.settle(reserved, produce)

    def release_json(self, reserved: Reservation, deadline: float | None = None) -> str:
        """:meth:`run_reserved`, then the answer's payload (``QueryResult.to_dict()``, the
        remaining budget read from the ledger) rendered as strict JSON text."""
        _, text = self._settlement.result_text(reserved, self.run_reserved(reserved, deadline))
        return text

    def default_json(self, reserved: Reservation) -> str:
        """The reservation's default outcome as :meth:`release_json` renders an answer: its
        release on the empty dataset, with fresh noise (the same status, cost and shape as
        any answer of the query). Reads nothing of the data: what the service releases
        when a query overruns its answer time (:mod:`infodp.server.timing`)."""
        _, text = self._settlement.result_text(reserved, self.default_release(reserved))
        return text

    def default_release(self, reserved: Reservation) -> Released:
        """The reservation's default outcome as a release (see :meth:`default_json`)."""
        return self._runner.default(reserved)

    def _priced(
        self,
        sql: str,
        epsilon: NumberInput,
        delta: NumberInput,
        noise: Noise | str,
        confidence: float = 0.95,
    ) -> Priced:
        """Validate completely and price ``sql``: everything here depends on the query and the
        declared schema only, so a refusal (before any reservation) costs nothing."""
        req = Request.parse(sql, epsilon=epsilon, delta=delta, confidence=confidence, noise=noise)
        return self._book.price(req)

    def estimate(
        self,
        sql: str,
        *,
        epsilon: NumberInput,
        delta: NumberInput = 0,
        confidence: float = 0.95,
        noise: Noise | str = "laplace",
    ) -> JsonObject:
        """Cost and accuracy of ``sql`` at ``epsilon`` without spending or reading data.

        Per measurement: the half-width h (in the column's units) with P(|noise| > h) ≤ β =
        1 − confidence for one cell, from the mechanism's own tail; for quantiles the rank
        error of the exponential mechanism (Dwork & Roth 2014, Thm 3.11).
        """
        req = Request.parse(sql, epsilon=epsilon, delta=delta, confidence=confidence, noise=noise)
        return _estimate.estimate_of(self._book.price(req), req.confidence).to_dict()

    def column_accuracy(
        self,
        sql: str,
        *,
        epsilon: NumberInput,
        delta: NumberInput = 0,
        confidence: float = 0.95,
        noise: Noise | str = "laplace",
        rows: int | None = None,
    ) -> list[ColumnAccuracy]:
        """Per aggregate column of ``sql`` at ``epsilon``: ``{"column", "halfwidth"}`` of the
        interval released with it, or ``{"column", "rank_error"}`` for a quantile.

        COUNT and SUM: the mechanism's half-width. AVG, VARIANCE and STDDEV: the widest
        half-width of the released interval (this engine's own) over groups of ``rows`` rows
        whose values lie within the declared bounds (:mod:`infodp.curator.rules.column_accuracy`).
        Nothing is spent and no data is read.
        """
        check_confidence(confidence)
        p = self._priced(sql, epsilon, delta, noise, confidence)
        beta = 1.0 - float(confidence)
        return [a.copy() for a in _estimate.column_accuracy(p.plan, p.schema, p.cost, beta, rows)]

    def epsilon_for(
        self,
        sql: str,
        *,
        accuracy: Accuracy,
        confidence: float = 0.95,
        delta: NumberInput = 0,
        noise: Noise | str = "laplace",
        rows: int | None = None,
    ) -> Fraction:
        """The least ε (to 3 significant digits, rounded up) at which each aggregate column's
        interval, as the analyst reads it, has half-width at most ``accuracy``.

        ``accuracy`` is one target for every aggregate column or ``{column: target}``; the
        target is the half-width in the column's units (COUNT, SUM, AVG, VARIANCE, STDDEV) or a
        quantile's rank error. AVG, VARIANCE and STDDEV intervals depend on the group's size,
        which is private: they are planned for groups of ``rows`` rows (a public assumption;
        the declared ``public_rows`` of an ungrouped query by default), see
        :meth:`column_accuracy`. Accuracy-first planning (as OpenDP's ``summarize(alpha=…)``
        and Tumult's error reports): bisection on ε, as every half-width shrinks when ε grows.
        Nothing is spent and no data is read.
        """
        check_confidence(confidence)
        plan = self._priced(sql, Fraction(1), delta, noise, confidence).plan

        def accuracy_at(eps: Fraction) -> list[ColumnAccuracy]:
            p = self._priced(sql, eps, delta, noise, confidence)
            return _estimate.column_accuracy(plan, p.schema, p.cost, 1.0 - float(confidence), rows)

        return _estimate.least_epsilon(plan.outputs, accuracy, accuracy_at)

    # -- non-interactive release ---------------------------------------------------------------

    def release_synopsis(
        self,
        analyst: str,
        name: str,
        dataset: str,
        columns: Sequence[str],
        *,
        epsilon: NumberInput,
        run: Callable[[Reservation], Released] | None = None,
    ) -> Synopsis:
        """Publish a noisy histogram over ``columns`` once (cost ε), stored as ``name``.

        Later :meth:`query_synopsis` calls answer from it for free (Dwork & Roth 2014).
        ``run``: what releases the reserved histogram (default :meth:`run_reserved` here; the
        service passes one that runs it in a worker process).
        """
        return _synopses.release_synopsis(self, analyst, name, dataset, columns, epsilon, run)

    def synopsis(self, name: str, dataset: str | None = None) -> Synopsis:
        """A stored synopsis (of ``dataset`` when given; names are unique per dataset)."""
        from infodp.curator.publish.synopsis import Synopsis

        _, _, spec, data = self.ledger.synopsis(name, dataset)
        if spec.get("kind") == "synthetic":
            raise ParameterError(
                f"synopsis {name!r} is a synthetic table: read it with synthetic()."
            )
        return Synopsis.from_stored(name, spec, data)

    def query_synopsis(
        self, name: str, sql: str, *, confidence: float = 0.95, dataset: str | None = None
    ) -> dict[str, Any]:
        """Answer ``sql`` from synopsis ``name``: no data access, no cost (post-processing)."""
        check_confidence(confidence)
        if self.ledger.synopsis(name, dataset)[2].get("kind") == "synthetic":
            return _synthetic.load_synthetic(self, name, dataset).answer(sql)
        syn = self.synopsis(name, dataset)
        return syn.answer(sql, self.schema(syn.dataset), confidence)

    def release_synthetic(
        self,
        analyst: str,
        name: str,
        dataset: str,
        *,
        epsilon: NumberInput,
        delta: NumberInput,
        **options: Unpack[SyntheticOptions],
    ) -> SyntheticTable:
        """Release a synthetic table of ``dataset`` once, charging (ε, δ) like one query, stored
        as synopsis ``name`` (SQL over it is then free: :meth:`query_synopsis`). ``options``:
        ``table`` (a population's private table), ``method`` (``"aim"``, default, or
        ``"mst"``), ``columns``, ``workload``, ``bins``, ``rows``
        (:func:`~infodp.curator.publish.synthetic.release_synthetic`)."""
        return _synthetic.release_synthetic(
            self, analyst, name, dataset, epsilon=epsilon, delta=delta, **options
        )

    def synthetic(self, name: str, dataset: str | None = None) -> SyntheticTable:
        """A stored synthetic table (of ``dataset`` when given)."""
        return _synthetic.load_synthetic(self, name, dataset)
