"""Publishing a synthetic table: measured, charged and recorded like one query.

:func:`release_synthetic` validates everything first (a refusal costs nothing), reserves the
release's (ε, δ) in the ledger durably, reads the declared columns once (at most
``max_rows_per_unit`` rows per unit, so one person moves every marginal by at most m), runs
:func:`infodp.synthetic.release.synthesize_codes` with the curator's random source, and records
the outcome in the ledger entry that paid for it; the rows are stored as a synopsis, so later SQL
over them is free (:class:`~infodp.synthetic.table.SyntheticTable`).

The release is ρ-zCDP for the largest ρ that converts to (ε, δ)
(:func:`infodp.synthetic.budget.rho_for`), hence (ε, δ)-DP. The entry's privacy profile is
``approximate-dp`` (ε, δ), or a Gaussian of Rényi curve αρ for an analyst whose accountant
counts in zcdp or rdp (:func:`_profile_spec`); its information cost is ρ nats per person (the
KL bound of ρ-zCDP, Bun & Steinke 2016).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Protocol, TypedDict, cast

from infodp._engines import engine
from infodp._exact import float_down, float_up
from infodp.curator.price.cost import as_budget_fraction
from infodp.errors import ParameterError, QueryFailed

if TYPE_CHECKING:
    import duckdb
    import pandas as pd  # type: ignore[import-untyped]

    from infodp._jsonable import JsonObject
    from infodp.curator.declaration.schema import DatasetSchema
    from infodp.curator.ledger import Ledger
    from infodp.curator.store.connections import Connections
    from infodp.mechanisms.sampling import RandomSource
    from infodp.synthetic.domain import Domain
    from infodp.synthetic.measure import Clique
    from infodp.synthetic.release import SyntheticData
    from infodp.synthetic.table import SyntheticTable

__all__ = ["load_synthetic", "release_synthetic", "synthetic_sql"]


class Curator(Protocol):
    """What a synthetic release asks of the curator (:class:`infodp.curator.engine.Curator`,
    which calls this module: named as a protocol so the imports stay one-way)."""

    @property
    def ledger(self) -> Ledger: ...

    @property
    def _connections(self) -> Connections: ...

    @property
    def _source(self) -> RandomSource: ...

    def schema(self, dataset: str) -> DatasetSchema: ...

    def dataset_backend(self, dataset: str) -> str: ...


def synthetic_sql(schema: DatasetSchema, columns: Sequence[str]) -> str:
    """The statement that reads a release's columns (at most m rows of each unit).

    >>> from infodp.curator.declaration.source import load_schema
    >>> s = load_schema({"table": "t", "privacy_unit": "pid", "max_rows_per_unit": 2,
    ...     "columns": {"pid": {"type": "int"}, "x": {"type": "int", "bounds": [0, 9]}}})
    >>> synthetic_sql(s, ["x"]).split(" WHERE ")[1]
    '"pid" IS NOT NULL QUALIFY row_number() OVER (PARTITION BY "pid") <= 2'
    """
    listed = ", ".join(f'"{c}"' for c in columns)
    sql = f'SELECT {listed} FROM "{schema.table}"'
    if not schema.unit_is_row:
        unit = f'"{schema.privacy_unit}"'
        sql += (
            f" WHERE {unit} IS NOT NULL QUALIFY row_number() OVER (PARTITION BY {unit}) "
            f"<= {schema.max_rows_per_unit}"
        )
    return sql


class SyntheticOptions(TypedDict, total=False):
    """The options of :func:`release_synthetic` a caller may pass on (all optional)."""

    table: str | None
    columns: Sequence[str] | None
    method: str
    workload: object
    bins: int
    rows: int | None


def release_synthetic(
    curator: Curator,
    analyst: str,
    name: str,
    dataset: str,
    *,
    epsilon: object,
    delta: object,
    table: str | None = None,
    columns: Sequence[str] | None = None,
    method: str = "aim",
    workload: object = None,
    bins: int = 32,
    rows: int | None = None,
) -> SyntheticTable:
    """Release a synthetic table of ``dataset`` once (see :meth:`Curator.release_synthetic`);
    for a population, of its private ``table``."""
    from infodp.synthetic.budget import rho_for
    from infodp.synthetic.domain import Domain
    from infodp.synthetic.release import check_options, default_columns, parse_workload

    if not isinstance(name, str) or not name.isidentifier():
        raise ParameterError("name", name, "an identifier (letters, digits, _)")
    schema = curator.schema(dataset)
    source = _source_table(schema, table)
    if not engine(curator.dataset_backend(schema.table)).in_store:
        raise ParameterError(
            "dataset", dataset, "a dataset stored in DuckDB (synthetic data is not read on Spark)"
        )
    if name in {s["name"] for s in curator.ledger.synopses() if s["dataset"] == schema.table}:
        raise ParameterError("name", name, f"a synopsis name not used yet on {schema.table}")
    eps = as_budget_fraction("epsilon", epsilon)
    dlt = as_budget_fraction("delta", delta)
    if dlt >= 1:
        raise ParameterError("delta", delta, "0 < δ < 1")
    check_options(method, rows)
    cols = list(columns) if columns is not None else default_columns(source)
    domain = Domain.of(source, cols, bins)
    work = parse_workload(domain, workload)
    # Rounded down: a larger ε or δ would allow a larger ρ than the charge covers.
    rho = rho_for(float_down(eps), float_down(dlt))
    m = 1 if source.unit_is_row else source.max_rows_per_unit
    sql = synthetic_sql(source, domain.names)
    record = curator.ledger.dataset(schema.table)
    spec = _profile_spec(curator, analyst, schema.table, eps, dlt, rho)
    entry = curator.ledger.reserve(
        analyst,
        schema.table,
        f"-- synthetic table {name} ({method}): {sql}",
        eps,
        dlt,
        float_up(rho),
        profile_spec=spec,
        durable=True,
        declaration=(record.schema_json, record.unit_rows_ok),
    )
    try:
        frame = _read(curator, sql)
        out = _synthesize(curator, frame, domain, eps, dlt, method, work, rows, m)
        member = None if source is schema else schema.member(str(table)).table
        released = _stored(name, schema.table, entry, out, member)
        curator.ledger.save_synopsis(
            name, schema.table, analyst, entry, released.spec, {"columns": released.to_data()}
        )
    except BaseException as err:
        # After the reservation a failure may depend on the data: one constant error, the
        # charge stays, the cause goes to the ledger only (as a query's).
        curator.ledger.fail(entry, f"{type(err).__name__}: {err}"[:500])
        raise QueryFailed() if isinstance(err, Exception) else err from None
    curator.ledger.complete(entry, _payload(released))
    return released


def _source_table(schema: DatasetSchema, table: str | None) -> DatasetSchema:
    """The one table a release reads: the dataset itself, or the population's private member
    ``table``, named as it is stored (:func:`~infodp.curator.declaration.schema.stored_name`). One
    unit
    moves it by at most that table's ``max_rows_per_unit`` rows (the read keeps no more), so
    the release's sensitivity is the member's, whatever the other tables hold."""
    from dataclasses import replace

    from infodp.curator.declaration.schema import stored_name

    private = [m.table for m in schema.members if not m.public]
    if not schema.is_population:
        if table is not None and table.lower() != schema.table.lower():
            raise ParameterError(
                "table", table, f"the dataset's own table {schema.table!r} or none"
            )
        return schema
    if table is None:
        raise ParameterError(
            "table",
            None,
            "one of the population's private tables: " + ", ".join(private),
        )
    member = schema.member(table)
    if member.public:
        raise ParameterError(
            "table",
            table,
            "a private table (a public table is released as it is): " + ", ".join(private),
        )
    return replace(member, table=stored_name(schema.table, member.table))


def _profile_spec(
    curator: Curator, analyst: str, dataset: str, eps: Fraction, dlt: Fraction, rho: Fraction
) -> JsonObject:
    """The privacy profile the analyst's accountant spends: ``approximate-dp`` (ε, δ) — the
    tight consequence of (ε, δ) alone (Kairouz, Oh & Viswanath 2015) — or, for an accountant
    in zcdp or rdp (which read only Rényi divergences), a Gaussian whose Rényi curve is αρ'
    for a ρ' ≥ ρ (σ rounded down): every ρ-zCDP release has D_α ≤ αρ (Bun & Steinke 2016,
    Definition 1.1), so that charge is an upper bound."""
    from infodp.synthetic.budget import sqrt_down

    currency = curator.ledger.budget(analyst, dataset).currency
    if currency in ("zcdp", "rdp"):
        return {"mechanism": "gaussian", "sigma": float(sqrt_down(1 / (2 * rho)))}
    return {"mechanism": "approximate-dp", "epsilon": float_up(eps), "delta": float_up(dlt)}


def _read(curator: Curator, sql: str) -> pd.DataFrame:
    """The release's columns, read once from the store (DuckDB)."""
    # Synthetic releases read DuckDB stores only (a Spark dataset is refused before this).
    con = cast("duckdb.DuckDBPyConnection", curator._connections.open())
    try:
        return con.execute(sql).fetch_df()
    finally:
        curator._connections.done(con)


