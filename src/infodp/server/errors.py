"""The one JSON error format of the HTTP service: ``{"error": {"code": ..., "message": ...}}``.

Every failure leaves the service in this shape, with the HTTP status that says what happened
400 bad request or query, 401 missing/unknown key, 403 not allowed, 404 unknown
route or name, 409 budget exceeded (with ``requested``, ``remaining`` and ``gap``), 413 body
too large, 429 rate limited, 500 anything unexpected (a generic message and an ``error_id``;
the details go to the server log only, never to the client: a SQL engine message can quote
data).

>>> e = ApiError(429, "rate_limited", "too many requests", retry_after=2)
>>> e.payload()
{'error': {'code': 'rate_limited', 'message': 'too many requests'}}
>>> e.headers
{'Retry-After': '2'}
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from pydantic import BaseModel, ConfigDict

from infodp.errors import BudgetExceeded

__all__ = [
    "ApiError",
    "ErrorBody",
    "ErrorDetail",
    "budget_error",
    "error_responses",
    "internal_error",
]

log = logging.getLogger("infodp.server")


class ErrorDetail(BaseModel):
    """The inside of an error response.

    >>> ErrorDetail(code="not_found", message="no such thing").gap is None
    True
    """

    model_config = ConfigDict(extra="allow")

    code: str
    message: str
    requested: str | None = None
    remaining: str | None = None
    gap: str | None = None
    error_id: str | None = None


class ErrorBody(BaseModel):
    """``{"error": {"code": ..., "message": ...}}`` (plus budget or error-id fields).

    >>> ErrorBody(error={"code": "x", "message": "y"}).error.code
    'x'
    """

    error: ErrorDetail


class ApiError(Exception):
    """An error the service answers with: HTTP status, stable code, data-free message.

    >>> ApiError(403, "forbidden", "no").status
    403
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        retry_after: int | None = None,
        extra: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = dict(extra or {})
        self.headers = dict(headers or {})
        if retry_after is not None:
            self.headers["Retry-After"] = str(int(retry_after))

    def payload(self) -> dict[str, Any]:
        """The JSON body."""
        return {"error": {"code": self.code, "message": self.message, **self.extra}}


def budget_error(err: BudgetExceeded) -> ApiError:
    """409 with the ledger's requested / remaining / gap (Tumult's out-of-budget message).

    >>> budget_error(BudgetExceeded("epsilon=1", "epsilon=0.5", "epsilon=0.5")).extra["gap"]
    'epsilon=0.5'
    """
    return ApiError(
        409,
        "budget_exceeded",
        str(err),
        extra={"requested": err.requested, "remaining": err.remaining, "gap": err.gap},
    )


def internal_error(err: BaseException, where: str) -> ApiError:
    """500 with a generic message and a fresh error id; the details are logged server-side.

    A ledger whose database cannot be reached (a PostgreSQL ledger while its server
    restarts) is 503 with ``Retry-After`` instead: nothing is wrong with the request.

    >>> internal_error(RuntimeError("secret row 42"), "test").message.startswith("internal")
    True
    """
    from infodp.curator.ledger.postgres import LedgerUnreachable, Unreachable

    if isinstance(err, (LedgerUnreachable, Unreachable)):
        log.warning("ledger unreachable in %s: %s", where, err)
        return ApiError(503, "unavailable", "the ledger cannot be reached; retry", retry_after=1)
    error_id = secrets.token_hex(8)
    log.error("error %s in %s: %s: %s", error_id, where, type(err).__name__, err, exc_info=err)
    return ApiError(
        500,
        "internal_error",
        f"internal server error (reference {error_id}); the details are in the server log",
        extra={"error_id": error_id},
    )


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` entries documenting the error body for ``statuses``.

    >>> sorted(error_responses(401, 429))
    [401, 429]
    """
    text = {
        400: "Bad request or refused query",
        401: "Missing, malformed, unknown or revoked API key",
        403: "Authenticated but not allowed",
        404: "Unknown name",
        409: "Privacy budget exceeded: nothing was released or spent",
        413: "Request body too large",
        429: "Rate limit exceeded (see Retry-After)",
        500: "Unexpected server error (generic message and an error id)",
        503: "The ledger cannot be reached (its database restarting): retry after Retry-After",
    }
    return {s: {"model": ErrorBody, "description": text[s]} for s in statuses}
