"""The durable ledger: reservation protocol, keys, and real multi-process / SIGKILL behaviour.

"Ledger": a query's cost is reserved durably before any noise is drawn; a crash after
reservation loses budget, never privacy; two processes never overspend and never fail with a
lock error. The references are exact fractions and counts of what the processes released.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

import _stores
from _kill import kill_when_marked, query_stopped_at
from _ledgers import LedgerAt, dump, rows, store_ledger
from _stores import ints, one_table
from infodp.curator.engine import Curator
from infodp.curator.ledger import Ledger, format_fraction
from infodp.errors import BudgetExceeded, InternalError, ParameterError

# Every test on both ledger storages (SQLite, PostgreSQL: tests/conftest.py).
pytestmark = pytest.mark.usefixtures("ledger_kind")

SCHEMA = one_table("t", {"x": ints(0, 9)})


def make_store(tmp_path: Path, epsilon: str = "1") -> Path:
    frame = pd.DataFrame({"x": list(range(10)) * 5})
    return Path(_stores.make_store(tmp_path, "t", frame, SCHEMA, budget={"epsilon": epsilon}).db)


def test_reservation_protocol_and_consistency(tmp_path: Path, ledger_at: LedgerAt) -> None:
    led = Ledger(ledger_at(tmp_path / "l.ledger"))
    led.register_dataset("t", "{}", rows=3, source="-")
    led.add_analyst("a", "t", Fraction(1), Fraction(1, 10**6))
    e1 = led.reserve("a", "t", "q1", Fraction(1, 3), Fraction(0), 0.1)
    e2 = led.reserve("a", "t", "q2", Fraction(1, 3), Fraction(1, 10**6), 0.1)
    led.cancel(e1, "store not opened")
    led.fail(e2, "crash")
    e3 = led.reserve("a", "t", "q3", Fraction(2, 3), Fraction(0), 0.1)
    led.complete(e3, {"rows": [[1]]})
    b = led.budget("a", "t")
    assert b.spent_epsilon == Fraction(1) and b.spent_delta == Fraction(1, 10**6)
    assert [e.status for e in led.entries()] == ["cancelled", "failed", "released"]
    assert led.check() == []
    with pytest.raises(InternalError):
        led.complete(e3, {})
    with pytest.raises(BudgetExceeded) as info:
        led.reserve("a", "t", "q4", Fraction(1, 7), Fraction(0), 0.0)
    assert "requested epsilon=1/7" in str(info.value) and "short by" in str(info.value)
    # refunds restored the information spent too
    assert led.dataset("t").info_spent_nats == pytest.approx(0.2, rel=1e-12)


def test_api_keys_are_only_stored_hashed(tmp_path: Path, ledger_at: LedgerAt) -> None:
    led = Ledger(ledger_at(tmp_path / "k.ledger"))
    led.register_dataset("t", "{}", rows=1, source="-")
    key = led.add_analyst("alice", "t", Fraction(1), Fraction(0))
    assert len(key) >= 40 and led.verify_key("alice", key)
    assert not led.verify_key("alice", key + "x") and not led.verify_key("bob", key)
    assert key not in dump(led)
    with pytest.raises(ParameterError, match="not registered"):
        led.register_dataset("t", "{}", rows=1, source="-")
    with pytest.raises(ParameterError, match="delta"):
        led.add_analyst("bob", "t", Fraction(1), Fraction(2))


def test_format_fraction() -> None:
    assert format_fraction(Fraction(3, 40)) == "0.075"
    assert format_fraction(Fraction(2, 3)).startswith("2/3")


_WORKER = textwrap.dedent(
    """
    import json, sys
    from infodp.curator.engine import Curator
    from infodp.errors import BudgetExceeded
    cur = Curator(sys.argv[1])
    released = refused = 0
    while True:
        try:
            cur.query("a", "SELECT COUNT(*), SUM(x) FROM t", epsilon="0.05")
            released += 1
        except BudgetExceeded:
            refused += 1
            break
    print(json.dumps({"released": released, "refused": refused}))
    """
)


@pytest.mark.slow  # --durations: among the slowest tests of the suite
def test_budget_exhaustion_across_processes(tmp_path: Path) -> None:
    db = make_store(tmp_path, epsilon="1")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(db)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err  # no lock error, no crash: every process ended cleanly
        assert "locked" not in err.lower()
    released = sum(json.loads(out)["released"] for out, _ in outs)
    # 1 / 0.05 = 20 queries exactly, shared between the processes in any way
    assert released == 20
    led = store_ledger(db)
    assert led.budget("a", "t").spent_epsilon == Fraction(1)
    assert led.check() == []
    assert sum(e.status == "released" for e in led.entries()) == 20


# The query stops at "aggregated" and is killed there.
_VICTIM = query_stopped_at("aggregated")


@pytest.mark.slow  # ~0.6 CPU-s (measured)
def test_sigkill_mid_query_leaves_ledger_consistent(tmp_path: Path) -> None:
    db = make_store(tmp_path, epsilon="1")
    marker = tmp_path / "marker"
    out = kill_when_marked(_VICTIM, db, marker)
    assert "RESULT" not in out
    led = store_ledger(db)
    (entry,) = led.entries()
    assert entry.id == int(marker.read_text())
    # spent, and no result
    assert entry.status == "reserved" and entry.result_json is None
    assert led.budget("a", "t").spent_epsilon == Fraction(1, 4)
    assert led.check() == []
    # the store still works after the kill
    r = Curator(db).query("a", "SELECT COUNT(*) FROM t", epsilon="0.25")
    assert len(r.rows) == 1
    assert led.budget("a", "t").spent_epsilon == Fraction(1, 2)


@pytest.mark.slow
def test_accountant_currencies_are_enforced_by_the_ledger(tmp_path: Path) -> None:
    import math

    from infodp.accounting.accountant import Budget

    db = make_store(tmp_path)
    cur = Curator(db)
    cur.add_analyst("n", "t", budget=Budget.nats(1.0, 0.01))
    cur.add_analyst("p", "t", budget=Budget.pure(0.35))
    released = {"n": 0, "p": 0}
    for who in released:
        with pytest.raises(BudgetExceeded):
            for _ in range(100):
                cur.query(who, "SELECT COUNT(*) FROM t", epsilon="0.1")
                released[who] += 1
    # ε-DP has KL at most ε·tanh(ε/2) nats (Cuff & Yu 2016; "DP and Information Theory" (2022) at α
    # = 1):
    # 0.01 / (0.1·tanh(0.05)) = 2.0017 -> 2 queries; pure: 0.35 / 0.1 -> 3 queries
    assert released["n"] == math.floor(0.01 / (0.1 * math.tanh(0.05)))
    assert released["p"] == 3
    budget = cur.ledger.budget("n", "t")
    assert budget.currency == "nats" and budget.to_dict()["accountant"]["remaining"] >= 0
    # a refund (failure before touching the data) rebuilds the accountant without the entry
    led = cur.ledger
    spec = {"mechanism": "pure-dp", "epsilon": 0.04}
    before = led.budget("p", "t").to_dict()["accountant"]["remaining"]
    entry = led.reserve("p", "t", "q", Fraction(1, 25), Fraction(0), 0.0, profile_spec=spec)
    assert led.budget("p", "t").to_dict()["accountant"]["remaining"] < before
    led.cancel(entry, "store not opened")
    assert led.budget("p", "t").to_dict()["accountant"]["remaining"] == before
    assert led.check() == []


def test_budgets_of_one_analyst(tmp_path: Path, ledger_at: LedgerAt) -> None:
    led = Ledger(ledger_at(tmp_path / "l.ledger"))
    for table in ("t", "u"):
        led.register_dataset(table, "{}", rows=3, source="-")
    led.add_analyst("a", "t", Fraction(1), Fraction(0))
    led.add_analyst("b", "t", Fraction(2), Fraction(0))
    led.add_analyst("a", "u", Fraction(3), Fraction(0))
    everyone = led.budgets()
    assert len(everyone) == 3
    assert led.budgets("a") == [b for b in everyone if b.analyst == "a"]
    assert [b.epsilon for b in led.budgets("a")] == [Fraction(1), Fraction(3)]
    assert led.budgets("nobody") == []


# -- completions written after the answer (Ledger.complete_later) --------------------------------


def _stored(db: Path) -> list[tuple[str, str | None]]:
    """(status, result_json) of every entry, read by a connection of its own."""
    return rows(db, "SELECT status, result_json FROM entries ORDER BY id")


@pytest.mark.slow
def test_a_held_completion_is_written_by_reads_close_and_timer(tmp_path: Path) -> None:
    from infodp._jsonable import to_jsonable

    db = make_store(tmp_path)
    cur = Curator(db, keep_open=True)
    r = cur.query("a", "SELECT COUNT(*) FROM t", epsilon="0.25")
    # The ledger's copy is the answer's own payload, whenever it is written.
    (entry,) = cur.ledger.entries()  # a read through the ledger writes what it holds first
    assert entry.status == "released"
    assert json.loads(entry.result_json or "") == to_jsonable(r.to_dict())
    # The timer: nobody reads or closes, and the file still gets it within a few seconds.
    r2 = cur.query("a", "SELECT COUNT(*) FROM t", epsilon="0.25")
    deadline = time.monotonic() + 30
    while _stored(db)[-1][0] != "released":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert json.loads(_stored(db)[-1][1] or "") == to_jsonable(r2.to_dict())
    cur.query("a", "SELECT COUNT(*) FROM t", epsilon="0.25")
    cur.close()  # close writes what is held
    assert [s for s, _ in _stored(db)] == ["released"] * 3
    assert store_ledger(db).check() == []


def test_a_completion_is_finished_once(tmp_path: Path, ledger_at: LedgerAt) -> None:
    led = Ledger(ledger_at(tmp_path / "l.ledger"))
    led.register_dataset("t", "{}", rows=1, source="-")
    led.add_analyst("a", "t", Fraction(1), Fraction(0))
    e = led.reserve("a", "t", "q", Fraction(1, 2), Fraction(0), 0.0)
    led.complete_later(e, "{}")
    with pytest.raises(InternalError):
        led.complete_later(e, "{}")
    with pytest.raises(InternalError):
        led.fail(e, "late")
    led.flush()
    with pytest.raises(InternalError):
        led.complete(e, {})
    assert [x.status for x in led.entries()] == ["released"]
    # Held after it was already written: the flush says so, and still writes the others.
    e2 = led.reserve("a", "t", "q", Fraction(1, 8), Fraction(0), 0.0)
    led.complete_later(e, "{}")
    led.complete_later(e2, '{"x": 1}')
    with pytest.raises(InternalError, match=str(e)):
        led.flush()
    assert [(x.status, x.result_json) for x in led.entries()] == [
        ("released", "{}"),
        ("released", '{"x": 1}'),
    ]


_EXITS = textwrap.dedent(
    """
    import sys
    import infodp.curator.ledger.flusher as flusher
    from infodp.curator.engine import Curator
    flusher.FLUSH_AFTER = 600  # no timer: only the exit writes it
    r = Curator(sys.argv[1]).query("a", "SELECT COUNT(*) FROM t", epsilon="0.25")
    print(r.entry_id, flush=True)
    if sys.argv[2] == "kill":
        import time
        time.sleep(600)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["exit", "kill"])
