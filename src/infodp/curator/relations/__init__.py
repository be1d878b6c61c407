"""Derived relations: what a query over a population's tables reads (placeholder: one table)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from infodp.curator.datasets import tables_read
from infodp.curator.schema import DatasetSchema, stored_name
from infodp.errors import ParameterError

__all__ = ["Resolved", "resolve"]


@dataclass(frozen=True, slots=True)
class Resolved:
    """The query rewritten to read one relation, that relation's schema, and whether units
    may exceed its row limit in it (the compiler then applies its per-unit row window)."""

    sql: str
    schema: DatasetSchema
    row_cut: bool = False


def resolve(sql: str, schema: DatasetSchema) -> Resolved:
    """The relation ``sql`` reads in dataset ``schema``."""
    if not schema.is_population:
        return Resolved(sql, schema)
    names = tables_read(sql)
    if len(names) != 1:
        raise ParameterError("sql", list(names), "one table")
    member = schema.member(names[0].split(".")[-1])
    if member.public:
        raise ParameterError("sql", names[0], "a query reading a private table")
    body = f'SELECT * FROM "{stored_name(schema.table, member.table)}"'
    virtual = dataclasses.replace(member, table=schema.table, source_sql=body)
    import re

    rewritten = re.sub(
        r"\bFROM\s+[A-Za-z_.]+", f"FROM {schema.table}", sql, count=1, flags=re.IGNORECASE
    )
    return Resolved(rewritten, virtual)
