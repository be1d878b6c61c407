"""The charging policy: what one reservation checks and debits, and what a cancel refunds.

One spend path for every currency: the analyst's accountant (:mod:`.accounts`) decides
whether the query fits, inside the write transaction; then the dataset's caps, shared by all
analysts, are checked in their own units (ε and δ as exact fractions; information in nats,
the unit it is spent in: a cap declared in bits is converted once, :func:`info_cap_nats`).
A dataset in a budget group (:mod:`.groups`) is charged on its group root's caps and on the
analyst's budget there, in the same transaction; its entry names the dataset queried. The
budget must cover the dataset queried (its sealed ``access``): a grant on one dataset of a
group is never a budget on another.
The granted budget and caps must match their seals (:mod:`.integrity`), so a budget edited
by hand is never charged against.

>>> round(info_cap_nats(1.0), 6)
0.693147
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import math
import os
import sqlite3
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from infodp._exact import format_fraction
from infodp.curator.ledger import accounts, groups, integrity
from infodp.curator.ledger.records import Budget, Entry, frac, text
from infodp.errors import BudgetExceeded, InfodpError, InternalError, LedgerError, ParameterError
from infodp.units import bits_to_nats, nats_to_bits

if TYPE_CHECKING:
    from infodp._jsonable import JsonObject

__all__ = [
    "Charge",
    "DeclarationChanged",
    "charge",
    "info_cap_nats",
    "missing_budget",
    "now",
    "refund",
]


class DeclarationChanged(InfodpError):
    """A reservation was refused because the dataset's declaration (schema, unit_rows_ok)
    in the ledger is not the one its query was priced with; nothing was charged."""


def now() -> str:
    """The time stamp the ledger writes (UTC, milliseconds)."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def info_cap_nats(cap_bits: float) -> float:
    """A dataset's information cap, declared in bits, in nats (the unit it is spent in)."""
    return bits_to_nats(cap_bits)


@dataclass(frozen=True, slots=True)
class Charge:
    """One reservation's request: who, what, and its exact cost."""

    analyst: str
    dataset: str
    sql: str
    epsilon: Fraction
    delta: Fraction
    info_nats: float
    profile_spec: JsonObject | str | None = None
    declaration: tuple[str, bool] | None = None

    @property
    def spec_text(self) -> str | None:
        """The profile spec as the ledger stores it (``json.dumps(spec)``)."""
        spec = self.profile_spec
        return json.dumps(spec) if isinstance(spec, dict) else spec


# The analyst's grant on the group root d, d's totals and caps, the queried dataset q's
# declaration (q is d outside a group), the seals and the entry this one will follow
# (AUTOINCREMENT's next id and the last link), in one read.
_READ = (
    # The sealed fields first (see _check_seals), then what changes with every charge.
    "SELECT a.epsilon, a.delta, a.budget_json, a.key_salt, a.key_hash, a.created, a.access, "
    "d.rows, d.source, d.info_cap_bits, d.max_epsilon, d.max_delta, d.created AS d_created, "
    "d.budget_group, d.independent, "
    "q.rows AS q_rows, q.source AS q_source, q.info_cap_bits AS q_info_cap_bits, "
    "q.max_epsilon AS q_max_epsilon, q.max_delta AS q_max_delta, q.created AS q_created, "
    "q.budget_group AS q_budget_group, q.independent AS q_independent, "
    "(SELECT value FROM meta WHERE key = ?) AS analyst_seal, "
    "(SELECT value FROM meta WHERE key = ?) AS dataset_seal, "
    "(SELECT value FROM meta WHERE key = ?) AS member_seal, "
    "a.spent_epsilon, a.spent_delta, a.accountant_json, d.info_spent_nats, "
    "d.spent_epsilon AS d_spent_epsilon, d.spent_delta AS d_spent_delta, q.schema_json, "
    "q.unit_rows_ok, "
    "(SELECT seq FROM sqlite_sequence WHERE name = 'entries') AS seq, "
    "(SELECT id FROM entries ORDER BY id DESC LIMIT 1) AS last_id, "
    "(SELECT chain FROM entries ORDER BY id DESC LIMIT 1) AS last_chain "
    "FROM analysts a JOIN datasets d ON d.name = a.dataset JOIN datasets q ON q.name = ? "
    "WHERE a.name = ? AND a.dataset = ?"
)
#: How many leading columns of _READ the seals cover (the sealed fields and the seals).
_SEALED = 26


