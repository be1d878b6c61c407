"""Benchmark: one abusive analyst must not slow the others down (the curator's HTTP service).

``python3 -m benchmarks.server_abuse [--rows 1000000] [--groups 1900] [--heavy 41]
[--victim 200] [--workers 2,0] [--scenarios heavy,cheap,flood] [--half-open 400]
[--threads 60] [--abuser-keys 2] [--flood-threads 32]``

A synthetic table of ``--rows`` rows (DuckDB's generator, fixed seed) with an int column
``g`` declaring ``--groups`` keys, a float ``x`` in [0, 1000] and a 4-category column ``c``.
A real ``infodp serve`` runs on 127.0.0.1 with its default limits. In each scenario the
victim analyst first sends ``--victim`` sequential DP ``SELECT c, COUNT(*) FROM t GROUP BY c``
queries alone ("idle"), then the same queries while another analyst abuses the service
("abused"). Reported: the victim's p50/p99 latency in both phases and their ratio (the goal:
p99 within 3x of idle), and what the abuser got back.

* ``heavy`` (section "server abuse"), once per ``--workers`` setting (by default one worker
  process per core, then none): the abuser, holding ``--abuser-keys`` keys, fires
  ``--heavy`` concurrent
  ``SELECT g, MEDIAN(x) FROM t GROUP BY g`` queries (``--groups`` cells x 1024 histogram
  bins each, eps = 1e-4, the heaviest query the declared-cells caps allow).
* ``cheap`` (section "server abuse: cheap requests"), with the default workers: the abuser, a
  process of its own, holds ``--half-open`` connections that send part of a request's
  headers and never finish (reopened when the server closes them), while ``--threads``
  threads loop over free requests: a valid ``POST /v1/estimate``, a 64 KiB body of 6 500
  keys and a 64 KiB body of arrays nested 30 000 deep. Every loop is bounded by the victim's
  phase (and at most ``--max-abuse`` seconds); only loopback is used.
* ``flood`` (section "server abuse: flood"), with the default workers: the abuser, holding
  ``--abuser-keys`` keys, runs ``--flood-threads`` threads spread over them, each looping
  over ``GET /v1/budget``, ``GET /v1/datasets`` and a valid ``POST /v1/estimate`` as fast
  as it is answered (ignoring ``Retry-After``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb

from benchmarks._report import markdown_table, write_section

VICTIM_SQL = "SELECT c, COUNT(*) FROM t GROUP BY c"
HEAVY_SQL = "SELECT g, MEDIAN(x) FROM t GROUP BY g"


def schema(groups: int) -> dict[str, object]:
    """The declared schema: g an int with ``groups`` keys, x a bounded float, c 4 categories."""
    return {
        "table": "t",
        "privacy_unit": "row",
        "columns": {
            "g": {"type": "int", "bounds": [0, groups - 1]},
            "x": {"type": "float", "bounds": [0, 1000]},
            "c": {"type": "category", "categories": ["a", "b", "c", "d"]},
        },
    }


def make_parquet(path: Path, rows: int, groups: int) -> None:
    """A reproducible synthetic table written by DuckDB (fixed seed)."""
    con = duckdb.connect()
    con.execute("SELECT setseed(0.42)")
    con.execute(
        f"COPY (SELECT CAST(floor(random() * {groups}) AS BIGINT) AS g, random() * 1000 AS x, "
        "chr(97 + CAST(floor(random() * 4) AS INTEGER)) AS c "
        f"FROM range({rows})) TO '{path}' (FORMAT parquet)"
    )
    con.close()


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100])."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


def victim(
    url: str, key: str, count: int, stop: threading.Event | None, interval: float = 0.0
) -> list[float]:
    """Sequential victim queries, one started at most every ``interval`` seconds (within the
    key's rate limit); latencies in seconds (stops early when ``stop`` is set)."""
    from infodp.client import Client

    out: list[float] = []
    with Client(url, key, timeout=300) as client:
        client.budgets()
        for _ in range(count):
            if stop is not None and stop.is_set():
                break
            t0 = time.perf_counter()
            client.query(VICTIM_SQL, epsilon="0.001")
            out.append(time.perf_counter() - t0)
            time.sleep(max(0.0, interval - out[-1]))
    return out


def abuse(
    url: str, keys: list[str], heavy: int, outcomes: Counter[str], done: threading.Event
) -> float:
    """``heavy`` concurrent heavy queries from one analyst, spread over their ``keys``;
    returns the wall time until all end."""
    from infodp.client import ApiError, Client

    lock = threading.Lock()

    def one(key: str) -> None:
        try:
            with Client(url, key, timeout=600) as client:
                client.query(HEAVY_SQL, epsilon="0.0001")
                result = "200 answered"
        except ApiError as err:
            result = f"{err.status} {getattr(err, 'code', '')}".strip()
        except Exception as err:  # counted and reported
            result = type(err).__name__
        with lock:
            outcomes[result] += 1

    threads = [threading.Thread(target=one, args=(keys[i % len(keys)],)) for i in range(heavy)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=3600)
    done.set()
    return time.perf_counter() - t0


# -- the cheap-request mix -----------------------------------------------------------------------

#: A 64 KiB-class body of 6 500 keys and one of arrays nested 30 000 deep (both under the
#: default 64 KiB body limit).
MANY_KEYS = ("{" + ",".join(f'"k{i}":0' for i in range(6500)) + "}").encode()
DEEP = ('{"sql":' + "[" * 30000 + "]" * 30000 + "}").encode()


def _half_open(port: int, key: str) -> socket.socket | None:
    """A connection that sends part of a request's headers and never finishes them."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(
            b"POST /v1/estimate HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + f"Authorization: Bearer {key}\r\n".encode()
        )
        return sock
    except OSError:
        return None


def cheap_abuser(
    port: int, key: str, half_open: int, threads: int, stop: Any, seconds: float, out: Any
) -> None:
    """The abuser's process: ``half_open`` stalled connections plus ``threads`` threads of
    free requests, until ``stop`` is set or ``seconds`` have passed; statuses go to ``out``."""
    deadline = time.monotonic() + seconds
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()
    estimate = json.dumps({"sql": VICTIM_SQL, "epsilon": 0.1}).encode()
    bodies = [("estimate", estimate), ("6500 keys", MANY_KEYS), ("30000 deep", DEEP)]

    def running() -> bool:
        return not stop.is_set() and time.monotonic() < deadline

    def loop(i: int) -> None:
        conn: http.client.HTTPConnection | None = None
        n = i
        while running():
            name, body = bodies[n % len(bodies)]
            n += 1
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request(
                    "POST",
                    "/v1/estimate",
                    body=body,
                    headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
                )
                r = conn.getresponse()
                r.read()
                result = f"{name}: {r.status}"
                if r.getheader("connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException) as err:
                result = f"{name}: {type(err).__name__}"
                if conn is not None:
                    conn.close()
                conn = None
            with lock:
                outcomes[result] += 1
        if conn is not None:
            conn.close()

    stalled = [s for s in (_half_open(port, key) for _ in range(half_open)) if s is not None]
    workers = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(threads)]
    for t in workers:
        t.start()
    reopened = 0
    while running():
        time.sleep(0.5)
        # Reopen the stalled connections the server closed (bounded: one pass per 0.5 s).
        alive = []
        for sock in stalled:
            try:
                sock.setblocking(False)
                closed = sock.recv(1) == b""
            except BlockingIOError:
                closed = False
            except OSError:
                closed = True
            if closed:
                sock.close()
                fresh = _half_open(port, key)
                reopened += 1
                if fresh is not None:
                    alive.append(fresh)
            else:
                alive.append(sock)
        stalled = alive
    for t in workers:
        t.join(timeout=60)
    for sock in stalled:
        sock.close()
    outcomes["half-open reopened after the server closed them"] = reopened
    out.put(dict(outcomes))


def run_cheap(
    db: Path, work: Path, keys: dict[str, str], args: Any, src: str | None = None
) -> dict[str, Any]:
    """Idle and abused phases of the cheap-request mix against one ``infodp serve`` (run from
    the sources in ``src`` when given)."""
    # The test suite's server harness (tests/_server_harness.py; not shipped in the wheel).
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from _server_harness import ServerProcess

    saved = os.environ.get("PYTHONPATH")
    if src is not None:
        os.environ["PYTHONPATH"] = str(Path(src).resolve())
    try:
        server = ServerProcess(db, log_path=work / "server-cheap.log", rate=50.0, burst=100)
        server.start()
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    try:
        pace = 1.0 / 40  # the victim stays within its 50 requests/s
        victim(server.url, keys["victim"], 5, None, pace)  # warm-up
        # Idle is measured half before and half after the abuse, so a change in the machine's
        # other load during the run weighs on both phases alike.
        idle = victim(server.url, keys["victim"], args.victim // 2, None, pace)
        ctx = multiprocessing.get_context("spawn")
        stop = ctx.Event()
        out = ctx.Queue()
        abuser = ctx.Process(
            target=cheap_abuser,
            args=(
                server.port,
                keys["abuser"],
                args.half_open,
                args.threads,
                stop,
                args.max_abuse,
                out,
            ),
        )
        abuser.start()
        time.sleep(3.0)  # the connections are open and the threads running
        abused = victim(server.url, keys["victim"], args.victim, None, pace)
        stop.set()
        outcomes = out.get(timeout=120)
        abuser.join(timeout=120)
        time.sleep(2.0)  # the abuser's last requests are answered
        idle += victim(server.url, keys["victim"], args.victim - args.victim // 2, None, pace)
    finally:
        server.stop()
    return {"idle": idle, "abused": abused, "outcomes": outcomes}


def cheap_section(results: list[tuple[str, dict[str, Any]]], args: Any) -> str:
    """The text of the section "server abuse: cheap requests" (one row per server)."""

    def ms(x: float) -> str:
        return f"{x * 1000:.1f}"

    rows = []
    verdicts = []
    for label, result in results:
        idle, abused = result["idle"], result["abused"]
        p50 = percentile(abused, 50) / percentile(idle, 50)
        p99 = percentile(abused, 99) / percentile(idle, 99)
        got = ", ".join(f"{k}: {n}" for k, n in sorted(result["outcomes"].items()))
        rows.append(
            [
                label,
                ms(percentile(idle, 50)),
                ms(percentile(idle, 99)),
                ms(percentile(abused, 50)),
                ms(percentile(abused, 99)),
                f"**{p50:.2f}x**",
                f"**{p99:.2f}x**",
                got,
            ]
        )
        verdicts.append(f"{label}: {p99:.2f}x")
    table = markdown_table(
        [
            "server",
            "idle p50 ms",
            "idle p99 ms",
            "abused p50 ms",
            "abused p99 ms",
            "p50 abused / idle",
            "p99 abused / idle",
            "what the abuser got (body: status count)",
        ],
        rows,
    )
    return (
        f"One store of {args.rows:,} synthetic rows; a real `infodp serve` on loopback with its "
        "default limits and workers (50 requests/s per key, bursts of 100). Idle: the victim "
        f"sends {args.victim} sequential `{VICTIM_SQL}` (eps = 0.001, at most 40 per second: "
        "within its rate limit) alone, half before and half after the abused phase. Abused: "
        f"another analyst, from a process of its own, holds {args.half_open} half-open "
        "connections (part of a request's headers, never finished; reopened when the server "
        f"closes them) and runs {args.threads} threads looping over free `POST /v1/estimate` "
        "requests: a valid estimate, a 64 KiB body of 6 500 keys, and a 64 KiB body of arrays "
        "nested 30 000 deep; meanwhile the victim sends the same sequential queries. "
        + (
            f"The row `{args.compare_label}` is the same mix against the service as it was "
            "before the per-key gate (its sources in `--compare-src`, extracted with "
            "`git archive <commit> src | tar -x -C <dir>`), in the same run.\n\n"
            if args.compare_src
            else "\n\n"
        )
        + f"{table}\n\n"
        f"Victim p99 under the mix / idle p99 ({'; '.join(verdicts)}; goal: within 3x). The "
        "service answers an over-rate or over-concurrency key with 429 before reading its "
        "body, refuses bodies that are not UTF-8 or hold too many arrays/objects or keys "
        "(brackets and colons counted on the raw bytes) before parsing them, and closes "
        "connections whose request headers are not complete within the header deadline (and "
        "an address's oldest half-open connection beyond 64). On a machine shared with other "
        "jobs single numbers vary a lot (an idle p50 above the abused one is such noise: the "
        "victim's paced requests find a sleeping server)."
    )


# -- the flood of cheap valid requests -----------------------------------------------------------


def flood_abuser(
    port: int, keys: list[str], threads: int, stop: Any, seconds: float, out: Any
) -> None:
    """The flooding analyst's process: ``threads`` threads, spread over the analyst's
    ``keys``, each looping over ``GET /v1/budget``, ``GET /v1/datasets`` and a valid
    ``POST /v1/estimate`` on a kept-alive connection as fast as answers come (ignoring
    ``Retry-After``), until ``stop`` is set or ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()
    estimate = json.dumps({"sql": VICTIM_SQL, "epsilon": 0.1}).encode()
    requests = [
        ("budget", "GET", "/v1/budget", None),
        ("datasets", "GET", "/v1/datasets", None),
        ("estimate", "POST", "/v1/estimate", estimate),
    ]

    def loop(i: int) -> None:
        key = keys[i % len(keys)]
        conn: http.client.HTTPConnection | None = None
        n = i
        while not stop.is_set() and time.monotonic() < deadline:
            name, method, path, body = requests[n % len(requests)]
            n += 1
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                headers = {"Authorization": f"Bearer {key}"}
                if body is not None:
                    headers["Content-Type"] = "application/json"
                conn.request(method, path, body=body, headers=headers)
                r = conn.getresponse()
                r.read()
                result = f"{name}: {r.status}"
            except (OSError, http.client.HTTPException) as err:
                result = f"{name}: {type(err).__name__}"
                if conn is not None:
                    conn.close()
                conn = None
            with lock:
                outcomes[result] += 1
        if conn is not None:
            conn.close()

    workers = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(threads)]
    t0 = time.monotonic()
    for t in workers:
        t.start()
    for t in workers:
        t.join(timeout=seconds + 60)
    outcomes["seconds"] = round(time.monotonic() - t0)
    out.put(dict(outcomes))


