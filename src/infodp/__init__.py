"""infodp: differential privacy measured as information.

A privacy mechanism is a noisy channel from one individual's row to the released output;
infodp measures what it leaks in nats per individual (Rényi channel capacity at level α),
beside the usual ε and δ.

>>> import infodp
>>> infodp.__version__
'0.1.0'
"""

from __future__ import annotations

import typing as _typing

from infodp.errors import BudgetExceeded, InfodpError, InternalError, LedgerError, ParameterError

if _typing.TYPE_CHECKING:
    from infodp.curator.session import Session

__version__ = "0.1.0"


def __getattr__(name: str) -> _typing.Any:
    # ``infodp.Session`` is imported on first use, so ``import infodp`` stays light (the CLI
    # start-up time depends on it).
    if name == "Session":
        from infodp.curator.session import Session

        return Session
    raise AttributeError(f"module 'infodp' has no attribute {name!r}")


__all__ = [
    "BudgetExceeded",
    "InfodpError",
    "InternalError",
    "LedgerError",
    "ParameterError",
    "Session",
    "__version__",
]
