"""The API reference, generated at build time from the public API (an mkdocs hook).

One page per public module: ``infodp`` and each module below it that declares ``__all__``;
each page documents exactly the names in that ``__all__``, in its order, so the reference
cannot fall behind the code. ``tests/test_docs_site.py`` checks that every public name has its
anchor in the built site.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import griffe
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

_HERE = Path(__file__).resolve().parent


def _extension() -> Any:
    spec = importlib.util.spec_from_file_location(
        "_griffe_docstrings", _HERE / "_griffe_docstrings.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def public_api() -> dict[str, list[str]]:
    """``{module path: its __all__}`` for every public module of infodp (static analysis)."""
    pkg = griffe.load("infodp", search_paths=[str(_HERE.parent / "src")], resolve_aliases=False)
    return {m.path: [str(n) for n in m.exports] for m in _extension().public_modules(pkg)}


def _page(module: str, names: list[str]) -> str:
    lines = [
        f"# `{module}`",
        "",
        f"::: {module}",
        "    options:",
        "      members: false",
        "      show_root_toc_entry: false",
        "",
    ]
    for name in names:
        lines += [f"::: {module}.{name}", ""]
    return "\n".join(lines)


_API: dict[str, list[str]] = {}


def _uri(module: str) -> str:
    return f"reference/{module}.md"


def on_config(config: Any) -> Any:
    api = public_api()
    _API.clear()
    _API.update(api)
    pages: list[Any] = [{"Overview": "reference.md"}]
    pages += [{module: _uri(module)} for module in api]
    nav = config["nav"]
    for i, entry in enumerate(nav):
        if isinstance(entry, dict) and "API reference" in entry:
            nav[i] = {"API reference": pages}
    return config


#: The example notebooks (kept beside the data they read), rendered with their outputs by
#: mkdocs-jupyter, which executes them at build time.
NOTEBOOKS = ("examples/session.ipynb", "examples/explain.ipynb")


# Before mkdocs-jupyter's own on_files (higher priority runs first), so it sees the notebooks.
@event_priority(100)
def on_files(files: Files, config: Any) -> Files:
    for module, names in _API.items():
        files.append(File.generated(config, _uri(module), content=_page(module, names)))
    for notebook in NOTEBOOKS:
        files.append(
            File(
                notebook,
                src_dir=str(_HERE.parent),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return files
