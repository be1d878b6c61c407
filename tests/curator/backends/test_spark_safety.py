"""The Spark backend keeps the curator's safety properties, and says what to install.

The side-channel cases of ``tests/curator/test_side_channels.py`` (refusals before the
reservation, answered queries, over-budget) are replayed on a PAIR of Spark stores that
differ in one privacy unit (add/remove neighbours, Dwork & Roth 2014, Def. 2.4): the
analyst's observable outcome (exception and message, or the cost object) must be identical
across the pair. Failures after the reservation are one constant error and stay charged;
a deadline cancels the query's Spark job group and fails the same way.
"""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _stores import ints, make_store, one_table, spent
from infodp.cli import main
from infodp.curator.backends import spark as spark_backend
from infodp.curator.backends.spark import SparkBackend, SparkUnavailable, spark_settings
from infodp.curator.engine import Curator
from infodp.errors import InfodpError, ParameterError, QueryFailed

_SIDE = Path(__file__).resolve().parent.parent / "test_side_channels.py"
_spec = importlib.util.spec_from_file_location("_side_channel_cases", _SIDE)
assert _spec is not None and _spec.loader is not None
side = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = side
_spec.loader.exec_module(side)


def _make(directory: Path, rows: list[tuple[Any, ...]]) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(rows, columns=["person_id", "age", "score", "region", "city"])
    frame.to_parquet(directory / "people.parquet")
    source = str(directory / "people.parquet")
    return make_store(directory, "people", source, side.SCHEMA, backend="spark").db


