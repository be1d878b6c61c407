"""The curator's price book: a query validated completely and priced once, then remembered.

Pricing depends on the query's text, the exact (ε, δ), the noise family and the dataset's
declaration only (never on the data), and every piece of it is immutable, so a repeated query
is priced once: parse (:func:`~infodp.curator.sql.parse_query`), cost
(:func:`~infodp.curator.cost.plan_cost`), privacy summary (:func:`~infodp.curator.cost.leakage_of`).
Refusals are never remembered.

>>> from infodp.curator.ledger import Ledger
>>> from fractions import Fraction
>>> book = PriceBook(Ledger(":memory:"))
>>> book.price("SELECT COUNT(*) FROM t", Fraction(1), 0, "laplace", 0.95)
Traceback (most recent call last):
...
infodp.errors.ParameterError: unknown dataset 't'; registered: none.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from fractions import Fraction
from typing import Any

from infodp.curator.cost import Noise, QueryCost, leakage_of, plan_cost, selection
from infodp.curator.datasets import find_dataset
from infodp.curator.ledger import Ledger
from infodp.curator.plan import QueryPlan
from infodp.curator.post import PostProcess, split_query
from infodp.curator.relations import Resolved, resolve, tables_read
from infodp.curator.request import NumberInput, Request
from infodp.curator.schema import DatasetSchema
from infodp.curator.sql import parse_query
from infodp.errors import ParameterError

__all__ = ["REMEMBERED", "PriceBook", "PricedQuery", "copy_summary", "require_finite"]

#: How many priced queries a price book remembers (then it starts afresh).
REMEMBERED = 256
#: The argument types a reservation's price is remembered by as given (exact types: a bool
#: is refused as ε by the first pricing and never stands for 1 here; equal values of these
#: types are the same exact number, so they may share a price).
_PLAIN = frozenset({str, int, float, Fraction, Noise})
#: A query's arguments as given: SQL, ε, δ, noise, confidence.
_Arguments = tuple[str, NumberInput, NumberInput, Noise | str, float]


class PricedQuery:
    """A validated, priced query; ``checked`` once its compiled statements passed the
    backend's data-free check (the one mutable part, so a repeated query is checked once)."""

    __slots__ = (
        "checked",
        "cost",
        "leak",
        "plan",
        "post",
        "profile_spec",
        "rows",
        "schema",
        "schema_json",
        "unit_ok",
    )

    def __init__(
        self,
        plan: QueryPlan,
        schema: DatasetSchema,
        rows: int | None,
        unit_ok: bool,
        cost: QueryCost,
        leak: dict[str, Any],
        schema_json: str,
        post: PostProcess | None = None,
    ) -> None:
        self.plan, self.schema, self.rows, self.unit_ok = plan, schema, rows, unit_ok
        #: What is computed from the released table afterwards (HAVING, ORDER BY, …), if any.
        self.post = post
        #: The dataset's declaration as the ledger stores it (checked at each reservation).
        self.schema_json = schema_json
        self.cost, self.leak = cost, leak
        # As the ledger stores it (json.dumps of the spec), made once per priced query.
        self.profile_spec = json.dumps(cost.profile_spec())
        self.checked = False


