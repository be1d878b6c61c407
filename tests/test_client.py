"""The Python client against a real server on loopback ("A small Python client
(infodp.client.Client(url, key)) with the same method names as the library API")."""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Iterator
from fractions import Fraction

import pytest

from _server_harness import ServerProcess, build_store
from infodp.cli import main
from infodp.client import ApiError, Client
from infodp.curator import Curator, Ledger
from infodp.errors import BudgetExceeded, ParameterError

SQL = "SELECT region, COUNT(*) FROM people GROUP BY region"


class Setup:
    def __init__(self, server: ServerProcess, keys: dict[str, str]) -> None:
        self.server = server
        self.keys = keys

    def client(self, who: str = "alice") -> Client:
        return Client(self.server.url, self.keys[who])

    @property
    def ledger(self) -> Ledger:
        return Ledger(self.server.db + ".ledger")


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    d = tmp_path_factory.mktemp("client")
    db, keys = build_store(
        d, [("alice", "people", 3), ("bob", "visits", 1), ("erin", "people", 2)], rows=80
    )
    with ServerProcess(db) as server:
        yield Setup(server, keys)


def test_method_names_are_the_librarys() -> None:
    public = {n for n, _ in inspect.getmembers(Client, inspect.isfunction) if not n.startswith("_")}
    library = {n for n in dir(Curator) if not n.startswith("_")} | {
        n for n in dir(Ledger) if not n.startswith("_")
    }
    # estimate is plan_cost's HTTP form; request and close are the transport.
    assert public - library <= {"estimate", "request", "close"}
    assert {"estimate", "request"} <= public
    for name in ("query", "query_synopsis", "release_synopsis", "schema"):
        assert name in dir(Curator)
    for name in ("budget", "budgets", "entries", "datasets", "synopses"):
        assert name in dir(Ledger)


