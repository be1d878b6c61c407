"""A request to the curator, parsed once, and the records of its resolution, price and estimate.

One query is one chain of frozen records, each made by one step and read by the next:
:class:`Request` (parsed once, at the edge) → :class:`Resolved` (the dataset it reads, that
dataset's declaration and the analyst's budget there, found once) → :class:`Priced` (plan,
cost with its mechanisms built once, frozen privacy summary) →
:class:`~infodp.curator.answer.result.Reservation` →
:class:`~infodp.curator.answer.result.Released` →
:class:`~infodp.curator.answer.result.QueryResult`.

:meth:`Request.parse` is the one place where a query's privacy parameters, confidence level
and noise are read from user input (numbers as exact fractions, :func:`as_budget_fraction`);
everything after it works on the typed values. :class:`Priced` is a validated, priced query
(what :meth:`infodp.curator.Curator.price` returns) and :class:`Estimate` what the curator
says about a query without spending anything: its cost, accuracy and, for an analyst, whether
it fits their budget by the accountant's own dry run
(:meth:`infodp.accounting.Accountant.can_spend`, the check the ledger's charge makes) in every
currency. :class:`NoBudget` is the refusal of an analyst without a budget on the dataset a
query names (the service answers it with 403).

>>> r = Request.parse("SELECT COUNT(*) FROM t", epsilon="0.1", delta=0)
>>> r.epsilon, r.delta, r.noise.value, r.confidence
(Fraction(1, 10), Fraction(0, 1), 'laplace', 0.95)
>>> Request.parse("SELECT 1", epsilon=0.1, delta=1)
Traceback (most recent call last):
...
infodp.errors.ParameterError: delta must be a probability in [0, 1); got 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, NamedTuple, TypeAlias

from infodp.curator.price.cost import Noise, as_budget_fraction, as_noise
from infodp.curator.sql.limits import check_sql_text
from infodp.errors import ParameterError

if TYPE_CHECKING:
    from infodp._jsonable import JsonObject
    from infodp.curator.declaration.schema import DatasetSchema
    from infodp.curator.ledger import Budget
    from infodp.curator.plan.nodes import QueryPlan
    from infodp.curator.price.cost import Leakage, QueryCost
    from infodp.curator.sql.post import PostProcess

__all__ = [
    "Estimate",
    "NoBudget",
    "NumberInput",
    "Planned",
    "Priced",
    "Request",
    "Resolved",
    "check_confidence",
]

#: A number as a caller may write it: read exactly by :meth:`Request.parse` ("0.1" and 0.1
#: are both 1/10; a float through its shortest decimal form).
NumberInput: TypeAlias = Fraction | Decimal | int | float | str


class NoBudget(ParameterError):
    """The analyst holds no budget on the dataset a query names (or it does not exist: the
    two are not told apart, so dataset names are not revealed). Nothing was spent.

    >>> str(NoBudget("people"))
    "you have no budget on a dataset named 'people'"
    """

    def __init__(self, dataset: str) -> None:
        self.dataset = dataset
        super().__init__(f"you have no budget on a dataset named {dataset[:80]!r}")

    def __reduce__(self) -> tuple[type[NoBudget], tuple[str]]:
        # Crosses a worker process's pipe as itself (the message is made from the name).
        return (NoBudget, (self.dataset,))


def check_confidence(confidence: float) -> float:
    """The confidence level as a float, refused (before anything is reserved) when its
    intervals cannot be computed.

    The intervals use β = 1 − confidence; below about 5.6e-17 that difference rounds to 1.0
    in double precision (a tail probability of 1, no interval), so such a level is refused
    here instead of failing after the charge.

    >>> check_confidence(0.9)
    0.9
    """
    if not (
        isinstance(confidence, float | int)
        and not isinstance(confidence, bool)
        and 0 < confidence < 1
        and 0.0 < 1.0 - float(confidence) < 1.0
    ):
        raise ParameterError(
            "confidence",
            confidence,
            "a number in (0, 1) with 1 - confidence < 1 in double precision "
            "(at least 1.2e-16, below 1)",
        )
    return float(confidence)


@dataclass(frozen=True, slots=True)
class Request:
    """A query with its privacy parameters, parsed and validated (:meth:`parse`)."""

    sql: str
    epsilon: Fraction
    delta: Fraction = Fraction(0)
    confidence: float = 0.95
    noise: Noise = Noise.LAPLACE

    @classmethod
    def parse(
        cls,
        sql: str,
        *,
        epsilon: NumberInput,
        delta: NumberInput = 0,
        confidence: float = 0.95,
        noise: Noise | str = "laplace",
    ) -> Request:
        """Read ε and δ exactly ("0.1" and 0.1 are both 1/10), the level and the noise.

        >>> Request.parse("SELECT COUNT(*) FROM t", epsilon=1, noise="gaussian",
        ...               delta="1e-6").noise
        <Noise.GAUSSIAN: 'gaussian'>
        """
        check_sql_text(sql)  # the statement's size first: refused before anything is read
        eps = as_budget_fraction("epsilon", epsilon)
        dlt = as_budget_fraction("delta", delta, allow_zero=True)
        if dlt >= 1:
            raise ParameterError("delta", delta, "a probability in [0, 1)")
        level = check_confidence(confidence)
        return cls(sql, eps, dlt, level, as_noise(noise))


class Planned(NamedTuple):
    """A query's plan before it is priced (:meth:`infodp.curator.Curator.plan`): the plan, the
    schema of the relation it reads, the declared public row bound (the declaration, never the
    measured count) and whether a unit's rows are bounded there. A named tuple, so it also
    unpacks as ``plan, schema, rows, unit_rows_ok``."""

    plan: QueryPlan
    schema: DatasetSchema
    rows: int | None
    unit_rows_ok: bool


@dataclass(frozen=True, slots=True)
class Resolved:
    """A request with the dataset it reads found once (:meth:`PriceBook.resolve
    <infodp.curator.price.book.PriceBook.resolve>`): the dataset's registered name, its
    declaration as the ledger stores it (schema text, whether a unit's rows are bounded) and,
    for an analyst, their budget there (None: no analyst named)."""

    request: Request
    dataset: str
    schema_json: str
    unit_rows_ok: bool
    budget: Budget | None = None


@dataclass(frozen=True, slots=True)
class Priced:
    """A validated, priced query: its plan, declared schema and public row bound, its cost
    (each measurement's mechanism built once) and the frozen privacy summary of that cost.
    A function of the query and the declaration only.

    ``schema_json``, ``post`` and ``profile_spec`` are what a reservation of it needs: the
    declaration it was priced with (checked inside the reservation's transaction), the free
    post-processing of the released table (HAVING, ORDER BY, …; None: none) and the cost's
    profile as the ledger stores it.
    """

    plan: QueryPlan
    schema: DatasetSchema
    rows: int | None
    unit_rows_ok: bool
    cost: QueryCost
    leakage: Leakage = field(compare=False)
    schema_json: str = field(default="", compare=False, repr=False)
    post: PostProcess | None = field(default=None, compare=False, repr=False)
    profile_spec: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Estimate:
    """What a query would cost and how accurate it would be; nothing is spent.

    ``remaining`` and ``fits`` are given for an analyst's estimate only: their budget and
    whether the query fits it (the accountant's dry run, every currency).
    """

    cost: JsonObject = field(compare=False)
    accuracy: tuple[JsonObject, ...]
    confidence: float
    cells: int
    remaining: Budget | None = None
    fits: bool | None = None

    def to_dict(self) -> JsonObject:
        """The estimate as JSON-ready values (``Curator.estimate``'s mapping, and for an
        analyst's estimate also ``remaining``, ``fits`` and notes)."""
        out: JsonObject = {
            "cost": self.cost,
            "accuracy": list(self.accuracy),
            "confidence": self.confidence,
            "cells": self.cells,
        }
        if self.remaining is not None:
            out["remaining"] = self.remaining.to_dict()
            out["fits"] = self.fits
            out["notes"] = [
                "each half-width holds with the stated confidence for one cell of one "
                "measurement; AVG, VARIANCE and STDDEV combine measurements at split levels "
                "and depend on the data",
                "nothing was spent",
                "'fits' is the accountant's dry run on your budget; the dataset's caps, shared "
                "by all analysts, are checked when the query is run",
            ]
        return out
