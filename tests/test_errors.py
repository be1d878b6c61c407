"""Error classes: messages name the argument, the value and what is allowed."""

from __future__ import annotations

import math
import types

import pytest

import infodp
from infodp import _validate as v
from infodp.errors import BudgetExceeded, InfodpError, InternalError, ParameterError


def test_all_matches_public_names() -> None:
    # Sub-packages appear as attributes once imported; they are not part of ``__all__``.
    public = {
        name
        for name, value in vars(infodp).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    } - {"annotations"}
    # Lazily imported names (infodp.Session) are in __all__ and resolve on first use.
    lazy = {"Session"}
    assert set(infodp.__all__) - {"__version__"} == public | lazy
    assert all(getattr(infodp, name) is not None for name in lazy)


def test_parameter_error_is_value_error_and_names_argument() -> None:
    with pytest.raises(ValueError, match=r"alpha must be .*; got -1\.0"):
        v.as_alpha("alpha", -1.0)
    assert issubclass(ParameterError, InfodpError)


@pytest.mark.parametrize("bad", [math.nan, "x", None, True])
def test_nan_and_non_numbers_are_refused(bad: object) -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        v.as_positive("epsilon", bad)


def test_probability_vector_checks() -> None:
    assert v.as_probability_vector("p", [0.25, 0.75]).sum() == 1.0
    with pytest.raises(ParameterError, match="sum to 1"):
        v.as_probability_vector("p", [0.5, 0.6])
    with pytest.raises(ParameterError, match="non-negative"):
        v.as_probability_vector("p", [1.5, -0.5])
    with pytest.raises(ParameterError, match="finite"):
        v.as_probability_vector("p", [math.nan, 1.0])


def test_budget_exceeded_names_requested_remaining_gap() -> None:
    err = BudgetExceeded("eps=1", "eps=0.5", "eps=0.5")
    assert "requested eps=1" in str(err) and "remaining eps=0.5" in str(err)
    assert "bug" in str(InternalError("x"))


def test_positive_int() -> None:
    assert v.as_positive_int("k", 3.0) == 3
    with pytest.raises(ParameterError, match="k must be an integer >= 1"):
        v.as_positive_int("k", 0)
    with pytest.raises(ParameterError):
        v.as_positive_int("k", 2.5)
