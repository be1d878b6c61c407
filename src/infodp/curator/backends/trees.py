"""sqlglot trees the query compiler (:mod:`infodp.curator.backends.compile`) builds from:
the names it gives columns, SELECT and WITH chains, the per-unit row window. Built as trees,
never parsed from text (the parser is the slow part of sqlglot on the query's path).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from infodp.curator.backends.bounding import literal

__all__ = [
    "COMPARISONS",
    "at_most",
    "chain",
    "last_table",
    "name",
    "named",
    "named_table",
    "number",
    "paren",
    "select",
    "where",
]


def name(text: str) -> exp.Column:
    """A column the compiler itself names (``__g0``, ``__v0``, ...), unquoted."""
    return exp.column(text)


def named(prefix: str, n: int) -> list[exp.Expr]:
    """``prefix0``, ``prefix1``, ...: the columns the compiler names."""
    return [name(f"{prefix}{i}") for i in range(n)]


def number(text: str) -> exp.Expr:
    """A declared int key, as the number it spells."""
    return exp.Literal.number(text)


def paren(e: exp.Expr) -> exp.Expr:
    """``(e)``."""
    return exp.Paren(this=e)


COMPARISONS: dict[str, type[exp.Binary]] = {
    "=": exp.EQ,
    "<>": exp.NEQ,
    "<": exp.LT,
    "<=": exp.LTE,
    ">": exp.GT,
    ">=": exp.GTE,
}


def where(select: exp.Select, conditions: Sequence[exp.Expr]) -> exp.Select:
    """``select`` with ``WHERE`` the conjunction of ``conditions`` (none: unchanged)."""
    if conditions:
        select.set("where", exp.Where(this=exp.and_(*conditions, copy=False)))
    return select


def select(items: Sequence[exp.Expr], source: exp.Expr) -> exp.Select:
    """``SELECT items FROM source``."""
    return exp.Select(expressions=list(items)).from_(source, copy=False)


def chain(ctes: list[tuple[str, exp.Select]]) -> exp.Select:
    """``WITH ctes..., __src AS (SELECT * FROM last) SELECT FROM __src``."""
    ctes.append(("__src", select([exp.Star()], last_table(ctes))))
    out = select([], named_table("__src"))
    for label, cte in ctes:
        out = out.with_(label, as_=cte, copy=False)
    return out


def last_table(ctes: Sequence[tuple[str, exp.Select]]) -> exp.Table:
    """The last common table expression so far."""
    return named_table(ctes[-1][0])


def named_table(name: str) -> exp.Table:
    """The table ``name`` (a plain identifier): the tree ``exp.to_table`` parses it into,
    built without the parser.

    >>> named_table("__src") == exp.to_table("__src")
    True
    """
    return exp.Table(this=exp.to_identifier(name))


def at_most(source: exp.Table, rank: str, order: exp.Expr, limit: int) -> exp.Select:
    """``SELECT * FROM source QUALIFY rank() OVER (PARTITION BY __u ORDER BY order) <= limit``
    (rendered as a subquery where the dialect has no QUALIFY)."""
    window = exp.Window(
        this=exp.Anonymous(this=rank),
        partition_by=[name("__u")],
        order=exp.Order(expressions=[exp.Ordered(this=order)]),
    )
    out = select([exp.Star()], source)
    out.set("qualify", exp.Qualify(this=exp.LTE(this=window, expression=literal(limit))))
    return out
