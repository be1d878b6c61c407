"""The access log never holds a key: query strings and key-shaped path parts are redacted.

A client may put its key where it does not belong (``GET /v1/budget?api_key=...``): the
service refuses it (keys are accepted only in the ``Authorization`` header), but uvicorn's
access log wrote the request line in full, so the secret ended up in a file readable by
whoever reads the logs. :class:`RedactKeys` is a filter on the ``uvicorn.access`` logger
that replaces every query string by ``?<redacted>`` (a query's names are no safer than its
values: ``?<key>`` is a name) and anything shaped like an API key in the path by
``<redacted>``; :func:`install` adds it once (the app does, when it starts).

>>> import logging
>>> record = logging.LogRecord("uvicorn.access", logging.INFO, "", 0,
...     '%s - "%s %s HTTP/%s" %d', ("127.0.0.1:5", "GET", "/v1/budget?api_key=s3cret", "1.1", 401),
...     None)
>>> RedactKeys().filter(record), record.getMessage()
(True, '127.0.0.1:5 - "GET /v1/budget?<redacted> HTTP/1.1" 401')
"""

from __future__ import annotations

import logging
import re

__all__ = ["ACCESS_LOGGER", "RedactKeys", "install", "redact"]

#: The logger uvicorn writes the access log to.
ACCESS_LOGGER = "uvicorn.access"

# Server keys (idp_<16 hex>.<43>) and ledger keys (43 URL-safe base64 characters).
_KEYLIKE = re.compile(r"idp_[0-9a-fA-F]{16}\.[A-Za-z0-9_-]{43}|(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{43}")


def redact(path: str) -> str:
    """``path`` (with its query string) as the access log may show it.

    >>> redact("/v1/ledger?dataset=people&results=true")
    '/v1/ledger?<redacted>'
    >>> redact("/v1/datasets/" + "k" * 43)
    '/v1/datasets/<redacted>'
    >>> redact("/v1/health")
    '/v1/health'
    """
    head, sep, _ = path.partition("?")
    return _KEYLIKE.sub("<redacted>", head) + ("?<redacted>" if sep else "")


class RedactKeys(logging.Filter):
    """Rewrites uvicorn's access-log records (the request path is their third argument)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], redact(args[2]), *args[3:])
        return True


def install() -> None:
    """Add :class:`RedactKeys` to the access logger (once)."""
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, RedactKeys) for f in logger.filters):
        logger.addFilter(RedactKeys())
