"""A released synthetic table: stored with the ledger entry that paid for it, answered from
for free, exported as a DataFrame, CSV or Parquet.

Every answer is computed on the synthetic rows only (post-processing, Dwork & Roth 2014,
Prop. 2.1): SQL runs in a private in-memory DuckDB over the rows, named like the dataset's
table, and says that it cost nothing.

>>> import pandas as pd
>>> t = SyntheticTable("s", "people", pd.DataFrame({"g": ["a", "b", "a"]}), {"method": "aim"})
>>> r = t.answer("SELECT g, COUNT(*) AS n FROM people GROUP BY g ORDER BY g")
>>> r["rows"], r["cost"]["epsilon"]
([['a', 2], ['b', 1]], 0.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd  # type: ignore[import-untyped]

from infodp.errors import ParameterError

__all__ = ["MAX_ANSWER_ROWS", "SyntheticTable"]

#: Most rows one free answer returns.
MAX_ANSWER_ROWS = 10_000


def _cell(v: object) -> object:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    if hasattr(v, "item"):
        return v.item()
    return v


@dataclass(frozen=True)
class SyntheticTable:
    """A synthetic table ``name`` of ``dataset``: its rows and its release's metadata."""

    name: str
    dataset: str
    frame: pd.DataFrame
    spec: dict[str, Any] = field(default_factory=dict)

    @property
    def fidelity(self) -> dict[str, Any]:
        """The fidelity report stored with the release (released values only)."""
        return dict(self.spec.get("fidelity", {}))

    @property
    def explanation(self) -> dict[str, Any]:
        """The release's cost per person (ε, δ, ρ, bits), as stored."""
        return dict(self.spec.get("explanation", {}))

    def to_frame(self) -> pd.DataFrame:
        """A copy of the rows as a pandas DataFrame."""
        return self.frame.copy()

    def to_csv(self, path: str | Path) -> Path:
        """Write the rows as CSV (header line, NULL as an empty field)."""
        out = Path(path)
        self.frame.to_csv(out, index=False)
        return out

    def to_parquet(self, path: str | Path) -> Path:
        """Write the rows as Parquet (by DuckDB: no extra dependency)."""
        out = Path(path)
        con = duckdb.connect(":memory:")
        try:
            con.register("synthetic_rows", self.frame)
            target = str(out).replace("'", "''")
            con.execute(f"COPY synthetic_rows TO '{target}' (FORMAT PARQUET)")
        finally:
            con.close()
        return out

    def to_data(self) -> dict[str, Any]:
        """The rows as JSON-ready columns (what the ledger stores)."""
        return {c: [_cell(v) for v in self.frame[c].tolist()] for c in self.frame.columns}

    @classmethod
    def from_stored(cls, name: str, spec: dict[str, Any], data: dict[str, Any]) -> SyntheticTable:
        """Rebuild from the ledger's stored spec and rows."""
        dtypes = spec.get("dtypes", {})
        frame = pd.DataFrame(
            {c: pd.array(v, dtype=dtypes.get(c)) for c, v in data["columns"].items()}
        )
        return cls(name, str(spec["dataset"]), frame, spec)

    def answer(self, sql: str) -> dict[str, Any]:
        """Answer ``sql`` over the synthetic rows (the dataset's name reads them, and for a
        population's table that table's name too): no data access, no privacy cost."""
        if not isinstance(sql, str) or not sql.strip():
            raise ParameterError("sql", sql, "a SELECT over the synthetic table")
        con = duckdb.connect(":memory:", config={"threads": 1, "enable_external_access": False})
        try:
            con.register(self.dataset, self.frame)
            member = self.spec.get("table")
            if isinstance(member, str) and member.lower() != self.dataset.lower():
                con.register(member, self.frame)
            try:
                cursor = con.execute(sql)
                names = [d[0] for d in cursor.description or []]
                rows = cursor.fetchmany(MAX_ANSWER_ROWS + 1)
            except duckdb.Error as err:
                first = str(err).splitlines()[0][:300]
                raise ParameterError(
                    f"SQL over synthetic table {self.name} failed: {first}"
                ) from None
        finally:
            con.close()
        if len(rows) > MAX_ANSWER_ROWS:
            raise ParameterError(
                "sql", sql[:80], f"a query returning at most {MAX_ANSWER_ROWS} rows (add LIMIT)"
            )
        return {
            "columns": names,
            "rows": [[_cell(v) for v in row] for row in rows],
            "cost": {
                "epsilon": 0.0,
                "delta": 0.0,
                "information_nats": 0.0,
                "note": f"post-processing of synthetic table {self.name}: free",
            },
            "synthetic": self.name,
        }
