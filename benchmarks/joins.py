"""Benchmark: a private ⋈ private ⋈ public GROUP BY, infodp against DuckDB, Spark and Tumult.

``PYTHONPATH=$PWD/src python3 -m benchmarks.joins [--people 1000000] [--visits 10000000]
[--reps 3] [--accuracy-people 10000] [--accuracy-visits 100000] [--answers 50]``

One population, seeded and generated with DuckDB into a temporary folder (never kept):
``people(person_id, age [0, 120], region)`` one row per person, ``visits(person_id, cost
[0, 5000], kind)`` 0 to 20 rows per person (skewed: capped exponential counts, a fifth of the
people at the cap; costs heavy-tailed with some zeros) and the public ``regions(region,
country)`` (50 regions in 8 countries). The query is :data:`SQL`: visits and their total cost
per country. Measured in one run, each engine on the same Parquet files:

* plain DuckDB on the three tables loaded into a DuckDB file (the limit), infodp's service
  path (a :class:`~infodp.curator.engine.Curator` store with the population registered, the
  store kept open, as ``benchmarks/curator.py`` measures it) and the same query over HTTP (a
  real ``infodp serve`` on loopback, one client, at its default one DuckDB thread per query and
  with ``--duckdb-threads 0``), their rounds alternating (one of each per
  repetition: ``benchmarks.curator.interleaved``); the registration is timed once, apart;
* plain Spark SQL on Spark local[2] and infodp on Spark (``register_dataset(...,
  backend="spark")``) on one warm SparkSession, alternating likewise
  (``benchmarks/_spark_common.py`` holds the settings);
* Tumult Analytics (pinned to pyspark 3.5: its own environment, ``--tumult-python``) with the
  same Spark settings through ``benchmarks/_tumult_join_runner.py``: ``join_private`` on the
  privacy identifier, ``join_public`` with the regions, ``MaxRowsPerID(20)``, grouped by the
  countries of the public table; COUNT and SUM are two queries at ε/2 each;
* accuracy at ε = 1: ``--answers`` releases of the same query by infodp and by Tumult on a
  smaller population (``--accuracy-people`` × ``--accuracy-visits``), the mean absolute error
  per output cell against the exact answer on the same bounded data (no person has more than
  20 visits and every cost is within its bounds, so the bounded data are the data); the noise
  does not depend on the size, and Tumult's releases take seconds each, hence the smaller
  population; one more infodp release at ε = 10⁶ checks that its answer is the exact one.

A step that cannot run says why in the table (``--no-spark``/``--no-tumult``/``--no-http``
skip parts). The section "joins" of BENCHMARKS.md is rewritten with the results.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import duckdb

from benchmarks._report import markdown_table, write_section
from benchmarks._spark_common import once, spark_conf, spark_session
from benchmarks.curator import interleaved
from benchmarks.spark_groupby import (
    DEFAULT_TUMULT,
    Cell,
    _collect,
    _infodp_source,
    _java_version,
    _safely,
    run_tumult,
)

SQL = (
    "SELECT r.country, COUNT(*) AS visits, SUM(v.cost) AS total FROM people p "
    "JOIN visits v ON p.person_id = v.person_id JOIN regions r ON p.region = r.region "
    "GROUP BY r.country"
)
EPSILON = 1
MAX_VISITS = 20
COST = (0.0, 5000.0)
AGE = (0, 120)
KINDS = ["checkup", "emergency", "lab", "pharmacy", "surgery"]
REGIONS, COUNTRIES = 50, 8
SCHEMA: dict[str, Any] = {
    "privacy_unit": "person_id",
    "tables": {
        "people": {
            "max_rows_per_unit": 1,
            "columns": {
                "person_id": {"type": "text"},
                "age": {"type": "int", "bounds": list(AGE)},
                "region": {"type": "text"},
            },
        },
        "visits": {
            "max_rows_per_unit": MAX_VISITS,
            "columns": {
                "person_id": {"type": "text"},
                "cost": {"type": "float", "bounds": list(COST)},
                "kind": {"type": "category", "categories": KINDS},
            },
        },
        "regions": {
            "public": True,
            "columns": {"region": {"type": "text"}, "country": {"type": "text"}},
        },
    },
}
TABLES = tuple(SCHEMA["tables"])


def _uniform(*salt: int | str) -> str:
    """A seeded uniform in (0, 1] as DuckDB SQL: a hash of the row's index and a salt."""
    args = ", ".join(str(s) for s in salt)
    return f"((hash({args}) % 1000003) + 1) / 1000004.0"


