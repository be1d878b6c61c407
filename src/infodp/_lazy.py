"""Lazy re-exports for package ``__init__`` modules (PEP 562).

A package lists ``name → defining module`` and imports each module only when one of its names
is first used, so ``import infodp.curator`` (the CLI's query path) does not pay for scipy or
matplotlib pulled in by sibling modules it never touches. Type checkers still see the eager
imports, kept under ``if TYPE_CHECKING:`` in the package.

>>> getattr_, dir_ = lazy_exports("pkg", {"sqrt": "math"})
>>> getattr_("sqrt")(9.0), "sqrt" in dir_()
(3.0, True)
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports", "lazy_module", "loaded"]


def lazy_exports(
    package: str, exports: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` re-exporting ``exports`` lazily."""

    def __getattr__(name: str) -> Any:  # noqa: N807 - the PEP 562 hook
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace = sys.modules.get(package)
        if namespace is not None:
            setattr(namespace, name, value)  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:  # noqa: N807
        namespace = sys.modules.get(package)
        own = list(vars(namespace)) if namespace is not None else []
        return sorted(set(own) | set(exports))

    return __getattr__, __dir__


class _LazyModule:
    """A module imported on first attribute access (see :func:`lazy_module`)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        # Only called for names not yet cached on the instance: after the first use of a
        # name, later lookups are plain attribute reads (numpy's names sit in hot loops).
        value = getattr(importlib.import_module(self._name), attr)
        object.__setattr__(self, attr, value)
        return value

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def lazy_module(name: str) -> Any:
    """A stand-in for ``import name`` that imports on first use (scipy costs ~0.5 s).

    :mod:`infodp._np` and :mod:`infodp._scipy` hold the stand-ins the modules on the CLI's
    query path import, so a query that never touches an array never imports numpy.

    >>> special = lazy_module("math")
    >>> special.sqrt(4.0)
    2.0
    """
    return _LazyModule(name)


def loaded(name: str) -> Any:
    """The module ``name`` if some code has imported it already, else None (imports nothing).

    A value can only be, say, a numpy integer if numpy is loaded, so type checks against a
    heavy library's types ask this first:

    >>> loaded("math") is __import__("math"), loaded("no_such_module_here")
    (True, None)
    """
    return sys.modules.get(name)
