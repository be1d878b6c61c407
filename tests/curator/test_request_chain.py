"""One query, one chain of records: the request is parsed once and its dataset found once.

Whichever way a query comes in (the library's plain arguments, a Session, the HTTP route),
:meth:`Request.parse` runs once and the resolution step (:meth:`PriceBook.resolve`: dataset,
declaration and budget) once per query, the first time and when repeated; the dataset's name
is looked up (:meth:`PriceBook.dataset_of`) once when first seen and then remembered. The
cost's mechanisms are built when it is priced, never again while the same query is answered.
Counted by wrapping the functions themselves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _asgi import call
from _server_harness import build_store
from _stores import ints, one_table
from infodp.curator.engine import Curator
from infodp.curator.price import cost as cost_module
from infodp.curator.price.book import PriceBook
from infodp.curator.request import Request
from infodp.curator.session import Session

AVG = "SELECT AVG(age) FROM people"
GROUPED = "SELECT region, COUNT(*) FROM people GROUP BY region"


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Calls of the request parser, the dataset resolver and the mechanism builder."""
    calls: Counter[str] = Counter()
    parse = Request.parse.__func__  # type: ignore[attr-defined]
    resolve = PriceBook.resolve
    dataset_of = PriceBook.dataset_of
    build = cost_module._mechanism

    def counted_parse(cls: type[Request], *args: Any, **kwargs: Any) -> Request:
        calls["parse"] += 1
        return parse(cls, *args, **kwargs)  # type: ignore[no-any-return]

    def counted_resolve(self: PriceBook, *args: Any, **kwargs: Any) -> Any:
        calls["resolve"] += 1
        return resolve(self, *args, **kwargs)

    def counted_dataset_of(self: PriceBook, *args: Any, **kwargs: Any) -> str:
        calls["lookup"] += 1
        return dataset_of(self, *args, **kwargs)

    def counted_build(part: Any) -> Any:
        calls["build"] += 1
        return build(part)

    monkeypatch.setattr(Request, "parse", classmethod(counted_parse))
    monkeypatch.setattr(PriceBook, "resolve", counted_resolve)
    monkeypatch.setattr(PriceBook, "dataset_of", counted_dataset_of)
    monkeypatch.setattr(cost_module, "_mechanism", counted_build)
    return calls


def _each_query(calls: Counter[str], run: Callable[[], object]) -> list[tuple[int, int]]:
    """(parse calls, resolutions) of a first and a repeated query; the dataset's name is
    looked up once, by the first."""
    out = []
    for _ in range(2):
        calls.clear()
        run()
        out.append((calls["parse"], calls["resolve"]))
        assert calls["lookup"] == (1 if len(out) == 1 else 0)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("sql", [AVG, GROUPED], ids=["avg", "grouped"])
def test_a_library_query_is_parsed_once_and_resolved_once(
    tmp_path: Path, counted: Counter[str], sql: str
) -> None:
    db, _ = build_store(tmp_path, [("alice", "people", 100)])
    cur = Curator(db)
    try:
        assert _each_query(counted, lambda: cur.query("alice", sql, epsilon=1)) == [(1, 1)] * 2
        request = Request.parse(sql, epsilon=1)
        # Resolved among alice's datasets: looked up once, then remembered for her.
        for step, lookups in ((cur.answer, 1), (cur.reserve_for, 0)):
            counted.clear()
            step("alice", request)
            assert (counted["parse"], counted["resolve"], counted["lookup"]) == (0, 1, lookups)
    finally:
        cur.close()


def test_a_session_query_is_parsed_once_and_resolved_once(counted: Counter[str]) -> None:
    frame = pd.DataFrame({"age": [i % 100 for i in range(300)]})
    declared = one_table("t", {"age": ints(0, 99)})  # fmt: skip
    s = Session(frame, declared, epsilon=10)
    try:
        got = _each_query(counted, lambda: s.query("SELECT AVG(age) FROM t", epsilon=1))
        assert got == [(1, 1)] * 2
        counted.clear()
        s.estimate("SELECT AVG(age) FROM t", epsilon=1)
        assert (counted["parse"], counted["resolve"], counted["lookup"]) == (1, 1, 0)
    finally:
        s.close()


