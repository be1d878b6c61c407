"""The dialect table: the few semantic choices in which the engines' SQL differs.

The compiler (:mod:`infodp.curator.backends.compile`) builds one sqlglot tree per statement
and asks the engine's :class:`SqlDialect` only where the *meaning* of the same text would
differ between engines; the rest (quoting, function spellings) is sqlglot's rendering.

- **division**: DuckDB divides in DOUBLE even between DECIMAL literals; Spark would divide
  exactly in DECIMAL (and put a value on a bin's edge in the other bin), so it casts both sides
  (a derived key's bins divide, :mod:`infodp.curator.backends.keys`; snapping multiplies
  by 1/g, a power of two);
- **integer widths**: a centred sum of squares can pass 2^63 (each term is below 2^42 on the
  grid, so 2^21 rows suffice); DuckDB sums BIGINT into HUGEINT by itself, Spark would sum into
  BIGINT (and fail or wrap), so it sums DECIMAL(38, 0);
- **isfinite**: DuckDB's ``isfinite`` (neither ±inf nor NaN); Spark has none, and NaN is above
  every value there, so ``abs(x) < 'Infinity'``;
- **a 64-bit hash**: DuckDB's ``hash``; Spark's ``hash`` is 32-bit (collisions would merge
  groups), so ``xxhash64``;
- **QUALIFY**: DuckDB filters on a window function directly; without it a filtered window
  becomes a subquery (sqlglot's ``eliminate_qualify``);
- **stored type of a bounded column**: DuckDB stores BIGINT; Spark's Parquet copy stores INT
  when every grid value fits in 32 bits (a scan reads half the bytes).

A third engine is one more entry here (its sqlglot dialect name and these choices), one in
the engine registry ``infodp._engines`` (the same names, a test checks) plus a
backend class with connect/register/check/aggregate, judged by ``tests/curator/backends/``.

>>> print(DUCKDB.isfinite(exp.column("x")).sql(normalize_functions=False))
isfinite(x)
>>> print(SPARK.isfinite(exp.column("x")).sql(dialect="spark"))
ABS(x) < CAST('Infinity' AS DOUBLE)
>>> print(SPARK.divide(exp.column("a"), exp.column("b")).sql(dialect="spark"))
CAST(a AS DOUBLE) / CAST(b AS DOUBLE)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlglot import exp

from infodp.curator.declaration.schema import ColumnSpec
from infodp.curator.plan.grid import column_grid

__all__ = ["DIALECTS", "DUCKDB", "SPARK", "SqlDialect"]


def _anonymous(name: str) -> Callable[[Sequence[exp.Expr]], exp.Expr]:
    def call(args: Sequence[exp.Expr]) -> exp.Expr:
        return exp.Anonymous(this=name, expressions=list(args))

    return call


def _as_is(e: exp.Expr) -> exp.Expr:
    return e


def _divide_in_double(a: exp.Expr, b: exp.Expr) -> exp.Expr:
    return exp.Div(this=a, expression=b)


def _divide_cast(a: exp.Expr, b: exp.Expr) -> exp.Expr:
    return exp.Div(this=exp.cast(a, "DOUBLE"), expression=exp.cast(b, "DOUBLE"))


def _decimal_38(e: exp.Expr) -> exp.Expr:
    return exp.cast(e, "DECIMAL(38, 0)")


def _isfinite_call(x: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this="isfinite", expressions=[x])


def _isfinite_abs(x: exp.Expr) -> exp.Expr:
    return exp.LT(
        this=exp.Abs(this=x), expression=exp.cast(exp.Literal.string("Infinity"), "DOUBLE")
    )


def _bigint(col: ColumnSpec) -> str:
    return "BIGINT"


def _int_when_it_fits(col: ColumnSpec) -> str:
    grid = column_grid(col)
    return "INT" if grid.lo >= -(2**31) and grid.hi < 2**31 else "BIGINT"


@dataclass(frozen=True, slots=True)
class SqlDialect:
    """One engine's entry (see the module docstring); ``render`` is sqlglot's dialect name
    (``""``: sqlglot's generic dialect, which writes DuckDB's SQL for every node the compiler
    uses and costs no dialect import at start-up)."""

    name: str
    render: str
    divide: Callable[[exp.Expr, exp.Expr], exp.Expr]
    wide_sum_operand: Callable[[exp.Expr], exp.Expr]
    isfinite: Callable[[exp.Expr], exp.Expr]
    hash64: Callable[[Sequence[exp.Expr]], exp.Expr]
    qualify: bool
    stored_type: Callable[[ColumnSpec], str]


DUCKDB = SqlDialect(
    name="duckdb",
    render="",
    divide=_divide_in_double,
    wide_sum_operand=_as_is,
    isfinite=_isfinite_call,
    hash64=_anonymous("hash"),
    qualify=True,
    stored_type=_bigint,
)

SPARK = SqlDialect(
    name="spark",
    render="spark",
    divide=_divide_cast,
    wide_sum_operand=_decimal_38,
    isfinite=_isfinite_abs,
    hash64=_anonymous("XXHASH64"),
    qualify=False,
    stored_type=_int_when_it_fits,
)

#: Every engine's entry by name.
DIALECTS: dict[str, SqlDialect] = {d.name: d for d in (DUCKDB, SPARK)}
