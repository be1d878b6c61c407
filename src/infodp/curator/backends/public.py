"""Public tables of a population: copied as they are, and their public facts measured.

A public table (declared ``public: true``) holds no one's private data: its rows may be shown,
and facts measured on it are public facts. Registration copies its declared columns (typed as
declared) and measures, once, what bounds a join with it (:mod:`infodp.curator.relations`):

- every column's **multiplicity**, the most rows sharing one non-null value: a private row
  joined on that column matches at most that many public rows, so a unit's rows in the join
  are at most its own rows times it (NULL never matches in an equality join);
- a text column with at most :data:`MAX_PUBLIC_CATEGORIES` distinct values becomes a category
  column whose categories are those values: grouping by it needs no partition selection, since
  the possible keys are public;
- a numeric column declared without bounds gets its public (min, max) as bounds;
- the table's row count, as ``public_rows``.

None of these reads a private table, so nothing here is charged.

>>> import duckdb, pandas as pd
>>> from infodp.curator.declaration.schema import ColumnSpec, DatasetSchema
>>> con = duckdb.connect()
>>> _ = con.register("__source", pd.DataFrame({"region": ["n", "s", "s"], "w": [1, 2, 5]}))
>>> m = DatasetSchema("regions", "pid", (ColumnSpec("region", "text"), ColumnSpec("w", "int")),
...                   public=True)
>>> facts = copy_public(con, "__source", "clinic__regions", m)
>>> [(c.name, c.type, c.categories, c.bounds, c.multiplicity) for c in facts.columns]
[('region', 'category', ('n', 's'), None, 2), ('w', 'int', None, (1.0, 5.0), 1)]
>>> facts.public_rows
3
"""

from __future__ import annotations

import dataclasses

import duckdb

from infodp.curator.declaration.schema import DatasetSchema
from infodp.errors import ParameterError

__all__ = ["MAX_PUBLIC_CATEGORIES", "copy_public", "public_facts"]

#: A public text column with at most this many distinct values is grouped by its values.
MAX_PUBLIC_CATEGORIES = 10_000

_TYPES = {"int": "BIGINT", "float": "DOUBLE"}


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def copy_public(
    con: duckdb.DuckDBPyConnection, source: str, table: str, member: DatasetSchema
) -> DatasetSchema:
    """Copy the declared columns of relation ``source`` into table ``table``, typed as declared,
    and return ``member`` with its public facts (:func:`public_facts`)."""
    names = {c[0].lower(): c[0] for c in con.execute(f"DESCRIBE {_q(source)}").fetchall()}
    items = []
    for col in member.columns:
        src = names.get(col.name.lower())
        if src is None:
            raise ParameterError(
                f"declared column {col.name!r} of public table {member.table!r} is not in "
                f"its source; source columns: {', '.join(names.values())}."
            )
        cast = _TYPES.get(col.type, "VARCHAR")
        typed = f"TRY_CAST({_q(src)} AS {cast})"
        bad = con.execute(
            f"SELECT count(*) FROM {_q(source)} WHERE {_q(src)} IS NOT NULL AND {typed} IS NULL"
        ).fetchone()
        if bad is not None and bad[0] > 0:
            raise ParameterError(
                f"column {col.name!r} of public table {member.table!r} is declared {col.type} "
                "but some values are not numbers of that type."
            )
        if col.type == "float":
            # An infinite public value would overflow every bound and sum a join derives.
            inf = con.execute(
                f"SELECT count(*) FROM {_q(source)} WHERE NOT isfinite({typed})"
            ).fetchone()
            if inf is not None and inf[0] > 0:
                raise ParameterError(
                    f"column {col.name!r} of public table {member.table!r} holds NaN or "
                    "infinite values; a public numeric column must hold finite numbers "
                    "(or NULL)."
                )
        items.append(f"{typed} AS {_q(col.name)}")
    con.execute(f"CREATE TABLE {_q(table)} AS SELECT {', '.join(items)} FROM {_q(source)}")
    return public_facts(con, table, member)


def public_facts(
    con: duckdb.DuckDBPyConnection, table: str, member: DatasetSchema
) -> DatasetSchema:
    """``member`` with the facts measured on its stored public ``table`` (see the module)."""
    t = _q(table)
    count = con.execute(f"SELECT count(*) FROM {t}").fetchone()
    rows = 0 if count is None else int(count[0])
    columns = []
    for col in member.columns:
        c = _q(col.name)
        row = con.execute(
            f"SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM {t} "
            f"WHERE {c} IS NOT NULL GROUP BY {c})"
        ).fetchone()
        spec = dataclasses.replace(col, multiplicity=0 if row is None else int(row[0]))
        if col.type == "text":
            values = con.execute(
                f"SELECT DISTINCT {c} FROM {t} WHERE {c} IS NOT NULL ORDER BY 1 "
                f"LIMIT {MAX_PUBLIC_CATEGORIES + 1}"
            ).fetchall()
            if 0 < len(values) <= MAX_PUBLIC_CATEGORIES:
                cats = tuple(str(v[0]) for v in values)
                spec = dataclasses.replace(spec, type="category", categories=cats)
        elif col.is_numeric and col.bounds is None:
            lo_hi = con.execute(f"SELECT min({c}), max({c}) FROM {t}").fetchone()
            if lo_hi is not None and lo_hi[0] is not None:
                spec = dataclasses.replace(spec, bounds=(float(lo_hi[0]), float(lo_hi[1])))
        columns.append(spec)
    return dataclasses.replace(member, columns=tuple(columns), public_rows=rows)
