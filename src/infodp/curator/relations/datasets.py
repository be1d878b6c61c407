"""Which registered dataset a query reads: by a table's name, a population's table, or both.

The names come from :func:`infodp.curator.relations.tables_read`.

A single-table dataset is read by its name (``FROM people``, or ``FROM people.people`` as a
dataset and its one table, in any case). A population's tables are read
by their own names (``FROM visits JOIN people ...``) when no other dataset the reader may see
has a table of that name, or qualified by the population (``FROM clinic.visits``). Every table
of one query must belong to one dataset: budgets belong to a population, and a query across two
populations would spend from neither.

Only names are compared (never data), and a reader is only ever told about datasets among the
ones it may see (an analyst: those holding their budgets), so a refusal reveals nothing about
other owners' datasets.

>>> find_dataset(("clinic.visits", "people"), {"clinic": ("people", "visits")})
'clinic'
>>> find_dataset(("pums.PUMS",), {"PUMS": ()})
'PUMS'
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
    candidates = [_datasets_of(name, tables) for name in names]
    common = [d for d in candidates[0] if all(d in c for c in candidates[1:])]
    if len(common) == 1:
        return common[0]
    if not common:
        found = sorted({d for c in candidates for d in c})
        raise ParameterError(
            "sql",
            found,
            "tables of one dataset (budgets belong to one population; query each separately, "
            "or qualify a population's table as population.table, as in "
            f"{_example(found, names, tables)})",
        )
    singles = [d for d in common if not tables[d]]
    if len(singles) == 1:
        return singles[0]  # a single-table dataset's own name comes first (as it always did)
    ambiguous = next(n for n, c in zip(names, candidates, strict=True) if len(c) > 1)
    owners = sorted(common)
    raise ParameterError(
        f"table {ambiguous!r} is in several datasets ({', '.join(owners)}); qualify it, "
        f"as in {owners[0]}.{ambiguous}."
    )


def _example(
    found: Sequence[str], names: Sequence[str], tables: Mapping[str, Sequence[str]]
) -> str:
    """A qualified name of one of ``names`` in one of the populations ``found``."""
    for dataset in found:
        for name in names:
            if name.lower() in {t.lower() for t in tables[dataset]}:
                return f"{dataset}.{name}"
    return "population.table"


def _datasets_of(name: str, tables: Mapping[str, Sequence[str]]) -> list[str]:
    """The datasets ``name`` may denote: the one it qualifies, or a single-table dataset
    of that name and every population holding a table of that name."""
    lower = {k.lower(): k for k in tables}
    if "." in name:
        return [_qualified(name, tables, lower)]
    out = [lower[name.lower()]] if name.lower() in lower and not tables[lower[name.lower()]] else []
    out += sorted(d for d, ts in tables.items() if name.lower() in {t.lower() for t in ts})
    if not out:
        raise _no_table(name, tables, lower)
    return out


def _qualified(name: str, tables: Mapping[str, Sequence[str]], lower: Mapping[str, str]) -> str:
    """The dataset of ``dataset.table`` (KeyError: no such table in it)."""
    db, table = name.split(".", 1)
    dataset = lower.get(db.lower())
    if dataset is None:
        raise KeyError(name)
    members = {t.lower() for t in tables[dataset]}
    # A single-table dataset's one table has the dataset's name: PUMS.PUMS is PUMS.
    if table.lower() not in (members or {dataset.lower()}):
        raise KeyError(name)
    return dataset


def _no_table(
    name: str, tables: Mapping[str, Sequence[str]], lower: Mapping[str, str]
) -> Exception:
    """What to raise for a name no dataset holds as a table (KeyError: unknown)."""
    if name.lower() in lower:  # a population's own name is not a table
        return ParameterError(
            "table",
            name,
            "one of the population's tables: " + ", ".join(tables[lower[name.lower()]]),
        )
    return KeyError(name)
