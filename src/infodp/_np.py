"""numpy, imported on first use (one home for the lazy import idiom).

``from infodp._np import np, npt`` stands for ``import numpy as np`` and
``import numpy.typing as npt``: type checkers see the real modules, while at run time each
name is a :func:`~infodp._lazy.lazy_module` stand-in, so a Laplace query that never touches an
array never imports numpy (the CLI's start-up time depends on it).

>>> from infodp._np import np
>>> float(np.sqrt(4.0))
2.0
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from infodp._lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
else:
    np = lazy_module("numpy")
    npt = lazy_module("numpy.typing")

__all__ = ["np", "npt"]
