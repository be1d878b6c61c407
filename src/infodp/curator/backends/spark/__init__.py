"""The Apache Spark backend: the same plans and bounds as DuckDB, run by Spark on Parquet.

A dataset registered with ``backend="spark"`` has a *source* (a Parquet file or directory, or
a table of Spark's catalogue) and a *bounded copy* that Spark writes as Parquet at
registration, once (:mod:`.writer`): every declared column typed, every bounded numeric column
cleaned by its null policy, clamped and snapped to its release grid (the expression every
backend uses, :func:`~infodp.curator.backends.bounding.snap_expression`, rendered in Spark's
dialect), and every privacy unit cut to at most ``max_rows_per_unit`` rows, chosen by a secret
salted hash of the unit and the row. Queries then read only the bounded copy
(:mod:`.backend`); the per-unit *group* limit, which depends on the query's GROUP BY, stays in
each query's SQL exactly as on DuckDB. Only the integer aggregates reach the driver.

Sessions are created on demand (``local[*]`` unless ``master``, ``INFODP_SPARK_MASTER`` or the
store's ``<store>.spark.toml`` says otherwise, :mod:`.settings`); deadlines cancel the query's
Spark job group; :mod:`.progress` draws the bar. Without pyspark or Java,
:class:`SparkUnavailable` says exactly what to install.

>>> spark_settings(master="local[2]")[0]
'local[2]'
"""

from __future__ import annotations

from infodp.curator.backends.spark.backend import SparkBackend
from infodp.curator.backends.spark.settings import (
    MASTER_ENV,
    PINNED,
    SparkUnavailable,
    config_path,
    require_spark,
    spark_settings,
)

__all__ = [
    "MASTER_ENV",
    "PINNED",
    "SparkBackend",
    "SparkUnavailable",
    "config_path",
    "require_spark",
    "spark_settings",
]