@pytest.mark.slow  # real server processes
def test_query_returns_the_cli_json_object(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    with setup.client() as c:
        answer = c.query(SQL, epsilon="0.25")
    # The same object as `infodp query --json` (run here on the same store, as erin).
    code = main(
        ["query", "--db", setup.server.db, "--analyst", "erin", "--epsilon", "0.25", SQL, "--json"]
    )
    assert code == 0
    cli = json.loads(capsys.readouterr().out)
    assert set(answer) == set(cli)
    assert set(answer["cost"]) == set(cli["cost"])
    assert answer["columns"] == cli["columns"] == ["region", "COUNT(*)"]
    assert [r[0] for r in answer["rows"]] == ["north", "south", "east", "west"]
    # Cost and remaining are exact: 3 - 1/4 (basic composition, Dwork & Roth 2014, Thm 3.16).
    assert Fraction(answer["cost"]["epsilon_exact"]) == Fraction(1, 4)
    assert Fraction(answer["remaining"]["exact"]["spent_epsilon"]) == Fraction(1, 4)
    assert answer["remaining"]["remaining_epsilon"] <= 2.75


@pytest.mark.slow  # real server processes
def test_estimate_spends_nothing_and_matches_the_discrete_laplace_tail(setup: Setup) -> None:
    led = setup.ledger
    before = led.budget("alice", "people")
    n_entries = len(led.entries("alice"))
    with setup.client() as c:
        est = c.estimate(SQL, epsilon=0.5, confidence=0.9)
    assert led.budget("alice", "people") == before
    assert len(led.entries("alice")) == n_entries
    assert est["fits"] is True and est["cells"] == 4
    (acc,) = est["accuracy"]
    # COUNT with one row per unit: sensitivity 1, scale b = 1/ε = 2. Discrete Laplace
    # P(|Y| > k) = 2 p^(k+1) / (1 + p), p = e^(-1/b) (Canonne, Kamath, Steinke 2020, Def. 3);
    # the half-width is the smallest k with tail ≤ β = 0.1, found here by direct search.
    p = math.exp(-0.5)
    k = 0
    while 2 * p ** (k + 1) / (1 + p) > 0.1:
        k += 1
    assert acc["halfwidth"] == k
    assert acc["noise_scale"] == pytest.approx(2.0)
    # An estimate that does not fit says so (and still spends nothing).
    with setup.client() as c:
        assert c.estimate(SQL, epsilon=100)["fits"] is False
    assert led.budget("alice", "people") == before


@pytest.mark.slow  # real server processes
def test_budget_entries_and_datasets(setup: Setup) -> None:
    with setup.client("bob") as c:
        r = c.query("SELECT COUNT(*) FROM visits", epsilon=Fraction(1, 8))
        budgets = c.budgets()
        assert [b["dataset"] for b in budgets] == ["visits"]
        b = c.budget("visits")
        assert Fraction(b["exact"]["spent_epsilon"]) >= Fraction(1, 8)
        with pytest.raises(ParameterError, match="dataset"):
            c.budget("people")
        entries = c.entries(results=True)
        assert r["entry"] in {e["id"] for e in entries}
        assert all(e["analyst"] == "bob" for e in entries)
        mine = {e["id"]: e for e in entries}[r["entry"]]
        assert mine["result"]["rows"] == r["rows"] and mine["status"] == "released"
        assert c.entries("people") == []
        # Only the datasets bob holds a budget on (people is alice's).
        names = {d["name"] for d in c.datasets()}
        assert names == {"visits"}
        schema = c.schema("visits")
        assert schema["columns"]["region"]["categories"] == ["north", "south", "east", "west"]
        assert schema["columns"]["age"]["bounds"] == [0, 99]
        for other in ("nowhere", "people"):
            with pytest.raises(ApiError) as info:
                c.schema(other)
            assert info.value.status == 404


@pytest.mark.slow  # real server processes
def test_synopsis_release_then_free_queries(setup: Setup) -> None:
    led = setup.ledger
    with setup.client() as c:
        out = c.release_synopsis("by_region", "people", ["region"], epsilon="0.5")
        assert out["cells"] == 4 and out["epsilon"] == pytest.approx(0.5)
        spent = led.budget("alice", "people").spent_epsilon
        assert [s["name"] for s in c.synopses()] == ["by_region"]
        for _ in range(3):
            a = c.query_synopsis("by_region", "SELECT region, COUNT(*) FROM people GROUP BY region")
            assert len(a["rows"]) == 4
        # Post-processing of a released synopsis costs nothing (the non-interactive mode, Dwork &
        # Roth 2014 §2.3).
        assert led.budget("alice", "people").spent_epsilon == spent
        with pytest.raises(ApiError) as info:
            c.query_synopsis("nope", "SELECT COUNT(*) FROM people")
        assert info.value.status == 404 and info.value.code == "not_found"


@pytest.mark.slow  # real server processes
def test_errors_map_to_the_librarys_exceptions(setup: Setup) -> None:
    with setup.client("erin") as c:
        remaining = Fraction(c.budget("people")["exact"]["epsilon"]) - Fraction(
            c.budget("people")["exact"]["spent_epsilon"]
        )
        with pytest.raises(BudgetExceeded) as over:
            c.query(SQL, epsilon=10)
        assert over.value.gap.startswith("epsilon=")
        assert Fraction(over.value.gap.split(",")[0].split("=")[1]) == Fraction(10) - remaining
        with pytest.raises(ParameterError, match="refused SQL construct"):
            c.query("SELECT * FROM people", epsilon=0.1)
        with pytest.raises(ApiError) as info:
            c.query("SELECT COUNT(*) FROM visits", epsilon=0.1)
        assert info.value.status == 403 and info.value.code == "forbidden"
    with Client(setup.server.url, "idp_0123456789abcdef." + "x" * 43) as c:
        with pytest.raises(ApiError) as info:
            c.budgets()
        assert info.value.status == 401 and info.value.code == "unauthorized"


def test_client_validates_its_arguments() -> None:
    with pytest.raises(ParameterError, match="url"):
        Client("localhost:8000", "k")
    with pytest.raises(ParameterError, match="key"):
        Client("http://127.0.0.1:1", "a b")
    with pytest.raises(ParameterError, match="finite decimal"):
        Client("http://127.0.0.1:1", "k").query(SQL, epsilon=Fraction(1, 3))
    assert "k" not in repr(Client("http://127.0.0.1:1", "kkkk")).split("key=")[1]


def test_connection_refused_is_an_oserror() -> None:
    from _server_harness import free_port

    with pytest.raises(OSError), Client(f"http://127.0.0.1:{free_port()}", "k", timeout=5) as c:
        c.budgets()


@pytest.mark.slow  # ~5.7 CPU-s (measured)
def test_estimate_of_an_accountant_currency_agrees_with_the_charge(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # A budget in nats at α = 1 is enforced by the ledger's accountant; the estimate's "fits"
    # is that accountant's dry run, so it agrees with what the ledger then does: the query
    # it says fits is charged, the one it says does not is refused with nothing spent.
    from infodp.accounting.accountant import Budget

    d = tmp_path_factory.mktemp("currency")
    db, _ = build_store(d, [("alice", "people", 1)], rows=20)
    key = Curator(db).add_analyst("nora", "people", budget=Budget.nats(1.0, 0.5))
    with ServerProcess(db) as server, Client(server.url, key) as c:
        est = c.estimate(SQL, epsilon=0.1)
        assert est["fits"] is True and est["remaining"]["currency"] == "nats"
        r = c.query(SQL, epsilon=0.1)  # the ledger decides, and charges
        assert r["entry"] in {e["id"] for e in c.entries()}
        # Information at α = 1 is at most ε (capacity ≤ diameter, "Differential Privacy and
        # Information Theory", 2022), so a spend of 50 nats' worth of ε cannot fit 0.5.
        big = c.estimate(SQL, epsilon=50)
        left = c.budgets()
        with pytest.raises(BudgetExceeded):
            c.query(SQL, epsilon=50)
        assert big["fits"] is False and c.budgets() == left
