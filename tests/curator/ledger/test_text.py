"""The stored copy of an answer is the strict JSON of the answer, whichever path wrote it.

The one answer renderer (:func:`infodp.curator.answer.render.answer_text`) renders plain tables
(text, None, ints, finite floats) with orjson and everything else with :mod:`json` after
:func:`~infodp._jsonable.to_jsonable`; both must give the JSON value of
``to_jsonable(payload)`` (RFC 8259: no NaN or Infinity literals), with every float read back
bit for bit.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _json_values import same_json, strict_json
from _stores import cats, floats, one_table
from infodp._jsonable import to_jsonable
from infodp.curator.answer.render import answer_text

_scalars = st.one_of(
    st.none(),
    st.text(max_size=5),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
_cells = st.one_of(
    _scalars,
    st.lists(_scalars, max_size=3),
    st.dictionaries(st.text(max_size=3), _scalars, max_size=2),
)
_tables = st.lists(st.lists(_cells, max_size=4).map(tuple), max_size=6).map(tuple)


def _payload(rows: Any, intervals: Any) -> dict[str, Any]:
    return {
        "columns": ["g", "COUNT(*)"],
        "rows": rows,
        "confidence_intervals": intervals,
        "confidence": 0.95,
        "cost": {"epsilon": 1.0, "information_nats": math.inf, "leakage": {"nats": {"1": 0.2}}},
        "remaining": {"epsilon": 9.0},
        "entry": 7,
        "notes": ["n"],
    }


@given(_tables, _tables)
def test_stored_text_is_the_strict_json_of_the_answer(rows: Any, intervals: Any) -> None:
    payload = _payload(rows, intervals)
    assert same_json(strict_json(answer_text(payload)), to_jsonable(payload))


def test_plain_and_special_tables_both_round_trip() -> None:
    plain = ((("c00", 10076, 5028144.701660156),), ((None, [10070, 10082], [0.1, 1e-7]),))
    special = (
        (("c00", np.int64(3), math.inf, 2**80),),
        ((None, {"rank_error": math.nan, "grid": 0.5}, [-math.inf, 1.0]),),
    )
    for rows, intervals in (plain, special):
        payload = _payload(rows, intervals)
        assert same_json(strict_json(answer_text(payload)), to_jsonable(payload))


@pytest.mark.slow
def test_the_stored_copy_of_a_query_is_its_answer(tmp_path: Any) -> None:
    """Curator.query stores, through the background writer, the JSON of ``to_dict()``."""
    import pandas as pd

    from infodp.curator.engine import Curator
    from infodp.mechanisms.sampling import InsecureSeededSource

    cur = Curator(
        tmp_path / "s.duckdb",
        source=InsecureSeededSource(5, i_understand_this_is_not_private=True),
        keep_open=True,
    )
    frame = pd.DataFrame({"g": ["a", "b", "a"], "v": [0.5, 2.25, 7.0]})
    schema = one_table("t", {"g": cats("a", "b"), "v": floats(0, 10)})
    cur.register_dataset("t", frame, schema)
    cur.add_analyst("x", "t", epsilon=10)
    for sql in (
        "SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g",
        "SELECT g, MEDIAN(v) FROM t GROUP BY g",
    ):
        r = cur.query("x", sql, epsilon=1)
        stored = cur.ledger.entry(r.entry_id).result_json or ""
        assert same_json(strict_json(stored), to_jsonable(r.to_dict()))
    cur.close()
