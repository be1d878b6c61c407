"""Grammar-ish fuzzing of the query path: no 5xx, no traceback, no spend on refused input.

A hypothesis strategy builds SQL over the safe subset's grammar — aggregates, WHERE trees of
comparisons / IN / BETWEEN / IS NULL joined by AND, OR, NOT and nested parentheses — with
hostile numeric texts (huge integers and exponents, long digit strings, ``_`` separators,
non-ASCII digits, inf/nan) in the literals, the quantile level, ε and δ, and hostile
``confidence`` levels (0, 1, subnormals, 1 ± 1e-17, values below 1e-16 whose complement rounds
to 1, NaN, infinities). Each example goes to the library, the CLI runner and a real server on
loopback. The allowed outcomes are an answer or a refusal (ParameterError / BudgetExceeded,
exit 2 / 3, HTTP 400 / 409); a refusal leaves the ledger untouched. Over HTTP a number string
with spaces is always refused. Analyst names are fuzzed too: a name is accepted exactly when
it is in the safe character set, and a refused one leaves no budget behind. The conftest
profile derandomizes hypothesis, so CI runs a fixed set.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from _server_harness import ServerProcess, get_json
from _stores import TEXT, cats, floats, ints, one_table
from infodp.cli import main
from infodp.curator.engine import Curator
from infodp.errors import BudgetExceeded, ParameterError

SCHEMA = one_table(
    "people",
    {
        "age": ints(0, 120),
        "score": floats(-50, 1e100, "drop"),
        "region": cats("north", "south"),
        "city": TEXT,
    },
)

_SPECIAL = [
    "0_1",
    "\u0661",
    "\uff11",
    "1e-10000000",
    "1e10000000",
    "inf",
    "-inf",
    "nan",
    "-0",
    ".5",
    "5.",
    "1e",
    "0x10",
    "+1",
    " 1 ",
    "1e400",
    "1e-400",
    "1e308",
    "1e309",
    str(2**63),
    str(-(2**63) - 1),
    str(2**127),
    str(2**128),
    "170141183460469231731687303715884105728",
]


def _number(sign: str, whole: str, frac: str | None, exp: int | None) -> str:
    text = sign + whole
    if frac is not None:
        text += "." + frac
    if exp is not None:
        text += f"e{exp}"
    return text


numeric_text = st.one_of(
    st.builds(
        _number,
        st.sampled_from(["", "-", "+"]),
        st.text("0123456789", min_size=1, max_size=30),
        st.none() | st.text("0123456789", max_size=10),
        st.none() | st.integers(-(10**7), 10**7) | st.integers(-410, 410),
    ),
    st.integers(-(2**200), 2**200).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(1, 6000).map(lambda n: "9" * n),
    st.sampled_from(_SPECIAL),
)


def _leaf(draw: Any) -> str:
    kind = draw(st.sampled_from(["cmp", "cmp", "in", "between", "null", "text"]))
    col = draw(st.sampled_from(["age", "score"]))
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
        return f"{col} {op} {draw(numeric_text)}"
    if kind == "in":
        n = draw(st.sampled_from([1, 3, 1001, 1500]))
        first = draw(numeric_text)
        return f"{col} IN ({', '.join([first] + ['1'] * (n - 1))})"
    if kind == "between":
        return f"{col} BETWEEN {draw(numeric_text)} AND {draw(numeric_text)}"
    if kind == "null":
        return f"{col} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    name = draw(st.sampled_from(["x", "bob", "it''s"]))
    return f"city = '{name}'"


@st.composite
def where(draw: Any, depth: int = 0) -> str:
    if depth >= 3 or draw(st.booleans()):
        expr = _leaf(draw)
    else:
        op = draw(st.sampled_from(["AND", "OR", "NOT"]))
        if op == "NOT":
            expr = f"NOT ({draw(where(depth + 1))})"
        else:
            expr = f"{draw(where(depth + 1))} {op} {draw(where(depth + 1))}"
    wrap = draw(st.sampled_from([0, 0, 1, 2, 63, 65, 3000]))
    return "(" * wrap + expr + ")" * wrap


@st.composite
def queries(draw: Any) -> str:
    agg = draw(
        st.sampled_from(
            ["COUNT(*)", "SUM(age)", "AVG(score)", "MEDIAN(score)", "STDDEV(age)", "QUANTILE"]
        )
    )
    if agg == "QUANTILE":
        agg = f"QUANTILE(age, {draw(numeric_text)})"
    tail = draw(st.sampled_from(["", " GROUP BY region", " TABLESAMPLE 5%", " GROUP BY ALL"]))
    sql = f"SELECT {agg} FROM people"
    if draw(st.booleans()):
        sql += " WHERE " + draw(where())
    if tail == " TABLESAMPLE 5%":
        return sql.replace("FROM people", "FROM people TABLESAMPLE 5%")
    if tail.startswith(" GROUP BY") and not agg.startswith("COUNT"):
        sql = sql.replace("SELECT ", "SELECT region, ")
    return sql + tail


privacy = st.one_of(numeric_text, st.sampled_from(["0.5", "1", "0.001", "0"]))

#: Whitespace a number string may be padded or split with (JSON, Unicode and C0 spaces).
_SPACES = st.text(" \t\n\r\u00a0\u2003\u3000\x0b\x0c", min_size=1, max_size=3)

#: Number strings that contain whitespace: refused over HTTP whatever the number.
spaced = st.one_of(
    st.builds(lambda a, t, b: a + t + b, _SPACES | st.just(""), numeric_text, _SPACES),
    st.builds(lambda a, t: a + t, _SPACES, st.sampled_from(["0.1", "1", "1e-3", "0"])),
    st.builds(
        lambda t, sp, i: t[:i] + sp + t[i:],
        st.sampled_from(["0.1", "12", "1e-3"]),
        _SPACES,
        st.integers(1, 2),
    ),
)

#: Confidence levels: ordinary ones and the edges of (0, 1) in double precision.
confidence = st.one_of(
    st.floats(min_value=0.0, max_value=1.0),
    st.sampled_from(
        [
            0.0,
            1.0,
            5e-324,
            1e-300,
            1e-17,
            1e-16,
            1.1e-16,
            2e-16,
            1 - 1e-16,
            1 - 2**-53,
            0.5,
            0.95,
            -0.5,
            1.5,
            float("nan"),
            float("inf"),
            -float("inf"),
        ]
    ),
    st.floats(allow_nan=True, allow_infinity=True),
)

#: Analyst names: safe ones, and text with newlines, markup, spaces, non-ASCII, long runs.
names = st.one_of(
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}", fullmatch=True),
    st.text(max_size=80),
    st.sampled_from(
        [
            "eve\nalice on people: remaining epsilon=1000",
            "<script>alert(1)</script>",
            "a b",
            "",
            " ",
            "a" * 64,
            "a" * 65,
            "-eve",
            ".eve",
            "ev\u00e9",
            "eve\r",
            "eve\x00",
        ]
    ),
)

_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-")


def _safe_name(name: str) -> bool:
    """The names that must be accepted (written apart from the library's pattern)."""
    return 1 <= len(name) <= 64 and set(name) <= _SAFE and name[0] not in "._@-"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    d = tmp_path_factory.mktemp("fuzz")
    db = str(d / "store.duckdb")
    cur = Curator(db)
    frame = pd.DataFrame(
        {
            "age": [30, 50, 70, 12],
            "score": [1.5, None, 1e299, -3.0],
            "region": ["north", "south", "north", "south"],
            "city": ["x", "bob", "y", "x"],
        }
    )
    cur.register_dataset("people", frame, SCHEMA)
    key = cur.add_analyst("a", "people", epsilon=10**6, delta="0.5")
    cur.close()
    return db, key


@pytest.fixture(scope="module")
def server(store: tuple[str, str]) -> Iterator[ServerProcess]:
    # One worker: the examples check outcomes, not the pool (tests/server/ has it).
    with ServerProcess(store[0], workers=1) as srv:
        yield srv


@pytest.fixture(scope="module")
def curator(store: tuple[str, str]) -> Iterator[Curator]:
    # One curator for every example: its ledger reads the SQLite file on each call, so the
    # before/after comparison sees what was written, without re-opening the store each time.
    cur = Curator(store[0])
    try:
        yield cur
    finally:
        cur.close()


def _spent(cur: Curator) -> tuple[Fraction, Fraction, int]:
    b = cur.ledger.budget("a", "people")
    return b.spent_epsilon, b.spent_delta, len(cur.ledger.entries())


@pytest.mark.slow
@given(sql=queries(), eps=privacy, delta=privacy)
def test_library_answers_or_refuses_without_spending(
    curator: Curator, sql: str, eps: str, delta: str
) -> None:
    before = _spent(curator)
    try:
        curator.query("a", sql, epsilon=eps, delta=delta)
    except (ParameterError, BudgetExceeded) as err:
        assert "\n" not in str(err)
        assert _spent(curator) == before


@pytest.mark.slow  # ~1.0 CPU-s (measured)
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sql=queries(), eps=privacy)
def test_cli_answers_or_refuses_in_one_line(
    store: tuple[str, str], curator: Curator, capsys: Any, sql: str, eps: str
) -> None:
    db, _ = store
    before = _spent(curator)
    capsys.readouterr()
    code = main(["query", "--db", db, "--analyst", "a", "--epsilon", eps, "--json", sql])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert code in (0, 2, 3), err
    if code == 0:
        assert "cost" in json.loads(out)
    else:
        assert len(err.strip().splitlines()) == 1
        assert _spent(curator) == before