def _synthesize(
    curator: Curator,
    frame: pd.DataFrame,
    domain: Domain,
    eps: Fraction,
    dlt: Fraction,
    method: str,
    work: tuple[Clique, ...],
    rows: int | None,
    m: int,
) -> SyntheticData:
    from infodp.synthetic.release import synthesize_codes

    return synthesize_codes(
        domain.encode(frame),
        domain,
        epsilon=float_down(eps),
        delta=float_down(dlt),
        method=method,
        workload=work,
        rows=rows,
        source=curator._source,
        sensitivity=m,
    )


def _stored(
    name: str, dataset: str, entry: int, out: SyntheticData, member: str | None
) -> SyntheticTable:
    from infodp.synthetic.table import SyntheticTable

    spec: dict[str, object] = {
        "kind": "synthetic",
        "dataset": dataset,
        # A population's table: SQL over the rows reads them under its name too.
        "table": member,
        "entry": entry,
        "method": out.method,
        "columns": list(out.domain.names),
        "dtypes": {c: str(t) for c, t in out.frame.dtypes.items()},
        "workload": [list(c) for c in out.workload],
        "measurements": [m.to_dict() for m in out.fit.measurements],
        "explanation": out.explanation(),
        "fidelity": out.fidelity,
    }
    return SyntheticTable(name, dataset, out.frame, json.loads(json.dumps(spec)))


def _payload(table: SyntheticTable) -> JsonObject:
    """What the ledger entry records: the release's shape and cost (the rows are stored with
    the synopsis)."""
    e = table.explanation
    return {
        "synthetic": table.name,
        "columns": list(table.frame.columns),
        "rows": len(table.frame),
        "method": table.spec["method"],
        "cost": {
            "epsilon": e["epsilon"],
            "delta": e["delta"],
            "rho": e["rho"],
            "bits_per_person": e["bits_per_person"],
        },
    }


def load_synthetic(curator: Curator, name: str, dataset: str | None = None) -> SyntheticTable:
    """A stored synthetic table (of ``dataset`` when given)."""
    from infodp.synthetic.table import SyntheticTable

    _, _, spec, data = curator.ledger.synopsis(name, dataset)
    if spec.get("kind") != "synthetic":
        raise ParameterError(f"synopsis {name!r} is a histogram, not a synthetic table.")
    return SyntheticTable.from_stored(name, spec, data)
