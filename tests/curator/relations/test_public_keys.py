"""A public table's join key is a public key set: grouping by it releases every public key.

An inner join on a public table's text key keeps only rows whose key is one of the public
values (measured at registration, public facts), so ``GROUP BY b.isbn`` (or ``isbn`` after
``USING``) needs no partition selection: every public key is a released group, a key no
private row reaches answering 0 plus noise. The oracle is plain SQL over the frames with a
LEFT JOIN from the public table (``COUNT(l.isbn)``: 0 for a key without loans). A LEFT JOIN
from the private table keeps private keys outside the public set, so it still selects.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

from _stores import TEXT, cats, ints, population, private, public
from infodp.curator.engine import Curator
from infodp.curator.price.cost import plan_cost
from infodp.mechanisms.sampling import InsecureSeededSource

M = 3
SCHEMA: dict[str, Any] = population(
    "pid",
    {
        "loans": private(
            M, pid=TEXT, isbn=TEXT, genre=cats("crime", "poetry", "maths"), days=ints(0, 60)
        ),
        "books": public(isbn=TEXT, title=TEXT, genre=TEXT),
    },
)
ISBNS = ["111", "222", "333", "444"]  # 444: a public book nobody borrowed
#: What plain SQL answers for the grouped count (the released groups: every public isbn).
ORACLE = (
    "SELECT b.isbn, COUNT(l.isbn) FROM books b LEFT JOIN loans l ON l.isbn = b.isbn GROUP BY b.isbn"
)


def frames(drop: str | None = None) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(4)
    units = 400
    sizes = rng.integers(1, M + 1, units)
    n = int(sizes.sum())
    loans = pd.DataFrame(
        {
            "pid": [f"p{i}" for i, k in enumerate(sizes) for _ in range(k)],
            "isbn": rng.choice(["111", "222", "333", "999"], n),  # 999: not a public book
            "genre": rng.choice(["crime", "poetry", "maths"], n),
            "days": rng.integers(0, 61, n),
        }
    )
    if drop is not None:
        loans = loans[loans.pid != drop].reset_index(drop=True)
    books = pd.DataFrame(
        {
            "isbn": ISBNS,
            "title": ["A", "B", "C", "D"],
            "genre": ["crime", "poetry", "novel", "crime"],
        }
    )
    return {"loans": loans, "books": books}


def plain(sql: str, fs: dict[str, pd.DataFrame] | None = None) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    for name, frame in (fs or frames()).items():
        con.register(name, frame)
    return sorted(tuple(r) for r in con.execute(sql).fetchall())


def source() -> InsecureSeededSource:
    return InsecureSeededSource(17, i_understand_this_is_not_private=True)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Curator]:
    # keep_open: one read connection for the module's releases (all registered first).
    cur = Curator(
        tmp_path_factory.mktemp("public-keys") / "s.duckdb", source=source(), keep_open=True
    )
    cur.register_dataset("lib", frames(), SCHEMA)
    cur.add_analyst("a", "lib", epsilon=1000)
    yield cur
    cur.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT b.isbn, COUNT(*) FROM loans l JOIN books b ON l.isbn = b.isbn GROUP BY b.isbn",
        "SELECT isbn, COUNT(*) FROM loans JOIN books USING (isbn) GROUP BY isbn",
        "SELECT l.isbn, COUNT(*) FROM loans l JOIN books b ON b.isbn = l.isbn GROUP BY l.isbn",
        "SELECT b.isbn, COUNT(*) FROM books b JOIN loans l ON l.isbn = b.isbn GROUP BY b.isbn",
    ],
    ids=["on", "using", "private-side", "public-first"],
)
def test_a_public_join_key_releases_every_public_key(store: Curator, sql: str) -> None:
    plan, _, _, _ = store.plan(sql)
    (key,) = plan.group_by
    assert key.categories == tuple(ISBNS)  # the public values, no partition selection
    exact = store.exact_aggregates(sql).values
    want = plain(ORACLE)
    assert [(k, exact.get((k,), (0,))[0]) for k in ISBNS] == want
    r = store.query("a", sql, epsilon=5)  # δ = 0: declared keys need none
    assert [row[0] for row in r.rows] == ISBNS
    for (_, noisy), (lo, hi), (_, true) in zip(
        r.rows, (ci[1] for ci in r.confidence_intervals), want, strict=True
    ):
        assert abs(noisy - true) <= 4 * (hi - lo) + 1
    assert not any("partition selection" in note for note in r.notes)


def test_the_key_set_alone_is_free(store: Curator) -> None:
    r = store.query(
        "a", "SELECT b.isbn FROM loans l JOIN books b USING (isbn) GROUP BY b.isbn", epsilon=1
    )
    assert r.rows == tuple((k,) for k in ISBNS) and r.cost.epsilon == 0


def test_a_left_join_from_the_private_table_still_selects(store: Curator) -> None:
    sql = "SELECT l.isbn, COUNT(*) FROM loans l LEFT JOIN books b USING (isbn) GROUP BY l.isbn"
    plan, _, _, _ = store.plan(sql)
    assert plan.needs_partition_selection  # 999 is kept, and it is no public key


def test_a_declared_private_key_keeps_the_keys_that_are_public_values(store: Curator) -> None:
    sql = "SELECT l.genre, COUNT(*) FROM loans l JOIN books b ON l.genre = b.genre GROUP BY l.genre"
    plan, _, _, _ = store.plan(sql)
    (key,) = plan.group_by
    assert key.categories == ("crime", "poetry")  # declared ∩ public, declared order


@pytest.mark.slow
def test_neighbouring_datasets_give_the_same_keys_at_the_same_cost(tmp_path: Path) -> None:
    sql = "SELECT b.isbn, COUNT(*) FROM {d}.loans l JOIN {d}.books b USING (isbn) GROUP BY b.isbn"
    cur = Curator(tmp_path / "s.duckdb", source=source())
    fs, less = frames(), frames(drop="p0")
    removed = int((fs["loans"].pid == "p0").sum())
    cur.register_dataset("lib", fs, SCHEMA)
    cur.register_dataset("lib2", less, SCHEMA, independent=True)
    costs, exacts = [], []
    for d in ("lib", "lib2"):
        plan, schema, rows, _ = cur.plan(sql.format(d=d))
        costs.append(plan_cost(plan, schema, Fraction(1), Fraction(0), rows))
        exacts.append(cur.exact_aggregates(sql.format(d=d)).values)
    assert costs[0] == costs[1]
    (part,) = costs[0].parts
    assert part.sensitivity == M  # m rows, each meeting at most one public row (M = 1)
    l1 = sum(abs(exacts[0].get((k,), (0,))[0] - exacts[1].get((k,), (0,))[0]) for k in ISBNS)
    assert 0 < removed <= M and l1 <= part.sensitivity
    cur.close()


def test_a_subquery_keeps_the_public_keys(store: Curator) -> None:
    sql = "SELECT isbn, COUNT(*) FROM (SELECT * FROM loans JOIN books USING (isbn)) j GROUP BY isbn"
    plan, _, _, _ = store.plan(sql)
    assert plan.group_by[0].categories == tuple(ISBNS)
    exact = store.exact_aggregates(sql).values
    assert [(k, exact.get((k,), (0,))[0]) for k in ISBNS] == plain(ORACLE)
