"""Columns declared ``bool``: stored as BOOLEAN, a condition in WHERE, a declared category of
the two keys false/true in GROUP BY, 0/1 with the implied bounds [0, 1] in COUNT/SUM/AVG.

The oracle is plain DuckDB on the same frame (booleans cast to integers where DuckDB has no
aggregate of BOOLEAN); the Spark test holds the Spark backend to the DuckDB one."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from _stores import cats, ints, one_table, population, private
from infodp.curator.declaration.source import load_schema
from infodp.curator.engine import Curator
from infodp.errors import ParameterError

NOT_BOOLEAN = (
    "column 'flag' is declared bool but some values are not booleans (true/false, t/f or "
    "1/0); declare it as int, category or text, or clean the source."
)

SCHEMA = one_table(
    "t",
    {
        "pid": {"type": "int"},
        "flag": {"type": "boolean"},
        "temp": ints(0, 100),
        "region": cats("a", "b", "c"),
    },
    unit="pid",
    max_rows_per_unit=3,
)


def _frame(n: int = 600, draw: int = 3) -> pd.DataFrame:
    """Units of at most 3 rows (none is cut), a bool flag, an int and a category."""
    rng = np.random.default_rng(draw)
    return pd.DataFrame(
        {
            "pid": np.arange(n) % (n // 3),
            "flag": rng.random(n) < 0.3,
            "temp": rng.integers(0, 101, n),
            "region": rng.choice(["a", "b", "c"], n),
        }
    )


def _plain(frame: pd.DataFrame, sql: str) -> list[tuple[object, ...]]:
    con = duckdb.connect()
    try:
        con.register("f", frame)
        return [tuple(r) for r in con.execute(sql).fetchall()]
    finally:
        con.close()


# -- the declaration --------------------------------------------------------------------------


def test_bool_and_boolean_declare_one_type_with_implied_bounds() -> None:
    s = load_schema(SCHEMA)
    flag = s.column("flag")
    assert (flag.type, flag.bounds, flag.is_numeric) == ("bool", (0.0, 1.0), True)
    assert s.to_dict()["columns"]["flag"] == {"type": "bool"}  # bounds implied, not written
    assert load_schema(s.to_dict()) == s


def test_bounds_on_a_bool_column_are_refused() -> None:
    decl = one_table("t", {"b": {"type": "bool"}})
    decl["columns"]["b"]["bounds"] = [0, 1]
    with pytest.raises(ParameterError) as err:
        load_schema(decl)
    assert str(err.value) == (
        "columns.b.bounds must be left out for a bool column (false is 0, true is 1); got [0, 1]."
    )


def test_a_bool_null_replacement_is_true_or_false() -> None:
    def column(nulls: object) -> dict[str, object]:
        return one_table("t", {"b": {"type": "bool", "nulls": nulls}})

    assert load_schema(column({"replace": True})).column("b").nulls.value == 1.0
    with pytest.raises(ParameterError) as err:
        load_schema(column({"replace": "yes"}))
    assert str(err.value) == "columns.b.nulls.replace must be true or false; got 'yes'."


@pytest.mark.slow
def test_a_replaced_null_counts_as_its_declared_value(tmp_path: Path) -> None:
    flags = pd.Series([True, False, None, True, None, False, None], dtype=object)
    decl = one_table("t", {"b": {"type": "bool", "nulls": {"replace": True}}})
    cur = Curator(tmp_path / "s.duckdb")
    try:
        cur.register_dataset("t", pd.DataFrame({"b": flags}), decl)
        summed = cur.exact_aggregates("SELECT SUM(b) FROM t").values
        grouped = cur.exact_aggregates("SELECT b, COUNT(*) FROM t GROUP BY b").values
    finally:
        cur.close()
    filled = flags.fillna(True).astype(bool)
    assert summed == {(): (int(filled.sum()),)}
    assert grouped == {("true",): (int(filled.sum()),), ("false",): (int((~filled).sum()),)}


# -- registration -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("form", ["pandas_bool", "int_01", "csv_words"])
def test_registration_reads_booleans_and_stores_them_as_boolean(tmp_path: Path, form: str) -> None:
    frame = _frame()
    source: object = frame
    if form == "int_01":
        source = frame.assign(flag=frame["flag"].astype(int))
    elif form == "csv_words":
        path = tmp_path / "t.csv"
        frame.assign(flag=frame["flag"].map({True: "true", False: "false"})).to_csv(
            path, index=False
        )
        source = str(path)
    cur = Curator(tmp_path / "s.duckdb")
    try:
        cur.register_dataset("t", source, SCHEMA)
        con = cur.backend.connect(read_only=True)
        try:
            stored = con.execute(
                "SELECT data_type FROM information_schema.columns "
                "WHERE table_name = 't' AND column_name = 'flag'"
            ).fetchone()
        finally:
            con.close()
        got = cur.exact_aggregates("SELECT COUNT(*) FROM t WHERE flag").values
    finally:
        cur.close()
    assert stored == ("BOOLEAN",)
    assert got == {(): (int(frame["flag"].sum()),)}


@pytest.mark.parametrize("bad", ["int_2", "word"])
def test_a_value_that_is_not_a_boolean_is_refused_naming_the_column(
    tmp_path: Path, bad: str
) -> None:
    frame = _frame()
    if bad == "int_2":
        frame = frame.assign(flag=frame["flag"].astype(int))
        frame.loc[7, "flag"] = 2
    else:
        frame = frame.assign(flag=frame["flag"].map({True: "true", False: "false"}))
        frame.loc[7, "flag"] = "maybe"
    cur = Curator(tmp_path / "s.duckdb")
    try:
        with pytest.raises(ParameterError) as err:
            cur.register_dataset("t", frame, SCHEMA)
        assert cur.ledger.datasets() == []
    finally:
        cur.close()
    assert str(err.value) == NOT_BOOLEAN  # the column, never the value


# -- queries: exact answers equal plain DuckDB -------------------------------------------------

EXACT = [
    ("SELECT COUNT(*) FROM t WHERE flag", "SELECT count(*) FROM f WHERE flag"),
    ("SELECT COUNT(*) FROM t WHERE flag = TRUE", "SELECT count(*) FROM f WHERE flag = TRUE"),
    ("SELECT COUNT(*) FROM t WHERE flag = FALSE", "SELECT count(*) FROM f WHERE flag = FALSE"),
    ("SELECT COUNT(*) FROM t WHERE NOT flag", "SELECT count(*) FROM f WHERE NOT flag"),
    (
        "SELECT COUNT(*) FROM t WHERE flag AND region = 'a'",
        "SELECT count(*) FROM f WHERE flag AND region = 'a'",
    ),
    (
        "SELECT SUM(flag), COUNT(flag) FROM t",
        "SELECT sum(flag::INT), count(flag) FROM f",
    ),
    (
        "SELECT flag, COUNT(*), SUM(temp) FROM t GROUP BY flag",
        "SELECT lower(flag::VARCHAR), count(*), sum(temp) FROM f GROUP BY flag",
    ),
    (
        "SELECT region, flag, COUNT(*) FROM t WHERE temp > 50 GROUP BY region, flag",
        "SELECT region, lower(flag::VARCHAR), count(*) FROM f WHERE temp > 50 "
        "GROUP BY region, flag",
    ),
]


@pytest.fixture(scope="module")
def curator(tmp_path_factory: pytest.TempPathFactory) -> Curator:
    cur = Curator(tmp_path_factory.mktemp("bool") / "s.duckdb")
    cur.register_dataset("t", _frame(), SCHEMA)
    cur.add_analyst("a", "t", epsilon=1e9)
    return cur


@pytest.mark.parametrize(("sql", "plain"), EXACT, ids=[f"q{i}" for i in range(len(EXACT))])
def test_exact_answers_equal_plain_duckdb(curator: Curator, sql: str, plain: str) -> None:
    got = curator.exact_aggregates(sql).values
    keys = len(curator.plan(sql)[0].group_by)
    want = {tuple(str(k) for k in r[:keys]): tuple(r[keys:]) for r in _plain(_frame(), plain)}
    assert {k: v for k, v in got.items() if any(v)} == want


def test_avg_of_a_bool_is_the_share_of_true(curator: Curator) -> None:
    # At ε = 10^8 the noise is far below the tolerance: the released mean is the plain one.
    answer = curator.query("a", "SELECT AVG(flag) AS share FROM t", epsilon=1e8)
    (want,) = _plain(_frame(), "SELECT avg(flag::INT) FROM f")[0]
    assert answer.rows[0][0] == pytest.approx(want, abs=1e-4)


def test_group_by_bool_releases_both_keys_without_partition_selection(curator: Curator) -> None:
    sql = "SELECT flag, COUNT(*) AS n FROM t GROUP BY flag"
    plan = curator.plan(sql)[0]
    assert plan.group_by[0].categories == ("false", "true")
    assert not plan.needs_partition_selection
    answer = curator.query("a", sql, epsilon=1e8)  # δ = 0: no partition selection to pay for
    counts = dict(_plain(_frame(), "SELECT lower(flag::VARCHAR), count(*) FROM f GROUP BY 1"))
    assert {k: round(n) for k, n in answer.rows} == counts


def test_a_bool_compared_with_text_is_refused(curator: Curator) -> None:
    with pytest.raises(ParameterError) as err:
        curator.exact_aggregates("SELECT COUNT(*) FROM t WHERE flag = 'yes'")
    assert str(err.value) == (
        "literal compared with flag must be TRUE or FALSE (bool column flag); got \"'yes'\"."
    )


# -- a population's table ---------------------------------------------------------------------

POPULATION = population(
    "pid",
    {
        "crashes": private(3, **SCHEMA["columns"]),
        "devices": private(None, pid={"type": "int"}, oem=cats("x", "y")),
    },
)

POPULATION_EXACT = [
    ("SELECT COUNT(*) FROM telemetry.crashes WHERE flag", "SELECT count(*) FROM c WHERE flag"),
    (
        "SELECT flag, COUNT(*) FROM telemetry.crashes GROUP BY flag",
        "SELECT lower(flag::VARCHAR), count(*) FROM c GROUP BY flag",
    ),
    (
        "SELECT oem, COUNT(*) FROM telemetry.crashes JOIN telemetry.devices USING (pid) "
        "WHERE flag = FALSE GROUP BY oem",
        "SELECT oem, count(*) FROM c JOIN d USING (pid) WHERE flag = FALSE GROUP BY oem",
    ),
    (
        "SELECT COUNT(*) FROM (SELECT pid, flag FROM telemetry.crashes WHERE NOT flag) AS z",
        "SELECT count(*) FROM c WHERE NOT flag",
    ),
]


def _devices() -> pd.DataFrame:
    return pd.DataFrame({"pid": np.arange(200), "oem": np.where(np.arange(200) % 3, "x", "y")})


def _population_plain(sql: str) -> list[tuple[object, ...]]:
    con = duckdb.connect()
    try:
        con.register("c", _frame())
        con.register("d", _devices())
        return [tuple(r) for r in con.execute(sql).fetchall()]
    finally:
        con.close()


def _population_answers(cur: Curator) -> dict[str, dict[tuple[str, ...], tuple[object, ...]]]:
    out = {}
    for sql, _ in POPULATION_EXACT:
        got = cur.exact_aggregates(sql).values
        out[sql] = {k: v for k, v in got.items() if any(v)}
    return out


def _population_wanted() -> dict[str, dict[tuple[str, ...], tuple[object, ...]]]:
    out = {}
    for sql, plain in POPULATION_EXACT:
        keys = 1 if "GROUP BY" in sql else 0
        out[sql] = {
            tuple(str(k) for k in r[:keys]): tuple(r[keys:]) for r in _population_plain(plain)
        }
    return out


@pytest.mark.slow
def test_a_populations_bool_column_equals_plain_duckdb(tmp_path: Path) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    try:
        cur.register_dataset("telemetry", {"crashes": _frame(), "devices": _devices()}, POPULATION)
        assert _population_answers(cur) == _population_wanted()
    finally:
        cur.close()


@pytest.mark.spark
@pytest.mark.usefixtures("spark")  # the process's one session (tests/_spark.py)
def test_spark_reads_bool_columns_as_duckdb_does(tmp_path: Path) -> None:
    frame = _frame()
    words = tmp_path / "t.parquet"  # a Parquet source holding 0/1 integers
    frame.assign(flag=frame["flag"].astype(int)).to_parquet(words)
    cur = Curator(tmp_path / "s.duckdb")
    try:
        cur.register_dataset("t", str(words), SCHEMA, backend="spark")
        for sql, plain in EXACT:
            keys = len(cur.plan(sql)[0].group_by)
            want = {tuple(str(k) for k in r[:keys]): tuple(r[keys:]) for r in _plain(frame, plain)}
            got = cur.exact_aggregates(sql).values
            assert {k: v for k, v in got.items() if any(v)} == want, sql
        bad = frame.assign(flag=frame["flag"].astype(int))
        bad.loc[7, "flag"] = 2
        bad.to_parquet(tmp_path / "bad.parquet")
        with pytest.raises(ParameterError) as err:
            cur.register_dataset(
                "u", str(tmp_path / "bad.parquet"), SCHEMA, backend="spark", independent=True
            )
        assert str(err.value) == NOT_BOOLEAN
        cur.register_dataset(
            "telemetry",
            {"crashes": frame, "devices": _devices()},
            POPULATION,
            backend="spark",
            independent=True,
        )
        assert _population_answers(cur) == _population_wanted()
    finally:
        cur.close()
