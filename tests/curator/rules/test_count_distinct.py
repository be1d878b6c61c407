"""COUNT(DISTINCT column)'s rule: sensitivity by enumeration of neighbouring tables,
information against the count's closed form, and interval coverage over seeded draws
(tests/_rules_oracle.py)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from _rules_oracle import coverage_floor, dlap_information, simulated_cells
from _stores import TEXT, cats, one_table
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.declaration.source import load_schema
from infodp.curator.plan.nodes import Measurement, MeasurementKind
from infodp.curator.price.cost import plan_cost
from infodp.curator.rules import measure_for, rule_for
from infodp.curator.sql.parse import parse_query
from infodp.errors import ParameterError

#: A row: (cell, value, unit id); the unit added or removed has id 0.
Row = tuple[int, int, int]


def schema(m: int = 1, k: int | None = None, rows: int | None = None) -> DatasetSchema:
    spec: dict[str, object] = one_table(
        "t",
        {
            "pid": {"type": "int"},
            "v": {"type": "int"},
            "c": TEXT,
            "u": {"type": "float"},
            "g": cats("a", "b", "c"),
        },
        unit="pid",
        max_rows_per_unit=m,
    )
    if k is not None:
        spec["max_groups_per_unit"] = k
    if rows is not None:
        spec["public_rows"] = rows
    return load_schema(spec)


def _distinct(rows: list[Row], cell: int, of_unit: bool) -> int:
    return len({(uid if of_unit else v) for c, v, uid in rows if c == cell})


def brute_distinct_l1(m: int, k: int, cells: int, of_unit: bool) -> int:
    """max over tables D (two other units' rows, at most two) and a unit u (1..m rows, in at
    most k cells, values 0..2) of Σ_cells |distinct(D ∪ u) − distinct(D)| (Dwork & Roth 2014,
    Def. 3.1; add/remove neighbours, Def. 2.4): a direct enumeration of neighbouring tables,
    not the argument of the rule's docstring."""
    values = range(3)
    others: list[Row] = [(c, v, uid) for c in range(cells) for v in values for uid in (1, 2)]
    slots = [(c, v) for c in range(cells) for v in values]
    best = 0
    for n_base in range(3):
        for base in itertools.combinations_with_replacement(others, n_base):
            for size in range(1, m + 1):
                for unit in itertools.combinations_with_replacement(slots, size):
                    if len({c for c, _ in unit}) > k:
                        continue  # the per-unit group limit keeps at most k cells
                    bigger = [*base, *((c, v, 0) for c, v in unit)]
                    l1 = sum(
                        abs(_distinct(bigger, c, of_unit) - _distinct(list(base), c, of_unit))
                        for c in range(cells)
                    )
                    best = max(best, l1)
    return best


@pytest.mark.parametrize(("m", "k"), [(1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (3, 3)])
@pytest.mark.parametrize("column", ["pid", "v"])
@pytest.mark.parametrize("grouped", [False, True])
def test_sensitivity_is_the_brute_force_l1_over_neighbouring_tables(
    m: int, k: int, column: str, grouped: bool
) -> None:
    meas = Measurement(MeasurementKind.COUNT_DISTINCT, column, grouped=grouped)
    got = measure_for(meas).sensitivity(meas, schema(m, k))
    # Without GROUP BY every row is in the one cell; with it, three cells.
    want = brute_distinct_l1(m, k if grouped else 1, 3 if grouped else 1, column == "pid")
    assert got == want
    assert got == (min(m, k) if grouped else 1) if column == "pid" else got == m


def test_the_parser_marks_grouped_distinct_counts() -> None:
    s = schema(3, 2)
    for sql, grouped, delta in (
        ("SELECT COUNT(DISTINCT pid) FROM t", False, 1),
        ("SELECT g, COUNT(DISTINCT pid) FROM t GROUP BY g", True, 2),
        ("SELECT g, COUNT(DISTINCT c) FROM t GROUP BY g", True, 3),
    ):
        cost = plan_cost(parse_query(sql, s), s, Fraction(1), Fraction(0), 100)
        (part,) = cost.parts
        assert part.measurement.grouped is grouped
        assert part.sensitivity == delta
        assert part.measurement.key == f"count_distinct({part.measurement.column})"


@pytest.mark.parametrize("rows", [1, 10, 1000])
def test_information_is_the_discrete_laplace_bound_over_the_distinct_range(rows: int) -> None:
    # A cell holds 0..rows distinct values (rows: the declared public row count).
    s = schema(2, rows=rows)
    sql = "SELECT COUNT(DISTINCT c) FROM t"
    cost = plan_cost(parse_query(sql, s), s, Fraction(1, 2), Fraction(0), rows)
    (part,) = cost.parts
    got = measure_for(part.measurement).information(part, s, rows)
    assert part.scale == 2 / 0.5  # Δ = m = 2, b = Δ/ε (Laplace)
    assert got == pytest.approx(dlap_information(rows, part.scale), rel=1e-9)
    assert cost.information_nats >= got


def test_information_is_unbounded_without_a_declared_row_bound() -> None:
    s = schema(2)
    sql = "SELECT COUNT(DISTINCT pid) FROM t"
    cost = plan_cost(parse_query(sql, s), s, Fraction(1), Fraction(0), None)
    assert cost.information_nats == float("inf")


@pytest.mark.parametrize("true", [0, 4, 300])
def test_interval_covers_the_true_distinct_count_at_the_stated_level(true: int) -> None:
    s, beta, n = schema(3, 2), 0.1, 3000
    meas = Measurement(MeasurementKind.COUNT_DISTINCT, "c")
    agg, cells = simulated_cells(
        "SELECT COUNT(DISTINCT c) FROM t",
        s,
        {meas: true},
        n,
        epsilon=Fraction(1, 4),
        beta=beta,
        seed=true + 1,
    )
    values, intervals = rule_for(agg).column(agg, cells)
    covered = sum(lo <= true <= hi for lo, hi in intervals)
    assert covered / n >= coverage_floor(1 - beta, n)
    assert all(v is not None and v >= 0 for v in values)
    assert rule_for(agg).accuracy(agg, cells, None, "n") == {"halfwidth": float(cells.halfwidth(0))}


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT SUM(DISTINCT v) FROM t", r"SUM\(DISTINCT"),
        ("SELECT COUNT(DISTINCT u) FROM t", "float column"),
        ("SELECT COUNT(DISTINCT c, v) FROM t", "several columns"),
        ("SELECT COUNT(DISTINCT nope) FROM t", "unknown column"),
    ],
)
def test_refusals_name_the_construct(sql: str, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        parse_query(sql, schema(2))
