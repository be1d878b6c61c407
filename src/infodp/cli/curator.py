"""CLI of the curator: ``dataset``, ``analyst``, ``query`` (in :mod:`infodp.cli.query`),
``ledger``, ``release``.

The store is a DuckDB file (``--db``, default ``$INFODP_DB`` or ``infodp.duckdb``, created on
first use) with its ledger next to it (``<db>.ledger``). A refused over-budget query exits with
status 3 and a message giving requested, remaining and gap.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import click

from infodp._engines import DEFAULT as DEFAULT_ENGINE
from infodp._engines import names as engine_names
from infodp._format import format_number as _fmtn
from infodp._jsonable import to_jsonable
from infodp._validate import as_analyst_name
from infodp.cli._common import emit, json_option, parse_floats, spark_options
from infodp.cli.query import _curator, db_option, query
from infodp.errors import LedgerError, ParameterError
from infodp.units import nats_to_bits

__all__ = ["COMMANDS", "db_option"]


def _store_files(db: str) -> list[Any]:
    """The files a new store ``db`` consists of (the store first, then its ledger's)."""
    from pathlib import Path

    from infodp.curator.store.database import ledger_path

    led = str(ledger_path(db))
    return [Path(db), Path(db + ".wal"), *(Path(led + s) for s in ("", "-wal", "-shm", "-journal"))]


# -- dataset ------------------------------------------------------------------------------------


def _sources(given: tuple[str, ...]) -> str | dict[str, str]:
    """One source, or a population's TABLE=PATH sources by table.

    >>> _sources(("people.csv",))
    'people.csv'
    >>> _sources(("people=p.csv", "visits=v.parquet"))
    {'people': 'p.csv', 'visits': 'v.parquet'}
    """
    named = [s.partition("=") for s in given]
    if len(given) == 1 and not (named[0][1] and named[0][0].isidentifier()):
        return given[0]
    out: dict[str, str] = {}
    for table, eq, path in named:
        if not eq or not table.isidentifier() or not path:
            raise ParameterError("--source", table + eq + path, "TABLE=PATH, one per table")
        if table in out:
            raise ParameterError("--source", table, "each table once")
        out[table] = path
    return out


@click.group()
def dataset() -> None:
    """Register and list sensitive datasets (data owner)."""


@dataset.command("register")
@db_option
@click.option("--name", required=True, help="Name of the dataset (the table name in SQL).")
@click.option(
    "--source",
    "sources",
    required=True,
    multiple=True,
    help="A CSV or Parquet file; with --backend spark a Parquet path or a Spark table name. "
    "For a population (a schema with tables:), one TABLE=PATH per table, repeated.",
)
@click.option("--schema", "schema_path", required=True, help="The schema (YAML or JSON file).")
@click.option(
    "--info-cap-bits",
    type=float,
    default=None,
    help="Optional cap on the total information released about the table (bits, α = 1); "
    "needs public_rows or public_max_rows in the schema.",
)
@click.option(
    "--max-epsilon",
    default=None,
    help="Cap on the ε all analysts together may spend on this dataset (exact decimal).",
)
@click.option(
    "--max-delta",
    default=None,
    help="Cap on the δ all analysts together may spend on this dataset.",
)
@click.option(
    "--backend",
    type=click.Choice(engine_names()),
    default=DEFAULT_ENGINE.name,
    show_default=True,
    help="Where the bounded copy lives and queries run: the DuckDB store, or Apache Spark "
    "(needs pip install 'infodp[spark]' and Java 17+).",
)
@click.option(
    "--bounded-path",
    default=None,
    help="With --backend spark: where Spark writes the bounded Parquet copy "
    "(default <db>.bounded/NAME).",
)
@click.option(
    "--same-population-as",
    "same_population_as",
    default=None,
    metavar="NAME",
    help="Declare that the dataset holds the people of the registered dataset NAME: it "
    "shares NAME's caps and each analyst's spend there (recorded in the ledger). A budget "
    "still covers only the datasets it is granted on.",
)
@click.option(
    "--independent",
    is_flag=True,
    default=False,
    help="Declare that the dataset has its own caps and budgets, even if its units look "
    "like a registered dataset's (such a registration is refused without a declaration).",
)
@spark_options
@json_option
def dataset_register(
    db: str,
    name: str,
    sources: tuple[str, ...],
    schema_path: str,
    info_cap_bits: float | None,
    max_epsilon: str | None,
    max_delta: str | None,
    backend: str,
    bounded_path: str | None,
    same_population_as: str | None,
    independent: bool,
    spark_master: str | None,
    spark_conf: tuple[str, ...],
    as_json: bool,
) -> None:
    """Copy SOURCE into the store under NAME with its declared schema."""
    from pathlib import Path

    source = _sources(sources)
    if not Path(schema_path).is_file():
        raise ParameterError("--schema", schema_path, "an existing YAML or JSON file")
    spark: dict[str, Any] = {
        "spark_master": spark_master,
        "spark_conf": spark_conf,
        "progress": not as_json,
    }
    # A registration that fails leaves nothing behind: the files it created are removed.
    made = [p for p in _store_files(db) if not p.exists()]
    new_dirs = [d for d in Path(db).absolute().parents if not d.exists()]  # deepest first
    from infodp.cli._serving import refuse_while_served

    refuse_while_served(db)  # at once, not after a two-minute wait for the lock
    cur = None
    try:
        cur = _curator(db, create=True, **spark)
        info = cur.register_dataset(
            name,
            source,
            Path(schema_path).read_text(),
            info_cap_bits=info_cap_bits,
            max_epsilon=max_epsilon,
            max_delta=max_delta,
            backend=backend,
            bounded_path=bounded_path,
            independent=independent,
            same_population_as=same_population_as,
        )
    except BaseException:
        if cur is not None:
            cur.close()
        if made and made[0] == Path(db):  # the store itself is new: nothing else was in it
            for p in made:
                p.unlink(missing_ok=True)
            for d in new_dirs:
                with contextlib.suppress(OSError):  # only if still empty
                    d.rmdir()
        raise
    payload = {
        "dataset": info["name"],
        "rows": info["rows"],
        "schema": info["schema"],
        "info_cap_bits": info["info_cap_bits"],
        "max_epsilon": info["max_epsilon"],
        "max_delta": info["max_delta"],
        "fingerprint": info["fingerprint"],
        "shares_budgets_of": info["shares_budgets_of"],
        "independent": info["independent"],
        "budgets": info["budgets"],
        "null_ids_dropped": info["null_ids_dropped"],
        "backend": backend,
        "db": db,
    }
    emit(
        payload,
        as_json,
        lambda p: click.echo(
            f"registered {p['dataset']}: {p['rows']} rows, privacy unit "
            f"{p['schema']['privacy_unit']} (store {p['db']})"
            + _dropped_line(p["null_ids_dropped"], p["schema"]["privacy_unit"])
            + (f"\n{p['budgets']}" if p["budgets"] else "")
        ),
    )


def _dropped_line(dropped: int, unit: str) -> str:
    """The owner's line on rows left out for a NULL id (the id column's ``nulls: drop``).

    >>> _dropped_line(3, "pid")
    "\\n3 rows dropped: their pid is NULL (the id column's nulls: drop)"
    >>> _dropped_line(0, "pid")
    ''
    """
    if not dropped:
        return ""
    rows = "row" if dropped == 1 else "rows"
    return f"\n{dropped} {rows} dropped: their {unit} is NULL (the id column's nulls: drop)"


def _dataset_entry(cur: Any, r: Any) -> dict[str, Any]:
    """What the owner's commands show of one registered dataset."""
    from infodp.curator.declaration.schema import DatasetSchema

    schema = json.loads(r.schema_json)
    return {
        "name": r.name,
        "backend": cur.dataset_backend(r.name),
        "rows": r.rows,
        "schema": schema,
        "max_derived_rows_per_unit": DatasetSchema.from_dict(schema).work_limit,
        "info_cap_bits": r.info_cap_bits,
        "info_spent_bits": nats_to_bits(r.info_spent_nats),
        "max_epsilon": None if r.max_epsilon is None else float(r.max_epsilon),
        "max_delta": None if r.max_delta is None else float(r.max_delta),
        "spent_epsilon": float(r.spent_epsilon),
        "spent_delta": float(r.spent_delta),
        "shares_budgets_of": r.budget_group,
        "independent": r.independent,
    }


@dataset.command("list")
@db_option
@json_option
def dataset_list(db: str, as_json: bool) -> None:
    """List the registered datasets."""
    cur = _curator(db)
    payload = {"datasets": [_dataset_entry(cur, r) for r in cur.ledger.datasets()]}
    emit(
        payload,
        as_json,
        lambda p: click.echo(
            "\n".join(
                f"{d['name']}: {d['rows']} rows"
                + (
                    f", shares budgets of {d['shares_budgets_of']}"
                    if d["shares_budgets_of"]
                    else ""
                )
                for d in p["datasets"]
            )
            or "no datasets"
        ),
    )


@dataset.command("show")
@click.argument("name")
@db_option
@json_option
def dataset_show(name: str, db: str, as_json: bool) -> None:
    """Show one registered dataset: its declaration, limits, caps and what was spent.

    max_derived_rows_per_unit is the most rows one individual may have in any relation a
    query builds (joins, subqueries): a query over it is refused before it runs.
    """
    cur = _curator(db)
    try:
        record = cur.ledger.dataset(name)
    except ParameterError:
        raise ParameterError(
            "name", name, "a registered dataset (see infodp dataset list)"
        ) from None
    entry = _dataset_entry(cur, record)

    def text(d: dict[str, Any]) -> None:
        tables = d["schema"].get("tables")
        click.echo(
            f"{d['name']} ({d['backend']}): {d['rows']} rows, unit {d['schema']['privacy_unit']}"
        )
        if tables:
            click.echo("tables: " + ", ".join(tables))
        click.echo(
            f"max_derived_rows_per_unit: {d['max_derived_rows_per_unit']} "
            "(most rows of one individual in any relation a query builds)"
        )
        cap = d["info_cap_bits"]
        click.echo(f"information cap: {'none' if cap is None else f'{cap:g} bits'}")
        if d["shares_budgets_of"]:
            click.echo(f"shares the caps and budgets of {d['shares_budgets_of']}")

    emit(entry, as_json, text)


# -- analyst ------------------------------------------------------------------------------------


@click.group()
def analyst() -> None:
    """Give analysts budgets on datasets."""


@analyst.command("add")
@db_option
@click.option("--name", required=True, help="The analyst's name.")
@click.option("--dataset", "dataset_name", required=True, help="The dataset the budget is on.")
@click.option("--epsilon", default=None, help="Total ε budget (exact decimal).")
@click.option("--delta", default="0", show_default=True, help="Total δ budget.")
@click.option(
    "--currency",
    type=click.Choice(["basic", "pure", "approx", "rdp", "zcdp", "nats"]),
    default="basic",
    show_default=True,
    help="basic: exact (ε, δ) sums; pure/approx/rdp/zcdp/nats: enforced by the accountant "
    "(approx composes with the tight PLD; rdp caps the Rényi-DP curve at --orders; zcdp sums ρ "
    "up to --rho; nats bounds information at level --alpha).",
)
@click.option("--rho", default=None, help="ρ of a zcdp budget (Bun & Steinke 2016).")
@click.option("--alpha", type=float, default=1.0, show_default=True, help="Level for nats.")
@click.option("--nats", "nats_budget", type=float, default=None, help="Nats per individual.")
@click.option("--orders", default=None, help="Rényi orders of an rdp budget, e.g. 2,4,8.")
@click.option(
    "--rdp-epsilons", default=None, help="RDP ε at each of --orders, e.g. 0.5,1,2 (rdp currency)."
)
@json_option
def analyst_add(
    db: str,
    name: str,
    dataset_name: str,
    epsilon: str | None,
    delta: str,
    currency: str,
    alpha: float,
    nats_budget: float | None,
    rho: str | None,
    orders: str | None,
    rdp_epsilons: str | None,
    as_json: bool,
) -> None:
    """Add a budget for NAME on a dataset and print their API key (shown once)."""
    as_analyst_name("--name", name)  # refused before the store is opened
    cur = _curator(db)
    if currency == "basic":
        if epsilon is None:
            raise ParameterError("--epsilon", None, "given for the basic currency")
        key = cur.add_analyst(name, dataset_name, epsilon=epsilon, delta=delta)
    else:
        from infodp.accounting.accountant import Budget as AccountantBudget

        if currency == "nats":
            if nats_budget is None:
                raise ParameterError("--nats", None, "given for the nats currency")
            budget = AccountantBudget.nats(alpha, nats_budget)
        elif currency == "zcdp":
            if rho is None:
                raise ParameterError("--rho", None, "given for the zcdp currency")
            from infodp.curator.price.cost import as_budget_fraction

            budget = AccountantBudget.zcdp(as_budget_fraction("--rho", rho))
        elif currency == "rdp":
            if orders is None or rdp_epsilons is None:
                raise ParameterError(
                    "--orders/--rdp-epsilons", None, "both given for the rdp currency"
                )
            budget = AccountantBudget.rdp(
                parse_floats("--orders", orders), parse_floats("--rdp-epsilons", rdp_epsilons)
            )
        elif epsilon is None:
            raise ParameterError("--epsilon", None, f"given for the {currency} currency")
        else:
            from infodp.curator.engine import as_budget_fraction

            eps = as_budget_fraction("--epsilon", epsilon)
            if currency == "pure":
                budget = AccountantBudget.pure(eps)
            else:
                dlt = as_budget_fraction("--delta", delta, allow_zero=True)
                budget = AccountantBudget.approx(eps, dlt)
        key = cur.add_analyst(name, dataset_name, budget=budget)
    budget = cur.ledger.budget(name, cur.ledger.dataset(dataset_name).name)
    payload = {
        "analyst": name,
        "dataset": budget.dataset,
        "api_key": key,
        "budget": budget.to_dict(),
    }
    emit(
        payload,
        as_json,
        lambda p: click.echo(
            f"analyst {p['analyst']} on {p['dataset']} ({currency}): epsilon={epsilon}, "
            f"delta={delta}\n"
            + (
                f"API key (shown once, store it now): {p['api_key']}"
                if p["api_key"] is not None
                else f"no new key: {p['analyst']}'s key for the budget it shares covers "
                f"{p['dataset']} now"
            )
        ),
    )


@analyst.command("list")
@db_option
@json_option
def analyst_list(db: str, as_json: bool) -> None:
    """List analysts and their remaining budgets."""
    budgets = [b.to_dict() for b in _curator(db).ledger.budgets()]
    emit(
        {"analysts": budgets},
        as_json,
        lambda p: click.echo(
            "\n".join(
                f"{b['analyst']} on {b['dataset']}: remaining "
                f"epsilon={_fmtn(b['remaining_epsilon'], 6)}, delta={_fmtn(b['remaining_delta'])}"
                for b in p["analysts"]
            )
            or "no analysts"
        ),
    )


# -- ledger -------------------------------------------------------------------------------------


@click.group(invoke_without_command=True)
@db_option
@click.option("--analyst", "analyst_name", default=None, help="Only this analyst's entries.")
@click.option("--dataset", "dataset_name", default=None, help="Only this dataset's entries.")
@json_option
@click.pass_context
def ledger(
    ctx: click.Context,
    db: str,
    analyst_name: str | None,
    dataset_name: str | None,
    as_json: bool,
) -> None:
    """Show the privacy ledger: budgets, every query (who, when, SQL, cost), synopses.

    "infodp ledger reinit" (data owner) starts a new, empty ledger for a store.
    """
    if ctx.invoked_subcommand is not None:
        return
    from infodp.curator.ledger.shown_times import coarse_entry

    led = _curator(db).ledger
    payload = {
        "budgets": [b.to_dict() for b in led.budgets()],
        # Times to the second, as analysts see them (infodp.curator.ledger.shown_times).
        "entries": [coarse_entry(e.to_dict()) for e in led.entries(analyst_name, dataset_name)],
        "datasets": [
            {
                "name": d.name,
                "rows": d.rows,
                "info_cap_bits": d.info_cap_bits,
                "info_spent_bits": nats_to_bits(d.info_spent_nats),
            }
            for d in led.datasets()
        ],
        "synopses": [coarse_entry(s) for s in led.synopses()],
        "consistent": not led.check(),
    }

    def render(p: dict[str, Any]) -> None:
        for b in p["budgets"]:
            click.echo(
                f"{b['analyst']} on {b['dataset']}: spent epsilon="
                f"{_fmtn(b['spent_epsilon'], 6)} of "
                f"{_fmtn(b['epsilon'], 6)}, delta={_fmtn(b['spent_delta'])} of {_fmtn(b['delta'])}"
            )
        for e in p["entries"]:
            click.echo(
                f"#{e['id']} {e['created']} {e['analyst']} {e['status']} "
                f"epsilon={_fmtn(e['epsilon'], 6)} delta={_fmtn(e['delta'])}: {e['sql']}"
            )

    emit(to_jsonable(payload), as_json, render)


@ledger.command("verify")
@db_option
@json_option
def ledger_verify(db: str, as_json: bool) -> None:
    """Verify the whole ledger: SQLite's check, every entry's hash chain, the spends against
    the entries, every accountant state against its entries (opening verifies only the
    entries since the last verified checkpoint; this moves the checkpoint to the head)."""
    led = _curator(db).ledger
    problems = led.verify()
    if problems:
        raise LedgerError(
            f"the ledger of {db} is inconsistent ({'; '.join(problems[:3])}): restore it from "
            "a backup, or (data owner) run 'infodp ledger reinit --db STORE --yes'."
        )
    payload = {"db": db, "consistent": True}
    emit(payload, as_json, lambda p: click.echo(f"ledger of {p['db']}: consistent"))


@ledger.command("reinit")
@db_option
@click.option(
    "--yes",
    is_flag=True,
    default=False,
    help="Confirm: every budget, ledger entry, API key and synopsis of the store is forgotten.",
)
@json_option
def ledger_reinit(db: str, yes: bool, as_json: bool) -> None:
    """Start a new, empty ledger bound to the store (forgets all budgets; data owner only)."""
    from infodp.curator.store.database import reinit_ledger

    if not yes:
        raise ParameterError(
            "--yes",
            False,
            "given: re-initialising forgets every budget, entry, key and synopsis of the store",
        )
    done = reinit_ledger(db)
    payload = {
        "db": db,
        "store_id": done["store_id"],
        "datasets": done["datasets"],
        "forgotten": "all budgets, ledger entries, API keys and synopses",
    }
    emit(
        payload,
        as_json,
        lambda p: click.echo(
            f"new ledger for {p['db']}: all budgets, entries, keys and synopses were forgotten; "
            f"datasets kept: {', '.join(p['datasets']) or 'none'}"
        ),
    )


# -- release ------------------------------------------------------------------------------------


@click.command()
@db_option
@click.option("--analyst", "analyst_name", required=True, help="Who pays for the release.")
@click.option("--dataset", "dataset_name", required=True, help="The dataset to release from.")
@click.option("--columns", required=True, help="Comma-separated declared columns (the marginal).")
@click.option("--epsilon", required=True, help="ε the whole synopsis costs (once).")
@click.option("--name", required=True, help="Name of the synopsis (for query --synopsis).")
@json_option
def release(
    db: str,
    analyst_name: str,
    dataset_name: str,
    columns: str,
    epsilon: str,
    name: str,
    as_json: bool,
) -> None:
    """Publish a DP histogram over COLUMNS once; query it later for free (--synopsis)."""
    cur = _curator(db)
    cols = [c.strip() for c in columns.split(",") if c.strip()]
    syn = cur.release_synopsis(analyst_name, name, dataset_name, cols, epsilon=epsilon)
    budget = cur.ledger.budget(analyst_name, syn.dataset)
    payload = {
        "synopsis": name,
        "dataset": syn.dataset,
        "columns": list(syn.columns),
        "cells": len(syn.counts),
        "epsilon": syn.epsilon,
        "noise_scale": syn.scale,
        "remaining": budget.to_dict(),
    }
    emit(
        payload,
        as_json,
        lambda p: click.echo(
            f"released synopsis {p['synopsis']} over {', '.join(p['columns'])} "
            f"({p['cells']} cells, epsilon={_fmtn(p['epsilon'], 6)}); query it with: "
            f"infodp query --synopsis {p['synopsis']} ..."
        ),
    )


COMMANDS: list[click.Command] = [dataset, analyst, query, ledger, release]
