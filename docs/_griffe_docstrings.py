"""Docstrings as the API reference shows them (a griffe extension, loaded by mkdocs.yml).

The docstrings are written for ``help()`` and doctest: ``>>>`` examples inline and Sphinx roles
(``:class:`Channel```). Markdown reads the first as quote blocks and leaves the second as text,
so before mkdocstrings renders them this extension

- fences every doctest block as ``pycon`` code (the doctests themselves run unchanged);
- turns each role into a cross-reference when its target is documented on the site, and into
  plain code when it is not (private helpers are not documented, so no link can dangle);
- drops members documented as ``NOT PRIVATE`` (test and audit hooks such as
  ``Curator.exact_aggregates``) from the reference: they are not part of the public API.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|meth|func|mod|attr|data|exc|obj|const):`(~?)([^`<>]+?)(?:\(\))?`")
_PROMPT = re.compile(r"^(\s*)>>>(?: |$)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_INTERNAL = "NOT PRIVATE"


def fence_doctests(text: str) -> str:
    """Wrap each run of ``>>>`` lines and their expected output in a ``pycon`` fence."""
    out: list[str] = []
    lines = text.split("\n")
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            in_fence = not in_fence
        m = None if in_fence else _PROMPT.match(line)
        if m is None:
            out.append(line)
            i += 1
            continue
        indent = m.group(1)
        block = []
        # The example runs to the first blank line (doctest's own rule for expected output).
        while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
            block.append(lines[i][len(indent) :])
            i += 1
        if out and out[-1].strip():
            out.append("")
        out.append(f"{indent}```pycon")
        out.extend(f"{indent}{b}" for b in block)
        out.append(f"{indent}```")
    return "\n".join(out)


def _documented(obj: griffe.Object | griffe.Alias) -> bool:
    doc = obj.docstring.value if obj.docstring else ""
    return _INTERNAL not in doc


class PublicDocstrings(griffe.Extension):
    """Fence doctests, resolve roles, hide members documented as internal."""

    def __init__(self) -> None:
        super().__init__()
        self._public: set[str] = set()

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._collect_public(pkg)
        self._visit(pkg, set())

    # -- which paths the site documents --------------------------------------------------------

    def _collect_public(self, pkg: griffe.Module) -> None:
        for module in public_modules(pkg):
            self._public.add(module.path)
            for name in module.exports or ():
                member = module.members.get(name)
                if member is None:
                    continue
                self._public.add(f"{module.path}.{name}")
                try:
                    target = member.final_target if isinstance(member, griffe.Alias) else member
                except (griffe.AliasResolutionError, griffe.CyclicAliasError):
                    continue
                self._public.add(target.path)
                if target.is_class:
                    for mname in _members(target):
                        if not mname.startswith("_"):
                            self._public.add(f"{target.path}.{mname}")
                            self._public.add(f"{module.path}.{name}.{mname}")

    # -- rewriting ---------------------------------------------------------------------------

    def _visit(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None:
            obj.docstring.value = self._rewrite(obj, obj.docstring.value)
        for name, member in list(obj.members.items()):
            if isinstance(member, griffe.Alias):
                continue
            if obj.is_class and not _documented(member):
                del obj.members[name]
                continue
            self._visit(member, seen)

    def _rewrite(self, obj: griffe.Object, text: str) -> str:
        def role(m: re.Match[str]) -> str:
            tilde, target = m.group(1), m.group(2).strip()
            shown = target.rsplit(".", 1)[-1] if tilde else target
            path = self._resolve(obj, target)
            if path is None:
                return f"`{shown}`"
            return f"[`{shown}`][{path}]"

        return fence_doctests(_ROLE.sub(role, text))

    def _resolve(self, obj: griffe.Object, target: str) -> str | None:
        if target in self._public:
            return target
        scopes: list[griffe.Object] = []
        scope: griffe.Object | None = obj
        while scope is not None:
            scopes.append(scope)
            scope = scope.parent
        head, _, rest = target.partition(".")
        for scope in scopes:
            if scope.is_class and head in _members(scope):
                # An inherited member is documented where it is defined.
                member = scope.all_members[head]
                base = member.target_path if isinstance(member, griffe.Alias) else member.path
                path = f"{base}.{rest}" if rest else base
                if path in self._public:
                    return path
            try:
                base = scope.resolve(head)
            except (griffe.NameResolutionError, ValueError, KeyError):
                continue
            path = f"{base}.{rest}" if rest else base
            if path in self._public:
                return path
        return None


def _members(cls: griffe.Object) -> list[str]:
    """``cls``'s members with the inherited ones when its bases resolve."""
    try:
        return list(cls.all_members)
    except (griffe.AliasResolutionError, griffe.CyclicAliasError, ValueError, KeyError):
        return list(cls.members)


def public_modules(pkg: griffe.Module) -> list[griffe.Module]:
    """The modules whose ``__all__`` is the public API: ``pkg``, each public subpackage and
    each public module directly under ``pkg`` (``infodp.client``, ``infodp.errors``, …).
    Modules inside a subpackage are its implementation; their names are public through the
    subpackage's ``__all__``."""
    found: list[griffe.Module] = []
    stack: list[griffe.Module] = [pkg]
    while stack:
        module = stack.pop()
        if module.exports:
            found.append(module)
        for name, member in module.members.items():
            public = isinstance(member, griffe.Module) and not name.startswith("_")
            if public and (member.is_init_module or member.parent is pkg):
                stack.append(member)
    return sorted(found, key=lambda m: m.path)