def charge(
    conn: sqlite3.Connection, store_id: str, c: Charge, *, ledger: str
) -> tuple[int, Budget]:
    """Reserve ``c`` inside an open write transaction: (entry id, the budget it leaves).

    ``ledger`` names the ledger ``conn`` is on (its path or URL): copies of one store share
    its id, and each keeps its own registrations.

    Raises :class:`~infodp.errors.BudgetExceeded` when the analyst's budget or a dataset cap
    would be exceeded, :class:`DeclarationChanged` when the dataset's declaration is not
    the priced one, :class:`~infodp.errors.LedgerError` when a grant was edited.
    """
    group = _group_of(conn, (store_id, ledger, c.dataset))
    row = conn.execute(
        _READ, (*_seal_keys(c.analyst, group, c.dataset), c.dataset, c.analyst, group)
    ).fetchone()
    if row is None or not groups.covers(row["access"], group, c.dataset):
        # The group's budget covers only the datasets it was granted on.
        raise missing_budget(conn, c.analyst, c.dataset)
    if (
        c.declaration is not None
        and (row["schema_json"], bool(row["unit_rows_ok"])) != c.declaration
    ):
        raise DeclarationChanged(
            f"the declaration of dataset {c.dataset} changed since the query was priced; "
            "nothing was charged. Ask again."
        )
    if (row["q_budget_group"] or c.dataset) != group:
        _GROUPS.clear()  # a membership changed under this process: never trusted
        raise LedgerError(
            f"the budget group of dataset {c.dataset} changed while in use; nothing was "
            "charged. Run 'infodp ledger verify'."
        )
    _check_seals(row, store_id, c, group)
    b = Budget(
        c.analyst,
        c.dataset,
        frac(row["epsilon"]),
        frac(row["delta"]),
        frac(row["spent_epsilon"]),
        frac(row["spent_delta"]),
        row["accountant_json"],
    )
    # Every currency is enforced by the accountant; its state is taken from the cache of
    # parsed states when the stored text is the one cached (the text is the whole state, so
    # another process's charge shows as a different text: never trusted beyond the disk).
    new_state = accounts.spend(
        b.accountant_json,
        (b.epsilon, b.delta, b.spent_epsilon, b.spent_delta),
        row["budget_json"],
        c.spec_text,
        c.epsilon,
        c.delta,
    )
    new_info = _check_caps(row, c)
    left = Budget(
        c.analyst,
        c.dataset,
        b.epsilon,
        b.delta,
        b.spent_epsilon + c.epsilon,
        b.spent_delta + c.delta,
        b.accountant_json if new_state is None else new_state,
    )
    _debit(conn, row, c, left, new_info, group)
    return _append(conn, row, store_id, c), left


def _check_seals(row: sqlite3.Row, store_id: str, c: Charge, group: str) -> None:
    key = (store_id, c.analyst, c.dataset, group, row[:_SEALED])
    if key in _SOUND:
        return  # the same fields and seals were found sound before: the same hashes
    grant = {k: row[k] for k in _GRANT}
    grant.update(name=c.analyst, dataset=group)
    caps = {k: row[k] for k in (*_CAPS, "budget_group", "independent")}
    caps.update(name=group, created=row["d_created"])
    want: tuple[str, ...] = (
        integrity.analyst_seal(store_id, grant),
        integrity.dataset_seal(store_id, caps),
    )
    got: tuple[object, ...] = (row["analyst_seal"], row["dataset_seal"])
    if group != c.dataset:
        # The member's own row: its membership of the group is sealed with it.
        member = {k: row["q_" + k] for k in (*_CAPS, "budget_group", "independent")}
        member.update(name=c.dataset, created=row["q_created"])
        want += (integrity.dataset_seal(store_id, member),)
        got += (row["member_seal"],)
    if got != want:
        raise LedgerError(
            f"the budget of {c.analyst} on {c.dataset} (or the dataset's caps) was edited "
            "outside infodp; nothing was charged. Run 'infodp ledger verify', and restore the "
            "ledger from a backup."
        )
    if len(_SOUND) >= 1024:
        _SOUND.clear()
    _SOUND.add(key)


#: The group root of each registered dataset, by (store id, ledger, dataset): a membership is
#: fixed at registration, and the charge checks that the row read still names this root. The
#: ledger is part of the key: copies of one store carry its id and may register a dataset
#: differently.
_GROUPS: dict[tuple[str, str, str], str] = {}


