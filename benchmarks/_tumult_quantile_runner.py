"""Tumult Analytics' 90th percentile on the quantile benchmark's Parquet; JSON on stdout.

Run by benchmarks/quantile_accuracy.py with the interpreter of an environment holding
``tmlt.analytics`` (it pins pyspark 3.5 and numpy 1, so it has its own environment):

``/work/venvs/tumult/bin/python benchmarks/_tumult_quantile_runner.py '{"path": ...,
"column": "income", "q": 0.9, "low": 0, "high": 300000, "epsilons": [...], "reps": 50,
"seconds": 2400}'``

One session with an infinite pure-DP budget and one row per person (``AddOneRow``); each
answer is its own ``quantile`` query evaluated at ``PureDPBudget(ε)``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from typing import Any


def main(config: dict[str, Any]) -> dict[str, Any]:
    import tmlt.analytics
    from pyspark.sql import SparkSession
    from tmlt.analytics import AddOneRow, PureDPBudget, QueryBuilder, Session
    from tmlt.analytics.utils import cleanup

    spark = (
        SparkSession.builder.appName("infodp-quantile-benchmark")
        .master("local[2]")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="tumult-warehouse-"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    frame = spark.read.parquet(config["path"]).select(config["column"])
    session = Session.from_dataframe(
        PureDPBudget(float("inf")), "t", frame, protected_change=AddOneRow()
    )
    query = QueryBuilder("t").quantile(
        config["column"], config["q"], config["low"], config["high"], name="q"
    )
    answers: dict[str, list[float]] = {str(eps): [] for eps in config["epsilons"]}
    # Round-robin over ε, until ``reps`` rounds or ``seconds`` have passed (each answer is a
    # Spark job of seconds to a minute on a loaded machine): every ε gets as many answers.
    deadline = time.perf_counter() + float(config.get("seconds", float("inf")))
    for i in range(int(config["reps"])):
        if time.perf_counter() > deadline:
            break
        for eps in config["epsilons"]:
            start = time.perf_counter()
            answer = float(session.evaluate(query, PureDPBudget(eps)).collect()[0]["q"])
            answers[str(eps)].append(answer)
            line = f"tumult eps={eps} rep={i} {answer:.2f} {time.perf_counter() - start:.1f}s"
            print(line, file=sys.stderr, flush=True)
    version = tmlt.analytics.__version__
    cleanup()
    spark.stop()
    return {"version": version, "answers": answers}


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))), flush=True)
