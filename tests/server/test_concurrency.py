"""Concurrency: 50 clients race to spend one budget over HTTP.

"50 clients race to spend one budget with many small queries; the accepted total never exceeds
the budget and accepted + refused adds up to what was sent." The budget arithmetic is exact
(fractions), so the expected numbers are exact too: basic sequential composition (Dwork & Roth
2014, Thm 3.16) charges the sum of the ε's, and a request is refused only when the remaining
budget is smaller than its cost.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path

import pytest

from _server_harness import ServerProcess, build_store
from infodp.client import ApiError, Client
from infodp.curator.ledger import Ledger
from infodp.errors import BudgetExceeded

CLIENTS = 50
PER_CLIENT = 3
BUDGET = Fraction(2, 5)  # room for 40 queries of 0.01


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, str]]:
    d = tmp_path_factory.mktemp("race")
    db, keys = build_store(d, [("alice", "people", BUDGET)], rows=100)
    with ServerProcess(db) as server:
        yield server, keys["alice"]


def _race(
    url: str, key: str, costs: list[list[str]], table: str = "people"
) -> list[tuple[str, str, object]]:
    """Every client sends its queries as fast as it can, all starting at once."""
    barrier = threading.Barrier(len(costs))
    outcomes: list[tuple[str, str, object]] = []
    lock = threading.Lock()

    def run(mine: list[str]) -> None:
        with Client(url, key, timeout=120) as client:
            barrier.wait(timeout=60)
            for eps in mine:
                try:
                    r = client.query(
                        f"SELECT region, COUNT(*) FROM {table} GROUP BY region", epsilon=eps
                    )
                    outcome: tuple[str, str, object] = ("accepted", eps, r["entry"])
                except BudgetExceeded as err:
                    outcome = ("refused", eps, err.gap)
                except ApiError as err:  # counted, and fails the test below
                    outcome = ("other", eps, err.status)
                except OSError as err:
                    outcome = ("other", eps, repr(err))
                with lock:
                    outcomes.append(outcome)

    threads = [threading.Thread(target=run, args=(c,)) for c in costs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    return outcomes


@pytest.mark.slow  # real server processes
def test_fifty_clients_never_overspend(served: tuple[ServerProcess, str]) -> None:
    server, key = served
    # Mixed small costs: 0.01 and 0.02, alternating between clients.
    costs = [["0.01" if c % 2 == 0 else "0.02"] * PER_CLIENT for c in range(CLIENTS)]
    outcomes = _race(server.url, key, costs)
    sent = CLIENTS * PER_CLIENT
    accepted = [o for o in outcomes if o[0] == "accepted"]
    refused = [o for o in outcomes if o[0] == "refused"]
    others = [o for o in outcomes if o[0] == "other"]
    assert others == []
    assert len(accepted) + len(refused) == sent == len(outcomes)

    spent = sum((Fraction(o[1]) for o in accepted), Fraction(0))
    assert spent <= BUDGET
    # The budget is far smaller than the demand, so some were refused; a request refused for
    # cost c means the remaining budget had already dropped below c, and it only decreases.
    remaining = BUDGET - spent
    assert refused
    assert all(remaining < Fraction(o[1]) for o in refused)

    # The ledger agrees exactly: one released entry per accepted answer, nothing else spent.
    led = Ledger(server.db + ".ledger")
    budget = led.budget("alice", "people")
    assert budget.spent_epsilon == spent
    ids = [int(str(o[2])) for o in accepted]
    assert len(set(ids)) == len(ids)
    entries = {e.id: e for e in led.entries("alice")}
    assert all(entries[i].status == "released" for i in ids)
    spending = [e for e in entries.values() if e.status in ("reserved", "released", "failed")]
    assert sorted(e.id for e in spending) == sorted(ids)
    assert led.check() == []


@pytest.mark.slow  # real server processes
@pytest.mark.parametrize("keep_open", [True, False])
def test_equal_costs_fill_the_budget_exactly(
    copied_store: Callable[..., tuple[str, dict[str, str]]], tmp_path: Path, keep_open: bool
) -> None:
    # With one cost that divides the budget, exactly budget / cost requests pass — whether the
    # workers keep their store connection open or open it per query.
    db, keys = copied_store(tmp_path, [("bob", "visits", "0.1")], rows=40)
    with ServerProcess(db, keep_open=keep_open) as server:
        outcomes = _race(server.url, keys["bob"], [["0.01"] * 2 for _ in range(20)], "visits")
    accepted = [o for o in outcomes if o[0] == "accepted"]
    refused = [o for o in outcomes if o[0] == "refused"]
    assert len(accepted) == 10  # 0.1 / 0.01
    assert len(refused) == 30 and len(outcomes) == 40
    assert Ledger(db + ".ledger").budget("bob", "visits").remaining_epsilon == 0
