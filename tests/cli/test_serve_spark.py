"""``infodp serve --spark-master/--spark-conf``: the same options, meaning and precedence as
``infodp query``'s, reaching every curator of the service (in the server process and in its
worker processes), without starting Spark; bad values are refused before anything starts.

Precedence (docs/spark.md): defaults < ``<db>.spark.toml`` < ``$INFODP_SPARK_MASTER`` (master
only) < the options.
"""

from __future__ import annotations

import json
import multiprocessing
import pickle
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from infodp.cli import main
from infodp.curator.backends.spark import MASTER_ENV, config_path, spark_settings
from infodp.errors import ParameterError
from infodp.server import pool as pool_module


@pytest.fixture
def store(
    copied_store: Callable[..., tuple[str, dict[str, str]]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> str:
    db, _ = copied_store(tmp_path, [("alice", "people", 1)], rows=10)
    config_path(db).write_text(
        'master = "spark://from-file:7077"\n'
        'spark.executor.memory = "2g"\n'
        'spark.sql.shuffle.partitions = "64"\n'
    )
    monkeypatch.setenv(MASTER_ENV, "spark://from-env:7077")
    return db


def _serve(db: str, *extra: str) -> int:
    return main(["serve", "--db", db, "--workers", "0", "--port", "0", *extra])


@pytest.mark.slow
def test_options_reach_the_services_spark_backend(
    store: str, served: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--spark-master", "local[3]", "--spark-conf", "spark.sql.shuffle.partitions=7"]
    assert _serve(store, *args, "--spark-conf", "spark.hadoop.fs.s3a.secret.key=s3cr3t") == 0
    (app,) = served
    service = app.state.service
    assert service.settings.spark_master == "local[3]"
    # The backend is made (pyspark and Java present) but no session starts until a query.
    backend = service.curator.spark()
    assert backend.master == "local[3]"  # the option wins over the environment and the file
    assert backend.settings["spark.sql.shuffle.partitions"] == "7"  # wins over the file
    assert backend.settings["spark.executor.memory"] == "2g"  # the file's, kept
    assert backend.settings["spark.hadoop.fs.s3a.secret.key"] == "s3cr3t"
    assert capsys.readouterr().out == ""  # without --json nothing is printed on stdout


@pytest.mark.slow
def test_json_start_up_object_names_keys_not_values(
    store: str, served: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "spark.hadoop.fs.s3a.secret.key=s3cr3t"
    assert _serve(store, "--json", "--spark-master", "local[2]", "--spark-conf", secret) == 0
    out = capsys.readouterr().out
    started = json.loads(out)
    assert started["spark_master"] == "local[2]"
    assert started["spark_conf_keys"] == ["spark.hadoop.fs.s3a.secret.key"]
    assert "s3cr3t" not in out


@pytest.mark.slow
def test_without_options_the_environment_and_the_file_decide(store: str, served: list[Any]) -> None:
    assert _serve(store) == 0
    backend = served[0].state.service.curator.spark()
    assert backend.master == "spark://from-env:7077"
    assert backend.settings["spark.sql.shuffle.partitions"] == "64"
    assert (backend.master, backend.settings) == spark_settings(store)


@pytest.mark.slow
def test_worker_processes_get_the_same_options(store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The pool hands its arguments to each worker's _worker_main (pool._start); run that
    # function here, with a Curator that records how it is made.
    from infodp.curator import engine
    from infodp.server.service import ServerSettings, Service

    svc = Service(
        ServerSettings(store, workers=1, spark_master="local[5]", spark_conf=("spark.x.y=1",))
    )
    try:
        args = svc.pool._args
    finally:
        svc.close()
    made: list[dict[str, Any]] = []

    class Recording(engine.Curator):
        def __init__(self, db: str, **kw: Any) -> None:
            made.append(kw)
            super().__init__(db, **kw)

    monkeypatch.setattr(engine, "Curator", Recording)
    monkeypatch.setattr(pool_module, "freeze_heap", lambda *names: None)
    monkeypatch.setattr(pool_module.signal, "signal", lambda *a: None)  # main thread only
    ours, theirs = multiprocessing.Pipe()
    worker = threading.Thread(target=pool_module._worker_main, args=(theirs, *args))
    worker.start()
    assert ours.recv()[0] == "ready"
    ours.send_bytes(pickle.dumps(None))  # stop
    worker.join(30)
    assert not worker.is_alive()
    assert made[0]["spark_master"] == "local[5]"
    assert tuple(made[0]["spark_conf"]) == ("spark.x.y=1",)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--spark-conf", "no-equals-sign"], "--spark-conf"),
        (["--spark-conf", "=1"], "--spark-conf"),
        (["--spark-conf", "executor.memory=4g"], "--spark-conf"),
        (["--spark-master", ""], "--spark-master"),
        (["--spark-master", "local [2]"], "--spark-master"),
    ],
)
def test_bad_spark_options_are_refused_before_serving(
    store: str,
    served: list[Any],
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    fragment: str,
) -> None:
    assert _serve(store, *args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("infodp: error:") and fragment in err
    assert _serve(store, "--json", *args) == 2
    captured = capsys.readouterr()
    error = json.loads(captured.out)["error"]
    assert error["exit_status"] == 2 and fragment in error["message"]
    assert served == []  # nothing was started


@pytest.mark.slow
def test_query_refuses_the_same_bad_master(store: str) -> None:
    # The check lives in spark_settings, shared with `infodp query` and the library.
    with pytest.raises(ParameterError, match="--spark-master"):
        spark_settings(store, master=" ")
