"""Key-set releases: ``SELECT keys FROM t GROUP BY keys`` without an aggregate.

Declared keys (categories, bounded ints) are public: every declared key (or tuple of keys) is
released, nothing is measured and nothing is charged, and the answer says so. Keys without a
declaration are chosen by DP partition selection (Korolova et al. 2009; Wilson et al. 2020)
exactly as a grouped COUNT(*) chooses them: the same measurement, the same (ε, δ), only the
keys are shown. The oracle for the released keys is plain SQL on the same frame (every group
is far above the threshold); neighbouring datasets (one unit removed) give answers of the
same shape at the same cost.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

from _stores import TEXT, cats, ints, one_table
from infodp.curator.engine import Curator
from infodp.errors import ParameterError
from infodp.mechanisms.sampling import InsecureSeededSource

SCHEMA = one_table(
    "t",
    {"pid": TEXT, "educ": TEXT, "sex": TEXT, "g": cats("a", "b", "never"), "age": ints(0, 3)},
    unit="pid",
    max_rows_per_unit=2,
    public_max_rows=4000,
)
FREE = "only declared (public) keys were released: nothing was measured and nothing was charged"


def frame(drop: str | None = None) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    n = 4000
    out = pd.DataFrame(
        {
            "pid": [f"u{i // 2}" for i in range(n)],
            "educ": rng.choice(["hs", "ba", "phd"], n),
            "sex": rng.choice(["1", "2"], n),
            "g": rng.choice(["a", "b"], n),
            "age": rng.integers(0, 4, n),
        }
    )
    return out if drop is None else out[out.pid != drop].reset_index(drop=True)


def plain(sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    con.register("t", frame())
    return [tuple(r) for r in con.execute(sql).fetchall()]


def source() -> InsecureSeededSource:
    return InsecureSeededSource(9, i_understand_this_is_not_private=True)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Curator]:
    cur = Curator(tmp_path / "s.duckdb", source=source())
    cur.register_dataset("t", frame(), SCHEMA)
    cur.add_analyst("a", "t", epsilon=10, delta=Fraction(1, 1000))
    yield cur
    cur.close()


@pytest.mark.slow
def test_declared_keys_are_released_whole_and_for_free(store: Curator) -> None:
    r = store.query("a", "SELECT g, age FROM t GROUP BY g, age", epsilon=1)
    # Every declared tuple, present in the data or not ('never' is in no row).
    assert set(r.rows) == {(g, str(a)) for g in ("a", "b", "never") for a in range(4)}
    assert (r.cost.epsilon, r.cost.delta, r.cost.parts) == (0, 0, ())
    assert r.notes == (FREE,)
    assert store.ledger.budget("a", "t").spent_epsilon == 0


@pytest.mark.slow
def test_undeclared_keys_are_chosen_as_a_grouped_count_chooses_them(store: Curator) -> None:
    r = store.query("a", "SELECT educ FROM t GROUP BY educ", epsilon=1, delta=1e-5)
    counted = store.query("a", "SELECT educ, COUNT(*) FROM t GROUP BY educ", epsilon=1, delta=1e-5)
    assert r.columns == ("educ",)
    assert sorted(r.rows) == sorted(plain("SELECT DISTINCT educ FROM t"))
    assert r.cost.parts == counted.cost.parts  # the selection's COUNT(*), Δ = m
    assert (r.cost.epsilon, r.cost.delta) == (counted.cost.epsilon, counted.cost.delta)
    assert r.cost.parts[0].sensitivity == SCHEMA["max_rows_per_unit"]
    assert any("DP partition selection" in note for note in r.notes)


@pytest.mark.slow
def test_renamed_keys_are_released_in_order(store: Curator) -> None:
    r = store.query(
        "a",
        "SELECT sex AS gender, educ FROM t GROUP BY sex, educ ORDER BY sex",
        epsilon=1,
        delta=1e-5,
    )
    assert r.columns == ("gender", "educ")
    assert sorted(r.rows) == sorted(plain("SELECT DISTINCT sex, educ FROM t"))
    assert [row[0] for row in r.rows] == sorted(row[0] for row in r.rows)


@pytest.mark.slow
def test_undeclared_keys_without_delta_are_refused(store: Curator) -> None:
    with pytest.raises(ParameterError, match="DP partition selection costs δ"):
        store.query("a", "SELECT educ FROM t GROUP BY educ", epsilon=1)


@pytest.mark.slow
def test_a_select_of_a_column_without_group_by_is_still_refused(store: Curator) -> None:
    with pytest.raises(ParameterError, match="raw column selection"):
        store.query("a", "SELECT educ FROM t", epsilon=1)


@pytest.mark.slow
@pytest.mark.parametrize(
    "sql",
    ["SELECT g, age FROM {} GROUP BY g, age", "SELECT sex, educ FROM {} GROUP BY sex, educ"],
    ids=["declared", "selected"],
)
def test_neighbouring_datasets_give_the_same_shape_at_the_same_cost(
    tmp_path: Path, sql: str
) -> None:
    cur = Curator(tmp_path / "s.duckdb", source=source())
    cur.register_dataset("t", frame(), SCHEMA)
    cur.register_dataset("t2", frame(drop="u3"), {**SCHEMA, "table": "t2"}, independent=True)
    out = []
    for name in ("t", "t2"):
        cur.add_analyst(f"a_{name}", name, epsilon=10, delta=Fraction(1, 1000))
        out.append(cur.query(f"a_{name}", sql.format(name), epsilon=1, delta=1e-5))
    a, b = out
    assert a.columns == b.columns and a.cost == b.cost and a.notes == b.notes
    # Every group holds hundreds of rows, far above the threshold: the same keys either way.
    assert sorted(a.rows) == sorted(b.rows)
    cur.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("distinct", "grouped", "delta"),
    [
        ("SELECT DISTINCT g, age FROM t", "SELECT g, age FROM t GROUP BY g, age", 0),
        (
            "SELECT DISTINCT sex AS gender, educ FROM t ORDER BY gender",
            "SELECT sex AS gender, educ FROM t GROUP BY sex, educ ORDER BY gender",
            1e-5,
        ),
    ],
    ids=["declared", "selected"],
)
def test_select_distinct_is_the_group_by_key_set(
    store: Curator, distinct: str, grouped: str, delta: float
) -> None:
    a = store.query("a", distinct, epsilon=1, delta=delta)
    b = store.query("a", grouped, epsilon=1, delta=delta)
    assert a.columns == b.columns and a.cost == b.cost and a.notes == b.notes
    assert sorted(a.rows) == sorted(b.rows)  # every group is far above the threshold


@pytest.mark.slow
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT DISTINCT COUNT(*) FROM t",
        "SELECT DISTINCT educ, COUNT(*) FROM t GROUP BY educ",
        "SELECT DISTINCT ON (educ) educ FROM t",
    ],
    ids=["aggregate", "grouped", "on"],
)
def test_select_distinct_of_anything_but_columns_is_refused(store: Curator, sql: str) -> None:
    with pytest.raises(ParameterError, match="refused SQL construct: DISTINCT"):
        store.query("a", sql, epsilon=1, delta=1e-5)
    assert store.ledger.budget("a", "t").spent_epsilon == 0
