"""``infodp synth``: release a DP synthetic table once (AIM or MST); SQL over it is then free
with ``infodp query --synopsis NAME``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from infodp.cli._common import emit, json_option
from infodp.cli.query import _curator, db_option
from infodp.errors import ParameterError

__all__ = ["synth"]


@click.command()
@db_option
@click.option("--analyst", "analyst_name", required=True, help="Who pays for the release.")
@click.option("--dataset", "dataset_name", required=True, help="The dataset to release from.")
@click.option(
    "--table",
    "table_name",
    default=None,
    help="For a population: which of its private tables to release.",
)
@click.option("--name", required=True, help="Name of the synthetic table (for query --synopsis).")
@click.option("--epsilon", required=True, help="ε the whole release costs (once).")
@click.option("--delta", required=True, help="δ the whole release costs (0 < δ < 1).")
@click.option(
    "--method",
    type=click.Choice(["aim", "mst"]),
    default="aim",
    show_default=True,
    help="AIM (adaptive, default) or MST (a spanning tree of pairs).",
)
@click.option("--columns", default=None, help="Comma-separated declared columns (default: all).")
@click.option("--bins", default=32, show_default=True, help="Most codes per numeric column.")
@click.option("--rows", type=int, default=None, help="Synthetic rows (default: the noisy count).")
@click.option(
    "--out",
    default=None,
    type=click.Path(dir_okay=False),
    help="Also write the rows to this .csv or .parquet file.",
)
@json_option
def synth(
    db: str,
    analyst_name: str,
    dataset_name: str,
    table_name: str | None,
    name: str,
    epsilon: str,
    delta: str,
    method: str,
    columns: str | None,
    bins: int,
    rows: int | None,
    out: str | None,
    as_json: bool,
) -> None:
    """Release a DP synthetic table once; query it later for free (--synopsis)."""
    if out is not None and Path(out).suffix.lower() not in (".csv", ".parquet"):
        raise ParameterError("--out", out, "a path ending in .csv or .parquet")
    cur = _curator(db)
    cols = None if columns is None else [c.strip() for c in columns.split(",") if c.strip()]
    table = cur.release_synthetic(
        analyst_name,
        name,
        dataset_name,
        epsilon=epsilon,
        delta=delta,
        table=table_name,
        method=method,
        columns=cols,
        bins=bins,
        rows=rows,
    )
    if out is not None:
        (table.to_csv if out.lower().endswith(".csv") else table.to_parquet)(out)
    e = table.explanation
    payload: dict[str, Any] = {
        "synthetic": name,
        "dataset": table.dataset,
        "method": method,
        "columns": list(table.frame.columns),
        "rows": len(table.frame),
        "explanation": e,
        "fidelity": {k: v for k, v in table.fidelity.items() if k.startswith("mean")},
        "written": out,
        "remaining": cur.ledger.budget(analyst_name, table.dataset).to_dict(),
    }
    emit(
        payload,
        as_json,
        lambda p: click.echo(
            f"released synthetic table {p['synthetic']} ({p['method']}, {p['rows']} rows over "
            f"{', '.join(p['columns'])}); {p['explanation']['summary']}; query it with: "
            f"infodp query --synopsis {p['synthetic']} ..."
        ),
    )
