"""Nothing an analyst sees depends on the unit sketches: the neighbour test.

Store A holds ``orig`` (people p0..p999) and ``other`` (the same people and 1000 more),
so exactly half of ``other``'s people are in ``orig``: at the threshold at which the sketch
advises the owner that ``other`` looks like a copy. Store B is A without person p0 (in both
datasets), just below it. The owner declares the same on both stores (``other`` shares
``orig``'s budgets, or is independent); analyst ``a`` is granted on ``orig`` and ``b`` on
``other``. Through the library, the CLI and HTTP every answer's cost and remaining budget,
every refusal, every budget and every listing an analyst receives is the same on both stores
(but for the noise), and neither the ledger's secret salt, nor any hash of the unit
sketches, nor the estimated share of common units appears in it. A grant covers exactly
the dataset it names: ``a`` is refused on ``other`` with the same refusal whether or not
``other`` shares ``orig``'s group.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from _server_harness import ServerProcess, get_json, start_all
from _stores import TEXT, ints, one_table
from infodp.cli import main
from infodp.curator.engine import Curator
from infodp.curator.request import Request
from infodp.curator.store.unit_overlap import UnitSketch
from infodp.errors import InfodpError

SCHEMA = one_table("t", {"pid": TEXT, "x": ints(0, 9)}, unit="pid")
DECLARATIONS = {"shared": {"same_population_as": "orig"}, "independent": {"independent": True}}
COUNT = "SELECT COUNT(*) FROM {}"
NOISY = ("rows", "confidence_intervals", "entry")


def _frames(first: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(orig, other): people p{first}..p999, and those with q0..q999."""
    ids = [f"p{i}" for i in range(first, 1000)]
    more = [f"q{i}" for i in range(1000)]
    orig = pd.DataFrame({"pid": ids, "x": [i % 10 for i in range(len(ids))]})
    other = pd.DataFrame({"pid": ids + more, "x": [i % 10 for i in range(len(ids + more))]})
    return orig, other


@pytest.fixture(scope="module")
def stores(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[Path, int, str], tuple[Path, dict[str, str], bool]]:
    """``_store``, each (first, declaration) built once per module and copied for every test
    (each test charges its own copy)."""
    root = tmp_path_factory.mktemp("shared-budgets")
    built: dict[tuple[int, str], tuple[Path, dict[str, str], bool]] = {}

    def copy(directory: Path, first: int, declaration: str) -> tuple[Path, dict[str, str], bool]:
        if (first, declaration) not in built:
            built[first, declaration] = _store(root / f"{first}-{declaration}", first, declaration)
        db, keys, advised = built[first, declaration]
        shutil.copytree(db.parent, directory)
        return directory / db.name, keys, advised

    return copy


def _store(directory: Path, first: int, declaration: str) -> tuple[Path, dict[str, str], bool]:
    """(db, each analyst's key, whether the sketch advised the owner that other is a copy)."""
    directory.mkdir()
    orig, other = _frames(first)
    scratch = Curator(directory / "scratch.duckdb")  # the owner's undeclared try
    scratch.register_dataset("orig", orig, SCHEMA)
    try:
        scratch.register_dataset("other", other, SCHEMA)
        advised = False
    except InfodpError as err:
        assert "--same-population-as orig" in str(err) and "--independent" in str(err)
        advised = True
    scratch.close()
    db = directory / "s.duckdb"
    cur = Curator(db)
    cur.register_dataset("orig", orig, SCHEMA, max_epsilon=2)
    cur.register_dataset("other", other, SCHEMA, **DECLARATIONS[declaration])  # type: ignore[arg-type]
    keys = {
        "a": cur.add_analyst("a", "orig", epsilon=1),
        "b": cur.add_analyst("b", "other", epsilon=1),
    }
    cur.close()
    assert all(keys.values())
    return db, {k: str(v) for k, v in keys.items()}, advised


def _secrets(db: Path) -> list[str]:
    """The ledger's salt and every hash of its unit sketches, as text."""
    conn = sqlite3.connect(str(db) + ".ledger")
    salt = conn.execute("SELECT value FROM meta WHERE key = 'unit_salt'").fetchone()[0]
    blobs = [r[0] for r in conn.execute("SELECT sketch FROM unit_sketches")]
    conn.close()
    hashes = {h for b in blobs for h in UnitSketch.from_bytes(b).hashes}
    return [salt, *(str(h) for h in hashes), *(f"{h:x}" for h in hashes)]


def _library(db: Path) -> list[Any]:
    """What each analyst gets from the curator: budgets, estimates, answers, refusals."""
    cur = Curator(db)
    seen: list[Any] = []

    def call(f: Any, *args: Any, **kwargs: Any) -> None:
        try:
            out = f(*args, **kwargs)
        except InfodpError as err:
            seen.append((type(err).__name__, str(err)))
            return
        if hasattr(out, "to_dict"):
            out = out.to_dict()
        if isinstance(out, dict):
            out = {k: v for k, v in out.items() if k not in NOISY}
        seen.append(out)

    for analyst in ("a", "b"):
        seen.append([b.to_dict() for b in cur.ledger.budgets(analyst)])
        for name in ("orig", "other"):
            request = Request(COUNT.format(name), epsilon=Fraction(1, 4))
            call(cur.ledger.budget, analyst, name)
            call(cur.estimate_for, analyst, request)
            call(cur.answer, analyst, request)
            call(cur.query, analyst, COUNT.format(name), epsilon="0.5")
    seen.append([b.to_dict() for b in cur.ledger.budgets()])
    cur.close()
    return seen


