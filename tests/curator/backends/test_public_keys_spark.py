"""A public table's join key as a public key set on the Spark backend: every public key is a
released group, the exact counts those of plain SQL with a LEFT JOIN from the public table (a
key no private row reaches counts 0), equal to DuckDB's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest

from _stores import TEXT, population, private, public
from infodp.curator.engine import Curator

pytestmark = pytest.mark.spark

SCHEMA: dict[str, Any] = population(
    "pid", {"loans": private(2, pid=TEXT, isbn=TEXT), "books": public(isbn=TEXT, title=TEXT)}
)


def frames() -> dict[str, pd.DataFrame]:
    isbns = ["111", "222", "999"] * 40  # 999: not a public book
    loans = pd.DataFrame({"pid": [f"p{i // 2}" for i in range(len(isbns))], "isbn": isbns})
    books = pd.DataFrame({"isbn": ["111", "222", "444"], "title": ["A", "B", "D"]})
    return {"loans": loans, "books": books}


def test_spark_releases_every_public_key_with_plain_sql_counts(spark: Any, tmp_path: Path) -> None:
    sources = {}
    for name, frame in frames().items():
        sources[name] = str(tmp_path / f"{name}.parquet")
        frame.to_parquet(sources[name])
    cur = Curator(tmp_path / "s.duckdb")
    cur.register_dataset("ld", sources, SCHEMA)
    cur.register_dataset("ls", sources, SCHEMA, backend="spark", same_population_as="ld")
    sql = "SELECT b.isbn, COUNT(*) FROM {d}.loans l JOIN {d}.books b USING (isbn) GROUP BY b.isbn"
    con = duckdb.connect()
    for name, frame in frames().items():
        con.register(name, frame)
    want = con.execute(
        "SELECT b.isbn, COUNT(l.isbn) FROM books b LEFT JOIN loans l USING (isbn) "
        "GROUP BY b.isbn ORDER BY 1"
    ).fetchall()
    plan, _, _, _ = cur.plan(sql.format(d="ls"))
    assert plan.group_by[0].categories == ("111", "222", "444")
    spark_exact = cur.exact_aggregates(sql.format(d="ls")).values
    assert [(k, spark_exact.get((k,), (0,))[0]) for k, _ in want] == want
    assert spark_exact == cur.exact_aggregates(sql.format(d="ld")).values
    cur.add_analyst("a", "ls", epsilon=10)
    r = cur.query("a", sql.format(d="ls"), epsilon=1)
    assert [row[0] for row in r.rows] == ["111", "222", "444"]
    cur.close()