def _visit_scale(mean: float) -> float:
    """The exponential scale s with E[min(⌊X⌋, 20)] = Σ_{k=1..20} e^{-k/s} = ``mean``."""
    if not 0 < mean < MAX_VISITS:
        raise ValueError(f"visits per person must be in (0, {MAX_VISITS}), not {mean:g}")
    low, high = 1e-3, 1e6
    for _ in range(200):  # bisection: the sum grows with s
        mid = (low + high) / 2
        total = sum(math.exp(-k / mid) for k in range(1, MAX_VISITS + 1))
        low, high = (mid, high) if total < mean else (low, mid)
    return (low + high) / 2


def generate(folder: Path, people: int, visits: int) -> dict[str, Path]:
    """Write people, visits and regions as Parquet into ``folder`` (deterministic hashes).

    Counts per person are ⌊X⌋ capped at 20 for an exponential X scaled so that the expected
    total is ``visits``; regions are skewed (region k with probability growing towards 0);
    costs are Pareto-tailed (40·(u^-0.9 − 1), capped at 5000) with 8% zeros.
    """
    folder.mkdir(parents=True, exist_ok=True)
    paths = {name: folder / f"{name}.parquet" for name in TABLES}
    scale = _visit_scale(visits / people)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(
        "CREATE TABLE regions AS SELECT 'r' || lpad(CAST(k AS VARCHAR), 2, '0') AS region, "
        f"'country_' || CAST(k % {COUNTRIES} AS VARCHAR) AS country FROM range({REGIONS}) t(k)"
    )
    con.execute(
        "CREATE TABLE p AS SELECT i, 'p' || lpad(CAST(i AS VARCHAR), 8, '0') AS person_id, "
        f"CAST(hash(i, 1) % {AGE[1] + 1} AS INTEGER) AS age, "
        f"'r' || lpad(CAST(CAST(floor({REGIONS} * pow({_uniform('i', 2)}, 2)) AS INTEGER) "
        "AS VARCHAR), 2, '0') AS region, "
        f"CAST(least({MAX_VISITS}, floor(-ln({_uniform('i', 3)}) * {scale!r})) AS INTEGER) AS n "
        f"FROM range({people}) t(i)"
    )
    kinds = "[" + ", ".join(f"'{k}'" for k in KINDS) + "]"
    con.execute(
        "CREATE TABLE v AS SELECT person_id, "
        f"CASE WHEN {_uniform('i', 'j', 4)} < 0.08 THEN 0.0 ELSE least({COST[1]}, "
        f"round(40 * (pow({_uniform('i', 'j', 5)}, -0.9) - 1), 2)) END AS cost, "
        f"{kinds}[1 + CAST(hash(i, j, 6) % {len(KINDS)} AS INTEGER)] AS kind "
        "FROM (SELECT i, person_id, unnest(range(n)) AS j FROM p) ORDER BY hash(i, j, 7)"
    )
    con.execute(f"COPY (SELECT person_id, age, region FROM p) TO '{paths['people']}'")
    con.execute(f"COPY v TO '{paths['visits']}'")
    con.execute(f"COPY regions TO '{paths['regions']}'")
    con.close()
    return paths


def describe(paths: dict[str, Path]) -> dict[str, float]:
    """Row counts and the facts the bounds rest on (read back from the files)."""
    con = duckdb.connect()
    for name, path in paths.items():
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    row = con.execute(
        "SELECT (SELECT count(*) FROM people), (SELECT count(*) FROM visits), "
        "(SELECT count(*) FROM regions), (SELECT count(DISTINCT country) FROM regions), "
        "(SELECT max(n) FROM (SELECT count(*) AS n FROM visits GROUP BY person_id)), "
        "(SELECT avg(CAST(n = 20 AS INTEGER)) FROM (SELECT coalesce(n, 0) AS n FROM people "
        "LEFT JOIN (SELECT person_id, count(*) AS n FROM visits GROUP BY person_id) "
        "USING (person_id))), "
        "(SELECT min(cost) FROM visits), (SELECT max(cost) FROM visits), "
        "(SELECT avg(CAST(cost = 0 AS INTEGER)) FROM visits)"
    ).fetchone()
    con.close()
    assert row is not None
    keys = ["people", "visits", "regions", "countries", "max_visits", "at_cap", "min_cost"]
    return dict(zip([*keys, "max_cost", "zero_costs"], map(float, row), strict=True))


