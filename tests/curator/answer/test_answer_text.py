"""The one answer renderer (:func:`infodp.curator.answer.render.answer_text`: the service's answer,
with or without workers, ``infodp query --json`` and the ledger's copy) renders by orjson
where that gives the value :mod:`json` gave, and by :mod:`json` (with its errors) elsewhere.

The reference is the rendering it replaces, ``json.dumps(payload, ensure_ascii=False,
allow_nan=False, separators=(",", ":"))``: for real answers and for arbitrary ``to_jsonable``
payloads, both texts parse to the same JSON value (floats bit for bit), or both renderings
raise the same error.
"""

from __future__ import annotations

import datetime
import enum
import json
import math
import uuid
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _json_values import same_json, strict_json
from _stores import cats, floats, ints, one_table
from infodp._jsonable import to_jsonable
from infodp.curator.answer import settlement
from infodp.curator.answer.render import answer_text
from infodp.curator.engine import Curator
from infodp.mechanisms.sampling import InsecureSeededSource

CATS = ["café", "東京", "🎲 dice", "plain", 'quo"te\\', "ctl\u0001\n", "\u2028sep"]
SCHEMA = one_table("t", {"g": cats(*CATS), "v": floats(0, 5), "n": ints(0, 9)}, public_rows=2000)
QUERIES = [
    "SELECT g, COUNT(*), SUM(v), AVG(n) FROM t GROUP BY g",
    'SELECT COUNT(*) AS "Anzahl ü", SUM(n) AS größe, AVG(v) FROM t',
    "SELECT COUNT(*) FROM t WHERE g = 'café'",
    "SELECT g, MEDIAN(v) FROM t GROUP BY g",  # dict intervals: the json path
]


def _old(payload: Any) -> str:
    """The rendering ``release_json`` used before orjson."""
    return json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _agree(payload: Any) -> None:
    """Both renderings give the same JSON value, or raise the same error."""
    try:
        old = _old(payload)
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)) as new_exc:
            answer_text(payload)
        assert str(new_exc.value) == str(exc)
        return
    assert same_json(strict_json(answer_text(payload)), strict_json(old), key_order=True)


@pytest.fixture(scope="module")
def cur(tmp_path_factory: pytest.TempPathFactory) -> Curator:
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {"g": rng.choice(CATS, 2000), "v": rng.uniform(0, 5, 2000), "n": rng.integers(0, 10, 2000)}
    )
    source = InsecureSeededSource(3, i_understand_this_is_not_private=True)
    # keep_open: one read connection for the module's releases (all registered first).
    cur = Curator(tmp_path_factory.mktemp("answers") / "a.duckdb", source=source, keep_open=True)
    cur.register_dataset("t", frame, SCHEMA)
    cur.add_analyst("a", "t", epsilon=10_000, delta="1e-2")
    return cur


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("sql", QUERIES)
def test_real_answers_render_to_the_same_json(cur: Curator, sql: str, noise: str) -> None:
    reserved = cur.reserve("a", sql, epsilon="1", delta="1e-6", noise=noise)
    payload = to_jsonable(cur.finish(reserved, lambda: cur.run_reserved(reserved)).to_dict())
    _agree(payload)
    text = answer_text(payload)
    assert "\\u" not in text.replace("\\u0001", "")  # non-ASCII text stays UTF-8, unescaped
    assert "café" in text or "café" not in _old(payload)


def test_release_json_uses_the_answer_renderer(
    cur: Curator, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    def spy(payload: dict[str, Any]) -> str:
        seen.append(answer_text(payload))
        return seen[-1]

    monkeypatch.setattr(settlement, "answer_text", spy)
    reserved = cur.reserve("a", QUERIES[0], epsilon="1", noise="laplace")
    text = cur.release_json(reserved)
    assert seen == [text]
    answer = strict_json(text)
    assert answer["columns"] == ["g", "COUNT(*)", "SUM(v)", "AVG(n)"]
    assert sorted(row[0] for row in answer["rows"]) == sorted(CATS)


def test_orjson_renders_a_plain_100_group_answer() -> None:
    # The fast path is taken (orjson spells exponents without a sign or padding: 1e-7, not
    # json's 1e-07), and the value is the one json writes.
    rows = [[f"g{i:03d}", i, i * 1e-7, 2.5e16 + i] for i in range(100)]
    payload = {
        "columns": ["g", "COUNT(*)", "SUM(x)", "AVG(y)"],
        "rows": rows,
        "confidence_intervals": [
            [None, [i - 3, i + 3], [0.0, 1e-7], [1.0, 2.0]] for i in range(100)
        ],
        "cost": {"information_nats": "inf", "epsilon": 0.1},
        "notes": ["ü"],
    }
    text = answer_text(payload)
    assert "1e-7" in text and "1e-07" not in text
    assert same_json(strict_json(text), strict_json(_old(payload)), key_order=True)


class Colour(enum.Enum):
    RED = 1


class Kind(enum.StrEnum):
    COUNT = "count"


_odd = st.sampled_from(
    [
        Fraction(1, 3),
        Decimal("0.1"),
        Decimal("NaN"),
        2**64,
        -(2**70),
        uuid.UUID(int=7),
        Colour.RED,
        Kind.COUNT,
        datetime.date(2024, 1, 2),
        datetime.datetime(2024, 1, 2, 3, 4, 5),
        "lone \ud800 surrogate",
        np.float64(math.inf),
        np.int64(-3),
        True,
        -0.0,
        1e-7,
        1e16,
        5e-324,
        {1, 2},
    ]
)
_scalars = st.one_of(
    st.none(),
    st.text(max_size=5),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    _odd,
)
_cells = st.one_of(
    _scalars,
    st.lists(_scalars, max_size=3),
    st.tuples(_scalars, _scalars),
    st.dictionaries(st.text(max_size=3), _scalars, max_size=2),
)
_tables = st.lists(st.lists(_cells, max_size=4), max_size=5)
# The metadata (cost, remaining, notes) is made by the library: numbers, text, StrEnums,
# Fractions and the like. A UUID or a plain Enum there is not drawn: orjson would write them
# where json refuses (in the rows and intervals the renderer sends them to json).
_meta = _scalars.filter(lambda v: not isinstance(v, uuid.UUID | Colour))


@given(
    columns=st.lists(st.text(max_size=6), max_size=4),
    rows=_tables,
    intervals=_tables,
    cost=st.dictionaries(st.text(max_size=4), st.one_of(_meta, st.lists(_meta)), max_size=3),
)
def test_any_answer_payload_renders_as_json_did(
    columns: list[str], rows: Any, intervals: Any, cost: dict[str, Any]
) -> None:
    payload = to_jsonable(
        {"columns": columns, "rows": rows, "confidence_intervals": intervals, "cost": cost}
    )
    _agree(payload)
