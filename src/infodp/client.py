"""A small Python client of the curator's HTTP service (``infodp serve``).

Method names follow the library: :meth:`Client.query`, :meth:`Client.query_synopsis`,
:meth:`Client.release_synopsis` and :meth:`Client.schema` as on
:class:`infodp.curator.Curator`; :meth:`Client.budget`, :meth:`Client.budgets`,
:meth:`Client.entries`, :meth:`Client.datasets` and :meth:`Client.synopses` as on
:class:`infodp.curator.Ledger` — except that the analyst is whoever the key belongs to, so no
method takes an analyst name. :meth:`Client.estimate` is :func:`infodp.curator.plan_cost` plus
accuracy, computed by the server without spending. Results are the JSON objects of the API
(``query`` returns the object of ``infodp query --json``).

Errors come back as the library raises them: 400 → :class:`~infodp.errors.ParameterError`,
409 → :class:`~infodp.errors.BudgetExceeded` (requested, remaining, gap); anything else
(401, 403, 404, 413, 429, 5xx) → :class:`ApiError` with the HTTP ``status`` and the error
``code``. Transport is an :class:`httpx.Client` (connection pooling, keep-alive, TLS); a client
is safe to share between threads.

>>> c = Client("http://127.0.0.1:8000", "idp_0123456789abcdef." + "s" * 43)
>>> c.base_path, c.timeout
('/v1', 60.0)
>>> Client("ftp://example.org", "k")
Traceback (most recent call last):
...
infodp.errors.ParameterError: url must be an http:// or https:// URL; got 'ftp://example.org'.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import httpx

from infodp.errors import BudgetExceeded, InfodpError, ParameterError

__all__ = ["ApiError", "Client"]


class ApiError(InfodpError):
    """An error answer of the service other than 400 and 409 (see the module docstring).

    >>> str(ApiError(401, "unauthorized", "unknown API key", {}))
    'HTTP 401 unauthorized: unknown API key'
    """

    def __init__(self, status: int, code: str, message: str, body: dict[str, Any]) -> None:
        super().__init__(f"HTTP {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body


class Client:
    """Talk to one service as one analyst (``key`` as printed by the admin CLI).

    >>> with Client("http://127.0.0.1:8000/", "some-key") as c:
    ...     (c.host, c.port, c.base_path)
    ('127.0.0.1', 8000, '/v1')
    """

    def __init__(self, url: str, key: str, *, timeout: float = 60.0) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ParameterError("url", url, "an http:// or https:// URL")
        if not isinstance(key, str) or not key or any(c.isspace() for c in key):
            raise ParameterError("key", "<hidden>", "an API key without spaces")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port
        self.base_path = parts.path.rstrip("/") + "/v1"
        self.timeout = float(timeout)
        self._key = key
        self._http: httpx.Client | None = None

    def __repr__(self) -> str:
        return f"Client({self.scheme}://{self.host}:{self.port}, key=<hidden>)"

    # -- transport -----------------------------------------------------------------------------

    def _client(self) -> httpx.Client:
        if self._http is None:
            netloc = self.host if self.port is None else f"{self.host}:{self.port}"
            self._http = httpx.Client(
                base_url=f"{self.scheme}://{netloc}{self.base_path}",
                headers={"Authorization": f"Bearer {self._key}", "Accept": "application/json"},
                timeout=self.timeout,
                trust_env=False,  # never route a bearer key through an environment proxy
            )
        return self._http

    def close(self) -> None:
        """Close the pooled connections."""
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """One API call: the decoded JSON object, or the error raised (module docstring)."""
        data = None if body is None else json.dumps(body, allow_nan=False).encode()
        headers = {"Content-Type": "application/json"} if data is not None else None
        for attempt in (0, 1):
            try:
                response = self._client().request(method, path, content=data, headers=headers)
                break
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as stale:
                # A stale keep-alive connection: retry once. Only idempotent reads are
                # retried — a query may already have been charged.
                if attempt == 1 or method != "GET":
                    raise ConnectionError(f"{self.scheme}://{self.host}: {stale}") from stale
            except httpx.TransportError as failed:
                # Network failures stay OSErrors (as with the standard library's sockets).
                raise ConnectionError(f"{self.scheme}://{self.host}: {failed}") from failed
        raw = response.content
        status = response.status_code
        try:
            payload = json.loads(raw) if raw else {}
        except ValueError:
            payload = {}
        if not isinstance(payload, dict):
            payload = {"value": payload}
        if status < 400:
            return payload
        err = payload.get("error") if isinstance(payload.get("error"), dict) else {}
        assert isinstance(err, dict)
        code = str(err.get("code", "http_error"))
        message = str(err.get("message", raw[:200].decode(errors="replace")))
        if status == 400:
            raise ParameterError(message)
        if status == 409 and code == "budget_exceeded":
            raise BudgetExceeded(
                str(err.get("requested")), str(err.get("remaining")), str(err.get("gap"))
            )
        raise ApiError(status, code, message, payload)

    # -- the library's methods -----------------------------------------------------------------

    def query(
        self, sql: str, *, epsilon: Any, delta: Any = 0, confidence: float = 0.95
    ) -> dict[str, Any]:
        """Answer ``sql`` with DP noise, charged to this key's analyst (``Curator.query``)."""
        return self.request("POST", "/query", _sql_request(sql, epsilon, delta, confidence))

    def estimate(
        self, sql: str, *, epsilon: Any, delta: Any = 0, confidence: float = 0.95
    ) -> dict[str, Any]:
        """Cost and accuracy of ``sql`` without spending (``plan_cost`` plus half-widths)."""
        return self.request("POST", "/estimate", _sql_request(sql, epsilon, delta, confidence))

    def budgets(self) -> list[dict[str, Any]]:
        """This analyst's budgets on every dataset (``Ledger.budgets``, own rows only)."""
        out = self.request("GET", "/budget")["budgets"]
        return list(out)

    def budget(self, dataset: str) -> dict[str, Any]:
        """This analyst's budget on ``dataset`` (``Ledger.budget``)."""
        for b in self.budgets():
            if str(b["dataset"]).lower() == dataset.lower():
                return b
        raise ParameterError("dataset", dataset, "a dataset on which you have a budget")

    def entries(self, dataset: str | None = None, *, results: bool = False) -> list[dict[str, Any]]:
        """This analyst's own ledger entries, oldest first (``Ledger.entries``)."""
        query: dict[str, str] = {}
        if dataset is not None:
            query["dataset"] = dataset
        if results:
            query["results"] = "true"
        suffix = "?" + urllib.parse.urlencode(query) if query else ""
        return list(self.request("GET", "/ledger" + suffix)["entries"])

    def datasets(self) -> list[dict[str, Any]]:
        """The datasets this analyst holds a budget on, with their declared public metadata."""
        return list(self.request("GET", "/datasets")["datasets"])

    def schema(self, dataset: str) -> dict[str, Any]:
        """The declared schema of ``dataset`` (``Curator.schema``), as plain data."""
        path = "/datasets/" + urllib.parse.quote(dataset, safe="")
        schema = self.request("GET", path)["schema"]
        return dict(schema)

    def synopses(self) -> list[dict[str, Any]]:
        """Released synopses on this analyst's datasets (``Ledger.synopses``)."""
        return list(self.request("GET", "/synopses")["synopses"])

    def release_synopsis(
        self, name: str, dataset: str, columns: list[str], *, epsilon: Any
    ) -> dict[str, Any]:
        """Publish a noisy histogram once (``Curator.release_synopsis``)."""
        return self.request(
            "POST",
            "/synopses",
            {
                "name": name,
                "dataset": dataset,
                "columns": list(columns),
                "epsilon": _number(epsilon),
            },
        )

    def query_synopsis(self, name: str, sql: str, *, confidence: float = 0.95) -> dict[str, Any]:
        """Answer ``sql`` from synopsis ``name`` for free (``Curator.query_synopsis``)."""
        path = "/synopses/" + urllib.parse.quote(name, safe="") + "/query"
        return self.request("POST", path, {"sql": sql, "confidence": confidence})


def _sql_request(sql: str, epsilon: Any, delta: Any, confidence: float) -> dict[str, Any]:
    """The body of ``/query`` and ``/estimate``: the SQL and what it may spend."""
    return {
        "sql": sql,
        "epsilon": _number(epsilon),
        "delta": _number(delta),
        "confidence": confidence,
    }


def _number(value: Any) -> float | str:
    """ε/δ for the wire: exact decimal strings and fractions stay exact (as text).

    >>> from fractions import Fraction
    >>> _number(0.1), _number("1e-6"), _number(Fraction(1, 4))
    (0.1, '1e-6', '0.25')
    """
    from fractions import Fraction

    if isinstance(value, bool):
        raise ParameterError("epsilon/delta", value, "a number")
    if isinstance(value, Fraction):
        from decimal import Decimal

        d = Decimal(value.numerator) / Decimal(value.denominator)
        if Fraction(d) != value:
            raise ParameterError(
                "epsilon/delta", str(value), "a fraction with a finite decimal expansion"
            )
        return str(d)
    if isinstance(value, int | float):
        return float(value)
    return str(value)
