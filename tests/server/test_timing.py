"""Predictable transactions (Haeberlen, Pierce & Narayan 2011, §5): over HTTP an answer is
released when its time budget, fixed from public facts, is spent; a query that overruns it
yields its default outcome with the same status, charge and body shape.

The attack it closes: one person's rows multiplied by a join (a public table joined to
itself, a self-join chain on the unit, a heavily repeated public key) take measurably longer
to aggregate. Unpadded, a threshold on the response time tells the neighbours apart; padded,
the same classifier on interleaved runs does no better than chance.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest

from _amplifiers import NEIGHBOURS, Store, chain, heavy, make_store, self_join
from _server_harness import ServerProcess, get_json, start_all
from _stores import BuiltOnce, cats, ints, one_table
from infodp.curator.answer.result import StoreNotOpened
from infodp.curator.engine import Curator
from infodp.server.timing import answer_seconds, check_answer_time, released_on_time

# -- the release clock, alone -----------------------------------------------------------------


def _released(
    compute_seconds: float, budget: float, fail: Exception | None = None
) -> tuple[str, str | None, float]:
    def compute() -> str:
        time.sleep(compute_seconds)
        if fail is not None:
            raise fail
        return "real"

    async def run() -> tuple[str, str | None, float]:
        start = time.monotonic()
        text, cause = await released_on_time(start + budget, compute, lambda: "default", entry=1)
        return text, cause, time.monotonic() - start

    return asyncio.run(run())


@pytest.mark.slow
def test_a_fast_answer_waits_for_its_budget() -> None:
    text, cause, took = _released(0.01, 0.3)
    assert (text, cause) == ("real", None)
    assert took >= 0.3  # never before the budget is spent


def test_an_overrun_yields_the_default_outcome_at_the_budget() -> None:
    text, cause, took = _released(1.0, 0.2)
    assert text == "default" and cause == "overran its answer time"
    assert 0.2 <= took < 0.9  # released at the budget, not when the slow run ends


def test_a_failure_after_the_reservation_yields_the_default_outcome_at_the_budget() -> None:
    text, cause, took = _released(0.0, 0.2, fail=RuntimeError("a row reached an expression"))
    assert text == "default" and cause is not None and cause.startswith("failed: RuntimeError")
    assert took >= 0.2


def test_a_store_that_could_not_be_opened_is_not_hidden() -> None:
    # Nothing of the data was touched: the caller refunds and reports it, as without padding.
    with pytest.raises(StoreNotOpened):
        _released(0.0, 0.2, fail=StoreNotOpened("store not opened: IOException"))


def test_the_budget_is_the_declared_time_per_table_read() -> None:
    assert answer_seconds(0.5, 20.0, backend="duckdb", tables=4) == 2.0
    assert answer_seconds(0.5, 20.0, backend="spark", tables=2) == 40.0
    assert answer_seconds(0.0, 20.0, backend="duckdb", tables=4) == 0.0  # off
    for bad in (-0.1, float("nan"), float("inf"), 1e9, "1", True):
        with pytest.raises(Exception, match="--answer-time"):
            check_answer_time("--answer-time", bad)  # type: ignore[arg-type]


# -- a real service --------------------------------------------------------------------------

#: The largest work bound this test affords: the target's rows become 786 432 (chain),
#: 531 441 (self-join) and 786 432 (heavy key) rows, about 5-15 ms more work per query here.
LIMIT = 800_000
HEAVY_ROWS = 2**18
# Seconds per table read: a budget of 0.08-0.48 s per query. At 0.02 (0.24 s for the
# self-join) a CI run with Spark's JVM beside this test let the larger side's self-join outlast
# its budget: its still-running work then delayed its own release (58 of 80 told apart), the
# overrun an operator avoids by sizing --answer-time above the slowest query.
PER_TABLE = 0.04
RUNS = 40  # interleaved runs per side and case

AMPLIFIERS = {
    "chain": lambda kind: chain(8, kind),  # 3·4^9
    "self-join": lambda kind: self_join(11, kind),  # 3^12
    "heavy-key": heavy,  # 3·2^18
}


@pytest.fixture(scope="session")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, Path], Store]:
    """A copy of one side's store, as built and never served: each side is built once per
    process (about 2 s each) and copied for every user."""
    once: BuiltOnce[Store] = BuiltOnce("timing-pristine", tmp_path_factory.mktemp("timing"))

    def copy(side: str, directory: Path) -> Store:
        def build(folder: Path) -> Store:
            return make_store(folder, side, limit=LIMIT, heavy_rows=HEAVY_ROWS)

        built = once.copy(side, build, directory)
        return Store(str(directory / Path(built.db).name), built.key)

    return copy


@pytest.fixture(scope="module")
def stores(
    tmp_path_factory: pytest.TempPathFactory, pristine: Callable[[str, Path], Store]
) -> dict[str, Store]:
    root = tmp_path_factory.mktemp("timing")
    sides = {s for pair in NEIGHBOURS.values() for s in pair}
    return {s: pristine(s, root / s) for s in sides}


@pytest.fixture(scope="module")
def services(
    stores: dict[str, Store],
) -> Iterator[tuple[dict[str, ServerProcess], dict[str, ServerProcess]]]:
    """(padded, unpadded): a service per side and answer time, all started side by side."""
    started = tuple(
        {s: ServerProcess(st.db, workers=1, answer_time=t) for s, st in stores.items()}
        for t in (PER_TABLE, 0.0)
    )
    start_all(srv for group in started for srv in group.values())
    try:
        yield started[0], started[1]
    finally:
        for group in started:
            for srv in group.values():
                srv.stop()


@pytest.fixture(scope="module")
def padded(
    services: tuple[dict[str, ServerProcess], dict[str, ServerProcess]],
) -> dict[str, ServerProcess]:
    return services[0]


@pytest.fixture(scope="module")
def unpadded(
    services: tuple[dict[str, ServerProcess], dict[str, ServerProcess]],
) -> dict[str, ServerProcess]:
    return services[1]


def _observe(
    servers: dict[str, ServerProcess],
    stores: dict[str, Store],
    sql: str,
    sides: tuple[str, str],
    runs: int,
) -> dict[str, list[tuple[float, int, tuple[str, ...]]]]:
    """(seconds, status, body keys) of ``runs`` queries per side, the sides interleaved."""
    body = {"sql": sql, "epsilon": "0.000001"}
    for s in sides:  # one warm-up each (first-query imports), not observed
        get_json(servers[s].port, "POST", "/v1/query", body, key=stores[s].key)
    seen: dict[str, list[tuple[float, int, tuple[str, ...]]]] = {s: [] for s in sides}
    for _ in range(runs):
        for s in sides:
            start = time.monotonic()
            status, payload, _ = get_json(
                servers[s].port, "POST", "/v1/query", body, key=stores[s].key
            )
            seen[s].append((time.monotonic() - start, status, tuple(sorted(payload))))
    return seen


def cross_validated_accuracy(a: list[float], b: list[float]) -> tuple[int, int]:
    """(correct, total) of a threshold classifier on response times, two-fold: the best
    threshold (and side) on the even runs is scored on the odd runs, and the reverse."""
    correct = total = 0
    for train, test in ((0, 1), (1, 0)):
        ta, tb = a[train::2], b[train::2]
        best = (-1, 0.0, 1)
        for cut in sorted(ta + tb):
            for sign in (1, -1):  # sign 1: "a" when slower than the cut
                hits = sum(sign * (x - cut) > 0 for x in ta) + sum(
                    sign * (x - cut) <= 0 for x in tb
                )
                if hits > best[0]:
                    best = (hits, cut, sign)
        _, cut, sign = best
        xa, xb = a[test::2], b[test::2]
        correct += sum(sign * (x - cut) > 0 for x in xa) + sum(sign * (x - cut) <= 0 for x in xb)
        total += len(xa) + len(xb)
    return correct, total


def test_the_classifier_tells_apart_what_differs_and_not_what_does_not() -> None:
    assert cross_validated_accuracy([1.0 + i / 1000 for i in range(20)], [2.0] * 20) == (40, 40)
    same = [0.1 * ((7 * i) % 13) for i in range(40)]
    correct, total = cross_validated_accuracy(same[::2], same[1::2])
    assert total == 40 and correct <= 28


@pytest.mark.slow  # real servers; about a minute and a quarter of padded answers
def test_padded_answer_times_and_statuses_do_not_separate_neighbours(
    stores: dict[str, Store],
    padded: dict[str, ServerProcess],
    unpadded: dict[str, ServerProcess],
) -> None:
    """Each amplifier at the largest limit this test affords, on add/remove and on
    attribute neighbours, 40 interleaved runs per side (the two kinds' padded runs at once).

    Measured on a loaded 2-core machine: unpadded, the classifier told the sides apart in 85%
    of the pooled runs (the control below; 65-98% per case); padded, 42-59% per case and 49%
    pooled (235 of 480). With the two kinds' padded runs at once, beside two other test jobs:
    padded 40-62% per case, 53% pooled (256 of 480); the control 71% (170 of 240).
    The pooled figure is held to the 60% bar (480 predictions: a chance classifier passes it
    with probability 1 - 5e-6); each case to 70% (80 predictions each), so a case that leaks
    on its own still fails.
    """
    control = [0, 0]
    pooled = [0, 0]
    for amplifier in AMPLIFIERS:
        sqls = {kind: AMPLIFIERS[amplifier](kind) for kind in NEIGHBOURS}
        for kind, sql in sqls.items():
            bare = _observe(unpadded, stores, sql, NEIGHBOURS[kind], RUNS // 2)
            c, t = cross_validated_accuracy(*([x[0] for x in bare[s]] for s in NEIGHBOURS[kind]))
            control = [control[0] + c, control[1] + t]
        # The two kinds' padded runs at once, each on its own pair of servers: a run of one
        # kind falls at any point of the other's, loading both of its sides alike, and the
        # wait for the budgets is paid once instead of twice.
        with ThreadPoolExecutor(max_workers=len(sqls)) as pool:
            observed = {
                kind: pool.submit(_observe, padded, stores, sql, NEIGHBOURS[kind], RUNS)
                for kind, sql in sqls.items()
            }
        for kind, sql in sqls.items():
            sides, seen = NEIGHBOURS[kind], observed[kind].result()
            statuses = {x[1] for s in sides for x in seen[s]}
            shapes = {x[2] for s in sides for x in seen[s]}
            assert statuses == {200} and len(shapes) == 1, (amplifier, kind, statuses, shapes)
            budget = PER_TABLE * (sql.count(" JOIN ") + 1)
            assert min(x[0] for s in sides for x in seen[s]) >= budget  # never released early
            c, t = cross_validated_accuracy(*([x[0] for x in seen[s]] for s in sides))
            assert c / t <= 0.70, (amplifier, kind, c, t)
            pooled = [pooled[0] + c, pooled[1] + t]
    assert pooled[0] / pooled[1] <= 0.60, pooled
    # The control: without padding the same classifier does separate them, so the test can
    # fail (the attack is real at this size).
    assert control[0] / control[1] >= 0.70, control


@pytest.mark.slow
def test_an_overrun_is_charged_recorded_and_shaped_like_an_answer(
    tmp_path: Path, pristine: Callable[[str, Path], Store]
) -> None:
    store = pristine("with", tmp_path / "with")
    sql = chain(8)
    with ServerProcess(store.db, workers=1, answer_time=0.001) as srv:  # far too short
        body = {"sql": sql, "epsilon": "0.01"}
        start = time.monotonic()
        status, payload, _ = get_json(srv.port, "POST", "/v1/query", body, key=store.key)
        took = time.monotonic() - start
        assert status == 200 and payload["columns"] == ["COUNT(*)"] and len(payload["rows"]) == 1
        assert took < 2.0
        time.sleep(0.5)  # the ledger's record is written once the response is sent
        log = srv.log_path.read_text()
    assert "overran its answer time" in log or "failed: QueryDeadline" in log
    cur = Curator(store.db)
    try:
        assert float(cur.ledger.budget("a", "clinic").spent_epsilon) == pytest.approx(0.01)
        entry = cur.ledger.entries()[-1]
        assert json.loads(entry.result_json or "{}")["rows"] == payload["rows"]
    finally:
        cur.close()


@pytest.mark.slow
def test_a_synopsis_release_is_padded_and_an_overrun_still_releases_every_cell(
    tmp_path: Path,
) -> None:
    (tmp_path / "store").mkdir()
    db = str(tmp_path / "store" / "store.duckdb")
    cur = Curator(db)
    try:
        frame = {"age": [i % 90 for i in range(2000)], "sex": ["f", "m"] * 1000}
        schema = one_table("people", {"age": ints(0, 99), "sex": cats("f", "m")})
        cur.register_dataset("people", pd.DataFrame(frame), schema)
        key = cur.add_analyst("a", "people", epsilon=10)
    finally:
        cur.close()
    # Each answer time its own copy of the store, the two services started side by side.
    shutil.copytree(tmp_path / "store", tmp_path / "copy")
    cases = {0.4: ("on_time", db), 0.0001: ("overrun", str(tmp_path / "copy" / "store.duckdb"))}
    servers = {t: ServerProcess(path, workers=1, answer_time=t) for t, (_, path) in cases.items()}
    start_all(servers.values())
    try:
        for per_table, (name, _) in cases.items():
            body = {"name": name, "dataset": "people", "columns": ["sex"], "epsilon": 0.5}
            start = time.monotonic()
            status, payload, _ = get_json(
                servers[per_table].port, "POST", "/v1/synopses", body, key=key
            )
            took = time.monotonic() - start
            assert status == 200 and payload["cells"] == 2, payload
            assert took >= per_table
    finally:
        for srv in servers.values():
            srv.stop()


@pytest.mark.slow
def test_planning_counts_against_the_budget(
    copied_store: Callable[..., tuple[str, dict[str, str]]], tmp_path: Path
) -> None:
    """Validation, planning and the reservation run inside the answer's time budget: a
    reservation that takes 1 s of a 1.2 s budget leaves the answer at 1.2 s, not 2.2 s."""
    from _asgi import call
    from infodp.server.app import ServerSettings, create_app

    db, keys = copied_store(tmp_path, [("alice", "people", 10)])
    app = create_app(ServerSettings(db, answer_time=1.2))
    curator = Curator(db)
    reserve = curator.reserve_for

    def slow_reserve(*args: object, **kwargs: object) -> object:
        time.sleep(1.0)  # planning a long (accepted) statement
        return reserve(*args, **kwargs)  # type: ignore[arg-type]

    curator.reserve_for = slow_reserve  # type: ignore[method-assign,assignment]
    app.state.service.curator = curator
    try:
        body = {"sql": "SELECT COUNT(*) FROM people", "epsilon": 0.1}
        call(app, "POST", "/v1/query", body, key=keys["alice"])  # warm-up
        start = time.monotonic()
        r = call(app, "POST", "/v1/query", body, key=keys["alice"])
        took = time.monotonic() - start
    finally:
        app.state.service.close()
    assert r.status_code == 200 and r.json()["columns"] == ["COUNT(*)"]
    assert 1.2 <= took < 1.9, took
