"""The OpenAPI document: kept in the repo, served by the app, and fuzzed with schemathesis.

Required: "its OpenAPI document is served and kept in the repo"; "Schema fuzzing of the OpenAPI
document with schemathesis: no 5xx on any generated request." schemathesis generates requests
from the committed document (an independent reading of the contract), sends them to a real
server on loopback with a valid analyst key, and every answer must be < 500 and, for errors,
in the one JSON error format.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _server_harness import ServerProcess, build_store, get_json
from infodp.server.openapi import openapi_document, openapi_text

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
ADMIN_TOKEN = "fuzz-admin-Hq4Zt8Wn2Lc6Vb9Rx3Pk7Jm5"  # random characters: enough entropy

schema = schemathesis.openapi.from_dict(json.loads(DOC_PATH.read_text(encoding="utf-8")))


class Fuzzed:
    def __init__(self, server: ServerProcess, key: str) -> None:
        self.server = server
        self.key = key


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def fuzzed(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Fuzzed]:
    """A served store, its ledger on SQLite or on PostgreSQL (tests/conftest.py)."""
    import infodp.curator.store.database as store

    d = tmp_path_factory.mktemp("fuzz")
    with pytest.MonkeyPatch.context() as mp:
        if request.param == "postgres":
            url = request.getfixturevalue("pg_cluster").new_schema()
            mp.setattr(store, "default_ledger", lambda db: url)
        db, keys = build_store(d, [("alice", "people", 1000), ("alice", "visits", 1000)], rows=60)
    token = d / "admin.token"
    token.write_text(ADMIN_TOKEN)
    token.chmod(0o600)  # a token others can read is refused
    with ServerProcess(db, admin_token_file=str(token)) as server:
        yield Fuzzed(server, keys["alice"])


def test_committed_document_matches_the_app() -> None:
    # Regenerate with: python -c "from infodp.server import write_openapi; write_openapi(...)"
    assert DOC_PATH.read_text(encoding="utf-8") == openapi_text()


def test_document_declares_bearer_auth_and_the_error_format() -> None:
    doc = openapi_document()
    assert doc["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    assert set(doc["components"]["schemas"]["ErrorBody"]["required"]) == {"error"}
    for path, ops in doc["paths"].items():
        assert path.startswith("/v1/")
        for op in ops.values():
            if path != "/v1/health":
                assert "401" in op["responses"], path
            # Every route can meet a PostgreSQL ledger that cannot be reached (the keys and the
            # health check read it): 503 with Retry-After (tests/server/test_fleet.py).
            assert "503" in op["responses"], path


@pytest.mark.slow  # real server processes
def test_document_is_served(fuzzed: Fuzzed) -> None:
    status, served, _ = get_json(fuzzed.server.port, "GET", "/v1/openapi.json")
    assert status == 200
    assert served == json.loads(DOC_PATH.read_text(encoding="utf-8"))


@pytest.mark.slow  # real server processes
@schema.parametrize()
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_no_server_errors_on_generated_requests(case: schemathesis.Case, fuzzed: Fuzzed) -> None:
    key = ADMIN_TOKEN if case.path.startswith("/v1/admin") else fuzzed.key
    response = case.call(
        base_url=fuzzed.server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60
    )
    assert response.status_code < 500, response.text[:500]
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error"}
        assert isinstance(body["error"]["code"], str) and body["error"]["message"]


# -- grammar fuzzing of the SQL inside valid requests ---------------------------------------------
# schemathesis fills "sql" with arbitrary text, which the parser refuses at once; this strategy
# builds near-valid SQL so the deeper paths (plan, ledger, DuckDB, noise) are exercised too.

_COLUMNS = ["age", "region", "AGE", '"age"', "secret", "*", "1", "NULL"]
_AGGS = [
    "COUNT(*)",
    "COUNT({c})",
    "SUM({c})",
    "AVG({c})",
    "VARIANCE({c})",
    "STDDEV({c})",
    "MEDIAN({c})",
    "QUANTILE({c}, 0.9)",
    "MIN({c})",
    "COUNT(DISTINCT {c})",
    "{c}",
]
_PREDICATES = [
    "",
    " WHERE age > {n}",
    " WHERE region = '{s}'",
    " WHERE region IN ('north', '{s}')",
    " WHERE age BETWEEN {n} AND {m}",
    " WHERE {c} IS NULL",
    " WHERE age > {n} OR region = 'east'",
]


@st.composite
def _sql(draw: st.DrawFn) -> str:
    table = draw(st.sampled_from(["people", "visits", "nowhere", "people p"]))
    col = draw(st.sampled_from(_COLUMNS))
    agg = draw(st.sampled_from(_AGGS)).format(c=col)
    pred = draw(st.sampled_from(_PREDICATES)).format(
        n=draw(st.sampled_from(["0", "50", "-1", "1e308", "99.5", "NaN"])),
        m=draw(st.sampled_from(["10", "200"])),
        s=draw(st.sampled_from(["south", "o'hara", "", "ü" * 3, "%", "\\x00"])),
        c=col,
    )
    group = draw(st.sampled_from(["", " GROUP BY region", " GROUP BY age", " GROUP BY {c}"]))
    head = "region, " if "region" in group and draw(st.booleans()) else ""
    return f"SELECT {head}{agg} FROM {table}{pred}{group.format(c=col)}"


@pytest.mark.slow  # real server processes
@settings(max_examples=40, deadline=None)
@given(
    sql=_sql(),
    epsilon=st.sampled_from([0.01, "0.5", 1e-12, "1/3", 0, 3.5, "1e-300"]),
    delta=st.sampled_from([0, "1e-6", 0.5]),
    path=st.sampled_from(["/v1/query", "/v1/estimate"]),
)
def test_generated_sql_never_causes_a_server_error(
    fuzzed: Fuzzed, sql: str, epsilon: object, delta: object, path: str
) -> None:
    body = {"sql": sql, "epsilon": epsilon, "delta": delta}
    status, payload, _ = get_json(fuzzed.server.port, "POST", path, body, key=fuzzed.key)
    assert status in (200, 400, 403, 409), (status, payload)
    if status == 200 and path == "/v1/query":
        assert set(payload) >= {"columns", "rows", "confidence_intervals", "cost", "remaining"}
        # Never a raw row: one output row per declared group (or one row without GROUP BY).
        assert len(payload["rows"]) <= 100
    elif status != 200:
        assert set(payload) == {"error"} and payload["error"]["message"]
        assert "Traceback" not in payload["error"]["message"]
