"""Post-processing of released values: HAVING, ORDER BY, LIMIT/OFFSET and arithmetic between
aggregates, applied after the noise and free.

Whatever is computed from released values alone costs nothing more: post-processing (Dwork &
Roth 2014, Prop. 2.1). A query using these clauses is split in two by :func:`split_query`
(:mod:`~infodp.curator.sql.post.split`):

- the **inner query**, an ordinary aggregate query that the SQL parser prices and the backend
  answers; it measures every aggregate the outer clauses mention, once (an aggregate named only
  in HAVING or ORDER BY is measured and charged like one in SELECT: its noisy value is what the
  filter reads);
- a :class:`PostProcess` (:mod:`~infodp.curator.sql.post.process`), applied to the released table:
  the SELECT items computed from released columns (:mod:`~infodp.curator.sql.post.terms`), the
  HAVING filter, the order, the limit.

Intervals follow the values where they honestly can (:mod:`~infodp.curator.sql.post.enclosure`):
an item that is one released column keeps its interval; an item computed from released values
gets the interval-arithmetic enclosure of its inputs' intervals (Moore 1966), which holds with
probability at least 1 − k·β for k noisy inputs (Boole's inequality), and the answer's notes
say so; none is given rather than a wrong one.

>>> post = split_query("SELECT g, SUM(v) / COUNT(*) AS mean FROM t GROUP BY g "
...                    "HAVING COUNT(*) > 10 ORDER BY mean DESC LIMIT 1")
>>> post.inner_sql, post.limit
('SELECT g, SUM(v) AS __pp0, COUNT(*) AS __pp1 FROM t GROUP BY g', 1)
"""

from __future__ import annotations

import typing as _typing

from infodp._lazy import lazy_exports as _lazy_exports
from infodp.curator.sql.post.split import MAX_LIMIT, inner_sql, split_query

if _typing.TYPE_CHECKING:
    from infodp.curator.sql.post.process import Item, Ordering, PostProcess
    from infodp.curator.sql.post.terms import Term

# Imported on first use (infodp._lazy): every query is split, few have a part to post-process.
__getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        "Item": "infodp.curator.sql.post.process",
        "Ordering": "infodp.curator.sql.post.process",
        "PostProcess": "infodp.curator.sql.post.process",
        "Term": "infodp.curator.sql.post.terms",
    },
)

__all__ = ["MAX_LIMIT", "Item", "Ordering", "PostProcess", "Term", "inner_sql", "split_query"]