@pytest.mark.slow
def test_an_http_query_is_parsed_once_and_resolved_once(
    tmp_path: Path, counted: Counter[str]
) -> None:
    from infodp.server.app import ServerSettings, create_app

    db, keys = build_store(tmp_path, [("alice", "people", 100)])
    app = create_app(ServerSettings(db))
    try:
        for path in ("/v1/query", "/v1/estimate"):
            body = {"sql": AVG, "epsilon": 0.5}
            seen = []
            for _ in range(2):
                counted.clear()
                r = call(app, "POST", path, body, key=keys["alice"])
                assert r.status_code == 200, r.text
                seen.append((counted["parse"], counted["resolve"], counted["lookup"]))
            # The name is looked up at most once (each of the service's threads has its own
            # curator, which remembers it).
            assert seen[0][:2] == seen[1][:2] == (1, 1) and seen[0][2] <= 1 >= seen[1][2], path
    finally:
        app.state.service.close()


@pytest.mark.slow
def test_the_mechanisms_are_built_when_the_query_is_priced_only(
    tmp_path: Path, counted: Counter[str]
) -> None:
    """A repeated query builds no mechanism (they come with its remembered cost), and the
    first builds one per measurement, whatever the release reads of them."""
    db, _ = build_store(tmp_path, [("alice", "people", 100)])
    cur = Curator(db)
    try:
        counted.clear()
        first = cur.query("alice", "SELECT AVG(age), COUNT(*) FROM people", epsilon=1)
        assert counted["build"] == len(first.cost.parts) == 3  # centred sum, count, rows
        counted.clear()
        cur.query("alice", "SELECT AVG(age), COUNT(*) FROM people", epsilon=1)
        assert counted["build"] == 0
    finally:
        cur.close()


@pytest.mark.slow
def test_the_privacy_summary_is_frozen_and_reads_as_its_json(tmp_path: Path) -> None:
    """The summary an answer carries is one frozen record shared by the answers of a priced
    query; it reads as the JSON object the answer shows, from explain's own summary."""
    from infodp.explain import explain

    db, _ = build_store(tmp_path, [("alice", "people", 100)])
    cur = Curator(db)
    try:
        a = cur.query("alice", AVG, epsilon=1)
        b = cur.query("alice", AVG, epsilon=1)
        assert a.leakage is b.leakage
        with pytest.raises(AttributeError):
            a.leakage.epsilon = 0.0  # type: ignore[misc]
        shown = a.to_dict()["cost"]["leakage"]
        assert dict(a.leakage) == shown == a.leakage.to_dict()
        oracle = explain(a.cost.profile())
        assert shown["nats"] == {k: v for k, v in oracle.nats.items()}
        assert shown["epsilon"] == oracle.epsilon and shown["delta"] == oracle.delta
        assert "expected_exposed_individuals" not in shown  # no public row bound declared
    finally:
        cur.close()


@pytest.mark.slow
def test_plan_and_price_are_named_records(tmp_path: Path) -> None:
    db, _ = build_store(tmp_path, [("alice", "people", 100)])
    cur = Curator(db)
    try:
        planned = cur.plan(GROUPED)
        plan, schema, rows, unit_ok = planned  # still unpacks as before
        assert (planned.plan, planned.schema, planned.rows, planned.unit_rows_ok) == (
            plan, schema, rows, unit_ok)  # fmt: skip
        assert [g.column for g in plan.group_by] == ["region"] and rows is None and unit_ok
        priced = cur.price(Request.parse(GROUPED, epsilon=1))
        assert priced.plan == plan and priced.cost.epsilon == 1
    finally:
        cur.close()
