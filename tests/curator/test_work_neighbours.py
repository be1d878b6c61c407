"""The three work amplifiers are refused for free, and alike, on neighbouring stores.

A public table joined to itself ten times, the visits joined to themselves fourteen times on
the unit, and one public key repeated 10⁶ times multiply one person's 3 rows into 3·4^11,
3^15 and 3·10⁶ rows: each would make the run time (and, past the timeout, the status) tell
whether that person is in the data, or what one attribute of theirs is. At the default limit
on one person's rows in a query's relations each is refused before anything runs: through the
library, the CLI and the service, on two stores that differ in one person (add/remove) and
on two that differ in one attribute of that person, the outcome is the same one-line refusal
and nothing is spent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from _amplifiers import NEIGHBOURS, Store, chain, heavy, make_store, self_join
from _server_harness import ServerProcess, get_json
from _stores import serving, spent
from infodp.cli import main
from infodp.curator.engine import Curator
from infodp.errors import InfodpError

HEAVY_ROWS = 10**6

AMPLIFIERS = {
    "chain": lambda kind: chain(10, kind),
    "self-join": lambda kind: self_join(14, kind),
    "heavy-key": heavy,
}


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Store]:
    root = tmp_path_factory.mktemp("work")
    sides = {s for pair in NEIGHBOURS.values() for s in pair}
    return {s: make_store(root / s, s, limit=None, heavy_rows=HEAVY_ROWS) for s in sides}


def _spent(db: str) -> tuple[Fraction, int]:
    epsilon, _, entries = spent(db, "clinic")
    return epsilon, entries


def _library(store: Store, sql: str) -> tuple[str, str]:
    cur = Curator(store.db)
    try:
        cur.query("a", sql, epsilon="0.001")
        return ("answered", "")
    except InfodpError as err:
        return (type(err).__name__, str(err))
    finally:
        cur.close()


def _cli(store: Store, sql: str, capsys: Any) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["query", "--db", store.db, "--analyst", "a", "--epsilon", "0.001", sql])
    _, err = capsys.readouterr()
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    return code, err.strip()


CASES = [(a, k) for a in AMPLIFIERS for k in NEIGHBOURS]


@pytest.mark.slow
@pytest.mark.parametrize(("amplifier", "kind"), CASES, ids=[f"{a}-{k}" for a, k in CASES])
def test_library_and_cli_refuse_each_amplifier_alike_and_for_free(
    stores: dict[str, Store], capsys: Any, amplifier: str, kind: str
) -> None:
    sql = AMPLIFIERS[amplifier](kind)
    pair = [stores[s] for s in NEIGHBOURS[kind]]
    before = [_spent(s.db) for s in pair]
    library = [_library(s, sql) for s in pair]
    cli = [_cli(s, sql, capsys) for s in pair]
    assert library[0] == library[1] and library[0][0] == "ParameterError"
    assert "max_derived_rows_per_unit" in library[0][1] and "refused" in library[0][1]
    assert cli[0] == cli[1] and cli[0][0] == 2  # bad input: exit status 2, one line
    assert [_spent(s.db) for s in pair] == before  # nothing reserved, nothing spent


@pytest.fixture(scope="module")
def servers(stores: dict[str, Store]) -> Iterator[dict[str, ServerProcess]]:
    with serving(stores, workers=1, answer_time=0.05) as started:
        yield started


@pytest.mark.slow  # real server processes
@pytest.mark.parametrize(("amplifier", "kind"), CASES, ids=[f"{a}-{k}" for a, k in CASES])
def test_the_service_refuses_each_amplifier_alike_and_for_free(
    stores: dict[str, Store], servers: dict[str, ServerProcess], amplifier: str, kind: str
) -> None:
    sql = AMPLIFIERS[amplifier](kind)
    sides = NEIGHBOURS[kind]
    before = [_spent(stores[s].db) for s in sides]
    seen = []
    for s in sides:
        body = {"sql": sql, "epsilon": "0.001"}
        for route in ("/v1/query", "/v1/estimate"):
            status, payload, _ = get_json(servers[s].port, "POST", route, body, key=stores[s].key)
            seen.append((route, status, json.dumps(payload, sort_keys=True)))
    assert seen[:2] == seen[2:]
    assert all(status == 400 for _, status, _ in seen)
    assert "max_derived_rows_per_unit" in seen[0][2]
    assert [_spent(stores[s].db) for s in sides] == before


@pytest.mark.slow
def test_dataset_show_and_the_service_state_the_limit(
    stores: dict[str, Store], capsys: Any, tmp_path: Path
) -> None:
    store = stores["with"]
    capsys.readouterr()
    assert main(["dataset", "show", "clinic", "--db", store.db, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["max_derived_rows_per_unit"] == 10_000 and shown["name"] == "clinic"
    assert main(["dataset", "show", "clinic", "--db", store.db]) == 0
    assert "max_derived_rows_per_unit: 10000" in capsys.readouterr().out
    assert main(["dataset", "show", "nope", "--db", store.db]) == 2
    assert main(["dataset", "list", "--db", store.db, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["datasets"]
    assert [d["max_derived_rows_per_unit"] for d in listed] == [10_000]
    from _asgi import call
    from infodp.server.app import ServerSettings, create_app

    app = create_app(ServerSettings(store.db))
    try:
        one = call(app, "GET", "/v1/datasets/clinic", key=store.key).json()
        every = call(app, "GET", "/v1/datasets", key=store.key).json()
    finally:
        app.state.service.close()
    assert one["max_derived_rows_per_unit"] == 10_000
    assert [d["max_derived_rows_per_unit"] for d in every["datasets"]] == [10_000]
