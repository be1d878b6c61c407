"""Fixtures shared by the CLI tests."""

from __future__ import annotations

import gc
import itertools
import json
import shutil
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from _cli_store import PEOPLE_SCHEMA, PeopleFiles, RegisteredStore, RegisterStore, write_people


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """The apps ``infodp serve`` would have run: uvicorn's Server.run is replaced (the socket
    is bound, on a free port, but nothing is served)."""
    import uvicorn

    apps: list[Any] = []

    def run(server: Any, sockets: Any = None) -> None:
        apps.append(server.config.app)
        server.started = True

    monkeypatch.setattr(uvicorn.Server, "run", run)
    interval = sys.getswitchinterval()
    yield apps
    sys.setswitchinterval(interval)
    for app in apps:
        app.state.service.close()


@pytest.fixture
def people_files(tmp_path: Path) -> PeopleFiles:
    """The files of :class:`PeopleFiles` in ``tmp_path``, nothing registered."""
    return write_people(tmp_path, PEOPLE_SCHEMA)


@pytest.fixture(scope="session")
def _registered_templates() -> dict[tuple[object, ...], tuple[Path, RegisteredStore]]:
    """The stores ``registered_store`` has made in this session, by what was asked."""
    return {}


@pytest.fixture
def registered_store(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    _registered_templates: dict[tuple[object, ...], tuple[Path, RegisteredStore]],
) -> RegisterStore:
    """Make a store in ``tmp_path`` as a user would: ``infodp dataset register`` of a dataset
    (by default the 400 people of :class:`PeopleFiles` under :data:`PEOPLE_SCHEMA`), then
    ``infodp analyst add --json`` for each analyst with the budget flags given (by default
    ``A`` with ``--epsilon 1``). Both must succeed.

    Each different request runs the commands once per test session, in a directory of its own;
    every test gets a copy of those files (the store, its ledger, the source and the schema)
    in its ``tmp_path`` (a second store of the same test in ``tmp_path/store2``, …), so that no
    test sees another's spending.
    """
    from infodp.cli import main

    calls = itertools.count(1)

    def run(*args: str) -> str:
        code = main(list(args))
        out, err = capsys.readouterr()
        assert code == 0, err
        return out

    def make(
        *,
        analysts: Mapping[str, Sequence[str]] = MappingProxyType({"A": ("--epsilon", "1")}),
        dataset: str = "people",
        schema: str = PEOPLE_SCHEMA,
        source: Path | None = None,
    ) -> RegisteredStore:
        wanted = (dataset, schema, source, tuple((a, tuple(b)) for a, b in analysts.items()))
        if wanted not in _registered_templates:
            directory = tmp_path_factory.mktemp("registered")
            files = write_people(directory, schema, source)
            run("dataset", "register", "--db", files.db, "--name", dataset,
                "--source", files.source, "--schema", files.schema)  # fmt: skip
            keys = {}
            for name, budget in analysts.items():
                out = run("analyst", "add", "--db", files.db, "--name", name,
                          "--dataset", dataset, *budget, "--json")  # fmt: skip
                keys[name] = json.loads(out)["api_key"]
            # The commands leave the ledger's SQLite connection to the garbage collector; close
            # it, so that the files copied are the store at rest (no -wal or -shm file).
            gc.collect()
            made = RegisteredStore(**vars(files), dataset=dataset, keys=MappingProxyType(keys))
            _registered_templates[wanted] = (directory, made)
        directory, made = _registered_templates[wanted]
        n = next(calls)
        target = tmp_path if n == 1 else tmp_path / f"store{n}"
        shutil.copytree(directory, target, dirs_exist_ok=True)
        here = {f: str(target / Path(getattr(made, f)).name) for f in ("db", "source", "schema")}
        return RegisteredStore(**here, dataset=dataset, keys=made.keys)

    return make
