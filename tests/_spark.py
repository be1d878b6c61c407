"""One local Spark session for every Spark test of a pytest process (starting a JVM costs
seconds): local[2], two shuffle partitions, no web UI, a JVM tuned for starting fast.

Every test that runs Spark in its own process asks for the ``spark`` fixture (tests/conftest.py;
directly, or through a fixture that does), so the first one starts the session and the others
find it running: a store registered with ``backend="spark"`` runs on the active session too
(:meth:`infodp.curator.backends.spark.SparkBackend.session`), and so does a documented
``infodp dataset register --backend spark`` run in-process (tests/test_docs_blocks.py). Were a
module to stop that session, the next fixture that asks starts it again instead of handing out a
stopped one.
"""

from __future__ import annotations

from typing import Any

__all__ = ["session", "stop"]

_RUNNING: list[Any] = []


def session() -> Any:
    """The process's test session, started when none runs (or when it was stopped)."""
    from pyspark.sql import SparkSession

    from infodp.curator.backends.spark import spark_settings

    if _RUNNING and _RUNNING[0].sparkContext._jsc is not None:
        return _RUNNING[0]
    _, settings = spark_settings(
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.ui.enabled": "false",
            "spark.driver.memory": "1g",
            # The tests' data are small: the JVM's time goes into warming up, not into running
            # hot code. Its first-tier (C1) compiler only and one GC thread halve the JVM's CPU
            # for a session and a few registrations (about 25 s -> 13 s of one core measured)
            # and leave what Spark computes as it is.
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        }
    )
    builder = SparkSession.builder.master("local[2]").appName("infodp-tests")
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    _RUNNING[:] = [session]
    return session


def stop() -> None:
    """Stop the process's session, if one was started and still runs."""
    if _RUNNING and _RUNNING[0].sparkContext._jsc is not None:
        _RUNNING[0].stop()
    _RUNNING.clear()
