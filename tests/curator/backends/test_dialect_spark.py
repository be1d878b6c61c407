"""Queries as analysts write them (TOP, other engines' variance spellings, dataset.table, GROUP BY
positions, COUNT(1)) are answered on Spark as plain DuckDB SQL answers them on the same bounded
frame (infodp.curator.sql.dialect)."""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

from _stores import cats, ints, one_table
from infodp import Session

SCHEMA = one_table(
    "census",
    {"age": ints(0, 100), "educ": cats(*[str(i) for i in range(1, 9)]), "flag": ints(0, 1)},
)

QUERIES = [
    (
        "SELECT TOP 3 educ, COUNT(*) FROM census.census GROUP BY educ ORDER BY educ DESC",
        "SELECT educ, COUNT(*) FROM census GROUP BY educ ORDER BY educ DESC LIMIT 3",
    ),
    (
        "SELECT VAR(age), STD(age), STDEV(age), VARP(age), STDEVP(age) FROM CENSUS.census",
        "SELECT VAR_SAMP(age), STDDEV_POP(age), STDDEV_SAMP(age), VAR_POP(age), "
        "STDDEV_POP(age) FROM census",
    ),
    (
        "SELECT COUNT(*), POWER(SUM(age), 2) FROM (census) AS c WHERE flag = TRUE",
        "SELECT COUNT(*), POWER(SUM(age), 2) FROM census WHERE flag = 1",
    ),
    (
        "SELECT educ AS e, SUM(age), COUNT(1) FROM census GROUP BY 1 ORDER BY e",
        "SELECT educ, SUM(age), COUNT(*) FROM census GROUP BY educ ORDER BY educ",
    ),
]


@pytest.mark.spark
def test_spellings_top_and_dataset_table_on_spark(spark: Any) -> None:
    rng = np.random.default_rng(808)
    n = 3000
    frame = pd.DataFrame(
        {
            "age": rng.integers(10, 90, n),
            "educ": rng.choice([str(i) for i in range(1, 9)], n),
            "flag": rng.integers(0, 2, n),
        }
    )
    con = duckdb.connect()
    con.register("census", frame)
    s = Session(frame, SCHEMA, epsilon=10**6, backend="spark")
    try:
        for sql, plain in QUERIES:
            ours = s.query(sql, epsilon=100)
            theirs = con.execute(plain).fetchall()
            assert len(ours.rows) == len(theirs), sql
            for got, want in zip(ours.rows, theirs, strict=True):
                for a, b in zip(got, want, strict=True):
                    if isinstance(b, str):
                        assert a == b, sql
                    else:
                        assert a == pytest.approx(float(b), rel=0.02, abs=2.0), sql
    finally:
        s.close()
