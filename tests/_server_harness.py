"""Run a real ``infodp serve`` on loopback for tests and benchmarks (test support, not shipped).

:class:`ServerProcess` starts the service as a subprocess on 127.0.0.1 with a free port, waits
until ``/v1/health`` answers, and always stops it (context manager); :func:`build_store`
creates a small store with analysts. Every wait is bounded in time.

>>> free_port() > 0
True
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from infodp.errors import InternalError

__all__ = ["ServerProcess", "build_store", "free_port", "get_json"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(condition: Any, seconds: float, step: float) -> bool:
    """Whether ``condition()`` became true within ``seconds``, asked every ``step`` seconds."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(step)
    return False


def get_json(
    port: int,
    method: str,
    path: str,
    body: Any = None,
    *,
    key: str | None = None,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
    timeout: float = 30.0,
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """One request on a fresh connection: (status, decoded JSON object, response headers)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        h = dict(headers or {})
        if key is not None:
            h["Authorization"] = f"Bearer {key}"
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        text = r.read()
        try:
            payload = json.loads(text) if text else {}
        except ValueError:
            payload = {"_raw": text.decode(errors="replace")}
        return r.status, payload, {k.lower(): v for k, v in r.getheaders()}
    finally:
        conn.close()


class ServerProcess:
    """``infodp serve --db DB`` on 127.0.0.1:<free port>, started and stopped by its owner."""

    def __init__(
        self,
        db: str | os.PathLike[str],
        *,
        rate: float = 10_000.0,
        burst: int = 10_000,
        max_body: int = 64 * 1024,
        admin_token_file: str | None = None,
        log_path: str | os.PathLike[str] | None = None,
        keep_open: bool = True,
        workers: int | None = None,
        query_timeout: float | None = None,
        answer_time: float = 0.0,
        duckdb_threads: int | None = None,
    ) -> None:
        self.db = str(db)
        self.args = ["--rate", str(rate), "--burst", str(burst), "--max-body", str(max_body)]
        self.args.append("--keep-open" if keep_open else "--open-per-query")
        if workers is not None:  # default: the CLI's (one worker process per core)
            self.args += ["--workers", str(workers)]
        if query_timeout is not None:
            self.args += ["--query-timeout", str(query_timeout)]
        # Unpadded unless a test asks (tests/server/test_timing.py checks the padding): a
        # padded answer takes its whole budget, which would only slow the other tests down.
        self.args += ["--answer-time", str(answer_time)]
        if admin_token_file is not None:
            self.args += ["--admin-token-file", admin_token_file]
        if duckdb_threads is not None:  # default: the CLI's (one DuckDB thread per query)
            self.args += ["--duckdb-threads", str(duckdb_threads)]
        self.log_path = Path(log_path) if log_path is not None else Path(self.db + ".server.log")
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Base URL (without /v1)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> ServerProcess:
        """Start the server and wait (at most ``timeout`` s) until it answers /v1/health."""
        for _ in range(3):
            self.port = free_port()
            cmd = [sys.executable, "-m", "infodp.cli", "serve", "--db", self.db]
            cmd += ["--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning"]
            log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
            try:
                self.proc = subprocess.Popen(
                    cmd + self.args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                )
            finally:
                log.close()
            if self._wait_ready(timeout):
                return self
            self.stop()
        raise InternalError(f"infodp serve did not start; see {self.log_path}")

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False
            try:
                status, _, _ = get_json(self.port, "GET", "/v1/health", timeout=2.0)
                if status == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def kill(self) -> None:
        """SIGKILL the server (no clean shutdown) and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 10 s) and reap it."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_all(servers: Iterable[ServerProcess], timeout: float = 90.0) -> None:
    """Start ``servers`` side by side (each start is mostly its interpreter's imports and the
    wait for /v1/health); if one fails, those started are stopped and its error raised."""
    group = list(servers)
    with ThreadPoolExecutor(max_workers=max(1, len(group))) as pool:
        futures = [pool.submit(s.start, timeout) for s in group]
    failed = [e for f in futures if (e := f.exception()) is not None]
    if failed:
        for s in group:
            s.stop()
        raise failed[0]


def build_store(
    directory: str | os.PathLike[str],
    analysts: list[tuple[str, str, Any]],
    *,
    rows: int = 200,
) -> tuple[str, dict[str, str]]:
    """A store with tables ``people`` and ``visits`` and budgets ``[(analyst, dataset, ε)]``.

    Returns (db path, {analyst: ledger API key of their first budget}). ``people`` has
    ``rows`` rows: age (int, 0–99) and region (4 declared categories); ``visits`` the same
    shape with half the rows.
    """
    from infodp.curator.engine import Curator

    db = str(Path(directory) / "store.duckdb")
    cur = Curator(db)
    regions = ["north", "south", "east", "west"]
    schema_cols = {
        "age": {"type": "int", "bounds": [0, 99]},
        "region": {"type": "category", "categories": regions},
    }
    for table, n in (("people", rows), ("visits", max(1, rows // 2))):
        csv = Path(directory) / f"{table}.csv"
        lines = ["age,region"] + [f"{i % 100},{regions[i % 4]}" for i in range(n)]
        csv.write_text("\n".join(lines) + "\n")
        cur.register_dataset(
            table, str(csv), {"table": table, "privacy_unit": "row", "columns": schema_cols}
        )
    keys: dict[str, str] = {}
    for name, dataset, eps in analysts:
        key = cur.add_analyst(name, dataset, epsilon=eps)
        keys.setdefault(name, key)
    return db, keys
