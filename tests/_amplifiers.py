"""Test helpers: the three ways one person's rows can multiply a query's work, and pairs of
neighbouring stores to try them on.

A population of people, their visits (at most 3 each), a public table ``keys`` in which every
key is shared by 4 rows, and a public table ``heavy`` in which one key is shared by ``heavy``
rows. The target, ``zz``, has 3 visits. Each amplifier isolates the target in the first ON
clause (``v.person_id = 'zz'``) or by an attribute only the target may carry
(``v.cost > 50``), then multiplies the target's rows:

- ``chain``: the public table joined to itself k times: 3·4^(k+1) rows;
- ``self_join``: the visits joined to themselves on the unit k times: 3^(k+1) rows;
- ``heavy``: one join with the heavy key: 3·heavy rows.

Neighbours (Dwork & Roth 2014, Def. 2.4): ``with``/``without`` the target (add/remove), and
``high``/``low`` (the target's visits cost 100 or 10: one attribute flipped).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import _stores as stores
from _stores import TEXT, Store, ints, population, private, public

__all__ = ["Store", "chain", "heavy", "make_store", "self_join"]

NEIGHBOURS = {"add/remove": ("with", "without"), "attribute": ("high", "low")}


def declaration(limit: int | None) -> dict[str, object]:
    decl = population(
        "person_id",
        {
            "people": private(None, person_id=TEXT, age=ints(0, 99)),
            "visits": private(3, person_id=TEXT, tag=TEXT, cost=ints(0, 100)),
            "keys": public(k=TEXT),
            "heavy": public(k=TEXT),
        },
        table="clinic",
    )
    if limit is not None:
        decl["max_derived_rows_per_unit"] = limit
    return decl


def tables(side: str, heavy_rows: int) -> dict[str, pd.DataFrame]:
    """The population on one side of a pair (``with``, ``without``, ``high`` or ``low``)."""
    n = 200
    ids = [f"p{i}" for i in range(n)]
    people = pd.DataFrame({"person_id": ids, "age": [i % 100 for i in range(n)]})
    visits = pd.DataFrame(
        {
            "person_id": [i for i in ids for _ in range(2)],
            "tag": ["x", "y"] * n,
            "cost": [(7 * j) % 51 for j in range(2 * n)],  # everyone else costs at most 50
        }
    )
    if side != "without":
        people.loc[len(people)] = ["zz", 42]
        cost = 10 if side == "low" else 100
        for _ in range(3):
            visits.loc[len(visits)] = ["zz", "x", cost]
    keys = pd.DataFrame({"k": [k for k in ("x", "y", "z") for _ in range(4)]})
    heavy = pd.DataFrame({"k": ["x"] * heavy_rows + ["y", "z"]})
    return {"people": people, "visits": visits, "keys": keys, "heavy": heavy}


def make_store(directory: Path, side: str, *, limit: int | None, heavy_rows: int) -> Store:
    """The store of one side of a pair (analyst ``a``: ε = 100 000)."""
    budget = {"epsilon": 100_000}
    return stores.make_store(
        directory, "clinic", tables(side, heavy_rows), declaration(limit), budget=budget
    )


def _target(kind: str, alias: str) -> str:
    return f"{alias}.person_id = 'zz'" if kind == "add/remove" else f"{alias}.cost > 50"


def chain(k: int, kind: str = "add/remove") -> str:
    """The public table joined to itself: the target's 3 rows become 3·4^(k+1)."""
    q = f"SELECT COUNT(*) FROM visits v JOIN keys p0 ON v.tag = p0.k AND {_target(kind, 'v')}"
    for i in range(1, k + 1):
        q += f" JOIN keys p{i} ON p{i - 1}.k = p{i}.k"
    return q


def self_join(k: int, kind: str = "add/remove") -> str:
    """The visits joined to themselves on the unit: the target's 3 rows become 3^(k+1)."""
    q = "SELECT COUNT(*) FROM visits v0"
    for i in range(1, k + 1):
        q += f" JOIN visits v{i} ON v0.person_id = v{i}.person_id"
        if i == 1:
            q += f" AND {_target(kind, 'v0')}"
    return q


def heavy(kind: str = "add/remove") -> str:
    """One join with a key the heavy table repeats: 3·heavy rows."""
    return f"SELECT COUNT(*) FROM visits v JOIN heavy h ON v.tag = h.k AND {_target(kind, 'v')}"