@pytest.mark.slow  # real server processes
@settings(max_examples=30)
@given(sql=queries(), eps=st.one_of(privacy, st.booleans(), st.floats(allow_nan=False)))
def test_http_never_answers_5xx(
    store: tuple[str, str], curator: Curator, server: ServerProcess, sql: str, eps: Any
) -> None:
    _, key = store
    before = _spent(curator)
    for route in ("/v1/estimate", "/v1/query"):
        status, payload, _ = get_json(
            server.port, "POST", route, {"sql": sql, "epsilon": eps}, key=key
        )
        assert status in (200, 400, 409, 413), (route, status, payload)
        if status != 200:
            assert set(payload) == {"error"}
            if route == "/v1/query":
                assert _spent(curator) == before


@given(sql=queries(), conf=confidence)
@example(sql="SELECT COUNT(*) FROM people", conf=1e-17)  # 1 - conf rounds to 1.0
@example(sql="SELECT region, COUNT(*) FROM people GROUP BY region", conf=5e-324)
@example(sql="SELECT SUM(age) FROM people", conf=1 - 2**-53)
def test_library_confidence_is_validated_before_anything_is_spent(
    curator: Curator, sql: str, conf: float
) -> None:
    before = _spent(curator)
    try:
        result = curator.query("a", sql, epsilon="0.5", confidence=conf)
    except (ParameterError, BudgetExceeded) as err:
        assert "\n" not in str(err)
        assert _spent(curator) == before
    else:
        assert 0 < result.confidence < 1


