"""SQL as analysts write it, read as the accepted subset: rewrites that keep a query's meaning.

Applied to every statement the SQL parser reads (:func:`infodp.curator.sql.parse.parse_statement`),
before anything else looks at it; each rewrite is syntax only (it never reads a schema, the
ledger or the data), and a form it cannot read the same way is left for the parser to refuse.

- ``SELECT TOP n ...`` (T-SQL) is ``SELECT ... LIMIT n``, a post-processing step on the
  released rows (:func:`untop`);
- ``COUNT(1)`` (any non-NULL constant) counts the rows, as ``COUNT(*)`` does; a SELECT item
  so rewritten keeps its text as its name;
- the spellings of variance and standard deviation other engines use name the same two rules
  (:data:`SPELLINGS`): ``VAR`` and ``STDEV`` (T-SQL) are the sample statistics, like
  ``VARIANCE``/``VAR_SAMP`` and ``STDDEV``/``STDDEV_SAMP``; ``VARP``, ``STDEVP`` (T-SQL)
  and ``STD`` (MySQL, where it is the population standard deviation) are the population ones,
  like ``VAR_POP`` and ``STDDEV_POP``. A SELECT item so renamed keeps its text as its name;
- a parenthesised table ``(db.t) AS c`` is the table ``db.t AS c``; a parenthesised join
  ``(a JOIN b USING (k))`` is the join itself when it is all of FROM, and otherwise (or when
  it has an alias) the subquery ``(SELECT * FROM a JOIN b USING (k)) AS q``;
- a subquery in FROM or JOIN without an alias gets one (``subquery1``, ``subquery2``, ...):
  SQL names every relation of FROM, and nothing outside it can refer to the new name;
- ``GROUP BY 2`` names the second SELECT item, as DuckDB and Spark read it
  (:func:`group_positions`); a position past the SELECT list, or one naming an aggregate or a
  constant, is refused with the form to write.

>>> rewrite_text("SELECT TOP 5 educ, VAR(age) FROM (pums) GROUP BY educ")
'SELECT educ, VARIANCE(age) AS "VAR(age)" FROM pums GROUP BY educ LIMIT 5'
>>> rewrite_text("SELECT COUNT(*) FROM (SELECT * FROM (SELECT a FROM t))")
'SELECT COUNT(*) FROM (SELECT * FROM (SELECT a FROM t) AS subquery2) AS subquery1'
>>> rewrite_text("SELECT a AS x, FLOOR(b / 10) AS d, COUNT(*) FROM t GROUP BY 1, 2")
'SELECT a AS x, FLOOR(b / 10) AS d, COUNT(*) FROM t GROUP BY a, FLOOR(b / 10)'
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import TokenType, exp

from infodp.errors import ParameterError

__all__ = [
    "SPELLINGS",
    "boolean_on_text",
    "group_positions",
    "needs_rewrite",
    "rewrite",
    "rewrite_text",
    "untop",
    "with_top",
]

#: Other engines' names of the variance and standard deviation aggregates, and the node of
#: the rule each one means (sample or population, as that engine defines it).
SPELLINGS: dict[str, type[exp.Expr]] = {
    "VAR": exp.Variance,  # T-SQL: sample variance
    "VARP": exp.VariancePop,  # T-SQL: population variance
    "STDEVP": exp.StddevPop,  # T-SQL: population standard deviation
    "STD": exp.StddevPop,  # MySQL: population standard deviation
}

_TOP = re.compile(r"\btop\b", re.IGNORECASE)
#: What a refusal of TOP says to write instead.
_TOP_FORM = "write SELECT ... LIMIT n (or SELECT TOP n ... at the start of the outer SELECT)"


def untop(sql: str) -> tuple[str, int | None]:
    """``sql`` without a leading ``TOP n`` (or ``TOP (n)``) and that n (None: no TOP).

    >>> untop("SELECT TOP (3) a FROM t")
    ('SELECT  a FROM t', 3)
    >>> untop("SELECT top, 'top' FROM t")
    ("SELECT top, 'top' FROM t", None)
    >>> untop("SELECT TOP 10 PERCENT a FROM t")
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: refused SQL construct: TOP 10 PERCENT (write SELECT ... LIMIT n (or SELECT TOP n ... at the start of the outer SELECT)).
    """  # noqa: E501
    if _TOP.search(sql) is None:
        return sql, None
    try:
        tokens = sqlglot.tokenize(sql)
    except sqlglot.errors.SqlglotError:
        return sql, None  # the parser says what it cannot read
    kinds = [t.token_type for t in tokens] + [None, None, None]
    tops = [
        i
        for i, t in enumerate(tokens)
        if i > 0
        and t.token_type == TokenType.VAR  # not a string 'top' or a quoted "top"
        and t.text.upper() == "TOP"
        and kinds[i - 1] == TokenType.SELECT
        and kinds[i + 1] in (TokenType.NUMBER, TokenType.L_PAREN)
    ]
    if not tops:
        return sql, None  # no TOP clause (a column named top, say: the parser reads it)
    i = tops[0]
    paren = kinds[i + 1] == TokenType.L_PAREN
    number = i + 2 if paren else i + 1
    last = number + 1 if paren else number
    ok = (
        len(tops) == 1
        and i == 1
        and kinds[number] == TokenType.NUMBER
        and tokens[number].text.isdigit()
        and (not paren or kinds[last] == TokenType.R_PAREN)
    )
    if not ok:
        shown = " ".join(t.text for t in tokens[i : i + 3])
        raise ParameterError(f"refused SQL construct: TOP in {shown!r} ({_TOP_FORM}).")
    if last + 1 < len(tokens) and tokens[last + 1].text.upper() in ("PERCENT", "WITH"):
        shown = " ".join(t.text for t in tokens[i : last + 2])
        raise ParameterError(f"refused SQL construct: {shown} ({_TOP_FORM}).")
    text = sql[: tokens[i].start] + sql[tokens[last].end + 1 :]
    return text, int(tokens[number].text)


def boolean_on_text(value: bool, where: str) -> ParameterError:
    """The refusal of TRUE/FALSE compared with a text column (``where``: the comparison).

    TRUE is 1 and FALSE is 0 on a numeric column; a text column holds text, and which text
    means true is the owner's convention, so the comparison is refused rather than guessed.

    >>> str(boolean_on_text(True, "sex = TRUE"))
    "refused SQL construct: TRUE compared with a text column in 'sex = TRUE' (a text column holds text, not truth values; compare with the text it stores, as in = '1', or use TRUE/FALSE on a numeric or boolean column)."
    """  # noqa: E501
    word, text = ("TRUE", "1") if value else ("FALSE", "0")
    return ParameterError(
        f"refused SQL construct: {word} compared with a text column in {where!r} (a text "
        f"column holds text, not truth values; compare with the text it stores, as in "
        f"= '{text}', or use TRUE/FALSE on a numeric or boolean column)."
    )


def with_top(stmt: exp.Expr, top: int | None) -> exp.Expr:
    """``stmt`` with the LIMIT its ``TOP`` named (refused beside a LIMIT of its own)."""
    if top is None:
        return stmt
    if not isinstance(stmt, exp.Select):
        raise ParameterError(f"refused SQL construct: TOP ({_TOP_FORM}).")
    if stmt.args.get("limit") is not None:
        raise ParameterError(
            "refused SQL construct: TOP together with LIMIT (write one of them: LIMIT n)."
        )
    stmt.set("limit", exp.Limit(expression=exp.Literal.number(top)))
    return stmt


def needs_rewrite(sql: str) -> bool:
    """Whether ``sql``'s text may hold a form :func:`rewrite` reads (a spelling of
    :data:`SPELLINGS` called, or a parenthesis right after FROM or JOIN): a scan of the text,
    so that other statements are not walked again.

    >>> needs_rewrite("SELECT COUNT(*) FROM t"), needs_rewrite("SELECT STD (x) FROM t")
    (False, True)
    """
    return _REWRITTEN.search(sql) is not None


_REWRITTEN = re.compile(
    r"\b(?:" + "|".join(SPELLINGS) + r")\s*\(|\b(?:FROM|JOIN)\s*\("
    r"|\bCOUNT\s*\(\s*(?:[\d.'+-]|TRUE\b|FALSE\b)"
    # a number anywhere after GROUP BY (a position; a bin width only costs one more walk)
    r"|\bGROUP\s+BY\b[^;]*?(?<![\w.'\"])\d+(?![\w.'\"])",
    re.IGNORECASE,
)


def rewrite(stmt: exp.Expr) -> exp.Expr:
    """``stmt`` with the rewrites of the module docstring applied (in place; returned)."""
    _spellings(stmt)
    _constant_counts(stmt)
    _names = {a.name.lower() for a in stmt.find_all(exp.TableAlias)}
    counter = [0]
    for select in list(stmt.find_all(exp.Select)):
        _from_forms(select, _names, counter)
        group_positions(select)
    return stmt


def rewrite_text(sql: str) -> str:
    """:func:`rewrite` of ``sql``'s one statement, as text (for the examples and tests)."""
    text, top = untop(sql)
    return str(with_top(rewrite(sqlglot.parse_one(text)), top).sql())


