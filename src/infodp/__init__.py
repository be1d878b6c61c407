"""infodp: differential privacy measured as information.

A privacy mechanism is a noisy channel from one individual's row to the released output;
infodp measures what it leaks in nats per individual (Rényi channel capacity at level α),
beside the usual ε and δ.

>>> import infodp
>>> infodp.__version__
'0.1.0'
"""

from __future__ import annotations

from infodp.errors import BudgetExceeded, InfodpError, InternalError, LedgerError, ParameterError

__version__ = "0.1.0"

__all__ = [
    "BudgetExceeded",
    "InfodpError",
    "InternalError",
    "LedgerError",
    "ParameterError",
    "__version__",
]
