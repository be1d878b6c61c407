"""``infodp.Session`` over DataFrames: nothing on disk, DataFrames back, the budget enforced.

The released numbers are checked against the exact aggregates with the interval the curator
states (Laplace tail bound, Dwork & Roth 2014, Thm 3.8, applied per cell), and the spend
against basic composition (Dwork & Roth 2014, Thm 3.16): ε adds up exactly.
"""

from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import infodp
from _stores import cats, floats, ints, one_table
from infodp.errors import BudgetExceeded, ParameterError
from infodp.mechanisms.sampling import InsecureSeededSource

SCHEMA = one_table(
    "people",
    {"region": cats("north", "south", "east"), "income": floats(0, 100000), "age": ints(0, 100)},
)


def _frame(n: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame(
        {
            "region": rng.choice(["north", "south", "east"], n),
            "income": rng.uniform(0, 100000, n).round(2),
            "age": rng.integers(0, 100, n),
        }
    )


def _seeded(seed: int) -> InsecureSeededSource:
    return InsecureSeededSource(seed, i_understand_this_is_not_private=True)


SQL = "SELECT region, COUNT(*), SUM(income), AVG(age) FROM people GROUP BY region"


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow"])
def test_session_in_an_empty_directory(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    df = _frame()
    data = {"pandas": df, "polars": pl.from_pandas(df), "arrow": pa.Table.from_pandas(df)}[kind]
    s = infodp.Session(data, SCHEMA, epsilon=1.0, source=_seeded(1))
    r = s.query(SQL, epsilon=0.5)

    out = r.to_pandas()
    assert isinstance(out, pd.DataFrame)
    assert sorted(out["region"]) == ["east", "north", "south"]
    assert {"COUNT(*)_low", "COUNT(*)_high", "AVG(age)_low", "SUM(income)_high"} <= set(out)
    truth = df.groupby("region").agg(n=("age", "size"), s=("income", "sum"), a=("age", "mean"))
    for _, row in out.iterrows():
        t = truth.loc[row["region"]]
        # 95% intervals: with 9 cells a miss is possible but rare; a wrong sign/scale is not.
        assert abs(row["COUNT(*)"] - t["n"]) < 3 * (row["COUNT(*)_high"] - row["COUNT(*)_low"])
        assert abs(row["AVG(age)"] - t["a"]) < 10
        assert abs(row["SUM(income)"] - t["s"]) / t["s"] < 0.2
    polars_out = r.to_polars()
    assert isinstance(polars_out, pl.DataFrame)
    assert polars_out.columns == list(out.columns)

    assert s.remaining_epsilon == 0.5  # 1 − 0.5, exact fractions
    s.query("SELECT COUNT(*) FROM people", epsilon=0.5)
    assert s.remaining_epsilon == 0
    with pytest.raises(BudgetExceeded):
        s.query("SELECT COUNT(*) FROM people", epsilon=0.01)
    assert s.remaining_epsilon == 0  # a refusal spends nothing
    s.close()
    assert os.listdir(tmp_path) == []


def test_result_repr_is_short_and_html_has_intervals() -> None:
    s = infodp.Session(_frame(300), SCHEMA, epsilon=1, source=_seeded(2))
    r = s.query(SQL, epsilon=0.3)
    text = repr(r)
    assert len(text.splitlines()) <= 8
    assert "QueryResult: 3 rows, 95% intervals" in text
    assert "MeasurementCost" not in text and "Fraction(" not in text
    assert "ε 0.3 spent" in text and "ε 0.7 left" in text
    page = r._repr_html_()
    assert page.startswith("<table>") and page.count("<tr>") == 4
    assert "[" in page  # intervals shown beside the values
    assert "ε 0.7 of 1 left" in repr(s)


def test_durable_ledger_keeps_the_budget(tmp_path: Path) -> None:
    path = tmp_path / "budget.ledger"
    df = _frame(200)
    s = infodp.Session(df, SCHEMA, epsilon=1, ledger=path, source=_seeded(3))
    s.query("SELECT COUNT(*) FROM people", epsilon=0.75)
    s.close()
    again = infodp.Session(df, SCHEMA, epsilon=1, ledger=path, source=_seeded(4))
    assert again.remaining_epsilon == 0.25
    with pytest.raises(BudgetExceeded):
        again.query("SELECT COUNT(*) FROM people", epsilon=0.5)
    with pytest.raises(ParameterError, match="budget recorded"):
        infodp.Session(df, SCHEMA, epsilon=2, ledger=path)
    with pytest.raises(ParameterError, match="data recorded"):
        infodp.Session(df.head(10), SCHEMA, epsilon=1, ledger=path)
    assert sorted(p.name for p in tmp_path.iterdir())[0] == "budget.ledger"


def test_curator_memory_store_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from infodp.curator import Curator

    monkeypatch.chdir(tmp_path)
    c = Curator(":memory:", source=_seeded(5))
    c.register_dataset("people", _frame(100), SCHEMA)
    c.add_analyst("a", "people", epsilon=1)
    c.query("a", "SELECT COUNT(*) FROM people", epsilon=0.5)
    c.close()
    assert os.listdir(tmp_path) == []


def test_import_infodp_is_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, infodp; "
        "print(sorted(m for m in ('duckdb', 'pandas', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_session_repr_shows_no_row_count_on_neighbouring_frames() -> None:
    df = _frame(200)
    with_one, without = df, df.iloc[1:]  # neighbours: one person fewer
    texts = []
    for frame in (with_one, without):
        s = infodp.Session(frame, SCHEMA, epsilon=1, source=_seeded(1))
        texts.append(repr(s))
        s.close()
    assert texts[0] == texts[1]
    assert "200" not in texts[0] and "199" not in texts[0] and "rows" not in texts[0]


def test_session_reopened_on_other_data_shows_no_row_count(tmp_path: Path) -> None:
    path = tmp_path / "budget.ledger"
    df = _frame(200)
    infodp.Session(df, SCHEMA, epsilon=1, ledger=path).close()
    messages = []
    # Neighbours of the recorded data (one row fewer, one row changed) and a same-size frame
    # with other values: each is refused, with one message that quotes no count.
    changed = df.copy()
    changed.loc[0, "age"] = (int(changed.loc[0, "age"]) + 1) % 100
    for other in (df.iloc[1:], changed, _frame(200).assign(age=0)):
        with pytest.raises(ParameterError, match="data recorded") as err:
            infodp.Session(other, SCHEMA, epsilon=1, ledger=path)
        messages.append(str(err.value))
    assert len(set(messages)) == 1
    assert "200" not in messages[0] and "199" not in messages[0]
    # The recorded data themselves still open.
    infodp.Session(df, SCHEMA, epsilon=1, ledger=path).close()


# -- what a session delegates to its curator: estimates, ε for an accuracy, synopses, noise and
# the budget's currency ------------------------------------------------------------------------


def test_estimate_fits_at_the_edge_and_spends_nothing() -> None:
    s = infodp.Session(_frame(300), SCHEMA, epsilon=1, source=_seeded(2))
    s.query("SELECT COUNT(*) FROM people", epsilon="0.5")
    # Basic composition (Dwork & Roth 2014, Thm 3.16): exactly 1/2 is left.
    assert s.estimate("SELECT COUNT(*) FROM people", epsilon="0.5").fits is True
    assert s.estimate("SELECT COUNT(*) FROM people", epsilon="0.5000001").fits is False
    assert s.remaining_epsilon == 0.5
    s.close()


def test_a_zcdp_session_charges_half_epsilon_squared() -> None:
    # A pure ε-DP release is ε²/2-zCDP (Bun & Steinke 2016, Prop. 1.4): ρ = 0.5 holds one
    # query at ε = 1 and nothing after it.
    from infodp.accounting.accountant import Budget

    s = infodp.Session(_frame(300), SCHEMA, budget=Budget.zcdp("0.5"), source=_seeded(3))
    assert s.estimate("SELECT COUNT(*) FROM people", epsilon="1.001").fits is False
    s.query("SELECT COUNT(*) FROM people", epsilon=1)
    assert s.estimate("SELECT COUNT(*) FROM people", epsilon="0.01").fits is False
    with pytest.raises(BudgetExceeded):
        s.query("SELECT COUNT(*) FROM people", epsilon="0.01")
    s.close()
    with pytest.raises(ParameterError, match="exactly one"):
        infodp.Session(_frame(10), SCHEMA, epsilon=1, budget=Budget.zcdp("0.5"))


def test_gaussian_noise_by_delegation() -> None:
    s = infodp.Session(_frame(300), SCHEMA, epsilon=1, delta="1e-5", source=_seeded(4))
    r = s.query("SELECT COUNT(*) FROM people", epsilon="0.5", delta="1e-6", noise="gaussian")
    assert r.cost.parts[0].mechanism is not None
    assert type(r.cost.parts[0].mechanism).__name__ == "DiscreteGaussianMechanism"
    # (ε, δ) adds up under basic composition (Dwork & Roth 2014, Thm 3.16).
    assert s.remaining_delta == pytest.approx(9e-6)
    s.close()


def test_epsilon_for_is_the_least_epsilon_to_three_digits() -> None:
    s = infodp.Session(_frame(300), SCHEMA, epsilon=1, source=_seeded(5))
    sql = "SELECT COUNT(*) FROM people"
    eps = s.epsilon_for(sql, accuracy=20)

    def width(e: object) -> float:
        return float(s.estimate(sql, epsilon=e).accuracy[0]["halfwidth"])

    # The discrete Laplace tail (Canonne, Kamath & Steinke 2020): P(|X| > h) shrinks as ε
    # grows, so the answer is feasible and 1% less is not (3 significant digits, rounded up).
    assert width(eps) <= 20 < width(eps * Fraction(99, 100))
    s.close()


def test_synopsis_release_charges_once_and_queries_are_free() -> None:
    s = infodp.Session(_frame(300), SCHEMA, epsilon=1, source=_seeded(6))
    syn = s.release_synopsis("regions", ["region"], epsilon="0.25")
    assert syn.dataset == "people" and s.remaining_epsilon == 0.75
    for _ in range(3):
        out = s.query_synopsis("regions", "SELECT region, COUNT(*) FROM people GROUP BY region")
        assert len(out["rows"]) == 3
    assert s.remaining_epsilon == 0.75
    s.close()


def test_session_answers_filter_and_distinct_counts() -> None:
    df = _frame()
    s = infodp.Session(df, SCHEMA, epsilon=2, source=_seeded(5))
    sql = (
        "SELECT region, COUNT(*) FILTER (WHERE age >= 50) AS old, COUNT(DISTINCT age) AS ages "
        "FROM people GROUP BY region"
    )
    out = s.query(sql, epsilon=1).to_pandas().set_index("region")
    truth = df.assign(old=df["age"] >= 50).groupby("region").agg(old=("old", "sum"))
    truth["ages"] = df.groupby("region")["age"].nunique()
    for region, row in out.iterrows():
        for name in ("old", "ages"):
            half = (row[f"{name}_high"] - row[f"{name}_low"]) / 2
            # Three half-widths: a miss has probability about β³ (Laplace tails).
            assert abs(row[name] - truth.loc[region, name]) <= 3 * half + 1, (region, name)
    assert s.remaining_epsilon == 1
    with pytest.raises(ParameterError, match="FILTER"):
        s.query("SELECT MEDIAN(age) FILTER (WHERE age > 3) FROM people", epsilon=0.5)
    assert s.remaining_epsilon == 1  # a refusal spends nothing
    s.close()


def test_repr_of_an_accountant_budget_shows_its_own_currency() -> None:
    # A zCDP budget's basic (ε, δ) totals are informational zeros: the repr showed
    # "ε 0 of 0 left" for a budget with all of its ρ left.
    import re

    from infodp.accounting import Budget

    frame = pd.DataFrame({"x": [1, 2, 3]})
    schema = one_table("t", {"x": ints(0, 9)})
    s = infodp.Session(frame, schema, budget=Budget.zcdp(0.5))
    before = repr(s)
    assert "ε 0 of 0" not in before and "zcdp budget (rho 0.5), 0.5 left" in before
    s.query("SELECT COUNT(*) FROM t", epsilon=0.1, delta=1e-9, noise="gaussian")
    found = re.search(r"rho 0\.5\), ([0-9.e-]+) left", repr(s))
    assert found is not None and 0 < float(found.group(1)) < 0.5
