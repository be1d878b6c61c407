"""What the Spark benchmark's two processes share: the query, the Spark settings, the timer.

benchmarks/spark_groupby.py (pyspark 4, infodp) and benchmarks/_tumult_spark_runner.py
(Tumult Analytics, which pins pyspark 3.5, so it runs in its own environment) import this
module; it uses the standard library only, so both interpreters can load it.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable
from typing import Any

#: The released query: one COUNT and one SUM per group.
SQL = "SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g"
#: The same query without privacy: the engine's physical limit.
PLAIN = "SELECT g, count(*), sum(v) FROM t GROUP BY g"
CATEGORIES = [f"c{i:02d}" for i in range(100)]
LOW, HIGH = 0.0, 1000.0
#: Rows each privacy unit (person_id) may contribute under per-unit privacy.
MAX_ROWS_PER_UNIT = 5
#: Mean rows per person_id in the generated data (Poisson-like: a fifth of the units exceed
#: MAX_ROWS_PER_UNIT, so truncation really drops rows).
ROWS_PER_UNIT = 4


def window_truncation_sql(table: str = "t") -> str:
    """Per-unit truncation written the textbook way: a global window over person_id.

    Each unit keeps ``MAX_ROWS_PER_UNIT`` rows chosen at random (Wilson et al. 2020,
    "Differentially Private SQL with Bounded User Contribution", Sect. 3: contribution
    bounding by reservoir sampling per user), then values are clamped to [LOW, HIGH].
    """
    return (
        f"SELECT g, COUNT(*), SUM(LEAST(GREATEST(v, {LOW}), {HIGH})) FROM ("
        f"SELECT g, v, row_number() OVER (PARTITION BY person_id ORDER BY rand()) AS r "
        f"FROM {table}) WHERE r <= {MAX_ROWS_PER_UNIT} GROUP BY g"
    )


def spark_conf(master: str = "local[2]", memory: str = "4g") -> dict[str, str]:
    """The Spark settings every Spark cell of the benchmark runs with (both processes)."""
    return {
        "spark.master": master,
        "spark.driver.memory": memory,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        # Adaptive execution (on by default since Spark 3.2) coalesces shuffle partitions;
        # 16 is the ceiling it starts from (200, the default, only adds scheduling on 2 cores).
        "spark.sql.shuffle.partitions": "16",
        "spark.sql.adaptive.enabled": "true",
        # Spark creates its warehouse folder in the working directory unless told otherwise.
        "spark.sql.warehouse.dir": "/tmp/infodp-bench/spark-warehouse",
    }


def spark_session(conf: dict[str, str]) -> Any:
    """A SparkSession with exactly ``conf`` (the first one in this process fixes the JVM)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("infodp-benchmark")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def timed(
    fn: Callable[[], Any], reps: int, slow: float = 30.0, very_slow: float = 300.0
) -> tuple[float, int]:
    """(median seconds, measured runs) of ``fn`` after one warm-up run.

    A cell whose warm-up takes longer than ``slow`` seconds is measured once more only: the
    JIT and the caches are warm by then, and the cell's spread is small beside its size. One
    whose warm-up takes longer than ``very_slow`` seconds is not run again: the warm-up is
    the measurement, reported as 0 measured runs.
    """
    start = time.perf_counter()
    fn()
    warm_up = time.perf_counter() - start
    if warm_up > very_slow:
        return warm_up, 0
    if warm_up > slow:
        reps = 1
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), reps


def once(fn: Callable[[], Any]) -> tuple[float, int]:
    """(seconds, 1) of one run of ``fn``: for one-off steps such as registration."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start, 1


def one_line(err: BaseException, width: int = 160) -> str:
    """``err`` as one table-cell line: the innermost ``XError: ...`` line of a traceback text
    (Spark wraps Python workers' and the JVM's tracebacks in the message), else the first."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    named = [line for line in lines if re.match(r"^[\w.]+(Error|Exception)\b", line)]
    text = (named or lines or [""])[-1 if named else 0]
    return f"{type(err).__name__}: {text}"[:width].replace("|", "/")
