"""The curator engine end to end on small tables.

Independent references: plain DuckDB SQL on the bounded data (exact aggregates before noise),
the closed-form discrete Laplace tail P(|Y| > k) = 2p^(k+1)/(1+p) (coverage of the stated
intervals), pandas for the per-unit contribution limits, and exact fractions for budgets.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _stores import TEXT, cats, floats, ints, one_table
from infodp.curator.backends.duckdb import column_grid, empty_relation
from infodp.curator.engine import Curator, as_budget_fraction
from infodp.errors import BudgetExceeded, ParameterError, QueryFailed
from infodp.mechanisms.sampling import InsecureSeededSource


def seeded(seed: int) -> InsecureSeededSource:
    return InsecureSeededSource(seed, i_understand_this_is_not_private=True)


SIMPLE = one_table("t", {"x": ints(0, 9)})

SCHEMA: dict[str, Any] = one_table(
    "people",
    {
        "age": ints(0, 100),
        "income": floats(0, 1000, "drop"),
        "region": cats("north", "south", "east", "west"),
        "city": TEXT,
    },
    unit="person_id",
    max_rows_per_unit=2,
)


def people_frame(n: int = 600, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    # Units 0..n/3-1 with 1..4 rows each (so the 2-row limit bites); income on the 1/4 grid
    # and sometimes out of bounds or missing; ages sometimes out of bounds.
    unit = np.repeat(np.arange(n // 3), 3)[:n]
    frame = pd.DataFrame(
        {
            "person_id": unit,
            "age": rng.integers(-20, 130, n),
            "income": np.round(rng.normal(500, 400, n) * 4) / 4,
            "region": rng.choice(["north", "south", "east", "west", "elsewhere"], n),
            "city": rng.choice(["big"] * 20 + ["mid"] * 10 + ["rare"], n),
        }
    )
    frame.loc[::17, "income"] = np.nan
    return frame


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Curator, pd.DataFrame]:
    db = tmp_path_factory.mktemp("store") / "s.duckdb"
    cur = Curator(db, source=seeded(1))
    frame = people_frame()
    cur.register_dataset("people", frame, SCHEMA)
    cur.add_analyst("alice", "people", epsilon=10**6, delta="0.5")
    return cur, frame


@pytest.mark.slow
def test_exact_aggregates_equal_plain_duckdb_on_bounded_data(
    store: tuple[Curator, pd.DataFrame],
) -> None:
    cur, frame = store
    # Every unit has <= 3 rows; bound to 2 per unit independently of the engine: pandas keeps
    # the units' rows, and plain DuckDB aggregates over every 2-row subset would differ, so
    # compare on a row-level schema first (no random choice), then check the row limit below.
    rowdb = cur.db.parent / "rows.duckdb"
    rcur = Curator(rowdb, source=seeded(2))
    schema = {**SCHEMA, "privacy_unit": "row", "max_rows_per_unit": 1}
    rcur.register_dataset("people", frame.drop(columns=["person_id"]), schema)
    sql = (
        "SELECT region, COUNT(*), COUNT(income), SUM(age), AVG(income), VARIANCE(age) "
        "FROM people WHERE age >= 10 OR city = 'rare' GROUP BY region"
    )
    exact = rcur.exact_aggregates(sql)
    con = duckdb.connect()
    con.register("f", frame)
    plain = con.execute(
        "SELECT region, count(*), count(income) FILTER (WHERE isfinite(income)), "
        "sum(least(greatest(age, 0), 100)), "
        "sum(least(greatest(income, 0), 1000) - 500) FILTER (WHERE isfinite(income)), "
        "sum((least(greatest(age, 0), 100) - 50) ^ 2) "
        "FROM f WHERE (age >= 10 OR city = 'rare') "
        "AND region IN ('north', 'south', 'east', 'west') GROUP BY region"
    ).fetchall()
    income_step = column_grid(rcur.schema("people").column("income")).step
    for region, n, n_inc, s_age, cs_inc, css_age in plain:
        got = exact.values[(region,)]
        # measurement order: count(*), count(income), sum(age), csum(income), count(income)...
        assert got[0] == n
        assert got[1] == n_inc
        assert got[2] == s_age
        assert got[3] * income_step == pytest.approx(cs_inc, abs=1e-9)
        assert got[5] == round(css_age)


@pytest.mark.slow
def test_bounds_are_enforced_by_the_aggregating_sql_itself(tmp_path: Path) -> None:
    # The bounded copy made at registration cannot be edited out of its bounds: the table's
    # constraints refuse it (infodp.curator.backends.bound_checks). A table replaced without
    # them (as an older store holds) is bounded inside the statement that aggregates: no row
    # contributes beyond the declared bounds. A NULL-free column (policy error) is bounded by
    # a row filter: an edited row is left out of the query entirely; a column whose dropped
    # values are NULL (policy drop) is clamped (and a dropped NULL stays dropped).
    db = tmp_path / "t.duckdb"
    cur = Curator(db, source=seeded(3))
    frame = people_frame(60)
    schema = {**SCHEMA, "privacy_unit": "row", "max_rows_per_unit": 1}
    cur.register_dataset("people", frame.drop(columns=["person_id"]), schema)
    con = duckdb.connect(str(db))
    edits = [
        "UPDATE people SET __bnd_age = 10 * __bnd_age + 1000000 WHERE region = 'north'",
        "UPDATE people SET __bnd_income = -5000000",
    ]
    for edit in edits:
        with pytest.raises(duckdb.ConstraintException):
            con.execute(edit)
    con.execute("CREATE TABLE unchecked AS SELECT * FROM people")
    con.execute("DROP TABLE people")
    con.execute("ALTER TABLE unchecked RENAME TO people")
    for edit in edits:
        con.execute(edit)
    con.close()
    sql = "SELECT COUNT(*), COUNT(income), SUM(age), AVG(income) FROM people"
    exact = cur.exact_aggregates(sql)
    (rows, count_income, sum_age, csum_income, *_rest) = exact.values[()]
    kept = frame[frame["region"] != "north"]
    assert 0 < len(kept) < len(frame)
    assert rows == len(kept)  # every edited age leaves its row out of the query
    assert sum_age == int(kept["age"].clip(0, 100).sum())
    income = column_grid(cur.schema("people").column("income"))
    assert count_income == len(kept)  # NULLs were overwritten by the edit, still counted once
    assert csum_income == (income.lo - income.center) * len(kept)  # clamped to the lower bound


def test_the_check_relation_has_the_stored_columns_and_types(
    store: tuple[Curator, pd.DataFrame],
) -> None:
    # The pre-reservation check binds the statements against empty_relation instead of the
    # table: it must offer every stored column under the same name and type (the privacy unit
    # column aside when undeclared: it is typed VARCHAR there, as the empty table was).
    cur, _ = store
    schema = cur.schema("people")
    con = duckdb.connect(str(cur.db), read_only=True)
    try:
        stored = con.execute('DESCRIBE "people"').fetchall()
        empty = con.execute(f"DESCRIBE SELECT * FROM {empty_relation(schema)}").fetchall()
        assert con.execute(f"SELECT count(*) FROM {empty_relation(schema)}").fetchone() == (0,)
    finally:
        con.close()
    declared = {c.name for c in schema.columns}
    want = {n: t for n, t, *_ in stored if n != schema.privacy_unit or n in declared}
    got = {n: t for n, t, *_ in empty if n != schema.privacy_unit or n in declared}
    assert got == want


def test_row_limit_per_unit_runs_in_the_database(store: tuple[Curator, pd.DataFrame]) -> None:
    cur, frame = store
    exact = cur.exact_aggregates("SELECT COUNT(*) FROM people")
    expected = int(frame.groupby("person_id").size().clip(upper=2).sum())
    assert exact.values[()][0] == expected


@pytest.mark.slow
def test_group_limit_per_unit(tmp_path: Path) -> None:
    frame = pd.DataFrame({"uid": [1, 1, 2, 2, 3], "g": ["a", "b", "a", "b", "a"]})
    schema = one_table(
        "t", {"g": cats("a", "b")}, unit="uid", max_rows_per_unit=2, max_groups_per_unit=1
    )
    cur = Curator(tmp_path / "g.duckdb", source=seeded(0))
    cur.register_dataset("t", frame, schema)
    exact = cur.exact_aggregates("SELECT g, COUNT(*) FROM t GROUP BY g")
    # each unit keeps one group: 3 rows in total, whichever groups are kept
    assert sum(v[0] or 0 for v in exact.values.values()) == 3


@pytest.mark.slow  # --durations: among the slowest tests of the suite
@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    values=st.lists(st.integers(-1000, 1000), min_size=1, max_size=40),
    low=st.integers(-500, 0),
    width=st.integers(0, 600),
)
def test_clamped_sum_matches_duckdb_property(values: list[int], low: int, width: int) -> None:
    high = low + width
    # An in-memory store: the same DuckDB backend and SQL, without a file per example.
    cur = Curator(":memory:", source=seeded(0))
    schema = one_table("t", {"x": ints(low, high)})
    cur.register_dataset("t", pd.DataFrame({"x": values}), schema)
    exact = cur.exact_aggregates("SELECT SUM(x), COUNT(*) FROM t")
    plain = (
        duckdb.connect()
        .execute(
            f"SELECT sum(least(greatest(x, {low}), {high}))::BIGINT "
            f"FROM (SELECT unnest({values}) AS x)"
        )
        .fetchone()
    )
    assert plain is not None
    assert exact.values[()][0] == plain[0]
    assert exact.values[()][1] == len(values)


@pytest.mark.slow  # --durations: among the slowest tests of the suite
def test_noisy_answers_fall_inside_stated_intervals_at_the_stated_rate(tmp_path: Path) -> None:
    # 100 disjoint cells per query, 6 seeds: 600 independent trials per aggregate.
    rng = np.random.default_rng(5)
    n = 3000
    frame = pd.DataFrame({"k": rng.integers(0, 100, n), "v": rng.integers(0, 50, n)})
    schema = one_table("t", {"k": ints(0, 99), "v": ints(0, 50)})
    sql = "SELECT k, COUNT(*), SUM(v) FROM t GROUP BY k"
    hits = {"count": 0, "sum": 0}
    trials = 0
    for seed in range(6):
        # One store registered once; each run draws its noise from its own seed, so the runs
        # are independent trials as with one store per run.
        cur = Curator(tmp_path / "c.duckdb", source=seeded(seed))
        if seed == 0:
            cur.register_dataset("t", frame, schema)
            cur.add_analyst("a", "t", epsilon=10)
        exact = cur.exact_aggregates(sql).values
        result = cur.query("a", sql, epsilon=1)
        for row, ci in zip(result.rows, result.confidence_intervals, strict=True):
            truth = exact.get((row[0],), (0, 0))
            hits["count"] += ci[1][0] <= truth[0] <= ci[1][1]
            hits["sum"] += ci[2][0] <= truth[1] <= ci[2][1]
            trials += 1
        cur.close()
    # Nominal 95%; discrete Laplace intervals cover with prob. in [0.95, 0.96] here.
    # 600 trials: 3.5 sigma band is about ±0.03.
    for rate in (hits["count"] / trials, hits["sum"] / trials):
        assert 0.92 <= rate <= 0.99


@pytest.mark.slow
def test_nulls_nan_inf_need_a_declared_policy(tmp_path: Path) -> None:
    cur = Curator(tmp_path / "n.duckdb")
    base = one_table("t", {"x": floats(0, 10)})
    for bad in ([1.0, None], [1.0, float("nan")], [1.0, float("inf")], [1.0, -float("inf")]):
        with pytest.raises(ParameterError, match="nulls: drop"):
            cur.register_dataset("t", pd.DataFrame({"x": bad}), base)
    # nothing half-registered
    assert cur.ledger.datasets() == []
    dropped = {**base, "columns": {"x": {"type": "float", "bounds": [0, 10], "nulls": "drop"}}}
    cur.register_dataset(
        "t", pd.DataFrame({"x": [1.0, None, float("nan"), float("inf"), 2.0]}), dropped
    )
    vals = cur.exact_aggregates("SELECT COUNT(x), SUM(x), COUNT(*) FROM t").values[()]
    step = column_grid(cur.schema("t").column("x")).step
    assert vals[0] == 2 and vals[1] * step == 3.0 and vals[2] == 5
    replaced = {
        **base,
        "columns": {"x": {"type": "float", "bounds": [0, 10], "nulls": {"replace": 5}}},
    }
    cur.register_dataset("u", pd.DataFrame({"x": [1.0, None, float("-inf")]}), replaced)
    vals = cur.exact_aggregates("SELECT COUNT(x), SUM(x) FROM u").values[()]
    assert vals[0] == 3 and vals[1] * step == 11.0


@pytest.mark.parametrize("eps", [-1, 0, float("nan"), float("inf"), "abc", True])
def test_bad_epsilon_is_refused_before_anything_is_spent(
    store: tuple[Curator, pd.DataFrame], eps: object
) -> None:
    cur, _ = store
    before = cur.ledger.budget("alice", "people")
    with pytest.raises(ParameterError, match="epsilon"):
        cur.query("alice", "SELECT COUNT(*) FROM people", epsilon=eps)
    assert cur.ledger.budget("alice", "people") == before


def test_unknown_analyst_table_and_missing_delta(store: tuple[Curator, pd.DataFrame]) -> None:
    cur, _ = store
    with pytest.raises(ParameterError, match="no budget"):
        cur.query("mallory", "SELECT COUNT(*) FROM people", epsilon=1)
    with pytest.raises(ParameterError, match="unknown dataset 'nope'"):
        cur.query("alice", "SELECT COUNT(*) FROM nope", epsilon=1)
    with pytest.raises(ParameterError, match="partition"):
        cur.query("alice", "SELECT city, COUNT(*) FROM people GROUP BY city", epsilon=1)
    assert not any(e.status == "reserved" for e in cur.ledger.entries())


@pytest.mark.slow
def test_budget_is_exact_and_exhaustion_releases_nothing(tmp_path: Path) -> None:
    cur = Curator(tmp_path / "b.duckdb", source=seeded(3))
    cur.register_dataset(
        "t",
        pd.DataFrame({"x": [1, 2, 3]}),
        one_table("t", {"x": ints(0, 3)}),
    )
    cur.add_analyst("a", "t", epsilon="1")
    # 0.1 is not a binary float: ten spends must still add up to exactly 1 (exact fractions).
    for _ in range(10):
        cur.query("a", "SELECT COUNT(*) FROM t", epsilon=0.1)
    assert cur.ledger.budget("a", "t").spent_epsilon == Fraction(1)
    with pytest.raises(BudgetExceeded) as info:
        cur.query("a", "SELECT COUNT(*) FROM t", epsilon=0.1)
    text = str(info.value)
    assert (
        "requested epsilon=0.1" in text
        and "remaining epsilon=0" in text
        and "short by epsilon=0.1" in text
    )
    assert len(cur.ledger.entries()) == 10 and not cur.ledger.check()


@pytest.mark.slow
def test_failure_before_touching_data_refunds(tmp_path: Path) -> None:
    db = tmp_path / "r.duckdb"
    cur = Curator(db, source=seeded(4), timeout=0.5)
    cur.register_dataset(
        "t",
        pd.DataFrame({"x": [1, 2]}),
        one_table("t", {"x": ints(0, 3)}),
    )
    cur.add_analyst("a", "t", epsilon=1)
    holder = duckdb.connect(
        str(db)
    )  # a read-write connection: the store cannot be opened read-only
    try:
        with pytest.raises(duckdb.Error):
            cur.query("a", "SELECT COUNT(*) FROM t", epsilon=0.5)
    finally:
        holder.close()
    (entry,) = cur.ledger.entries()
    assert entry.status == "cancelled" and entry.result_json is None
    assert cur.ledger.budget("a", "t").spent_epsilon == 0 and not cur.ledger.check()


@pytest.mark.slow
def test_failure_after_touching_data_keeps_the_cost(tmp_path: Path) -> None:
    def boom(stage: str, entry: int) -> None:
        if stage == "aggregated":
            raise RuntimeError("crash after the data was read")

    cur = Curator(tmp_path / "f.duckdb", source=seeded(5), _hook=boom)
    cur.register_dataset(
        "t",
        pd.DataFrame({"x": [1, 2]}),
        one_table("t", {"x": ints(0, 3)}),
    )
    cur.add_analyst("a", "t", epsilon=1)
    # The analyst sees one constant error (the cause could depend on the data); the ledger
    # keeps the cause.
    with pytest.raises(QueryFailed) as info:
        cur.query("a", "SELECT COUNT(*) FROM t", epsilon=0.25)
    assert str(info.value) == QueryFailed.MESSAGE
    (entry,) = cur.ledger.entries()
    assert entry.status == "failed" and entry.result_json is None
    assert entry.error is not None and "crash after the data was read" in entry.error
    assert cur.ledger.budget("a", "t").spent_epsilon == Fraction(1, 4)


@pytest.mark.slow
def test_partition_selection_hides_rare_keys_and_charges_delta(tmp_path: Path) -> None:
    # 'big' 400 rows, 'mid' 100, 'rare' 2 (one unit with 2 rows): with ε = 1 on COUNT(*)
    # (scale m/ε = 2) and δ = 1e-9 the threshold is m + ⌈2 ln(1/δ)⌉ ≈ 44 (Wilson et al. 2020).
    cities = ["big"] * 400 + ["mid"] * 100 + ["rare"] * 2
    frame = pd.DataFrame({"uid": [*range(500), 999, 999], "city": cities})
    schema = one_table("t", {"city": TEXT}, unit="uid", max_rows_per_unit=2)
    cur = Curator(tmp_path / "p.duckdb", source=seeded(8))
    cur.register_dataset("t", frame, schema)
    cur.add_analyst("a", "t", epsilon=100, delta=1e-6)
    seen: set[str] = set()
    for _ in range(10):
        result = cur.query("a", "SELECT city, COUNT(*) FROM t GROUP BY city", epsilon=1, delta=1e-9)
        seen |= {row[0] for row in result.rows}
        assert result.cost.information_nats == math.inf  # the key set is not bounded here
    assert seen == {"big", "mid"}
    assert cur.ledger.budget("a", "t").spent_delta == 10 * as_budget_fraction("d", 1e-9)


def test_selection_threshold_bounds_delta() -> None:
    from infodp.curator.engine import MeasurementCost
    from infodp.curator.plan.nodes import Measurement
    from infodp.mechanisms import PartitionSelection

    # Independent check: k * P(m + Y >= tau) by direct summation of the pmf
    # P(y) = (1-p)/(1+p) p^|y| (discrete Laplace; CKS 2020 Def. 1).
    for scale_num, k, m, delta in [(3, 1, 1, 1e-6), (10, 4, 2, 1e-5), (1, 2, 3, 1e-3)]:
        part = MeasurementCost(Measurement("count_rows"), Fraction(m, scale_num), m, 1.0)
        tau = PartitionSelection(part.scale, k, m, Fraction(delta)).threshold()
        b = part.scale
        p = math.exp(-1 / b)
        tail = sum((1 - p) / (1 + p) * p**y for y in range(tau - m, tau - m + 4000))
        assert k * tail <= delta
        tail_one_less = sum((1 - p) / (1 + p) * p**y for y in range(tau - m - 1, tau - m + 4000))
        assert k * tail_one_less > delta  # and the threshold is the smallest such integer


@pytest.mark.slow  # ~0.8 CPU-s (measured)
def test_quantiles_within_stated_rank_error(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    ages = rng.integers(0, 101, 2000)
    schema = one_table("t", {"age": ints(0, 100)})
    inside = 0
    runs = 10
    for seed in range(runs):
        # One store registered once; each run draws its noise from its own seed, so the runs
        # are independent trials as with one store per run.
        cur = Curator(tmp_path / "q.duckdb", source=seeded(seed))
        if seed == 0:
            cur.register_dataset("t", pd.DataFrame({"age": ages}), schema)
            cur.add_analyst("a", "t", epsilon=runs)
        r = cur.query("a", "SELECT MEDIAN(age), QUANTILE(age, 0.9) FROM t", epsilon=1)
        for value, ci, q in zip(r.rows[0], r.confidence_intervals[0], (0.5, 0.9), strict=True):
            below = int((ages < value).sum())
            at_most = int((ages <= value).sum())
            target = q * len(ages)
            # distance from the target rank to the ranks the answer occupies
            dist = (
                0 if below <= target <= at_most else min(abs(below - target), abs(at_most - target))
            )
            inside += dist <= ci["rank_error"]
        cur.close()
    assert inside >= 0.9 * 2 * runs


@pytest.mark.slow
def test_information_cap_is_enforced(tmp_path: Path) -> None:
    cur = Curator(tmp_path / "i.duckdb", source=seeded(6))
    cur.register_dataset(
        "t",
        pd.DataFrame({"x": list(range(100))}),
        one_table("t", {"x": ints(0, 99)}, public_max_rows=100),
        info_cap_bits=5,
    )
    cur.add_analyst("a", "t", epsilon=100)
    cur.add_analyst("b", "t", epsilon=100)
    first = cur.query("a", "SELECT COUNT(*) FROM t", epsilon=0.1)
    assert 0 < first.cost.information_nats < 5 * math.log(2)
    # the cap is per dataset, across analysts
    with pytest.raises(BudgetExceeded, match="bits"):
        for _ in range(50):
            cur.query("b", "SELECT COUNT(*) FROM t", epsilon=0.1)


def test_result_carries_cost_leakage_and_remaining(store: tuple[Curator, pd.DataFrame]) -> None:
    cur, _ = store
    r = cur.query(
        "alice", "SELECT region, COUNT(*), AVG(income) FROM people GROUP BY region", epsilon=0.5
    )
    payload = r.to_dict()
    assert set(payload) >= {"columns", "rows", "confidence_intervals", "cost", "remaining"}
    assert [row[0] for row in payload["rows"]] == ["north", "south", "east", "west"]
    # ε-DP leaks at most ε nats at α = ∞ ("DP and Information Theory" (2022): C_∞ = ε); explain()
    # reports it in bits
    assert payload["cost"]["leakage"]["bits"]["inf"] == pytest.approx(0.5 / math.log(2))
    assert payload["cost"]["epsilon"] == 0.5
    for row, ci in zip(r.rows, r.confidence_intervals, strict=True):
        assert ci[2][0] <= row[2] <= ci[2][1]
        assert ci[2][0] >= 0 and ci[2][1] <= 1000
    entry = cur.ledger.entry(r.entry_id)
    assert entry.status == "released" and entry.result_json is not None


def test_a_repeated_query_is_priced_once_and_as_when_fresh(
    store: tuple[Curator, pd.DataFrame], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remembered price equals a fresh Curator's (an object that never priced it), a
    caller's changes to one answer's summary do not reach the next, and the data-free check
    runs once per priced query; a refused one is refused every time."""
    cur, _ = store
    sql = "SELECT region, COUNT(*), SUM(income) FROM people GROUP BY region"
    fresh = Curator(cur.db)
    try:
        want = fresh._priced(sql, "0.3", 0, "laplace")
    finally:
        fresh.close()
    first = cur._priced(sql, Fraction(3, 10), 0, "laplace")
    nats = first.leakage["nats"]
    assert isinstance(nats, dict)
    nats["1"] = -1.0  # a caller's change to the copy it read
    again = cur._priced(sql, 0.3, "0", "laplace")  # the same exact values, other spellings
    assert again == want and again.leakage == want.leakage
    assert again.leakage.to_dict() == want.leakage.to_dict()
    calls: list[Any] = []
    real = cur.backend.check
    monkeypatch.setattr(cur.backend, "check", lambda *a, **k: calls.append(a) or real(*a, **k))
    sql2 = "SELECT COUNT(*) FROM people WHERE age > 41"
    cur.query("alice", sql2, epsilon=0.01)
    cur.query("alice", sql2, epsilon=0.01)
    assert len(calls) == 1
    bad = "SELECT SUM(nosuch) FROM people"
    for _ in range(2):
        with pytest.raises(ParameterError):
            cur.query("alice", bad, epsilon=0.01)


