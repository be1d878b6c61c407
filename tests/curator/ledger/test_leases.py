"""A reservation left open past the lease is settled: 'failed', its cost still spent.

The oracle is the ledger's own arithmetic of exact fractions: settling changes a status and
never a spend, and a reservation younger than the lease is left alone.
"""

from __future__ import annotations

import time
from fractions import Fraction
from pathlib import Path

import pytest

from _ledgers import LedgerAt
from infodp.curator.ledger import Ledger
from infodp.curator.ledger.leases import SETTLED, lease_for

pytestmark = pytest.mark.usefixtures("ledger_kind")


def test_an_expired_reservation_is_settled_with_its_cost_spent(
    tmp_path: Path, ledger_at: LedgerAt
) -> None:
    led = Ledger(ledger_at(tmp_path / "l.ledger"))
    led.register_dataset("t", "{}", rows=3, source="-")
    led.add_analyst("a", "t", Fraction(1), Fraction(0))
    old = led.reserve("a", "t", "q1", Fraction(1, 4), Fraction(0), 0.0)
    done = led.reserve("a", "t", "q2", Fraction(1, 8), Fraction(0), 0.0)
    led.complete(done, {"rows": [[1]]})
    time.sleep(0.2)
    young = led.reserve("a", "t", "q3", Fraction(1, 16), Fraction(0), 0.0)
    assert led.settle_expired(3600.0) == 0  # nothing is that old
    created = {e.id: e.created for e in led.entries()}
    assert created[old] < created[young]
    # A lease that ends between the two reservations: only the older one is settled.
    lease = (time.time() - _epoch(created[old]) + time.time() - _epoch(created[young])) / 2
    assert led.settle_expired(lease) == 1
    status = {e.id: (e.status, e.error) for e in led.entries()}
    assert status == {
        old: ("failed", SETTLED),
        done: ("released", None),
        young: ("reserved", None),
    }
    b = led.budget("a", "t")
    assert b.spent_epsilon == Fraction(1, 4) + Fraction(1, 8) + Fraction(1, 16)
    assert led.verify() == [] and led.check() == []
    assert "lease expired" in SETTLED


def _epoch(stamp: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(stamp).timestamp()


def test_the_lease_outlasts_a_query_and_its_backstop() -> None:
    for timeout in (1.0, 30.0, 300.0):
        assert lease_for(timeout) >= 2 * timeout + 30.0
