"""Error classes: messages name the argument, the value and what is allowed."""

from __future__ import annotations

import math
import types

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


def _every_error_class() -> list[type[BaseException]]:
    """Every InfodpError subclass defined in the package (imported so they are all known)."""
    import importlib
    import pkgutil

    for mod in pkgutil.walk_packages(infodp.__path__, "infodp."):
        if mod.name.endswith("__main__"):
            continue
        importlib.import_module(mod.name)
    seen: list[type[BaseException]] = []
    stack: list[type[BaseException]] = [InfodpError]
    while stack:
        cls = stack.pop()
        seen.append(cls)
        stack.extend(cls.__subclasses__())
    return seen


def _instance(cls: type[BaseException]) -> BaseException:
    """One instance of ``cls``, built through its own __init__ (whatever it takes)."""
    import inspect

    params = [
        p
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.name != "self"
        and p.default is inspect.Parameter.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    samples: dict[str, object] = {"points": 17, "interval": 1e-4, "status": 409, "seconds": 1.5}
    args = [samples.get(p.name, f"<{p.name}>") for p in params]
    return cls(*args)


def test_every_error_class_pickles_faithfully() -> None:
    # The service's worker processes send errors back to the server process by pickle: the
    # class, the message and every attribute must survive, whatever the class's __init__ is.
    import pickle

    classes = _every_error_class()
    names = {c.__name__ for c in classes}
    # The ones with their own __init__ (where Exception's default pickling breaks) are there.
    assert {"BudgetExceeded", "QueryFailed", "InternalError", "PLDTooLarge"} <= names
    for cls in classes:
        err = _instance(cls)
        again = pickle.loads(pickle.dumps(err))
        assert type(again) is cls
        assert str(again) == str(err) and again.args == err.args
        assert vars(again) == vars(err)


@given(
    name=st.text(max_size=30),
    value=st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), st.text(max_size=200)),
    allowed=st.one_of(st.none(), st.text(max_size=40)),
)
def test_parameter_error_pickle_round_trip(name: str, value: object, allowed: str | None) -> None:
    import pickle

    err = ParameterError(name, value, allowed)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is ParameterError
    assert str(again) == str(err) and again.argument == err.argument


def test_budget_and_query_failures_pickle_with_their_fields() -> None:
    import pickle

    from infodp.errors import QueryFailed

    err = BudgetExceeded("epsilon=1/2", "epsilon=1/4", "epsilon=1/4")
    again = pickle.loads(pickle.dumps(err))
    fields = (again.requested, again.remaining, again.gap)
    assert fields == ("epsilon=1/2", "epsilon=1/4", "epsilon=1/4")
    assert str(pickle.loads(pickle.dumps(QueryFailed()))) == QueryFailed.MESSAGE
    internal = pickle.loads(pickle.dumps(InternalError("x")))
    assert str(internal) == "internal error (this is a bug in infodp): x"