def test_a_held_completion_at_exit_or_kill(tmp_path: Path, how: str) -> None:
    """A normal exit writes it; a kill leaves the entry 'reserved': charged, no answer kept."""
    db = make_store(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", _EXITS, str(db), how],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip().isdigit(), proc.stderr.read() if proc.stderr else ""
    if how == "kill":
        os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=120)
    ((status, text),) = _stored(db)
    if how == "exit":
        assert proc.returncode == 0 and status == "released" and text is not None
    else:
        assert status == "reserved" and text is None
    led = store_ledger(db)
    assert led.budget("a", "t").spent_epsilon == Fraction(1, 4) and led.check() == []


@pytest.mark.parametrize("nats", [0, 0.1, 1e-300, 2.5e300, float("inf")])
def test_the_chain_hashes_the_fields_as_stored(
    tmp_path: Path, ledger_at: LedgerAt, nats: float
) -> None:
    """The reservation links the entry from the values it inserts; a fresh open and a full
    verification recompute the links from the stored rows, and must agree."""
    path = ledger_at(tmp_path / "l.ledger")
    led = Ledger(path)
    led.register_dataset("t", "{}", rows=1, source="-")
    led.add_analyst("a", "t", Fraction(10), Fraction(0))
    for q in ("q1", "SELECT 'é'"):
        led.reserve("a", "t", q, Fraction(1, 3), Fraction(0), nats, durable=False)
    led.close()
    again = Ledger(path)
    assert again.verify() == [] and len(again.entries()) == 2