@pytest.fixture(scope="module")
def pair(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("spark_pair")
    return (
        _make(root / "with_bob", [*side.ROWS, side.BOB]),
        _make(root / "without_bob", side.ROWS),
    )


def _outcome(db: str, sql: str, eps: str, delta: str) -> tuple[Any, ...]:
    cur = Curator(db)
    try:
        r = cur.query("a", sql, epsilon=eps, delta=delta)
        return ("ok", r.cost.to_dict())
    except InfodpError as err:
        return (type(err).__name__, str(err))
    finally:
        cur.close()


def _spent(db: str) -> tuple[Fraction, int]:
    epsilon, _, entries = spent(db, "people")
    return epsilon, entries


@pytest.mark.spark
@pytest.mark.parametrize(("name", "sql", "eps", "delta"), side.CASES, ids=side.IDS)
def test_spark_outcome_is_identical_across_neighbours(
    pair: tuple[str, str], name: str, sql: str, eps: str, delta: str
) -> None:
    before = [_spent(db) for db in pair]
    seen = [_outcome(db, sql, eps, delta) for db in pair]
    after = [_spent(db) for db in pair]
    assert seen[0] == seen[1]
    expected = side._expected(name)
    if expected == "answered":
        assert seen[0][0] == "ok"
    else:
        assert seen[0][0] != "ok"
        assert after == before  # refused before the reservation: nothing spent or logged


@pytest.mark.spark
def test_spark_failures_after_the_reservation_are_constant_and_charged(
    pair: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = set()
    for i, exc in enumerate(
        [RuntimeError("row bob has age 50"), MemoryError(), OverflowError("x = 1e309")]
    ):

        def boom(*args: Any, _exc: BaseException = exc, **kwargs: Any) -> Any:
            raise _exc

        monkeypatch.setattr(SparkBackend, "aggregate", boom)
        db = pair[i % 2]
        before = _spent(db)
        messages.add(_outcome(db, "SELECT COUNT(*) FROM people", "0.001", "0"))
        assert _spent(db)[0] - before[0] == Fraction(1, 1000)
    assert messages == {("QueryFailed", QueryFailed.MESSAGE)}


@pytest.mark.spark
def test_spark_deadline_fails_constantly_and_stays_charged(pair: tuple[str, str]) -> None:
    cur = Curator(pair[0], query_timeout=0.001)
    try:
        before = cur.ledger.budget("a", "people").spent_epsilon
        with pytest.raises(QueryFailed):
            cur.query(
                "a", "SELECT region, AVG(age), MEDIAN(score) FROM people GROUP BY region", epsilon=1
            )
        entry = cur.ledger.entries()[-1]
        assert entry.status == "failed" and "deadline" in (entry.error or "").lower()
        assert cur.ledger.budget("a", "people").spent_epsilon - before == 1
    finally:
        cur.close()


# -- what to install -------------------------------------------------------------------------


def test_missing_pyspark_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark now fails
    with pytest.raises(SparkUnavailable, match=r"pip install 'infodp\[spark\]'"):
        spark_backend.require_spark()
    cur = Curator(tmp_path / "s.duckdb")
    schema = one_table("t", {"x": ints(0, 9)})
    with pytest.raises(SparkUnavailable):
        cur.register_dataset("t", str(tmp_path / "x.parquet"), schema, backend="spark")
    cur.close()
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps(schema))
    args = ["dataset", "register", "--db", str(tmp_path / "c.duckdb"), "--name", "t"]
    code = main([*args, "--source", "x.parquet", "--schema", str(spec), "--backend", "spark"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "pip install 'infodp[spark]'" in err


def test_missing_java_names_the_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    with pytest.raises(SparkUnavailable, match="default-jre-headless"):
        spark_backend.require_spark()


# -- settings --------------------------------------------------------------------------------


def test_settings_come_from_the_file_the_environment_and_the_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s.duckdb"
    Path(str(store) + ".spark.toml").write_text(
        'master = "spark://file:7077"\nspark.executor.memory = "4g"\n'
        "[spark.sql]\nshuffle.partitions = 8\nadaptive.enabled = false\n"
    )
    monkeypatch.delenv(spark_backend.MASTER_ENV, raising=False)
    master, conf = spark_settings(store)
    assert master == "spark://file:7077"
    assert conf["spark.executor.memory"] == "4g"
    assert conf["spark.sql.shuffle.partitions"] == "8"
    assert conf["spark.sql.adaptive.enabled"] == "false"
    monkeypatch.setenv(spark_backend.MASTER_ENV, "spark://env:7077")
    assert spark_settings(store)[0] == "spark://env:7077"
    master, conf = spark_settings(store, master="local[2]", conf=["spark.sql.shuffle.partitions=2"])
    assert master == "local[2]" and conf["spark.sql.shuffle.partitions"] == "2"
    monkeypatch.delenv(spark_backend.MASTER_ENV)
    assert spark_settings(tmp_path / "none.duckdb")[0] == "local[*]"


@pytest.mark.parametrize(
    ("text", "conf"),
    [
        ('colour = "blue"\n', ()),
        ("master = \n", ()),
        ("", ["executor.memory=4g"]),
        ("", ["spark.executor.memory"]),
    ],
)
def test_bad_settings_are_refused_naming_them(
    tmp_path: Path, text: str, conf: list[str] | tuple[()]
) -> None:
    store = tmp_path / "s.duckdb"
    Path(str(store) + ".spark.toml").write_text(text)
    with pytest.raises(ParameterError):
        spark_settings(store, conf=conf)


@pytest.mark.parametrize(
    ("text", "conf", "named"),
    [
        ("[spark.sql]\nadaptive.enabled = true\n", (), "spark.sql.adaptive.enabled=true"),
        ("", ["spark.sql.autoBroadcastJoinThreshold=10m"], "autoBroadcastJoinThreshold=10m"),
        ("", {"spark.sql.cbo.enabled": "true"}, "spark.sql.cbo.enabled=true"),
    ],
)
def test_settings_that_let_plans_follow_sizes_are_refused(
    tmp_path: Path, text: str, conf: Any, named: str
) -> None:
    store = tmp_path / "s.duckdb"
    Path(str(store) + ".spark.toml").write_text(text)
    with pytest.raises(ParameterError, match="private") as err:
        spark_settings(store, conf=conf)
    assert named in str(err.value) and "\n" not in str(err.value)
    # the pinned values themselves are accepted, and every session gets them
    _, settings = spark_settings(
        store.with_name("none.duckdb"), conf=[f"{k}={v}" for k, v in spark_backend.PINNED.items()]
    )
    assert {k: settings[k] for k in spark_backend.PINNED} == spark_backend.PINNED


# -- progress --------------------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.spark
@pytest.mark.parametrize("progress", [True, False])
def test_progress_is_drawn_on_a_terminal_only_when_asked(
    spark: Any, monkeypatch: pytest.MonkeyPatch, progress: bool
) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    backend = SparkBackend(progress=progress)
    work = spark.range(0, 20_000_000, numPartitions=4).selectExpr("sum(id % 7)")
    backend._run(spark, lambda _: work.collect(), None)
    drawn = terminal.getvalue()
    if progress:
        assert "Spark" in drawn and "%" in drawn
    else:
        assert drawn == ""


@pytest.mark.spark
def test_a_source_spark_cannot_read_is_one_clear_error(spark: Any, tmp_path: Path) -> None:
    bad = tmp_path / "broken.parquet"
    bad.write_text("this is not Parquet")
    schema = one_table("t", {"x": ints(0, 9)})
    cur = Curator(tmp_path / "s.duckdb")
    try:
        with pytest.raises(ParameterError, match="Spark could not register the source"):
            cur.register_dataset("t", str(bad), schema, backend="spark")
        with pytest.raises(ParameterError, match="a Parquet path or a table"):
            cur.register_dataset("t", "no such table!", schema, backend="spark")
        assert cur.ledger.datasets() == []
        assert not Path(str(cur.db) + ".bounded", "t").exists()
    finally:
        cur.close()


@pytest.mark.spark
def test_a_failing_spark_statement_prints_nothing(
    spark: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    """pyspark logs a failing statement's error (which can hold data) to stderr; the backend
    silences it, so a failure after the reservation shows only the constant error."""
    backend = SparkBackend()
    session = backend.session()
    capfd.readouterr()
    with pytest.raises(Exception, match="DIVIDE_BY_ZERO"):
        session.sql("SELECT 1 / 0 AS x").collect()
    assert capfd.readouterr().err == ""
