"""Side channels of the query path: everything observable is a function of charged noise.

Each attack is run against a PAIR of stores that differ in one privacy unit (``bob``, present
in store A only): add/remove neighbours (Dwork & Roth 2014, Def. 2.4). Whatever the analyst
can observe that is not charged noise — the library's exception and message, the CLI's exit
status and stderr, the HTTP status and error body, the ``cost`` object, the ledger spend —
must be identical across the pair; otherwise one query separates neighbouring datasets with
certainty, whatever ε it was charged (the reconstruction of a whole table for 1e-5 ε by such
probes is the attack of the first test class).

The public row count is the other half of this picture (declared public facts); until it is
declared, ``information_nats``/``information_bits`` and the per-table leakage fields scale
with N, so the cost comparison below covers the N-free fields (ε, δ, their exact values, the
per-measurement sensitivities, mechanisms and noise scales).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest

from _server_harness import ServerProcess, free_port, get_json
from _stores import (
    TEXT,
    Store,
    cats,
    cli_outcome,
    estimates,
    floats,
    ints,
    library_outcome,
    neighbour_pair,
    one_table,
    serving,
    spend_diff,
    spent,
)
from infodp.cli import main
from infodp.curator.backends.duckdb import DuckDBBackend
from infodp.curator.declaration.source import load_schema
from infodp.curator.engine import Curator
from infodp.curator.sql.limits import MAX_IN_LIST
from infodp.errors import ParameterError, QueryFailed

# Every test on both ledger storages (SQLite, PostgreSQL: tests/conftest.py).
pytestmark = pytest.mark.usefixtures("ledger_kind")

SCHEMA = one_table(
    "people",
    {
        "person_id": TEXT,
        "age": ints(0, 120),
        "score": floats(0, 100, "drop"),
        "region": cats("north", "south"),
        "city": TEXT,
    },
    unit="person_id",
    max_rows_per_unit=1,
)
ROWS = [
    ("alice", 30, 10.0, "north", "x"),
    ("carol", 70, 90.0, "south", "y"),
    ("dave", 45, None, "north", "x"),
    ("erin", 12, 55.5, "south", "z"),
]
BOB = ("bob", 50, None, "north", "y")
BIG = 2**127  # an integer DuckDB can only cast lazily to BIGINT
HUGE = "1" + "0" * 310  # an integer above the largest double


def _frame(rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["person_id", "age", "score", "region", "city"])


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Store]:
    root = tmp_path_factory.mktemp("pair")
    return neighbour_pair(root, "people", SCHEMA, _frame([*ROWS, BOB]), _frame(ROWS))


@pytest.fixture(scope="module")
def servers(pair: tuple[Store, Store]) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    # One worker each: these tests compare outcomes, not the pool (tests/server/ has it).
    with serving(dict(enumerate(pair)), workers=1) as started:
        yield started[0], started[1]


@pytest.fixture(scope="module")
def served(
    pair: tuple[Store, Store], servers: tuple[ServerProcess, ServerProcess]
) -> tuple[Store, ServerProcess]:
    """The first store of the pair and its service."""
    return pair[0], servers[0]


def _spent(db: str) -> tuple[Fraction, Fraction, int]:
    return spent(db, "people")


def _public_cost(cost: dict[str, Any]) -> dict[str, Any]:
    # The whole cost object: with the row count declared (or absent), nothing in it may depend
    # on which of the two neighbouring stores answered.
    return cost


_library = library_outcome
_cli = cli_outcome


def _http(server: ServerProcess, store: Store, sql: str, eps: Any, delta: Any) -> tuple[Any, ...]:
    body = {"sql": sql, "epsilon": eps, "delta": delta}
    status, payload, _ = get_json(server.port, "POST", "/v1/query", body, key=store.key)
    assert status < 500 or payload["error"]["code"] == "query_failed", payload
    if status == 200:
        return (200, _public_cost(payload["cost"]))
    return (status, payload)


# Every class of the observed side doors, as (id, sql, ε, δ): refused ones and answered ones.
CASES = [
    (
        "lazy-int-cast",
        f"SELECT COUNT(*) FROM people WHERE person_id = 'bob' AND (age > 61 OR age = {BIG})",
        "0.001",
        "0",
    ),
    (
        "lazy-double-cast",
        f"SELECT COUNT(*) FROM people WHERE person_id = 'bob' AND (age > 61 OR score = {HUGE})",
        "0.001",
        "0",
    ),
    (
        "negated-int-overflow",
        "SELECT COUNT(*) FROM people WHERE person_id = 'bob' AND "
        "(age > 61 OR age = -(-9223372036854775808))",
        "0.001",
        "0",
    ),
    # The same probes through a derived relation (infodp.curator.relations): its filter
    # compares in DOUBLE, so no row can trigger a lazy cast there either.
    (
        "answered-relation-huge-literal",
        f"SELECT SUM(age + 0) FROM people WHERE person_id = 'bob' AND (age > 61 OR age = {BIG})",
        "0.001",
        "0",
    ),
    (
        "relation-literal-above-a-double",
        f"SELECT SUM(age + 0) FROM people WHERE person_id = 'bob' AND (age > 61 OR score = {HUGE})",
        "0.001",
        "0",
    ),
    (
        "answered-relation-cast-probe",
        "SELECT COUNT(*) FROM people WHERE person_id = 'bob' AND CAST(city AS INT) = 1",
        "0.001",
        "0",
    ),
    (
        "answered-relation-division-probe",
        "SELECT COUNT(*) FROM people WHERE person_id = 'bob' AND age / (age - 50) > 1",
        "0.001",
        "0",
    ),
    ("epsilon-huge-exponent", "SELECT COUNT(*) FROM people", "1e-10000000", "0"),
    ("quantile-huge-exponent", "SELECT QUANTILE(age, 1e-10000000) FROM people", "0.1", "0"),
    ("long-literal", f"SELECT COUNT(*) FROM people WHERE age = 1{'0' * 5000}", "0.1", "0"),
    (
        "deep-parentheses",
        "SELECT COUNT(*) FROM people WHERE " + "(" * 3000 + "age = 1" + ")" * 3000,
        "0.1",
        "0",
    ),
    ("epsilon-1e308", "SELECT COUNT(*) FROM people", "1e308", "0"),
    ("delta-underflow", "SELECT COUNT(*) FROM people", "1", "1e-400"),
    ("epsilon-underscore", "SELECT COUNT(*) FROM people", "0_1", "0"),
    ("epsilon-non-ascii", "SELECT COUNT(*) FROM people", "\u0661", "0"),
    ("tablesample", "SELECT COUNT(*) FROM people TABLESAMPLE 10%", "0.1", "0"),
    ("using-sample", "SELECT COUNT(*) FROM people USING SAMPLE 1 ROWS", "0.1", "0"),
    ("group-by-all", "SELECT region, COUNT(*) FROM people GROUP BY ALL", "0.1", "0"),
    (
        "in-list-too-long",
        "SELECT COUNT(*) FROM people WHERE age IN (" + ", ".join(["1"] * (MAX_IN_LIST + 1)) + ")",
        "0.1",
        "0",
    ),
    (
        "answered-partition-selection-large-delta",
        "SELECT city, COUNT(*) FROM people GROUP BY city",
        "0.01",
        "0.0001",
    ),
    ("over-budget", "SELECT COUNT(*) FROM people", "1e6", "0"),
    (
        "answered-count",
        "SELECT COUNT(*) FROM people WHERE person_id = 'bob' AND age > 61",
        "0.001",
        "0",
    ),
    ("answered-median-with-nulls", "SELECT MEDIAN(score) FROM people", "0.001", "0"),
    ("answered-grouped", "SELECT region, AVG(age) FROM people GROUP BY region", "0.001", "0"),
    # Post-processing of released values (HAVING, ORDER BY, LIMIT, arithmetic): free, and
    # the same outcome, cost and ledger on neighbours; refusals of it cost nothing.
    (
        "answered-having-order-limit",
        "SELECT region, COUNT(*) AS n, SUM(age) / COUNT(*) AS mean FROM people "
        "GROUP BY region HAVING COUNT(*) > -1000 ORDER BY n DESC, region LIMIT 1",
        "0.001",
        "0",
    ),
    (
        "having-reads-a-private-column",
        "SELECT region, COUNT(*) FROM people GROUP BY region HAVING age > 3",
        "0.1",
        "0",
    ),
    ("limit-not-a-whole-number", "SELECT COUNT(*) AS n FROM people LIMIT 1.5", "0.1", "0"),
    # An aggregate's own FILTER and COUNT(DISTINCT ...): answered alike; the FILTER's literals
    # are range-checked like WHERE's, and a FILTER on a quantile is refused, both for free.
    (
        "answered-count-filter",
        "SELECT region, COUNT(*) FILTER (WHERE age > 40) AS old, "
        "AVG(score) FILTER (WHERE city = 'y') AS s FROM people GROUP BY region",
        "0.001",
        "0",
    ),
    (
        "answered-count-distinct",
        "SELECT region, COUNT(DISTINCT person_id) AS units, COUNT(DISTINCT city) AS cities "
        "FROM people GROUP BY region",
        "0.001",
        "0",
    ),
    (
        "filter-lazy-int-cast",
        f"SELECT COUNT(*) FILTER (WHERE person_id = 'bob' AND age = {BIG}) FROM people",
        "0.001",
        "0",
    ),
    ("filter-on-a-quantile", "SELECT MEDIAN(age) FILTER (WHERE age > 3) FROM people", "0.1", "0"),
    ("sum-distinct", "SELECT SUM(DISTINCT age) FROM people", "0.1", "0"),
    # Derived GROUP BY keys: the domain comes from the declaration (bob's age 50 alone in its
    # bin), so the released cells, cost and ledger are the same; unsupported ones are free.
    (
        "answered-derived-bins",
        "SELECT FLOOR(age / 10) * 10 AS decade, COUNT(*) FROM people GROUP BY decade",
        "0.001",
        "0",
    ),
    (
        "answered-derived-case",
        "SELECT CASE WHEN person_id = 'bob' THEN 'bob' WHEN age < 65 THEN 'adult' END AS band, "
        "AVG(score) FROM people GROUP BY band",
        "0.001",
        "0",
    ),
    (
        "derived-case-reads-a-column",
        "SELECT CASE WHEN age < 18 THEN city ELSE 'x' END AS b, COUNT(*) FROM people GROUP BY b",
        "0.1",
        "0",
    ),
    (
        "derived-bins-of-text",
        "SELECT FLOOR(city / 2) AS b, COUNT(*) FROM people GROUP BY b",
        "0.1",
        "0",
    ),
]
IDS = [c[0] for c in CASES]


def _expected(name: str) -> str:
    """What each case must give: an answer, a budget refusal, or a parameter refusal."""
    if name.startswith("answered"):
        return "answered"
    return "budget" if name == "over-budget" else "refused"


@pytest.mark.slow
@pytest.mark.parametrize(("name", "sql", "eps", "delta"), CASES, ids=IDS)
def test_library_outcome_is_identical_across_neighbours(
    pair: tuple[Store, Store], name: str, sql: str, eps: str, delta: str
) -> None:
    before = [_spent(s.db) for s in pair]
    started = time.perf_counter()
    seen = [_library(s, sql, eps, delta) for s in pair]
    elapsed = time.perf_counter() - started
    after = [_spent(s.db) for s in pair]
    assert seen[0] == seen[1], name
    want = {"answered": "ok", "budget": "BudgetExceeded", "refused": "ParameterError"}
    assert seen[0][0] == want[_expected(name)], seen[0]
    spend = spend_diff(after, before)
    assert spend[0] == spend[1]
    if seen[0][0] != "ok":
        # Refused before the reservation: nothing spent, no ledger entry, one line.
        assert spend[0] == (0, 0, 0)
        assert "\n" not in seen[0][1]
        # Refusals are cheap (the 13-byte ε once took ~40 s): a loose bound, not a benchmark.
        assert elapsed < 30, name


@pytest.mark.slow
@pytest.mark.parametrize(("name", "sql", "eps", "delta"), CASES, ids=IDS)
def test_cli_outcome_is_identical_across_neighbours(
    pair: tuple[Store, Store], capsys: Any, name: str, sql: str, eps: str, delta: str
) -> None:
    before = [_spent(s.db) for s in pair]
    seen = [_cli(s, sql, eps, delta, capsys) for s in pair]
    after = [_spent(s.db) for s in pair]
    assert seen[0] == seen[1], name
    assert seen[0][0] == {"answered": 0, "budget": 3, "refused": 2}[_expected(name)], seen[0]
    spend = spend_diff(after, before)
    assert spend[0] == spend[1]
    if seen[0][0] != 0:
        assert spend[0] == (0, 0, 0)


@pytest.mark.slow  # real server processes
@pytest.mark.parametrize(("name", "sql", "eps", "delta"), CASES, ids=IDS)
def test_http_outcome_is_identical_across_neighbours(
    pair: tuple[Store, Store],
    servers: tuple[ServerProcess, ServerProcess],
    name: str,
    sql: str,
    eps: str,
    delta: str,
) -> None:
    before = [_spent(s.db) for s in pair]
    seen = [_http(srv, s, sql, eps, delta) for srv, s in zip(servers, pair, strict=True)]
    after = [_spent(s.db) for s in pair]
    assert seen[0] == seen[1], name
    assert seen[0][0] == {"answered": 200, "budget": 409, "refused": 400}[_expected(name)]
    spend = spend_diff(after, before)
    assert spend[0] == spend[1]
    if seen[0][0] != 200:
        assert spend[0] == (0, 0, 0)
    if seen[0][0] == 400:
        # The free estimate refuses the same input the same way (and as fast: the 13-byte ε
        # once cost ~40 s of CPU there too).
        body = {"sql": sql, "epsilon": eps, "delta": delta}
        est = estimates(servers, pair, body)
        assert est[0] == est[1] and est[0][0] == 400, est


@pytest.mark.slow  # real server processes
def test_json_booleans_are_not_numbers(served: tuple[Store, ServerProcess]) -> None:
    store, server = served
    before = _spent(store.db)
    for body in (
        {"sql": "SELECT COUNT(*) FROM people", "epsilon": True},
        {"sql": "SELECT COUNT(*) FROM people", "epsilon": "0.1", "delta": False},
        {"sql": "SELECT COUNT(*) FROM people", "epsilon": "0.1", "confidence": True},
    ):
        for route in ("/v1/query", "/v1/estimate"):
            status, payload, _ = get_json(server.port, "POST", route, body, key=store.key)
            assert status == 400, (route, body, payload)
    assert _spent(store.db) == before


@pytest.mark.slow  # real server processes
def test_trailing_slash_is_not_redirected(served: tuple[Store, ServerProcess]) -> None:
    store, server = served
    status, payload, headers = get_json(
        server.port, "GET", "/v1/budget/", key=store.key, headers={"Host": "evil.example"}
    )
    assert status == 404 and "location" not in headers, (status, headers)
    assert payload["error"]["code"] == "not_found"


@pytest.mark.slow  # real server processes
def test_table_reconstruction_by_lazy_casts_recovers_nothing(
    pair: tuple[Store, Store], servers: tuple[ServerProcess, ServerProcess]
) -> None:
    """The attack: ``WHERE person_id = P AND (age > T OR <lazy cast>)`` failed iff P exists
    with age ≤ T, at 1e-7 ε per probe. Every probe now gets the same refusal in both stores
    (nothing spent), so the transcripts are identical and nothing about bob is learnt."""
    triggers = [f"age = {BIG}", f"score = {HUGE}", f"age IN (1, {BIG})", f"age BETWEEN 0 AND {BIG}"]
    transcripts: list[list[tuple[Any, ...]]] = [[], []]
    before = [_spent(s.db) for s in pair]
    for person in ("alice", "bob"):
        for threshold in (0, 40, 61, 100):
            for trigger in triggers:
                sql = (
                    f"SELECT COUNT(*) FROM people WHERE person_id = '{person}' "
                    f"AND (age > {threshold} OR {trigger})"
                )
                for i, (srv, s) in enumerate(zip(servers, pair, strict=True)):
                    transcripts[i].append(_http(srv, s, sql, "0.0000001", "0"))
    assert transcripts[0] == transcripts[1]
    assert {t[0] for t in transcripts[0]} == {400}
    assert [_spent(s.db) for s in pair] == before


def test_wide_float_bounds_are_refused_at_schema_load() -> None:
    # Binning a column whose declared width overflows a double failed only for large rows.
    spec = one_table("t", {"x": {"type": "float"}})
    spec["columns"]["x"]["bounds"] = [-1.7e308, 1.7e308]
    with pytest.raises(ParameterError, match="finite"):
        load_schema(spec)
    spec["columns"]["x"] = {"type": "int", "bounds": [0, 2**64]}
    with pytest.raises(ParameterError, match="BIGINT"):
        load_schema(spec)


@pytest.mark.slow
def test_median_with_dropped_nulls_ignores_them(tmp_path: Path) -> None:
    # 40 values in [85, 95) and 60 NULLs (nulls: drop): the dropped values used to be counted
    # in the lowest bin (greatest(0, NULL) is 0 in DuckDB), putting the median near 0.
    frame = pd.DataFrame({"x": [85.0 + i / 4 for i in range(40)] + [None] * 60})
    spec = one_table("t", {"x": floats(0, 100, "drop")})
    cur = Curator(tmp_path / "m.duckdb")
    cur.register_dataset("t", frame, spec)
    exact = cur.exact_aggregates("SELECT MEDIAN(x) FROM t")
    (hist,) = exact.histograms.values()
    # The 40 values on the median's grid of [0, 100] (2^-14, the sum grid's step for a bound of
    # 100 (2^-20 of 2^6), split in 16: 2^-18, exact for quarters), one row each; no NULL
    # counted anywhere (in particular not at the grid's lowest point).
    step = 2.0**-18
    assert hist[0].tolist() == [int((85.0 + i / 4) / step) for i in range(40)]
    assert hist[1].tolist() == [1] * 40
    cur.add_analyst("a", "t", epsilon=100)
    r = cur.query("a", "SELECT MEDIAN(x) FROM t", epsilon=50)
    assert 85 <= r.rows[0][0] <= 95


class _Boom:
    """Backend.aggregate that fails with a data-revealing message (different per store)."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self.exc


