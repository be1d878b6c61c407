"""One local Spark session for every Spark test of a pytest process (starting a JVM costs
seconds): local[2], two shuffle partitions, no web UI."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    from infodp.curator.backends.spark import spark_settings

    _, settings = spark_settings(
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.ui.enabled": "false",
            "spark.driver.memory": "1g",
        }
    )
    builder = SparkSession.builder.master("local[2]").appName("infodp-tests")
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
