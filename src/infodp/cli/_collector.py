"""The garbage collector in a process that runs one ``infodp`` command and exits.

CPython's cyclic collector scans the objects it tracks; a process that runs one command and
exits pays for two of its passes and gets nothing back (measured on ``infodp query``,
``benchmarks/cli_startup.py``):

- the command's start-up imports sqlglot, DuckDB and the curator (some 60 000 objects:
  modules, classes, functions, all alive until the process ends); the allocations trigger
  about 90 young and 8 middle-aged passes over them, and a full one once numpy's import
  (an AVG's interval, :mod:`infodp.cli._prefetch`) tips the count over: 15 ms of a COUNT's
  process, 30 ms of an AVG's, for no garbage to speak of;
- at exit the interpreter collects again and frees every module's objects one by one, some
  40 ms for memory the operating system takes back at once when the process ends.

:func:`one_command` (the ``infodp`` entry point, running the process's own command line)
collects the garbage the command left when it returns, so every finalizer that would have
run at exit runs, then freezes what is alive (:func:`gc.freeze`: moved to the permanent
generation, which no pass scans; still freed by reference counting): the interpreter's exit
collects nothing more. The store and the ledger are closed by the command itself, and the
``atexit`` handlers (the ledger's held completions) run as before. Inside it,
:func:`start_up` pauses the collector while a command imports its modules and opens the
store, then freezes what they made, so the passes of the rest of the command, and the last
collection, scan only what the command allocated since. The same idea as the service's
:mod:`infodp.server._heap`, for a process that lives a fraction of a second.

Outside :func:`one_command` (a command run inside a longer-lived process: a test, a
notebook calling ``main([...])``) :func:`start_up` changes nothing.

>>> import gc
>>> with one_command():
...     with start_up():
...         paused = not gc.isenabled()
>>> paused, gc.isenabled(), gc.get_freeze_count() > 0
(True, True, True)
>>> gc.unfreeze()
>>> with start_up():  # not inside one_command: the collector is left alone
...     gc.isenabled()
True
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["one_command", "start_up"]

_depth = 0  # how many one_command() blocks are open (the entry point opens one)


@contextlib.contextmanager
def one_command() -> Iterator[None]:
    """Run the process's one command; when it ends, collect its garbage and freeze the rest
    (module docstring)."""
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        gc.collect()
        gc.freeze()


@contextlib.contextmanager
def start_up() -> Iterator[None]:
    """Inside :func:`one_command`: no collection while the block runs (a command's imports
    and opening of its store), then what is alive is frozen. Elsewhere: nothing."""
    if _depth == 0 or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