def _views(con: Any, paths: dict[str, Path], how: str = "VIEW") -> Any:
    for name, path in paths.items():
        con.execute(f"CREATE {how} {name} AS SELECT * FROM read_parquet('{path}')")
    return con


def exact(paths: dict[str, Path]) -> dict[str, tuple[float, float]]:
    """{country: (visits, total)} by plain DuckDB on the files."""
    con = _views(duckdb.connect(), paths)
    rows = con.execute(SQL).fetchall()
    con.close()
    return {str(c): (float(n), float(s)) for c, n, s in rows}


def infodp_joins_available() -> str | None:
    """None when this infodp registers a population of several tables, else why not."""
    from infodp.curator.declaration.source import load_schema

    try:
        load_schema(SCHEMA)
    except Exception as err:  # this infodp reads only the single-table form
        return f"not run: this infodp does not read the population schema ({err})"[:200]
    return None


def _register(db: Path, paths: dict[str, Path], **spark: Any) -> tuple[Any, Cell]:
    """A Curator store at ``db`` with the population registered and an analyst; its cell."""
    from infodp.curator.engine import Curator

    curator = Curator(db, query_timeout=3600.0)
    where = "on Spark" if spark else "DuckDB"
    sources = {name: str(path) for name, path in paths.items()}
    cell = _safely(
        f"infodp_{'spark_' if spark else ''}register",
        f"infodp ({where}): registration of the population (one-off: checks, bounded copies)",
        partial(once, partial(curator.register_dataset, "clinic", sources, SCHEMA, **spark)),
    )
    if cell.ok:
        curator.add_analyst("bench", "clinic", epsilon=10**9)
    return curator, cell


def _checked(
    cases: dict[str, Callable[[], Any]],
) -> tuple[dict[str, Callable[[], Any]], list[Cell]]:
    """The cases whose first run succeeds, and a not-run cell for each of the others."""
    ok: dict[str, Callable[[], Any]] = {}
    failed: list[Cell] = []
    for what, fn in cases.items():
        cell = _safely("check", what, partial(once, fn))
        if cell.ok:
            ok[what] = fn
        else:
            failed.append(Cell(what, what, cell.seconds, 0))
    return ok, failed


def _alternating(
    keys: dict[str, str], cases: dict[str, Callable[[], Any]], reps: int
) -> list[Cell]:
    """Cells of ``cases`` (what → run) measured in alternating rounds; ``keys``: what → key."""
    ok, cells = _checked(cases)
    for what, seconds in interleaved(ok, reps).items():
        cells.append(Cell(keys[what], what, seconds, reps))
        print(f"  {seconds:.3f} s ({reps} runs): {what}", file=sys.stderr, flush=True)
    return sorted(cells, key=lambda c: list(cases).index(c.what))