@pytest.mark.slow
@pytest.mark.parametrize("currency", ["basic", "approx"])
def test_the_remaining_budget_shown_is_the_ledgers(tmp_path: Path, currency: str) -> None:
    """The answer's remaining budget (kept from the reservation's transaction) equals what a
    fresh read of the ledger file gives, in the basic and in an accountant currency."""
    from infodp.accounting.accountant import Budget as AccountantBudget
    from infodp.curator.ledger import Ledger

    cur = Curator(tmp_path / "b.duckdb", source=seeded(7), keep_open=True)
    cur.register_dataset("t", pd.DataFrame({"x": [1, 2, 3]}), SIMPLE)
    if currency == "basic":
        cur.add_analyst("a", "t", epsilon="1", delta="1e-6")
    else:
        cur.add_analyst("a", "t", budget=AccountantBudget.approx(1, "1e-6"))
    for _ in range(3):
        r = cur.query("a", "SELECT COUNT(*) FROM t", epsilon="0.1", delta="1e-8", noise="gaussian")
        fresh = Ledger(str(tmp_path / "b.duckdb") + ".ledger")
        try:
            assert r.remaining == fresh.budget("a", "t")
            assert r.remaining.to_dict() == fresh.budget("a", "t").to_dict()
        finally:
            fresh.close()
    cur.close()


