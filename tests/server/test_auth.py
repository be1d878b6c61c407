"""Authentication and isolation of the HTTP service, against a real server on loopback.

Required: "missing, malformed, wrong, revoked keys → 401; analyst A cannot read or spend B's
budget; admin routes refuse analyst keys"; only salted hashes are stored; keys are created and
revoked with the admin CLI, never over the analyst API.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from _server_harness import ServerProcess, build_store, get_json
from infodp.cli import main
from infodp.curator.ledger import Ledger, format_fraction
from infodp.server.auth import KeyStore, key_store_path

# Every test here asks a real server process (one per module, its workers too): slow.
pytestmark = pytest.mark.slow

ADMIN_TOKEN = "admin-Qm7xT2vLp9RkW4sZb8NcY3hJ"  # random characters: enough entropy

ANALYST_ROUTES = [
    ("GET", "/v1/datasets", None),
    ("GET", "/v1/datasets/people", None),
    ("GET", "/v1/budget", None),
    ("GET", "/v1/ledger", None),
    ("GET", "/v1/synopses", None),
    ("POST", "/v1/query", {"sql": "SELECT COUNT(*) FROM people", "epsilon": 0.1}),
    ("POST", "/v1/estimate", {"sql": "SELECT COUNT(*) FROM people", "epsilon": 0.1}),
    (
        "POST",
        "/v1/synopses",
        {"name": "s", "dataset": "people", "columns": ["region"], "epsilon": 0.1},
    ),
    ("POST", "/v1/synopses/s/query", {"sql": "SELECT COUNT(*) FROM people"}),
    (
        "POST",
        "/v1/synopses/synthetic",
        {"name": "f", "dataset": "people", "epsilon": 0.1, "delta": 1e-6},
    ),
]
ADMIN_ROUTES = ["/v1/admin/ledger", "/v1/admin/keys"]


class World:
    def __init__(self, db: str, keys: dict[str, str], server: ServerProcess, alice2: str):
        self.db = db
        self.keys = keys
        self.server = server
        self.alice_server_key = alice2

    @property
    def port(self) -> int:
        return self.server.port

    def call(self, method: str, path: str, body: Any = None, key: str | None = None) -> Any:
        return get_json(self.port, method, path, body, key=key)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    d = tmp_path_factory.mktemp("auth")
    db, keys = build_store(
        d,
        [
            ("alice", "people", 5),
            ("bob", "visits", 5),
            ("carol", "people", 5),
            ("dave", "people", 5),
        ],
    )
    alice_server_key = KeyStore(key_store_path(db)).issue("alice")
    token_file = d / "admin.token"
    token_file.write_text(ADMIN_TOKEN + "\n")
    token_file.chmod(0o600)  # a token others can read is refused
    with ServerProcess(db, admin_token_file=str(token_file)) as server:
        yield World(db, keys, server, alice_server_key)


def _is_error(payload: dict[str, Any], code: str) -> bool:
    err = payload.get("error")
    return isinstance(err, dict) and err.get("code") == code and bool(err.get("message"))


# -- 401: missing, malformed, wrong, revoked ------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "body"), ANALYST_ROUTES)
def test_missing_key_is_401_on_every_analyst_route(
    world: World, method: str, path: str, body: Any
) -> None:
    status, payload, headers = world.call(method, path, body)
    assert status == 401
    assert _is_error(payload, "unauthorized")
    assert headers.get("www-authenticate") == "Bearer"


MALFORMED = "malformed Authorization header: expected 'Bearer <key>'"
UNKNOWN = (
    "unknown API key: not a key issued by this service, or revoked "
    "(keys come from 'infodp analyst add' or 'infodp analyst key')"
)


@pytest.mark.parametrize(
    "header",
    [
        "Basic YWxpY2U6cGFzcw==",
        "Bearer",
        "Bearer ",
        "Bearer a b",
        "Bearer a,b",
        "Token " + "a" * 43,
        "Bearer " + "é" * 43,
    ],
)
def test_malformed_authorization_is_401(world: World, header: str) -> None:
    status, payload, _ = get_json(
        world.port, "GET", "/v1/budget", headers={"Authorization": header}
    )
    assert status == 401 and _is_error(payload, "unauthorized")
    assert payload["error"]["message"] == MALFORMED


@pytest.mark.parametrize(
    "token",
    [
        "nope",
        "idp_nothex.secret",
        "a" * 42,  # one character short of a ledger key
        "abc.def-ghi_jkl~mno+pqr/stu==",  # every character RFC 6750 allows in a token
    ],
)
def test_well_formed_token_that_is_no_key_is_unknown(world: World, token: str) -> None:
    status, payload, headers = world.call("GET", "/v1/budget", key=token)
    assert status == 401 and _is_error(payload, "unauthorized")
    assert payload["error"]["message"] == UNKNOWN
    assert headers.get("www-authenticate") == "Bearer"


def test_wrong_keys_are_401(world: World) -> None:
    key_id = world.alice_server_key.split(".")[0]
    wrong_secret = key_id + "." + secrets.token_urlsafe(32)  # right id, wrong secret
    unknown_id = "idp_" + secrets.token_hex(8) + "." + secrets.token_urlsafe(32)
    unknown_ledger = secrets.token_urlsafe(32)
    for key in (wrong_secret, unknown_id, unknown_ledger):
        status, payload, _ = world.call("GET", "/v1/budget", key=key)
        assert status == 401 and _is_error(payload, "unauthorized"), key
    # ... while the right keys work (so the 401s above are not a broken server).
    for key in (world.alice_server_key, world.keys["alice"]):
        status, payload, _ = world.call("GET", "/v1/budget", key=key)
        assert status == 200 and payload["analyst"] == "alice"


def test_refusal_does_not_reveal_which_key_ids_exist(world: World) -> None:
    # A wrong secret on an existing key id and an unknown key id (and an unknown ledger key)
    # get the same status, headers and body: the answer tells nothing about who exists.
    key_id = world.alice_server_key.split(".")[0]
    secret = secrets.token_urlsafe(32)
    keys = [key_id + "." + secret, "idp_" + secrets.token_hex(8) + "." + secret, "x" * 43]
    answers = []
    for key in keys:
        status, payload, headers = world.call("GET", "/v1/budget", key=key)
        answers.append((status, payload, headers.get("www-authenticate")))
    assert answers[0] == (401, {"error": {"code": "unauthorized", "message": UNKNOWN}}, "Bearer")
    assert answers[1] == answers[0] and answers[2] == answers[0]


def test_keys_look_as_documented(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    # The docs (docs/curator.md, the API description) say what the admin CLI prints; the
    # patterns here are read from that text, not from the code.
    root = Path(__file__).resolve().parents[2]
    docs = " ".join((root / "docs" / "curator.md").read_text(encoding="utf-8").split())
    api = json.loads((root / "docs" / "openapi.json").read_text(encoding="utf-8"))
    for text in (docs, api["info"]["description"]):
        assert "43-character key `infodp analyst add` prints" in text
        assert "`idp_<16 hex digits>.<43 characters>` from `infodp analyst key`" in text
    assert "(URL-safe base64: letters, digits, `-` and `_`)" in docs
    b64 = "[A-Za-z0-9_-]"
    args = ["--db", world.db, "--name", "erin", "--json"]
    assert main(["analyst", "add", *args, "--dataset", "people", "--epsilon", "1"]) == 0
    added = json.loads(capsys.readouterr().out)["api_key"]
    assert main(["analyst", "key", *args]) == 0
    issued = json.loads(capsys.readouterr().out)
    assert re.fullmatch(b64 + "{43}", added), len(added)
    assert re.fullmatch("idp_[0-9a-f]{16}[.]" + b64 + "{43}", issued["api_key"])
    assert issued["api_key"][4:20] == issued["key_id"]  # the id `revoke --key-id` takes
    for key in (added, issued["api_key"]):
        status, payload, _ = world.call("GET", "/v1/budget", key=key)
        assert status == 200 and payload["analyst"] == "erin"


def test_revoked_keys_are_401(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    # Keys are issued and revoked only with the admin CLI.
    assert main(["analyst", "key", "--db", world.db, "--name", "carol", "--json"]) == 0
    issued = json.loads(capsys.readouterr().out)
    k1 = issued["api_key"]
    assert main(["analyst", "key", "--db", world.db, "--name", "carol", "--json"]) == 0
    k2 = json.loads(capsys.readouterr().out)["api_key"]
    ledger_key = world.keys["carol"]
    for key in (k1, k2, ledger_key):
        assert world.call("GET", "/v1/budget", key=key)[0] == 200
    # Revoke one server key: only that key stops working.
    args = ["analyst", "revoke", "--db", world.db, "--name", "carol", "--key-id", issued["key_id"]]
    assert main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["revoked_server_keys"] == 1
    assert world.call("GET", "/v1/budget", key=k1)[0] == 401
    assert world.call("GET", "/v1/budget", key=k2)[0] == 200
    assert world.call("GET", "/v1/budget", key=ledger_key)[0] == 200
    # Revoke everything: the other server key and the ledger key from `analyst add` too.
    assert main(["analyst", "revoke", "--db", world.db, "--name", "carol", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {"analyst": "carol", "revoked_server_keys": 1, "ledger_key_revoked": True}
    for key in (k1, k2, ledger_key):
        status, payload, _ = world.call(
            "POST", "/v1/query", {"sql": "SELECT COUNT(*) FROM people", "epsilon": 0.1}, key=key
        )
        assert status == 401 and payload["error"]["message"] == UNKNOWN
    # Nothing was spent by the refused requests.
    assert Ledger(world.db + ".ledger").budget("carol", "people").spent_epsilon == 0


def test_revoke_cli_refuses_unknown_names(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyst", "revoke", "--db", world.db, "--name", "nobody"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--name" in err
    assert main(["analyst", "revoke", "--db", world.db, "--name", "dave", "--key-id", "ff"]) == 2
    assert "--key-id" in capsys.readouterr().err


def test_keys_cannot_be_managed_over_http(world: World) -> None:
    # No route creates or revokes keys, whatever the key presented.
    for key in (world.keys["alice"], ADMIN_TOKEN):
        for method, path in [
            ("POST", "/v1/keys"),
            ("POST", "/v1/admin/keys"),
            ("DELETE", "/v1/admin/keys"),
            ("POST", "/v1/analysts"),
        ]:
            status, payload, _ = world.call(method, path, {"name": "mallory"}, key=key)
            assert status in (404, 405), (method, path, status)
            assert "error" in payload
    assert KeyStore(key_store_path(world.db)).keys("mallory") == []


def test_only_salted_hashes_are_stored(world: World) -> None:
    secret = world.alice_server_key.split(".", 1)[1]
    ledger_key = world.keys["alice"]
    for path in Path(world.db).parent.iterdir():
        if path.is_file() and not path.name.endswith(".log"):
            data = path.read_bytes()
            assert secret.encode() not in data, path
            assert ledger_key.encode() not in data, path


# -- isolation between analysts --------------------------------------------------------------------


def test_analyst_sees_only_own_budget_and_ledger(world: World) -> None:
    bob = world.keys["bob"]
    status, answer, _ = world.call(
        "POST", "/v1/query", {"sql": "SELECT COUNT(*) FROM visits", "epsilon": "0.25"}, key=bob
    )
    assert status == 200
    status, budget, _ = world.call("GET", "/v1/budget", key=world.keys["alice"])
    assert status == 200
    assert {b["analyst"] for b in budget["budgets"]} == {"alice"}
    assert {b["dataset"] for b in budget["budgets"]} == {"people"}
    status, led, _ = world.call("GET", "/v1/ledger?results=true", key=world.keys["alice"])
    assert status == 200 and all(e["analyst"] == "alice" for e in led["entries"])
    assert answer["entry"] not in {e["id"] for e in led["entries"]}
    status, led, _ = world.call("GET", "/v1/ledger?dataset=visits", key=world.keys["alice"])
    assert status == 200 and led["entries"] == []
    # Bob sees his own entry, with the released answer.
    status, led, _ = world.call("GET", "/v1/ledger?results=true", key=bob)
    mine = {e["id"]: e for e in led["entries"]}
    assert mine[answer["entry"]]["result"]["rows"] == answer["rows"]


def test_analyst_cannot_spend_someone_elses_budget(world: World) -> None:
    led = Ledger(world.db + ".ledger")
    before = led.budget("bob", "visits")
    for key in (world.keys["alice"], world.alice_server_key):
        for path in ("/v1/query", "/v1/estimate"):
            status, payload, _ = world.call(
                "POST", path, {"sql": "SELECT COUNT(*) FROM visits", "epsilon": 0.5}, key=key
            )
            assert status == 403 and _is_error(payload, "forbidden")
        status, payload, _ = world.call(
            "POST",
            "/v1/synopses",
            {"name": "steal", "dataset": "visits", "columns": ["region"], "epsilon": 0.5},
            key=key,
        )
        assert status == 403
        # Extra fields (e.g. naming another analyst) are refused, not obeyed.
        status, payload, _ = world.call(
            "POST",
            "/v1/query",
            {"sql": "SELECT COUNT(*) FROM people", "epsilon": 0.5, "analyst": "bob"},
            key=key,
        )
        assert status == 400 and _is_error(payload, "bad_request")
    assert led.budget("bob", "visits") == before
    assert [e for e in led.entries("alice") if e.dataset == "visits"] == []


def test_synopses_of_other_datasets_are_invisible(world: World) -> None:
    bob = world.keys["bob"]
    status, _, _ = world.call(
        "POST",
        "/v1/synopses",
        {"name": "bob_regions", "dataset": "visits", "columns": ["region"], "epsilon": 0.5},
        key=bob,
    )
    assert status == 200
    alice = world.keys["alice"]
    assert world.call("GET", "/v1/synopses", key=alice)[1]["synopses"] == []
    status, payload, _ = world.call(
        "POST", "/v1/synopses/bob_regions/query", {"sql": "SELECT COUNT(*) FROM visits"}, key=alice
    )
    assert status == 404 and _is_error(payload, "not_found")
    status, payload, _ = world.call(
        "POST", "/v1/synopses/bob_regions/query", {"sql": "SELECT COUNT(*) FROM visits"}, key=bob
    )
    assert status == 200


# -- admin routes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ADMIN_ROUTES)
def test_admin_routes_refuse_analyst_keys(world: World, path: str) -> None:
    for key in (world.keys["alice"], world.alice_server_key, world.keys["bob"]):
        status, payload, _ = world.call("GET", path, key=key)
        assert status == 403 and _is_error(payload, "forbidden")
    status, payload, _ = world.call("GET", path)
    assert status == 401
    status, payload, _ = world.call("GET", path, key="admin-" + "y" * 30)
    assert status == 401
    status, payload, _ = world.call("GET", path, key=ADMIN_TOKEN)
    assert status == 200


def test_admin_token_is_not_an_analyst_key(world: World) -> None:
    status, payload, _ = world.call("GET", "/v1/budget", key=ADMIN_TOKEN)
    assert status == 401 and _is_error(payload, "unauthorized")


def test_admin_ledger_is_consistent(world: World) -> None:
    status, payload, _ = world.call("GET", "/v1/admin/ledger", key=ADMIN_TOKEN)
    assert status == 200 and payload["problems"] == []
    keys = world.call("GET", "/v1/admin/keys", key=ADMIN_TOKEN)[1]["keys"]
    assert {k["analyst"] for k in keys} >= {"alice"}
    assert all(set(k) == {"key_id", "analyst", "created", "revoked"} for k in keys)


# -- budget errors carry requested / remaining / gap -------------------------------------------


def test_budget_exceeded_is_409_with_exact_gap(world: World) -> None:
    key = world.keys["dave"]
    status, _, _ = world.call(
        "POST", "/v1/query", {"sql": "SELECT COUNT(*) FROM people", "epsilon": "1.5"}, key=key
    )
    assert status == 200
    # Dwork & Roth 2014, Thm 3.16 (basic composition): remaining = 5 - 1.5 = 3.5 exactly.
    requested = Fraction(4)
    remaining = Fraction(5) - Fraction(3, 2)
    status, payload, _ = world.call(
        "POST", "/v1/query", {"sql": "SELECT COUNT(*) FROM people", "epsilon": 4}, key=key
    )
    assert status == 409 and _is_error(payload, "budget_exceeded")
    err = payload["error"]
    assert err["requested"] == f"epsilon={format_fraction(requested)}, delta=0"
    assert err["remaining"] == f"epsilon={format_fraction(remaining)}, delta=0"
    assert err["gap"] == f"epsilon={format_fraction(requested - remaining)}, delta=0"
    led = Ledger(world.db + ".ledger")
    assert led.budget("dave", "people").spent_epsilon == Fraction(3, 2)


def test_gaussian_noise_through_the_service(world: World) -> None:
    # The body field `noise` reaches the curator: the same mechanism as the library call.
    body = {
        "sql": "SELECT COUNT(*) FROM people",
        "epsilon": "0.5",
        "delta": "1e-6",
        "noise": "gaussian",
    }
    status, est, _ = world.call("POST", "/v1/estimate", body, key=world.keys["alice"])
    assert status == 200
    assert est["accuracy"][0]["mechanism"] == "discrete_gaussian"
    assert est["cost"]["measurements"][0]["mechanism"] == "discrete_gaussian"
    status, _, _ = world.call(
        "POST", "/v1/estimate", dict(body, noise="cauchy"), key=world.keys["alice"]
    )
    assert status in (400, 422)