def bench_duckdb(paths: dict[str, Path], work: Path, reps: int, http: bool) -> list[Cell]:
    """Plain DuckDB, infodp's kept-open service path and infodp over HTTP, alternating."""
    plain_db = work / "plain.duckdb"
    _views(duckdb.connect(str(plain_db)), paths, "TABLE").close()
    plain = duckdb.connect(str(plain_db), read_only=True)
    on_files = _views(duckdb.connect(), paths)
    keys = {
        "plain DuckDB on the tables loaded into a DuckDB file, no noise (the limit)": "duckdb",
        "(reference) plain DuckDB on the Parquet files, no noise": "duckdb_parquet",
    }
    cases: dict[str, Callable[[], Any]] = {
        what: partial(lambda c: c.execute(SQL).fetchall(), con)
        for what, con in zip(keys, (plain, on_files), strict=True)
    }
    why = infodp_joins_available()
    service_what = "infodp service path (store kept open, in process), DP query end to end"
    http_what = (
        "infodp over HTTP (infodp serve on loopback, one client; its default one DuckDB thread "
        "per query), DP query end to end"
    )
    http_all_what = (
        "infodp over HTTP, infodp serve --duckdb-threads 0 (every core per query, as plain "
        "DuckDB), DP query end to end"
    )
    keys |= {service_what: "infodp", http_what: "infodp_http", http_all_what: "infodp_http_all"}
    cells: list[Cell] = []
    curator = None
    servers: list[Any] = []
    clients: list[Any] = []
    if why is not None:
        cells = [Cell("infodp_register", "infodp: registration", why, 0)]
    else:
        setup, registered = _register(work / "store.duckdb", paths)
        cells.append(registered)
        key = setup.ledger.issue_key("bench") if registered.ok else ""
        setup.close()
        if registered.ok:
            from infodp.curator.engine import Curator

            curator = Curator(work / "store.duckdb", keep_open=True, query_timeout=3600.0)
            cases[service_what] = partial(curator.query, "bench", SQL, epsilon=EPSILON)
            if http:
                for what, threads in ((http_what, None), (http_all_what, 0)):
                    server, client = _serve(work / "store.duckdb", key, threads)
                    servers.append(server)
                    clients.append(client)
                    cases[what] = partial(client.query, SQL, epsilon=EPSILON)
    try:
        cells += _alternating(keys, cases, reps)
    finally:
        for server in servers:
            server.stop()
        for closing in (*clients, curator, plain, on_files):
            if closing is not None:
                closing.close()
    return cells


