"""The service's log handlers, added to uvicorn's own loggers and nowhere else.

uvicorn configures its logs with :func:`logging.config.dictConfig`, which first shuts down
*every* handler of the process, whoever installed it. ``infodp serve`` also runs inside a
process that other libraries share (``infodp.cli.main`` from a notebook or a test run), and
shutting down their handlers breaks them: absl's handler (installed by dp_accounting)
closes its stream on shutdown, which is the ``sys.stderr`` of the moment it was created,
e.g. pytest's capture buffer. So the service passes ``log_config=None`` to uvicorn and adds
the same handlers and formats itself, to the ``uvicorn`` and ``uvicorn.access`` loggers only.
They write to ``sys.stderr`` / ``sys.stdout`` as they are when a record is written, never
holding on to (or closing) a stream that was replaced since.

>>> def ours():  # other handlers on the logger (a test's, a host's) are left alone
...     return [h for h in logging.getLogger("uvicorn").handlers
...             if isinstance(h, CurrentStreamHandler)]
>>> configure()
>>> len(ours())
1
>>> configure()  # again: replaced, not added twice
>>> len(ours())
1
"""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO

__all__ = ["CurrentStreamHandler", "configure"]

# uvicorn's formats (uvicorn.config.LOGGING_CONFIG).
_DEFAULT_FORMAT = "%(levelprefix)s %(message)s"
_ACCESS_FORMAT = '%(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s'


class CurrentStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler writing to ``sys.<name>`` as it is at each record; closing it
    closes nothing but the handler.

    >>> handler = CurrentStreamHandler("stdout")
    >>> handler.stream is sys.stdout
    True
    """

    def __init__(self, name: Literal["stderr", "stdout"]) -> None:
        logging.Handler.__init__(self)
        self._name = name

    @property
    def stream(self) -> TextIO:
        stream: TextIO = getattr(sys, self._name)
        return stream

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass  # the stream is always the current sys.<name>


def configure() -> None:
    """uvicorn's log handlers (as its default configuration has them) on its loggers,
    replacing ours from an earlier call and leaving every other handler alone."""
    from uvicorn.logging import AccessFormatter, DefaultFormatter

    loggers: tuple[tuple[str, Literal["stderr", "stdout"], logging.Formatter], ...] = (
        ("uvicorn", "stderr", DefaultFormatter(_DEFAULT_FORMAT)),
        ("uvicorn.access", "stdout", AccessFormatter(_ACCESS_FORMAT)),
    )
    for name, stream, formatter in loggers:
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if isinstance(h, CurrentStreamHandler)]:
            logger.removeHandler(old)
        handler = CurrentStreamHandler(stream)
        handler.setFormatter(formatter)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)  # uvicorn sets the children to --log-level
        logger.propagate = False
