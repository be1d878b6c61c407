"""The state behind the service's routes: settings, per-thread curators, keys and limits.

>>> ServerSettings("store.duckdb").max_concurrent_per_analyst
1
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import Request
from fastapi.responses import Response
from starlette.background import BackgroundTask

from infodp.curator.answer.render import answer_text
from infodp.curator.ledger.leases import lease_for
from infodp.curator.sql.post import inner_sql
from infodp.curator.store.availability import unopenable
from infodp.errors import ParameterError
from infodp.server.auth import Identity, KeyStore, key_store_path, parse_bearer
from infodp.server.errors import ApiError
from infodp.server.fleet import fleet_parts
from infodp.server.limits import KeySlots, RateLimiter, retry_after_seconds

if TYPE_CHECKING:
    from infodp.curator.answer.result import Reservation
    from infodp.curator.request import Estimate
    from infodp.curator.request import Request as CuratorRequest

__all__ = ["API_VERSION", "UNKNOWN_KEY", "ServerSettings", "Service"]

log = logging.getLogger("infodp.server")

#: The API version (the OpenAPI document's ``info.version``, reported by ``/v1/health``).
API_VERSION = "1.0.0"

#: The 401 message of a well-formed bearer token that is no valid key: the same for an unknown
#: key id or analyst, a wrong secret and a revoked key.
UNKNOWN_KEY = (
    "unknown API key: not a key issued by this service, or revoked "
    "(keys come from 'infodp analyst add' or 'infodp analyst key')"
)


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """How a service runs: the store, the limits and the (optional) admin token's hash.

    Every per-client limit is per analyst, shared by all of their keys (an analyst holding
    several keys gets one share, not one per key): ``rate`` requests per second per analyst
    with bursts of ``burst``, at most ``max_concurrent_per_analyst`` CPU-heavy requests
    (queries, estimates, synopsis releases and queries) in flight per analyst, each query
    interrupted after ``query_timeout`` seconds
    (a constant error, the cost stays spent); bodies of at most
    ``max_body_bytes``. ``admin_token_sha256`` is the hex SHA-256 of the admin token (the
    token itself is never kept); None disables the admin routes. ``keep_open``: each worker
    thread (or process) keeps its read-only DuckDB connection open (about half the latency of
    opening the store per query, see BENCHMARKS.md "curator"); datasets registered while the
    service runs then wait for it to stop, and are seen after a restart. ``workers``: how many
    worker processes run the CPU-heavy part of queries, estimates and synopsis queries
    (:mod:`infodp.server.pool`), so one analyst's heavy work does not hold the interpreter
    lock the others need, handed out fairly across analysts (no analyst holds them all while
    another waits); 0 runs everything in the server process (the library default,
    ``infodp serve`` starts one per core, at least 2). ``spark_master`` and ``spark_conf``
    (``KEY=VALUE`` strings) configure the Spark session of datasets on the Spark backend, as
    ``Curator(db, spark_master=..., spark_conf=...)`` and ``infodp query`` do: they win over
    ``$INFODP_SPARK_MASTER`` and ``<db>.spark.toml``
    (:func:`~infodp.curator.backends.spark.spark_settings`). ``max_in_flight_per_analyst``:
    at most this many requests of one analyst, free ones included, are served at once; the
    others wait in the event loop before their body is read (:mod:`infodp.server.gate`).
    ``answer_time`` and ``spark_answer_time``: seconds per table a query reads (DuckDB and
    Spark datasets): each query's answer is released when its budget is spent, and a query
    that overruns it yields its default outcome (:mod:`infodp.server.timing`); 0 turns this
    off (the library default; ``infodp serve`` pads with 1 s per table).
    ``reservation_lease``: with a PostgreSQL ledger shared by a fleet, seconds after which a
    reservation still open is settled by any server (its server died; None:
    :func:`~infodp.curator.ledger.leases.lease_for` the query timeout).

    >>> ServerSettings("store.duckdb").rate, ServerSettings("store.duckdb", burst=5).burst
    (50.0, 5)
    """

    db: str
    rate: float = 50.0
    burst: int = 100
    max_body_bytes: int = 64 * 1024
    admin_token_sha256: str | None = None
    keep_open: bool = True
    max_concurrent_per_analyst: int = 1
    query_timeout: float = 30.0
    duckdb_threads: int | None = 1
    workers: int = 0
    spark_master: str | None = None
    spark_conf: tuple[str, ...] = ()
    max_in_flight_per_analyst: int = 4
    answer_time: float = 0.0
    spark_answer_time: float = 15.0
    reservation_lease: float | None = None


class Service:
    """The state behind the routes: the curator(s), the key store and the per-analyst limits.

    >>> import pathlib, tempfile
    >>> from infodp.curator import Curator
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "people.csv").write_text("age\\n1\\n2\\n")
    >>> cur = Curator(str(d / "store.duckdb"))
    >>> cols = {"age": {"type": "int", "bounds": [0, 99]}}
    >>> schema = {"table": "people", "privacy_unit": "row", "columns": cols}
    >>> _ = cur.register_dataset("people", str(d / "people.csv"), schema)
    >>> _ = cur.add_analyst("alice", "people", epsilon=1)
    >>> cur.close()
    >>> svc = Service(ServerSettings(str(d / "store.duckdb")))
    >>> svc.budget_or_403("alice", "people").epsilon
    Fraction(1, 1)
    """

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self._local = threading.local()
        self._override: Any = None
        # Every thread's curator, so close() can close their DuckDB connections in the
        # thread that stops the service: a connection left to a worker thread's teardown
        # can be destroyed while the interpreter exits, and DuckDB's destructor then aborts
        # the process ("FATAL: exception not rethrown", status 134).
        self._curators: list[Any] = []
        self._curators_lock = threading.Lock()
        self.curator  # noqa: B018 - open the store now, so a bad store fails at start-up
        #: Registered datasets this server cannot open, and why (a fleet's shared data not
        #: all here: infodp.curator.store.availability); said in the log and by /v1/health.
        self.unopenable: dict[str, str] = unopenable(settings.db)
        for name, why in self.unopenable.items():
            log.warning("dataset %s cannot be opened on this server: %s", name, why)
        self.pool: Any = None
        if settings.workers:
            from infodp.server.pool import WorkerPool

            timeout = settings.query_timeout
            self.pool = WorkerPool(
                settings.db,
                settings.workers,
                query_timeout=timeout,
                duckdb_threads=settings.duckdb_threads,
                keep_open=settings.keep_open,
                spark_master=settings.spark_master,
                spark_conf=settings.spark_conf,
                # The worker's own DuckDB interrupt fires at the query timeout; the kill is the
                # backstop for work stuck outside DuckDB.
                deadline=timeout + max(1.0, timeout / 10),
                # A free worker is awaited up to the deadline plus a worker's start-up time.
                wait=timeout + 30.0,
            )
            # Healthy only once the workers can answer (a worker opens the store in ~1-3 s).
            self.pool.wait_ready(self.pool.startup)
        self.keys = KeyStore(key_store_path(settings.db))
        self.limiter: Any = RateLimiter(settings.rate, settings.burst)
        self.slots: Any = KeySlots(settings.max_concurrent_per_analyst)
        # A PostgreSQL ledger: the limits hold fleet-wide, and this server settles the
        # reservations of servers that died (infodp.server.fleet).
        self.settler: Any = None
        parts = fleet_parts(
            self.keys.ledger,
            rate=settings.rate,
            burst=settings.burst,
            limit=settings.max_concurrent_per_analyst,
            lease=settings.reservation_lease or lease_for(settings.query_timeout),
        )
        if parts is not None:
            self.limiter, self.slots, self.settler = parts
        # Failed authentications are limited per client address, so keys cannot be guessed
        # at the full request rate.
        self.failures = RateLimiter(settings.rate, max(settings.burst, 20))

    def ledger_answers(self) -> bool:
        """Whether the ledger can be read now (one read of its store id)."""
        try:
            with self.keys.ledger.db.read() as conn:
                conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        except Exception:  # unreachable, whatever the cause: not ready
            self.keys.ledger.db.close()  # reconnect at the next check
            return False
        return True

    @property
    def curator(self) -> Any:
        """This worker thread's :class:`~infodp.curator.Curator` over the store.

        One per thread: with ``keep_open`` each holds its own read-only DuckDB connection (a
        connection must not run two queries at once) and its own ledger connection; the
        ledger's BEGIN IMMEDIATE transactions keep them consistent with each other, exactly
        as between processes.
        """
        if self._override is not None:
            return self._override
        cur = getattr(self._local, "curator", None)
        if cur is None:
            from infodp.curator.engine import Curator

            cur = Curator(
                self.settings.db,
                keep_open=self.settings.keep_open,
                query_timeout=self.settings.query_timeout,
                duckdb_threads=self.settings.duckdb_threads,
                spark_master=self.settings.spark_master,
                spark_conf=self.settings.spark_conf,
            )
            self._local.curator = cur
            with self._curators_lock:
                self._curators.append(cur)
        return cur

    @curator.setter
    def curator(self, value: Any) -> None:
        # For tests: one curator (e.g. with a patched method) for every thread.
        self._override = value

    def close(self) -> None:
        """Stop the worker processes (if any) and close every thread's curator."""
        if self.settler is not None:
            self.settler.stop()
        if self.pool is not None:
            self.pool.close()
        with self._curators_lock:
            curators, self._curators = self._curators, []
        for cur in curators:
            with contextlib.suppress(Exception):  # closing at shutdown: best effort
                cur.close()

    # -- running curator work ------------------------------------------------------------------

    def answer(self, analyst: str, request: CuratorRequest) -> Response:
        """``Curator.answer`` as a response: validated and reserved here, released by a worker.

        The reservation (durable, before the data is touched) and the record of the outcome
        stay in this process; only :meth:`~infodp.curator.Curator.release_json` runs in a
        worker. A worker past its deadline, or none free within the query timeout plus a
        worker's start-up time (only when workers keep dying), is a failure after the
        reservation: the one constant :class:`~infodp.errors.QueryFailed`, the charge stays.
        """
        cur = self.curator
        if self.pool is None:
            text = answer_text(cur.answer(analyst, request).to_dict())
            return Response(text.encode("utf-8"), media_type="application/json")
        # The worker is taken after the reservation: held during the reservation's fsync it
        # would sit idle, and concurrent reservations would not share one group commit
        # (BENCHMARKS.md "server load").
        reserved = cur.reserve_for(analyst, request)
        text = cur.finish_json(
            reserved, lambda: self.pool.call("release_json", reserved, analyst=analyst)
        )
        return Response(text.encode("utf-8"), media_type="application/json")

    async def answer_on_time(
        self, analyst: str, request: CuratorRequest, started: float
    ) -> Response:
        """:meth:`answer` released at a time fixed from public facts (:mod:`.timing`).

        ``started``: ``time.monotonic()`` when the route was entered. A refusal before the
        reservation is raised at once; after it the answer (or, past the budget or on a
        failure, the default outcome) is released ``answer_seconds`` after ``started``.
        """
        from starlette.concurrency import run_in_threadpool

        from infodp.curator.answer.result import StoreNotOpened
        from infodp.curator.relations import tables_read
        from infodp.server.timing import answer_seconds, released_on_time

        if self.settings.answer_time <= 0:
            return await run_in_threadpool(self.answer, analyst, request)

        def reserve() -> tuple[Reservation, float]:
            cur = self.curator
            reserved = cur.reserve_for(analyst, request)
            budget = answer_seconds(
                self.settings.answer_time,
                self.settings.spark_answer_time,
                backend=cur.dataset_backend(reserved.plan.table),
                tables=len(tables_read(inner_sql(request.sql))),
            )
            return reserved, budget

        reserved, budget = await run_in_threadpool(reserve)
        release_at = started + budget

        def compute() -> str:
            left = max(0.001, release_at - time.monotonic())
            if self.pool is None:
                return str(self.curator.release_json(reserved, left))
            return str(self.pool.call("release_json", reserved, deadline=left, analyst=analyst))

        try:
            text, _ = await released_on_time(
                release_at,
                compute,
                lambda: str(self.curator.default_json(reserved)),
                entry=reserved.entry,
            )
        except StoreNotOpened as err:
            failure = err

            def reraise() -> str:
                raise failure

            await run_in_threadpool(self.curator.finish_json, reserved, reraise)
            raise
        # Recorded once the response is sent: the record's time must not delay a release
        # that finished just in time (its text is what the analyst received).
        record = BackgroundTask(self._record, reserved, text)
        return Response(text.encode("utf-8"), media_type="application/json", background=record)

    def _record(self, reserved: Reservation, text: str) -> None:
        self.curator.finish_json(reserved, lambda: text)

    def release_synopsis(
        self,
        analyst: str,
        name: str,
        dataset: str,
        columns: Any,
        *,
        epsilon: Any,
        started: float | None = None,
    ) -> Any:
        """``Curator.release_synopsis``, its reserved histogram released by a worker process.

        With an answer time (:mod:`.timing`) the histogram is released ``answer_time`` after
        ``started`` (one table read), and a release that overruns it or fails after the
        reservation yields the default outcome (the histogram of the empty dataset, noisy).
        """
        from infodp.curator.answer.result import StoreNotOpened
        from infodp.server.timing import answer_seconds

        cur, pool = self.curator, self.pool
        budget = answer_seconds(
            self.settings.answer_time,
            self.settings.spark_answer_time,
            backend=cur.dataset_backend(dataset),
            tables=1,
        )
        release_at = (time.monotonic() if started is None else started) + budget

        def run(reserved: Reservation) -> Any:
            left = max(0.001, release_at - time.monotonic()) if budget > 0 else None
            try:
                if pool is None:
                    return cur.run_reserved(reserved, left)
                return pool.call("run_reserved", reserved, deadline=left, analyst=analyst)
            except StoreNotOpened:
                raise
            except Exception as err:
                if budget <= 0:
                    raise
                log.warning(
                    "synopsis entry %d failed or overran its answer time (%s); released its "
                    "default outcome",
                    reserved.entry,
                    type(err).__name__,
                )
                return cur.default_release(reserved)

        syn = cur.release_synopsis(analyst, name, dataset, columns, epsilon=epsilon, run=run)
        if budget > 0 and (left := release_at - time.monotonic()) > 0:
            time.sleep(left)
        return syn

    def release_synthetic(
        self, analyst: str, body: Any, dataset: str, *, started: float | None = None
    ) -> Any:
        """``Curator.release_synthetic`` for a :class:`~infodp.server.models.SyntheticRequest`,
        answered no earlier than the service's answer time for one table after ``started``
        (as a synopsis release is), so its timing does not follow the data."""
        from infodp.server.timing import answer_seconds

        budget = answer_seconds(
            self.settings.answer_time,
            self.settings.spark_answer_time,
            backend=self.curator.dataset_backend(dataset),
            tables=1,
        )
        release_at = (time.monotonic() if started is None else started) + budget
        options = body.model_dump(exclude={"name", "dataset", "epsilon", "delta"})
        table = self.curator.release_synthetic(
            analyst, body.name, dataset, epsilon=body.epsilon, delta=body.delta, **options
        )
        if budget > 0 and (left := release_at - time.monotonic()) > 0:
            time.sleep(left)
        return table

    def estimate(self, analyst: str, request: CuratorRequest) -> Estimate:
        """``Curator.estimate_for``: cost, accuracy and whether ``request`` fits ``analyst``'s
        budget, in a worker process when the service has them; nothing is spent."""
        if self.pool is None:
            return self.curator.estimate_for(analyst, request)  # type: ignore[no-any-return]
        return self.pool.call(  # type: ignore[no-any-return]
            "estimate_for", analyst, request, analyst=analyst
        )

    def run(self, analyst: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """A free, CPU-heavy curator call (``query_synopsis``) on behalf of ``analyst``, in a
        worker process (handed out fairly by analyst) when the service has them."""
        if self.pool is None:
            return getattr(self.curator, method)(*args, **kwargs)
        return self.pool.call(method, *args, analyst=analyst, **kwargs)

    # -- authentication ------------------------------------------------------------------------

    def _analysts(self) -> list[str]:
        return sorted({b.analyst for b in self.curator.ledger.budgets()})

    def _verify(self, kind: str, token: str) -> Identity | None:
        if kind == "server":
            return self.keys.verify(token)
        if kind == "ledger":
            return self.keys.verify_ledger_key(token, self._analysts(), self.curator.ledger)
        return None  # a well-formed token of neither key shape: no key matches it

    def _is_admin(self, token: str) -> bool:
        want = self.settings.admin_token_sha256
        if want is None:
            return False
        got = hashlib.sha256(token.encode()).hexdigest()
        return hmac.compare_digest(got, want)

    def _unauthorized(self, request: Request, message: str) -> ApiError:
        host = request.client.host if request.client is not None else "?"
        wait = self.failures.acquire("ip:" + host)
        if wait > 0:
            return ApiError(
                429,
                "rate_limited",
                "too many failed authentications from this address; retry later",
                retry_after=retry_after_seconds(wait),
            )
        return ApiError(401, "unauthorized", message, headers={"WWW-Authenticate": "Bearer"})

    def rate_limited(self, wait: float) -> ApiError:
        """The 429 of an analyst over their rate (``wait`` seconds until their next token),
        whichever of their keys asked."""
        return ApiError(
            429,
            "rate_limited",
            f"rate limit of {self.settings.rate:g} requests/s (burst {self.settings.burst}) "
            "per analyst exceeded (shared by all of your keys); retry later",
            retry_after=retry_after_seconds(wait),
        )

    def _limit(self, bucket: str) -> None:
        wait = self.limiter.acquire(bucket)
        if wait > 0:
            raise self.rate_limited(wait)

    def analyst(self, request: Request) -> Identity:
        """The analyst a request's bearer key belongs to (401 / 429 otherwise); the rate
        limit is the analyst's, shared by their keys."""
        identity = self.verify(request)
        self._limit(identity.limits)
        return identity

    async def identify(self, scope: Any) -> Identity:
        """:meth:`verify` for an ASGI request scope, before its body is read: a server key
        in the event loop (one primary-key read and one hash), a ledger key (checked against
        every analyst) in a worker thread."""
        from starlette.concurrency import run_in_threadpool
        from starlette.requests import Request as StarletteRequest

        request = StarletteRequest(scope)
        if parse_bearer(request.headers.get("authorization"))[0] == "server":
            return self.verify(request)
        identity: Identity = await run_in_threadpool(self.verify, request)
        return identity

    def verify(self, request: Request) -> Identity:
        """The analyst a request's bearer key belongs to, not rate-limited (401, or 429 for an
        address failing too often)."""
        kind, token = parse_bearer(request.headers.get("authorization"))
        if kind == "missing" or token is None:
            if kind == "missing":
                raise self._unauthorized(
                    request, "missing API key: send 'Authorization: Bearer <key>'"
                )
            raise self._unauthorized(
                request, "malformed Authorization header: expected 'Bearer <key>'"
            )
        identity = self._verify(kind, token)
        if identity is None:
            # One message whatever failed (no such key id or analyst, wrong secret, revoked),
            # so a refusal never tells which key ids or analysts exist.
            raise self._unauthorized(request, UNKNOWN_KEY)
        return identity

    def admin(self, request: Request) -> None:
        """Allow only the admin token: 401 without a valid key, 403 for analyst keys."""
        header = request.headers.get("authorization")
        kind, token = parse_bearer(header)
        if kind == "missing":
            raise self._unauthorized(request, "missing admin token")
        raw = (header or "").strip().partition(" ")[2].strip()
        if (header or "").strip().lower().startswith("bearer ") and self._is_admin(raw):
            self._limit("admin")
            return
        if token is not None and self._verify(kind, token) is not None:
            raise ApiError(403, "forbidden", "admin routes do not accept analyst keys")
        raise self._unauthorized(request, "unknown admin token")

    # -- helpers -------------------------------------------------------------------------------

    def budget_or_403(self, analyst: str, dataset: str) -> Any:
        """The caller's budget on ``dataset``; 403 when they have none there."""
        try:
            return self.curator.ledger.budget(analyst, dataset)
        except ParameterError:
            raise ApiError(403, "forbidden", f"you have no budget on dataset {dataset!r}") from None

    def dataset_or_403(self, analyst: str, name: str) -> str:
        """The registered name of ``name`` when ``analyst`` holds a budget on it.

        403 otherwise, with the same body whether the dataset does not exist or belongs to
        others (the message quotes the caller's own text), so dataset names are not revealed.
        """
        for b in self.curator.ledger.budgets(analyst):
            if b.analyst == analyst and b.dataset.lower() == name.lower():
                return str(b.dataset)
        raise ApiError(403, "forbidden", f"you have no budget on a dataset named {name[:80]!r}")