@pytest.mark.slow
@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sql=queries(), conf=confidence)
@example(sql="SELECT COUNT(*) FROM people", conf=1e-17)  # 1 - conf rounds to 1.0
@example(sql="SELECT region, COUNT(*) FROM people GROUP BY region", conf=5e-324)
@example(sql="SELECT SUM(age) FROM people", conf=1 - 2**-53)
def test_cli_confidence_answers_or_refuses_in_one_line(
    store: tuple[str, str], curator: Curator, capsys: Any, sql: str, conf: float
) -> None:
    db, _ = store
    before = _spent(curator)
    capsys.readouterr()
    args = ["query", "--db", db, "--analyst", "a", "--epsilon", "0.5"]
    code = main([*args, "--confidence", repr(conf), "--json", sql])
    _, err = capsys.readouterr()
    assert "Traceback" not in err
    assert code in (0, 2, 3), err
    if code != 0:
        assert len(err.strip().splitlines()) == 1
        assert _spent(curator) == before


@pytest.mark.slow  # real server processes
@settings(max_examples=30)
@given(sql=queries(), conf=confidence)
@example(sql="SELECT COUNT(*) FROM people", conf=1e-17)  # 1 - conf rounds to 1.0
@example(sql="SELECT region, COUNT(*) FROM people GROUP BY region", conf=5e-324)
@example(sql="SELECT SUM(age) FROM people", conf=1 - 2**-53)
def test_http_confidence_never_answers_5xx_nor_charges_a_refusal(
    store: tuple[str, str], curator: Curator, server: ServerProcess, sql: str, conf: float
) -> None:
    import math

    _, key = store
    before = _spent(curator)
    # JSON has no NaN or infinities: those go as the strings a careless client would send.
    value: Any = conf if math.isfinite(conf) else repr(conf)
    for route in ("/v1/estimate", "/v1/query"):
        body = {"sql": sql, "epsilon": "0.5", "confidence": value}
        status, payload, _ = get_json(server.port, "POST", route, body, key=key)
        assert status in (200, 400, 409), (route, status, payload)
        if status != 200:
            assert set(payload) == {"error"} and "Traceback" not in json.dumps(payload)
            if route == "/v1/query":
                assert _spent(curator) == before


