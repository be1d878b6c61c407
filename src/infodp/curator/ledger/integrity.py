"""Integrity of the ledger: the entries' hash chain, the verified checkpoint, the seals of
the granted budgets and caps, and the checks that stored totals equal their entries.

- **Chain.** Each entry's ``chain`` is a SHA-256 over the previous link, the store id and its
  immutable fields, so an edited, dropped or corrupted entry breaks it; ``meta.head`` holds
  the last link, so a dropped tail shows too.
- **Seals.** Each grant (an analyst's budget on a dataset: ε, δ, the accountant's budget, key
  hash; a dataset's caps on ε, δ and information) has a SHA-256 seal in ``meta`` over the
  store id and those fields, written in the transaction that grants it. A grant edited by
  hand (a budget raised from 1 to 1000) no longer matches its seal: verification reports it,
  opening refuses the ledger and a reservation against it is refused. Ledgers of format 2
  (before seals) are sealed as found at their first open by this version, after their
  chain and totals verified (their grants were not protected before; see :func:`migrate`).
  A dataset's seal also covers its budget group and its declared independence
  (:mod:`.groups`) when it has them, so the seals of datasets without them read as before.
- **Totals.** The stored spends equal the entries' sums (an entry on a member of a budget
  group counts for the group's root, which holds its budgets), from a verified checkpoint on, so
  an open's cost does not grow with the history; a full verification also replays every
  accountant state from its entries.

These hashes detect edits and corruption, not a forger who recomputes them (the file's
mode 0600 and the host's access control keep others out).

>>> len(chain("", "store", (1, "a", "t"))) == 64
True
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from infodp.curator.ledger import groups
from infodp.curator.ledger.accounts import accountant_of, budget_of, spend_profile
from infodp.curator.ledger.records import BUDGET_COLUMNS, Budget, frac, to_budget
from infodp.errors import InfodpError, LedgerError

__all__ = [
    "FORMAT",
    "SEALED_FORMATS",
    "SPENDING",
    "Checkpoint",
    "analyst_seal",
    "budgets_in",
    "chain",
    "check_accountants",
    "check_seals",
    "check_totals",
    "checkpoint_now",
    "dataset_seal",
    "load_checkpoint",
    "migrate",
    "pair_key",
    "refund_checkpoint",
    "seal_key",
    "stored_format",
    "verify_entries",
]

#: The ledger format this version writes: 5 records which datasets of a budget group each
#: grant covers (``analysts.access``), 4 has budget groups and unit sketches
#: (:mod:`.groups`), 3 seals the grants (2: entries chained only).
FORMAT = "5"
#: The formats whose grants carry seals.
SEALED_FORMATS = ("3", "4", FORMAT)
#: Entry states whose cost is spent (see the package docstring).
SPENDING = ("reserved", "released", "failed")
_ZERO = (Fraction(0), Fraction(0))
#: A row read by column name: a stored row, or the mapping it is written from.
Fields = sqlite3.Row | Mapping[str, object]
#: The (id, chain link) of the last entry a verification covered (None: no entries).
Last = tuple[int, str] | None


def chain(prev: str, store_id: str, fields: Iterable[object]) -> str:
    """SHA-256 link of an entry: the previous link, the store id and its immutable fields."""
    return _hash([prev, store_id, *[str(f) for f in fields]])


def _hash(items: list[str]) -> str:
    return hashlib.sha256(json.dumps(items, ensure_ascii=True).encode()).hexdigest()


def pair_key(analyst: str, dataset: str) -> str:
    """The key of an (analyst, dataset) pair in the checkpoint and the seals."""
    return json.dumps([analyst, dataset])


# -- seals of the grants -----------------------------------------------------------------------

#: The granted (never updated) fields of each table that a seal covers.
_ANALYST_FIELDS = ("name", "dataset", "epsilon", "delta", "budget_json", "key_salt", "key_hash")
_DATASET_FIELDS = ("name", "rows", "source", "info_cap_bits", "max_epsilon", "max_delta")


def seal_key(table: str, row: Fields) -> str:
    """The ``meta`` key of a grant's seal (``table``: analysts or datasets)."""
    if table == "analysts":
        return "seal " + pair_key(str(row["name"]), str(row["dataset"]))
    return "seal " + json.dumps([row["name"]])


def analyst_seal(store_id: str, row: Fields) -> str:
    """The seal of an analysts row (any mapping with its granted fields and ``created``, and
    the datasets it covers when it records them: a row without them seals as before)."""
    items = ["analyst", store_id, *[str(row[f]) for f in (*_ANALYST_FIELDS, "created")]]
    access = _field(row, "access")
    if access is not None:
        items.append("access " + str(access))
    return _hash(items)


