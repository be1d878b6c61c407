"""Keep the garbage collector's full passes short in long-running service processes.

CPython's cyclic collector scans every tracked object on a full (generation-2) pass. A server
or worker process holds about 65 000–95 000 long-lived objects once FastAPI, pydantic, DuckDB,
sqlglot and numpy are imported, and a full pass over them took 50–300 ms (measured under
load), a pause of the whole interpreter that every request then in flight waits for: the
tail of the 16-client latency (BENCHMARKS.md "server load"). :func:`freeze_heap` collects once,
then moves everything alive into the permanent generation (:func:`gc.freeze`, meant for this
use), so later full passes scan only what was allocated since. Objects frozen this way are
still freed by reference counting; only cycles among them are never collected, and the
start-up state has none left after the collection.

>>> import gc
>>> freeze_heap()
>>> gc.get_freeze_count() > 0
True
>>> gc.unfreeze()
"""

from __future__ import annotations

import gc
import importlib

__all__ = ["freeze_heap"]


def freeze_heap(*modules: str) -> None:
    """Import ``modules`` (what the first request would import lazily), collect, then freeze
    every object alive now out of the collector's full passes."""
    for name in modules:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()
