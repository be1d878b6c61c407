"""Filters on one table applied before its joins.

The DuckDB backend runs a derived relation as written: its optimizer's filter pushdown is off
(it prunes row groups by their stored statistics, a function of the private data) and so is
join reordering. A WHERE or ON conjunct that reads one table would then be tested on the
joined rows, after the join has done all its work, and one person's rows could multiply that
work even when the filter throws them away. :func:`push_filters` moves each such conjunct into
its table, ``(SELECT * FROM table AS t WHERE conjunct) AS t``, so the join reads only the
rows that pass. The rows of the result are the same (SQL's semantics of inner joins and of a
LEFT JOIN's ON clause), so answers, bounds and charges do not change; only the work does.

A conjunct is moved when it reads columns of exactly one source and

- it is in WHERE or in an inner join's ON, and that source is not the NULL-extended side of
  a LEFT JOIN (filtering it first would keep rows the filter drops), or
- it is in a LEFT JOIN's ON and reads only that join's right side (it chooses the rows
  matched, which is what filtering the right side first does).

>>> import sqlglot
>>> q = sqlglot.parse_one(
...     'SELECT 1 FROM "t" AS "a" JOIN "u" AS "b" ON "a"."k" = "b"."k" AND "b"."x" > 1 '
...     'WHERE "a"."y" = 2')
>>> push_filters(q, {"a": False, "b": False}).sql()
'SELECT 1 FROM (SELECT * FROM "t" AS "a" WHERE "a"."y" = 2) AS "a" JOIN (SELECT * FROM "u" AS "b" WHERE "b"."x" > 1) AS "b" ON "a"."k" = "b"."k"'
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

__all__ = ["push_filters"]


def push_filters(select: exp.Select, nullable: Mapping[str, bool]) -> exp.Select:
    """``select`` (changed in place and returned) with each single-source conjunct of its
    WHERE and ON clauses moved into that source (see the module docstring); ``nullable``
    maps each source's alias (lower case) to whether it is a LEFT JOIN's right side."""
    src = select.args.get("from_") or select.args.get("from")
    joins: list[exp.Join] = list(select.args.get("joins") or [])
    if src is None or not joins:
        return select
    holders: list[exp.Expr] = [src, *joins]
    aliases = [_alias(h.this) for h in holders]
    if None in aliases or len({a for a in aliases if a}) != len(aliases):
        return select  # a source without a unique alias: leave the relation as it is
    index = {a: i for i, a in enumerate(aliases) if a is not None}
    moved: dict[int, list[exp.Expr]] = {}

    def split(
        conjuncts: list[exp.Expr], right: int | None
    ) -> tuple[list[exp.Expr], list[tuple[int, exp.Expr]]]:
        """(conjuncts kept, (source, conjunct) moved); ``right``: a LEFT JOIN's right side."""
        kept: list[exp.Expr] = []
        out: list[tuple[int, exp.Expr]] = []
        for c in conjuncts:
            i = _only_source(c, index)
            if i is not None and (
                i == right if right is not None else not nullable.get(aliases[i] or "")
            ):
                out.append((i, c))
            else:
                kept.append(c)
        return kept, out

    for j, join in enumerate(joins, start=1):
        on = join.args.get("on")
        if on is None:
            continue
        kept, out = split(_conjuncts(on), j if (join.side or "").upper() == "LEFT" else None)
        if not kept or not out:
            continue  # nothing to move (a join always keeps its equality)
        join.set("on", _and(kept))
        for i, c in out:
            moved.setdefault(i, []).append(c)
    where = select.args.get("where")
    if where is not None:
        kept, out = split(_conjuncts(where.this), None)
        select.set("where", exp.Where(this=_and(kept)) if kept else None)
        for i, c in out:
            moved.setdefault(i, []).append(c)
    for i, conds in moved.items():
        holders[i].set("this", _filtered(holders[i].this, conds))
    return select


def _and(conds: list[exp.Expr]) -> exp.Expr:
    return conds[0] if len(conds) == 1 else exp.and_(*conds, copy=False)


def _alias(relation: exp.Expr) -> str | None:
    alias = relation.args.get("alias")
    return alias.name.lower() if alias is not None and alias.name else None


def _only_source(node: exp.Expr, index: Mapping[str, int]) -> int | None:
    """The one source whose columns ``node`` reads (None: none, several, or unqualified)."""
    found: set[int] = set()
    for col in node.find_all(exp.Column):
        i = index.get(col.table.lower()) if col.table else None
        if i is None:
            return None
        found.add(i)
    if len(found) != 1 or node.find(exp.Subquery, exp.AggFunc, exp.Window) is not None:
        return None
    return found.pop()


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    out: list[exp.Expr] = []
    stack = [node]
    while stack:  # iterative: a long AND chain is deep, not wide
        n = stack.pop()
        while isinstance(n, exp.Paren):
            n = n.this
        if isinstance(n, exp.And):
            stack.append(n.args["expression"])
            stack.append(n.this)
        else:
            out.append(n)
    return out


def _filtered(relation: exp.Expr, conds: list[exp.Expr]) -> exp.Subquery:
    """``(SELECT * FROM relation WHERE conds) AS alias``: the source's columns unchanged."""
    name = relation.args["alias"].this.copy()
    inner = exp.Select(expressions=[exp.Star()]).from_(relation, copy=False)
    inner.set("where", exp.Where(this=_and(conds)))
    return exp.Subquery(this=inner, alias=exp.TableAlias(this=name))
