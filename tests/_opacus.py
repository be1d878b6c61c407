"""Opacus' accountants (pure numpy/scipy) imported without torch.

Opacus' package ``__init__`` imports torch (its privacy engine); its accountants do not,
except for a type import of ``DPOptimizer``. CI installs ``opacus`` with ``--no-deps``, so the
accountants are loaded from the installed package with that one name stubbed. With torch
installed the real package is imported unchanged.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any


def accountants() -> Any:
    """The ``opacus.accountants`` package."""
    if "opacus" not in sys.modules and importlib.util.find_spec("torch") is None:
        spec = importlib.util.find_spec("opacus")  # finds the package, runs nothing
        assert spec is not None and spec.submodule_search_locations is not None
        package = types.ModuleType("opacus")
        package.__path__ = list(spec.submodule_search_locations)
        optimizers = types.ModuleType("opacus.optimizers")
        optimizers.DPOptimizer = object  # type: ignore[attr-defined]
        sys.modules["opacus"] = package
        sys.modules["opacus.optimizers"] = optimizers
    return importlib.import_module("opacus.accountants")


def utils() -> Any:
    """``opacus.accountants.utils`` (its ``get_noise_multiplier``)."""
    accountants()
    return importlib.import_module("opacus.accountants.utils")
