"""Worker processes that run the service's CPU-heavy curator work, isolated from each other.

One Python process serving every analyst shares one interpreter lock: while one analyst's
heavy query draws noise and builds a 1900-cell answer, every other request waits for the lock
at each hand-over (BENCHMARKS.md "server abuse" measured a victim's p99 at 17× its idle value).
A :class:`WorkerPool` runs that work in ``workers`` processes of their own, each with its own
read-only :class:`~infodp.curator.Curator` over the same store (DuckDB allows many read-only
processes) and its own cryptographic noise source, so analysts compete for cores, not for one
lock. The server process keeps everything that decides what is charged and what is seen:
authentication, rate limits, per-analyst slots, the ledger's reservation (durable, before any
data is touched) and the recording of the outcome. A worker only runs

* :meth:`~infodp.curator.Curator.release_json`: noise, the bounded aggregate and the release
  of a query whose cost the server has already reserved, rendered as the answer's JSON (so
  the server process does not spend its interpreter on a large answer either), or
  :meth:`~infodp.curator.Curator.run_reserved` for a synopsis release;
* :meth:`~infodp.curator.Curator.estimate`, :meth:`~infodp.curator.Curator.estimate_for` and
  :meth:`~infodp.curator.Curator.query_synopsis` (free, but CPU-heavy).

Tasks name one of these public methods (:data:`WorkerPool.METHODS`) with pickled typed
arguments (:class:`~infodp.curator.Request`, :class:`~infodp.curator.engine.Reservation`);
nothing else of the curator is reachable from the server process.

Fairness: workers are handed out by analyst (:class:`~infodp.server.fair.FairQueue`): no
analyst holds more than ``max(1, workers - 1)`` of them, and a freed worker goes to the
waiting analyst holding the fewest, then to the one served least recently (round robin), not
to the oldest request; so one analyst's many waiting requests, from however many keys, never
keep another analyst's request from the next free worker.

Deadlines: a worker that has not answered ``deadline`` seconds after a task was sent (the
query's own DuckDB interrupt fires first, at the query timeout) is killed and replaced, and
the caller gets :class:`WorkerDeadline`; for a reserved query the curator turns it into the
one constant failure whose charge stays spent. A worker that dies is replaced the same way.
Errors raised in a worker cross back by pickle (every :class:`~infodp.errors.InfodpError`
pickles faithfully); an error that cannot be pickled crosses as a ``RuntimeError`` with its
class name and text, which only the ledger and the server log ever see.

The processes are fresh interpreters (``python -c ...``, never ``fork``: a
forked child would inherit the server's threads, locks and buffered random bytes; nor
``multiprocessing``'s spawn, which re-runs the parent's main module), talking over a socket
pair.

>>> WorkerPool.METHODS
('estimate', 'estimate_for', 'query_synopsis', 'release_json', 'run_reserved')
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from infodp.errors import InfodpError, ParameterError
from infodp.server._heap import freeze_heap
from infodp.server.fair import FairQueue

__all__ = [
    "Lease",
    "Reply",
    "Task",
    "WorkerDeadline",
    "WorkerPool",
    "WorkerUnavailable",
    "default_workers",
]

log = logging.getLogger("infodp.server")


def default_workers() -> int:
    """One worker per core this process may run on, and at least 2.

    With the default of one heavy request in flight per analyst (and the pool's cap of
    ``workers - 1`` per analyst), two workers are what it takes for one analyst's heavy
    queries never to leave the others without a worker.

    >>> default_workers() >= 2
    True
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(2, cores)


class WorkerDeadline(InfodpError):
    """A worker did not answer within its deadline; it was killed and is being replaced."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the request ran longer than its deadline of {seconds:g} s")
        self.seconds = seconds


class WorkerUnavailable(InfodpError):
    """No worker became free (or could be started) within the deadline."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no worker was free within {seconds:g} s; retry later")
        self.seconds = seconds


@dataclass(slots=True)
class _Worker:
    process: subprocess.Popen[bytes]
    conn: Connection