def _serve(db: Path, key: str, duckdb_threads: int | None) -> tuple[Any, Any]:
    """A running ``infodp serve`` on ``db`` and a client with ``key`` (the test harness);
    ``duckdb_threads``: its ``--duckdb-threads`` (None: the default)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from _server_harness import ServerProcess
    from infodp.client import Client

    server = ServerProcess(
        db,
        log_path=db.with_suffix(f".server{duckdb_threads}.log"),
        query_timeout=3600,
        duckdb_threads=duckdb_threads,
    )
    server.start()
    return server, Client(server.url, key, timeout=3600)


def bench_spark(paths: dict[str, Path], work: Path, reps: int, conf: dict[str, str]) -> list[Cell]:
    """Plain Spark SQL and infodp on Spark on one warm SparkSession, alternating."""
    spark = spark_session(conf)
    for name, path in paths.items():
        spark.read.parquet(str(path)).createOrReplaceTempView(name)
    plain_what = "plain Spark SQL on the Parquet files, no noise (the limit)"
    infodp_what = "infodp on Spark (backend='spark'), DP query end to end"
    keys = {plain_what: "spark", infodp_what: "infodp_spark"}
    cases: dict[str, Callable[[], Any]] = {plain_what: partial(_collect, spark, SQL)}
    why = infodp_joins_available()
    curator = None
    if why is not None:
        cells = [Cell("infodp_spark_register", "infodp on Spark: registration", why, 0)]
    else:
        bounded = str(work / "spark.bounded")
        curator, registered = _register(
            work / "spark.duckdb", paths, backend="spark", bounded_path=bounded
        )
        cells = [registered]
        if registered.ok:
            cases[infodp_what] = partial(curator.query, "bench", SQL, epsilon=EPSILON)
    try:
        cells += _alternating(keys, cases, reps)
    finally:
        if curator is not None:
            curator.close()
        spark.stop()
    return cells


def released(result: Any) -> dict[str, list[float]]:
    """{country: [visits, total]} of an infodp answer (columns by name, else in SELECT order)."""
    names = ("country", "visits", "total")
    columns = list(result.columns)
    at = [columns.index(n) for n in names] if set(names) <= set(columns) else [0, 1, 2]
    return {str(row[at[0]]): [float(row[at[1]]), float(row[at[2]])] for row in result.rows}


def infodp_answers(paths: dict[str, Path], work: Path, answers: int) -> Any:
    """``answers`` releases of the query at ε = 1 (service path), then one at ε = 10⁶ (a check
    that the answer is the exact one plus noise), or why none."""
    why = infodp_joins_available()
    if why is not None:
        return why
    curator, registered = _register(work / "accuracy.duckdb", paths)
    try:
        if not registered.ok:
            return registered.seconds
        out = [released(curator.query("bench", SQL, epsilon=EPSILON)) for _ in range(answers)]
        return [*out, released(curator.query("bench", SQL, epsilon=10**6))]
    except Exception as err:  # report why infodp did not answer
        return f"not run: {type(err).__name__}: {' '.join(str(err).split())[:160]}"
    finally:
        curator.close()


def mean_abs_error(
    answers: list[dict[str, list[float]]], truth: dict[str, tuple[float, float]]
) -> tuple[float, float]:
    """Mean absolute error per output cell (visits, total) over answers × countries; a
    country missing from an answer counts as released 0."""
    errors: list[list[float]] = [[], []]
    for answer in answers:
        for country, values in truth.items():
            got = answer.get(country, [0.0, 0.0])
            for i in (0, 1):
                errors[i].append(abs(got[i] - values[i]))
    return (sum(errors[0]) / len(errors[0]), sum(errors[1]) / len(errors[1]))


def tumult_config(
    timing: dict[str, Path] | None, accuracy: dict[str, Path] | None, args: Any, conf: Any
) -> dict[str, Any]:
    """What ``_tumult_join_runner.py`` reads: the tables, the query's bounds, the settings."""
    return {
        "timing": {k: str(v) for k, v in timing.items()} if timing else None,
        "accuracy": {k: str(v) for k, v in accuracy.items()} if accuracy else None,
        "sql": SQL,
        "conf": conf,
        "reps": args.reps,
        "max_rows": MAX_VISITS,
        "low": COST[0],
        "high": COST[1],
        "epsilon": EPSILON,
        "answers": args.answers,
        "seconds": args.tumult_seconds,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=1_000_000)
    parser.add_argument("--visits", type=int, default=10_000_000)
    parser.add_argument("--spark-people", type=int, help="a smaller size for the Spark cells")
    parser.add_argument("--spark-visits", type=int)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--accuracy-people", type=int, default=10_000)
    parser.add_argument("--accuracy-visits", type=int, default=100_000)
    parser.add_argument("--answers", type=int, default=50)
    parser.add_argument("--tumult-python", type=Path, default=DEFAULT_TUMULT)
    parser.add_argument(
        "--tumult-seconds", type=float, default=900.0, help="stop Tumult's answers after this"
    )
    parser.add_argument("--no-spark", action="store_true", help="skip Spark and Tumult")
    parser.add_argument("--no-tumult", action="store_true")
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--no-write", action="store_true", help="print, do not edit BENCHMARKS.md")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]  # other work on the machine: the numbers' noise
    conf = spark_conf()
    os.environ["INFODP_SPARK_MASTER"] = conf["spark.master"]
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # one machine: no interface lookup
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sizes = {"main": (args.people, args.visits)}
    sizes["spark"] = (args.spark_people or args.people, args.spark_visits or args.visits)
    sizes["accuracy"] = (args.accuracy_people, args.accuracy_visits)
    with tempfile.TemporaryDirectory(prefix="infodp-joins-") as tmp:
        work = Path(tmp)
        paths = {"main": generate(work / "main", *sizes["main"])}
        paths["spark"] = (
            paths["main"]
            if sizes["spark"] == sizes["main"]
            else generate(work / "spark", *sizes["spark"])
        )
        paths["accuracy"] = generate(work / "accuracy", *sizes["accuracy"])
        facts = {name: describe(p) for name, p in paths.items()}
        print(f"  data: {facts}", file=sys.stderr, flush=True)
        cells = {"main": bench_duckdb(paths["main"], work, args.reps, not args.no_http)}
        cells["spark"] = [] if args.no_spark else bench_spark(paths["spark"], work, args.reps, conf)
        versions: dict[str, str] = {}
        tumult_answers: Any = "not run: --no-tumult"
        if not (args.no_spark or args.no_tumult):
            config = tumult_config(paths["spark"], paths["accuracy"], args, conf)
            out = run_tumult(args.tumult_python, "_tumult_join_runner.py", config)
            if isinstance(out, str):
                cells["spark"].append(Cell("tumult", "Tumult Analytics", out, 0))
                tumult_answers = out
            else:
                cells["spark"] += [Cell(str(k), str(w), v, int(r)) for k, w, v, r in out["cells"]]
                tumult_answers = out.get("answers", out.get("accuracy_error", "not run"))
                versions.update({f"{k} (Tumult)": v for k, v in out["versions"].items()})
        truth = exact(paths["accuracy"])
        ours = infodp_answers(paths["accuracy"], work, args.answers)
        near = ours.pop() if isinstance(ours, list) else None
    if not args.no_spark:
        import pyspark

        versions["pyspark (plain Spark, infodp)"] = pyspark.__version__
    versions.update(
        {"duckdb": duckdb.__version__, "java": _java_version(), "infodp": _infodp_source()}
    )
    accuracy = {"infodp": ours, "Tumult Analytics": tumult_answers}
    body = _section(sizes, facts, cells, accuracy, truth, versions, conf, args, load)
    if near is not None:
        count, total = mean_abs_error([near], truth)
        body += (
            f"\n\nCheck: infodp's answer at ε = 10⁶ is off the exact one by {count:.2f} visits "
            f"and {total:.2f} in total cost on average per country (noise of scale 4·10⁻⁵ "
            "visits and 0.2 cost there, plus the cost grid)."
        )
    print(body)
    if not args.no_write:
        command = "PYTHONPATH=$PWD/src python3 -m benchmarks.joins " + " ".join(
            sys.argv[1:] if argv is None else argv
        )
        write_section("joins", command.strip(), body)


