"""The service's request bodies (pydantic models; their JSON schemas are in the OpenAPI document).

>>> QueryRequest(sql="SELECT COUNT(*) FROM people", epsilon=0.5).confidence
0.95
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
)

__all__ = ["QueryRequest", "SynopsisQueryRequest", "SynopsisRequest", "SyntheticRequest"]

_MAX_SQL = 20_000


def _no_spaces(value: Any) -> Any:
    # A decimal string is the number's text alone: " 0.1 " is not a number (the parser would
    # strip it, so a string with spaces is refused here).
    if isinstance(value, str) and value != "".join(value.split()):
        raise ValueError("a number must be a JSON number or a decimal string without spaces")
    return value


# A number in a request body: JSON numbers and decimal strings only (true/false are not
# numbers, nor strings with spaces); the text is parsed by infodp._exact.parse_exact with
# bounded length and exponent.
_Number = Annotated[StrictInt | StrictFloat | StrictStr, BeforeValidator(_no_spaces)]


class QueryRequest(BaseModel):
    """A query and the privacy it may spend (ε, δ as numbers or exact decimal strings).

    >>> QueryRequest(sql="SELECT COUNT(*) FROM people", epsilon="0.1").delta
    0
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"sql": "SELECT region, COUNT(*) FROM people GROUP BY region", "epsilon": 0.1},
                {"sql": "SELECT AVG(age) FROM people WHERE region = 'north'", "epsilon": "0.05"},
            ]
        },
    )

    sql: str = Field(min_length=1, max_length=_MAX_SQL)
    epsilon: _Number = Field(description="ε this query spends (> 0).")
    delta: _Number = Field(
        0, description="δ (DP partition selection, or Gaussian noise: it is (ε, δ)-DP)."
    )
    confidence: StrictFloat | StrictInt = Field(
        0.95, description="Level of the confidence intervals, in (0, 1)."
    )
    noise: Literal["laplace", "gaussian"] = Field(
        "laplace", description="Noise for counts and sums: discrete Laplace or Gaussian."
    )


class SynopsisQueryRequest(BaseModel):
    """A query answered from a released synopsis (free).

    >>> SynopsisQueryRequest(sql="SELECT COUNT(*) FROM people").confidence
    0.95
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"sql": "SELECT COUNT(*) FROM people GROUP BY region"}]},
    )

    sql: str = Field(min_length=1, max_length=_MAX_SQL)
    confidence: StrictFloat | StrictInt = 0.95


class SynopsisRequest(BaseModel):
    """Release a noisy histogram over ``columns`` of ``dataset`` once (costs ``epsilon``).

    >>> SynopsisRequest(name="r", dataset="people", columns=["region"], epsilon=0.5).columns
    ['region']
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"name": "regions", "dataset": "people", "columns": ["region"], "epsilon": 0.5}
            ]
        },
    )

    name: str = Field(min_length=1, max_length=200)
    dataset: str = Field(min_length=1, max_length=200)
    columns: list[Annotated[str, Field(max_length=200)]] = Field(min_length=1, max_length=32)
    epsilon: _Number


#: A workload marginal: 1 to 3 column names.
_Clique = Annotated[list[Annotated[str, Field(max_length=200)]], Field(min_length=1, max_length=3)]


class SyntheticRequest(BaseModel):
    """Release a synthetic table of ``dataset`` once (costs ``epsilon`` and ``delta``).

    >>> SyntheticRequest(name="fake", dataset="people", epsilon=1, delta=1e-6).method
    'aim'
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"name": "fake", "dataset": "people", "epsilon": 1, "delta": 1e-6}]
        },
    )

    name: str = Field(min_length=1, max_length=200)
    dataset: str = Field(min_length=1, max_length=200)
    table: str | None = Field(
        None, min_length=1, max_length=200, description="A population's private table."
    )
    epsilon: _Number = Field(description="ε the whole release costs (> 0).")
    delta: _Number = Field(description="δ the whole release costs (0 < δ < 1).")
    method: Literal["aim", "mst"] = Field("aim", description="AIM (default) or MST.")
    columns: list[Annotated[str, Field(max_length=200)]] | None = Field(
        None, min_length=1, max_length=32, description="Declared columns (default: all)."
    )
    workload: list[_Clique] | None = Field(
        None, min_length=1, max_length=200, description="Marginals to favour (default: pairs)."
    )
    bins: StrictInt = Field(32, ge=2, le=256, description="Most codes per numeric column.")
    rows: StrictInt | None = Field(
        None, ge=1, le=1_000_000, description="Synthetic rows (default: the noisy count)."
    )