def run_flood(
    db: Path,
    work: Path,
    keys: dict[str, str],
    abuser_keys: list[str],
    args: Any,
    src: str | None = None,
) -> dict[str, Any]:
    """Idle and flooded phases against one ``infodp serve`` with its default limits and
    workers (run from the sources in ``src`` when given)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from _server_harness import ServerProcess

    saved = os.environ.get("PYTHONPATH")
    if src is not None:
        os.environ["PYTHONPATH"] = str(Path(src).resolve())
    try:
        server = ServerProcess(db, log_path=work / "server-flood.log", rate=50.0, burst=100)
        server.start()
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    try:
        pace = 1.0 / 40  # the victim stays within its 50 requests/s
        victim(server.url, keys["victim"], 5, None, pace)  # warm-up
        idle = victim(server.url, keys["victim"], args.victim // 2, None, pace)
        ctx = multiprocessing.get_context("spawn")
        stop = ctx.Event()
        out = ctx.Queue()
        abuser = ctx.Process(
            target=flood_abuser,
            args=(server.port, abuser_keys, args.flood_threads, stop, args.max_abuse, out),
        )
        abuser.start()
        time.sleep(3.0)  # the threads are running
        abused = victim(server.url, keys["victim"], args.victim, None, pace)
        stop.set()
        outcomes = out.get(timeout=120)
        abuser.join(timeout=120)
        time.sleep(2.0)
        idle += victim(server.url, keys["victim"], args.victim - args.victim // 2, None, pace)
    finally:
        server.stop()
    return {"idle": idle, "abused": abused, "outcomes": outcomes}


def flood_section(results: list[tuple[str, dict[str, Any]]], args: Any) -> str:
    """The text of the section "server abuse: flood" (one row per server)."""

    def ms(x: float) -> str:
        return f"{x * 1000:.1f}"

    rows = []
    verdicts = []
    for label, result in results:
        idle, abused = result["idle"], result["abused"]
        p99 = percentile(abused, 99) / percentile(idle, 99)
        outcomes = dict(result["outcomes"])
        seconds = max(1, int(outcomes.pop("seconds", 1)))
        served = sum(n for k, n in outcomes.items() if k.endswith(": 200"))
        got = ", ".join(f"{k}: {n}" for k, n in sorted(outcomes.items()))
        rows.append(
            [
                label,
                ms(percentile(idle, 50)),
                ms(percentile(idle, 99)),
                ms(percentile(abused, 50)),
                ms(percentile(abused, 99)),
                f"**{p99:.2f}x**",
                f"{served / seconds:.0f}/s served; {got}",
            ]
        )
        verdicts.append(f"{label}: {p99:.2f}x")
    table = markdown_table(
        [
            "server",
            "idle p50 ms",
            "idle p99 ms",
            "flooded p50 ms",
            "flooded p99 ms",
            "p99 flooded / idle",
            "what the flooding analyst got (route: status count)",
        ],
        rows,
    )
    return (
        f"One store of {args.rows:,} synthetic rows; a real `infodp serve` on loopback with its "
        "default limits and workers (50 requests/s and 4 requests in flight per analyst). "
        f"Idle: the victim sends {args.victim} sequential `{VICTIM_SQL}` (eps = 0.001, at most "
        "40 per second) alone, half before and half after the flooded phase. Flooded: another "
        f"analyst holding {args.abuser_keys} keys runs, from a process of its own, "
        f"{args.flood_threads} threads spread over those keys, each looping as fast as it is "
        "answered (ignoring `Retry-After`) over `GET /v1/budget`, `GET /v1/datasets` and a "
        "valid `POST /v1/estimate`; meanwhile the victim sends the same sequential queries. "
        + (
            f"The row `{args.compare_label}` is the same run against the sources in "
            "`--compare-src`.\n\n"
            if args.compare_src
            else "\n\n"
        )
        + f"{table}\n\n"
        f"Victim p99 under the flood / idle p99 ({'; '.join(verdicts)}; goal: within 3x)."
    )


def run(
    db: Path,
    work: Path,
    keys: dict[str, str],
    abuser_keys: list[str],
    workers: int,
    args: Any,
) -> dict[str, Any]:
    """Both phases against one ``infodp serve --workers WORKERS``."""
    # The test suite's server harness (tests/_server_harness.py; not shipped in the wheel).
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from _server_harness import ServerProcess

    with ServerProcess(db, log_path=work / "server.log", workers=workers) as server:
        victim(server.url, keys["victim"], 5, None)  # warm-up
        idle = victim(server.url, keys["victim"], args.victim, None)
        outcomes: Counter[str] = Counter()
        done = threading.Event()
        wall = [0.0]

        def run_abuse() -> None:
            wall[0] = abuse(server.url, abuser_keys, args.heavy, outcomes, done)

        abuser = threading.Thread(target=run_abuse)
        abuser.start()
        time.sleep(0.5)  # let the heavy queries arrive first
        abused = victim(server.url, keys["victim"], args.victim, done)
        abuser.join(timeout=3600)
    return {"idle": idle, "abused": abused, "outcomes": outcomes, "wall": wall[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=1900)
    parser.add_argument("--heavy", type=int, default=41, help="Concurrent heavy queries.")
    parser.add_argument("--victim", type=int, default=200, help="Victim queries per phase.")
    parser.add_argument(
        "--workers",
        default=None,
        help="Comma-separated worker-process counts to serve with, each its own run "
        "(default: one per core, then 0 = everything in the server process).",
    )
    parser.add_argument(
        "--scenarios", default="heavy,cheap", help="Comma-separated: heavy, cheap (see above)."
    )
    parser.add_argument("--half-open", type=int, default=400, help="Stalled connections.")
    parser.add_argument("--threads", type=int, default=60, help="Threads of free requests.")
    parser.add_argument(
        "--abuser-keys",
        type=int,
        default=2,
        help="API keys the abusive analyst spreads its heavy queries and flood over.",
    )
    parser.add_argument(
        "--flood-threads", type=int, default=32, help="Threads of the cheap-request flood."
    )
    parser.add_argument(
        "--max-abuse", type=float, default=600.0, help="Seconds the cheap mix may run at most."
    )
    parser.add_argument(
        "--compare-src",
        default=None,
        help="A src/ directory of another version of infodp: the cheap mix is run against its "
        "server too, in the same run (e.g. git archive <commit> src | tar -x -C /tmp/before).",
    )
    parser.add_argument("--compare-label", default="before", help="Its row's label.")
    parser.add_argument("--no-write", action="store_true", help="Do not touch BENCHMARKS.md.")
    args = parser.parse_args()
    scenarios = {s.strip() for s in str(args.scenarios).split(",") if s.strip()}
    if not scenarios <= {"heavy", "cheap", "flood"}:
        parser.error("--scenarios takes heavy, cheap and/or flood")
    if args.abuser_keys < 1:
        parser.error(f"--abuser-keys must be a positive number of keys; got {args.abuser_keys}")

    from infodp.curator.engine import Curator
    from infodp.server.pool import default_workers

    configs = (
        [default_workers(), 0]
        if args.workers is None
        else [int(w) for w in str(args.workers).split(",")]
    )
    results: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        parquet = work / "t.parquet"
        make_parquet(parquet, args.rows, args.groups)
        db = work / "store.duckdb"
        setup = Curator(db)
        setup.register_dataset("t", str(parquet), schema(args.groups))
        keys = {
            "victim": setup.add_analyst("victim", "t", epsilon=10**9),
            "abuser": setup.add_analyst("abuser", "t", epsilon=10**9),
        }
        setup.close()
        from infodp.server.auth import KeyStore, key_store_path

        store = KeyStore(key_store_path(db))
        # The abuser's ledger key plus server keys: one analyst, several keys.
        abuser_keys = [keys["abuser"]] + [
            store.issue("abuser") for _ in range(args.abuser_keys - 1)
        ]
        if "heavy" in scenarios:
            for workers in configs:
                results[workers] = run(db, work, keys, abuser_keys, workers, args)
        flood: list[tuple[str, dict[str, Any]]] = []
        if "flood" in scenarios:
            flood.append(("this version", run_flood(db, work, keys, abuser_keys, args)))
            if args.compare_src:
                before = run_flood(db, work, keys, abuser_keys, args, src=args.compare_src)
                flood.append((args.compare_label, before))
        cheap: list[tuple[str, dict[str, Any]]] = []
        if "cheap" in scenarios:
            cheap.append(("this version", run_cheap(db, work, keys, args)))
            if args.compare_src:
                before = run_cheap(db, work, keys, args, src=args.compare_src)
                cheap.append((args.compare_label, before))

    if flood:
        body = flood_section(flood, args)
        print(body)
        if not args.no_write:
            command = (
                f"python3 -m benchmarks.server_abuse --scenarios flood --rows {args.rows} "
                f"--groups {args.groups} --victim {args.victim} --abuser-keys "
                f"{args.abuser_keys} --flood-threads {args.flood_threads}"
            )
            if args.compare_src:
                command += f" --compare-src {args.compare_src}"
                command += f" --compare-label '{args.compare_label}'"
            write_section("server abuse: flood", command, body)
    if cheap:
        body = cheap_section(cheap, args)
        print(body)
        if not args.no_write:
            command = (
                f"python3 -m benchmarks.server_abuse --scenarios cheap --rows {args.rows} "
                f"--groups {args.groups} --victim {args.victim} --half-open {args.half_open} "
                f"--threads {args.threads}"
            )
            if args.compare_src:
                command += f" --compare-src {args.compare_src}"
                command += f" --compare-label '{args.compare_label}'"
            write_section("server abuse: cheap requests", command, body)
    if not results:
        return

    def ms(x: float) -> str:
        return f"{x * 1000:.1f}"

    rows = []
    verdicts = []
    for workers, r in results.items():
        idle, abused = r["idle"], r["abused"]
        ratio = percentile(abused, 99) / percentile(idle, 99)
        got = ", ".join(f"{n} × {k}" for k, n in sorted(r["outcomes"].items()))
        rows.append(
            [
                f"`--workers {workers}`",
                ms(percentile(idle, 50)),
                ms(percentile(idle, 99)),
                f"{len(abused)}",
                ms(percentile(abused, 50)),
                ms(percentile(abused, 99)),
                f"**{ratio:.2f}×**",
                f"{r['wall']:.1f} s: {got}",
            ]
        )
        verdicts.append(f"`--workers {workers}`: {ratio:.2f}×")
    table = markdown_table(
        [
            "server",
            "idle p50 ms",
            "idle p99 ms",
            "abused queries",
            "abused p50 ms",
            "abused p99 ms",
            "abused p99 / idle p99",
            "abuser's queries",
        ],
        rows,
    )
    body = (
        f"One store of {args.rows:,} synthetic rows; a real `infodp serve` on loopback with its "
        "default limits (at most 1 heavy request — a query, estimate, synopsis release or "
        "synopsis query — in flight per analyst, shared by their keys, the rest waiting in "
        "the event loop without a "
        "worker thread; 1 DuckDB thread per query; a 30 s deadline interrupting DuckDB), once "
        "per `--workers` setting: N worker processes run the noise, the aggregate and the "
        "rendering of every answer, each with its own read-only store connection, while the "
        "server process keeps authentication, limits and the ledger (0: everything in the "
        f"server process). Idle: the victim sends {args.victim} sequential `{VICTIM_SQL}` "
        f"(ε = 0.001) alone. Abused: the abuser, an analyst holding {args.abuser_keys} keys, "
        f"sends {args.heavy} concurrent `{HEAVY_SQL}` spread over those keys "
        f"({args.groups} declared cells × 1024 histogram bins, ε = 1e-4) and meanwhile the "
        "victim sends the same sequential queries.\n\n"
        f"{table}\n\n"
        f"Victim p99 under abuse / idle p99 ({'; '.join(verdicts)}; goal: within 3×). The knob "
        "is `--workers` (default: one per core): with the abuser's work in a process of its "
        "own, the victim no longer waits for the server's interpreter lock at every hand-over; "
        "the per-analyst slot (`--max-concurrent 1`, shared by the abuser's keys) and the pool's "
        "fair hand-out (at most workers - 1 per analyst, freed workers round robin by "
        "analyst) keep the abuser to one worker, so a victim always finds another free, and "
        "DuckDB runs one thread per query. On a machine shared "
        "with other jobs single numbers vary a lot."
    )
    print(body)
    if not args.no_write:
        command = (
            "python3 -m benchmarks.server_abuse "
            f"--rows {args.rows} --groups {args.groups} --heavy {args.heavy} "
            f"--victim {args.victim} --abuser-keys {args.abuser_keys}"
        )
        if args.workers is not None:
            command += f" --workers {args.workers}"
        if scenarios != {"heavy"}:  # the other scenarios write sections of their own
            command += " --scenarios heavy"
        write_section("server abuse", command, body)


if __name__ == "__main__":
    main()
