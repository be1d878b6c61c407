"""``infodp.Session``: DP SQL over a DataFrame in memory, with nothing written to disk.

A session is a :class:`~infodp.curator.engine.Curator` over an in-memory DuckDB store and an
in-memory SQLite ledger, holding one table (the frame) and one analyst (you) with a total
budget (ε, δ). Each :meth:`Session.query` charges its ε to that budget under the same ledger
rules as the curator (reserve before touching the data; refuse, spending nothing, when the
budget would be exceeded) and returns the curator's
:class:`~infodp.curator.engine.QueryResult` (``.to_pandas()``, ``.to_polars()``).

``ledger=PATH`` keeps the budget in a ledger file instead, so it survives the process: a new
session over the same data, schema and ledger continues where the last one stopped.
``budget=`` takes an :class:`infodp.accounting.Budget` in any currency instead of (ε, δ), and
``noise="gaussian"`` answers with the discrete Gaussian; :meth:`Session.estimate`,
:meth:`Session.epsilon_for` and the synopses (:meth:`Session.release_synopsis`,
:meth:`Session.query_synopsis`) are the curator's, for the session's table and budget.

>>> import pandas as pd
>>> df = pd.DataFrame({"region": ["north", "south"] * 50, "age": range(100)})
>>> schema = {"table": "people", "privacy_unit": "row", "columns": {
...     "region": {"type": "category", "categories": ["north", "south"]},
...     "age": {"type": "int", "bounds": [0, 120]}}}
>>> s = Session(df, schema, epsilon=1.0)
>>> r = s.query("SELECT region, COUNT(*) FROM people GROUP BY region", epsilon=0.5)
>>> list(r.to_pandas().columns)
['region', 'COUNT(*)', 'COUNT(*)_low', 'COUNT(*)_high']
>>> s.remaining_epsilon
0.5
>>> s.estimate("SELECT COUNT(*) FROM people", epsilon=0.5).fits
True
>>> s.estimate("SELECT COUNT(*) FROM people", epsilon=0.6).fits
False
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Unpack

from infodp._engines import DEFAULT, engine
from infodp._exact import float_down
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.declaration.source import SchemaSource, load_schema
from infodp.curator.engine import Curator, QueryResult, as_budget_fraction
from infodp.curator.request import Estimate, NoBudget, NumberInput, Request
from infodp.curator.store.database import fingerprint
from infodp.curator.store.registration import content_fingerprint, copy_population
from infodp.errors import ParameterError

if TYPE_CHECKING:
    from infodp._jsonable import JsonValue
    from infodp.accounting.accountant import Budget
    from infodp.curator.ledger import Budget as BudgetRecord
    from infodp.curator.ledger import DatasetRecord
    from infodp.curator.price.cost import Noise
    from infodp.curator.publish.synopsis import Synopsis
    from infodp.curator.publish.synthetic import SyntheticOptions
    from infodp.mechanisms.sampling import RandomSource
    from infodp.synthetic.table import SyntheticTable

__all__ = ["ArrowFrame", "DataSource", "Session"]

#: The analyst a session queries as (its budget is the session's budget).
SESSION_ANALYST = "session"


class ArrowFrame(Protocol):
    """A pandas or polars DataFrame or an Arrow table: all three export their columns through
    the Arrow PyCapsule stream interface (``__arrow_c_stream__``)."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...


#: What a session reads: a frame, or a CSV or Parquet file's path (with ``backend="spark"``
#: also a table in Spark's catalogue).
DataSource = ArrowFrame | str | Path
#: What a session over a population reads: each of its tables' source, by table.
PopulationSource = Mapping[str, DataSource]


