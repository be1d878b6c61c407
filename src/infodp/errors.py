"""Exceptions raised by infodp.

Every error a user can cause is an :class:`InfodpError`; its message names the argument, the
value it received and what is allowed. Private data never appears in a message.

>>> try:
...     raise ParameterError("alpha", -1.0, "a number in [0, inf]")
... except InfodpError as err:
...     print(err)
alpha must be a number in [0, inf]; got -1.0.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BudgetExceeded",
    "InfodpError",
    "InternalError",
    "LedgerError",
    "ParameterError",
    "QueryFailed",
]


class InfodpError(Exception):
    """Base class of every error infodp raises on purpose.

    Every subclass pickles faithfully (same class, message and attributes), whatever its
    ``__init__`` takes: errors cross process boundaries (the service's worker processes).

    >>> import pickle
    >>> err = BudgetExceeded("epsilon=1", "epsilon=0", "epsilon=1")
    >>> again = pickle.loads(pickle.dumps(err))
    >>> type(again).__name__, str(again) == str(err), again.gap
    ('BudgetExceeded', True, 'epsilon=1')
    """

    def __reduce__(self) -> tuple[Any, ...]:
        # Exception's own reduce calls ``cls(*args)``, which breaks for subclasses whose
        # __init__ formats the message from other arguments (BudgetExceeded, QueryFailed...).
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


class ParameterError(InfodpError, ValueError):
    """An argument is outside its declared domain.

    ``ParameterError(name, value, allowed)`` formats the message as
    ``"{name} must be {allowed}; got {value!r}."``; a single string argument is used verbatim.
    """

    def __init__(self, name: str, value: object = None, allowed: str | None = None) -> None:
        message = name if allowed is None else f"{name} must be {allowed}; got {_short(value)}."
        super().__init__(message)
        self.argument = name if allowed is not None else None


class BudgetExceeded(InfodpError):
    """A spend would exceed the remaining privacy budget. Nothing was released."""

    def __init__(self, requested: str, remaining: str, gap: str) -> None:
        super().__init__(
            f"privacy budget exceeded: requested {requested}, remaining {remaining}, "
            f"short by {gap}. Nothing was released."
        )
        self.requested = requested
        self.remaining = remaining
        self.gap = gap


class LedgerError(InfodpError):
    """The ledger of a store is missing, empty, foreign, corrupt or was replaced while in use.

    Every command stops on it (the CLI with exit status 2): budgets are never silently
    forgotten. Only the data owner's explicit ``infodp ledger reinit`` starts a new ledger.
    """


class InternalError(InfodpError, RuntimeError):
    """A broken internal invariant: this is a bug in infodp, please report it."""

    def __init__(self, message: str) -> None:
        super().__init__(f"internal error (this is a bug in infodp): {message}")


class QueryFailed(InfodpError):
    """A query failed after its cost was reserved: the cost stays spent, and the failure is
    reported by this one constant message (its cause could depend on the data)."""

    MESSAGE = (
        "the query failed after its cost was reserved; the cost stays spent. The cause is not "
        "shown: it could depend on the data."
    )

    def __init__(self) -> None:
        super().__init__(self.MESSAGE)


def _rebuild(cls: type[InfodpError], args: tuple[Any, ...], state: dict[str, Any]) -> InfodpError:
    """An error of class ``cls`` with ``args`` and attributes ``state``, without its __init__."""
    err = cls.__new__(cls)
    err.args = args
    err.__dict__.update(state)
    return err


def _short(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
