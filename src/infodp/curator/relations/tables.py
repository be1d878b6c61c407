"""Which tables a query reads, and where it may read them (FROM and JOIN only).

>>> tables_read("SELECT COUNT(*) FROM clinic.people p JOIN visits v USING (pid)")
('clinic.people', 'visits')
>>> tables_read("SELECT COUNT(*) FROM t WHERE x IN (SELECT x FROM u)")
Traceback (most recent call last):
...
infodp.errors.ParameterError: refused SQL construct: subquery outside FROM (IN (SELECT ...), EXISTS and scalar subqueries put other rows into each row's value; join the table, or aggregate per unit in a subquery in FROM).
"""  # noqa: E501

from __future__ import annotations

from sqlglot import exp

from infodp.curator.sql.parse import parse_statement, refuse
from infodp.errors import ParameterError

__all__ = ["OUTSIDE_FROM", "check_clauses", "check_subqueries", "from_items", "tables_read"]

#: Why a subquery outside FROM is refused.
OUTSIDE_FROM = (
    "IN (SELECT ...), EXISTS and scalar subqueries put other rows into each row's value; "
    "join the table, or aggregate per unit in a subquery in FROM"
)


def tables_read(sql: str) -> tuple[str, ...]:
    """Every table ``sql`` reads in FROM and JOIN (subqueries in FROM included), as written:
    ``people``, or ``clinic.people`` for a qualified name."""
    if not isinstance(sql, str):
        raise ParameterError("sql", sql, "a non-empty SQL SELECT statement")
    stmt = parse_statement(sql)
    check_subqueries(stmt)
    assert isinstance(stmt, exp.Select)  # checked just above
    return tuple(_reads(stmt))


def _reads(select: exp.Select) -> list[str]:
    out: list[str] = []
    for node in from_items(select):
        if isinstance(node, exp.Table):
            parts = [p.name for p in (node.args.get("catalog"), node.args.get("db")) if p]
            out.append(".".join([*parts, node.name]))
        else:
            out += _reads(node.this)
    return out


def from_items(select: exp.Select) -> list[exp.Expr]:
    """The tables and subqueries of a SELECT's FROM and JOINs (anything else refused).

    >>> stmt = parse_statement("SELECT 1 FROM a JOIN (SELECT 1 FROM b) s ON TRUE")
    >>> [n.key for n in from_items(stmt)]
    ['table', 'subquery']
    """
    src = select.args.get("from_") or select.args.get("from")
    nodes = [] if src is None else [src.this]
    nodes += [j.this for j in select.args.get("joins") or []]
    for node in nodes:
        if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
            continue
        if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
            raise refuse(f"{node.sql()[:60]!r} in FROM", "read tables and subqueries only")
    return nodes


def check_subqueries(stmt: exp.Expr) -> None:
    """Refuse anything but one SELECT whose subqueries are all in FROM or JOIN.

    >>> check_subqueries(parse_statement("SELECT COUNT(*) FROM (SELECT 1 FROM t) s"))
    """
    if isinstance(stmt, (exp.Union, exp.Intersect, exp.Except)):
        raise refuse(f"set operation {stmt.key.upper()}")
    if not isinstance(stmt, exp.Select):
        raise refuse(f"{stmt.key.upper()} statement", "only SELECT is allowed")
    for node in stmt.walk():
        if node is stmt:
            continue
        if isinstance(node, (exp.Union, exp.Intersect, exp.Except)):
            raise refuse(f"set operation {node.key.upper()}")
        if isinstance(node, exp.With):
            raise refuse("WITH (common table expression)", "write the subquery in FROM")
        if isinstance(node, exp.Exists):
            raise refuse("subquery outside FROM", OUTSIDE_FROM)
        if isinstance(node, exp.Select):
            parent = node.parent
            if not (isinstance(parent, exp.Subquery) and _in_from(parent)):
                raise refuse("subquery outside FROM", OUTSIDE_FROM)
        elif isinstance(node, exp.Subquery) and not _in_from(node):
            raise refuse("subquery outside FROM", OUTSIDE_FROM)


def _in_from(node: exp.Subquery) -> bool:
    return isinstance(node.parent, (exp.From, exp.Join)) and node.arg_key == "this"


#: The clauses a SELECT may hold here (HAVING, ORDER BY and LIMIT of the outer query are
#: post-processing, split off before; the SQL parser refuses any left).
_CLAUSES = {"expressions", "from", "from_", "joins", "where", "group", "having"}
_OUTER = {"order", "limit", "offset", "distinct", "qualify"}


def check_clauses(select: exp.Select, *, outer: bool) -> None:
    """Refuse a clause the relation would not carry (never drop one silently): WINDOW,
    GROUP BY ROLLUP/CUBE/GROUPING SETS/ALL, ...

    >>> check_clauses(parse_statement("SELECT a FROM t GROUP BY ROLLUP (a)"), outer=True)
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: refused SQL construct: ROLLUP in GROUP BY (group by columns or derived keys).
    """  # noqa: E501
    allowed = _CLAUSES | _OUTER if outer else _CLAUSES
    for key, arg in select.args.items():
        if key not in allowed and arg not in _EMPTY:
            raise refuse(f"{key.rstrip('_').upper()} in SELECT", "not part of the safe SQL subset")
    group = select.args.get("group")
    if group is None:
        return
    extra = [k for k, v in group.args.items() if k != "expressions" and v not in _EMPTY]
    extra += [e.key for e in group.expressions if isinstance(e, _GROUPINGS)]
    if extra:
        name = (
            extra[0].rstrip("_").upper().replace("_", " ").replace("GROUPINGSETS", "GROUPING SETS")
        )
        raise refuse(f"{name} in GROUP BY", "group by columns or derived keys")


_EMPTY: tuple[object, ...] = (None, False, [], "")
_GROUPINGS = (exp.Rollup, exp.Cube, exp.GroupingSets)
