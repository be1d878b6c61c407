"""Neighbouring populations: one person removed from every table changes nothing observable
but charged noise, for every class of query over several tables.

Each construct class (a join with a public table, a join of private tables on the unit, a
chain of both, derived columns in an aggregate, in WHERE and in GROUP BY, a row-level subquery,
a per-unit aggregation feeding an outer aggregate) is asked of two stores that differ in one
person, ``bob``, removed from every private table (add/remove neighbours, Dwork & Roth 2014,
Def. 2.4; for a population the unit is the person across all tables). Through the library, the
CLI and the HTTP service the outcome, the cost object and the ledger's spend must be
identical, and refusals cost nothing. Then the answer itself: the exact pre-noise measurements
of the two stores differ by at most each measurement's charged sensitivity summed over its
cells (L1), and a black-box audit of the released measurement on the two stores (Jagielski et
al. 2020's lower-bound method, :func:`infodp.audit.auditor.audit`) finds no ε above the one
charged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from _server_harness import ServerProcess, get_json
from _stores import (
    TEXT,
    Store,
    cli_outcome,
    clinic,
    estimates,
    floats,
    ints,
    library_outcome,
    neighbour_pair,
    population,
    private,
    public,
    serving,
    spend_diff,
    spent,
)
from infodp.audit.auditor import VectorisedMechanism, audit
from infodp.curator.engine import Curator

INCOME = floats(0, 100000, "drop")
KINDS = ["checkup", "emergency"]
SCHEMA = clinic("person_id", income=INCOME, visits=4, cost=ints(0, 1000), kinds=KINDS)


def _tables(with_bob: bool) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(11)
    n = 60
    ids = [f"p{i}" for i in range(n)]
    people = pd.DataFrame(
        {
            "person_id": ids,
            "age": rng.integers(0, 100, n),
            "income": rng.uniform(0, 90000, n).round(0),
            "region": rng.choice(["n", "s", "e"], n),
        }
    )
    per = rng.integers(0, 5, n)
    visits = pd.DataFrame(
        {
            "person_id": np.repeat(ids, per),
            "cost": rng.integers(0, 1000, int(per.sum())),
            "kind": rng.choice(["checkup", "emergency"], int(per.sum())),
        }
    )
    if with_bob:  # bob: the most extreme row every table allows
        people.loc[len(people)] = ["bob", 100, 100000.0, "e"]
        for _ in range(4):
            visits.loc[len(visits)] = ["bob", 1000, "emergency"]
    regions = pd.DataFrame({"region": ["n", "s", "e", "e"], "area": ["hi", "lo", "lo", "mid"]})
    return {"people": people, "visits": visits, "regions": regions}


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Store]:
    root = tmp_path_factory.mktemp("populations")
    return neighbour_pair(root, "clinic", SCHEMA, _tables(True), _tables(False))


JOIN = "FROM people p JOIN visits v ON p.person_id = v.person_id"
#: (id, sql, ε, δ): one answered query per construct class, then refusals.
CASES = [
    ("answered-one-table", "SELECT COUNT(*), SUM(cost) FROM visits", "0.5", "0"),
    (
        "answered-private-public",
        "SELECT r.area, COUNT(*) FROM people p JOIN regions r ON p.region = r.region "
        "GROUP BY r.area",
        "0.5",
        "0",
    ),
    (
        "answered-private-private",
        f"SELECT COUNT(*), SUM(v.cost) {JOIN} WHERE p.age > 40",
        "0.5",
        "0",
    ),
    (
        "answered-chain",
        f"SELECT r.area, COUNT(*), SUM(v.cost) {JOIN} JOIN regions r ON p.region = r.region "
        "GROUP BY r.area",
        "0.5",
        "0",
    ),
    (
        "answered-derived-aggregate",
        "SELECT AVG(CASE WHEN income > 50000 THEN 1 ELSE 0 END) FROM people",
        "0.5",
        "0",
    ),
    ("answered-derived-where", "SELECT COUNT(*) FROM visits WHERE cost * 2 > 900", "0.5", "0"),
    (
        "answered-derived-group",
        "SELECT CASE WHEN cost > 500 THEN 'high' ELSE 'low' END AS band, COUNT(*) FROM visits "
        "GROUP BY band",
        "0.5",
        "0",
    ),
    (
        "answered-row-subquery",
        "SELECT kind, COUNT(*) FROM (SELECT kind, cost FROM visits WHERE cost > 100) AS v "
        "GROUP BY kind",
        "0.5",
        "0",
    ),
    (
        "answered-per-unit-subquery",
        "SELECT SUM(total), COUNT(*) FROM (SELECT person_id, SUM(cost) AS total FROM visits "
        "GROUP BY person_id) AS t",
        "0.5",
        "0",
    ),
    (
        "answered-truncated-join",
        "SELECT COUNT(*), SUM(v.cost) FROM people p JOIN (SELECT * FROM visits QUALIFY "
        "ROW_NUMBER() OVER (PARTITION BY person_id) <= 2) AS v ON p.person_id = v.person_id",
        "0.5",
        "0",
    ),
    ("refused-cross-join", "SELECT COUNT(*) FROM people CROSS JOIN visits", "0.5", "0"),
    (
        "refused-self-join-on-a-value",
        "SELECT COUNT(*) FROM visits a JOIN visits b ON a.cost = b.cost",
        "0.5",
        "0",
    ),
    (
        "refused-per-unit-release",
        "SELECT person_id, SUM(cost) FROM visits GROUP BY person_id",
        "0.5",
        "0",
    ),
    ("refused-public-only", "SELECT COUNT(*) FROM regions", "0.5", "0"),
    (
        "refused-subquery-in-where",
        "SELECT COUNT(*) FROM people WHERE person_id IN (SELECT person_id FROM visits)",
        "0.5",
        "0",
    ),
]
IDS = [c[0] for c in CASES]
ANSWERED = [c for c in CASES if c[0].startswith("answered")]


def _spent(db: str) -> tuple[Fraction, Fraction, int]:
    return spent(db, "clinic")


@pytest.mark.slow
@pytest.mark.parametrize(("name", "sql", "eps", "delta"), CASES, ids=IDS)
def test_outcome_cost_and_ledger_are_identical_across_neighbouring_populations(
    pair: tuple[Store, Store], capsys: Any, name: str, sql: str, eps: str, delta: str
) -> None:
    for ask in (library_outcome, lambda s, *a: cli_outcome(s, *a, capsys)):
        before = [_spent(s.db) for s in pair]
        seen = [ask(s, sql, eps, delta) for s in pair]
        after = [_spent(s.db) for s in pair]
        assert seen[0] == seen[1], name
        answered = name.startswith("answered")
        assert (seen[0][0] in ("ok", 0)) == answered, seen[0]
        spend = spend_diff(after, before)
        assert spend[0] == spend[1]
        if not answered:
            assert spend[0] == (0, 0, 0)  # refused before the reservation: nothing spent
            assert "\n" not in str(seen[0][1])


@pytest.fixture(scope="module")
def servers(pair: tuple[Store, Store]) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    # One worker each: these tests compare outcomes, not the pool (tests/server/ has it).
    with serving(dict(enumerate(pair)), workers=1) as started:
        yield started[0], started[1]


@pytest.mark.slow  # real server processes
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_service_answers_and_refuses_alike_across_neighbouring_populations(
    pair: tuple[Store, Store], servers: tuple[ServerProcess, ServerProcess], case: tuple[str, ...]
) -> None:
    name, sql, eps, delta = case
    body = {"sql": sql, "epsilon": eps, "delta": delta}
    before = [_spent(s.db) for s in pair]
    seen = []
    for srv, store in zip(servers, pair, strict=True):
        status, payload, _ = get_json(srv.port, "POST", "/v1/query", body, key=store.key)
        seen.append((status, payload["cost"] if status == 200 else payload))
    after = [_spent(s.db) for s in pair]
    assert seen[0] == seen[1], name
    assert seen[0][0] == (200 if name.startswith("answered") else 400), seen[0]
    spend = spend_diff(after, before)
    assert spend[0] == spend[1]
    free = estimates(servers, pair, body)
    assert free[0] == free[1]


@pytest.mark.slow  # statistical: a 100 000-sample audit per case
@pytest.mark.parametrize(("name", "sql", "eps", "delta"), ANSWERED, ids=[c[0] for c in ANSWERED])
def test_the_answer_moves_by_at_most_the_charged_sensitivity_and_an_audit_agrees(
    pair: tuple[Store, Store], name: str, sql: str, eps: str, delta: str
) -> None:
    curs = [Curator(s.db) for s in pair]
    try:
        exact = [c.exact_aggregates(sql) for c in curs]
        result = curs[0].query("a", sql, epsilon=eps, delta=delta)
    finally:
        for c in curs:
            c.close()
    parts = [p for p in result.cost.parts if p.measurement.kind != "quantile"]
    cells = set(exact[0].values) | set(exact[1].values)
    for i, part in enumerate(parts):
        values = [
            [(e.values.get(k) or (0,) * len(parts))[i] or 0 for k in sorted(cells)] for e in exact
        ]
        moved = sum(abs(a - b) for a, b in zip(values[0], values[1], strict=True))
        assert moved <= part.sensitivity, (name, part.measurement.key, moved, part.sensitivity)
        # The audit: the released cell that moved most, on the two stores, with the charged noise.
        diffs = [abs(a - b) for a, b in zip(values[0], values[1], strict=True)]
        cell = int(np.argmax(diffs))
        mech = part.noise_mechanism
        if mech is None or diffs[cell] == 0:
            continue
        released = VectorisedMechanism(
            lambda d, n, rng, mech=mech: d[0] + mech.simulate(0, n, rng), "curator measurement"
        )
        r = audit(
            released,
            [values[0][cell]],
            [values[1][cell]],
            samples=100_000,
            claimed_epsilon=float(part.epsilon),
            rng=5,
        )
        assert r.verdict == "consistent", (name, part.measurement.key)
        assert r.epsilon_lower <= float(part.epsilon)


PLAN_QUERIES = [
    f"SELECT COUNT(*), SUM(v.cost) {JOIN}",
    f"SELECT r.area, COUNT(*), SUM(v.cost) {JOIN} JOIN regions r ON p.region = r.region "
    "GROUP BY r.area",
    "SELECT r.area, COUNT(*) FROM visits v JOIN people p ON p.person_id = v.person_id "
    "JOIN regions r ON p.region = r.region GROUP BY r.area",
]


PLAN_SCHEMA = population(
    "person_id",
    {
        "people": private(1, person_id=TEXT, region=TEXT),
        "visits": private(3, person_id=TEXT, cost=ints(0, 1000)),
        "regions": public(region=TEXT, area=TEXT),
    },
)


def _sized(directory: Path, people: int, visits: int) -> Curator:
    """A population of ``people`` people and ``visits`` visits (sizes chosen to cross)."""
    ids = [f"p{i}" for i in range(people)]
    tables = {
        "people": pd.DataFrame(
            {"person_id": ids, "region": [("n", "s")[i % 2] for i in range(people)]}
        ),
        "visits": pd.DataFrame(
            {
                "person_id": [ids[i % people] for i in range(visits)],
                "cost": [i % 1000 for i in range(visits)],
            }
        ),
        "regions": pd.DataFrame({"region": ["n", "s"], "area": ["a", "b"]}),
    }
    directory.mkdir(parents=True)
    cur = Curator(directory / "s.duckdb")
    cur.register_dataset("clinic", tables, PLAN_SCHEMA)
    return cur


def _explained(cur: Curator) -> list[str]:
    from infodp.curator.backends.duckdb import compiled_statements
    from infodp.curator.rules import measurements

    out = []
    con = cur.backend.connect(read_only=True)
    try:
        for sql in PLAN_QUERIES:
            plan, schema, _, unit_ok = cur.plan(sql)
            for s in compiled_statements(plan, schema, measurements(plan), unit_rows_ok=unit_ok):
                text = "\n".join(r[1] for r in con.execute(f"EXPLAIN {s}").fetchall())
                text = re.sub(r"~[\d,]+ rows?", "~N rows", text)  # the tables' sizes
                out.append(re.sub(r"[\s\u2500-\u257f]+", " ", text).strip())
    finally:
        con.close()
    return out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("first", "second"),
    [((1000, 1000), (1001, 1000)), ((10, 10), (11, 10)), ((10, 11), (11, 11))],
    ids=["past-a-merge-join-threshold", "people-overtake-visits", "people-tie-visits"],
)
def test_join_plans_are_identical_across_neighbours(
    tmp_path: Path, first: tuple[int, int], second: tuple[int, int]
) -> None:
    """A join's plan (order, build side, join algorithm) must not follow the tables' private
    sizes: one more person once flipped a three-table join's plan (run time is observable)."""
    a, b = _sized(tmp_path / "a", *first), _sized(tmp_path / "b", *second)
    try:
        assert _explained(a) == _explained(b)
    finally:
        a.close()
        b.close()
