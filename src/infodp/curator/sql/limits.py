"""The declared caps on a query's size, checked before it is planned.

Parsing, relation building and planning take time linear in the query's size; these caps
bound that size, so any statement is planned (or refused) in well under a second. They are
checked on the SQL text and its parse tree only, first, before anything reads the schema or
the ledger: a refusal names the argument, the size found and what is allowed, costs nothing
and is the same whatever the data. Every query in the docs and the tests is far inside them.

>>> check_sql_text("SELECT COUNT(*) FROM t")
>>> check_sql_text("SELECT " + "1, " * 9000 + "COUNT(*) FROM t")
Traceback (most recent call last):
...
infodp.errors.ParameterError: sql must be at most 20000 characters; got '<27022 characters>'.
"""

from __future__ import annotations

from sqlglot import exp

from infodp.errors import ParameterError

__all__ = [
    "MAX_CASE_BRANCHES",
    "MAX_CONDITIONS",
    "MAX_EXPRESSION_DEPTH",
    "MAX_EXPRESSION_NODES",
    "MAX_IN_LIST",
    "MAX_PARSED_CHARS",
    "MAX_SELECT_ITEMS",
    "MAX_SQL_CHARS",
    "chained",
    "check_nesting",
    "check_sql_text",
    "check_tree",
    "too_deep",
]

#: Longest SQL statement accepted (characters); the service's request body takes as much.
MAX_SQL_CHARS = 20_000
#: Longest text the SQL parser reads: the analyst's statement, or one the curator rewrote
#: from it (the inner query without ORDER BY, re-spaced; a query over a derived relation,
#: naming each lifted expression by its text), a few times the statement at most.
MAX_PARSED_CHARS = 8 * MAX_SQL_CHARS
#: Deepest nesting: parentheses in the text, and levels of the parsed expression (a chain of
#: ANDs, or of ORs, is one level however long). sqlglot and the relation builder recurse per
#: level, so this also keeps every statement far from Python's recursion limit.
MAX_EXPRESSION_DEPTH = 64
#: Most values in one ``IN (...)`` list (read in time linear in its length: 5,000 values are
#: planned in a fraction of a second).
MAX_IN_LIST = 5_000
#: Most WHEN branches in one CASE.
MAX_CASE_BRANCHES = 1_000
#: Most conditions (comparisons, IN, BETWEEN, IS) in the whole statement.
MAX_CONDITIONS = 2_000
#: Most nodes of the parsed statement (columns, literals, operators, ...).
MAX_EXPRESSION_NODES = 20_000
#: Most items in one SELECT list (each aggregate is a measurement priced and accounted on its
#: own, a few milliseconds each).
MAX_SELECT_ITEMS = 256


def check_sql_text(sql: object) -> None:
    """Refuse ``sql`` unless it is a non-empty string of at most MAX_SQL_CHARS characters
    (what every query path checks first, before parsing)."""
    if not isinstance(sql, str) or not sql.strip():
        raise ParameterError("sql", sql, "a non-empty SQL SELECT statement")
    if len(sql) > MAX_SQL_CHARS:
        raise ParameterError(
            "sql", f"<{len(sql)} characters>", f"at most {MAX_SQL_CHARS} characters"
        )


def too_deep() -> ParameterError:
    """The refusal of a statement nested deeper than MAX_EXPRESSION_DEPTH."""
    return ParameterError(
        "sql", "<deeply nested>", f"expressions nested at most {MAX_EXPRESSION_DEPTH} deep"
    )


def check_nesting(sql: str) -> None:
    """Refuse parentheses nested deeper than MAX_EXPRESSION_DEPTH (before the recursive parser)."""
    depth = 0
    quote: str | None = None
    for ch in sql:
        if quote is not None:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
            if depth > MAX_EXPRESSION_DEPTH:
                raise too_deep()
        elif ch == ")":
            depth -= 1


#: Operators whose chains (a AND b AND c) nest in sqlglot's tree without nesting in the text.
_CHAINS = (exp.And, exp.Or)


def check_tree(root: exp.Expr) -> None:
    """Bound the parsed tree (:mod:`infodp.curator.sql.limits`) without recursion: its nesting
    (each level of the text is about two of the tree's, a Paren and what it holds; a chain
    of ANDs or ORs is one), its size, IN lists, CASE branches, conditions, SELECT items."""
    stack: list[tuple[exp.Expr, int]] = [(root, 0)]
    nodes = conditions = 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_EXPRESSION_NODES:
            raise ParameterError(
                "sql",
                f"<more than {MAX_EXPRESSION_NODES} nodes>",
                f"at most {MAX_EXPRESSION_NODES} nodes (columns, literals, operators, ...)",
            )
        if depth > 2 * MAX_EXPRESSION_DEPTH:
            raise too_deep()
        if isinstance(node, exp.In) and len(node.expressions) > MAX_IN_LIST:
            raise ParameterError(
                "IN list", f"<{len(node.expressions)} values>", f"at most {MAX_IN_LIST} values"
            )
        if isinstance(node, exp.Case) and len(node.args.get("ifs") or ()) > MAX_CASE_BRANCHES:
            raise ParameterError(
                "CASE",
                f"<{len(node.args['ifs'])} branches>",
                f"at most {MAX_CASE_BRANCHES} WHEN branches",
            )
        if isinstance(node, exp.Select) and len(node.expressions) > MAX_SELECT_ITEMS:
            raise ParameterError(
                "SELECT list", f"<{len(node.expressions)} items>", f"at most {MAX_SELECT_ITEMS}"
            )
        if isinstance(node, (exp.Predicate, exp.Is)):
            conditions += 1
            if conditions > MAX_CONDITIONS:
                raise ParameterError(
                    "sql",
                    f"<more than {MAX_CONDITIONS} conditions>",
                    f"at most {MAX_CONDITIONS} conditions (comparisons, IN, BETWEEN, IS)",
                )
        for child in node.iter_expressions():
            chained = isinstance(node, _CHAINS) and type(child) is type(node)
            stack.append((child, depth if chained else depth + 1))


def chained(node: exp.Expr) -> list[exp.Expr]:
    """The terms of a chain of ``node``'s connector (a AND b AND c), left to right, without
    recursion (sqlglot parses a chain as nested pairs, one level per term).

    >>> import sqlglot
    >>> [t.sql() for t in chained(sqlglot.parse_one("a AND (b OR c) AND d"))]
    ['a', '(b OR c)', 'd']
    """
    terms: list[exp.Expr] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is type(node):
            stack += [n.args["expression"], n.this]
        else:
            terms.append(n)
    return terms
