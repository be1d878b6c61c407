"""The one builder of the tests' stores and populations.

Declarations are built from their columns (``one_table``: a table with its privacy unit;
``population``: several tables of one unit, ``private``/``public`` members); a store on disk is
a registered dataset with one analyst (``make_store``); a neighbouring pair is two stores that
differ in one privacy unit (add/remove neighbours, Dwork & Roth 2014, Def. 2.4), and the
outcome helpers ask both the same question through the library, the CLI and the HTTP service.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Generic, TypeVar

import pytest

from _server_harness import ServerProcess, get_json, start_all
from infodp.cli import main
from infodp.curator.engine import Curator
from infodp.curator.ledger import Ledger
from infodp.errors import BudgetExceeded, InfodpError

#: A text column (a key or a label: no bounds).
TEXT: dict[str, Any] = {"type": "text"}


def ints(lo: float, hi: float) -> dict[str, Any]:
    """An integer column declared within [lo, hi]."""
    return {"type": "int", "bounds": [lo, hi]}


def floats(lo: float, hi: float, nulls: str | None = None) -> dict[str, Any]:
    """A float column declared within [lo, hi] (``nulls="drop"``: missing values dropped)."""
    spec: dict[str, Any] = {"type": "float", "bounds": [lo, hi]}
    return spec if nulls is None else {**spec, "nulls": nulls}


def cats(*names: str) -> dict[str, Any]:
    """A category column of the declared ``names``."""
    return {"type": "category", "categories": list(names)}


def one_table(
    table: str, columns: Mapping[str, Any], *, unit: str = "row", **facts: Any
) -> dict[str, Any]:
    """A one-table declaration: ``facts`` are its other keys (max_rows_per_unit, public_rows…).

    >>> one_table("t", {"x": ints(0, 9)}, max_rows_per_unit=2)["privacy_unit"]
    'row'
    """
    return {"table": table, "privacy_unit": unit, **facts, "columns": _copied(columns)}


def _copied(columns: Mapping[str, Any]) -> dict[str, Any]:
    # Each declaration its own column dicts: a test that edits one never edits ``TEXT``.
    return {n: dict(c) if isinstance(c, Mapping) else c for n, c in columns.items()}


def private(max_rows: int | None, **columns: Any) -> dict[str, Any]:
    """A private member of a population: at most ``max_rows`` rows per unit (None: the
    declaration's default)."""
    if max_rows is None:
        return {"columns": _copied(columns)}
    return {"max_rows_per_unit": max_rows, "columns": _copied(columns)}


def public(**columns: Any) -> dict[str, Any]:
    """A public member of a population (its rows are declared public facts)."""
    return {"public": True, "columns": _copied(columns)}


def population(unit: str, tables: Mapping[str, Mapping[str, Any]], **facts: Any) -> dict[str, Any]:
    """A declaration of several tables of one privacy unit (``facts``: its other keys).

    >>> sorted(population("pid", {"people": private(1, pid=TEXT)})["tables"])
    ['people']
    """
    return {"privacy_unit": unit, **facts, "tables": dict(tables)}


def clinic(
    unit: str,
    *,
    income: Mapping[str, Any],
    visits: int,
    cost: Mapping[str, Any],
    kinds: Sequence[str],
    age: Mapping[str, Any] | None = None,
    area: str = "area",
    **facts: Any,
) -> dict[str, Any]:
    """The tests' clinic population: ``people`` (one row each: the unit, age, income, region),
    their ``visits`` (at most ``visits`` each: cost, kind) and a public table of ``regions``
    (region, and the ``area`` it lies in).

    >>> d = clinic("pid", income=ints(0, 9), visits=3, cost=ints(0, 5), kinds=["a"])
    >>> d["tables"]["visits"]["max_rows_per_unit"], sorted(d["tables"]["regions"]["columns"])
    (3, ['area', 'region'])
    """
    key = {unit: TEXT}
    people = private(1, **key, age=age or ints(0, 100), income=income, region=TEXT)
    return population(
        unit,
        {
            "people": people,
            "visits": private(visits, **key, cost=cost, kind=cats(*kinds)),
            "regions": public(region=TEXT, **{area: TEXT}),
        },
        **facts,
    )


def visits_population(
    units: int, visits: int, cap: int, *, seed: int = 2, extra: int = 0
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A two-table population (its frames, its declaration): ``people`` (pid, age) and
    ``visits`` (pid, kind a/b; ``visits`` rows per unit, at most ``cap`` read) plus a public
    ``regions`` table; ``extra`` more units than ``units`` (1: a neighbour). A unit's visits
    share a kind, and the first ``units`` units are the same whatever ``extra``.

    >>> frames, decl = visits_population(3, 2, 1, extra=1)
    >>> len(frames["people"]), len(frames["visits"]), decl["tables"]["visits"]["max_rows_per_unit"]
    (4, 8, 1)
    """
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    n = units + extra
    age = rng.integers(0, 99, units + 1)[:n]
    kind = np.repeat(np.where(rng.random(units + 1) < 0.3, "a", "b"), visits)[: visits * n]
    frames = {
        "people": pd.DataFrame({"pid": np.arange(n), "age": age}),
        "visits": pd.DataFrame({"pid": np.repeat(np.arange(n), visits), "kind": kind}),
        "regions": pd.DataFrame({"region": ["n", "s"]}),
    }
    pid = {"type": "int"}
    declaration = population(
        "pid",
        {
            "people": private(1, pid=pid, age=ints(0, 99)),
            "visits": private(cap, pid=pid, kind=cats("a", "b")),
            "regions": public(region=TEXT),
        },
        table="clinic",
    )
    return frames, declaration


@dataclass(frozen=True)
class Store:
    """A store on disk and the API key of its one analyst, ``a``."""

    db: str
    key: str


#: The budget ``make_store`` gives analyst ``a`` unless told otherwise.
AMPLE = {"epsilon": 1000, "delta": "0.5"}


def make_store(
    directory: Path,
    dataset: str,
    tables: Any,
    schema: Any,
    *,
    budget: Mapping[str, Any] | None = AMPLE,
    file: str = "store.duckdb",
    **register: Any,
) -> Store:
    """Register ``tables`` as ``dataset`` (``register``: the registration's other arguments) in
    a new store ``directory/file``, with analyst ``a`` and ``budget`` (None: no analyst, no key).
    """
    directory.mkdir(parents=True, exist_ok=True)
    db = str(directory / file)
    cur = Curator(db)
    try:
        cur.register_dataset(dataset, tables, schema, **register)
        key = "" if budget is None else cur.add_analyst("a", dataset, **budget)
    finally:
        cur.close()
    return Store(db, key)


def neighbour_pair(root: Path, dataset: str, schema: Any, with_unit: Any, without: Any) -> Any:
    """Two stores of ``dataset`` that differ in one unit: (with it, without it)."""
    return (
        make_store(root / "with_bob", dataset, with_unit, schema),
        make_store(root / "without_bob", dataset, without, schema),
    )


#: Where each store's ledger is and the store's id, by the store file's (path, mtime, size) and
#: the ``--ledger`` choice: a store file that changes (a ledger moved) is looked up again.
_LEDGER_OF: dict[tuple[str, int, int, str | None], tuple[str, str]] = {}


def _ledger_of(db: str) -> tuple[str, str]:
    """(where the ledger of store ``db`` is, the store's id), found as a curator finds them."""
    from infodp.curator.backends.duckdb import DuckDBBackend
    from infodp.curator.store.database import ledger_of
    from infodp.curator.store.ledger_location import chosen_ledger

    stat = os.stat(db)
    key = (str(db), stat.st_mtime_ns, stat.st_size, chosen_ledger())
    if key not in _LEDGER_OF:
        target, store_id = ledger_of(Path(db), DuckDBBackend(db))
        _LEDGER_OF[key] = (str(target), store_id)
    return _LEDGER_OF[key]


def spent(db: str, dataset: str) -> tuple[Fraction, Fraction, int]:
    """Analyst ``a``'s spend on ``dataset``: (ε, δ, ledger entries).

    Read from the store's ledger itself (checked to carry the store's id, as a curator
    checks it), without opening the DuckDB store again each time: a test reads the spend
    before and after every query, and a curator's DuckDB open was most of that cost.
    """
    target, store_id = _ledger_of(db)
    ledger = Ledger(target, store_id=store_id, create=False)
    try:
        b = ledger.budget("a", dataset)
        return b.spent_epsilon, b.spent_delta, len(ledger.entries())
    finally:
        ledger.close()


def spend_diff(
    after: Sequence[tuple[Any, ...]], before: Sequence[tuple[Any, ...]]
) -> list[tuple[Any, ...]]:
    """Per store, what one case added: (spent ε, spent δ, ledger entries)."""
    return [
        tuple(x - y for x, y in zip(a, b, strict=True)) for a, b in zip(after, before, strict=True)
    ]


def library_outcome(store: Store, sql: str, eps: Any, delta: Any) -> tuple[Any, ...]:
    """The library's outcome: ("ok", the cost object) or (the error's class, its message)."""
    cur = Curator(store.db)
    try:
        r = cur.query("a", sql, epsilon=eps, delta=delta)
        return ("ok", r.cost.to_dict())
    except (InfodpError, BudgetExceeded) as err:
        return (type(err).__name__, str(err))
    finally:
        cur.close()


def cli_outcome(store: Store, sql: str, eps: Any, delta: Any, capsys: Any) -> tuple[Any, ...]:
    """``infodp query --json``'s outcome: (0, the cost object) or (exit status, stderr line)."""
    capsys.readouterr()
    args = ["query", "--db", store.db, "--analyst", "a", "--epsilon", str(eps)]
    code = main([*args, "--delta", str(delta), "--json", sql])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 1
    return (0, json.loads(out)["cost"]) if code == 0 else (code, err.strip())


def estimates(servers: Sequence[ServerProcess], pair: Sequence[Store], body: Any) -> list[Any]:
    """Each service's (status, payload) for the free estimate of ``body``."""
    return [
        get_json(srv.port, "POST", "/v1/estimate", body, key=s.key)[:2]
        for srv, s in zip(servers, pair, strict=True)
    ]


@contextmanager
def serving(stores: Mapping[Any, Any], **options: Any) -> Iterator[dict[Any, ServerProcess]]:
    """A running service per store (anything with a ``db`` path), stopped on exit; ``options``
    go to each :class:`ServerProcess`."""
    started = {name: ServerProcess(s.db, **options) for name, s in stores.items()}
    start_all(started.values())
    try:
        yield started
    finally:
        for srv in started.values():
            srv.stop()


_Made = TypeVar("_Made")


class BuiltOnce(Generic[_Made]):
    """Stores built once and copied for each test that writes to its own.

    :meth:`copy` builds ``build(folder)`` the first time ``key`` is asked for, in a folder of
    its own, and copies that folder (files and sub-folders) into the test's ``directory`` (a
    copy takes milliseconds, a registration far longer); it returns what ``build`` returned
    (keys, ...). A module binds :meth:`fixture` to a name: it makes the folder and forgets the
    stores after the module. A session fixture makes one with ``root`` given instead
    (``copied_store`` in tests/conftest.py, the timing test's stores).
    """

    def __init__(self, name: str, root: Path | None = None) -> None:
        self.name = name
        self._root = root
        self._built: dict[Hashable, tuple[Path, _Made]] = {}

    def fixture(self) -> Any:
        """The module's autouse fixture (module scope)."""

        @pytest.fixture(autouse=True, scope="module")
        def _module_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
            self._root = tmp_path_factory.mktemp(self.name)
            yield
            self._built.clear()
            self._root = None

        return _module_folder

    def copy(self, key: Hashable, build: Callable[[Path], _Made], directory: Path) -> _Made:
        """A copy of the store built for ``key`` in ``directory``; what its build returned."""
        if key not in self._built:
            if self._root is None:
                raise RuntimeError(f"{self.name}: bind BuiltOnce.fixture() in the module")
            folder = self._root / f"built{len(self._built)}"
            folder.mkdir()
            self._built[key] = (folder, build(folder))
        folder, made = self._built[key]
        shutil.copytree(folder, directory, dirs_exist_ok=True)
        return made
