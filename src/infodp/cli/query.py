"""CLI of ``query``: answer an aggregate SQL query with differential privacy (the command a
one-query process runs), and the store options every curator command shares.

Its own module, apart from the other curator commands (:mod:`infodp.cli.curator`), so that a
query process builds only its own command's options.
"""

from __future__ import annotations

import math
from typing import Any

import click

from infodp.cli._common import emit, json_option, output_console, spark_options
from infodp.errors import ParameterError

__all__ = ["COMMANDS", "db_option"]

_db_option = click.option(
    "--db",
    "db",
    envvar="INFODP_DB",
    default="infodp.duckdb",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The store: a DuckDB file (created on first use); the ledger is <db>.ledger.",
)


def _use_ledger(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """``--ledger``: the ledger of the stores this command (and its children) opens, chosen
    until the command ends."""
    if value:
        import os

        from infodp.curator.store.ledger_location import LEDGER_ENV, use_ledger

        before = os.environ.get(LEDGER_ENV)
        use_ledger(value)

        def restore() -> None:
            if before is None:
                os.environ.pop(LEDGER_ENV, None)
            else:
                os.environ[LEDGER_ENV] = before

        ctx.call_on_close(restore)


_ledger_option = click.option(
    "--ledger",
    envvar="INFODP_LEDGER",
    default=None,
    expose_value=False,
    callback=_use_ledger,
    help="The ledger, e.g. a postgresql:// URL shared by a fleet of servers (default: the "
    "one the store records, else <db>.ledger).",
)


def db_option(f: Any) -> Any:
    """``--db STORE`` and ``--ledger URL``, on every command that opens a store."""
    return _db_option(_ledger_option(f))


def _curator(db: str, *, keep_open: bool = False, create: bool = False, **spark: Any) -> Any:
    """The curator over store ``db``; only ``create`` (``dataset register``) may make one.

    Every other command needs an existing store: a mistyped ``--db`` is refused (exit status
    2) before anything is opened, so no empty store or ledger is left behind.
    """
    from pathlib import Path

    from infodp.cli._collector import start_up

    if not create and not Path(db).is_file():
        raise ParameterError(
            "--db", db, "an existing infodp store (a store is made by 'infodp dataset register')"
        )
    # The curator's imports and opening the store: no collector passes (cli._collector).
    with start_up():
        from infodp.curator.engine import Curator

        # keep_open: a one-shot process that answers a query opens the store once (for its
        # id and for the answer) instead of twice.
        return Curator(db, keep_open=keep_open, one_shot=keep_open, **spark)


def _answer_table(p: dict[str, Any]) -> Any:
    """The released rows as a rich table: each value with its interval beside it."""
    from rich.table import Table

    from infodp._format import format_value

    columns = list(p["columns"])
    cis = p["confidence_intervals"]
    has_ci = [any(r[j] is not None for r in cis) for j in range(len(columns))]
    level = round(p["confidence"] * 100)
    table = Table(show_edge=False, header_style="bold")
    for name, ci in zip(columns, has_ci, strict=True):
        table.add_column(name, justify="left" if not ci else "right")
        if ci:
            table.add_column(f"{level}%", justify="right", style="dim")
    for row, ci_row in zip(p["rows"], cis, strict=True):
        cells: list[str] = []
        for j, value in enumerate(row):
            cells.append(format_value(value))
            if has_ci[j]:
                cells.append(_interval(value, ci_row[j]))
        table.add_row(*cells)
    return table


def _interval(value: Any, ci: Any) -> str:
    """``±h`` for an interval symmetric about the value, else ``[low, high]``."""
    from infodp._format import format_number, format_value

    if (
        isinstance(ci, list | tuple)
        and len(ci) == 2
        and isinstance(value, int | float)
        and all(isinstance(x, int | float) for x in ci)
    ):
        up, down = ci[1] - value, value - ci[0]
        if abs(up - down) <= 1e-9 * max(1.0, abs(up)):
            return "±" + format_number(up)
    return format_value(ci)


# -- query --------------------------------------------------------------------------------------


@click.command()
@db_option
@click.option("--analyst", "analyst_name", default=None, help="Who pays for the query.")
@click.option("--epsilon", default=None, help="ε this query spends (exact decimal).")
@click.option(
    "--delta", default="0", show_default=True, help="δ (partition selection, Gaussian noise)."
)
@click.option(
    "--noise",
    type=click.Choice(["laplace", "gaussian"]),
    default="laplace",
    show_default=True,
    help="Noise for counts and sums: discrete Laplace (ε) or discrete Gaussian ((ε, δ), δ > 0).",
)
@click.option(
    "--accuracy",
    multiple=True,
    help="Target half-width of each aggregate column's interval (at --confidence), or "
    "COLUMN=H for one column (repeatable; a quantile's target is its rank error): find the "
    "least ε that reaches it; with --analyst the query then runs at that ε, otherwise only "
    "the ε is printed.",
)
@click.option(
    "--rows",
    "rows",
    type=int,
    default=None,
    help="With --accuracy: plan AVG/VARIANCE/STDDEV intervals for groups of this many rows "
    "(a public assumption; the row count itself is private).",
)
@click.option("--synopsis", default=None, help="Answer from a released synopsis (free).")
@click.option(
    "--synopsis-dataset",
    default=None,
    help="With --synopsis: its dataset (synopsis names are unique per dataset).",
)
@click.option(
    "--confidence",
    type=float,
    default=0.95,
    show_default=True,
    help="Coverage of the noise intervals printed with each answer.",
)
@click.argument("sql")
@spark_options
@json_option
def query(
    db: str,
    analyst_name: str | None,
    epsilon: str | None,
    delta: str,
    noise: str,
    accuracy: tuple[str, ...],
    rows: int | None,
    synopsis: str | None,
    synopsis_dataset: str | None,
    confidence: float,
    sql: str,
    spark_master: str | None,
    spark_conf: tuple[str, ...],
    as_json: bool,
) -> None:
    """Answer an aggregate SQL query with differential privacy."""
    spark: dict[str, Any] = {
        "spark_master": spark_master,
        "spark_conf": spark_conf,
        "progress": not as_json,
    }
    from infodp.cli._prefetch import prefetch_numpy

    prefetch_numpy(sql)  # while the store opens and DuckDB aggregates (cli._prefetch)
    cur = _curator(db, keep_open=True, **spark)
    try:
        if accuracy:
            if epsilon is not None:
                raise ParameterError("--accuracy", accuracy[0], "not given together with --epsilon")
            target = _accuracy_targets(accuracy)
            options: dict[str, Any] = {"confidence": confidence, "delta": delta, "noise": noise}
            eps = cur.epsilon_for(sql, accuracy=target, rows=rows, **options)
            if analyst_name is None:
                plan = cur.estimate(sql, epsilon=eps, **options)
                columns = cur.column_accuracy(sql, epsilon=eps, rows=rows, **options)
                emit(
                    {"epsilon": str(eps), "rows": rows, "columns": columns, **plan},
                    as_json,
                    _render_plan,
                )
                return
            epsilon = str(eps)
        if synopsis is not None:
            payload = cur.query_synopsis(
                synopsis, sql, confidence=confidence, dataset=synopsis_dataset
            )
        else:
            if analyst_name is None:
                raise ParameterError("--analyst", None, "given (who pays for the query)")
            if epsilon is None:
                raise ParameterError("--epsilon", None, "given (the ε this query spends)")
            payload = cur.query(
                analyst_name,
                sql,
                epsilon=epsilon,
                delta=delta,
                confidence=confidence,
                noise=noise,
            ).to_dict()
    finally:
        cur.close()
    if as_json:
        import sys

        from infodp.curator.answer.render import answer_text

        # The one rendering of an answer: the service's and the ledger's copy are this text.
        sys.stdout.write(answer_text(payload) + "\n")
        return
    emit(payload, as_json, _render_answer)


def _accuracy_targets(given: tuple[str, ...]) -> Any:
    """``--accuracy H`` (every aggregate column) or ``--accuracy COLUMN=H`` (repeatable)."""
    if len(given) == 1 and "=" not in given[0]:
        return given[0]
    targets: dict[str, str] = {}
    for item in given:
        name, sep, value = item.rpartition("=")
        if not sep or not name.strip():
            raise ParameterError("--accuracy", item, "one number, or COLUMN=H for each column")
        targets[name.strip()] = value.strip()
    return targets


def _render_plan(p: dict[str, Any]) -> None:
    from infodp._format import format_number

    lines = [f"epsilon needed: {p['epsilon']} (confidence {p['confidence']})"]
    if p.get("rows") is not None:
        lines.append(f"  (AVG, VARIANCE and STDDEV planned for groups of {p['rows']} rows)")
    for a in p.get("columns", ()):
        if "halfwidth" in a:
            lines.append(f"  {a['column']}: ± {format_number(a['halfwidth'])}")
        else:
            lines.append(f"  {a['column']}: rank error {format_number(a['rank_error'])}")
    lines.append("measurements behind them:")
    for a in p["accuracy"]:
        if "halfwidth" in a:
            lines.append(f"  {a['measurement']}: ± {format_number(a['halfwidth'])}")
        else:
            lines.append(f"  {a['measurement']}: rank error {format_number(a['rank_error'])}")
    click.echo("\n".join(lines))


def _render_answer(p: dict[str, Any]) -> None:
    from infodp._format import format_number

    # Piped output is not cut to 80 columns: the table takes the width it needs.
    console = output_console()
    console.print(_answer_table(p))
    lines: list[str] = []
    cost = p.get("cost")
    if cost is not None:
        bits_total = cost.get("information_bits")
        whole = (
            f"about the whole table ≤ {format_number(bits_total)} bits"
            if isinstance(bits_total, (int, float)) and math.isfinite(bits_total)
            else "about the whole table: not bounded ("
            + str(cost.get("information_unbounded") or "no public row bound declared")
            + ")"
        )
        lines.append(
            f"cost: ε {format_number(cost['epsilon'])}, δ {format_number(cost['delta'])}; {whole}"
        )
        bits = (cost.get("leakage") or {}).get("bits")
        if bits:
            shown = ", ".join(
                f"α = {a.replace('inf', '∞')}: "
                + ("unbounded" if v is None else f"≤ {format_number(v)} bits")
                for a, v in bits.items()
            )
            lines.append(f"per person: {shown}")
    if "remaining" in p:
        r = p["remaining"]
        lines.append(
            f"left: ε {format_number(r['remaining_epsilon'])}, "
            f"δ {format_number(r['remaining_delta'])}"
        )
    lines += [f"note: {note}" for note in p.get("notes", [])]
    console.print("\n".join(lines))


COMMANDS: list[click.Command] = [query]