def _spellings(stmt: exp.Expr) -> None:
    for node in list(stmt.find_all(exp.Anonymous)):
        kind = SPELLINGS.get(str(node.name).upper())
        if kind is None or len(node.expressions) != 1:
            continue
        original = node.sql()
        replacement = kind(this=node.expressions[0])
        top_level = isinstance(node.parent, exp.Select) and node.arg_key == "expressions"
        node.replace(replacement)
        if top_level:
            replacement.replace(exp.alias_(replacement.copy(), original, quoted=True))


def _constant_counts(stmt: exp.Expr) -> None:
    """``COUNT(c)`` of a constant that is never NULL as ``COUNT(*)``: each row counts once.

    >>> rewrite_text("SELECT COUNT(1), COUNT('x') AS n FROM t HAVING COUNT(1) > 2")
    'SELECT COUNT(*) AS "COUNT(1)", COUNT(*) AS n FROM t HAVING COUNT(*) > 2'
    >>> rewrite_text("SELECT COUNT(1) FILTER(WHERE a > 1) FROM t")
    'SELECT COUNT(*) FILTER(WHERE a > 1) AS "COUNT(1) FILTER(WHERE a > 1)" FROM t'
    """
    if not any(_of_a_constant(c) for c in stmt.find_all(exp.Count)):
        return
    # A SELECT item holding one is named by its text first; then each is replaced (the
    # item's own node may be the count itself, so the items are found before).
    for select in list(stmt.find_all(exp.Select)):
        for item in list(select.expressions):
            if not isinstance(item, exp.Alias) and any(
                map(_of_a_constant, item.find_all(exp.Count))
            ):
                item.replace(exp.alias_(item.copy(), item.sql(), quoted=True))
    for node in [c for c in stmt.find_all(exp.Count) if _of_a_constant(c)]:
        node.replace(exp.Count(this=exp.Star()))


