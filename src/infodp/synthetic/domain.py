"""A table's declared schema as a finite domain: every column becomes a small set of codes.

Only declared, public facts shape the domain (never the data):

* a ``category`` column has one code per declared category;
* a ``bool`` column has the two codes ``false`` and ``true``;
* a bounded ``int`` or ``float`` column is snapped to the curator's release grid
  (:func:`infodp.curator.plan.grid.column_grid`: clamp to the declared bounds, divide by a
  power-of-two
  step, round), and the grid points ``lo … hi`` are cut into at most ``bins`` runs of equal
  width (the last may be shorter): an int column with few values keeps one code per value.

A row holding NULL (a column declared ``nulls: drop``) or a category outside the declaration
in a released column is left out, as the curator's queries leave it out of a declared GROUP BY:
a filter applied row by row, so one unit still adds or removes at most its own rows (the
sensitivity is unchanged), and no undeclared value is ever published.

>>> from infodp.curator.declaration.source import load_schema
>>> s = load_schema({"table": "t", "privacy_unit": "row", "columns": {
...     "age": {"type": "int", "bounds": [0, 99]},
...     "region": {"type": "category", "categories": ["n", "s"]}}})
>>> d = Domain.of(s, ["age", "region"], bins=10)
>>> d.sizes, d.attributes[0].labels[:2]
((10, 2), ('0-9', '10-19'))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd  # type: ignore[import-untyped]

from infodp.curator.declaration.schema import ColumnSpec, DatasetSchema
from infodp.curator.plan.grid import column_grid
from infodp.errors import ParameterError

__all__ = ["MAX_BINS", "Attribute", "Domain"]

#: Most codes a numeric column may be cut into (the declared ``bins``).
MAX_BINS = 256

Codes = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Attribute:
    """One column as codes ``0 … size − 1`` (−1 marks a NULL or an undeclared value).

    ``kind`` is ``category``, ``bool`` or ``numeric``; a numeric attribute's code c < size − 1
    covers the grid points ``lo + c·width … lo + (c + 1)·width − 1`` (times ``step``).
    """

    name: str
    kind: str
    labels: tuple[str, ...]
    step: float = 1.0
    lo: int = 0
    hi: int = 0
    width: int = 1
    integer: bool = True

    @property
    def size(self) -> int:
        """Number of codes."""
        return len(self.labels)

    @classmethod
    def of(cls, col: ColumnSpec, bins: int) -> Attribute:
        """The attribute of a declared column (categories, bool, or bounded numbers)."""
        if col.type == "category" and col.categories is not None:
            return cls(col.name, "category", tuple(col.categories))
        if col.type == "bool":
            return cls(col.name, "bool", ("false", "true"))
        if col.is_numeric and col.bounds is not None:
            g = column_grid(col)
            points = g.hi - g.lo + 1
            width = max(1, math.ceil(points / bins))
            count = math.ceil(points / width)
            labels = tuple(
                _label(g.lo + c * width, min(g.hi, g.lo + (c + 1) * width - 1), g.step)
                for c in range(count)
            )
            return cls(col.name, "numeric", labels, g.step, g.lo, g.hi, width, col.is_integer)
        raise ParameterError(
            f"synthetic data column {col.name!r} needs declared categories or bounds "
            f"(it is declared as {col.type} without them)."
        )

    def encode(self, values: pd.Series) -> Codes:
        """Codes of raw column values (NULL and undeclared values: −1)."""
        null = -1
        if self.kind == "category":
            index = {v: i for i, v in enumerate(self.labels)}
            mapped = values.map(lambda v: index.get(str(v), null) if pd.notna(v) else null)
            return np.asarray(mapped, dtype=np.int64)
        x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        finite = np.isfinite(x)
        if self.kind == "bool":
            return np.where(finite, (x != 0).astype(np.int64), null)
        low, high = self.lo * self.step, self.hi * self.step
        snapped = np.clip(np.where(finite, x, low), low, high) / self.step
        # DuckDB's round() rounds half away from zero (infodp.curator.plan.grid); mirror it.
        units = (np.sign(snapped) * np.floor(np.abs(snapped) + 0.5)).astype(np.int64)
        codes = (np.clip(units, self.lo, self.hi) - self.lo) // self.width
        return np.where(finite, codes, null)

    def decode(self, codes: Codes, rng: np.random.Generator) -> list[object]:
        """Values for codes: the label (categories, bools) or a grid point drawn uniformly
        within the bin (numbers)."""
        if self.kind == "category":
            return [self.labels[c] for c in codes.tolist()]
        if self.kind == "bool":
            return [bool(c) for c in codes.tolist()]
        first = self.lo + codes * self.width
        last = np.minimum(first + self.width - 1, self.hi)
        units = first + np.floor(rng.random(codes.size) * (last - first + 1)).astype(np.int64)
        values = units * self.step
        return [int(v) if self.integer else float(v) for v in values.tolist()]


def _label(first: int, last: int, step: float) -> str:
    a, b = _text(first * step, step), _text(last * step, step)
    return a if first == last else f"{a}-{b}"


def _text(value: float, step: float) -> str:
    return str(int(value)) if step == 1.0 else f"{value:.4g}"


@dataclass(frozen=True, slots=True)
class Domain:
    """The attributes of a table's chosen columns, in order."""

    attributes: tuple[Attribute, ...]

    @classmethod
    def of(cls, schema: DatasetSchema, columns: Sequence[str], bins: int = 32) -> Domain:
        """The domain of ``columns`` of ``schema`` (numbers cut into at most ``bins`` codes)."""
        if isinstance(bins, bool) or not isinstance(bins, int) or not 2 <= bins <= MAX_BINS:
            raise ParameterError("bins", bins, f"an integer from 2 to {MAX_BINS}")
        names = [schema.column(c).name for c in columns]
        if len(names) < 1 or len({n.lower() for n in names}) != len(names):
            raise ParameterError("columns", list(columns), "one or more distinct column names")
        return cls(tuple(Attribute.of(schema.column(n), bins) for n in names))

    @property
    def names(self) -> tuple[str, ...]:
        """Column names, in order."""
        return tuple(a.name for a in self.attributes)

    @property
    def sizes(self) -> tuple[int, ...]:
        """Number of codes of each attribute."""
        return tuple(a.size for a in self.attributes)

    def cells(self, clique: Sequence[int]) -> int:
        """Number of cells of the marginal on the attributes ``clique``."""
        return math.prod(self.sizes[i] for i in clique)

    def encode(self, frame: pd.DataFrame) -> Codes:
        """The table as an (n, d) matrix of codes (columns of ``frame`` by name), without the
        rows holding a NULL or an undeclared value."""
        if not self.attributes:
            return np.zeros((len(frame), 0), dtype=np.int64)
        codes = np.column_stack([a.encode(frame[a.name]) for a in self.attributes])
        return np.asarray(codes[(codes >= 0).all(axis=1)], dtype=np.int64)

    def decode(self, codes: Codes, rng: np.random.Generator) -> pd.DataFrame:
        """A table of values from an (n, d) matrix of codes (nullable pandas dtypes)."""
        return pd.DataFrame(
            {
                a.name: pd.array(a.decode(codes[:, i], rng), dtype=_DTYPES[(a.kind, a.integer)])
                for i, a in enumerate(self.attributes)
            }
        )


#: Pandas dtypes of decoded columns (nullable, as a query's answer), by (kind, integer).
_DTYPES = {
    ("category", True): "string",
    ("bool", True): "boolean",
    ("numeric", True): "Int64",
    ("numeric", False): "Float64",
}
