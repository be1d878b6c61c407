"""MIN and MAX: the extreme quantiles q = 0 and q = 1, aimed at the rank t just inside.

The guarantee checked: with probability ≥ 1 − β at most t + r rows (the reported rank error;
t = ⌈(2m/ε)(ln K + ln 20)⌉ the aimed rank, r the exponential mechanism's rank error, Dwork &
Roth 2014, Thm 3.11) lie below the released MIN, and at most t + r above the released MAX.
Checked against the exact law of the draw computed by brute force
(tests/_quantile_reference.py, τ = min(t, n/2)), empirically through ``Curator.query`` with a
seeded source, the error in value against the plain q = 0 / q = 1 quantile (main's method:
the reference law aimed at rank 0), and the SQL path end to end: parsing, refusals, the shared
histogram measurement (no new backend primitive), estimates and planning.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _quantile_reference import chi_square_pvalue, reference_law
from _rules_oracle import coverage_floor
from _rules_oracle import table_schema as schema
from _stores import TEXT, cats, ints, one_table
from infodp.curator.engine import Curator
from infodp.curator.plan.nodes import Measurement, MeasurementKind
from infodp.curator.price.cost import plan_cost
from infodp.curator.price.layout import Layout
from infodp.curator.rules import measurements, rule_for
from infodp.curator.sql.parse import parse_query
from infodp.errors import ParameterError
from infodp.mechanisms.sampling import InsecureSeededSource

LO, HI = 0, 40
SCHEMA = one_table("t", {"x": ints(LO, HI), "g": cats("a", "b"), "c": TEXT, "u": {"type": "float"}})
# Data well inside the bounds: the honest limit of MIN (it may fall below the true minimum).
DATA = [12] * 3 + [15] * 10 + list(range(16, 30)) + [33] * 4


def _rank_error(sql: str, epsilon: Fraction, beta: float) -> float:
    s = schema(1, LO, HI)
    plan = parse_query(sql, s)
    cost = plan_cost(plan, s, epsilon, Fraction(0), None)
    agg = plan.aggregates[0]
    return rule_for(agg).accuracy(agg, Layout.of(plan, s, cost, beta).cells(), None, "m")[
        "rank_error"
    ]


def aim(epsilon: Fraction, points: int, rows_per_unit: int = 1) -> int:
    """The rank MIN and MAX aim at: (2m/ε)(ln K + ln 20), rounded up (closed form)."""
    return math.ceil(float(2 * rows_per_unit / epsilon) * (math.log(points) + math.log(20)))


@pytest.mark.parametrize("func", ["MIN", "MAX"])
@pytest.mark.parametrize("epsilon", [Fraction(1, 2), Fraction(2), Fraction(8)], ids=str)
def test_rank_error_holds_under_the_exact_law(func: str, epsilon: Fraction) -> None:
    beta = 0.05
    r = _rank_error(f"SELECT {func}(x) FROM t", epsilon, beta)
    q = Fraction(0) if func == "MIN" else Fraction(1)
    t = aim(epsilon, HI - LO + 1)
    law = reference_law(DATA, LO, HI, q, epsilon, rows_per_unit=1, aim=t)
    beyond = [
        sum(x < c for x in DATA) if func == "MIN" else sum(x > c for x in DATA)
        for c in range(LO, HI + 1)
    ]
    assert sum(p for p, b in zip(law, beyond, strict=True) if b > r) <= beta
    # the stated error is the aimed rank plus the worst-case rank error at β, k + 1 points
    k = HI - LO
    assert r == pytest.approx(t + 2 / float(epsilon) * math.log(k * (1 - beta) / beta))


@pytest.fixture(scope="module")
def curator(tmp_path_factory: pytest.TempPathFactory) -> Curator:
    src = InsecureSeededSource(2026, i_understand_this_is_not_private=True)
    # keep_open: one read connection (nothing is registered after the first query), not a
    # DuckDB open per release.
    cur = Curator(Path(tmp_path_factory.mktemp("extreme")) / "s.duckdb", source=src, keep_open=True)
    g = ["a" if i % 3 else "b" for i in range(len(DATA))]
    cur.register_dataset("t", pd.DataFrame({"x": DATA, "g": g, "c": "z", "u": 0.5}), SCHEMA)
    cur.add_analyst("ann", "t", epsilon=10**6)
    return cur


@pytest.mark.slow  # statistical: many releases through the curator
def test_min_and_max_through_the_curator_keep_their_rank_statement(curator: Curator) -> None:
    beta, n, eps = 0.05, 300, Fraction(1, 2)
    mins, maxs, kept = [], [], 0
    for _ in range(n):
        res = curator.query("ann", "SELECT MIN(x), MAX(x) FROM t", epsilon=2 * eps)
        (lo, hi), (ci_lo, ci_hi) = res.rows[0], res.confidence_intervals[0]
        assert res.columns == ("MIN(x)", "MAX(x)")
        assert isinstance(lo, int) and LO <= lo <= HI and isinstance(hi, int) and LO <= hi <= HI
        assert "rows lie below the answer" in ci_lo["note"]
        assert "rows lie above the answer" in ci_hi["note"]
        assert f"the draw aims at the value of rank {aim(eps, HI - LO + 1)}" in ci_lo["note"]
        below, above = sum(x < lo for x in DATA), sum(x > hi for x in DATA)
        kept += below <= ci_lo["rank_error"] and above <= ci_hi["rank_error"]
        mins.append(lo)
        maxs.append(hi)
    assert kept / n >= coverage_floor(1 - 2 * beta, n)  # both statements, a union bound
    # The draws follow the exact law (chi-square against the brute-force reference).
    for draws, q in ((mins, Fraction(0)), (maxs, Fraction(1))):
        law = reference_law(DATA, LO, HI, q, eps, rows_per_unit=1, aim=aim(eps, HI - LO + 1))
        assert chi_square_pvalue(draws, law, LO) > 1e-3


# Heights in whole cm, both extremes far inside the declared bounds [0, 340] (the shape where
# the plain q = 0 quantile is nearly uniform between the bound and the true minimum).
HEIGHTS = np.round(np.random.default_rng(170).normal(170, 10, 600)).astype(int).tolist()
H_HI = 340


def exact_abs_error(law: list[float], truth: int) -> float:
    return sum(p * abs(c - truth) for c, p in enumerate(law))


# Exact laws at three ε and observed releases (about 7 s each): not in the quick tier.
@pytest.mark.slow
@pytest.mark.parametrize("func", ["MIN", "MAX"])
def test_min_max_error_falls_with_epsilon_to_a_third_of_the_plain_extreme_quantile(
    tmp_path: Path, func: str
) -> None:
    src = InsecureSeededSource(7, i_understand_this_is_not_private=True)
    cur = Curator(tmp_path / "h.duckdb", source=src, keep_open=True)  # 300 releases, one open
    declared = one_table("h", {"x": ints(0, H_HI)})
    cur.register_dataset("h", pd.DataFrame({"x": HEIGHTS}), declared)
    cur.add_analyst("ann", "h", epsilon=10**6)
    q = Fraction(0) if func == "MIN" else Fraction(1)
    truth = min(HEIGHTS) if func == "MIN" else max(HEIGHTS)
    errors = {}
    for eps in (Fraction(1), Fraction(10)):
        # main's method, exactly: the extreme quantile aimed at rank 0 (reference law)
        plain = exact_abs_error(reference_law(HEIGHTS, 0, H_HI, q, eps, 1, aim=0), truth)
        aimed = exact_abs_error(
            reference_law(HEIGHTS, 0, H_HI, q, eps, 1, aim=aim(eps, H_HI + 1)), truth
        )
        draws = [
            cur.query("ann", f"SELECT {func}(x) FROM h", epsilon=eps).rows[0][0] for _ in range(150)
        ]
        observed = float(np.mean(np.abs(np.asarray(draws) - truth)))
        # the released answers have the aimed law's error (a generous statistical margin) ...
        assert observed == pytest.approx(aimed, rel=0.35)
        # ... at most a third of the plain extreme quantile's
        assert observed <= plain / 3 and aimed <= plain / 3
        errors[eps] = observed
    assert errors[Fraction(10)] < errors[Fraction(1)]


def test_min_max_use_the_quantile_histogram_the_backend_already_computes(
    curator: Curator,
) -> None:
    plan = parse_query("SELECT MIN(x), QUANTILE(x, 0), MAX(x) FROM t", schema(1, LO, HI))
    assert measurements(plan) == (
        Measurement(MeasurementKind.QUANTILE, "x", Fraction(0)),
        Measurement(MeasurementKind.QUANTILE, "x", Fraction(1)),
    )
    exact = curator.exact_aggregates("SELECT MIN(x), MAX(x) FROM t")
    values, counts = np.unique(DATA, return_counts=True)
    for hist in exact.histograms.values():
        assert hist[0].tolist() == values.tolist() and hist[1].tolist() == counts.tolist()


def test_grouped_min_estimate_and_planning(curator: Curator) -> None:
    res = curator.query("ann", "SELECT g, MIN(x) AS low FROM t GROUP BY g", epsilon=1)
    assert [row[0] for row in res.rows] == ["a", "b"]
    est = curator.estimate("SELECT MAX(x) FROM t", epsilon=1)
    (acc,) = est["accuracy"]
    assert acc["measurement"] == "quantile(x,1)" and acc["rank_error"] > 0
    (col,) = curator.column_accuracy("SELECT MAX(x) FROM t", epsilon=1)
    assert col == {"column": "MAX(x)", "rank_error": acc["rank_error"]}
    eps = curator.epsilon_for("SELECT MIN(x) FROM t", accuracy=10)
    (at,) = curator.column_accuracy("SELECT MIN(x) FROM t", epsilon=eps)
    assert at["rank_error"] <= 10


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT MIN(DISTINCT x) FROM t", "MIN with DISTINCT"),
        ("SELECT MAX(x, 3) FROM t", "MAX with DISTINCT or several arguments"),
        ("SELECT MIN(u) FROM t", r"MIN\(u\) needs declared bounds"),
        ("SELECT MAX(c) FROM t", r"MAX\(c\) needs a numeric column"),
        ("SELECT ARRAY_AGG(x) FROM t", r"allowed: COUNT, COUNT\(DISTINCT column\), SUM, AVG, "
         "VARIANCE, STDDEV, MEDIAN, QUANTILE, MIN, MAX"),
    ],
)  # fmt: skip
def test_refusals_name_the_construct(sql: str, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        parse_query(sql, schema(1, LO, HI))