def _group_of(conn: sqlite3.Connection, key: tuple[str, str, str]) -> str:
    dataset = key[2]
    group = _GROUPS.get(key)
    if group is None:
        row = conn.execute(
            "SELECT coalesce(budget_group, name) FROM datasets WHERE name = ?", (dataset,)
        ).fetchone()
        if row is None:
            return dataset  # not registered: the read finds nothing and says so
        if len(_GROUPS) >= 1024:
            _GROUPS.clear()
        group = _GROUPS[key] = str(row[0])
    return group


_GRANT = ("epsilon", "delta", "budget_json", "key_salt", "key_hash", "created", "access")
_CAPS = ("rows", "source", "info_cap_bits", "max_epsilon", "max_delta")
#: Grants whose seals were recomputed and matched (the hash of the same text is the same).
_SOUND: set[tuple[object, ...]] = set()


@functools.lru_cache(maxsize=1024)
def _seal_keys(analyst: str, group: str, dataset: str) -> tuple[str, str, str]:
    return (
        "seal " + integrity.pair_key(analyst, group),
        "seal " + json.dumps([group]),
        "seal " + json.dumps([dataset]),
    )


def _check_caps(row: sqlite3.Row, c: Charge) -> float:
    """Refuse a charge over a dataset cap; returns the information spent after it."""
    d_eps, d_dlt = row["d_spent_epsilon"], row["d_spent_delta"]
    max_eps, max_dlt = row["max_epsilon"], row["max_delta"]
    over_eps = max_eps is not None and frac(d_eps) + c.epsilon > frac(max_eps)
    over_dlt = max_dlt is not None and frac(d_dlt) + c.delta > frac(max_dlt)
    if over_eps or over_dlt:
        # The dataset's cap, shared by all analysts (basic composition of every analyst's
        # spend on the same people, Dwork & Roth 2014, Thm 3.16).
        left_eps, left_dlt = _left(max_eps, d_eps), _left(max_dlt, d_dlt)
        gap_eps = Fraction(0) if left_eps is None else max(Fraction(0), c.epsilon - left_eps)
        gap_dlt = Fraction(0) if left_dlt is None else max(Fraction(0), c.delta - left_dlt)
        raise BudgetExceeded(
            f"epsilon={format_fraction(c.epsilon)}, delta={format_fraction(c.delta)}",
            f"epsilon={_shown(left_eps)}, delta={_shown(left_dlt)} "
            f"on dataset {c.dataset} (its cap, shared by all analysts)",
            f"epsilon={format_fraction(gap_eps)}, delta={format_fraction(gap_dlt)}",
        )
    cap, spent = row["info_cap_bits"], row["info_spent_nats"]
    new_spent = _add_up(spent, c.info_nats)
    if cap is not None and new_spent > info_cap_nats(cap):
        left = max(0.0, cap - nats_to_bits(spent))
        raise BudgetExceeded(
            f"{nats_to_bits(c.info_nats):.6g} bits of information about table {c.dataset}",
            f"{left:.6g} bits (dataset cap {cap:g} bits)",
            f"{nats_to_bits(c.info_nats) - left:.6g} bits",
        )
    return new_spent


def _shown(left: Fraction | None) -> str:
    return "unlimited" if left is None else format_fraction(left)


def _left(cap: str | None, spent: str) -> Fraction | None:
    return None if cap is None else max(Fraction(0), frac(cap) - frac(spent))


def _add_up(a: float, b: float) -> float:
    """a + b rounded up (information spent is an upper bound and must not drift down)."""
    s = a + b
    return s if s == 0 else math.nextafter(s, math.inf)


def _debit(
    conn: sqlite3.Connection, row: sqlite3.Row, c: Charge, left: Budget, info: float, group: str
) -> None:
    conn.execute(
        "UPDATE analysts SET spent_epsilon = ?, spent_delta = ?, accountant_json = ? "
        "WHERE name = ? AND dataset = ?",
        (
            text(left.spent_epsilon),
            text(left.spent_delta),
            left.accountant_json,
            c.analyst,
            group,
        ),
    )
    conn.execute(
        "UPDATE datasets SET info_spent_nats = ?, spent_epsilon = ?, spent_delta = ? "
        "WHERE name = ?",
        (
            info,
            text(frac(row["d_spent_epsilon"]) + c.epsilon),
            text(frac(row["d_spent_delta"]) + c.delta),
            group,
        ),
    )


