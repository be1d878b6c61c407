"""One entry per engine (src/infodp/_engines.py): no engine's name is written anywhere else.

Outside the backends (``curator/backends/``) and the registry itself, no module writes an
engine's name as a string (docstrings aside, and sqlglot's ``dialect=`` for echoing the
analyst's SQL, which is read in DuckDB's spelling whatever the engine): what depends on the
engine asks its entry. A fake third engine put in the registry is then accepted by every
place that lists or dispatches on engines.
"""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path
from typing import ClassVar

import pandas as pd
import pytest

from infodp import _engines
from infodp._engines import DEFAULT, ENGINES, Engine, engine, external, names
from infodp.curator.backends.base import BACKENDS
from infodp.curator.backends.dialects import DIALECTS
from infodp.curator.engine import Curator
from infodp.errors import ParameterError
from infodp.server.timing import answer_seconds

SRC = Path(__file__).resolve().parents[1] / "src" / "infodp"
SCHEMA = {"table": "t", "privacy_unit": "row", "columns": {"x": {"type": "int", "bounds": [0, 9]}}}


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, kinds)
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }


def engine_names_written(source: str, engines: set[str]) -> list[str]:
    """String literals in ``source`` naming an engine (not docstrings, not ``dialect=``)."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    for call in ast.walk(tree):
        if isinstance(call, ast.Call):
            skip |= {id(k.value) for k in call.keywords if k.arg == "dialect"}
    return [
        f"{n.lineno}: {n.value!r}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and n.value.lower() in engines
        and id(n) not in skip
    ]


def _outside_the_registry() -> list[Path]:
    backends = SRC / "curator" / "backends"
    return sorted(
        p for p in SRC.rglob("*.py") if backends not in p.parents and p != SRC / "_engines.py"
    )


@pytest.mark.parametrize(
    "path", _outside_the_registry(), ids=lambda p: str(p.relative_to(SRC).as_posix())
)
def test_no_engine_name_is_written_outside_the_registry_and_the_backends(path: Path) -> None:
    assert engine_names_written(path.read_text(encoding="utf-8"), set(ENGINES)) == []


def test_the_scan_has_power() -> None:
    source = (
        '"""Docs may say "spark"."""\n'
        'if backend == "spark":\n    pass\n'
        'x = node.sql(dialect="duckdb")\n'
        'y = {"backend": "DuckDB"}\n'
    )
    assert engine_names_written(source, {"spark", "duckdb"}) == ["2: 'spark'", "5: 'DuckDB'"]


def test_the_registry_and_the_dialect_table_name_the_same_engines() -> None:
    assert set(ENGINES) == set(DIALECTS)
    assert BACKENDS == names() == tuple(ENGINES)
    assert DEFAULT.in_store and [e.name for e in ENGINES.values() if e.in_store] == [DEFAULT.name]
    for name in external():
        module, _, cls = engine(name).backend.partition(":")
        assert module.startswith("infodp.curator.backends.") and cls


def test_an_unknown_engine_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match=r"^backend must be one of duckdb, spark; got 'x'\.$"):
        engine("x")
    cur = Curator(tmp_path / "s.duckdb")
    with pytest.raises(ParameterError, match=r"backend must be one of duckdb, spark; got 'x'"):
        cur.register_dataset("t", pd.DataFrame({"x": [1]}), SCHEMA, backend="x")


def test_a_bounded_path_is_refused_with_the_in_store_engine(tmp_path: Path) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    with pytest.raises(
        ParameterError,
        match=r"^bounded_path must be given only with backend='spark'; got '/b/t'\.$",
    ):
        cur.register_dataset(
            "t", pd.DataFrame({"x": [1]}), SCHEMA, backend=DEFAULT.name, bounded_path="/b/t"
        )
    assert cur.ledger.datasets() == []


def test_the_cli_offers_the_registrys_engines() -> None:
    import click

    from infodp.cli.curator import dataset_register

    option = next(p for p in dataset_register.params if p.name == "backend")
    assert isinstance(option.type, click.Choice)
    assert tuple(option.type.choices) == names()
    assert option.default == DEFAULT.name


# -- a third engine is one more entry -------------------------------------------------------------


class _Reached(Exception):
    """The fake engine's backend was asked to register (so everything before accepted it)."""


class _ThirdBackend:
    made: ClassVar[list[tuple[str, dict[str, object]]]] = []

    def __init__(self, store: object, **options: object) -> None:
        self.made.append((str(store), options))

    def register(self, name: str, source: object, schema: object, **kw: object) -> None:
        raise _Reached(f"{name} at {kw.get('bounded_path')}")

    def drop(self, name: str) -> None:
        self.made.append((f"dropped {name}", {}))


@pytest.fixture
def third(monkeypatch: pytest.MonkeyPatch) -> Engine:
    module = types.ModuleType("third_engine_for_tests")
    module.ThirdBackend = _ThirdBackend  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    entry = Engine("third", in_store=False, backend=f"{module.__name__}:ThirdBackend")
    monkeypatch.setitem(_engines.ENGINES, entry.name, entry)
    _ThirdBackend.made.clear()
    return entry


def test_a_third_engine_is_listed_and_found(third: Engine) -> None:
    assert names()[-1] == "third" and engine("third") is third
    assert external() == ("spark", "third")


def test_a_third_engine_is_accepted_by_registration(third: Engine, tmp_path: Path) -> None:
    cur = Curator(tmp_path / "s.duckdb")
    with pytest.raises(_Reached, match=r"^t at /b/t$"):
        cur.register_dataset(
            "t", pd.DataFrame({"x": [1]}), SCHEMA, backend="third", bounded_path="/b/t"
        )
    # Made once with the store's path (no options for it), then asked to drop its copy.
    assert _ThirdBackend.made == [(str(tmp_path / "s.duckdb"), {}), ("dropped t", {})]
    assert cur.ledger.datasets() == []  # nothing registered when the engine failed
    with pytest.raises(
        ParameterError, match=r"given only with backend='spark' or backend='third'; got"
    ):
        cur.register_dataset("t", pd.DataFrame({"x": [1]}), SCHEMA, bounded_path="/b/t")


def test_a_third_engine_is_timed_like_the_external_engines(third: Engine) -> None:
    # answer_seconds(per_table, external_per_table, ...): an external engine's declared time.
    assert answer_seconds(1.0, 30.0, backend="third", tables=2) == 60.0
    assert answer_seconds(1.0, 30.0, backend=DEFAULT.name, tables=2) == 2.0