@pytest.mark.slow  # ~0.7 CPU-s (measured)
def test_sources_csv_parquet_arrow_polars(tmp_path: Path) -> None:
    frame = pd.DataFrame({"x": [1, 2, 3, 50], "g": ["a", "b", "a", "b"]})
    schema = one_table("t", {"x": ints(0, 10), "g": cats("a", "b")})
    csv = tmp_path / "t.csv"
    frame.to_csv(csv, index=False)
    con = duckdb.connect()
    con.register("f", frame)
    parquet = tmp_path / "t.parquet"
    con.execute(f"COPY f TO '{parquet}' (FORMAT parquet)")
    sources: list[object] = [str(csv), parquet]
    import polars as pl
    import pyarrow as pa

    sources.append(pa.Table.from_pandas(frame))
    sources.append(pl.from_dict({"x": [1, 2, 3, 50], "g": ["a", "b", "a", "b"]}))
    for i, source in enumerate(sources):
        cur = Curator(tmp_path / f"src{i}.duckdb")
        cur.register_dataset("t", source, schema)
        vals = cur.exact_aggregates("SELECT g, SUM(x) FROM t GROUP BY g").values
        # clamped to [0, 10]: a -> 1 + 3, b -> 2 + 10
        assert vals[("a",)][0] == 4 and vals[("b",)][0] == 12
    with pytest.raises(ParameterError, match="CSV or Parquet"):
        Curator(tmp_path / "bad.duckdb").register_dataset("t", str(tmp_path / "none.csv"), schema)
    with pytest.raises(ParameterError, match="not in the source"):
        Curator(tmp_path / "bad2.duckdb").register_dataset("t", frame[["x"]], schema)


