"""scipy's submodules, each imported on first use (one home for the lazy scipy imports).

scipy costs about half a second to import; a query that needs no special function, integral,
root or convolution never pays for it. Each name stands for ``scipy.<name>``.

>>> from infodp._scipy import special
>>> float(special.logsumexp([0.0, 0.0])) == __import__("math").log(2.0)
True
"""

from __future__ import annotations

from infodp._lazy import lazy_module

__all__ = ["integrate", "optimize", "signal", "special"]

integrate = lazy_module("scipy.integrate")
optimize = lazy_module("scipy.optimize")
signal = lazy_module("scipy.signal")
special = lazy_module("scipy.special")
