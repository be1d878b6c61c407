"""Spark datasets are sketched like DuckDB ones (DuckDB reads the Parquet copy with the same
salted hash), so a Spark copy of a DuckDB dataset, or of a Spark population, is recognised
(refused until the owner declares it) and shares its budgets when declared."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _stores import TEXT, ints, one_table, population, private, public
from infodp.curator.engine import Curator
from infodp.errors import ParameterError

pytestmark = pytest.mark.spark

SCHEMA = one_table("t", {"pid": TEXT, "x": ints(0, 9)}, unit="pid")
POPULATION = population(
    "pid",
    {
        "people": private(1, pid=TEXT, x=ints(0, 9)),
        "visits": private(5, pid=TEXT, x=ints(0, 9)),
        "regions": public(region=TEXT),
    },
)


def _people(n: int, prefix: str = "p") -> pd.DataFrame:
    return pd.DataFrame(
        {"pid": [f"{prefix}{i}" for i in range(n)], "x": [i % 10 for i in range(n)]}
    )


def _parquet(tmp_path: Path, name: str, frame: pd.DataFrame) -> str:
    path = str(tmp_path / f"{name}.parquet")
    frame.to_parquet(path)
    return path


def test_a_spark_copy_shares_with_duckdb_and_a_spark_population(spark: Any, tmp_path: Path) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    cur.register_dataset("orig", _people(600), SCHEMA)
    cur.add_analyst("a", "orig", epsilon=1)
    dummy = pd.DataFrame({"pid": ["dummy"], "x": [1]})
    copy = pd.concat([_people(600), dummy], ignore_index=True)
    source = _parquet(tmp_path, "copy", copy)
    with pytest.raises(ParameterError, match="--same-population-as orig"):
        cur.register_dataset("copy", source, SCHEMA, backend="spark")
    info = cur.register_dataset("copy", source, SCHEMA, backend="spark", same_population_as="orig")
    assert info["shares_budgets_of"] == "orig"
    assert cur.add_analyst("a", "copy", epsilon=1) is None
    cur.query("a", "SELECT COUNT(*) FROM copy", epsilon="0.5")
    assert cur.ledger.budget("a", "orig").spent_epsilon == Fraction(1, 2)
    tables = {
        "people": _parquet(tmp_path, "people", _people(300, "q")),
        "visits": _parquet(tmp_path, "visits", _people(300, "r")),
        "regions": _parquet(tmp_path, "regions", pd.DataFrame({"region": ["n"]})),
    }
    assert (
        cur.register_dataset("pop", tables, POPULATION, backend="spark")["shares_budgets_of"]
        is None
    )
    # Half of these people are in pop's people table, half in its visits: all in pop.
    mixed = pd.concat([_people(150, "q"), _people(150, "r")], ignore_index=True)
    with pytest.raises(ParameterError, match="--same-population-as pop"):
        cur.register_dataset("mixed", mixed, SCHEMA, backend="spark")
    info = cur.register_dataset("mixed", mixed, SCHEMA, backend="spark", same_population_as="pop")
    assert info["shares_budgets_of"] == "pop"
    assert cur.ledger.unsketched() == []
