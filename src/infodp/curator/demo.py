"""The main-job demo: a synthetic census of 1 000 000 people and a short DP SQL session.

:func:`census_frame` builds a realistic, reproducible table (fixed seed, vectorised numpy):
age, sex, region, education, income (log-normal, rising with education and age, a few values
missing) and a diagnosis whose prevalence rises with age. :func:`run_demo` registers it once in
the store (cached), gives a fresh analyst a budget, runs a few queries showing each answer's
accuracy and leakage, releases a synopsis and answers from it for free, shows a refused
over-budget query, and ends with the ledger.

>>> frame = census_frame(1000)
>>> list(frame.columns)
['person_id', 'age', 'sex', 'region', 'education', 'income', 'diagnosis']
>>> len(frame), bool(frame["age"].between(0, 100).all())
(1000, True)
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from infodp._exact import float_up
from infodp._format import format_number as _fmtn
from infodp.errors import BudgetExceeded
from infodp.units import nats_to_bits

if TYPE_CHECKING:
    from infodp._jsonable import JsonObject, JsonValue
    from infodp.curator.declaration.schema import SchemaDict
    from infodp.curator.session import ArrowFrame

__all__ = [
    "CENSUS_ROWS",
    "CENSUS_SCHEMA",
    "DEMO_QUERIES",
    "STORE_ANALYST",
    "census_frame",
    "next_commands",
    "run_demo",
]

#: Rows of the demo table.
CENSUS_ROWS = 1_000_000
REGIONS = ["north", "south", "east", "west", "central", "coast", "highlands", "islands"]
EDUCATION = ["none", "primary", "secondary", "bachelor", "master", "doctorate"]
DIAGNOSES = ["none", "asthma", "diabetes", "hypertension", "cancer"]

#: The census's public schema (the declarations an analyst sees).
CENSUS_SCHEMA: SchemaDict = {
    "table": "census",
    "privacy_unit": "person_id",
    "max_rows_per_unit": 1,
    "columns": {
        "age": {"type": "int", "bounds": [0, 100]},
        "sex": {"type": "category", "categories": ["F", "M"]},
        "region": {"type": "category", "categories": REGIONS},
        "education": {"type": "category", "categories": EDUCATION},
        "income": {"type": "float", "bounds": [0, 300000], "nulls": "drop"},
        "diagnosis": {"type": "category", "categories": DIAGNOSES},
    },
}

#: (title, SQL, ε) of the interactive part of the session.
DEMO_QUERIES: tuple[tuple[str, str, str], ...] = (
    (
        "Head count and mean income by region",
        "SELECT region, COUNT(*), AVG(income) FROM census GROUP BY region",
        "0.3",
    ),
    (
        "Median income by education (exponential mechanism)",
        "SELECT education, MEDIAN(income) FROM census GROUP BY education",
        "0.3",
    ),
    (
        "Diagnoses among people aged 65 and over",
        "SELECT diagnosis, COUNT(*) FROM census WHERE age >= 65 GROUP BY diagnosis",
        "0.2",
    ),
    ("Age by sex", "SELECT sex, AVG(age), STDDEV(age) FROM census GROUP BY sex", "0.2"),
)


def census_frame(rows: int = CENSUS_ROWS, seed: int = 20261122) -> ArrowFrame:
    """A reproducible synthetic census (one row per person) as a pandas DataFrame."""
    pd = importlib.import_module("pandas")  # optional at type-check time (no stubs)
    rng = np.random.default_rng(seed)
    age = np.clip(rng.gamma(4.0, 10.0, rows), 0, 100).astype(np.int64)
    sex = rng.choice(np.array(["F", "M"]), rows)
    region = rng.choice(np.array(REGIONS), rows, p=[0.2, 0.18, 0.15, 0.14, 0.12, 0.1, 0.06, 0.05])
    # Education depends on age: children have none/primary.
    edu_score = (
        rng.normal(2.4, 1.2, rows) + np.where(age < 12, -3.0, 0.0) + np.where(age < 18, -1.0, 0.0)
    )
    education_idx = np.clip(np.round(edu_score), 0, len(EDUCATION) - 1).astype(np.int64)
    education = np.array(EDUCATION)[education_idx]
    working = (age >= 18) & (age <= 67)
    region_effect = np.array([0.05, -0.05, 0.0, 0.1, 0.15, 0.0, -0.15, -0.1])
    region_idx = np.searchsorted(np.array(REGIONS), region, sorter=np.argsort(REGIONS))
    region_idx = np.argsort(REGIONS)[region_idx]
    log_income = (
        9.6
        + 0.25 * education_idx
        + 0.012 * np.minimum(age, 55)
        + region_effect[region_idx]
        + rng.normal(0, 0.6, rows)
    )
    income = np.where(working, np.exp(log_income), rng.uniform(0, 12000, rows))
    income = np.round(income, 2)
    income[rng.random(rows) < 0.01] = np.nan  # non-response: declared 'nulls: drop'
    risk = np.clip((age - 30) / 70.0, 0.0, 1.0)
    # P(asthma) = 6%, P(diabetes) = 3-15%, P(hypertension) = 5-35%, P(cancer) = 1-7% by age.
    probs = np.stack([0.06 + 0 * risk, 0.03 + 0.12 * risk, 0.05 + 0.30 * risk, 0.01 + 0.06 * risk])
    cuts = np.cumsum(probs, axis=0)
    u = rng.random(rows)
    diagnosis_idx = np.where(u < cuts[-1], 1 + (u[None, :] >= cuts).sum(axis=0), 0)
    diagnosis = np.array(DIAGNOSES)[diagnosis_idx]
    frame: ArrowFrame = pd.DataFrame(
        {
            "person_id": np.arange(rows, dtype=np.int64),
            "age": age,
            "sex": sex,
            "region": region,
            "education": education,
            "income": income,
            "diagnosis": diagnosis,
        }
    )
    return frame


@runtime_checkable
class _Printer(Protocol):
    """A rich Console (what the CLI passes): text printed as is."""

    def print(
        self,
        *objects: object,
        markup: bool | None = None,
        highlight: bool | None = None,
        soft_wrap: bool | None = None,
    ) -> None: ...


#: Where the demo says things: the terminal (None), a rich Console or a function of the text.
Console = _Printer | Callable[[str], None] | None


def _say(console: Console) -> Callable[[str], None]:
    if console is None:
        import click

        return lambda text: click.echo(text)
    if isinstance(console, _Printer):
        # soft_wrap: no line breaks inserted, so a printed command can be copied whole.
        return lambda text: console.print(text, markup=False, highlight=False, soft_wrap=True)
    if callable(console):
        return lambda text: console(text)
    raise TypeError("console must be None, a rich Console or a callable")


def _cell(v: object) -> str:
    from infodp._format import format_value

    return format_value(v)


def _render(
    say: Callable[[str], None],
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    intervals: Sequence[Sequence[object]],
) -> None:
    """Each row of an answer on one line: ``column=value (95%: interval)``."""
    lines = []
    for row, cis in zip(rows, intervals, strict=True):
        parts = []
        for c, v, ci in zip(columns, row, cis, strict=True):
            parts.append(f"{c}={_cell(v)}" + ("" if ci is None else f" (95%: {_cell(ci)})"))
        lines.append("    " + ", ".join(parts))
    say("\n".join(lines))


def _declared(rows: int) -> SchemaDict:
    """The census schema with its size declared public: a synthetic census's head count is
    public, so the whole-table information bound can use it (infodp never measures N)."""
    return {**CENSUS_SCHEMA, "public_rows": rows}


def _cached_rows(db: Path) -> int | None:
    """Rows of the cached census table in store ``db``, or None if not cached."""
    from infodp.curator.backends.duckdb import DuckDBBackend

    if not db.is_file():
        return None
    con = DuckDBBackend(db).connect(read_only=True)
    try:
        found = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'census'"
        ).fetchone()
        if found is None or found[0] == 0:
            return None
        row = con.execute("SELECT count(*) FROM census").fetchone()
    finally:
        con.close()
    return 0 if row is None else int(row[0])


#: The analyst the demo leaves in the store's own ledger, so the commands it prints work.
STORE_ANALYST = "you"


def next_commands(db: str | Path) -> list[str]:
    """The commands that work on the demo's store afterwards (printed at the end).

    >>> next_commands("infodp-demo.duckdb")[0]
    'infodp ledger --db infodp-demo.duckdb'
    """
    import shlex

    d = shlex.quote(str(db))
    return [
        f"infodp ledger --db {d}",
        f"infodp query --db {d} --analyst {STORE_ANALYST} --epsilon 0.1 "
        "'SELECT region, COUNT(*) FROM census GROUP BY region'",
        f"infodp serve --db {d}",
    ]


def _make_store(db: Path, rows: int, say: Callable[[str], None]) -> bool:
    """Make ``db`` a complete store holding the census, with its own ledger (where
    :data:`STORE_ANALYST` has a budget of ε = 1), as any data owner's store is: every command
    (``infodp ledger``, ``query``, ``serve``) works on it. Returns whether the table was made.

    A store left by an older demo (the census without a ledger) gets its ledger now, from the
    store's own record of the census (:func:`~infodp.curator.store.database.reinit_ledger`).
    """
    from infodp.curator.engine import Curator
    from infodp.curator.store.database import ledger_path, reinit_ledger

    if _cached_rows(db) is None:
        t0 = time.perf_counter()
        frame = census_frame(rows)
        cur = Curator(db)
        try:
            cur.register_dataset("census", frame, _declared(rows), info_cap_bits=None)
            cur.add_analyst(STORE_ANALYST, "census", epsilon="1")
        finally:
            cur.close()
        say(
            f"created the synthetic census: {_fmtn(rows)} people "
            f"({_fmtn(time.perf_counter() - t0)} s, cached in {db})"
        )
        return True
    if not ledger_path(db).is_file():
        reinit_ledger(db)
        cur = Curator(db)
        try:
            cur.add_analyst(STORE_ANALYST, "census", epsilon="1")
        finally:
            cur.close()
    say(f"using the cached census in {db}")
    return False


def run_demo(
    db_path: str | Path,
    as_json: bool = False,
    console: Console = None,
    *,
    rows: int = CENSUS_ROWS,
) -> JsonObject:
    """Run the demo session on the store ``db_path``; returns the session as one JSON-able dict.

    The census is generated and registered on the first run only (cached in the store, which
    gets its own ledger, so ``infodp ledger``/``query``/``serve`` work on it afterwards: see
    :func:`next_commands`); the session itself runs on a fresh in-memory ledger with one
    analyst (ε = 2, δ = 1e-6), so every run spends and reports the same totals and the
    store's ledger is never charged by the demo.
    """
    from infodp.curator.declaration.source import load_schema
    from infodp.curator.engine import Curator

    say = (lambda _text: None) if as_json else _say(console)
    started = time.perf_counter()
    db_path = Path(db_path)
    created = _make_store(db_path, rows, say)
    cached = _cached_rows(db_path) or 0
    cur = Curator(db_path, ledger=":memory:")
    cur.ledger.register_dataset(
        "census",
        load_schema(_declared(cached)).to_json(),
        rows=cached,
        source="census_frame",
        unit_rows_ok=True,  # registration cut every unit to its row limit
    )
    analyst = "demo"
    cur.add_analyst(analyst, "census", epsilon="2", delta="1e-6")
    say(f"analyst {analyst}: budget epsilon=2, delta=1e-6 on census (for this run)\n")
    session: list[JsonValue] = []
    for title, sql, eps in DEMO_QUERIES:
        t0 = time.perf_counter()
        result = cur.query(analyst, sql, epsilon=eps).to_dict()
        elapsed = time.perf_counter() - t0
        leak = result["cost"]["leakage"]
        say(f"{title}  [epsilon={eps}, {_fmtn(elapsed * 1000)} ms]\n  {sql}")
        _render(say, result["columns"], result["rows"], result["confidence_intervals"])
        say(
            f"  leaks at most {_fmtn(leak['bits']['inf'])} bits about any one person (worst case), "
            f"{_fmtn(leak['bits']['1'])} bits on average (α=1); an attacker's best guess "
            f"succeeds with probability <= {_fmtn(leak['attacker_success_max'])}; "
            f"about the whole table <= {_fmtn(result['cost']['information_bits'])} bits\n"
        )
        session.append({"title": title, "sql": sql, "seconds": elapsed, **result})
    name = "age_sex"
    syn = cur.release_synopsis(analyst, name, "census", ["age", "sex"], epsilon="0.5")
    say(
        f"Released synopsis {name}: a noisy age x sex histogram ({len(syn.counts)} cells, "
        "epsilon=0.5); every question below is answered from it for free:"
    )
    free: list[JsonValue] = []
    for sql in (
        "SELECT COUNT(*) FROM census WHERE age BETWEEN 18 AND 25",
        "SELECT sex, COUNT(*), AVG(age) FROM census WHERE age >= 65 GROUP BY sex",
    ):
        ans = cur.query_synopsis(name, sql)
        say(f"  {sql}")
        _render(say, ans["columns"], ans["rows"], ans["confidence_intervals"])
        free.append({"sql": sql, **ans})
    refused: JsonObject = {}
    big = "SELECT region, COUNT(*) FROM census GROUP BY region"
    try:
        cur.query(analyst, big, epsilon="5")
    except BudgetExceeded as err:
        refused = {"sql": big, "epsilon": 5, "error": str(err), "exit_status": 3}
        say(f"\nOver-budget query refused (the CLI exits with status 3):\n  {err}")
    budget = cur.ledger.budget(analyst, "census")
    spent = float_up(budget.spent_epsilon)  # as the budget's JSON view rounds it
    info_bits = nats_to_bits(cur.ledger.dataset("census").info_spent_nats)
    say(
        f"\nledger: {analyst} spent epsilon={_fmtn(spent)} of 2; the table has "
        f"released at most {_fmtn(info_bits)} bits in total (α=1, all analysts). "
        f"Demo time {_fmtn(time.perf_counter() - started)} s."
    )
    say(
        f"\nThe store {db_path} keeps the census and its own ledger (analyst "
        f"{STORE_ANALYST}, epsilon=1). Try next:\n  " + "\n  ".join(next_commands(db_path))
    )
    return {
        "db": str(db_path),
        "created_table": created,
        "rows": cur.ledger.dataset("census").rows,
        "analyst": analyst,
        "queries": session,
        "synopsis": {"name": name, "cells": len(syn.counts), "answers": free},
        "refused": refused,
        "remaining": budget.to_dict(),
        "table_information_bits": info_bits,
        "seconds": time.perf_counter() - started,
        "next_commands": list(next_commands(db_path)),
    }
