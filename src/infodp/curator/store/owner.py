"""The data owner's side of a store (registering datasets, granting budgets), as a base of the
:class:`~infodp.curator.engine.Curator`.

Its methods import :mod:`infodp.curator.store.registration` when first called: a process
that only answers queries never registers a dataset, and never pays for that module.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from infodp._engines import DEFAULT, external
from infodp._engines import engine as engine_entry
from infodp._validate import as_analyst_name
from infodp.curator.price.cost import as_budget_fraction
from infodp.errors import ParameterError

if TYPE_CHECKING:
    from pathlib import Path

    from infodp._jsonable import JsonObject
    from infodp.curator.backends.duckdb import DuckDBBackend
    from infodp.curator.declaration.source import SchemaSource
    from infodp.curator.ledger import Ledger
    from infodp.curator.request import NumberInput
    from infodp.curator.store.connections import Connections

__all__ = ["DataOwner"]


class DataOwner:
    """The data owner's side of a store: registering datasets and granting budgets.

    A base of :class:`~infodp.curator.engine.Curator` (which provides the attributes declared
    here): what only the data owner runs, apart from the analysts' query path.
    """

    db: Path
    ledger: Ledger
    backend: DuckDBBackend
    _connections: Connections

    def register_dataset(
        self,
        name: str,
        source: object,
        schema: SchemaSource,
        *,
        info_cap_bits: float | None = None,
        max_epsilon: NumberInput | None = None,
        max_delta: NumberInput | None = None,
        backend: str = DEFAULT.name,
        bounded_path: str | Path | None = None,
        independent: bool = False,
        same_population_as: str | None = None,
    ) -> JsonObject:
        """Load ``source`` (CSV/Parquet path or frame) under ``name`` with its declared schema.

        ``backend="spark"``: ``source`` is a Parquet path or a table of Spark's catalogue (or
        a frame); Spark writes the bounded copy as Parquet at ``bounded_path`` (default
        ``<store>.bounded/NAME``) and every query on ``name`` runs on Spark. The store's
        catalogue records the backend, the source and the copy's path.

        ``info_cap_bits`` optionally caps the total information (α = 1) released about the
        table by all analysts together (it needs a declared public row bound).
        ``max_epsilon``/``max_delta`` cap the (ε, δ) all analysts together may spend on it,
        enforced in the same ledger transaction as each analyst's own budget. The measured row
        count is the owner's to see (returned here) and never shown to analysts. Content
        identical to an already registered dataset (same fingerprint of the bounded table) is
        refused, naming that dataset.

        ``same_population_as="NAME"`` declares that it holds the people of the registered
        dataset NAME: it then shares NAME's caps (its own must be left out) and each
        analyst's spend account there (one person's data across the copies is charged
        once), recorded and sealed in the ledger; a budget still covers only the datasets
        it is granted on. ``independent=True`` declares it independent (recorded). A
        dataset declared neither whose units look like a copy of a registered one's
        (estimated containment of its salted unit ids at least
        :data:`~infodp.curator.store.unit_overlap.SHARE_THRESHOLD`) is refused, naming the
        estimated overlap and both declarations; nothing is registered. The estimate only
        advises: it never decides. What was declared is in the returned
        ``shares_budgets_of`` and ``budgets``.
        """
        from infodp.curator.declaration.source import load_schema
        from infodp.curator.store.registration import parse_caps, register_dataset

        parsed = load_schema(schema)
        if engine_entry(backend).in_store and bounded_path is not None:
            raise ParameterError(
                "bounded_path",
                str(bounded_path),
                "given only with " + " or ".join(f"backend={n!r}" for n in external()),
            )
        self._connections.close()  # our own reader would block the write
        if not isinstance(name, str) or not name.isidentifier():
            raise ParameterError("name", name, "an identifier (letters, digits, _)")
        caps = parse_caps(parsed, info_cap_bits, max_epsilon, max_delta)
        if same_population_as is not None:
            if not isinstance(same_population_as, str):
                raise ParameterError("same_population_as", same_population_as, "a dataset name")
            if independent:
                raise ParameterError(
                    "independent", True, "left out with same_population_as (choose one)"
                )
        if name in {d.name for d in self.ledger.datasets()}:
            raise ParameterError("name", name, "a dataset name not registered yet")
        shown, where = register_dataset(
            self.ledger,
            self.backend,
            self._connections.backend_for(backend),
            name,
            source,
            dataclasses.replace(parsed, table=name),
            dataclasses.replace(
                caps, independent=bool(independent), same_population_as=same_population_as
            ),
            engine_name=backend,
            bounded_path=bounded_path,
        )
        self._connections.record(name, where)
        return shown

    def add_analyst(
        self,
        name: str,
        dataset: str,
        *,
        epsilon: NumberInput | None = None,
        delta: NumberInput = 0,
        budget: object = None,
    ) -> str | None:
        """Give analyst ``name`` a budget on ``dataset``; returns their API key (shown once).

        The budget covers ``dataset`` only, even when ``dataset`` shares a budget group with
        others. When ``name`` already holds the budget of ``dataset``'s group (granted on
        another dataset of it), the same budget must be given: ``dataset`` is added to it
        and None is returned (their key for it covers ``dataset`` now).

        Either ``epsilon`` (and ``delta``): exact (ε, δ) under basic composition; or
        ``budget``, an :class:`infodp.accounting.Budget` in any currency the accountant
        supports (``Budget.basic``, ``Budget.pure``, ``Budget.approx`` with tight PLD
        composition, ``Budget.rdp``, ``Budget.zcdp``, ``Budget.nats``), enforced by the
        ledger through an :class:`infodp.accounting.Accountant` whose state it keeps.
        """
        name = as_analyst_name("name", name)
        state: str | None = None
        if budget is not None:
            from infodp.accounting.accountant import Accountant
            from infodp.accounting.accountant import Budget as AccountantBudget

            if not isinstance(budget, AccountantBudget):
                raise ParameterError("budget", budget, "an infodp.accounting Budget")
            if budget.currency == "basic":  # kept as the analysts row's exact sums
                epsilon, delta = budget.epsilon, budget.delta
            else:
                state = Accountant(budget).to_json()
                eps_value = budget.epsilon if budget.currency in ("pure", "approx") else 0
                epsilon, delta = eps_value, budget.delta
        elif epsilon is None:
            raise ParameterError("epsilon", None, "given (or pass an accountant budget)")
        eps = as_budget_fraction("epsilon", epsilon, allow_zero=True)
        dlt = as_budget_fraction("delta", delta, allow_zero=True)
        if dlt > 1:
            raise ParameterError("delta", delta, "a probability in [0, 1]")
        record = self.ledger.dataset(dataset)
        return self.ledger.add_analyst(name, record.name, eps, dlt, accountant_json=state)
