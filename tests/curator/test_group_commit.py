"""Group commit: concurrent reservations share one durable transaction and never overspend.

The ledger batches concurrent ``reserve()`` calls of one process into one SQLite transaction
(one fsync), each still checked, in arrival order, against the budget the ones before it left
(basic sequential composition, Dwork & Roth 2014, Thm 3.16: the spend is the exact sum of the
accepted ε's). The references are exact fractions: with costs of 1/32 on a budget of 1,
exactly 32 reservations fit, whatever the interleaving; a refused cost is always larger than
what is left at the end (budgets only shrink); and the hash chain over the entries, checked
by :meth:`Ledger.verify` and again when the file is reopened, stays valid.
"""

from __future__ import annotations

import random
import threading
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from _ledgers import LedgerAt
from infodp.curator.ledger import Ledger, storage
from infodp.errors import BudgetExceeded, ParameterError


def _ledger(path: Path, epsilon: Fraction = Fraction(1)) -> Ledger:
    led = Ledger(path)
    led.register_dataset("t", "{}", rows=3, source="-")
    led.add_analyst("a", "t", epsilon, Fraction(1, 10**6))
    return led


def _race(ledgers: list[Ledger], costs: list[Fraction], analyst: str = "a") -> list[Any]:
    """Thread i reserves costs[i] through ledgers[i % len(ledgers)], all at once."""
    barrier = threading.Barrier(len(costs))
    out: list[Any] = [None] * len(costs)

    def run(i: int) -> None:
        led = ledgers[i % len(ledgers)]
        barrier.wait(timeout=60)
        try:
            out[i] = led.reserve(analyst, "t", f"q{i}", costs[i], Fraction(0), 0.01)
        except BudgetExceeded as err:
            out[i] = err

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(costs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return out


@pytest.mark.parametrize("objects", [1, 8], ids=["shared-ledger", "ledger-per-thread"])
def test_concurrent_reservations_are_exact_and_chained(
    tmp_path: Path, ledger_at: LedgerAt, objects: int
) -> None:
    path = ledger_at(tmp_path / "l.ledger")
    led = _ledger(path)
    ledgers = [led] + [Ledger(path) for _ in range(objects - 1)]
    out = _race(ledgers, [Fraction(1, 32)] * 48)
    accepted = [x for x in out if isinstance(x, int)]
    refused = [x for x in out if isinstance(x, BudgetExceeded)]
    # 1 / (1/32) = 32 exactly, however the threads interleave; the rest are refused.
    assert len(accepted) == 32 and len(refused) == 16
    assert len(set(accepted)) == 32
    b = led.budget("a", "t")
    assert b.spent_epsilon == Fraction(1) and b.remaining_epsilon == 0
    assert sum(e.epsilon for e in led.entries()) == Fraction(1)
    assert led.verify() == []
    for other in ledgers:
        other.close()
    assert Ledger(path, create=False).verify() == []  # reopening checks the chain again


def test_random_costs_never_overspend(tmp_path: Path, ledger_at: LedgerAt) -> None:
    path = ledger_at(tmp_path / "l.ledger")
    led = _ledger(path)
    rng = random.Random(11)
    costs = [Fraction(rng.randint(1, 40), rng.choice([97, 101, 128])) for _ in range(40)]
    out = _race([led, Ledger(path), Ledger(path)], costs)
    spent = sum(c for c, x in zip(costs, out, strict=True) if isinstance(x, int))
    assert spent <= 1
    assert led.budget("a", "t").spent_epsilon == spent
    left = 1 - spent
    # A reservation is refused only when it did not fit: budgets only shrink, so whatever was
    # refused is larger than what is left at the end.
    for c, x in zip(costs, out, strict=True):
        if isinstance(x, BudgetExceeded):
            assert c > left
    assert led.verify() == []


def test_one_transaction_serves_a_whole_group(
    tmp_path: Path, ledger_at: LedgerAt, monkeypatch: Any
) -> None:
    """While one writer holds the ledger, the reservations arriving meanwhile queue and are
    then committed together; a refused one in the middle of the group undoes only itself."""
    path = ledger_at(tmp_path / "l.ledger")
    led = _ledger(path, epsilon=Fraction(1, 2))
    batches: list[int] = []
    real = storage.Database.commit_group

    def counting(self: storage.Database, batch: list[Any]) -> None:
        if self is led.db:  # (not another test's ledger, written by the background writer)
            batches.append(len(batch))
        real(self, batch)

    monkeypatch.setattr(storage.Database, "commit_group", counting)
    writers = storage.writers_of(led.db)  # held: the registry keeps it while in use
    group = storage.group_of(led.db)
    writers.lock.acquire()
    plan: list[tuple[str, Fraction]] = [
        ("a", Fraction(1, 8)),  # the leader: waits for the writer lock alone
        ("a", Fraction(1, 8)),
        ("nobody", Fraction(1, 8)),  # no budget: refused inside the group
        ("a", Fraction(1, 2)),  # does not fit after the two before it: refused
        ("a", Fraction(1, 4)),
    ]
    out: list[Any] = [None] * len(plan)

    def run(i: int) -> None:
        try:
            out[i] = led.reserve(plan[i][0], "t", f"q{i}", plan[i][1], Fraction(0), 0.0)
        except (BudgetExceeded, ParameterError) as err:
            out[i] = err

    threads = [threading.Thread(target=run, args=(0,))]
    threads[0].start()
    deadline = time.monotonic() + 30
    while not batches and time.monotonic() < deadline:
        time.sleep(0.001)
    for i in range(1, len(plan)):  # queued in this order behind the leader
        threads.append(threading.Thread(target=run, args=(i,)))
        threads[-1].start()
        while len(group._queue) < i and time.monotonic() < deadline:
            time.sleep(0.001)
    writers.lock.release()
    for t in threads:
        t.join(timeout=60)
    assert batches == [1, 4]  # five reservations, two transactions
    assert isinstance(out[0], int) and isinstance(out[1], int) and isinstance(out[4], int)
    assert isinstance(out[2], ParameterError) and isinstance(out[3], BudgetExceeded)
    assert led.budget("a", "t").spent_epsilon == Fraction(1, 2)  # 1/8 + 1/8 + 1/4
    assert [e.sql for e in led.entries()] == ["q0", "q1", "q4"]
    assert led.verify() == []