def dataset_seal(store_id: str, row: Fields) -> str:
    """The seal of a datasets row (its caps, public facts and ``created``, and its budget
    group and independence when it has them: a row without them seals as before)."""
    items = ["dataset", store_id, *[str(row[f]) for f in (*_DATASET_FIELDS, "created")]]
    group, independent = _field(row, "budget_group"), _field(row, "independent")
    if group is not None:
        items.append("group " + str(group))
    if independent:
        items.append("independent")
    return _hash(items)


def _field(row: Fields, name: str) -> object:
    """``row[name]``, None when the row has no such column (a ledger not yet migrated)."""
    keys = row.keys()
    return row[name] if name in keys else None


def _sealed_rows(conn: sqlite3.Connection) -> Iterable[tuple[str, sqlite3.Row, str]]:
    for row in conn.execute("SELECT * FROM analysts ORDER BY dataset, name"):
        yield seal_key("analysts", row), row, "analyst"
    for row in conn.execute("SELECT * FROM datasets ORDER BY name"):
        yield seal_key("datasets", row), row, "dataset"


def _seal_of(kind: str, store_id: str, row: Fields) -> str:
    return analyst_seal(store_id, row) if kind == "analyst" else dataset_seal(store_id, row)


def check_seals(conn: sqlite3.Connection, store_id: str) -> list[str]:
    """Every grant matches its seal, and every seal has its grant."""
    stored = {
        r["key"]: r["value"]
        for r in conn.execute("SELECT key, value FROM meta WHERE key LIKE 'seal %'")
    }
    problems: list[str] = []
    for key, row, kind in _sealed_rows(conn):
        if stored.pop(key, None) != _seal_of(kind, store_id, row):
            what = f"{row['name']}/{row['dataset']}" if kind == "analyst" else row["name"]
            problems.append(f"the grant of {kind} {what} was edited (its seal does not match)")
    if stored:
        problems.append(f"{len(stored)} granted budget(s) were removed")
    return problems


def migrate(conn: sqlite3.Connection, store_id: str) -> bool:
    """Bring an older ledger to this format (inside a write transaction); True when it did.

    Format 1/2: the grants are sealed as found; format 3 (and 1/2): the budget-group
    columns and the sketches' table are added, every dataset its own group (its seal is
    unchanged); format 4 (and older): the grants' ``access`` column is added, empty (a
    grant without it covers the one dataset it is stored on, its seal unchanged; the groups
    a sketch decided are kept as recorded). A ledger of this format is left alone; a newer
    one is refused.
    """
    found = stored_format(conn)
    if found == FORMAT:
        return False
    if found not in ("1", "2", "3", "4"):
        raise LedgerError(
            f"the ledger is of format {found}, newer than this version of infodp reads "
            f"({FORMAT}); upgrade infodp."
        )
    if found not in SEALED_FORMATS:
        for key, grant, kind in list(_sealed_rows(conn)):
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                (key, _seal_of(kind, store_id, grant)),
            )
    groups.migrate(conn)
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('format', ?)", (FORMAT,))
    return True


# -- the checkpoint ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Entries up to ``id`` were verified (``chain`` is that entry's link) and the spends
    they add up to, per analyst/dataset and per dataset, as exact text."""

    id: int
    chain: str
    analysts: dict[str, list[str]]
    datasets: dict[str, list[str]]

    def to_json(self) -> str:
        """As stored in ``meta.checkpoint``."""
        return json.dumps(
            {
                "id": self.id,
                "chain": self.chain,
                "analysts": self.analysts,
                "datasets": self.datasets,
            }
        )


def load_checkpoint(conn: sqlite3.Connection) -> Checkpoint | None:
    """The verified checkpoint (None: none yet); LedgerError when unreadable."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'checkpoint'").fetchone()
    if row is None:
        return None
    try:
        obj = json.loads(row["value"])
        return Checkpoint(
            int(obj["id"]), str(obj["chain"]), dict(obj["analysts"]), dict(obj["datasets"])
        )
    except (TypeError, ValueError, KeyError):
        raise LedgerError(
            "the ledger's verified checkpoint is unreadable: it was edited or corrupted. "
            "Restore it from a backup, or (data owner) run 'infodp ledger reinit --db STORE "
            "--yes', which forgets all budgets."
        ) from None