def _size(sizes: dict[str, tuple[int, int]], name: str) -> str:
    people, visits = sizes[name]
    return f"{people:,} × {visits:,}"


def _find(cells: list[Cell], key: str) -> float | None:
    return next((c.seconds for c in cells if c.key == key and isinstance(c.seconds, float)), None)


def _ratio(cells: list[Cell], top: str, bottom: str) -> str:
    a, b = _find(cells, top), _find(cells, bottom)
    return "n/a (not run)" if a is None or b is None else f"{a / b:.2f}×"


def _section(
    sizes: dict[str, tuple[int, int]],
    facts: dict[str, dict[str, float]],
    cells: dict[str, list[Cell]],
    accuracy: dict[str, Any],
    truth: dict[str, tuple[float, float]],
    versions: dict[str, str],
    conf: dict[str, str],
    args: Any,
    load: float,
) -> str:
    table = []
    for name, limit in (("main", "duckdb"), ("spark", "spark")):
        base = _find(cells[name], limit)
        for c in cells[name]:
            ratio = f"{c.seconds / base:.2f}×" if isinstance(c.seconds, float) and base else ""
            runs = str(c.runs) if c.runs or not c.ok else "warm-up only"
            shown = c.seconds if isinstance(c.seconds, str) else f"{c.seconds:.3f}"
            table.append([_size(sizes, name), c.what, shown, runs, ratio])
    main, spark = cells["main"], cells["spark"]
    goals = [
        f"- infodp over HTTP / plain DuckDB: {_ratio(main, 'infodp_http_all', 'duckdb')} with "
        "every core per query as plain DuckDB has (goal ≤ 2×), "
        f"{_ratio(main, 'infodp_http', 'duckdb')} with the service's default one DuckDB thread "
        "per query (fair to analysts querying at once); "
        f"the service path in process: {_ratio(main, 'infodp', 'duckdb')}; registration, once: "
        f"{_ratio(main, 'infodp_register', 'duckdb')} the plain query.",
        f"- infodp on Spark / plain Spark SQL: {_ratio(spark, 'infodp_spark', 'spark')} "
        "(goal ≤ 1.5×); registration, once: "
        f"{_ratio(spark, 'infodp_spark_register', 'spark')}.",
        f"- Tumult / infodp on Spark: {_ratio(spark, 'tumult', 'infodp_spark')} (goal: above 1, "
        f"infodp faster); Tumult / plain Spark SQL: {_ratio(spark, 'tumult', 'spark')}.",
    ]
    rows = []
    for library, answers in accuracy.items():
        if isinstance(answers, str):
            rows.append([library, answers, "", ""])
            continue
        if not answers:
            rows.append([library, "not run: no answer in the time allowed", "", ""])
            continue
        count, total = mean_abs_error(answers, truth)
        rows.append([library, str(len(answers)), f"{count:.1f}", f"{total:,.0f}"])
    settings = ", ".join(f"`{k}={v}`" for k, v in conf.items())
    shown = "; ".join(f"{k} {v}" for k, v in versions.items())
    return (
        f"DP `{SQL}` at ε = {EPSILON} (per person: at most {MAX_VISITS} visits, cost clamped "
        f"to [{COST[0]:g}, {COST[1]:g}]) over a seeded population: people × visits "
        f"{_size(sizes, 'main')} (DuckDB cells), {_size(sizes, 'spark')} (Spark and Tumult "
        f"cells); {REGIONS} public regions in {COUNTRIES} countries. {_facts(facts['main'])} "
        "Median seconds of "
        f"{args.reps} alternating rounds after a warm-up (one round of every engine of a "
        "group per repetition: DuckDB, infodp in process and over HTTP; plain Spark and "
        "infodp on Spark); registrations and Tumult's session build are one-off and timed "
        "once. Tumult runs in its own process (pyspark 3.5) after the Spark cells, the median "
        f"of {args.reps} runs after a warm-up (one run when the warm-up took over 30 s, the "
        "warm-up alone when it took over 300 s). The HTTP service runs with its default "
        "settings (one worker process per core, store kept open). Spark "
        f"settings {settings} for every Spark cell. Ratios are against plain DuckDB (DuckDB "
        "rows) and plain Spark SQL on infodp's pyspark (Spark and Tumult rows) at the same "
        f"size.\n\nVersions: {shown}. Load average (1 min) when the run started: {load:.1f}."
        "\n\n"
        + markdown_table(["people × visits", "engine / step", "seconds", "runs", "ratio"], table)
        + "\n\nAgainst the goals:\n"
        + "\n".join(goals)
        + f"\n\nAccuracy at ε = {EPSILON}: {args.answers} releases of the same query per library "
        f"over {_size(sizes, 'accuracy')} people × visits ({_facts(facts['accuracy'])[:-1]}), mean "
        "absolute error per output cell (over releases × the "
        f"{len(truth)} countries) against the exact answer on the same bounded data (no person "
        f"over {MAX_VISITS} visits, every cost within its bounds: the bounded data are the "
        "data). The size only moves the exact answer: the noise's scale depends on ε and the "
        "declared bounds alone, and Tumult's releases, each two Spark jobs of several seconds "
        "here (about 25 s at 100,000 × 1,000,000), fit 50 times in minutes at this size. "
        "Both spend ε/2 on the COUNT and ε/2 on the SUM under pure DP: Tumult as "
        f"two queries (`MaxRowsPerID({MAX_VISITS})`, sensitivity {MAX_VISITS} rows and "
        f"{MAX_VISITS} × {COST[1]:g} per person), infodp as one query whose ε it splits evenly "
        "over its measurements (`curator/price/cost.py`), each person's contribution bounded by "
        "the tables' declared rows per person (1 × 20 joined rows).\n\n"
        + markdown_table(
            ["library", "releases", "MAE visits (COUNT)", "MAE total cost (SUM)"], rows
        )
        + "\n\n"
        + _expected_error(args.answers * len(truth))
    )


