"""A reservation's price is remembered by the query's arguments, and the dataset's
declaration it was priced with is checked inside the reservation's transaction: a ledger whose
declaration changed is never charged at a stale price, and what was refused stays refused."""

from __future__ import annotations

import json
import sqlite3
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from _stores import cats, one_table
from infodp.curator.engine import Curator
from infodp.errors import ParameterError
from infodp.mechanisms.sampling import InsecureSeededSource

SQL = "SELECT g, COUNT(*) FROM t GROUP BY g"


def _store(tmp_path: Path) -> Curator:
    cur = Curator(
        tmp_path / "s.duckdb",
        source=InsecureSeededSource(11, i_understand_this_is_not_private=True),
        keep_open=True,
    )
    frame = pd.DataFrame({"g": ["a", "b", "c", "a"]})
    schema = one_table("t", {"g": cats("a", "b")})
    cur.register_dataset("t", frame, schema)
    cur.add_analyst("x", "t", epsilon=10)
    return cur


@pytest.mark.slow
def test_a_changed_declaration_is_priced_again_never_charged_stale(tmp_path: Path) -> None:
    cur = _store(tmp_path)
    for _ in range(2):  # priced once, then answered from the remembered price
        assert [row[0] for row in cur.query("x", SQL, epsilon=1).rows] == ["a", "b"]
    # The ledger's declaration is edited behind the live curator's back (a third category).
    con = sqlite3.connect(tmp_path / "s.duckdb.ledger")
    (text,) = con.execute("SELECT schema_json FROM datasets WHERE name = 't'").fetchone()
    declared = json.loads(text)
    declared["columns"]["g"]["categories"] = ["a", "b", "c"]
    with con:
        con.execute("UPDATE datasets SET schema_json = ? WHERE name = 't'", (json.dumps(declared),))
    con.close()
    result = cur.query("x", SQL, epsilon=1)
    assert [row[0] for row in result.rows] == ["a", "b", "c"]  # the ledger's declaration
    # The refused attempt charged nothing: three answers, three charges of 1.
    assert [e.status for e in cur.ledger.entries()] == ["released"] * 3
    assert cur.ledger.budget("x", "t").spent_epsilon == Fraction(3)
    cur.close()


def test_refused_arguments_stay_refused_after_a_remembered_price(tmp_path: Path) -> None:
    cur = _store(tmp_path)
    cur.query("x", SQL, epsilon=1)
    with pytest.raises(ParameterError, match="epsilon"):
        cur.query("x", SQL, epsilon=True)  # equal to 1, but a bool is not a number here
    with pytest.raises(ParameterError, match="confidence"):
        cur.query("x", SQL, epsilon=1, confidence=True)
    assert len(cur.ledger.entries()) == 1
    cur.close()


@pytest.mark.slow
def test_the_same_text_at_another_epsilon_is_planned_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan depends on the text and the declaration only: a new ε is priced from the
    remembered plan (whose statements were checked already), to the price a curator that
    never planned the query gives."""
    from infodp.curator.price import book as pricing

    cur = _store(tmp_path)
    planned = [0]
    real = pricing.parse_query

    def counted(*args: object, **kwargs: object) -> object:
        planned[0] += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pricing, "parse_query", counted)
    checks: list[object] = []
    real_check = cur.backend.check
    monkeypatch.setattr(
        cur.backend, "check", lambda *a, **k: checks.append(a) or real_check(*a, **k)
    )
    for eps in ("1", "0.5", "0.25"):
        cur.query("x", SQL, epsilon=eps)
    # Planned once, and its statements checked against the empty relation once.
    assert planned[0] == 1 and len(checks) == 1
    warm = cur.estimate(SQL, epsilon="0.125")
    cur.close()
    fresh = Curator(tmp_path / "s.duckdb")
    try:
        assert fresh.estimate(SQL, epsilon="0.125") == warm
    finally:
        fresh.close()
    assert planned[0] == 2  # the fresh curator planned it once
