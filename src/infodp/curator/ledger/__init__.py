"""The durable privacy ledger: the only writer of budget state.

A package of one idea per module: :mod:`.storage` (the SQLite file, transactions, WAL,
fsync and group commit; no privacy accounting), :mod:`.flusher` (held completions),
:mod:`.integrity` (hash chain, checkpoint, seals of the grants, verification),
:mod:`.accounts` and :mod:`.charging` (the charging policy of every currency and the
dataset caps), :mod:`.groups` (budget groups: datasets the owner declared to hold the
same people, sharing one set of caps and spend accounts; grants cover the datasets they
name), :mod:`.records` (typed rows read by column name), :mod:`.keys`, :mod:`.synopses`,
:mod:`.completions`, :mod:`.catalog` (the datasets and their groups) and the
:class:`Ledger` façade (:mod:`.facade`). For a fleet of servers the same ledger lives in
PostgreSQL (:mod:`.postgres`, named by a ``postgresql://`` URL; :mod:`.migration` moves a
file into it, :mod:`.leases` settles the reservations of a server that died; see
docs/deployment.md).

Design: budget state lives in a SQLite database next to the DuckDB store
(``<store>.ledger``) in WAL mode with ``synchronous=FULL``, so every commit is fsync'd before
it returns. Each write is one ``BEGIN IMMEDIATE`` transaction: the check "cost ≤ remaining" and
the debit happen under SQLite's single-writer lock, so two processes can never overspend;
``busy_timeout`` plus a retry loop makes a second writer wait instead of failing with a lock
error. The DuckDB file is only ever opened for reading by queries, so it never blocks the ledger.

Life of a query's entry::

    reserve  -> 'reserved'   cost debited and durable, before the data is touched or noise drawn
    cancel   -> 'cancelled'  failure *before* the data was touched: the cost is refunded
    fail     -> 'failed'     failure after the data was touched: the cost stays spent
    complete -> 'released'   the noisy answer left; it is stored with the entry (at once, or
                             held and written shortly after: :meth:`Ledger.complete_later`)

A process killed after ``reserve`` leaves a 'reserved' entry: the budget is lost, privacy is
not. Budgets are exact fractions (ε and δ under basic sequential composition, Dwork & Roth
2014, Thm 3.16, or another currency), stored as text "p/q", so they never drift; every
currency is enforced by :class:`infodp.accounting.Accountant`, whose parsed state is kept in
memory by its exact stored text (never stale: another process's charge is another text).
API keys are 256-bit secrets of which only a salted SHA-256 is stored (a key this long
cannot be brute-forced, so a slow password hash would add nothing).

The ledger belongs to its store: both carry one store id (``meta.store_id`` here, a table in
the DuckDB file, see :mod:`infodp.curator.store.database`). Opening checks the store id, a SHA-256
hash chain over the entries (each entry's ``chain`` hashes the previous one and its own
immutable fields, so an edited, dropped or corrupted entry breaks it), the head of the
chain, the seals of every granted budget and cap (a budget raised by hand stops every charge
against it) and that the stored spends equal the entries' sums — from a verified checkpoint
on, so its cost does not grow with the history (:meth:`Ledger.verify` checks everything and
moves the checkpoint; SQLite's ``quick_check`` runs at open on ledgers up to 4 MiB); any
failure raises :class:`~infodp.errors.LedgerError`. Each reservation re-checks that the file
on disk is still the one opened and carries the same store id, so a ledger deleted or
replaced while a service runs cannot swallow charges. All key state (issued keys,
revocations) lives here too, and the file is created with mode 0600.

>>> import tempfile, os
>>> from fractions import Fraction
>>> led = Ledger(os.path.join(tempfile.mkdtemp(), "s.ledger"))
>>> led.register_dataset("t", '{"table": "t"}', rows=10, source="-")
>>> key = led.add_analyst("alice", "t", Fraction(1), Fraction(0))
>>> led.verify_key("alice", key)
True
>>> e = led.reserve("alice", "t", "SELECT COUNT(*) FROM t", Fraction(1, 4), Fraction(0), 0.5)
>>> str(led.budget("alice", "t").remaining_epsilon)
'3/4'
"""

from __future__ import annotations

import typing as _typing

from infodp._exact import format_fraction
from infodp._lazy import lazy_exports as _lazy_exports
from infodp.curator.ledger.charging import DeclarationChanged
from infodp.curator.ledger.facade import Ledger
from infodp.curator.ledger.records import Budget, DatasetRecord, Entry, KeyRecord

if _typing.TYPE_CHECKING:
    from infodp.curator.ledger.keys import KEY_PREFIX

# Imported on first use (infodp._lazy): a query process makes and checks no API key.
__getattr__, __dir__ = _lazy_exports(__name__, {"KEY_PREFIX": "infodp.curator.ledger.keys"})

__all__ = [
    "KEY_PREFIX",
    "STATUSES",
    "Budget",
    "DatasetRecord",
    "DeclarationChanged",
    "Entry",
    "KeyRecord",
    "Ledger",
    "format_fraction",
]

#: Entry states (see the package docstring).
STATUSES: tuple[str, ...] = ("reserved", "released", "failed", "cancelled")
