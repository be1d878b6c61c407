"""The layers go one way (docs/architecture.md): nothing imports from a layer above its own.

Checked by parsing every module's imports (``ast``; module-level, function-level and
TYPE_CHECKING imports alike), not by importing anything. The order is read from the page's
"Layers go one way" line, so the page and the check cannot drift apart: accounting (profiles)
sits under mechanisms, since every mechanism's ``profile()`` returns an accounting profile.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "infodp"

PAGE = SRC.parents[1] / "docs" / "architecture.md"

#: The private helpers under every layer (the page says so without listing them all).
BASE: set[str] = {
    "_engines",
    "_exact",
    "_validate",
    "_format",
    "_lazy",
    "_np",
    "_scipy",
    "_jsonable",
    "_report",
    "_retry",
    "_per_process",
    "errors",
    "testing",
    "client",
    "units",
}


def layers_of(page: str) -> list[set[str]]:
    """The layer order written on the architecture page ("Layers go one way: a → b/c → ...")."""
    match = re.search(r"Layers go one way: (.*?)\. ", page, re.S)
    assert match is not None, "docs/architecture.md has no 'Layers go one way:' line"
    steps = " ".join(match.group(1).split()).split(" → ")
    return [{name.strip() for name in step.split("/")} for step in steps]


#: Top-level packages/modules of infodp by layer (lower imports nothing higher): the page's.
LAYERS: list[set[str]] = [BASE, *layers_of(PAGE.read_text(encoding="utf-8"))]
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


def test_the_layer_order_is_read_from_the_page() -> None:
    page = "x\nLayers go one way: information → channel/a →\nb → cli. Nothing else."
    assert layers_of(page) == [{"information"}, {"channel", "a"}, {"b"}, {"cli"}]
    assert LAYERS[1:3] == [{"information"}, {"channel"}]
    assert LEVEL["accounting"] < LEVEL["mechanisms"] < LEVEL["curator"] < LEVEL["cli"]


def test_the_check_has_power(tmp_path: Path) -> None:
    bad = tmp_path / "x.py"
    bad.write_text("def f():\n    from infodp.cli._common import emit\n", encoding="utf-8")
    assert "infodp.cli._common" in _imports(bad)
    assert LEVEL["cli"] > LEVEL["curator"]


# -- no reaching into the curator's internals -----------------------------------------------------

#: Packages that use the curator only through its public names (the service, the CLI).
CLIENTS = ("server", "cli")


def _private_imports(path: Path, into: str, exempt: str | None = None) -> list[str]:
    """``from infodp.<into>... import _x`` and imports of a private module under ``into``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [(node.module, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            names = [(a.name, "") for a in node.names]
        else:
            continue
        for module, name in names:
            if not (module == f"infodp.{into}" or module.startswith(f"infodp.{into}.")):
                continue
            if exempt is not None and module.startswith(exempt):
                continue
            parts = module.split(".")[1:]
            if name.startswith("_") or any(p.startswith("_") for p in parts):
                out.append(f"{module}:{name}" if name else module)
    return out


def _curator_private_members() -> set[str]:
    """The private methods and attributes the class ``Curator`` defines."""
    tree = ast.parse((SRC / "curator" / "engine.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Curator")
    names = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    names |= {
        t.attr
        for n in ast.walk(cls)
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    }
    return {n for n in names if n.startswith("_") and not n.endswith("__")}


def _client_modules() -> list[Path]:
    return [p for part in CLIENTS for p in sorted((SRC / part).rglob("*.py"))]


@pytest.mark.parametrize("path", _client_modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_server_and_cli_use_only_the_curators_public_names(path: Path) -> None:
    assert _private_imports(path, "curator") == []
    private = _curator_private_members()
    reached = sorted(
        {
            f"{ast.unparse(n.value)}.{n.attr}"
            for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, ast.Attribute)
            and n.attr in private
            and not (isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"))
        }
    )
    assert reached == [], f"{path.relative_to(SRC)} calls the curator's private members"
    # Keyword arguments naming a private parameter (``Curator(..., _one_shot=True)``).
    keywords = sorted(
        k.arg
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(n, ast.Call)
        for k in n.keywords
        if k.arg is not None and k.arg.startswith("_")
    )
    assert keywords == [], f"{path.relative_to(SRC)} passes private arguments {keywords}"


@pytest.mark.parametrize(
    "path",
    sorted((SRC / "curator" / "backends").rglob("*.py")),
    ids=lambda p: str(p.relative_to(SRC)),
)
def test_backends_use_only_the_curators_public_names(path: Path) -> None:
    # Between backends is the backends' own business; above them, public names only.
    assert _private_imports(path, "curator", exempt="infodp.curator.backends") == []


def test_the_private_name_checks_have_power(tmp_path: Path) -> None:
    bad = tmp_path / "x.py"
    bad.write_text(
        "from infodp.curator.engine import _answer_text\n"
        "import infodp.curator._secret\n"
        "def f(cur):\n    cur._done(cur._open())\n",
        encoding="utf-8",
    )
    assert _private_imports(bad, "curator") == [
        "infodp.curator.engine:_answer_text",
        "infodp.curator._secret",
    ]
    assert {"_book", "_runner", "_connections"} <= _curator_private_members()


# -- the curator's data path (docs/architecture.md) -----------------------------------------------

CURATOR = SRC / "curator"
#: SQL → relation → plan → rules → price → ledger → backend → release → answer: one folder each.
DATA_PATH: list[tuple[str, tuple[str, ...]]] = [
    ("SQL", ("sql",)),
    ("relation", ("relations",)),
    ("plan", ("plan",)),
    ("rules", ("rules",)),
    ("price", ("price",)),
    ("ledger", ("ledger",)),
    ("backend", ("backends",)),
    ("release", ("release",)),
    ("answer", ("answer",)),
]
#: Beside the path: the data owner's declaration and store, the non-interactive releases.
BESIDE = ("declaration", "store", "publish")
#: The fronts (the Curator, the DataFrame session, the demo) and the two records every step
#: passes on: the request and its resolution (parsed once), the released table.
FRONTS = ("engine.py", "session.py", "demo.py", "request.py", "released.py")
#: Steps a step never imports. The ledger knows nothing of queries; a backend knows the plan
#: only (never a price, a rule, the ledger or the noise); nothing before the release reads it.
NEVER: dict[str, set[str]] = {
    "SQL": {"ledger", "backend", "release"},
    # A derived relation is SQL over the stored tables (bounding's expressions), never a
    # price, the ledger or the noise.
    "relation": {"price", "ledger", "release", "answer"},
    "plan": {"SQL", "price", "ledger", "backend", "release", "answer"},
    "rules": {"SQL", "ledger", "backend", "release", "answer"},
    "price": {"backend", "release", "answer"},
    "ledger": {"SQL", "plan", "rules", "price", "backend", "release", "answer"},
    "backend": {"SQL", "relation", "rules", "price", "ledger", "release", "answer"},
    "release": {"SQL"},
    "answer": {"backend", "release"},
}


def _step_of(module: str) -> str | None:
    """The data-path step of ``infodp.curator.<module>`` (None: not on the path)."""
    parts = module.split(".")
    if parts[:2] != ["infodp", "curator"] or len(parts) < 3:
        return None
    for step, names in DATA_PATH:
        if parts[2] in {n.removesuffix(".py") for n in names}:
            return step
    return None


def test_every_step_of_the_data_path_exists_and_the_architecture_page_names_it() -> None:
    page = PAGE.read_text(encoding="utf-8")
    positions = []
    for step, names in DATA_PATH:
        for name in names:
            assert (CURATOR / name).exists(), f"curator/{name} ({step})"
            assert f"curator/{name}" in page, f"docs/architecture.md does not name curator/{name}"
        positions.append(page.index(f"**{step}**"))
    assert positions == sorted(positions), "the page lists the steps out of order"


def test_the_curator_folder_is_laid_out_by_its_steps() -> None:
    # A newcomer reading the folder's names reads the data path: every entry is a step, one of
    # the packages beside it, or a front; the page names each folder.
    entries = {p.name for p in CURATOR.iterdir() if p.name not in ("__init__.py", "__pycache__")}
    steps = {n for _, names in DATA_PATH for n in names}
    assert entries == steps | set(BESIDE) | set(FRONTS), sorted(
        entries ^ (steps | set(BESIDE) | set(FRONTS))
    )
    page = PAGE.read_text(encoding="utf-8")
    for name in BESIDE:
        assert f"curator/{name}/" in page, f"docs/architecture.md does not name curator/{name}/"


@pytest.mark.parametrize(
    "path",
    sorted(p for _, names in DATA_PATH for n in names for p in [CURATOR / n] if p.exists()),
    ids=lambda p: str(p.relative_to(SRC)),
)
def test_the_data_path_steps_import_in_its_direction(path: Path) -> None:
    files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
    own = _step_of("infodp.curator." + path.name.removesuffix(".py"))
    assert own is not None
    wrong = sorted(
        f"{f.relative_to(SRC)} → {m}"
        for f in files
        for m in _imports(f)
        if (step := _step_of(m)) is not None and step in NEVER[own]
    )
    assert wrong == [], wrong


def test_the_data_path_check_has_power(tmp_path: Path) -> None:
    bad = tmp_path / "x.py"
    bad.write_text("from infodp.curator.ledger import Ledger\n", encoding="utf-8")
    assert {_step_of(m) for m in _imports(bad)} == {"ledger"}
    assert "ledger" in NEVER["backend"] and "price" in NEVER["backend"]


# -- which steps walk the plan as a visitor (docs/architecture.md, step 3) -----------------------

_VISITS = {"visit_query_plan", "visit_predicate", "visit_group_key", "visit_output"}


def _visitor_modules() -> set[str]:
    """``curator/...`` modules defining a class with the plan visitor's methods."""
    out = set()
    for path in CURATOR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name != "PlanVisitor":
                methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
                if methods >= _VISITS:
                    out.add(str(path.relative_to(SRC).as_posix()))
    return out


@pytest.mark.slow
def test_the_page_names_the_plan_visitors_the_code_has() -> None:
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    match = re.search(r"Visitors: (.*?)\. Pricing \(`(curator/[^`]+)`\) is a loop", page)
    assert match is not None, "docs/architecture.md no longer says which steps are visitors"
    named = set(re.findall(r"`(curator/[^`]+)`", match.group(1)))
    assert named == _visitor_modules()
    assert match.group(2) not in _visitor_modules()
    assert match.group(2) == "curator/price/cost.py"
