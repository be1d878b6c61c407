"""Time Tumult Analytics on the benchmark's Parquet; prints one JSON object on stdout.

Run by benchmarks/spark_groupby.py with the interpreter of an environment holding
``tmlt.analytics`` (it pins pyspark 3.5, so it cannot share infodp's pyspark 4 environment):

``/work/venvs/tumult/bin/python benchmarks/_tumult_spark_runner.py '{"path": ..., "conf": ...,
"reps": 3}'``

The Spark settings come from the caller, so both processes run Spark alike. Tumult releases one
aggregate per query, so the benchmark's ``COUNT(*), SUM(v) ... GROUP BY g`` is two queries
(a count and a sum over the same declared keys), each evaluated and collected.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from functools import partial
from typing import Any

from _spark_common import (  # type: ignore[import-not-found]  # the script's own folder
    CATEGORIES,
    HIGH,
    LOW,
    MAX_ROWS_PER_UNIT,
    PLAIN,
    once,
    one_line,
    spark_session,
    timed,
)


def _cell(
    cells: list[list[Any]], key: str, what: str, measure: Callable[[], tuple[float, int]]
) -> None:
    try:
        seconds, runs = measure()
        cells.append([key, what, seconds, runs])
    except Exception as err:  # report why the cell did not run, keep the others
        traceback.print_exc(file=sys.stderr)
        cells.append([key, what, f"not run: {one_line(err)}", 0])
    print(json.dumps(cells[-1]), file=sys.stderr, flush=True)


def main(config: dict[str, Any]) -> dict[str, Any]:
    import pyspark
    import tmlt.analytics
    from tmlt.analytics import (
        AddOneRow,
        AddRowsWithID,
        KeySet,
        MaxRowsPerID,
        PureDPBudget,
        QueryBuilder,
        Session,
    )
    from tmlt.analytics.utils import cleanup

    spark = spark_session(config["conf"])
    reps, slow = int(config["reps"]), float(config.get("slow", 30.0))
    frame = spark.read.parquet(config["path"])
    frame.createOrReplaceTempView("t")
    keys = KeySet.from_dict({"g": CATEGORIES})
    cells: list[list[Any]] = []
    _cell(
        cells,
        "tumult_plain",
        f"plain Spark SQL (pyspark {pyspark.__version__}, Tumult's environment)",
        lambda: timed(lambda: spark.sql(PLAIN).collect(), reps, slow),
    )

    sessions: dict[str, Any] = {}

    def build(kind: str) -> None:
        change = AddOneRow() if kind == "row" else AddRowsWithID("person_id")
        budget = PureDPBudget(float("inf"))
        sessions[kind] = Session.from_dataframe(budget, "t", frame, protected_change=change)

    def release(kind: str) -> None:
        base = QueryBuilder("t")
        if kind == "unit":
            base = base.enforce(MaxRowsPerID(MAX_ROWS_PER_UNIT))
        count = base.clone().groupby(keys).count()
        total = base.clone().groupby(keys).sum("v", LOW, HIGH)
        for query in (count, total):
            sessions[kind].evaluate(query, PureDPBudget(0.5)).collect()

    for kind, label in (
        ("row", "row-level"),
        ("unit", f"per-unit (AddRowsWithID, MaxRowsPerID({MAX_ROWS_PER_UNIT}))"),
    ):
        _cell(
            cells,
            f"tumult_{kind}_build",
            f"Tumult, {label}: session build",
            partial(once, partial(build, kind)),
        )
        _cell(
            cells,
            f"tumult_{kind}",
            f"Tumult, {label}: COUNT and SUM by g (two queries)",
            partial(timed, partial(release, kind), reps, slow),
        )
    versions = {
        "tmlt.analytics": tmlt.analytics.__version__,
        "pyspark": pyspark.__version__,
        "spark": spark.version,
    }
    cleanup()  # Tumult's temporary tables, before the session stops (its documented order)
    spark.stop()
    return {"versions": versions, "cells": cells}


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))), flush=True)
