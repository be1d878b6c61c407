"""``AGG(...) FILTER (WHERE condition)``: an aggregate over the rows of its cell that satisfy
its own condition (SQL:2003's aggregate filter clause).

The condition has the WHERE grammar and its literal range checks (:mod:`~infodp.curator.sql.parse`)
and is applied to the bounded rows, after the per-unit row and group limits, inside the
aggregate (``COUNT(*) FILTER (WHERE …)`` in the compiled statement). It only drops rows: a
unit's rows that satisfy it are a subset of its at most m rows in at most k groups, so every
sensitivity bound of the unfiltered measurement (each counts at most m rows of one unit over
disjoint cells; McSherry 2009, Thm 4) holds unchanged, and a cell's range over tables of at
most ``rows`` rows, hence its information, is unchanged too. The measurement carries the
condition: ``COUNT(*)`` and ``COUNT(*) FILTER (WHERE a)`` are two measurements, two equal
FILTERs one.

Quantiles (MEDIAN, QUANTILE, MIN, MAX) refuse a FILTER: their histogram statements read the
query's rows only; the condition belongs in WHERE.

>>> from infodp.curator.declaration.source import load_schema
>>> from infodp.curator.sql.parse import parse_query
>>> from infodp.curator.rules import measurements
>>> s = load_schema({"table": "t", "privacy_unit": "row",
...                  "columns": {"x": {"type": "int", "bounds": [0, 10]}}})
>>> p = parse_query("SELECT COUNT(*), COUNT(*) FILTER (WHERE x > 2) AS a, "
...                 "SUM(x) FILTER (WHERE x > 2) AS b FROM t", s)
>>> [m.key for m in measurements(p)]
['count(*)', 'count(*) filter(where x > 2)', 'sum(x) filter(where x > 2)']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from sqlglot import exp

from infodp.curator.plan.nodes import Aggregate

if TYPE_CHECKING:
    from infodp.curator.rules.base import Parsing, Rule

__all__ = ["parse_filtered"]

#: What recognises the aggregate inside a FILTER: its aggregate, output name and rule.
Inner = Callable[[exp.Expr], "tuple[Aggregate, str, Rule] | None"]


def parse_filtered(node: exp.Expr, sql: Parsing, inner: Inner) -> tuple[Aggregate, str] | None:
    """The filtered aggregate ``node`` denotes and its output name, or None when ``node`` is
    not a FILTER clause."""
    if not isinstance(node, exp.Filter):
        return None
    found = inner(node.this)
    if found is None:
        raise sql.refuse(
            f"FILTER on {node.this.sql(dialect='duckdb')!r}", "FILTER follows an aggregate call"
        )
    agg, _, rule = found
    if not rule.filterable:
        raise sql.refuse(
            f"{', '.join(rule.sql_names)} with FILTER",
            "each quantile reads the query's rows; put the condition in WHERE",
        )
    where = node.expression
    condition = where.this if isinstance(where, exp.Where) else where
    return replace(agg, where=sql.predicate(condition)), str(node.sql())
