"""Distortion measures d(x, y) between a person's value and the released value.

The privacy–distortion problem (Wang, Ying & Zhang 2016, "On the relation between
identifiability, differential privacy and mutual-information privacy", IEEE Trans. IT 62(9);
Ünsal & Önen 2023, §5, Eqs. (53)–(56)) constrains the expected distortion E d(X, Y) ≤ D of the
channel P(Y|X). A distortion is an ``n × m`` matrix of non-negative numbers, row ``x`` for the
true value and column ``y`` for the reported one. The named measures take one numeric alphabet for
both sides: Hamming ``[x ≠ y]``, absolute ``|x − y|`` and squared ``(x − y)²``.

>>> distortion_matrix("hamming", 3).tolist()
[[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]]
>>> distortion_matrix("squared", [0, 1, 3])[0].tolist()
[0.0, 1.0, 9.0]
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp._validate import as_positive_int
from infodp.errors import ParameterError

__all__ = ["DISTORTIONS", "as_distortion", "distortion_matrix", "read_distortion_csv"]

FloatArray = npt.NDArray[np.float64]

#: The named distortion measures.
DISTORTIONS: tuple[str, ...] = ("hamming", "absolute", "squared")


def _alphabet(alphabet: int | Sequence[float]) -> FloatArray:
    if isinstance(alphabet, (int, np.integer)) and not isinstance(alphabet, bool):
        return np.arange(as_positive_int("alphabet", alphabet, minimum=2), dtype=np.float64)
    try:
        values = np.asarray(alphabet, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("alphabet", alphabet, "a size >= 2 or a list of numbers") from None
    if values.ndim != 1 or values.size < 2 or not np.isfinite(values).all():
        raise ParameterError("alphabet", alphabet, "at least two finite numbers")
    if np.unique(values).size != values.size:
        raise ParameterError("alphabet", alphabet, "distinct values")
    return values


def distortion_matrix(kind: str, alphabet: int | Sequence[float]) -> FloatArray:
    """The ``k × k`` matrix of a named measure on ``alphabet`` (a size k, or k numbers).

    >>> distortion_matrix("absolute", 3)[0].tolist()
    [0.0, 1.0, 2.0]
    >>> distortion_matrix("cosine", 3)
    Traceback (most recent call last):
        ...
    infodp.errors.ParameterError: distortion must be one of 'hamming', 'absolute', 'squared' (or a matrix); got 'cosine'.
    """  # noqa: E501
    if kind not in DISTORTIONS:
        raise ParameterError(
            "distortion", kind, "one of 'hamming', 'absolute', 'squared' (or a matrix)"
        )
    a = _alphabet(alphabet)
    diff = a[:, None] - a[None, :]
    if kind == "hamming":
        return np.asarray(diff != 0, dtype=np.float64)
    if kind == "absolute":
        return np.abs(diff)
    return np.square(diff)


def as_distortion(value: Any, n_inputs: int) -> FloatArray:
    """A validated distortion matrix with ``n_inputs`` rows: a named measure or a matrix.

    >>> as_distortion("hamming", 2).tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    >>> as_distortion([[0, 1], [-1, 0]], 2)
    Traceback (most recent call last):
        ...
    infodp.errors.ParameterError: distortion must be a matrix of finite non-negative numbers; got 'a negative entry'.
    """  # noqa: E501
    if isinstance(value, str):
        return distortion_matrix(value, n_inputs)
    try:
        d = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("distortion", "<non-numeric>", "a named measure or a matrix") from None
    if d.ndim != 2 or d.shape[0] != n_inputs or d.shape[1] < 1:
        raise ParameterError(
            "distortion", f"array of shape {d.shape}", f"a matrix with {n_inputs} rows"
        )
    if not np.isfinite(d).all():
        raise ParameterError("distortion", "a NaN or inf entry", "a matrix of finite numbers")
    if (d < 0).any():
        raise ParameterError(
            "distortion", "a negative entry", "a matrix of finite non-negative numbers"
        )
    return d


def read_distortion_csv(path: str | Path) -> FloatArray:
    """Read a distortion matrix from a CSV file: one row per true value, no header.

    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = pathlib.Path(tmp) / "d.csv"
    ...     _ = p.write_text("0,1\\n2,0\\n")
    ...     read_distortion_csv(p).tolist()
    [[0.0, 1.0], [2.0, 0.0]]
    """
    target = Path(path)
    try:
        with target.open(newline="", encoding="utf-8") as handle:
            rows = [row for row in csv.reader(handle) if any(cell.strip() for cell in row)]
    except OSError:
        raise ParameterError("distortion file", str(target), "a readable CSV file") from None
    try:
        d = np.array([[float(cell) for cell in row] for row in rows], dtype=np.float64)
    except ValueError:
        raise ParameterError(
            "distortion file", str(target), "a CSV of numbers (one row per true value)"
        ) from None
    if d.ndim != 2 or d.size == 0:
        raise ParameterError(
            "distortion file", str(target), "a rectangular CSV of numbers (rows of equal length)"
        )
    return as_distortion(d, d.shape[0])
