"""An aggregate's FILTER (WHERE ...): the measurement carries the condition, its sensitivity
and information are the unfiltered one's (checked by enumeration and against the closed
form), its interval covers at the stated level, and what it cannot take is refused."""

from __future__ import annotations

from fractions import Fraction

import pytest

from _rules_oracle import brute_l1, coverage_floor, dlap_information, simulated_cells
from _rules_oracle import table_schema as schema
from infodp.curator.plan.nodes import Measurement, MeasurementKind, Predicate
from infodp.curator.price.cost import plan_cost
from infodp.curator.rules import measure_for, measurements, rule_for
from infodp.curator.sql.parse import parse_query
from infodp.errors import ParameterError

OVER_4 = Predicate(">", "x", (4,))


@pytest.mark.parametrize("m", [1, 2, 3])
def test_a_filtered_count_has_the_brute_force_sensitivity_of_the_count(m: int) -> None:
    # Each of the unit's rows counts once in its cell when it passes x > 4, else not at all:
    # the worst unit puts all its rows above 4, so the bound is the unfiltered count's.
    filtered = brute_l1(lambda v: 1 if v > 4 else 0, range(0, 10), m)
    plain = brute_l1(lambda v: 1, range(0, 10), m)
    for kind, col in ((MeasurementKind.COUNT_ROWS, None), (MeasurementKind.COUNT, "x")):
        meas = Measurement(kind, col, where=OVER_4)
        assert measure_for(meas).sensitivity(meas, schema(m)) == filtered == plain == m


@pytest.mark.parametrize("m", [1, 2])
def test_a_filtered_sum_has_the_brute_force_sensitivity_of_the_sum(m: int) -> None:
    # x in [-7, 5]: a row's value counts when it passes x < 0 (the side of larger magnitude).
    s = schema(m, low=-7, high=5)
    meas = Measurement(MeasurementKind.SUM, "x", where=Predicate("<", "x", (0,)))
    want = brute_l1(lambda v: v if v < 0 else 0, range(-7, 6), m)
    assert measure_for(meas).sensitivity(meas, s) == want == 7 * m


@pytest.mark.parametrize("rows", [10, 1000])
def test_information_is_the_unfiltered_closed_form(rows: int) -> None:
    s = schema(rows=rows)
    eps = Fraction(1, 3)
    plain = plan_cost(parse_query("SELECT COUNT(*) FROM t", s), s, eps, Fraction(0), rows)
    sql = "SELECT COUNT(*) FILTER (WHERE x > 4) FROM t"
    cost = plan_cost(parse_query(sql, s), s, eps, Fraction(0), rows)
    (part,) = cost.parts
    assert part.measurement.where == OVER_4
    got = measure_for(part.measurement).information(part, s, rows)
    assert got == pytest.approx(dlap_information(rows, part.scale), rel=1e-9)
    assert cost.information_nats == plain.information_nats


def test_measurements_carry_their_condition_and_equal_filters_share_one() -> None:
    s = schema()
    sql = (
        "SELECT COUNT(*), COUNT(*) FILTER (WHERE x > 4) AS a, COUNT(*) FILTER (WHERE 4 < x) AS b,"
        " AVG(x) FILTER (WHERE x > 4) AS c, COUNT(*) FILTER (WHERE g = 'a') AS d FROM t"
    )
    keys = [m.key for m in measurements(parse_query(sql, s))]
    assert keys == [
        "count(*)",  # the key of an unfiltered measurement is unchanged (ledger JSON)
        "count(*) filter(where x > 4)",  # shared by a and b (4 < x is x > 4)
        "csum(x) filter(where x > 4)",
        "count(x) filter(where x > 4)",
        "count(*) filter(where g = 'a')",
    ]


@pytest.mark.parametrize("true", [0, 7, 400])
def test_interval_covers_the_true_filtered_count_at_the_stated_level(true: int) -> None:
    s, beta, n = schema(2), 0.1, 3000
    meas = Measurement(MeasurementKind.COUNT_ROWS, where=OVER_4)
    agg, cells = simulated_cells(
        "SELECT COUNT(*) FILTER (WHERE x > 4) FROM t",
        s,
        {meas: true},
        n,
        epsilon=Fraction(1, 2),
        beta=beta,
        seed=true + 3,
    )
    values, intervals = rule_for(agg).column(agg, cells)
    covered = sum(lo <= true <= hi for lo, hi in intervals)
    assert covered / n >= coverage_floor(1 - beta, n)
    assert all(v is not None and v >= 0 for v in values)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT MEDIAN(x) FILTER (WHERE x > 1) FROM t", "MEDIAN, QUANTILE with FILTER"),
        ("SELECT MIN(x) FILTER (WHERE x > 1) FROM t", "MIN with FILTER"),
        ("SELECT COUNT(*) FILTER (WHERE u > 1e400) FROM t", "magnitude at most"),
        ("SELECT COUNT(*) FILTER (WHERE x > 99999999999999999999) FROM t", "-2\\^63"),
        ("SELECT COUNT(*) FILTER (WHERE x > c) FROM t", "compare a column with a literal"),
        ("SELECT COUNT(*) FILTER (WHERE nope = 1) FROM t", "unknown column"),
        ("SELECT SUM(DISTINCT x) FILTER (WHERE x > 1) FROM t", r"SUM\(DISTINCT"),
    ],
)
def test_refusals_name_the_construct(sql: str, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        parse_query(sql, schema())
