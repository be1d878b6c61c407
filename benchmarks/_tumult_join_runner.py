"""Tumult Analytics on the join benchmark's Parquet tables; prints one JSON object on stdout.

Run by benchmarks/joins.py with the interpreter of an environment holding ``tmlt.analytics``
(it pins pyspark 3.5, so it cannot share infodp's pyspark 4 environment):

``/work/venvs/tumult/bin/python benchmarks/_tumult_join_runner.py '{"timing": {"people": ...,
"visits": ..., "regions": ...}, "accuracy": {...}, "sql": ..., "conf": ..., "reps": 3,
"max_rows": 20, "low": 0, "high": 5000, "epsilon": 1, "answers": 50, "seconds": 900}'``

The people and visits tables are private with the same privacy identifier
(``AddRowsWithID("person_id")`` in one identifier space, Tumult's form of a population with
several tables); ``regions`` is public. The query joins people and visits on person_id
(``join_private``: tables keyed by the identifier need no truncation to join), joins the public
regions, keeps at most ``max_rows`` joined rows per person (``MaxRowsPerID``, the truncation
that bounds each person's contribution) and groups by country over the keys of the public table.
Tumult releases one aggregate per query, so the COUNT and the SUM are two queries at ε/2 each
(pure DP, ε in total). ``timing``: plain Spark SQL on this pyspark, the session build and the
two queries, timed; ``accuracy``: ``answers`` releases of both queries (or as many as
``seconds`` allow) on the smaller tables, returned as {country: [count, sum]} per release.
"""

from __future__ import annotations

import json
import sys
import time
from functools import partial
from typing import Any

from _spark_common import (  # type: ignore[import-not-found]  # the script's own folder
    once,
    one_line,
    spark_session,
    timed,
)
from _tumult_spark_runner import _cell  # type: ignore[import-not-found]  # the same folder


class Join:
    """A Tumult session over the three tables and the benchmark's two queries."""

    def __init__(self, spark: Any, paths: dict[str, str], config: dict[str, Any]) -> None:
        self.spark, self.paths, self.config = spark, paths, config
        self.session: Any = None
        self.queries: list[Any] = []

    def build(self) -> None:
        from tmlt.analytics import (
            AddRowsWithID,
            KeySet,
            MaxRowsPerID,
            PureDPBudget,
            QueryBuilder,
            Session,
        )

        frames = {name: self.spark.read.parquet(path) for name, path in self.paths.items()}
        person = AddRowsWithID("person_id", "person")
        self.session = (
            Session.Builder()
            .with_privacy_budget(PureDPBudget(float("inf")))
            .with_id_space("person")
            .with_private_dataframe("people", frames["people"], protected_change=person)
            .with_private_dataframe("visits", frames["visits"], protected_change=person)
            .with_public_dataframe("regions", frames["regions"])
            .build()
        )
        keys = KeySet.from_dataframe(frames["regions"].select("country").distinct())
        base = (
            QueryBuilder("people")
            .join_private("visits", join_columns=["person_id"])
            .join_public("regions", join_columns=["region"])
            .enforce(MaxRowsPerID(int(self.config["max_rows"])))
        )
        low, high = float(self.config["low"]), float(self.config["high"])
        self.queries = [
            base.clone().groupby(keys).count(name="visits"),
            base.clone().groupby(keys).sum("cost", low, high, name="total"),
        ]

    def release(self) -> dict[str, list[float]]:
        """One release of both queries: {country: [count, sum]}."""
        from tmlt.analytics import PureDPBudget

        budget = PureDPBudget(float(self.config["epsilon"]) / len(self.queries))
        out: dict[str, list[float]] = {}
        for query in self.queries:
            for row in self.session.evaluate(query, budget).collect():
                value = row["visits"] if "visits" in row else row["total"]
                out.setdefault(str(row["country"]), []).append(float(value))
        return out


def timing(spark: Any, config: dict[str, Any]) -> list[list[Any]]:
    paths, reps = config["timing"], int(config["reps"])
    for name, path in paths.items():
        spark.read.parquet(path).createOrReplaceTempView(name)
    cells: list[list[Any]] = []
    _cell(
        cells,
        "tumult_plain",
        "plain Spark SQL on Tumult's pyspark (no noise)",
        partial(timed, lambda: spark.sql(config["sql"]).collect(), reps),
    )
    join = Join(spark, paths, config)
    _cell(cells, "tumult_build", "Tumult: session build", partial(once, join.build))
    if join.queries:
        _cell(
            cells,
            "tumult",
            "Tumult: COUNT and SUM by country (two queries, ε/2 each)",
            partial(timed, join.release, reps),
        )
    return cells


def accuracy(spark: Any, config: dict[str, Any]) -> list[dict[str, list[float]]]:
    join = Join(spark, config["accuracy"], config)
    join.build()
    deadline = time.perf_counter() + float(config.get("seconds", float("inf")))
    answers = []
    for i in range(int(config["answers"])):
        if time.perf_counter() > deadline:
            break
        start = time.perf_counter()
        answers.append(join.release())
        progress = ["tumult accuracy", i, round(time.perf_counter() - start, 2)]
        print(json.dumps(progress), file=sys.stderr, flush=True)
    return answers


def main(config: dict[str, Any]) -> dict[str, Any]:
    import pyspark
    import tmlt.analytics
    from tmlt.analytics.utils import cleanup

    spark = spark_session(config["conf"])
    out: dict[str, Any] = {
        "versions": {
            "tmlt.analytics": tmlt.analytics.__version__,
            "pyspark": pyspark.__version__,
            "spark": spark.version,
        }
    }
    if config.get("timing"):
        out["cells"] = timing(spark, config)
    if config.get("accuracy"):
        try:
            out["answers"] = accuracy(spark, config)
        except Exception as err:  # say why, keep the timing cells
            out["accuracy_error"] = f"not run: {one_line(err)}"
    cleanup()  # Tumult's temporary tables, before the session stops (its documented order)
    spark.stop()
    return out


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))), flush=True)
