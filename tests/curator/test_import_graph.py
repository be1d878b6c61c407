"""The curator's modules import one another one way: no circle, counting every import — at
the top, inside a function (lazy) and under ``TYPE_CHECKING`` (type-only). A record shared by
two steps lives below both; a step that calls back into its caller names what it needs as a
protocol instead of importing the caller."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "infodp.curator"


def _modules(root: Path, package: str) -> dict[str, Path]:
    found = {}
    for path in root.rglob("*.py"):
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        name = name.removesuffix(".__init__")
        if name == package or name.startswith(package + "."):
            found[name] = path
    return found


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The known modules ``name`` imports anywhere in its file."""
    out: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")
                parts = parts[: len(parts) - node.level + (1 if is_package else 0)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        for t in targets:
            while t and t not in known and "." in t:
                t = t.rsplit(".", 1)[0]
            # A module importing its own package's __init__ is how Python loads it, not a use.
            if t in known and t != name and not name.startswith(t + "."):
                out.add(t)
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan 1972)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_scan_sees_a_circle_when_there_is_one(tmp_path: Path) -> None:
    pkg = tmp_path / "infodp" / "curator"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from infodp.curator.b import B\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from infodp.curator.a import A\n"
    )
    (pkg / "c.py").write_text("def f():\n    from . import a\n")
    mods = _modules(tmp_path, PACKAGE)
    graph = {m: _imports(m, p, set(mods)) for m, p in mods.items()}
    assert graph["infodp.curator.c"] == {"infodp.curator.a"}
    assert circles(graph) == [["infodp.curator.a", "infodp.curator.b"]]


@pytest.mark.slow
def test_the_curator_has_no_import_circle() -> None:
    mods = _modules(SRC, PACKAGE)
    assert len(mods) > 40  # the scan reads the real package
    graph = {m: _imports(m, p, set(mods)) for m, p in mods.items()}
    assert sum(len(v) for v in graph.values()) > 100
    assert circles(graph) == []