class Session:
    """Differentially private SQL over in-memory tables with a total budget (ε, δ).

    ``data``: a pandas or polars DataFrame or an Arrow table; for a population (a schema
    with ``tables:``), a dict from each of its tables to its frame. ``schema``: the declaration of
    ``docs/curator.md`` as a dict, YAML text or a file path (its ``table`` is the name used in
    SQL; ``name`` overrides it). ``epsilon``/``delta``: the total budget of this session
    (basic composition), or ``budget``: an :class:`infodp.accounting.Budget` in any currency
    (``Budget.approx``, ``Budget.zcdp``, ``Budget.rdp``, ...), enforced by its accountant.
    ``ledger``: a path to keep the budget durably (default: in memory, gone with the session).
    ``source``: the randomness (default: the OS CSPRNG).
    ``backend="spark"``: the frame (or a Parquet path / Spark table name) is bounded and
    queried by Apache Spark (``pip install 'infodp[spark]'``); its bounded copy goes to
    ``bounded_path`` (default: a new private temporary directory). Only with a ledger in
    memory: a durable ledger's data are re-registered into the in-memory DuckDB store.
    ``same_population_as``/``independent``: the owner's declaration of the new table's
    budgets in a durable ledger that holds other datasets (see
    ``Curator.register_dataset``).
    """

    def __init__(
        self,
        data: DataSource | PopulationSource,
        schema: SchemaSource,
        *,
        epsilon: NumberInput | None = None,
        delta: NumberInput = 0,
        budget: Budget | None = None,
        ledger: str | Path | None = None,
        name: str | None = None,
        source: RandomSource | None = None,
        backend: str = DEFAULT.name,
        bounded_path: str | Path | None = None,
        same_population_as: str | None = None,
        independent: bool = False,
    ) -> None:
        parsed = load_schema(schema)
        #: The temporary directory of a Spark bounded copy (removed by :meth:`close`).
        self._scratch: Path | None = None
        if not engine(backend).in_store and ledger is not None:
            raise ParameterError(
                "ledger",
                str(ledger),
                f"None with backend={backend!r} (use a Curator over a store)",
            )
        self.table = name or parsed.table
        self._curator = Curator(
            ":memory:", source=source, ledger=":memory:" if ledger is None else ledger
        )
        basic = _basic_budget(epsilon, delta, budget)
        known = {d.name: d for d in self._curator.ledger.datasets()}
        if self.table not in known:
            self._register(data, parsed, backend, bounded_path, (same_population_as, independent))
            self._grant(budget, basic)
        else:
            # A durable ledger from an earlier session: same table, same declaration, same
            # public row count, same total budget; the data go into the fresh in-memory store.
            self._check_resumed(data, parsed, known[self.table], ledger)
            self._check_budget(budget, basic, (epsilon, delta), ledger)

    def _register(
        self,
        data: DataSource | PopulationSource,
        parsed: DatasetSchema,
        backend: str,
        bounded_path: str | Path | None,
        declared: tuple[str | None, bool] = (None, False),
    ) -> None:
        """Register ``data`` as the session's table (a Spark copy in a new private directory
        unless ``bounded_path`` is given), with the owner's declaration of its budgets
        (``same_population_as``, ``independent``: see ``Curator.register_dataset``)."""
        if not engine(backend).in_store and bounded_path is None:
            import tempfile

            self._scratch = Path(tempfile.mkdtemp(prefix="infodp-"))
            bounded_path = self._scratch / self.table
        self._curator.register_dataset(
            self.table,
            data,
            parsed.to_dict(),
            backend=backend,
            bounded_path=bounded_path,
            same_population_as=declared[0],
            independent=declared[1],
        )

    def _check_resumed(
        self,
        data: DataSource | PopulationSource,
        parsed: DatasetSchema,
        record: DatasetRecord,
        ledger: str | Path | None,
    ) -> None:
        """The ledger's table has this declaration and these data (registered afresh into the
        in-memory store)."""
        if parsed.is_population:
            self._check_resumed_population(data, parsed, record, ledger)
            return
        wanted = json.loads(self._curator.schema(self.table).to_json())
        declared = dict(parsed.to_dict(), table=self.table)
        if json.loads(json.dumps(declared)) != wanted:
            raise ParameterError(
                "schema", self.table, f"the schema recorded in the ledger {ledger}"
            )
        table_schema = self._curator.schema(self.table)
        rows = self._curator.backend.register(self.table, data, table_schema).rows
        # Same data: the fingerprint of the bounded table (older ledgers: the row count).
        # Neither figure is shown: the message is the same whatever the data hold.
        same = (
            rows == record.rows
            if record.fingerprint is None
            # As registration computed it: the declared schema (its column order).
            else fingerprint(
                self._curator.backend, self.table, dataclasses.replace(parsed, table=self.table)
            )
            == record.fingerprint
        )
        if not same:
            raise ParameterError(
                "data", "other rows or values", f"the data recorded in the ledger {ledger}"
            )

    def _check_resumed_population(
        self,
        data: object,
        parsed: DatasetSchema,
        record: DatasetRecord,
        ledger: str | Path | None,
    ) -> None:
        """:meth:`_check_resumed` for a population: its tables copied afresh, then the same
        declaration (public facts included) and the same private content."""
        store = self._curator.backend
        named = dataclasses.replace(parsed, table=self.table)
        copied = copy_population(store, store, self.table, data, named, None)
        if copied.schema.to_json() != self._curator.schema(self.table).to_json():
            raise ParameterError(
                "schema", self.table, f"the schema recorded in the ledger {ledger}"
            )
        if content_fingerprint(store, store, self.table, copied.schema) != record.fingerprint:
            raise ParameterError(
                "data", "other rows or values", f"the data recorded in the ledger {ledger}"
            )

    def _grant(self, budget: Budget | None, basic: tuple[Fraction, Fraction]) -> None:
        """The session's analyst gets its budget: ``budget``, or (ε, δ) under basic
        composition."""
        if budget is None:
            self._curator.add_analyst(SESSION_ANALYST, self.table, epsilon=basic[0], delta=basic[1])
        else:
            self._curator.add_analyst(SESSION_ANALYST, self.table, budget=budget)

    def _check_budget(
        self,
        budget: Budget | None,
        basic: tuple[Fraction, Fraction],
        given: tuple[NumberInput | None, NumberInput],
        ledger: str | Path | None,
    ) -> None:
        """The ledger holds the session's budget: ``budget`` (its accountant's budget, same
        currency) or, without one, (ε, δ) ``basic`` under basic composition."""
        from infodp.accounting.accountant import Accountant

        stored = self._budget()
        if budget is not None:
            kept = stored.accountant_json
            if kept is None or Accountant.from_json(kept).budget != budget:
                raise ParameterError(
                    "budget", budget, f"the budget recorded in {ledger} ({stored.currency})"
                )
        elif (stored.epsilon, stored.delta) != basic or stored.currency != "basic":
            raise ParameterError(
                "epsilon/delta",
                f"({given[0]}, {given[1]})",
                f"the budget recorded in {ledger}: ({stored.epsilon}, {stored.delta})",
            )

    def query(
        self,
        sql: str,
        *,
        epsilon: NumberInput,
        delta: NumberInput = 0,
        confidence: float = 0.95,
        noise: Noise | str = "laplace",
    ) -> QueryResult:
        """Answer ``sql`` with DP noise, charging ``epsilon`` (and ``delta``) to the session.

        ``noise``: ``"laplace"`` (pure ε) or ``"gaussian"`` (the discrete Gaussian, (ε, δ)
        with δ > 0). Raises :class:`~infodp.errors.BudgetExceeded` (nothing released, nothing
        spent) when the remaining budget is too small.
        """
        request = _request(sql, epsilon, delta, confidence, noise)
        try:
            return self._curator.answer(SESSION_ANALYST, request)
        except NoBudget as err:
            raise self._unknown_table(err.dataset) from None

    def estimate(
        self,
        sql: str,
        *,
        epsilon: NumberInput,
        delta: NumberInput = 0,
        confidence: float = 0.95,
        noise: Noise | str = "laplace",
    ) -> Estimate:
        """Cost, accuracy and whether ``sql`` fits what is left (the accountant's dry run, in
        the session's currency); nothing is spent, no data is read.

        >>> import pandas as pd
        >>> s = Session(pd.DataFrame({"x": [1, 2, 3]}), {"table": "t", "privacy_unit": "row",
        ...     "columns": {"x": {"type": "int", "bounds": [0, 9]}}}, epsilon=1)
        >>> e = s.estimate("SELECT COUNT(*) FROM t", epsilon="0.25")
        >>> e.fits, e.cost["epsilon"], s.remaining_epsilon
        (True, 0.25, 1.0)
        """
        request = _request(sql, epsilon, delta, confidence, noise)
        try:
            return self._curator.estimate_for(SESSION_ANALYST, request)
        except NoBudget as err:
            raise self._unknown_table(err.dataset) from None

    def _unknown_table(self, name: str) -> ParameterError:
        """The refusal of a name that is not the session's table (the session holds one
        dataset, its own: naming it reveals nothing).

        >>> import pandas as pd
        >>> s = Session(pd.DataFrame({"x": [1, 2, 3]}), {"table": "t", "privacy_unit": "row",
        ...     "columns": {"x": {"type": "int", "bounds": [0, 9]}}}, epsilon=1)
        >>> s.query("SELECT COUNT(*) FROM tt", epsilon=0.1)
        Traceback (most recent call last):
        ...
        infodp.errors.ParameterError: unknown table 'tt'; the session's table is 't'.
        """
        members = [m.table for m in self._curator.schema(self.table).members]
        if members:
            return ParameterError(
                f"unknown table {name!r}; the session's tables: {', '.join(members)} "
                f"(also written {self.table}.{members[0]})."
            )
        return ParameterError(f"unknown table {name!r}; the session's table is {self.table!r}.")

    def epsilon_for(
        self,
        sql: str,
        *,
        accuracy: NumberInput | Mapping[str, NumberInput],
        confidence: float = 0.95,
        delta: NumberInput = 0,
        noise: Noise | str = "laplace",
    ) -> Fraction:
        """The least ε (3 significant digits, rounded up) at which every non-quantile
        measurement of ``sql`` has a half-width of at most ``accuracy``
        (:meth:`Curator.epsilon_for`); nothing is spent.

        >>> import pandas as pd
        >>> s = Session(pd.DataFrame({"x": [1, 2, 3]}), {"table": "t", "privacy_unit": "row",
        ...     "columns": {"x": {"type": "int", "bounds": [0, 9]}}}, epsilon=1)
        >>> eps = s.epsilon_for("SELECT COUNT(*) FROM t", accuracy=10)
        >>> s.estimate("SELECT COUNT(*) FROM t", epsilon=eps).accuracy[0]["halfwidth"] <= 10
        True
        """
        return self._curator.epsilon_for(
            sql, accuracy=accuracy, confidence=confidence, delta=delta, noise=noise
        )

    def release_synopsis(
        self, name: str, columns: Sequence[str], *, epsilon: NumberInput
    ) -> Synopsis:
        """Publish a noisy histogram of the session's table over ``columns`` once (cost ε);
        :meth:`query_synopsis` then answers from it for free (post-processing)."""
        return self._curator.release_synopsis(
            SESSION_ANALYST, name, self.table, columns, epsilon=epsilon
        )

    def query_synopsis(
        self, name: str, sql: str, *, confidence: float = 0.95
    ) -> dict[str, JsonValue]:
        """Answer ``sql`` from synopsis ``name``: no data access, no cost.

        >>> import pandas as pd
        >>> s = Session(pd.DataFrame({"g": ["a", "b"] * 50}), {"table": "t",
        ...     "privacy_unit": "row", "columns": {"g": {"type": "category",
        ...     "categories": ["a", "b"]}}}, epsilon=1)
        >>> _ = s.release_synopsis("hist", ["g"], epsilon="0.5")
        >>> s.remaining_epsilon
        0.5
        >>> _ = s.query_synopsis("hist", "SELECT g, COUNT(*) FROM t GROUP BY g")
        >>> s.remaining_epsilon
        0.5
        """
        return self._curator.query_synopsis(name, sql, confidence=confidence, dataset=self.table)

    def synthesize(
        self,
        name: str,
        *,
        epsilon: NumberInput,
        delta: NumberInput,
        **options: Unpack[SyntheticOptions],
    ) -> SyntheticTable:
        """Release a synthetic table of the session's table once (cost (ε, δ)); SQL over it is
        then free (:meth:`query_synopsis`). ``options`` as :meth:`Curator.release_synthetic`.

        >>> import pandas as pd
        >>> s = Session(pd.DataFrame({"g": ["a", "b"] * 50}), {"table": "t",
        ...     "privacy_unit": "row", "columns": {"g": {"type": "category",
        ...     "categories": ["a", "b"]}}}, epsilon=2, delta=1e-5)
        >>> t = s.synthesize("fake", epsilon=1, delta=1e-6, method="mst")
        >>> s.remaining_epsilon, list(t.to_frame().columns)
        (1.0, ['g'])
        """
        return self._curator.release_synthetic(
            SESSION_ANALYST, name, self.table, epsilon=epsilon, delta=delta, **options
        )

    @property
    def remaining_epsilon(self) -> float:
        """ε left (rounded down)."""
        return float_down(self._budget().remaining_epsilon)

    @property
    def remaining_delta(self) -> float:
        """δ left (rounded down)."""
        return float_down(self._budget().remaining_delta)

    def _budget(self) -> BudgetRecord:
        return self._curator.ledger.budget(SESSION_ANALYST, self.table)

    def close(self) -> None:
        """Release the in-memory store and the ledger connection (and delete a Spark bounded
        copy made in a temporary directory)."""
        self._curator.close()
        if self._scratch is not None:
            import shutil

            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def __repr__(self) -> str:
        from infodp._format import format_number

        # No row count: the number of rows is a private fact unless declared public.
        b = self._budget()
        where = "in memory" if self._curator.ledger.in_memory else str(self._curator.ledger.path)
        if b.currency != "basic":
            return f"Session({self.table}: {_accountant_left(b)}, ledger {where})"
        left = format_number(float(b.remaining_epsilon))
        total = format_number(float(b.epsilon))
        d = "" if b.delta == 0 else f", δ {format_number(float(b.remaining_delta))} left"
        return f"Session({self.table}: ε {left} of {total} left{d}, ledger {where})"