@pytest.mark.slow
def test_filter_and_distinct_counts_end_to_end(tmp_path: Path) -> None:
    """COUNT(DISTINCT person_id) and COUNT(*) FILTER through Curator.query on a seeded source:
    every one of the 200 units keeps rows under the 2-row limit (so 200 distinct ids, 400
    rows), and a filter no row passes counts 0; the answers lie within three half-widths of
    these independent values, the same seed gives the same answer, and the charge is the ε
    asked."""
    frame = people_frame()
    answers = []
    for run in range(2):
        cur = Curator(tmp_path / f"s{run}.duckdb", source=seeded(12))
        cur.register_dataset("people", frame, SCHEMA)
        cur.add_analyst("a", "people", epsilon=10)
        sql = (
            "SELECT COUNT(DISTINCT person_id) AS units, COUNT(*) FILTER (WHERE age > 200) AS none,"
            " COUNT(*) FILTER (WHERE region = 'north') AS north, COUNT(*) AS n FROM people"
        )
        r = cur.query("a", sql, epsilon=3)
        exact = cur.exact_aggregates(sql).values[()]
        assert exact[0] == frame["person_id"].nunique() == 200
        assert exact[1] == 0 and exact[3] == 400
        for value, truth, (low, high) in zip(
            r.rows[0], exact, r.confidence_intervals[0], strict=True
        ):
            # Three half-widths: a miss has probability about β³ per cell (Laplace tails).
            assert abs(value - truth) <= 3 * (high - low) / 2 + 1
        assert [p.measurement.key for p in r.cost.parts] == [
            "count_distinct(person_id)",
            "count(*) filter(where age > 200)",
            "count(*) filter(where region = 'north')",
            "count(*)",
        ]
        assert cur.ledger.budget("a", "people").spent_epsilon == 3
        answers.append(r.rows)
        cur.close()
    assert answers[0] == answers[1]


def test_grouped_distinct_units_are_charged_for_their_groups(tmp_path: Path) -> None:
    """With GROUP BY the unit's id may be counted in min(m, k) groups: the noise is scaled
    to 2 here (m = 2, no group limit below it), and to 1 without GROUP BY."""
    cur = Curator(tmp_path / "s.duckdb", source=seeded(3))
    cur.register_dataset("people", people_frame(), SCHEMA)
    cur.add_analyst("a", "people", epsilon=10)
    grouped = cur.estimate(
        "SELECT region, COUNT(DISTINCT person_id) FROM people GROUP BY region", epsilon=1
    )
    single = cur.estimate("SELECT COUNT(DISTINCT person_id) FROM people", epsilon=1)
    assert [m["sensitivity"] for m in grouped["cost"]["measurements"]] == [2]
    assert [m["sensitivity"] for m in single["cost"]["measurements"]] == [1]
