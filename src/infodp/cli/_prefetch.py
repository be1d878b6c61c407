"""numpy imported on a helper thread while a one-query process does other work (``infodp query``).

A query process that releases an AVG, VARIANCE, STDDEV, MIN, MAX or quantile needs numpy for
the release (the exact-law interval's convolution, :mod:`infodp.mechanisms.error_law`; the
exponential mechanism's scores). Imported there, on the main thread, numpy's import (about
60 ms, and twice that while OpenBLAS starts its thread pool) is added to the answer time.
Started on a helper thread as soon as the query text is known, it can run only while the main
thread releases the interpreter lock: during DuckDB's aggregate and the ledger's fsync
(opening the store holds it). On the 1M-row demo those waits are short, and the measured gain
is within the noise of ``benchmarks/cli_startup.py``: most of numpy's import is added to an
AVG's process time whatever the thread that runs it.

Which queries start it is decided from the query's text alone (a public fact: the analyst's
own question), never from the data. A query that names none of those aggregates imports
nothing more; one that names them where the planner does not count them (in a string
literal, or a ratio the planner does not turn into an AVG) imports numpy for nothing, which
changes no answer.

OpenBLAS is also told to use one thread (``OPENBLAS_NUM_THREADS=1``, unless the environment
says otherwise): a one-query process multiplies no large matrices, and starting the thread
pool costs about as much as the rest of numpy's import. Both happen only while numpy is not
imported yet, so a process that already holds numpy (a test, a notebook) is left alone.

>>> needs_numpy("SELECT region, AVG(income) FROM census GROUP BY region")
True
>>> needs_numpy("SELECT COUNT(*), SUM(income) FROM census")
False
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import threading

__all__ = ["needs_numpy", "prefetch_numpy"]

#: Calls of the aggregates whose release uses numpy, in any dialect spelling the planner
#: accepts (VAR, VARP, STDEV, VAR_SAMP, STDDEV_POP, PERCENTILE_CONT, APPROX_QUANTILE, ...),
#: and a call divided by something (``SUM(v) / COUNT(*)``, which the planner may answer as an
#: AVG).
_NUMPY_AGGREGATES = re.compile(
    r"\b(?:avg|var\w*|std\w*|median|quantile\w*|approx_quantile\w*|percentile\w*|min|max)\s*\("
    r"|\)\s*/",
    re.IGNORECASE,
)

#: The environment variable OpenBLAS reads for its thread count when numpy loads it.
BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def needs_numpy(sql: str) -> bool:
    """Whether the text of ``sql`` calls an aggregate whose release uses numpy.

    >>> needs_numpy("select stddev_pop(x), max (y) from t"), needs_numpy("SELECT avg_x FROM t")
    (True, False)
    """
    return _NUMPY_AGGREGATES.search(sql) is not None


def _import_numpy() -> None:
    try:
        importlib.import_module("numpy")
    except Exception:  # the release imports it again and reports the failure
        return


def prefetch_numpy(sql: str) -> threading.Thread | None:
    """Start importing numpy on a helper thread if ``sql`` needs it and it is not imported yet
    (module docstring); the thread, or None when nothing was started.

    The thread is not a daemon: a process that ends while it runs waits for the import to
    finish (a few tens of milliseconds) rather than tearing an import down half-done.

    >>> prefetch_numpy("SELECT COUNT(*) FROM t") is None
    True
    """
    if "numpy" in sys.modules or not needs_numpy(sql):
        return None
    os.environ.setdefault(BLAS_THREADS, "1")
    thread = threading.Thread(target=_import_numpy, name="infodp-numpy-import")
    thread.start()
    return thread
