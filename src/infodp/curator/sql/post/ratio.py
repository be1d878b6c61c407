"""A mean written by hand, ``SUM(x) / COUNT(x)``, read as ``AVG(x)``: the same answer, measured
as AVG is.

Divided after the noise, the hand-written ratio is S̃/C̃ with S̃ the noisy *uncentred* sum,
of sensitivity m·max|v|; AVG measures the sum of the values centred at the middle of the
bounds, of sensitivity m·r with r the half-range (Li et al. 2016, §2.5), and states an exact
interval for the ratio (Fieller 1954; :mod:`~infodp.curator.rules.intervals`). Both spend the
query's
ε on two measurements (a sum and a count), so AVG is the better measurement of the same number
at the same price. ``SUM(x) / COUNT(*)`` is the same ratio when x can hold no NULL (null policy
``error`` or ``replace``: every row has a value) and is read as AVG then too.

The rewrite is of the SQL text and the public declaration only; the price book
(:mod:`~infodp.curator.price.book`) keeps it only when it needs no more measurements than the
query as written (a SUM(x) used elsewhere in the query stays a measurement of its own).

>>> avg_ratios("SELECT g, SUM(x) / COUNT(x) FROM t GROUP BY g", lambda c: False)
'SELECT g, AVG(x) AS "SUM(x) / COUNT(x)" FROM t GROUP BY g'
>>> avg_ratios("SELECT SUM(x) / COUNT(*) AS m FROM t", lambda c: True)
'SELECT AVG(x) AS m FROM t'
>>> avg_ratios("SELECT SUM(x) / COUNT(*) AS m FROM t", lambda c: False) is None
True
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from infodp.curator.sql.parse import parse_statement
from infodp.errors import ParameterError

__all__ = ["avg_ratios"]


def _plain_column(call: exp.Expr) -> exp.Column | None:
    """The column of ``SUM(col)`` / ``COUNT(col)`` without DISTINCT, else None."""
    arg = call.this
    return arg if isinstance(arg, exp.Column) else None


def _strip(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _mean_of(div: exp.Div, nonnull: Callable[[str], bool]) -> exp.Column | None:
    """The column x when ``div`` is SUM(x) / COUNT(x) (or / COUNT(*) for a column without NULL)."""
    top, bottom = _strip(div.this), _strip(div.expression)
    if not isinstance(top, exp.Sum) or not isinstance(bottom, exp.Count):
        return None
    col = _plain_column(top)
    if col is None:
        return None
    if isinstance(bottom.this, exp.Star):
        return col if nonnull(col.name) else None
    counted = _plain_column(bottom)
    return col if counted is not None and counted.sql() == col.sql() else None


def avg_ratios(sql: str, nonnull: Callable[[str], bool]) -> str | None:
    """``sql`` with each ``SUM(x) / COUNT(x)`` read as ``AVG(x)`` (and ``SUM(x) / COUNT(*)``
    when ``nonnull(x)``), the SELECT item keeping its name; None when there is none (or the
    text is not a SELECT this step reads: the SQL parser says what it refuses)."""
    try:
        select = parse_statement(sql)
    except ParameterError:
        return None
    if not isinstance(select, exp.Select) or select.find(exp.Div) is None:
        return None  # no ratio to read (no copy of a long query made for nothing)
    found = False

    def rewrite(node: exp.Expr) -> exp.Expr:
        nonlocal found
        if not isinstance(node, exp.Div):
            return node
        col = _mean_of(node, nonnull)
        if col is None:
            return node
        found = True
        return exp.Avg(this=col.copy())

    out = select.copy()
    items = []
    for item in out.expressions:
        if isinstance(item, exp.Div) and _mean_of(item, nonnull) is not None:
            # an unnamed item keeps the name it has as written
            item = exp.alias_(item, item.sql(), quoted=True)
        items.append(item)
    out.set("expressions", items)
    rewritten = out.transform(rewrite, copy=False)  # ``out`` is this function's own copy
    return rewritten.sql() if found else None
