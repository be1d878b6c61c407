"""``/v1/estimate`` says whether a query fits the caller's budget, in every currency, at the
boundary, over HTTP against a real server.

The verdict is the accountant's dry run (``Accountant.can_spend``); each test checks it
against an independent closed form of the currency's composition rule for one
``SELECT COUNT(*)`` (sensitivity 1, one measurement taking the whole ε, discrete Laplace noise
of scale 1/ε), on both sides of the edge of a fresh budget.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest

from _server_harness import ServerProcess, build_store, get_json
from infodp.accounting.accountant import Budget
from infodp.curator.engine import Curator

# Every test here asks a real server process: slow.
pytestmark = pytest.mark.slow

SQL = "SELECT COUNT(*) FROM people"

#: Analysts with one budget each, in every currency the accountant keeps.
BUDGETS: dict[str, Budget] = {
    "pure": Budget.pure(1),
    "approx": Budget.approx(1, "1e-3"),
    "rdp": Budget.rdp([math.inf], [1]),
    "zcdp": Budget.zcdp("0.5"),
    "nats": Budget.nats(math.inf, 1),
}


class World:
    def __init__(self, port: int, keys: dict[str, str]) -> None:
        self.port, self.keys = port, keys

    def estimate(self, who: str, epsilon: str, **extra: Any) -> tuple[int, dict[str, Any]]:
        body = {"sql": SQL, "epsilon": epsilon, **extra}
        status, payload, _ = get_json(self.port, "POST", "/v1/estimate", body, key=self.keys[who])
        return status, payload


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    d = tmp_path_factory.mktemp("fits")
    db, keys = build_store(d, [("basic", "people", 1), ("stranger", "visits", 1)], rows=40)
    cur = Curator(db)
    for name, budget in BUDGETS.items():
        keys[name] = cur.add_analyst(name, "people", budget=budget)
    cur.close()
    with ServerProcess(db) as server:
        yield World(server.port, keys)


def _fits(world: World, who: str, epsilon: str) -> Any:
    status, payload = world.estimate(who, epsilon)
    assert status == 200, payload
    assert payload["remaining"]["currency"] == who
    return payload["fits"]


def test_basic_and_pure_fit_up_to_the_budget_exactly(world: World) -> None:
    # Basic composition (Dwork & Roth 2014, Thm 3.16): a spend of ε fits a fresh budget of 1
    # exactly when ε ≤ 1; the exact declared ε is compared, so 1 + 1e-9 does not fit.
    for who in ("basic", "pure"):
        assert _fits(world, who, "1") is True
        assert _fits(world, who, "1.000000001") is False


def test_rdp_at_infinite_order_is_pure_epsilon(world: World) -> None:
    # ε-DP is (∞, ε)-RDP (Mironov 2017, Prop. 3): a curve of 1 at α = ∞ holds ε ≤ 1.
    assert _fits(world, "rdp", "1") is True
    assert _fits(world, "rdp", "1.000000001") is False


def test_information_at_infinite_level_is_pure_epsilon(world: World) -> None:
    # At α = ∞ the information of an ε-DP spend is at most its diameter ε ("Differential
    # Privacy and Information Theory", 2022: capacity ≤ diameter): 1 nat holds ε ≤ 1.
    assert _fits(world, "nats", "1") is True
    assert _fits(world, "nats", "1.000000001") is False


def test_zcdp_charges_half_epsilon_squared(world: World) -> None:
    # A pure ε-DP spend is ε²/2-zCDP (Bun & Steinke 2016, Prop. 1.4): ρ = 1/2 holds ε ≤ 1.
    assert Fraction(1) ** 2 / 2 == Fraction(1, 2)
    assert _fits(world, "zcdp", "1") is True
    assert _fits(world, "zcdp", "1.0001") is False


def _discrete_laplace_delta(eps_budget: float, eps_query: float) -> float:
    """δ(ε) of discrete Laplace noise of scale 1/ε' on a sensitivity-1 count.

    The privacy loss of neighbours k and k+1 is ±ε' (Canonne, Kamath & Steinke 2020, §2 for
    the discrete Laplace), +ε' with probability P(X ≤ 0) = 1/(1 + e^{-ε'}); then
    δ(ε) = E[(1 − e^{ε − L})₊] (Balle & Wang 2018, Thm 5) = (1 − e^{ε−ε'}) / (1 + e^{−ε'}).
    """
    return (1 - math.exp(eps_budget - eps_query)) / (1 + math.exp(-eps_query))


def test_approx_fits_where_the_tight_delta_is_below_the_budget(world: World) -> None:
    # Budget (1, 1e-3): a single spend fits iff its δ(1) ≤ 1e-3 (tight composition).
    inside, outside = "1.0005", "1.003"
    assert _discrete_laplace_delta(1.0, float(inside)) < 0.5e-3
    assert _discrete_laplace_delta(1.0, float(outside)) > 2e-3
    assert _fits(world, "approx", "1") is True
    assert _fits(world, "approx", inside) is True
    assert _fits(world, "approx", outside) is False


def test_the_estimate_spends_nothing(world: World) -> None:
    for _ in range(3):
        assert _fits(world, "pure", "1") is True


def test_no_budget_on_the_dataset_is_403_before_the_query_is_read(world: World) -> None:
    # The same body for a dataset of others and one that does not exist; a query naming an
    # unknown column of it is refused for the budget, not for the column (no schema leaks).
    bodies = []
    for sql in (SQL, "SELECT SUM(secret) FROM people", "SELECT COUNT(*) FROM nowhere"):
        status, payload, _ = get_json(
            world.port,
            "POST",
            "/v1/estimate",
            {"sql": sql, "epsilon": 1},
            key=world.keys["stranger"],
        )
        assert status == 403 and payload["error"]["code"] == "forbidden"
        bodies.append(payload["error"]["message"].replace("nowhere", "people"))
        status, _, _ = get_json(
            world.port, "POST", "/v1/query", {"sql": sql, "epsilon": 1}, key=world.keys["stranger"]
        )
        assert status == 403
    assert len(set(bodies)) == 1
