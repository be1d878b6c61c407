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
    "check_sql_text",
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