def checkpoint_now(conn: sqlite3.Connection, last: sqlite3.Row) -> Checkpoint:
    """A checkpoint at entry ``last`` (id, chain) with the stored spends as its sums."""
    return Checkpoint(
        int(last[0]),
        str(last[1]),
        {
            pair_key(b.analyst, b.dataset): [str(b.spent_epsilon), str(b.spent_delta)]
            for b in budgets_in(conn)
        },
        {
            r["name"]: [r["spent_epsilon"], r["spent_delta"]]
            for r in conn.execute("SELECT name, spent_epsilon, spent_delta FROM datasets")
        },
    )


def refund_checkpoint(
    conn: sqlite3.Connection,
    entry_id: int,
    analyst: str,
    dataset: str,
    cost: tuple[Fraction, Fraction],
) -> None:
    """A cancelled entry at or before the checkpoint leaves the checkpoint's sums."""
    cp = load_checkpoint(conn)
    if cp is None or entry_id > cp.id:
        return
    for table, key in ((cp.analysts, pair_key(analyst, dataset)), (cp.datasets, dataset)):
        eps, dlt = table.get(key, ["0", "0"])
        table[key] = [str(frac(eps) - cost[0]), str(frac(dlt) - cost[1])]
    conn.execute("UPDATE meta SET value = ? WHERE key = 'checkpoint'", (cp.to_json(),))


# -- verification ------------------------------------------------------------------------------


def verify_entries(
    conn: sqlite3.Connection, store_id: str, full: bool
) -> tuple[list[str], int, Last]:
    """(problems, entries verified, last verified (id, chain) or None): the chain from the
    checkpoint (``full``: from the start) on, the head, the totals and the seals; with
    ``full`` also every accountant state."""
    cp = None if full else load_checkpoint(conn)
    if cp is not None and not _checkpoint_holds(conn, cp):
        return [f"the verified entry {cp.id} is missing or was altered"], 0, None
    rows = conn.execute(
        "SELECT id, analyst, dataset, sql, epsilon, delta, info_nats, created, chain, status "
        "FROM entries WHERE id > ? ORDER BY id",
        (0 if cp is None else cp.id,),
    ).fetchall()
    broken = _chain_break(rows, "" if cp is None else cp.chain, store_id)
    if broken is not None:
        return [f"entry {broken} does not match the hash chain"], len(rows), None
    problems = _state_problems(conn, store_id, cp, rows, full)
    last = conn.execute("SELECT id, chain FROM entries ORDER BY id DESC LIMIT 1").fetchone()
    return problems, len(rows), None if last is None else (last["id"], last["chain"])


def _state_problems(
    conn: sqlite3.Connection,
    store_id: str,
    cp: Checkpoint | None,
    rows: list[sqlite3.Row],
    full: bool,
) -> list[str]:
    """What the ledger's state gets wrong beside the chain of ``rows``: the head, the spend
    totals, the seals (of a current-format ledger) and, ``full``, the accountant states."""
    problems = _check_head(conn)
    problems += check_totals(conn) if cp is None else _totals_from(conn, cp, rows)
    if stored_format(conn) in SEALED_FORMATS:
        problems += check_seals(conn, store_id)
    if full:
        problems += check_accountants(conn)
    return problems


def _checkpoint_holds(conn: sqlite3.Connection, cp: Checkpoint) -> bool:
    """The checkpoint's entry is still there with the chain value it verified."""
    row = conn.execute("SELECT chain FROM entries WHERE id = ?", (cp.id,)).fetchone()
    return row is not None and bool(row["chain"] == cp.chain)


def _chain_break(rows: list[sqlite3.Row], prev: str, store_id: str) -> int | None:
    """The id of the first of ``rows`` (after chain value ``prev``) whose chain value is not
    the hash of its predecessor's and its own fields, or None when the chain holds."""
    for row in rows:
        want = chain(prev, store_id, tuple(row)[:8])
        if row["chain"] != want:
            return int(row["id"])
        prev = want
    return None


def stored_format(conn: sqlite3.Connection) -> str:
    """The format the ledger was written in ("2" for ledgers before the format was kept)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    return "2" if row is None else str(row["value"])


def _check_head(conn: sqlite3.Connection) -> list[str]:
    head = conn.execute("SELECT value FROM meta WHERE key = 'head'").fetchone()
    last = conn.execute("SELECT id, chain FROM entries ORDER BY id DESC LIMIT 1").fetchone()
    if head is not None and json.loads(head["value"]) != ([] if last is None else list(last)):
        return ["the last entries are missing (the head of the chain moved back)"]
    return []


def budgets_in(conn: sqlite3.Connection) -> list[Budget]:
    """Every budget, by dataset then analyst."""
    rows = conn.execute(f"SELECT {BUDGET_COLUMNS} FROM analysts ORDER BY dataset, name")
    return [to_budget(r) for r in rows]


def _totals_from(conn: sqlite3.Connection, cp: Checkpoint, rows: list[sqlite3.Row]) -> list[str]:
    """Stored spends equal the checkpoint's sums plus the spending entries after it."""
    per_analyst = {k: (frac(v[0]), frac(v[1])) for k, v in cp.analysts.items()}
    per_dataset = {k: (frac(v[0]), frac(v[1])) for k, v in cp.datasets.items()}
    root = groups.roots(conn)
    for row in rows:
        if row["status"] in SPENDING:
            cost = (frac(row["epsilon"]), frac(row["delta"]))
            group = root.get(row["dataset"], row["dataset"])
            _add(per_analyst, pair_key(row["analyst"], group), cost)
            _add(per_dataset, group, cost)
    return _compare(conn, per_analyst, per_dataset)


