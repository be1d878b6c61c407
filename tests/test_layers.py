"""The layers go one way (DESIGN.md): nothing imports from a layer above its own.

Checked by parsing every module's imports (``ast``; module-level, function-level and
TYPE_CHECKING imports alike), not by importing anything. The order below is the one the code
keeps: accounting (profiles) sits under mechanisms, since every mechanism's ``profile()``
returns an accounting profile.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "infodp"

#: Top-level packages/modules of infodp by layer (lower imports nothing higher).
LAYERS: list[set[str]] = [
    {
        "_exact",
        "_validate",
        "_format",
        "_lazy",
        "_jsonable",
        "_report",
        "_retry",
        "errors",
        "testing",
        "client",
    },
    {"information"},
    {"channel"},
    {"accounting"},
    {"mechanisms"},
    {"explain", "design", "local"},
    {"curator"},
    {"audit", "server"},
    {"cli"},
]
LEVEL = {name: i for i, names in enumerate(LAYERS) for name in names}


def _part(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "infodp" and len(parts) > 1 else None


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if p != SRC / "__init__.py")


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def test_every_part_has_a_layer() -> None:
    parts = {p.relative_to(SRC).parts[0].removesuffix(".py") for p in _modules()}
    parts.discard("py.typed")
    assert parts <= set(LEVEL), sorted(parts - set(LEVEL))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_imports_upwards(path: Path) -> None:
    own = path.relative_to(SRC).parts[0].removesuffix(".py")
    upward = sorted(
        m
        for m in _imports(path)
        if (target := _part(m)) is not None and target in LEVEL and LEVEL[target] > LEVEL[own]
    )
    assert upward == [], f"{path.relative_to(SRC)} imports from a higher layer: {upward}"


def test_the_check_has_power(tmp_path: Path) -> None:
    bad = tmp_path / "x.py"
    bad.write_text("def f():\n    from infodp.cli._common import emit\n", encoding="utf-8")
    assert "infodp.cli._common" in _imports(bad)
    assert LEVEL["cli"] > LEVEL["curator"]
