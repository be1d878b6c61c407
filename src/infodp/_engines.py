"""The engines a dataset may live on: one entry per engine, the one list of their names.

Everything outside the backends that depends on the engine asks its entry here, never its
name: where its bounded copy lives (``Engine.in_store``) and which class runs it
(``Engine.backend``, imported on first use). The names are what ``register_dataset(...,
backend=...)``, ``infodp dataset register --backend`` and the store's catalogue say. This module
is pure data (no curator import), so the CLI lists the names in its choices without loading
the curator.

A third engine is one more entry here, its entry in the dialect table
(:data:`~infodp.curator.backends.dialects.DIALECTS`; ``tests/test_engines.py`` checks that
both tables name the same engines) and its backend class, judged by
``tests/curator/backends/``.

>>> engine("spark").in_store, engine(DEFAULT.name).in_store
(False, True)
>>> names()
('duckdb', 'spark')
>>> engine("oracle")
Traceback (most recent call last):
...
infodp.errors.ParameterError: backend must be one of duckdb, spark; got 'oracle'.
"""

from __future__ import annotations

from dataclasses import dataclass

from infodp.errors import ParameterError

__all__ = ["DEFAULT", "DUCKDB", "ENGINES", "SPARK", "Engine", "engine", "external", "names"]


@dataclass(frozen=True, slots=True)
class Engine:
    """One engine's entry.

    ``name``: as the API, the CLI and the catalogue spell it. ``in_store``: its bounded copy is
    a table of the store's own DuckDB file (registered, read and dropped there, queried over
    the store's connections); otherwise the engine writes the copy elsewhere (``bounded_path``,
    recorded in the catalogue) and runs in its own session. ``backend``: ``module:Class`` of
    the class an external engine is made of, ``Class(store_path, **options)``; the in-store
    engine is the store's own backend.
    """

    name: str
    in_store: bool
    backend: str = ""


DUCKDB = Engine("duckdb", in_store=True)
SPARK = Engine("spark", in_store=False, backend="infodp.curator.backends.spark:SparkBackend")
#: The engine a dataset is registered with when none is named.
DEFAULT = DUCKDB

#: Every engine by name (in the order the CLI lists them).
ENGINES: dict[str, Engine] = {e.name: e for e in (DUCKDB, SPARK)}


def names() -> tuple[str, ...]:
    """The engines' names, in order."""
    return tuple(ENGINES)


def engine(name: object) -> Engine:
    """The entry of engine ``name`` (a :class:`~infodp.errors.ParameterError` naming the
    known engines otherwise)."""
    found = ENGINES.get(name) if isinstance(name, str) else None
    if found is None:
        raise ParameterError("backend", name, "one of " + ", ".join(ENGINES))
    return found


def external() -> tuple[str, ...]:
    """The engines whose bounded copy lives outside the store (the ones ``bounded_path`` is
    for).

    >>> external()
    ('spark',)
    """
    return tuple(e.name for e in ENGINES.values() if not e.in_store)
