"""No ``Any`` in the curator's signatures: parameters, returns and annotated fields say what
they hold (TypedDicts, Protocols, unions, ``object`` where opaque, ``JsonObject`` for JSON).

Parsed with ``ast`` (nothing imported). The few left are listed below with why: an entry that
no longer holds fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CURATOR = Path(__file__).resolve().parents[2] / "src" / "infodp" / "curator"

#: (module, function or field, annotation) still holding Any, and why. None is internal: the
#: three left are the public JSON payloads analysts' code indexes freely (as it does what
#: :func:`json.loads` returns); a backend's handle is the opaque ``ReadConnection``, the
#: ledger's stored JSON a ``JsonObject`` and a PostgreSQL row's values ``object``.
ALLOWED: dict[tuple[str, str, str], str] = {
    ("engine.py", "query_synopsis", "dict[str, Any]"): "public JSON payload",
    ("answer/result.py", "to_dict", "dict[str, Any]"): "public JSON payload",
    ("publish/synopsis.py", "answer", "dict[str, Any]"): "public JSON payload",
}


def _mentions_any(node: ast.expr | None) -> bool:
    return node is not None and any(
        (isinstance(n, ast.Name) and n.id == "Any")
        or (isinstance(n, ast.Attribute) and n.attr == "Any")
        or (isinstance(n, ast.Constant) and isinstance(n.value, str) and "Any" in n.value)
        for n in ast.walk(node)
    )


def any_annotations(source: str) -> list[tuple[str, str]]:
    """(function or field, annotation) of every annotation in ``source`` mentioning Any."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
            anns = [p.annotation for p in params if p is not None] + [node.returns]
            out += [(node.name, ast.unparse(x)) for x in anns if x is not None and _mentions_any(x)]
        elif isinstance(node, ast.AnnAssign) and _mentions_any(node.annotation):
            out.append((ast.unparse(node.target), ast.unparse(node.annotation)))
    return out


@pytest.mark.slow
def test_no_any_in_the_curators_signatures_but_the_listed_ones() -> None:
    found = {
        (path.relative_to(CURATOR).as_posix(), *hit)
        for path in sorted(CURATOR.rglob("*.py"))
        for hit in any_annotations(path.read_text(encoding="utf-8"))
    }
    assert found - set(ALLOWED) == set(), "new Any in the curator's signatures"
    assert set(ALLOWED) - found == set(), "listed as allowed but gone: remove from ALLOWED"


def test_the_scan_has_power() -> None:
    source = (
        "def f(x: Any, *a: int, **k: dict[str, Any]) -> 'Any': ...\n"
        "class C:\n    y: typing.Any\n    z: int\n"
    )
    assert any_annotations(source) == [
        ("f", "Any"),
        ("f", "dict[str, Any]"),
        ("f", "'Any'"),
        ("y", "typing.Any"),
    ]