def _child_env() -> dict[str, str]:
    """The environment of a worker: ours, with this infodp first on the import path."""
    import infodp

    env = dict(os.environ)
    here = str(Path(infodp.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    return env


@dataclass(frozen=True, slots=True)
class Task:
    """What the server sends a worker: one of :data:`WorkerPool.METHODS` (public methods of
    :class:`~infodp.curator.Curator`) and its arguments (typed records such as
    :class:`~infodp.curator.request.Request` and :class:`~infodp.curator.engine.Reservation`).

    >>> Task("estimate", ("SELECT COUNT(*) FROM t",), {"epsilon": "0.5"}).method
    'estimate'
    """

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Reply:
    """What a worker answers: the method's value (``ok``) or the error it raised (portable:
    it crossed the pipe by pickle)."""

    ok: bool
    value: Any


class WorkerPool:
    """``workers`` processes, each with a read-only curator over ``db``; thread-safe.

    ``deadline``: seconds a task may run before its worker is killed and replaced (it should
    exceed the curator's ``query_timeout``, which interrupts DuckDB inside the worker first).
    ``wait``: seconds a caller waits for a free worker (waiting callers are served fairly
    by analyst, see the module docstring; one analyst's callers in order of arrival).
    ``startup``: seconds a new worker may take to open the store.
    ``spark_master``, ``spark_conf``: the Spark options of each worker's curator.
    """

    METHODS = ("estimate", "estimate_for", "query_synopsis", "release_json", "run_reserved")

    def __init__(
        self,
        db: str,
        workers: int,
        *,
        query_timeout: float | None,
        duckdb_threads: int | None,
        keep_open: bool = True,
        spark_master: str | None = None,
        spark_conf: tuple[str, ...] = (),
        deadline: float,
        wait: float,
        startup: float = 120.0,
    ) -> None:
        if not (isinstance(workers, int) and not isinstance(workers, bool) and workers >= 1):
            raise ParameterError("workers", workers, "a positive number of worker processes")
        self._args = (
            str(db),
            query_timeout,
            duckdb_threads,
            keep_open,
            spark_master,
            tuple(spark_conf),
        )
        self.size = workers
        self.deadline = float(deadline)
        self.wait = float(wait)
        self.startup = float(startup)
        # Idle workers and the callers waiting for one, handed out fairly by analyst (a
        # plain queue wakes waiters in no particular order, and the unlucky ones set the tail
        # latency; a first-come line lets the analyst sending the most hold every worker).
        self.cap = max(1, workers - 1)
        self._free: FairQueue[_Worker] = FairQueue(self.cap)
        self._lock = threading.Lock()
        self._live: dict[int, _Worker] = {}  # started and not yet retired, by id
        self._closed = False
        self._ready = threading.Condition()
        self._started = 0  # workers that have opened the store, ever
        self._failures = 0  # failed starts since the last good one
        for _ in range(workers):
            self._start()

    def wait_ready(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until every first worker has opened the store."""
        end = time.monotonic() + timeout
        with self._ready:
            while self._started < self.size:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._ready.wait(left)
        return True

    # -- life cycle ----------------------------------------------------------------------------

    def _start(self) -> None:
        """Start one worker; it joins the idle queue once it has opened the store."""
        if self._closed:
            return
        ours, theirs = socket.socketpair()
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", _WORKER_MAIN, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # `infodp serve --json`: stdout holds one object
                env=_child_env(),
            )
        finally:
            theirs.close()  # the worker holds its end; its death is an EOF on ours
        worker = _Worker(process, Connection(ours.detach()))
        worker.conn.send(self._args)
        with self._lock:
            self._live[id(worker)] = worker
        threading.Thread(
            target=self._await_ready, args=(worker,), name="infodp-worker-start", daemon=True
        ).start()

    def _await_ready(self, worker: _Worker) -> None:
        ready = False
        try:
            if worker.conn.poll(self.startup):
                kind, detail = worker.conn.recv()
                ready = kind == "ready"
                if not ready:
                    log.error("worker could not open the store: %s", detail)
            else:
                log.error("worker did not start within %g s", self.startup)
        except (EOFError, OSError) as err:
            log.error("worker died while starting: %s", type(err).__name__)
        if ready and not self._closed:
            self._put(worker)
            with self._ready:
                self._started += 1
                self._failures = 0
                self._ready.notify_all()
            return
        self._retire(worker)
        if not self._closed:
            # A store that cannot be opened now: retry, backing off to one try a minute.
            with self._ready:
                self._failures += 1
                pause = min(60.0, 2.0 ** min(self._failures, 6))
            time.sleep(pause)
            self._start()

    def _retire(self, worker: _Worker) -> None:
        """Kill ``worker`` (if it still runs) and reap it; it is never used again."""
        with self._lock:
            self._live.pop(id(worker), None)
        with contextlib.suppress(Exception):
            if worker.process.poll() is None:
                worker.process.kill()
            worker.process.wait(timeout=10)
        with contextlib.suppress(Exception):
            worker.conn.close()

    def _replace(self, worker: _Worker) -> None:
        self._retire(worker)
        self._start()

    def close(self) -> None:
        """Stop every worker (a busy one's caller gets :class:`WorkerDeadline`)."""
        self._closed = True
        with self._lock:
            workers = list(self._live.values())
        for worker in workers:
            with contextlib.suppress(Exception):
                worker.conn.send_bytes(pickle.dumps(None))
        end = time.monotonic() + 2.0
        for worker in workers:
            with contextlib.suppress(Exception):
                worker.process.wait(timeout=max(0.0, end - time.monotonic()))
            self._retire(worker)

    # -- calls ---------------------------------------------------------------------------------

    def call(self, method: str, *args: Any, analyst: str | None = None, **kwargs: Any) -> Any:
        """Run ``Curator.<method>(*args, **kwargs)`` in a free worker and return its result.

        ``analyst``: on whose behalf (the pool's fairness and cap, see the module docstring;
        it is not passed to the method). Raises what the method raised,
        :class:`WorkerUnavailable` when no worker was free within ``wait`` seconds, or
        :class:`WorkerDeadline` when the worker did not answer within ``deadline`` seconds
        (it is then killed and replaced).
        """
        with self.lease(analyst) as lease:
            return lease.call(method, *args, **kwargs)

    @contextlib.contextmanager
    def lease(self, analyst: str | None = None) -> Iterator[Lease]:
        """Hold a free worker for the block on behalf of ``analyst`` (waiting at most
        ``wait`` s for their turn)."""
        lease = Lease(self, self._acquire(analyst))
        try:
            yield lease
        finally:
            # Given back even when the worker was lost at its deadline: the analyst no longer
            # holds it (its replacement joins through _put).
            self._release(analyst, lease.worker)

    def waiting(self) -> int:
        """How many callers wait for a worker now."""
        return self._free.waiting()

    def _run(self, lease: Lease, method: str, args: Any, kwargs: Any) -> Any:
        if method not in self.METHODS:
            raise ParameterError("method", method, f"one of {', '.join(self.METHODS)}")
        worker = lease.worker
        if worker is None:
            raise WorkerUnavailable(self.wait)
        task = pickle.dumps(Task(method, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            worker.conn.send_bytes(task)
            answered = worker.conn.poll(self.deadline)
            reply = worker.conn.recv_bytes() if answered else None
        except (EOFError, OSError, ValueError):
            log.error("a worker died while running %s; it is replaced", method)
            lease.worker = None
            self._replace(worker)
            raise WorkerDeadline(self.deadline) from None
        if reply is None:
            log.error("a worker ran %s past its %g s deadline; replaced", method, self.deadline)
            lease.worker = None
            self._replace(worker)
            raise WorkerDeadline(self.deadline)
        answer: Reply = pickle.loads(reply)
        if answer.ok:
            return answer.value
        raise answer.value

    def _acquire(self, analyst: str | None) -> _Worker:
        end = time.monotonic() + self.wait
        while True:
            worker = self._free.take(analyst, end - time.monotonic())
            if worker is None:
                raise WorkerUnavailable(self.wait)
            if worker.process.poll() is None:
                return worker
            self._free.give_back(analyst, None)
            self._replace(worker)  # it died while idle: nothing ran on it

    def _put(self, worker: _Worker) -> None:
        """A new worker: to the next waiting caller in fair order, or idle."""
        self._free.add(worker)

    def _release(self, analyst: str | None, worker: _Worker | None) -> None:
        if worker is not None and self._closed:
            self._retire(worker)
            worker = None
        self._free.give_back(analyst, worker)

    def pids(self) -> list[int]:
        """Process ids of the live workers (for tests and diagnostics)."""
        with self._lock:
            return sorted(int(w.process.pid) for w in self._live.values())


class Lease:
    """A worker held by one caller (see :meth:`WorkerPool.lease`)."""

    __slots__ = ("pool", "worker")

    def __init__(self, pool: WorkerPool, worker: _Worker) -> None:
        self.pool = pool
        self.worker: _Worker | None = worker

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Run ``Curator.<method>(*args, **kwargs)`` on the held worker (see
        :meth:`WorkerPool.call`); after a deadline the lease holds no worker any more."""
        return self.pool._run(self, method, args, kwargs)


# -- the worker process ------------------------------------------------------------------------


#: Modules a query imports lazily (a one-query CLI process loads only what its query needs):
#: the release path's noise, the pricing's accountant and leakage summary, the AVG/VARIANCE
#: intervals' exact law, the free post-processing (HAVING, ORDER BY, computed items) and the
#: estimates. A new worker, and the server process itself, import them before they are
#: ready, so no analyst's first query of a kind pays an import.
_WARM = (
    "infodp.mechanisms.gaussian",
    "infodp.mechanisms.laplace",
    "infodp.mechanisms.quantile",
    "infodp.mechanisms.error_law",
    "infodp.curator.release.noise",
    "infodp.curator.rules.intervals",
    "infodp.curator.sql.post.process",
    "infodp.curator.sql.post.ratio",
    "infodp.curator.price.estimate",
    "infodp.accounting.accountant",
    "infodp.accounting.conversions",
    "infodp.accounting.pld",
    "infodp.explain.report",
    "infodp.server.timing",
)


#: What a worker process runs (``python -c ... FD``).
_WORKER_MAIN = "import sys; from infodp.server.pool import _serve_fd; _serve_fd(int(sys.argv[1]))"


def _serve_fd(fd: int) -> None:
    """A worker process on socket ``fd`` (see :data:`_WORKER_MAIN`)."""
    conn = Connection(fd)
    try:
        args = conn.recv()
    except (EOFError, OSError):
        return
    _worker_main(conn, *args)


def _worker_main(
    conn: Connection,
    db: str,
    query_timeout: float | None,
    duckdb_threads: int | None,
    keep_open: bool,
    spark_master: str | None,
    spark_conf: tuple[str, ...],
) -> None:
    """A worker: open the store read-only, then run tasks until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the server, which stops us
    try:
        from infodp.curator.engine import Curator

        curator = Curator(
            db,
            keep_open=keep_open,
            query_timeout=query_timeout,
            duckdb_threads=duckdb_threads,
            spark_master=spark_master,
            spark_conf=spark_conf,
        )
    except BaseException as err:
        with contextlib.suppress(Exception):
            conn.send(("failed", f"{type(err).__name__}: {err}"))
        return
    if keep_open:  # open the store connection now, not during the first query
        curator.warm()
    # Import what a release needs (about 0.4 s at the first query), then keep the start-up
    # heap out of the collector's full passes (pauses of 50-300 ms otherwise).
    freeze_heap(*_WARM)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return
        task: Task | None = pickle.loads(data)
        if task is None:
            return
        try:
            if task.method not in WorkerPool.METHODS:  # only the public protocol runs here
                raise ParameterError(
                    "method", task.method, "one of " + ", ".join(WorkerPool.METHODS)
                )
            reply = Reply(True, getattr(curator, task.method)(*task.args, **task.kwargs))
        except Exception as err:
            reply = Reply(False, _portable(err))
        try:
            out = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as err:  # a result that does not pickle: a bug, reported as one
            out = pickle.dumps(Reply(False, _portable(err)), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            conn.send_bytes(out)
        except (OSError, ValueError):
            return


def _portable(err: BaseException) -> BaseException:
    """``err`` if it survives a pickle round trip, else a RuntimeError with its class and text."""
    try:
        again = pickle.loads(pickle.dumps(err, protocol=pickle.HIGHEST_PROTOCOL))
        if type(again) is type(err) and str(again) == str(err):
            return err
    except Exception:  # any failure means: send the text instead
        pass
    return RuntimeError(f"{type(err).__name__}: {err}")
