"""Benchmark: how much Python one HTTP query runs, first and warm, in the service process.

``python3 -m benchmarks.request_path [--rows 10000] [--warm 5] [--before SRC]``

The FastAPI app of :func:`infodp.server.app.create_app` (no worker processes) is called
in-process through httpx's ASGI transport with ``POST /v1/query`` of ``SELECT region,
COUNT(*), AVG(income) FROM census GROUP BY region`` on the demo census
(:func:`infodp.curator.demo.census_frame`). Every module the service imports before its first
request (the lifespan's warm-up of :data:`infodp.server.pool._WARM`) and the ASGI/HTTP
libraries are imported first, and one query of another shape (``SELECT COUNT(*) FROM census``)
is answered before the measured ones, so "first" is the first query of its shape on a running
service: its parse, plan and price, not module imports.

A profile hook on every thread (the event loop's and the thread pool's) counts, while the app
handles the request, each Python function called (``call`` events) and each builtin (``c_call``
events): the figures are the distinct functions and the calls, for the first query, for the
median of ``--warm`` repetitions of it, and for the median of ``--warm`` repetitions at a new ε
each (priced again, never planned again); beside them the same two figures for infodp's own
functions alone (the rest is the web framework, sqlglot, numpy and builtins). The client's own
work (building the request, reading the response) is not counted. The number of calls varies a
little from run to run: the AVG interval's search takes as many steps as the noisy answer
needs. With ``--before SRC`` (an older ``src`` tree) the same figures are measured with that
tree's infodp; each tree is measured in a process of its own (this checkout's ``src`` first on
the path). The section "request path" of BENCHMARKS.md is rewritten with the results.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

from benchmarks._report import ROOT, markdown_table, write_section

SQL = "SELECT region, COUNT(*), AVG(income) FROM census GROUP BY region"
#: A file of infodp's own (in src/infodp or an installed copy).
_OWN = f"{os.sep}infodp{os.sep}"
OTHER = "SELECT COUNT(*) FROM census"


class Counting:
    """Counts calls by function while :attr:`on` (a profile hook for all threads)."""

    def __init__(self) -> None:
        self.on = False
        self.calls: Counter[object] = Counter()

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self.on:
            return
        if event == "call":
            code = frame.f_code
            self.calls[(code.co_filename, code.co_firstlineno, code.co_name)] += 1
        elif event == "c_call":
            self.calls[("builtin", getattr(arg, "__qualname__", repr(arg)))] += 1

    def install(self) -> None:
        threading.setprofile(self.hook)
        sys.setprofile(self.hook)


def _build_store(directory: Path, rows: int) -> tuple[str, str]:
    from infodp.curator import Curator
    from infodp.curator.demo import CENSUS_SCHEMA, census_frame
    from infodp.server.auth import KeyStore

    db = str(directory / "demo.duckdb")
    cur = Curator(db)
    cur.register_dataset("census", census_frame(rows), CENSUS_SCHEMA)
    cur.add_analyst("alice", "census", epsilon=10_000)
    cur.close()
    return db, KeyStore(db).issue("alice")


Figures = tuple[int, int, int, int]


def _figures(calls: Counter[object]) -> Figures:
    """(distinct functions, calls, of them infodp's distinct functions, infodp's calls)."""
    own = {k: n for k, n in calls.items() if isinstance(k, tuple) and _OWN in str(k[0])}
    return len(calls), sum(calls.values()), len(own), sum(own.values())


def measure(rows: int, warm: int) -> dict[str, Figures]:
    """{"first": :func:`_figures`, "warm": their medians, "warm, new ε": the same for the
    query asked again at another ε each time}."""
    import httpx

    from infodp.server.app import ServerSettings, create_app
    from infodp.server.pool import _WARM

    for name in _WARM:
        importlib.import_module(name)
    counting = Counting()
    with tempfile.TemporaryDirectory() as tmp:
        db, key = _build_store(Path(tmp), rows)
        app = create_app(ServerSettings(db))

        async def counted(scope: Any, receive: Any, send: Any) -> None:
            counting.on = True
            try:
                await app(scope, receive, send)
            finally:
                counting.on = False

        async def run() -> list[Figures]:
            transport = httpx.ASGITransport(app=counted)
            headers = {"Authorization": f"Bearer {key}"}
            out = []
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
                # the other shape, the first query, ``warm`` repeats, ``warm`` at new ε
                asked = [(OTHER, 0.1), (SQL, 0.1)] + [(SQL, 0.1)] * warm
                asked += [(SQL, 0.1 + (i + 1) / 1000) for i in range(warm)]
                for sql, eps in asked:
                    counting.calls.clear()
                    body = {"sql": sql, "epsilon": eps}
                    r = await client.post("/v1/query", json=body, headers=headers)
                    if r.status_code != 200:
                        raise SystemExit(f"query failed: {r.status_code} {r.text}")
                    out.append(_figures(counting.calls))
            return out

        counting.install()
        try:
            got = asyncio.run(run())
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
            app.state.service.close()

    def median(runs: list[Figures]) -> Figures:
        a, b, c, d = (int(statistics.median(r[i] for r in runs)) for i in range(4))
        return a, b, c, d

    return {
        "first": got[1],
        "warm": median(got[2 : 2 + warm]),
        "warm, new ε": median(got[2 + warm :]),
    }


def _in_tree(src: Path, rows: int, warm: int) -> dict[str, Figures]:
    """:func:`measure` with the infodp of the tree ``src``, in a process of its own."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(src.resolve()), str(ROOT)])
    argv = [sys.executable, "-m", "benchmarks.request_path", "--rows", str(rows)]
    out = subprocess.run(
        [*argv, "--warm", str(warm), "--json"],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {k: (int(a), int(b), int(c), int(d)) for k, (a, b, c, d) in json.loads(out).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--warm", type=int, default=5)
    parser.add_argument("--before", type=Path, default=None, help="an older src tree")
    parser.add_argument("--json", action="store_true", help="print the figures, write nothing")
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.rows, args.warm)))
        return
    versions = [("this version", _in_tree(ROOT / "src", args.rows, args.warm))]
    if args.before is not None:
        versions.append((f"before ({args.before})", _in_tree(args.before, args.rows, args.warm)))
    rows = [
        [version, kind, *map(str, figures)]
        for version, by_kind in versions
        for kind, figures in by_kind.items()
    ]
    body = (
        f"`POST /v1/query` of `{SQL}` at ε = 0.1 through the FastAPI app in-process (httpx "
        f"ASGI transport, no worker processes), demo census with {args.rows:,} rows; Python "
        "functions and builtins the service runs for the request, on all its threads "
        f'(event loop and thread pool). "first": the first query of its shape (another '
        f'shape answered before it, every module imported); "warm": median of {args.warm} '
        'repetitions; "warm, new ε": median of as many at a new ε each. The last two columns '
        "count infodp's own functions alone (the rest is FastAPI, Starlette, AnyIO, sqlglot, "
        "numpy and builtins).\n\n"
        + markdown_table(
            [
                "version",
                "query",
                "distinct functions",
                "calls",
                "infodp's functions",
                "infodp's calls",
            ],
            rows,
        )
        + "\n"
    )
    command = f"python3 -m benchmarks.request_path --rows {args.rows} --warm {args.warm}"
    if args.before is not None:
        command += f" --before {args.before}"
    write_section("request path", command, body)
    print(body)


if __name__ == "__main__":
    main()