class PriceBook:
    """Priced queries remembered per (SQL text, exact ε and δ, noise, dataset declaration)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._schemas: dict[str, DatasetSchema] = {}
        self._prices: dict[tuple[object, ...], PricedQuery] = {}
        self._tables: dict[str, str] = {}
        self._datasets: dict[str, tuple[str, ...]] | None = None
        # Priced queries by their raw arguments, for reservations (see price).
        self._fast: dict[tuple[object, ...], PricedQuery] = {}

    def schema_of(self, schema_json: str) -> DatasetSchema:
        """The schema a dataset's stored declaration holds (parsed once per text)."""
        cached = self._schemas.get(schema_json)
        if cached is None:
            # The store's own record, validated by load_schema when it was registered.
            cached = self._schemas[schema_json] = DatasetSchema.from_dict(json.loads(schema_json))
        return cached

    def dataset_of(self, sql: str, among: Collection[str] | None = None) -> str:
        """The registered dataset the query ``sql`` reads (:mod:`infodp.curator.datasets`);
        ``among``: only these datasets are considered (an analyst's), and a name outside
        them raises ``KeyError`` (the caller says the analyst holds no budget there)."""
        names = tables_read(sql)
        for fresh in (False, True):
            tables = self._dataset_tables(fresh)
            if among is not None:
                wanted = {a.lower() for a in among}
                tables = {k: v for k, v in tables.items() if k.lower() in wanted}
            try:
                return find_dataset(names, tables)
            except KeyError as err:
                missing = str(err.args[0])
        if among is not None:
            raise KeyError(missing)
        record = self.ledger.dataset(missing.split(".")[0])  # an unknown dataset: its error
        members = self._dataset_tables(False).get(record.name, ())
        known = (
            f"{record.name}'s tables: {', '.join(members)}"
            if members
            else f"dataset {record.name!r} is one table, read as {record.name} "
            f"(or {record.name}.{record.name})"
        )
        raise ParameterError(f"unknown table {missing!r}; {known}.")

    def _dataset_tables(self, fresh: bool) -> dict[str, tuple[str, ...]]:
        """Each registered dataset's tables (a single table: none), read once and again when
        a name is not found (a dataset registered since)."""
        if fresh or self._datasets is None:
            self._datasets = {
                r.name: tuple(m.table for m in self.schema_of(r.schema_json).members)
                for r in self.ledger.datasets()
            }
        return self._datasets

    def forget(self) -> None:
        """Forget every remembered price (the ledger holds a declaration they did not use)."""
        self._prices.clear()
        self._fast.clear()

    def price(
        self,
        sql: str,
        epsilon: NumberInput,
        delta: NumberInput,
        noise: Noise | str,
        confidence: float,
        *,
        reserving: bool = False,
    ) -> PricedQuery:
        """Validate completely and price ``sql``; remembered, refusals never.

        ``reserving``: the caller reserves the result with the declaration it was priced with
        (``Ledger.reserve(declaration=...)``, checked inside the reservation's transaction),
        so a query already priced with the same arguments (plain str, int, float, Fraction;
        validated when first priced) is answered from memory without reading the dataset's
        declaration from the ledger: the first work after an aggregate runs with cold caches,
        where a SQLite read and the parsing of ε and δ are slow (BENCHMARKS.md,
        curator_timeline).
        """
        raw: _Arguments = (sql, epsilon, delta, noise, confidence)
        fast = reserving and all(type(x) in _PLAIN for x in raw)
        if fast:
            known = self._fast.get(raw)
            if known is not None:
                return known
        priced = self._price_anew(raw)
        if fast:
            if len(self._fast) >= REMEMBERED:
                self._fast.clear()
            self._fast[raw] = priced
        return priced

    def _price_anew(self, raw: _Arguments) -> PricedQuery:
        """:meth:`price` from the arguments and the declaration read from the ledger."""
        sql, epsilon, delta, noise, confidence = raw
        req = Request.parse(sql, epsilon=epsilon, delta=delta, confidence=confidence, noise=noise)
        eps, dlt, kind = req.epsilon, req.delta, req.noise
        # HAVING, ORDER BY, LIMIT and arithmetic between aggregates come off first: the inner
        # query is what is priced and measured (infodp.curator.post).
        post = split_query(sql)
        inner = sql if post is None else post.inner_sql
        table = self._tables.get(sql)
        if table is None:
            table = self.dataset_of(inner)
        name, schema_json, unit_ok = self.ledger.dataset_declaration(table)
        key = (sql, eps, dlt, kind, name, schema_json, unit_ok)
        hit = self._prices.get(key)
        if hit is not None:
            return hit
        # The relation the query reads: the table itself, or one derived from a population's
        # tables (joins, subqueries, derived columns), priced by its derived bounds.
        resolved = resolve(inner, self.schema_of(schema_json))
        schema = resolved.schema
        unit_ok = unit_ok and not resolved.row_cut
        plan = parse_query(resolved.sql, schema)
        # SUM(x) / COUNT(x) written by hand is measured as AVG(x) (infodp.curator.post.ratio).
        mean = self._as_avg(sql, plan, schema_json, schema)
        if mean is not None:
            post, resolved, plan = mean
            schema = resolved.schema
            unit_ok = unit_ok and not resolved.row_cut
        rows = schema.row_bound  # the declaration, never the measured count (private)
        cost = plan_cost(plan, schema, eps, dlt, rows, kind)
        if plan.needs_partition_selection:
            selection(cost).threshold()  # a threshold that cannot be formed fails here
        leak = leakage_of(cost)
        require_finite("the query's privacy summary", leak)
        if len(self._prices) >= REMEMBERED:
            self._prices.clear()
            self._tables.clear()
        self._tables[sql] = table
        hit = self._prices[key] = PricedQuery(
            plan, schema, rows, unit_ok, cost, leak, schema_json, post
        )
        return hit

    def _as_avg(
        self, sql: str, plan: QueryPlan, schema_json: str, read: DatasetSchema
    ) -> tuple[PostProcess | None, Resolved, QueryPlan] | None:
        """The query with its hand-written means read as AVG (post-processing, resolved
        relation, plan), when it has some and needs no more measurements than as written
        (``read``: the relation the query reads, whose declared null policies say which
        columns hold no NULL)."""
        from infodp.curator.plan import measurements
        from infodp.curator.post.ratio import avg_ratios

        def nonnull(name: str) -> bool:
            col = next((c for c in read.columns if c.name.lower() == name.lower()), None)
            return col is not None and col.nulls.action in ("error", "replace")

        text = avg_ratios(sql, nonnull)
        if text is None:
            return None
        try:
            post = split_query(text)
            resolved = resolve(
                text if post is None else post.inner_sql, self.schema_of(schema_json)
            )
            mean = parse_query(resolved.sql, resolved.schema)
        except ParameterError:
            return None  # the query as written is priced (and refused) in its own words
        if len(measurements(mean)) > len(measurements(plan)):
            return None
        return post, resolved, mean


def require_finite(what: str, value: object) -> None:
    """Refuse (before any charge) a summary holding NaN: privacy parameters never become NaN.

    >>> require_finite("x", {"a": [1.0, float("nan")]})
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: x is undefined (NaN) for these parameters; choose a smaller ε or δ.
    """  # noqa: E501
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, float) and math.isnan(v):
            raise ParameterError(
                f"{what} is undefined (NaN) for these parameters; choose a smaller ε or δ."
            )


def copy_summary(value: dict[str, Any]) -> dict[str, Any]:
    """A copy of a privacy summary (nested dicts and lists of numbers and text) that shares
    no container with it; faster than ``copy.deepcopy`` for these plain values.

    >>> s = {"nats": {"1": 0.5}, "warnings": []}
    >>> c = copy_summary(s); c["nats"]["1"] = 9.0; s["nats"]["1"]
    0.5
    """
    return {k: _copy(v) for k, v in value.items()}


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {k: _copy(v) for k, v in value.items()}
    if kind is list:
        return [_copy(v) for v in value]
    return value
