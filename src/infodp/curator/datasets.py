"""Which registered dataset a query reads: by a table's name, a population's table, or both.

The names come from :func:`infodp.curator.relations.tables_read`.

A single-table dataset is read by its name (``FROM people``). A population's tables are read
by their own names (``FROM visits JOIN people ...``) when no other dataset the reader may see
has a table of that name, or qualified by the population (``FROM clinic.visits``). Every table
of one query must belong to one dataset: budgets belong to a population, and a query across two
populations would spend from neither.

Only names are compared (never data), and a reader is only ever told about datasets among the
ones it may see (an analyst: those holding their budgets), so a refusal reveals nothing about
other owners' datasets.

>>> find_dataset(("clinic.visits", "people"), {"clinic": ("people", "visits")})
'clinic'
>>> find_dataset(("visits",), {"clinic": ("people", "visits"), "trial": ("visits",)})
Traceback (most recent call last):
...
infodp.errors.ParameterError: table 'visits' is in several datasets (clinic, trial); qualify it, as in clinic.visits.
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Mapping, Sequence

from infodp.errors import ParameterError

__all__ = ["find_dataset"]


def find_dataset(names: Sequence[str], tables: Mapping[str, Sequence[str]]) -> str:
    """The one dataset that ``names`` (from :func:`tables_read`) read.

    ``tables`` maps each dataset the reader may see to its tables (a single-table dataset:
    empty, it is read by its own name). A name that matches nothing raises the error of
    an unknown dataset for that name (:class:`KeyError` with the name, for the caller's own
    message).
    """
    if not names:
        raise ParameterError("sql", "SELECT without FROM", "a query naming a registered table")
    found: dict[str, None] = {}
    for name in names:
        found[_dataset_of(name, tables)] = None
    if len(found) > 1:
        raise ParameterError(
            "sql",
            sorted(found),
            "tables of one dataset (budgets belong to one population; query each separately)",
        )
    return next(iter(found))


def _dataset_of(name: str, tables: Mapping[str, Sequence[str]]) -> str:
    lower = {k.lower(): k for k in tables}
    if "." in name:
        db, table = name.split(".", 1)
        dataset = lower.get(db.lower())
        if dataset is None or table.lower() not in {t.lower() for t in tables[dataset]}:
            raise KeyError(name)
        return dataset
    if name.lower() in lower and not tables[lower[name.lower()]]:
        return lower[name.lower()]
    owners = [d for d, ts in tables.items() if name.lower() in {t.lower() for t in ts}]
    if not owners:
        if name.lower() in lower:  # a population's own name is not a table
            raise ParameterError(
                "table",
                name,
                "one of the population's tables: " + ", ".join(tables[lower[name.lower()]]),
            )
        raise KeyError(name)
    if len(owners) > 1:
        raise ParameterError(
            f"table {name!r} is in several datasets ({', '.join(sorted(owners))}); qualify it, "
            f"as in {sorted(owners)[0]}.{name}."
        )
    return owners[0]
