"""Stores made through the CLI for its tests: the people they hold and the records the fixtures
``people_files`` and ``registered_store`` (tests/cli/conftest.py) return."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

#: The schema form of docs/curator.md, declared for the people the fixtures write.
PEOPLE_SCHEMA = """table: people
privacy_unit: person_id      # or: row
max_rows_per_unit: 1
columns:
  age:    {type: int, bounds: [0, 120]}
  income: {type: float, bounds: [0, 500000], nulls: drop}
  region: {type: category, categories: [north, south, east, west]}
"""


@dataclass(frozen=True)
class PeopleFiles:
    """What ``infodp dataset register`` is given: a CSV of 400 people (one income missing), its
    schema, and the path of a store not made yet."""

    db: str
    source: str
    schema: str


@dataclass(frozen=True)
class RegisteredStore(PeopleFiles):
    """A store after ``infodp dataset register`` and one ``infodp analyst add`` per analyst."""

    dataset: str
    #: Each analyst's API key, as ``analyst add --json`` printed it.
    keys: Mapping[str, str]


class RegisterStore(Protocol):
    """The factory ``registered_store`` returns: the analysts' budgets are ``analyst add``'s own
    flags (``{"Z": ["--currency", "zcdp", "--rho", "0.05"]}``), the schema is YAML text."""

    def __call__(
        self,
        *,
        analysts: Mapping[str, Sequence[str]] = ...,
        dataset: str = ...,
        schema: str = ...,
        source: Path | None = ...,
    ) -> RegisteredStore: ...


def write_people(directory: Path, schema: str, source: Path | None = None) -> PeopleFiles:
    """Write ``schema`` and a source (a copy of ``source``, or the 400 people) in ``directory``."""
    path = directory / "schema.yaml"
    path.write_text(schema)
    db = str(directory / "store.duckdb")
    if source is not None:
        return PeopleFiles(db, str(shutil.copy(source, directory)), str(path))
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame(
        {
            "person_id": np.arange(n),
            "age": rng.integers(0, 100, n),
            "income": rng.gamma(2, 20000, n),
            "region": rng.choice(["north", "south", "east", "west"], n),
        }
    )
    frame.loc[3, "income"] = np.nan
    csv = directory / "people.csv"
    frame.to_csv(csv, index=False)
    return PeopleFiles(db, str(csv), str(path))
