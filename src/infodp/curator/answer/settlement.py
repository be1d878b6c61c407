"""Recording a reserved query's outcome in the ledger, and the answer an analyst receives.

After the reservation a failure can depend on the data (a row reaching an expression, the time
a statement takes): the analyst sees one constant :class:`~infodp.errors.QueryFailed`, whatever
its cause, and the charge stays; the cause goes to the ledger only. Only a store that could not
be opened (:class:`~infodp.curator.answer.result.StoreNotOpened`) refunds the reservation. A success
is recorded with the answer's text (the one renderer, :mod:`infodp.curator.answer.render`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from infodp.curator.answer.render import answer_text
from infodp.curator.answer.result import QueryResult, Released, Reservation, StoreNotOpened
from infodp.curator.ledger import Ledger
from infodp.errors import QueryFailed

__all__ = ["Settlement"]

_T = TypeVar("_T")


class Settlement:
    """Turns a reservation's release into the analyst's answer and records the outcome."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def result_text(self, reserved: Reservation, released: Released) -> tuple[QueryResult, str]:
        """The answer and its text (the one renderer), which the ledger stores as its copy."""
        result = self.result(reserved, released)
        return result, answer_text(result.to_dict())

    def result(self, reserved: Reservation, released: Released) -> QueryResult:
        """The answer of a release, with the remaining budget after its reservation."""
        # As the reservation left it (no second read), or read now when another process or
        # object made it.
        remaining = self.ledger.budget_after(reserved.entry) or self.ledger.budget(
            reserved.analyst, reserved.plan.table
        )
        return QueryResult(
            released.columns,
            released.rows,
            released.intervals,
            reserved.confidence,
            reserved.cost,
            remaining,
            reserved.entry,
            reserved.leakage,
            released.notes,
            released.noisy,
        )

    def settle(
        self,
        reserved: Reservation,
        produce: Callable[[], tuple[_T, str | Callable[[], str]]],
        *,
        later: bool = False,
    ) -> _T:
        """``produce()`` → (value, payload); records the payload (or the failure) in the ledger
        (``later``: written after the answer is handed back, see :meth:`Ledger.complete_later`).
        """
        entry = reserved.entry
        try:
            value, payload = produce()
        except StoreNotOpened as err:
            self.ledger.cancel(entry, str(err))
            # In this process, the opening error itself (as before the split).
            raise (err.__cause__ or err) from None
        except BaseException as err:
            raise self.failed(entry, err) from None
        if later:
            self.ledger.complete_later(entry, payload)
        else:
            self.ledger.complete(entry, payload if isinstance(payload, str) else payload())
        return value

    def failed(self, entry: int, err: BaseException) -> BaseException:
        """Record a failure after the reservation; what the caller raises instead."""
        self.ledger.fail(entry, f"{type(err).__name__}: {err}"[:500])
        # Only interrupts (KeyboardInterrupt, SystemExit) pass through as themselves.
        return QueryFailed() if isinstance(err, Exception) else err
