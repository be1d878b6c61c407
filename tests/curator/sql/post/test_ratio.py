"""A hand-written mean, SUM(x) / COUNT(x) (or / COUNT(*) without NULLs), is measured as AVG(x).

Checked: the rewrite of the text (names kept, nothing else touched), the price (the same
measurements, ε and privacy summary as AVG), the answer at a large ε against pandas' mean on
the same data (the oracle), and the accuracy statistically with a fixed random source: the
ratio's error is AVG's, and below that of the sum and count noised apart and divided (the
query as written before, run here as ``SELECT SUM(x), COUNT(x)``).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _stores import cats, ints, one_table
from infodp.curator.engine import Curator
from infodp.curator.sql.post.ratio import avg_ratios
from infodp.mechanisms.sampling import InsecureSeededSource

SCHEMA = one_table(
    "t",
    {
        "x": ints(0, 1000),
        "y": {"type": "int", "bounds": [0, 10], "nulls": "drop"},
        "g": cats("a", "b"),
    },
)
RNG = np.random.default_rng(20261129)
FRAME = pd.DataFrame(
    {
        "x": RNG.integers(300, 700, 400),
        "y": [v if i % 3 else None for i, v in enumerate(RNG.integers(0, 11, 400))],
        "g": ["a", "b"] * 200,
    }
)


@pytest.fixture(scope="module")
def curator(tmp_path_factory: pytest.TempPathFactory) -> Curator:
    src = InsecureSeededSource(29, i_understand_this_is_not_private=True)
    # keep_open: one read connection for the module (nothing is registered after the first
    # query), not a DuckDB open per release: the accuracy test releases 900 times.
    cur = Curator(Path(tmp_path_factory.mktemp("ratio")) / "s.duckdb", source=src, keep_open=True)
    cur.register_dataset("t", FRAME, SCHEMA)
    cur.add_analyst("ann", "t", epsilon=10**9)
    return cur


def test_the_text_rewrite_keeps_names_and_leaves_other_ratios() -> None:
    never = lambda name: False  # noqa: E731
    assert avg_ratios("SELECT SUM(x) / COUNT(x) AS m FROM t", never) == "SELECT AVG(x) AS m FROM t"
    assert avg_ratios("SELECT (SUM(x)) / (COUNT(x)) + 1 FROM t", never) == (
        "SELECT AVG(x) + 1 FROM t"
    )
    for other in (
        "SELECT SUM(x) / COUNT(y) FROM t",
        "SELECT SUM(x) / COUNT(DISTINCT x) FROM t",
        "SELECT SUM(DISTINCT x) / COUNT(x) FROM t",
        "SELECT COUNT(x) / SUM(x) FROM t",
        "SELECT SUM(x) / COUNT(*) FROM t",  # x may hold NULL: not the same number
    ):
        assert avg_ratios(other, never) is None


@pytest.mark.slow
@pytest.mark.parametrize(
    "sql", ["SELECT SUM(x) / COUNT(x) FROM t", "SELECT SUM(x) / COUNT(*) AS m FROM t"]
)
def test_a_hand_written_mean_costs_what_avg_costs(curator: Curator, sql: str) -> None:
    ratio, avg = (curator.estimate(s, epsilon=1) for s in (sql, "SELECT AVG(x) FROM t"))
    assert [a["measurement"] for a in ratio["accuracy"]] == ["csum(x)", "count(x)"]
    assert ratio["accuracy"] == avg["accuracy"]
    assert ratio["cost"] == avg["cost"]
    (named,) = curator.column_accuracy(sql, epsilon=1, rows=400)
    (plain,) = curator.column_accuracy("SELECT AVG(x) FROM t", epsilon=1, rows=400)
    assert named["halfwidth"] == plain["halfwidth"]


@pytest.mark.parametrize(
    ("sql", "kept"),
    [
        # y may hold NULL (dropped): SUM(y) / COUNT(*) is not AVG(y)
        ("SELECT SUM(y) / COUNT(*) FROM t", ["sum(y)", "count(*)"]),
        # SUM(x) is asked for itself: AVG would need a third measurement
        ("SELECT SUM(x), SUM(x) / COUNT(x) FROM t", ["sum(x)", "count(x)"]),
    ],
)
def test_the_ratio_stays_as_written_when_avg_is_not_the_same_or_costs_more(
    curator: Curator, sql: str, kept: list[str]
) -> None:
    est = curator.estimate(sql, epsilon=1)
    assert [a["measurement"] for a in est["accuracy"]] == kept


def test_the_answer_is_the_mean_of_the_data(curator: Curator) -> None:
    res = curator.query(
        "ann",
        "SELECT g, SUM(x) / COUNT(*) FROM t GROUP BY g ORDER BY g",
        epsilon=10**5,
    )
    assert res.columns == ("g", "SUM(x) / COUNT(*)")
    means = FRAME.groupby("g")["x"].mean()
    for (g, value), (low, high) in zip(
        res.rows, (ci for _, ci in res.confidence_intervals), strict=True
    ):
        assert value == pytest.approx(means[g], abs=0.01)
        assert low <= means[g] <= high


# Hundreds of releases through the curator (about 3 s): the full run's, not the quick tier's.
@pytest.mark.slow
def test_the_ratio_has_the_accuracy_of_avg(curator: Curator) -> None:
    truth = float(FRAME["x"].mean())
    eps, runs = Fraction(1, 4), 300

    def errors(sql: str) -> np.ndarray:
        rows = [curator.query("ann", sql, epsilon=eps).rows[0] for _ in range(runs)]
        if len(rows[0]) == 2:  # the sum and the count noised apart, divided afterwards
            return np.array([abs(s / c - truth) for s, c in rows])
        return np.array([abs(r[0] - truth) for r in rows])

    ratio = errors("SELECT SUM(x) / COUNT(x) FROM t").mean()
    avg = errors("SELECT AVG(x) FROM t").mean()
    apart = errors("SELECT SUM(x), COUNT(x) FROM t").mean()
    # the same law: mean absolute errors within sampling error (about 6% each here)
    assert ratio == pytest.approx(avg, rel=0.25)
    # the centred sum's sensitivity is half the plain sum's on [0, 1000]
    assert apart >= 1.4 * max(ratio, avg)
