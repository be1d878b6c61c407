"""Non-interactive release (Dwork & Roth 2014 §3.2): one paid histogram, then free post-processed
answers.

The reference for each answer is a direct sum over the released cells (post-processing, Dwork &
Roth 2014, Prop. 2.1); the budget must not move after the release.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _stores import cats, floats, ints, one_table
from infodp.curator.engine import Curator
from infodp.errors import ParameterError
from infodp.mechanisms.sampling import InsecureSeededSource

SCHEMA = one_table(
    "people", {"age": ints(0, 9), "region": cats("n", "s", "e"), "income": floats(0, 10)}
)


@pytest.fixture
def curator(tmp_path: Path) -> Curator:
    rng = np.random.default_rng(2)
    n = 900
    frame = pd.DataFrame(
        {
            "age": rng.integers(0, 10, n),
            "region": rng.choice(["n", "s", "e"], n),
            "income": rng.uniform(0, 10, n),
        }
    )
    cur = Curator(
        tmp_path / "s.duckdb",
        source=InsecureSeededSource(4, i_understand_this_is_not_private=True),
    )
    cur.register_dataset("people", frame, SCHEMA)
    cur.add_analyst("a", "people", epsilon=2)
    return cur


@pytest.mark.slow
def test_release_once_then_answer_for_free(curator: Curator) -> None:
    syn = curator.release_synopsis("a", "ar", "people", ["age", "region"], epsilon=1)
    assert len(syn.counts) == 30 and syn.scale == 1.0
    spent = curator.ledger.budget("a", "people").spent_epsilon
    assert spent == Fraction(1)
    cells = list(itertools.product(syn.keys[0], syn.keys[1]))
    counts = dict(zip(cells, syn.counts, strict=True))
    sql = "SELECT COUNT(*), SUM(age) FROM people WHERE age BETWEEN 3 AND 6 AND region <> 'e'"
    for _ in range(3):
        ans = curator.query_synopsis("ar", sql)
        want = sum(c for (age, reg), c in counts.items() if 3 <= int(age) <= 6 and reg != "e")
        want_sum = sum(
            int(age) * c for (age, reg), c in counts.items() if 3 <= int(age) <= 6 and reg != "e"
        )
        assert ans["rows"] == [[want, float(want_sum)]]
        lo, hi = ans["confidence_intervals"][0][0]
        assert lo < want < hi
        assert ans["cost"]["epsilon"] == 0.0
    grouped = curator.query_synopsis(
        "ar", "SELECT region, COUNT(*), AVG(age) FROM people GROUP BY region"
    )
    assert [r[0] for r in grouped["rows"]] == ["n", "s", "e"]
    for row in grouped["rows"]:
        assert row[1] == sum(c for (_, reg), c in counts.items() if reg == row[0])
    # answering never touched the budget
    assert curator.ledger.budget("a", "people").spent_epsilon == spent
    assert next(e.sql for e in curator.ledger.entries()).startswith("SELECT")
    assert len(curator.ledger.entries()) == 1


@pytest.mark.slow
def test_synopsis_refusals(curator: Curator) -> None:
    with pytest.raises(ParameterError, match="categories or int bounds"):
        curator.release_synopsis("a", "bad", "people", ["income"], epsilon=1)
    curator.release_synopsis("a", "ages", "people", ["age"], epsilon=0.5)
    with pytest.raises(ParameterError, match="not used yet"):
        curator.release_synopsis("a", "ages", "people", ["age"], epsilon=0.5)
    with pytest.raises(ParameterError, match="not in the synopsis"):
        curator.query_synopsis("ages", "SELECT COUNT(*) FROM people WHERE region = 'n'")
    with pytest.raises(ParameterError, match="COUNT"):
        curator.query_synopsis("ages", "SELECT VARIANCE(age) FROM people")
    # COUNT of a column is not COUNT(*): the synopsis counts cells, not a column's values.
    only = r"answers COUNT\(\*\), SUM and AVG only; got count$"
    with pytest.raises(ParameterError, match=only):
        curator.query_synopsis("ages", "SELECT COUNT(age) FROM people")
    with pytest.raises(ParameterError, match="unknown synopsis"):
        curator.query_synopsis("nope", "SELECT COUNT(*) FROM people")
    # A histogram of cells holds no distinct values, and an aggregate's own FILTER is refused
    # with what to write instead; the budget does not move.
    spent = curator.ledger.budget("a", "people").spent_epsilon
    with pytest.raises(ParameterError, match="not distinct values"):
        curator.query_synopsis("ages", "SELECT COUNT(DISTINCT age) FROM people")
    with pytest.raises(ParameterError, match="put the condition in the query's WHERE"):
        curator.query_synopsis("ages", "SELECT COUNT(*) FILTER (WHERE age > 3) FROM people")
    # A derived GROUP BY key (bins, CASE bands) is not a column of the synopsis.
    for derived in (
        "SELECT FLOOR(age / 5) AS b, COUNT(*) FROM people GROUP BY b",
        "SELECT CASE WHEN age < 5 THEN 'young' ELSE 'old' END AS b, COUNT(*) FROM people "
        "GROUP BY b",
    ):
        with pytest.raises(ParameterError, match="derived key"):
            curator.query_synopsis("ages", derived)
    assert curator.ledger.budget("a", "people").spent_epsilon == spent