@pytest.mark.slow
@settings(max_examples=40)
@given(sql=queries(), eps=spaced, field=st.sampled_from(["epsilon", "delta"]))
def test_http_refuses_number_strings_with_spaces_without_charging(
    store: tuple[str, str], curator: Curator, server: ServerProcess, sql: str, eps: str, field: str
) -> None:
    _, key = store
    before = _spent(curator)
    for route in ("/v1/estimate", "/v1/query"):
        body = {"sql": sql, "epsilon": "0.5", field: eps}
        status, payload, _ = get_json(server.port, "POST", route, body, key=key)
        assert status == 400, (route, eps, status, payload)
        assert set(payload) == {"error"} and "Traceback" not in json.dumps(payload)
    assert _spent(curator) == before


@pytest.mark.slow
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=names)
def test_analyst_names_are_accepted_exactly_in_the_safe_charset(
    store: tuple[str, str], name: str
) -> None:
    db, _ = store
    cur = Curator(db)
    try:
        before = {(b.analyst, b.dataset) for b in cur.ledger.budgets()}
        try:
            cur.add_analyst(name, "people", epsilon=1)
        except ParameterError as err:
            assert not _safe_name(name), name
            assert err.argument == "name" and "\n" not in str(err)
            assert {(b.analyst, b.dataset) for b in cur.ledger.budgets()} == before
        else:
            assert _safe_name(name), name
            assert (name, "people") in {(b.analyst, b.dataset) for b in cur.ledger.budgets()}
    finally:
        cur.close()


@pytest.mark.slow
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=names)
def test_cli_analyst_add_refuses_unsafe_names_in_one_line(
    store: tuple[str, str], capsys: Any, name: str
) -> None:
    db, _ = store
    capsys.readouterr()
    args = ["analyst", "add", "--db", db, "--dataset", "people", "--epsilon", "1"]
    code = main([*args, "--name", name])
    _, err = capsys.readouterr()
    assert "Traceback" not in err
    if _safe_name(name):
        assert code in (0, 2), err  # 2: the name already holds a budget on this dataset
    else:
        assert code == 2 and len(err.strip().splitlines()) == 1, err
