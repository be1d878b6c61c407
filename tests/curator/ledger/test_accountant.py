"""The ledger's accountant state: incremental, exact, and never stale across processes.

The ledger keeps parsed accountant states by their exact stored text, so a reservation
composes only the new charge; a charge made by another process changes the stored text and
is therefore seen by the next reservation (a stale cached state would overspend). A refund
(cancel) takes one spend back out, and the result equals a replay of the surviving entries.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import pytest

from _ledgers import LedgerAt
from infodp.accounting.accountant import Accountant, Budget
from infodp.accounting.spec import profile_from_spec
from infodp.curator.ledger import Ledger
from infodp.errors import BudgetExceeded

# Every test on both ledger storages (SQLite, PostgreSQL: tests/conftest.py).
pytestmark = pytest.mark.usefixtures("ledger_kind")

_PURE = {"mechanism": "pure-dp", "epsilon": 0.25}


def _ledger(path: Path | str, budget: Budget) -> Ledger:
    led = Ledger(path)
    led.register_dataset("t", "{}", rows=3, source="-")
    led.add_analyst(
        "a", "t", budget.epsilon, budget.delta, accountant_json=Accountant(budget).to_json()
    )
    return led


_OTHER = textwrap.dedent(
    """
    import sys
    from fractions import Fraction
    from infodp.curator.ledger import Ledger
    led = Ledger(sys.argv[1], create=False)
    spec = {"mechanism": "pure-dp", "epsilon": 0.25}
    for _ in range(int(sys.argv[2])):
        led.reserve("a", "t", "other", Fraction(1, 4), Fraction(0), 0.0, profile_spec=spec)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("currency", ["basic", "pure", "approx", "zcdp"])
def test_a_charge_by_another_process_is_seen(
    tmp_path: Path, ledger_at: LedgerAt, currency: str
) -> None:
    budget = {
        "basic": Budget.basic("1"),
        "pure": Budget.pure("1"),
        "approx": Budget.approx("1", "0"),
        "zcdp": Budget.zcdp(Fraction(1, 2) * Fraction(1, 4) ** 2 * 4),  # four ε = 1/4 spends
    }[currency]
    path = ledger_at(tmp_path / "l.ledger")
    led = Ledger(path)
    led.register_dataset("t", "{}", rows=3, source="-")
    state = None if currency == "basic" else Accountant(budget).to_json()
    led.add_analyst("a", "t", Fraction(1), Fraction(0), accountant_json=state)
    # this process charges (and caches its state), another process charges twice more
    led.reserve("a", "t", "mine", Fraction(1, 4), Fraction(0), 0.0, profile_spec=_PURE)
    subprocess.run([sys.executable, "-c", _OTHER, str(path), "2"], check=True, timeout=120)
    led.reserve("a", "t", "mine", Fraction(1, 4), Fraction(0), 0.0, profile_spec=_PURE)
    with pytest.raises(BudgetExceeded):  # 4 × 1/4 spent: a stale state would admit a fifth
        led.reserve("a", "t", "mine", Fraction(1, 4), Fraction(0), 0.0, profile_spec=_PURE)
    b = led.budget("a", "t")
    assert b.spent_epsilon == Fraction(1)
    if state is not None:
        acc = Accountant.from_json(b.accountant_json or "")
        assert len(acc.spent()) == 4


def test_cancel_refunds_to_the_replay_of_the_surviving_entries(
    tmp_path: Path, ledger_at: LedgerAt
) -> None:
    budget = Budget.approx("1", "1e-6")
    led = _ledger(ledger_at(tmp_path / "l.ledger"), budget)
    specs = [
        {"mechanism": "discrete-gaussian", "sigma": 60.0},
        {"mechanism": "pure-dp", "epsilon": 0.1},
        {"mechanism": "discrete-gaussian", "sigma": 60.0},
    ]
    gauss, pure = (Fraction(1, 10), Fraction(1, 10**8)), (Fraction(1, 10), Fraction(0))
    costs = [gauss, pure, gauss]
    ids = [
        led.reserve("a", "t", f"q{i}", eps, dlt, 0.0, profile_spec=spec)
        for i, (spec, (eps, dlt)) in enumerate(zip(specs, costs, strict=True))
    ]
    led.cancel(ids[1], "store not opened")
    replay = Accountant(budget)
    for i in (0, 2):
        eps, dlt = costs[i]
        replay.spend(profile_from_spec(specs[i]), epsilon=eps, delta=dlt)
    stored = led.budget("a", "t").accountant_json
    assert stored == replay.to_json()
    assert json.loads(stored or "")["spent"][0]["count"] == 2  # identical spends merged
    assert led.verify() == []


def test_a_basic_budget_refuses_a_profile_that_misses_its_declaration_every_time(
    tmp_path: Path,
    ledger_at: LedgerAt,
) -> None:
    """A basic budget charges the declared (ε, δ); the accountant first checks that the
    query's profile meets it (a pure 0.25-DP spend declared as ε = 1/8 is refused), and that
    check, remembered per (profile, ε, δ) once passed, is never skipped for one that failed."""
    from infodp.errors import ParameterError

    led = Ledger(ledger_at(tmp_path / "s.ledger"))
    led.register_dataset("t", "{}", rows=3, source="-")
    led.add_analyst("a", "t", Fraction(1), Fraction(0))
    for _ in range(2):
        with pytest.raises(ParameterError, match="guarantee the profile meets"):
            led.reserve("a", "t", "q", Fraction(1, 8), Fraction(0), 0.0, profile_spec=_PURE)
    for i in range(4):  # the same profile at its own ε: four fit exactly in 1
        led.reserve("a", "t", f"q{i}", Fraction(1, 4), Fraction(0), 0.0, profile_spec=_PURE)
    with pytest.raises(BudgetExceeded):
        led.reserve("a", "t", "q5", Fraction(1, 4), Fraction(0), 0.0, profile_spec=_PURE)
    assert led.budget("a", "t").spent_epsilon == 1
    assert led.check() == []