def check_totals(conn: sqlite3.Connection) -> list[str]:
    """Stored spends equal the sums of every spending entry (no checkpoint)."""
    per_analyst: dict[str, tuple[Fraction, Fraction]] = {}
    per_dataset: dict[str, tuple[Fraction, Fraction]] = {}
    root = groups.roots(conn)
    for row in conn.execute(
        f"SELECT analyst, dataset, epsilon, delta FROM entries WHERE status IN {SPENDING}"
    ):
        cost = (frac(row["epsilon"]), frac(row["delta"]))
        group = root.get(row["dataset"], row["dataset"])
        _add(per_analyst, pair_key(row["analyst"], group), cost)
        _add(per_dataset, group, cost)
    return _compare(conn, per_analyst, per_dataset)


def _add(
    table: dict[str, tuple[Fraction, Fraction]], key: str, cost: tuple[Fraction, Fraction]
) -> None:
    eps, dlt = table.get(key, _ZERO)
    table[key] = (eps + cost[0], dlt + cost[1])


def _compare(
    conn: sqlite3.Connection,
    per_analyst: dict[str, tuple[Fraction, Fraction]],
    per_dataset: dict[str, tuple[Fraction, Fraction]],
) -> list[str]:
    problems: list[str] = []
    for b in budgets_in(conn):
        want = per_analyst.get(pair_key(b.analyst, b.dataset), _ZERO)
        if (b.spent_epsilon, b.spent_delta) != want:
            problems.append(f"{b.analyst}/{b.dataset}: spent {b.spent_epsilon} != {want[0]}")
        basic = b.accountant_json is None  # else the accountant enforces its currency
        if basic and (b.spent_epsilon > b.epsilon or b.spent_delta > b.delta):
            problems.append(f"{b.analyst}/{b.dataset}: overspent")
    # The dataset totals (caps shared by all analysts) equal their entries' sums.
    for r in conn.execute("SELECT name, spent_epsilon, spent_delta FROM datasets"):
        want = per_dataset.get(r["name"], _ZERO)
        if (frac(r["spent_epsilon"]), frac(r["spent_delta"])) != want:
            problems.append(f"dataset {r['name']}: spent {r['spent_epsilon']} != {want[0]}")
    return problems


def check_accountants(conn: sqlite3.Connection) -> list[str]:
    """Every stored accountant state equals the replay of its spending entries on the
    granted budget."""
    problems: list[str] = []
    for row in conn.execute(
        "SELECT name, dataset, accountant_json, budget_json FROM analysts "
        "WHERE accountant_json IS NOT NULL ORDER BY dataset, name"
    ).fetchall():
        who = f"{row['name']}/{row['dataset']}"
        try:
            same = _replay(conn, row) == accountant_of(row["accountant_json"]).to_json()
        except InfodpError as err:
            problems.append(f"{who}: accountant state unreadable ({err})")
            continue
        if not same:
            problems.append(f"{who}: accountant state != its entries")
    return problems


def _replay(conn: sqlite3.Connection, row: sqlite3.Row) -> str:
    from infodp.accounting.accountant import Accountant

    replay = Accountant(budget_of(row["budget_json"]))
    # The budget is its group's: every entry on a dataset of the group spent it.
    group = groups.members(conn, row["dataset"]) if groups.has_groups(conn) else [row["dataset"]]
    marks = ", ".join("?" * len(group))
    for e in conn.execute(
        f"SELECT profile_json, epsilon, delta FROM entries WHERE analyst = ? "
        f"AND dataset IN ({marks}) AND status IN {SPENDING} ORDER BY id",
        (row["name"], *group),
    ):
        eps, dlt = frac(e["epsilon"]), frac(e["delta"])
        replay._add(spend_profile(e["profile_json"], eps, dlt), (eps, dlt), 1)
    out: str = replay.to_json()
    return out
