"""The rules are the one dispatch on an aggregate's or a measurement's kind (rules/__init__.py).

Checked by parsing every module of the curator, the service and the CLI outside
``curator/rules/`` (``ast``, nothing imported): none compares a kind (``x.kind``, ``x.func``)
with a particular kind, written as a literal (``"quantile"``) or as a member
(``MeasurementKind.QUANTILE``, ``AggregateFunc.COUNT``), alone or in a literal tuple, list or
set. Elsewhere the code reads what the kind's rule says (``measure_for(m).additive``), the
shape the plan declares per kind (``m.kind.histogram``, read by the backends, which may not
know the rules) or a table keyed by kind (the backends' reductions, the synopsis's answers).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from infodp.curator.plan.nodes import MeasurementKind
from infodp.curator.rules import MEASURES

SRC = Path(__file__).resolve().parents[3] / "src" / "infodp"
RULES = SRC / "curator" / "rules"
_KIND_ATTRS = {"kind", "func"}
_ENUMS = {"MeasurementKind", "AggregateFunc"}


def _is_kind(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in _KIND_ATTRS


def _is_particular(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.value.id in _ENUMS
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_particular(e) for e in node.elts)
    return False


def kind_comparisons(source: str) -> list[str]:
    """The comparisons of a kind with a particular kind in ``source`` (as written)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        members = [s for s in sides if _is_particular(s) and isinstance(s, ast.Attribute)]
        if members or (any(_is_kind(s) for s in sides) and any(map(_is_particular, sides))):
            out.append(ast.unparse(node))
    return out


def _modules() -> list[Path]:
    parts = [SRC / "curator", SRC / "server", SRC / "cli"]
    return sorted(p for d in parts for p in d.rglob("*.py") if RULES not in p.parents)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_kind_is_compared_outside_the_rules(path: Path) -> None:
    assert kind_comparisons(path.read_text(encoding="utf-8")) == []


def test_the_scan_has_power() -> None:
    bad = (
        "if m.kind == 'quantile': pass\n"
        "if p.measurement.kind != MeasurementKind.QUANTILE: pass\n"
        "if agg.func in ('count', 'sum'): pass\n"
        "ok = m.kind.histogram and m.kind in TABLE\n"
    )
    assert kind_comparisons(bad) == [
        "m.kind == 'quantile'",
        "p.measurement.kind != MeasurementKind.QUANTILE",
        "agg.func in ('count', 'sum')",
    ]
    # The rules themselves do compare (they are the dispatch), so the scan sees them.
    assert any(kind_comparisons(p.read_text(encoding="utf-8")) for p in RULES.rglob("*.py"))


def test_every_kind_has_one_rule_that_agrees_with_its_declared_shape() -> None:
    assert set(MEASURES) == set(MeasurementKind)
    for kind, measure in MEASURES.items():
        assert measure.kind is kind
        assert measure.additive is not kind.histogram