def _append(conn: sqlite3.Connection, row: sqlite3.Row, store_id: str, c: Charge) -> int:
    """Write the entry, linked to the last one, and move the head of the chain to it."""
    # The immutable fields as stored (and read back by the verification): text, and the
    # information cost as a REAL, which holds a Python float exactly.
    fields = (c.analyst, c.dataset, c.sql, str(c.epsilon), str(c.delta), float(c.info_nats), now())
    # The id AUTOINCREMENT would give (one more than any id ever used), so that the entry is
    # written with its link in one statement; the link follows the last entry.
    entry_id = max(row["seq"] or 0, row["last_id"] or 0) + 1
    prev = "" if row["last_id"] is None else row["last_chain"]
    link = integrity.chain(prev, store_id, (entry_id, *fields))
    cur = conn.execute(
        "INSERT INTO entries (id, analyst, dataset, sql, epsilon, delta, info_nats, status, "
        "created, pid, profile_json, chain) VALUES (?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?, ?, ?)",
        (entry_id, *fields, os.getpid(), c.spec_text, link),
    )
    if cur.lastrowid != entry_id:
        raise InternalError("the ledger did not write the entry under its id")
    # The head of the chain: an open that finds fewer entries knows some were dropped.
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('head', ?)",
        (json.dumps([entry_id, link]),),
    )
    return entry_id


def missing_budget(conn: sqlite3.Connection, analyst: str, dataset: str) -> InfodpError:
    """The error for a pair without a budget (naming what is missing): the same whether or
    not ``dataset`` shares the budget group of a dataset the analyst was granted on."""
    row = conn.execute(
        "SELECT access, dataset FROM analysts WHERE name = ? AND dataset = ?",
        (analyst, groups.root_of(conn, dataset)),
    ).fetchone()
    if row is None or not groups.covers(row["access"], row["dataset"], dataset):
        return ParameterError(
            f"analyst {analyst!r} has no budget on dataset {dataset!r}; "
            f"add one with 'infodp analyst add --name {analyst} --dataset {dataset} ...'."
        )
    return InternalError(f"dataset {dataset!r} of analyst {analyst!r} is not registered")


def refund(conn: sqlite3.Connection, e: Entry) -> None:
    """Take a reserved entry's cost back out (its query failed before touching the data)."""
    group = groups.root_of(conn, e.dataset)
    a = conn.execute(
        "SELECT spent_epsilon, spent_delta, accountant_json FROM analysts "
        "WHERE name = ? AND dataset = ?",
        (e.analyst, group),
    ).fetchone()
    if a is None:
        raise missing_budget(conn, e.analyst, e.dataset)
    state = a["accountant_json"]
    if state is not None:
        # The refund is incremental: the accountant takes this one spend back out.
        spec = conn.execute("SELECT profile_json FROM entries WHERE id = ?", (e.id,)).fetchone()
        state = accounts.refund(state, spec["profile_json"], e.epsilon, e.delta)
    conn.execute(
        "UPDATE analysts SET spent_epsilon = ?, spent_delta = ?, accountant_json = ? "
        "WHERE name = ? AND dataset = ?",
        (
            str(frac(a["spent_epsilon"]) - e.epsilon),
            str(frac(a["spent_delta"]) - e.delta),
            state,
            e.analyst,
            group,
        ),
    )
    _refund_dataset(conn, e, group)
    integrity.refund_checkpoint(conn, e.id, e.analyst, group, (e.epsilon, e.delta))


def _refund_dataset(conn: sqlite3.Connection, e: Entry, group: str) -> None:
    d = conn.execute(
        "SELECT spent_epsilon, spent_delta FROM datasets WHERE name = ?", (group,)
    ).fetchone()
    conn.execute(
        "UPDATE datasets SET spent_epsilon = ?, spent_delta = ? WHERE name = ?",
        (
            str(frac(d["spent_epsilon"]) - e.epsilon),
            str(frac(d["spent_delta"]) - e.delta),
            group,
        ),
    )
    if math.isfinite(e.info_nats):
        # An unbounded (infinite) information cost cannot be subtracted (∞ − ∞): the table's
        # information total then stays where it is, which errs on the safe side.
        conn.execute(
            "UPDATE datasets SET info_spent_nats = max(0, info_spent_nats - ?) WHERE name = ?",
            (e.info_nats, group),
        )