def _accountant_left(budget: BudgetRecord) -> str:
    """What an accountant budget holds and has left, as its own currency states them (the
    basic (ε, δ) totals of such a budget are informational zeros)."""
    from infodp._format import format_number

    shown = budget.to_dict().get("accountant")
    if not isinstance(shown, dict):
        return budget.currency
    given = shown.get("budget")
    terms = given.items() if isinstance(given, dict) else ()
    params = ", ".join(
        f"{k} {format_number(v) if isinstance(v, (int, float)) else v}"
        for k, v in terms
        if k != "currency"
    )
    rest = _left_text(shown.get("remaining"))
    return f"{budget.currency} budget ({params})" + (f", {rest}" if rest else "")


def _left_text(left: object) -> str:
    """What an accountant reports as left: a number, ε spent at δ (approx), or per order."""
    from infodp._format import format_number

    if isinstance(left, (int, float)):
        return f"{format_number(left)} left"
    if not isinstance(left, dict):
        return ""
    if isinstance(left.get("epsilon_spent"), (int, float)):
        return f"ε {format_number(left['epsilon_spent'])} spent at δ {left.get('delta')}"
    pairs = (f"{k}: {format_number(v)}" for k, v in left.items() if isinstance(v, (int, float)))
    return "left per order " + ", ".join(pairs)


def _request(
    sql: str, epsilon: NumberInput, delta: NumberInput, confidence: float, noise: Noise | str
) -> Request:
    """The session's query as the curator's request (parsed once, by :meth:`Request.parse`)."""
    return Request.parse(sql, epsilon=epsilon, delta=delta, confidence=confidence, noise=noise)


def _basic_budget(
    epsilon: NumberInput | None, delta: NumberInput, budget: Budget | None
) -> tuple[Fraction, Fraction]:
    """(ε, δ) exactly, when the session's budget is given as ``epsilon``/``delta`` ((0, 0)
    with a ``budget``); exactly one of ``epsilon`` and ``budget`` is required."""
    if (budget is None) == (epsilon is None):
        raise ParameterError("epsilon/budget", None, "exactly one of epsilon and budget")
    if budget is not None:
        return (Fraction(0), Fraction(0))
    return (
        as_budget_fraction("epsilon", epsilon, allow_zero=True),
        as_budget_fraction("delta", delta, allow_zero=True),
    )
