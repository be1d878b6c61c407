"""The documentation site builds without a warning and its API reference is complete.

The site is built as scripts/test.sh builds it (the notebooks executed, their outputs shown).
The public API is read here by importing each public module and its ``__all__`` (the
reference pages are generated from a static reading of the same, docs/_reference_pages.py):
every name must have its anchor in the built site, examples must render as code, no Sphinx
role may be left as text, and members documented as internal must not be listed.
"""

from __future__ import annotations

import html
import importlib
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import infodp

ROOT = Path(__file__).resolve().parent.parent
# Builds the whole site (and runs the notebooks when not cached): not part of the quick tier.
pytestmark = pytest.mark.slow


def _public_modules() -> list[str]:
    """``infodp``, its public subpackages (recursively) and its public top-level modules."""
    found = ["infodp"]
    stack = ["infodp"]
    while stack:
        name = stack.pop()
        module = importlib.import_module(name)
        for info in pkgutil.iter_modules(module.__path__, prefix=f"{name}."):
            if info.name.rsplit(".", 1)[-1].startswith("_"):
                continue
            if info.ispkg:
                found.append(info.name)
                stack.append(info.name)
            elif name == "infodp":
                found.append(info.name)
    return sorted(m for m in found if getattr(importlib.import_module(m), "__all__", None))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # scripts/test.sh has just built the site with --strict (a warning fails that step, so
    # its log mentions none) and names it here: the same build is not made twice.
    built = os.environ.get("INFODP_BUILT_SITE")
    if built and (Path(built) / "index.html").is_file():
        return Path(built)
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    # --strict turns every warning into exit status 1; the log must not even mention one
    # (mkdocs logs "WARNING -  …"; the notebook kernel's own start-up notices are not ours).
    assert proc.returncode == 0, proc.stderr
    assert not re.search(r"^WARNING\s+-", proc.stderr, re.MULTILINE), proc.stderr
    return out


def test_every_public_name_has_its_anchor(site: Path) -> None:
    modules = _public_modules()
    assert {"infodp", "infodp.channel", "infodp.design", "infodp.local", "infodp.client"} <= set(
        modules
    )
    missing = []
    total = 0
    for module in modules:
        page = (site / "reference" / module / "index.html").read_text()
        for name in importlib.import_module(module).__all__:
            total += 1
            if f'id="{module}.{name}"' not in page:
                missing.append(f"{module}.{name}")
    assert missing == []
    assert total >= 164  # the count of public names when the reference was made complete


def test_reference_renders_examples_roles_and_hides_internals(site: Path) -> None:
    pages = sorted((site / "reference").rglob("index.html"))
    text = "\n".join(p.read_text() for p in pages)
    # Doctest examples are highlighted code, never quote blocks.
    assert '<span class="gp">&gt;&gt;&gt; </span>' in text
    quoted = re.findall(r"<blockquote>(.*?)</blockquote>", text, re.DOTALL)
    assert not [q for q in quoted if "&gt;&gt;&gt;" in q]
    # No Sphinx role is left as text.
    assert not re.search(r":(class|meth|func|mod|attr|data|exc):`", html.unescape(text))
    # A role to a documented object became a link to its anchor.
    assert 'href="#infodp.mechanisms.RandomSource"' in text
    # A member documented as NOT PRIVATE is not part of the public API.
    assert "exact_aggregates" not in text
    assert "NOT PRIVATE: for tests" not in text
    assert infodp.__version__


def test_docs_gate_is_not_quiet() -> None:
    # scripts/test.sh must show (and fail on) the build's warnings.
    script = (ROOT / "scripts" / "test.sh").read_text()
    line = next(x for x in script.splitlines() if "mkdocs build" in x)
    assert "--strict" in line
    assert "--quiet" not in line
    assert " -q" not in line


def test_notebooks_are_rendered_with_their_outputs(site: Path) -> None:
    # Executed at build time (mkdocs-jupyter, allow_errors false): the outputs are in the page.
    session = html.unescape((site / "examples" / "session" / "index.html").read_text())
    assert "Out[2]" in session
    assert re.search(r"ε 0\.5 spent", session)  # the query's own summary line
    assert "north" in session and "AVG(income)_low" in session  # the DataFrame's table
    explain = html.unescape((site / "examples" / "explain" / "index.html").read_text())
    assert "attacker success" in explain and "What does this ε mean?" in explain


def test_every_tutorial_is_linked_from_the_home_page_and_the_nav() -> None:
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\((tutorials/[^)#]+\.md)\)", home))
    tutorials = {f"tutorials/{p.name}" for p in (ROOT / "docs" / "tutorials").glob("*.md")}
    assert len(tutorials) >= 5
    assert tutorials - linked == set(), "tutorials missing from docs/index.md"
    assert linked - tutorials == set(), "docs/index.md links tutorials that do not exist"
    for page in tutorials:
        assert f": {page}\n" in nav, page


def test_docs_extras_install_what_the_notebooks_import() -> None:
    # The documented build (pip install ".[docs,notebooks]", then mkdocs build --strict) runs
    # the notebooks; polars converts to and from pandas through pyarrow, so it must be there.
    import json
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    names = {re.split(r"[<>=\[ ]", r, maxsplit=1)[0] for r in extras["docs"] + extras["notebooks"]}
    imported: set[str] = set()
    for notebook in (ROOT / "examples").glob("*.ipynb"):
        for cell in json.loads(notebook.read_text())["cells"]:
            if cell["cell_type"] == "code":
                code = "".join(cell["source"])
                imported |= set(re.findall(r"^\s*(?:import|from)\s+(\w+)", code, re.MULTILINE))
    assert "polars" in imported  # what this test is about; else it checks nothing
    assert "polars" in names and "pyarrow" in names
    # Import names as distribution names (IPython is the ipython distribution); pandas and
    # numpy come with the package itself.
    third_party = {m.lower() for m in imported} - {"infodp", "json", "math", "pathlib", "os"}
    assert third_party - {"pandas", "numpy"} <= names, third_party
    readme = (ROOT / "README.md").read_text()
    assert '".[docs,notebooks]"' in readme
