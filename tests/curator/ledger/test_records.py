"""Typed records: every budget figure shown is the accountant's own; rows read by name.

An approx budget's ``remaining_delta`` used to show the simple sum δ − Σδᵢ (6.8e-6 below)
while the accountant, which enforces the budget, leaves much less: four Gaussian spends
declared (1/2, 8e-7) each sum to ε = 2 > 1, so the sum bound does not apply at the budget's
ε and the tight composition is what counts.
"""

from __future__ import annotations

import math
import sqlite3
from fractions import Fraction
from pathlib import Path

from scipy.stats import norm

from infodp.accounting.accountant import Accountant, Budget
from infodp.accounting.spec import profile_from_spec
from infodp.curator.ledger import Ledger
from infodp.curator.ledger.records import BUDGET_COLUMNS, to_budget

SIGMA = 8.153  # the Gaussian (sensitivity 1) that is (1/2, 8e-7)-DP (checked below)
SPEC = {"mechanism": "gaussian", "sigma": SIGMA}
EPS, DELTA = Fraction(1, 2), Fraction(8, 10**7)


def _gaussian_delta(epsilon: float, sigma: float) -> float:
    """δ(ε) of the Gaussian mechanism with sensitivity 1 (Balle & Wang 2018, Thm 8)."""
    return float(
        norm.cdf(-epsilon * sigma + 1 / (2 * sigma))
        - math.exp(epsilon) * norm.cdf(-epsilon * sigma - 1 / (2 * sigma))
    )


def _approx_ledger(path: Path, spends: int) -> Ledger:
    led = Ledger(path)
    led.register_dataset("t", "{}", rows=3, source="-")
    state = Accountant(Budget.approx(1, "1e-5")).to_json()
    led.add_analyst("a", "t", Fraction(1), Fraction(1, 10**5), accountant_json=state)
    for i in range(spends):
        led.reserve("a", "t", f"q{i}", EPS, DELTA, 0.0, profile_spec=SPEC)
    return led


def test_remaining_delta_of_an_approx_budget_is_the_accountants(tmp_path: Path) -> None:
    assert _gaussian_delta(0.5, SIGMA) <= 8e-7  # each spend meets its declaration
    b = _approx_ledger(tmp_path / "l.ledger", 4).budget("a", "t")
    # The accountant's own figure, from an accountant fed the same four spends directly.
    acc = Accountant(Budget.approx(1, "1e-5"))
    for _ in range(4):
        acc.spend(profile_from_spec(SPEC), epsilon=EPS, delta=DELTA)
    left = acc.remaining()
    assert isinstance(left, dict)
    shown = b.to_dict()
    assert shown["remaining_delta"] == left["delta"] == float(b.remaining_delta)
    assert shown["remaining_epsilon"] <= 1 - left["epsilon_spent"]
    assert shown["remaining_delta"] != float(b.delta - b.spent_delta)  # not the sum (6.8e-6)
    # Never more than is truly left: four Gaussians compose to one with σ/2 (Dong, Roth &
    # Su 2022, Cor. 3.3), whose exact δ(ε = 1) is Balle & Wang's.
    assert shown["remaining_delta"] <= 1e-5 - _gaussian_delta(1.0, SIGMA / 2)
    assert float(b.delta - b.spent_delta) > 1e-5 - 4 * 8e-7 - 1e-12  # what was shown before


def test_an_untouched_approx_budget_shows_all_of_it(tmp_path: Path) -> None:
    b = _approx_ledger(tmp_path / "l.ledger", 0).budget("a", "t")
    fresh = Accountant(Budget.approx(1, "1e-5")).remaining()
    assert isinstance(fresh, dict) and fresh["epsilon_spent"] == 0
    assert b.remaining_epsilon == 1 and float(b.remaining_delta) == fresh["delta"]
    assert 0.999999 * 1e-5 < fresh["delta"] <= 1e-5  # rounded down, never up


def test_basic_budgets_show_their_exact_sums(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "l.ledger")
    led.register_dataset("t", "{}", rows=3, source="-")
    led.add_analyst("a", "t", Fraction(1), Fraction(1, 100))
    led.reserve("a", "t", "q", Fraction(1, 3), Fraction(1, 300), 0.0)
    b = led.budget("a", "t")
    assert (b.remaining_epsilon, b.remaining_delta) == (Fraction(2, 3), Fraction(2, 300))


def test_records_are_read_by_column_name(tmp_path: Path) -> None:
    """A row whose columns come in another order gives the same record."""
    path = tmp_path / "l.ledger"
    led = Ledger(path)
    led.register_dataset("t", "{}", rows=3, source="-")
    led.add_analyst("a", "t", Fraction(1), Fraction(0))
    led.reserve("a", "t", "q", Fraction(1, 4), Fraction(0), 0.0)
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    reordered = ", ".join(reversed([c.strip() for c in BUDGET_COLUMNS.split(",")]))
    row = conn.execute(f"SELECT {reordered} FROM analysts").fetchone()
    conn.close()
    assert to_budget(row) == led.budget("a", "t")
