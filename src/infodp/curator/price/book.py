"""The curator's price book: a request resolved once, then validated completely and priced
once, and remembered.

Two steps of the query's chain (:mod:`infodp.curator.request`): :meth:`PriceBook.resolve`
turns a parsed :class:`~infodp.curator.request.Request` into a
:class:`~infodp.curator.request.Resolved` (the dataset it reads, found once, with its
declaration and the analyst's budget there), and :meth:`PriceBook.priced` turns that into a
:class:`~infodp.curator.request.Priced`. Pricing depends on the query's text, the exact
(ε, δ), the noise family and the dataset's declaration only (never on the data), and every
piece of it is immutable, so a repeated query is priced once: plan
(:func:`~infodp.curator.sql.parse.parse_query`), cost
(:func:`~infodp.curator.price.cost.plan_cost`),
privacy summary (:func:`~infodp.curator.price.cost.leakage_of`); the plan, which depends on the
text and the declaration only, is remembered by those, so the same query at another ε is
priced without being planned again. Refusals are never remembered.

>>> from infodp.curator.ledger import Ledger
>>> book = PriceBook(Ledger(":memory:"))
>>> book.resolve(Request.parse("SELECT COUNT(*) FROM t", epsilon=1))
Traceback (most recent call last):
...
infodp.errors.ParameterError: unknown dataset 't'; registered: none.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.ledger import Budget, Ledger
from infodp.curator.plan.nodes import QueryPlan
from infodp.curator.price.cost import leakage_of, plan_cost, selection
from infodp.curator.relations import Resolved as Relation
from infodp.curator.relations import resolve, tables_read
from infodp.curator.relations.datasets import find_dataset
from infodp.curator.request import NoBudget, Priced, Request, Resolved
from infodp.curator.sql.parse import parse_query
from infodp.curator.sql.post import inner_sql, split_query
from infodp.errors import ParameterError

if TYPE_CHECKING:
    from infodp.curator.sql.post import PostProcess

    #: A query's shape: post-processing, plan, the schema it reads, unit rows bounded there.
    _Shape = tuple[PostProcess | None, QueryPlan, DatasetSchema, bool]

__all__ = ["REMEMBERED", "PriceBook", "require_finite"]

#: How many priced queries a price book remembers (then it starts afresh).
REMEMBERED = 256
#: A dataset's declaration as the ledger stores it: (name, schema JSON, unit_rows_ok).
_Declaration = tuple[str, str, bool]


class PriceBook:
    """Priced queries remembered per (SQL text, exact ε and δ, noise, dataset declaration)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._schemas: dict[str, DatasetSchema] = {}
        self._prices: dict[tuple[object, ...], Priced] = {}
        # What pricing needs of a query's text and declaration, by both (see _shape).
        self._shapes: dict[tuple[str, str, str, bool], _Shape] = {}
        # The dataset each query read, by (SQL text, the analyst's datasets or None).
        self._tables: dict[tuple[str, tuple[str, ...] | None], str] = {}
        self._datasets: dict[str, tuple[str, ...]] | None = None
        # Declarations read from the ledger, for reservations (see resolve).
        self._declarations: dict[str, _Declaration] = {}

    def schema_of(self, schema_json: str) -> DatasetSchema:
        """The schema a dataset's stored declaration holds (parsed once per text)."""
        cached = self._schemas.get(schema_json)
        if cached is None:
            # The store's own record, validated by load_schema when it was registered.
            cached = self._schemas[schema_json] = DatasetSchema.from_dict(json.loads(schema_json))
        return cached

    def dataset_of(self, sql: str, among: Collection[str] | None = None) -> str:
        """The registered dataset the query ``sql`` reads
        (:mod:`infodp.curator.relations.datasets`);
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
        """Forget every remembered price and declaration (the ledger holds a declaration they
        did not use)."""
        self._prices.clear()
        self._shapes.clear()
        self._declarations.clear()

    def resolve(
        self,
        request: Request,
        budgets: Sequence[Budget] | None = None,
        *,
        remembered: bool = False,
    ) -> Resolved:
        """The dataset ``request`` reads, found once, with its declaration and (``budgets``:
        an analyst's) the analyst's budget there.

        With ``budgets`` only the analyst's datasets are considered, and a query naming none
        of them raises :class:`~infodp.curator.request.NoBudget` (the same whether the dataset
        exists or not, so names of others' datasets are not revealed) before anything else of
        it is read. ``remembered``: the caller reserves the price with the declaration it was
        priced with (``Ledger.reserve(declaration=...)``, checked inside the reservation's
        transaction), so a declaration read before is used without reading the ledger again:
        the first work after an aggregate runs with cold caches, where a SQLite read is slow
        (BENCHMARKS.md, curator_timeline).
        """
        among = None if budgets is None else tuple(sorted({b.dataset for b in budgets}))
        slot = (request.sql, among)
        name = self._tables.get(slot)
        if name is None:
            try:
                name = self.dataset_of(inner_sql(request.sql), among=among)
            except KeyError as err:
                raise NoBudget(str(err.args[0]).split(".")[0]) from None
            if len(self._tables) >= REMEMBERED:
                self._tables.clear()
            self._tables[slot] = name
        budget = None
        if budgets is not None:
            budget = next(b for b in budgets if b.dataset.lower() == name.lower())
        declaration = self._declarations.get(name.lower()) if remembered else None
        if declaration is None:
            declaration = self.ledger.dataset_declaration(name)
            if len(self._declarations) >= REMEMBERED:
                self._declarations.clear()
            self._declarations[name.lower()] = declaration
        dataset, schema_json, unit_ok = declaration
        return Resolved(request, dataset, schema_json, unit_ok, budget)

    def price(self, request: Request) -> Priced:
        """:meth:`priced` of ``request`` resolved now (no analyst: every dataset considered)."""
        return self.priced(self.resolve(request))

    def priced(self, resolved: Resolved) -> Priced:
        """Validate completely and price a resolved request; remembered, refusals never."""
        req = resolved.request
        sql, name, schema_json = req.sql, resolved.dataset, resolved.schema_json
        key = (sql, req.epsilon, req.delta, req.noise, name, schema_json, resolved.unit_rows_ok)
        hit = self._prices.get(key)
        if hit is not None:
            return hit
        post, plan, schema, unit_ok = self._shape(sql, name, schema_json, resolved.unit_rows_ok)
        rows = schema.row_bound  # the declaration, never the measured count (private)
        cost = plan_cost(plan, schema, req.epsilon, req.delta, rows, req.noise)
        if plan.needs_partition_selection:
            selection(cost).threshold()  # a threshold that cannot be formed fails here
        leak = leakage_of(cost)
        require_finite("the query's privacy summary", leak.to_dict())
        if len(self._prices) >= REMEMBERED:
            self._prices.clear()
        # The profile as the ledger stores it (json.dumps of the spec), made once per price.
        spec = json.dumps(cost.profile_spec())
        hit = self._prices[key] = Priced(
            plan, schema, rows, unit_ok, cost, leak, schema_json, post, spec
        )
        return hit

    def _shape(self, sql: str, name: str, schema_json: str, unit_rows_ok: bool) -> _Shape:
        """The query's post-processing, plan, the schema of the relation it reads and whether
        a unit's rows are bounded there: what pricing needs of the text and the declaration
        only, remembered by both (a query asked again at another ε is planned once)."""
        key = (sql, name, schema_json, unit_rows_ok)
        hit = self._shapes.get(key)
        if hit is not None:
            return hit
        # HAVING, ORDER BY, LIMIT and arithmetic between aggregates come off first: the inner
        # query is what is priced and measured (infodp.curator.sql.post).
        post = split_query(sql)
        inner = sql if post is None else post.inner_sql
        # The relation the query reads: the table itself, or one derived from a population's
        # tables (joins, subqueries, derived columns), priced by its derived bounds.
        relation = resolve(inner, self.schema_of(schema_json))
        plan = parse_query(relation.sql, relation.schema)
        # SUM(x) / COUNT(x) written by hand is measured as AVG(x) (infodp.curator.sql.post.ratio).
        mean = self._as_avg(sql, plan, schema_json, relation.schema)
        if mean is not None:
            post, relation, plan = mean
        shape = (post, plan, relation.schema, unit_rows_ok and not relation.row_cut)
        if len(self._shapes) >= REMEMBERED:
            self._shapes.clear()
        self._shapes[key] = shape
        return shape

    def _as_avg(
        self, sql: str, plan: QueryPlan, schema_json: str, read: DatasetSchema
    ) -> tuple[PostProcess | None, Relation, QueryPlan] | None:
        """The query with its hand-written means read as AVG (post-processing, resolved
        relation, plan), when it has some and needs no more measurements than as written
        (``read``: the relation the query reads, whose declared null policies say which
        columns hold no NULL)."""
        from infodp.curator.rules import measurements
        from infodp.curator.sql.post.ratio import avg_ratios

        def nonnull(name: str) -> bool:
            col = next((c for c in read.columns if c.name.lower() == name.lower()), None)
            return col is not None and col.nulls.leaves_no_null

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