FAILURES = [
    duckdb.ConversionException("Conversion Error: value 50 of row bob can't be cast"),
    duckdb.OutOfMemoryException("out of memory"),
    duckdb.InterruptException("INTERRUPT Error: interrupted"),
    OverflowError("cannot convert float infinity to integer"),
]


@pytest.mark.slow
def test_failures_after_the_reservation_look_the_same_and_stay_charged(
    pair: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    seen = []
    for i, exc in enumerate(FAILURES):
        monkeypatch.setattr(DuckDBBackend, "aggregate", _Boom(exc))
        store = pair[i % 2]
        before = _spent(store.db)
        seen.append(_library(store, "SELECT COUNT(*) FROM people", "0.001", "0"))
        after = _spent(store.db)
        assert after[0] - before[0] == Fraction(1, 1000)  # the charge stays
        seen.append(_cli(store, "SELECT COUNT(*) FROM people", "0.001", "0", capsys))
    lib = {s for s in seen if s[0] == "QueryFailed"}
    cli = {s for s in seen if s[0] == 2}
    assert lib == {("QueryFailed", QueryFailed.MESSAGE)}
    assert cli == {(2, "infodp: error: " + QueryFailed.MESSAGE)}
    assert len(lib) + len(cli) == 2 and len(seen) == 2 * len(FAILURES)


@pytest.mark.slow
def test_http_failure_after_the_reservation_is_one_constant_response(
    pair: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real uvicorn server on loopback (in this process, so the backend can be made to fail):
    whatever the engine raised, the same status and body."""
    import uvicorn

    from infodp.server.app import ServerSettings, create_app

    store = pair[1]
    app = create_app(ServerSettings(store.db))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        answers = set()
        for exc in FAILURES:
            monkeypatch.setattr(DuckDBBackend, "aggregate", _Boom(exc))
            body = {"sql": "SELECT COUNT(*) FROM people", "epsilon": "0.001"}
            status, payload, _ = get_json(port, "POST", "/v1/query", body, key=store.key)
            answers.add((status, json.dumps(payload, sort_keys=True)))
        assert answers == {
            (
                500,
                json.dumps(
                    {"error": {"code": "query_failed", "message": QueryFailed.MESSAGE}},
                    sort_keys=True,
                ),
            )
        }
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.mark.slow
def test_deadline_interrupts_duckdb_and_fails_constantly(tmp_path: Path) -> None:
    n = 300_000
    frame = pd.DataFrame({"u": [f"p{i}" for i in range(n)], "c": [f"c{i}" for i in range(n)]})
    spec = one_table("t", {"u": TEXT, "c": TEXT}, unit="u", max_rows_per_unit=1)
    cur = Curator(tmp_path / "d.duckdb", query_timeout=0.001)
    cur.register_dataset("t", frame, spec)
    cur.add_analyst("a", "t", epsilon=10, delta="1e-6")
    sql = "SELECT c, COUNT(*) FROM t GROUP BY c"  # partition selection: a heavy statement
    with pytest.raises(QueryFailed):
        cur.query("a", sql, epsilon=1, delta="1e-9")
    (entry,) = cur.ledger.entries()
    assert entry.status == "failed" and "deadline" in (entry.error or "").lower()
    assert cur.ledger.budget("a", "t").spent_epsilon == 1


def test_declared_cells_cap_is_refused_before_the_reservation(tmp_path: Path) -> None:
    spec = one_table("t", {"a": ints(0, 9999), "b": ints(0, 99), "x": floats(0, 1)})
    cur = Curator(tmp_path / "c.duckdb")
    cur.register_dataset("t", pd.DataFrame({"a": [1], "b": [2], "x": [0.5]}), spec)
    cur.add_analyst("a", "t", epsilon=10)
    with pytest.raises(ParameterError, match="declared cells"):
        cur.query("a", "SELECT a, b, COUNT(*) FROM t GROUP BY a, b", epsilon=1)
    with pytest.raises(ParameterError, match="quantile cells"):
        cur.query("a", "SELECT a, MEDIAN(x) FROM t GROUP BY a", epsilon=1)
    assert cur.ledger.entries() == []


@pytest.mark.slow  # ~6.4 CPU-s (measured)
def test_free_synopsis_queries_have_bounded_work(tmp_path: Path) -> None:
    spec = one_table("t", {"a": ints(0, 99), "b": ints(0, 99)})
    cur = Curator(tmp_path / "s.duckdb")
    cur.register_dataset("t", pd.DataFrame({"a": [1, 2], "b": [3, 4]}), spec)
    cur.add_analyst("a", "t", epsilon=10)
    cur.release_synopsis("a", "ab", "t", ["a", "b"], epsilon=1)
    # 10,000 cells × 10,000 groups: refused before any evaluation (it is free, so its CPU is
    # bounded up front).
    with pytest.raises(ParameterError, match="cell evaluations"):
        cur.query_synopsis("ab", "SELECT a, b, COUNT(*) FROM t GROUP BY a, b")
    assert cur.query_synopsis("ab", "SELECT COUNT(*) FROM t WHERE a < 50")["rows"]


# -- timing: the SQL, the plan and the work depend on the query and the schema only -----------

TIMING_QUERIES = [
    "SELECT COUNT(*) FROM people",
    "SELECT region, AVG(age) FROM people WHERE age > 60 GROUP BY region",
    "SELECT SUM(age), COUNT(score) FROM people WHERE city = 'y'",
    "SELECT VARIANCE(score) FROM people WHERE age BETWEEN 20 AND 80",
    "SELECT MEDIAN(age) FROM people",
    "SELECT region, QUANTILE(score, 0.9) FROM people GROUP BY region",
    "SELECT region, COUNT(*) FILTER (WHERE city = 'y'), SUM(age) FILTER (WHERE age > 40) "
    "FROM people GROUP BY region",
    "SELECT region, COUNT(DISTINCT person_id), COUNT(DISTINCT city) FROM people GROUP BY region",
    "SELECT FLOOR(age / 10) * 10 AS decade, SUM(score) FROM people GROUP BY decade",
    "SELECT CASE WHEN age < 18 THEN 'minor' WHEN age < 65 THEN 'adult' ELSE 'senior' END AS band, "
    "AVG(score) FROM people GROUP BY band",
]
# Neighbours chosen to move DuckDB's column statistics: bob's age is the table's largest, his
# city string the longest, his region the only 'south' left after erin and carol are gone.
BOB_FAR = ("bob", 119, 99.0, "south", "a much longer city name than any other row")


def _timing_store(directory: Path, rows: list[tuple[Any, ...]], max_rows: int = 1) -> Curator:
    directory.mkdir(parents=True, exist_ok=True)
    cur = Curator(str(directory / "store.duckdb"))
    frame = pd.DataFrame(rows, columns=["person_id", "age", "score", "region", "city"])
    # With two rows a unit, at most one group a unit: the per-unit group limit (a window
    # that depends on the query's GROUP BY) is in the plans too.
    limits = {"max_rows_per_unit": max_rows, "max_groups_per_unit": 1}
    cur.register_dataset("people", frame, dict(SCHEMA, **limits))
    return cur


def _public(text: str) -> str:
    """``text`` without what is public and varies by itself: the group limit's per-query
    random salt (``hash(keys, SALT)``), the estimated row counts (the table's size) and the
    drawing of EXPLAIN's boxes (whose width follows the salt's digits)."""
    import re

    text = re.sub(r"(hash\([^()]*), -?\d+\)", r"\1, SALT)", text)
    text = re.sub(r"~[\d,]+ rows?", "~N rows", text)
    return re.sub(r"[\s\u2500-\u257f]+", " ", text).strip()


def _plans(cur: Curator) -> list[tuple[list[str], list[str]]]:
    """Per query: the compiled statements and DuckDB's EXPLAIN text of each (:func:`_public`:
    without the per-query salt and the cardinality estimates)."""
    from infodp.curator.backends.duckdb import compiled_statements
    from infodp.curator.rules import measurements

    out = []
    con = cur.backend.connect(read_only=True)
    try:
        for sql in TIMING_QUERIES:
            plan, schema, _, unit_ok = cur.plan(sql)
            statements = compiled_statements(plan, schema, measurements(plan), unit_rows_ok=unit_ok)
            explained = [
                _public("\n".join(r[1] for r in con.execute(f"EXPLAIN {s}").fetchall()))
                for s in statements
            ]
            out.append(([_public(s) for s in statements], explained))
    finally:
        con.close()
    return out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("first", "second", "max_rows"),
    [
        ([*ROWS, BOB_FAR], ROWS, 1),
        ([ROWS[0], ROWS[2], BOB_FAR], [ROWS[0], ROWS[2]], 1),
        # One unit over its row limit (bob with two rows, at most one allowed) vs within it.
        ([*ROWS, BOB_FAR, ("bob", 3, 1.0, "north", "x")], [*ROWS, BOB_FAR], 1),
        ([*ROWS, BOB, BOB, BOB], [*ROWS, BOB, BOB], 2),
    ],
    ids=["add-remove", "statistics-moved", "unit-over-row-limit", "unit-over-limit-of-2"],
)
def test_sql_and_duckdb_plan_are_identical_across_neighbours(
    tmp_path: Path, first: list[tuple[Any, ...]], second: list[tuple[Any, ...]], max_rows: int
) -> None:
    a = _timing_store(tmp_path / "a", first, max_rows)
    b = _timing_store(tmp_path / "b", second, max_rows)
    try:
        plans_a, plans_b = _plans(a), _plans(b)
    finally:
        a.close()
        b.close()
    for sql, pa, pb in zip(TIMING_QUERIES, plans_a, plans_b, strict=True):
        assert pa == pb, sql


@pytest.mark.slow
def test_registration_keeps_no_data_dependent_row_limit_flag(tmp_path: Path) -> None:
    """The fast path is gone: a unit over ``max_rows_per_unit`` is cut at registration, the
    declaration the ledger keeps is the same for both neighbours, and the stored table holds
    at most ``max_rows_per_unit`` rows of each unit."""
    over = _timing_store(tmp_path / "over", [*ROWS, BOB, BOB, ("bob", 3, 1.0, "north", "x")])
    within = _timing_store(tmp_path / "within", [*ROWS, BOB])
    try:
        # The declaration every query is planned with is the same for both neighbours.
        assert within.plan("SELECT COUNT(*) FROM people")[3] is True
        assert over.plan("SELECT COUNT(*) FROM people")[3] is True
        con = over.backend.connect(read_only=True)
        try:
            most = con.execute(
                "SELECT max(n) FROM (SELECT count(*) AS n FROM people GROUP BY person_id)"
            ).fetchone()
        finally:
            con.close()
        assert most == (1,)
        compiled = " ".join(s for stmts, _ in _plans(over) for s in stmts)
        assert "row_number" not in compiled and "random()" not in compiled
    finally:
        over.close()
        within.close()


@pytest.mark.slow
def test_registration_keeps_the_same_rows_for_the_same_data(tmp_path: Path) -> None:
    """The rows a unit keeps are chosen by a hash of the row, not by chance: the same data
    registered twice give the same bounded table (and fingerprint)."""
    rows = [*ROWS, *[("bob", age, 1.0, "north", "x") for age in range(20)]]
    one = _timing_store(tmp_path / "one", rows)
    two = _timing_store(tmp_path / "two", list(reversed(rows)))
    try:
        assert one.ledger.dataset("people").fingerprint == two.ledger.dataset("people").fingerprint
    finally:
        one.close()
        two.close()


@pytest.mark.slow  # real server processes
def test_http_ledger_shows_times_to_the_second(
    pair: tuple[Store, Store], servers: tuple[ServerProcess, ServerProcess]
) -> None:
    """``created``/``finished`` to the millisecond would show each query's run time through
    any network jitter; the analyst's own ledger shows them to the whole second."""
    import re

    store, server = pair[0], servers[0]
    body = {"sql": "SELECT COUNT(*) FROM people", "epsilon": "0.001"}
    status, _, _ = get_json(server.port, "POST", "/v1/query", body, key=store.key)
    assert status == 200
    status, payload, _ = get_json(server.port, "GET", "/v1/ledger", None, key=store.key)
    assert status == 200 and payload["entries"]
    whole_second = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$")
    for entry in payload["entries"]:
        assert whole_second.match(entry["created"]), entry
        assert entry["finished"] is None or whole_second.match(entry["finished"]), entry


# -- a confidence whose complement rounds to 1 is refused before the reservation --------------

TINY_CONFIDENCES = [1e-17, 5e-17, 1e-300, 5e-324]


@pytest.mark.parametrize("confidence", TINY_CONFIDENCES)
def test_library_refuses_confidence_whose_complement_rounds_to_one_before_charging(
    pair: tuple[Store, Store], confidence: float
) -> None:
    # 1 − confidence == 1.0 in double precision: no interval at tail probability 1.
    assert 1.0 - confidence == 1.0
    store = pair[0]
    before = _spent(store.db)
    cur = Curator(store.db)
    try:
        for sql in ("SELECT COUNT(*) FROM people", "SELECT MEDIAN(age) FROM people"):
            with pytest.raises(ParameterError, match="confidence"):
                cur.query("a", sql, epsilon="0.001", confidence=confidence)
        with pytest.raises(ParameterError, match="confidence"):
            cur.query(
                "a",
                "SELECT COUNT(*) FROM people",
                epsilon="0.001",
                delta="1e-9",
                noise="gaussian",
                confidence=confidence,
            )
    finally:
        cur.close()
    assert _spent(store.db) == before


def test_session_refuses_confidence_whose_complement_rounds_to_one_before_charging() -> None:
    from infodp.curator.session import Session

    frame = pd.DataFrame(ROWS, columns=["person_id", "age", "score", "region", "city"])
    s = Session(frame, SCHEMA, epsilon=1)
    try:
        with pytest.raises(ParameterError, match="confidence"):
            s.query("SELECT COUNT(*) FROM people", epsilon=0.5, confidence=1e-17)
        assert s.remaining_epsilon == 1
    finally:
        s.close()


def test_cli_refuses_confidence_whose_complement_rounds_to_one_before_charging(
    pair: tuple[Store, Store], capsys: Any
) -> None:
    store = pair[0]
    before = _spent(store.db)
    capsys.readouterr()
    args = ["query", "--db", store.db, "--analyst", "a", "--epsilon", "0.001"]
    code = main([*args, "--confidence", "1e-17", "SELECT COUNT(*) FROM people"])
    _, err = capsys.readouterr()
    assert code == 2 and "confidence" in err and "Traceback" not in err
    assert _spent(store.db) == before


@pytest.mark.slow  # real server processes
def test_http_refuses_confidence_whose_complement_rounds_to_one_before_charging(
    served: tuple[Store, ServerProcess],
) -> None:
    store, server = served
    before = _spent(store.db)
    for confidence in TINY_CONFIDENCES:
        body = {"sql": "SELECT COUNT(*) FROM people", "epsilon": "0.001", "confidence": confidence}
        status, payload, _ = get_json(server.port, "POST", "/v1/query", body, key=store.key)
        assert status == 400, payload
        assert "confidence" in json.dumps(payload)
    assert _spent(store.db) == before
