"""A terminal progress bar of a Spark job group, and quiet loggers (nothing of a failing
statement reaches an analyst's terminal)."""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = ["StageProgress", "quiet_query_context_loggers"]


class StageProgress:
    """A rich progress bar of the job group's stage progress (as a percentage only: task
    counts follow the size of the data, which an analyst must not read off a terminal)."""

    def __init__(self, sc: SparkContext, group: str) -> None:
        self.sc = sc
        self.group = group
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name="infodp-spark-progress", daemon=True
        )

    def start(self) -> None:
        """Draw the bar (on stderr) until :meth:`stop`."""
        self._thread.start()

    def stop(self) -> None:
        """Remove the bar."""
        self._stop.set()
        self._thread.join(timeout=2)

    def _fraction(self) -> float:
        tracker = self.sc.statusTracker()
        done = total = 0
        for job in tracker.getJobIdsForGroup(self.group):
            info = tracker.getJobInfo(job)
            if info is None:
                continue
            for stage in info.stageIds:
                s = tracker.getStageInfo(stage)
                if s is not None:
                    done += s.numCompletedTasks
                    total += s.numTasks
        return done / total if total else 0.0

    def _loop(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn

        with Progress(
            TextColumn("Spark"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            console=Console(stderr=True),
            transient=True,
        ) as bar:
            task = bar.add_task("spark", total=1.0)
            while not self._stop.wait(0.25):
                with contextlib.suppress(Exception):
                    bar.update(task, completed=self._fraction())


def quiet_query_context_loggers() -> None:
    """Silence pyspark's loggers that print a failing statement's error (with its values)
    to stderr: after the reservation a failure is one constant error, and nothing else may
    reach an analyst's terminal."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)