def _cli(db: Path, capsys: pytest.CaptureFixture[str]) -> list[Any]:
    """What ``infodp query``, ``analyst list`` and ``dataset list`` show (noise left out)."""
    seen: list[Any] = []
    for analyst in ("a", "b"):
        for name in ("orig", "other"):
            argv = ["query", "--db", str(db), "--analyst", analyst, "--epsilon", "0.25"]
            status = main([*argv, "--json", COUNT.format(name)])
            out, err = capsys.readouterr()
            payload = json.loads(out) if status == 0 else err
            if isinstance(payload, dict):
                payload = {k: v for k, v in payload.items() if k not in NOISY}
            seen.append((status, payload))
    assert main(["analyst", "list", "--db", str(db), "--json"]) == 0
    seen.append(json.loads(capsys.readouterr().out))
    assert main(["dataset", "list", "--db", str(db), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["datasets"]
    seen.append([(d["name"], d["shares_budgets_of"], d["independent"]) for d in listed])
    return seen


def _http(*stores: tuple[Path, dict[str, str]]) -> list[list[tuple[int, dict[str, Any]]]]:
    """Per store, what each analyst receives from its service, in order (noisy values left
    out); the services started side by side."""
    servers = [ServerProcess(db, workers=1) for db, _ in stores]
    start_all(servers)
    try:
        return [_http_seen(server, keys) for server, (_, keys) in zip(servers, stores, strict=True)]
    finally:
        for server in servers:
            server.stop()


def _http_seen(server: ServerProcess, keys: dict[str, str]) -> list[tuple[int, dict[str, Any]]]:
    seen = []
    for analyst in ("a", "b"):
        calls: list[tuple[str, str, Any]] = [
            ("GET", "/v1/budget", None),
            ("GET", "/v1/datasets", None),
            ("GET", "/v1/datasets/orig", None),
            ("GET", "/v1/datasets/other", None),
            ("POST", "/v1/query", {"sql": COUNT.format("orig"), "epsilon": "0.25"}),
            ("POST", "/v1/query", {"sql": COUNT.format("other"), "epsilon": "0.25"}),
            ("GET", "/v1/budget", None),
        ]
        for method, path, body in calls:
            status, payload, _ = get_json(server.port, method, path, body, key=keys[analyst])
            for noisy in NOISY:
                payload.pop(noisy, None)
            seen.append((status, payload))
    return seen


def _no_secret(seen: object, *stores: Path) -> None:
    text = json.dumps(seen, default=str)
    for db in stores:
        for secret in _secrets(db):
            assert secret not in text
    assert "units are in" not in text and "%" not in text


@pytest.mark.slow  # four stores built, two sketched as copies: seconds each
@pytest.mark.parametrize("declaration", sorted(DECLARATIONS))
def test_library_and_cli_outcomes_are_the_same_on_neighbouring_stores(
    tmp_path: Path,
    declaration: str,
    capsys: pytest.CaptureFixture[str],
    stores: Callable[[Path, int, str], tuple[Path, dict[str, str], bool]],
) -> None:
    db_a, _, advised_a = stores(tmp_path / "a", 0, declaration)
    db_b, _, advised_b = stores(tmp_path / "b", 1, declaration)
    assert (advised_a, advised_b) == (True, False)  # the stores straddle the threshold
    seen_a, seen_b = _library(db_a), _library(db_b)
    assert seen_a == seen_b
    # a is granted orig only, b other only: the same refusal, shared group or not.
    refusals = [s for s in seen_a if isinstance(s, tuple)]
    assert (
        "ParameterError",
        "analyst 'a' has no budget on dataset 'other'; add one with "
        "'infodp analyst add --name a --dataset other ...'.",
    ) in refusals
    assert any(s[0] == "NoBudget" for s in refusals)
    budgets = seen_a[-1]
    assert sorted((b["analyst"], b["dataset"]) for b in budgets) == [("a", "orig"), ("b", "other")]
    cli_a, cli_b = _cli(db_a, capsys), _cli(db_b, capsys)
    assert cli_a == cli_b
    assert [status for status, _ in cli_a[:4]] == [0, 2, 2, 0]
    assert "no budget on dataset 'other'" in cli_a[1][1]
    _no_secret([seen_a, seen_b, cli_a, cli_b], db_a, db_b)


@pytest.mark.slow  # two servers per declaration
@pytest.mark.parametrize("declaration", sorted(DECLARATIONS))
def test_http_outcomes_are_the_same_on_neighbouring_stores(
    tmp_path: Path,
    declaration: str,
    stores: Callable[[Path, int, str], tuple[Path, dict[str, str], bool]],
) -> None:
    db_a, keys_a, _ = stores(tmp_path / "a", 0, declaration)
    db_b, keys_b, _ = stores(tmp_path / "b", 1, declaration)
    seen_a, seen_b = _http((db_a, keys_a), (db_b, keys_b))
    assert seen_a == seen_b
    # a: its budget lists orig alone, other is unknown to it like any dataset not granted.
    statuses = [s for s, _ in seen_a]
    assert statuses == [200, 200, 200, 404, 200, 403, 200, 200, 200, 404, 200, 403, 200, 200]
    assert [d["name"] for d in seen_a[1][1]["datasets"]] == ["orig"]
    assert [b["dataset"] for b in seen_a[0][1]["budgets"]] == ["orig"]
    assert [d["name"] for d in seen_a[8][1]["datasets"]] == ["other"]
    _no_secret([seen_a, seen_b], db_a, db_b)