def _expected_error(cells: int) -> str:
    """What the MAE should be: |Laplace(b)| has mean b and standard deviation b (Dwork & Roth
    2014, Def. 3.2: the density e^{-|x|/b} / 2b), so a mean over n cells has error b/√n."""
    scales = [MAX_VISITS / (EPSILON / 2), MAX_VISITS * COST[1] / (EPSILON / 2)]
    count, total = (f"{b:,.0f} ± {b / math.sqrt(cells):,.0f}" for b in scales)
    return (
        "Both mechanisms have the same scale b (sensitivity over ε/2): a Laplace of scale b "
        "has mean absolute error b (a discrete Laplace of that scale very nearly b), so the "
        f"expected MAE is {count} visits "
        f"and {total} total cost (b ± b/√n, one standard error over the n = {cells} cells): "
        "differences within a few standard errors are the noise's own sampling error, not a "
        "difference between the libraries."
    )


def _facts(f: dict[str, float]) -> str:
    return (
        f"{f['people']:,.0f} people, {f['visits']:,.0f} visits (at most {f['max_visits']:.0f} "
        f"per person, {f['at_cap']:.0%} of the people at {MAX_VISITS}), costs in "
        f"[{f['min_cost']:g}, {f['max_cost']:g}] with {f['zero_costs']:.0%} zeros."
    )


if __name__ == "__main__":
    main()