def _of_a_constant(count: exp.Count) -> bool:
    """``COUNT(1)``, ``COUNT('x')``, ``COUNT(TRUE)``: a row count (``COUNT(NULL)``, always 0,
    and ``COUNT(DISTINCT 1)`` are not)."""
    return isinstance(count.this, (exp.Literal, exp.Boolean))


def _fresh(names: set[str], counter: list[int]) -> str:
    while True:
        counter[0] += 1
        name = f"subquery{counter[0]}"
        if name not in names:
            names.add(name)
            return name


def _from_forms(select: exp.Select, names: set[str], counter: list[int]) -> None:
    src = select.args.get("from_") or select.args.get("from")
    items = [] if src is None else [src.this]
    items += [j.this for j in select.args.get("joins") or []]
    for node in items:
        if not isinstance(node, exp.Subquery):
            continue
        inner = node.this
        alias = node.args.get("alias")
        if isinstance(inner, exp.Table) and not inner.args.get("joins"):
            table = inner.copy()
            if alias is not None:
                table.set("alias", alias.copy())
            node.replace(table)
            continue
        if isinstance(inner, exp.Table):  # a parenthesised join
            whole = src is not None and node is src.this and not select.args.get("joins")
            if whole and alias is None:
                joins = inner.args.get("joins") or []
                first = inner.copy()
                first.set("joins", None)
                node.replace(first)
                select.set("joins", [j.copy() for j in joins])
                continue
            first = inner.copy()
            joins = first.args.get("joins") or []
            first.set("joins", None)
            wrapped = exp.select("*").from_(first)
            wrapped.set("joins", joins)
            node.set("this", wrapped)
        if node.args.get("alias") is None:
            node.set("alias", exp.TableAlias(this=exp.to_identifier(_fresh(names, counter))))


def group_positions(select: exp.Select) -> None:
    """``GROUP BY n`` as the n-th SELECT item's expression, in place (``GROUP BY ALL`` is
    left for the parser to refuse).

    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT 1 AS one, a, b AS c, SUM(d) FROM t GROUP BY 3, 2")
    >>> group_positions(q)
    >>> q.sql()
    'SELECT 1 AS one, a, b AS c, SUM(d) FROM t GROUP BY b, a'
    >>> group_positions(sqlglot.parse_one("SELECT a, COUNT(*) FROM t GROUP BY 2"))
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: refused SQL construct: GROUP BY 2 names the aggregate COUNT(*) (GROUP BY names the columns the rows are grouped by: GROUP BY a column, or its position in the SELECT list).
    """  # noqa: E501
    group = select.args.get("group")
    if group is None:
        return
    items = [i.this if isinstance(i, exp.Alias) else i for i in select.expressions]
    for g in list(group.expressions):
        if not (isinstance(g, exp.Literal) and not g.is_string and str(g.this).isdigit()):
            continue
        digits = str(g.this)
        form = "GROUP BY a column, or its position in the SELECT list"
        # (no int() of a long digit string: Python refuses more than 4300 digits)
        n = int(digits) if len(digits) <= 9 else 0
        if not 1 <= n <= len(items):
            raise ParameterError(
                f"refused SQL construct: GROUP BY {digits[:12]} is past the SELECT list's "
                f"{len(items)} items ({form})."
            )
        item = items[n - 1]
        if _aggregated(item):
            what = f"the aggregate {item.sql()[:60]}"
        elif isinstance(item, exp.Star) or item.find(exp.Column) is None:
            what = f"{item.sql()[:60]}, which reads no column"
        else:
            g.replace(item.copy())
            continue
        raise ParameterError(
            f"refused SQL construct: GROUP BY {n} names {what} (GROUP BY names the "
            f"columns the rows are grouped by: {form})."
        )


def _aggregated(node: exp.Expr) -> bool:
    """Whether ``node`` holds an aggregate call (so no GROUP BY key can be it)."""
    return node.find(exp.AggFunc) is not None
