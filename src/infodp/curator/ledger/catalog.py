"""The ledger's catalogue: the registered datasets and their budget groups.

The dataset and budget-group half of the :class:`~infodp.curator.ledger.facade.Ledger`
façade (the ledger inherits it), over the same :class:`~.storage.Database`: registration
(:mod:`.grants`), the unit sketches and groups (:mod:`.groups`) and the dataset records
(:mod:`.records`). Nothing here is ever shown to an analyst but the dataset records.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from infodp.curator.ledger import groups
from infodp.curator.ledger.records import DATASET_COLUMNS, DatasetRecord, to_dataset
from infodp.curator.ledger.storage import Database
from infodp.errors import InternalError, ParameterError

if TYPE_CHECKING:
    from infodp.curator.ledger.grants import DatasetRow, Joined, Sharing

__all__ = ["Catalog"]


class Catalog:
    """Datasets and budget groups of one ledger file (a base of the ledger façade)."""

    db: Database
    store_id: str

    # -- datasets ------------------------------------------------------------------------------

    def register_dataset(
        self,
        name: str,
        schema_json: str,
        *,
        rows: int,
        source: str,
        info_cap_bits: float | None = None,
        unit_rows_ok: bool = False,
        max_epsilon: Fraction | None = None,
        max_delta: Fraction | None = None,
        fingerprint: str | None = None,
        sharing: Sharing | None = None,
    ) -> Joined | None:
        """Record a dataset's metadata (refuses a name already registered, or content
        identical to a registered dataset: same ``fingerprint`` of the bounded table).

        ``max_epsilon``/``max_delta`` cap what all analysts together may spend on it; the
        caps are sealed (:mod:`.integrity`). ``sharing``: the owner's declaration of its
        budget group (:mod:`.groups`) and its unit sketch, recorded in the same
        transaction; returns the group joined (None: its own). A likely copy of a
        registered dataset without a declaration is refused
        (:class:`~.grants.LikelyCopy`).
        """
        row: DatasetRow = {
            "name": name,
            "schema_json": schema_json,
            "rows": int(rows),
            "source": source,
            "info_cap_bits": info_cap_bits,
            "unit_rows_ok": int(unit_rows_ok),
            "max_epsilon": None if max_epsilon is None else str(max_epsilon),
            "max_delta": None if max_delta is None else str(max_delta),
            "fingerprint": fingerprint,
        }
        from infodp.curator.ledger import grants  # owner side: a query process never registers

        return grants.register_dataset(self.db, self.store_id, row, sharing)

    # -- budget groups (owner side; nothing here is ever shown to an analyst) ------------------

    def unit_salt(self) -> str:
        """The secret salt of the unit sketches (made on first use; never shown)."""
        with self.db.transaction() as conn:
            return groups.unit_salt(conn)

    def unsketched(self) -> list[DatasetRecord]:
        """The datasets with no unit sketch yet (registered before sketches were kept)."""
        with self.db.read() as conn:
            rows = conn.execute(
                f"SELECT {DATASET_COLUMNS} FROM datasets WHERE name NOT IN "
                "(SELECT dataset FROM unit_sketches) ORDER BY name"
            ).fetchall()
        return [to_dataset(r) for r in rows]

    def save_unit_sketch(self, dataset: str, sketch: bytes) -> None:
        """Keep ``dataset``'s unit sketch (:mod:`infodp.curator.store.unit_overlap`)."""
        with self.db.transaction() as conn:
            groups.save_sketch(conn, dataset, sketch)

    def group_members(self, dataset: str) -> list[str]:
        """The datasets sharing ``dataset``'s caps and budgets (itself included)."""
        with self.db.read() as conn:
            return groups.members(conn, groups.root_of(conn, dataset))

    def dataset(self, name: str) -> DatasetRecord:
        """The registered dataset ``name``."""
        with self.db.read() as conn:
            row = conn.execute(
                f"SELECT {DATASET_COLUMNS} FROM datasets WHERE lower(name) = lower(?)", (name,)
            ).fetchone()
            if row is None:
                known = [r[0] for r in conn.execute("SELECT name FROM datasets ORDER BY name")]
                raise ParameterError(
                    f"unknown dataset {name!r}; registered: {', '.join(known) or 'none'}."
                )
        return to_dataset(row)

    def dataset_declaration(self, name: str) -> tuple[str, str, bool]:
        """(name, schema JSON, unit_rows_ok) of a registered dataset: what pricing a query
        needs, without the spend totals :meth:`dataset` also reads and parses."""
        with self.db.read() as conn:
            row = conn.execute(
                "SELECT name, schema_json, unit_rows_ok FROM datasets WHERE lower(name) = lower(?)",
                (name,),
            ).fetchone()
        if row is None:
            self.dataset(name)  # raises the error listing the registered datasets
            raise InternalError(f"dataset {name!r} vanished while being read")
        return str(row["name"]), str(row["schema_json"]), bool(row["unit_rows_ok"])

    def datasets(self) -> list[DatasetRecord]:
        """Every registered dataset."""
        with self.db.read() as conn:
            rows = conn.execute(f"SELECT {DATASET_COLUMNS} FROM datasets ORDER BY name").fetchall()
        return [to_dataset(r) for r in rows]
