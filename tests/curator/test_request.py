"""The curator's request: parsed once, typed records, and an estimate whose ``fits`` is what the
ledger then does.

``fits`` is the accountant's dry run; the charge is the ledger's own path (``accounts.spend``
inside the reservation's transaction). For a query in every currency, on both sides of the
edge, the estimate's verdict must be the charge's outcome.
"""

from __future__ import annotations

import dataclasses
import math
import pickle
from fractions import Fraction
from typing import Any

import pandas as pd
import pytest

from _stores import cats, ints, one_table
from infodp.accounting.accountant import Budget
from infodp.curator import Curator, Estimate, NoBudget, Priced, Request
from infodp.errors import BudgetExceeded, ParameterError
from infodp.mechanisms.sampling import InsecureSeededSource

SCHEMA = one_table("people", {"age": ints(0, 99), "region": cats("n", "s")})
SQL = "SELECT region, COUNT(*) FROM people GROUP BY region"


def _curator() -> Curator:
    cur = Curator(":memory:", source=InsecureSeededSource(1, i_understand_this_is_not_private=True))
    frame = pd.DataFrame({"age": range(60), "region": ["n", "s"] * 30})
    cur.register_dataset("people", frame, SCHEMA)
    return cur


def test_numbers_are_parsed_exactly_once_and_refused_with_their_name() -> None:
    # A float means its shortest decimal: 0.1 is 1/10, as the text "0.1".
    assert Request.parse(SQL, epsilon=0.1) == Request.parse(SQL, epsilon="0.1")
    assert Request.parse(SQL, epsilon=Fraction(1, 3)).epsilon == Fraction(1, 3)
    for kwargs, name in (
        ({"epsilon": True}, "epsilon"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"epsilon": 1, "delta": 1}, "delta"),
        ({"epsilon": 1, "confidence": 1.0}, "confidence"),
        ({"epsilon": 1, "noise": "cauchy"}, "noise"),
    ):
        with pytest.raises(ParameterError, match=name):
            Request.parse(SQL, **kwargs)


def test_records_are_frozen_and_no_budget_crosses_a_pipe() -> None:
    cur = _curator()
    cur.add_analyst("a", "people", epsilon=1)
    priced = cur.price(Request.parse(SQL, epsilon="0.5"))
    assert isinstance(priced, Priced) and priced.cost.epsilon == Fraction(1, 2)
    est = cur.estimate_for("a", Request.parse(SQL, epsilon="0.5"))
    assert isinstance(est, Estimate) and est.fits is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        priced.rows = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.fits = False  # type: ignore[misc]
    err = pickle.loads(pickle.dumps(NoBudget("people")))
    assert isinstance(err, NoBudget) and str(err) == str(NoBudget("people"))
    # The library's estimate is the same mapping, without the analyst's part.
    plain = cur.estimate(SQL, epsilon="0.5")
    assert plain == {k: v for k, v in est.to_dict().items() if k in plain}
    assert set(est.to_dict()) - set(plain) == {"remaining", "fits", "notes"}
    cur.close()


def test_no_budget_comes_before_anything_of_the_query() -> None:
    cur = _curator()
    cur.add_analyst("a", "people", epsilon=1)
    for sql in (SQL, "SELECT SUM(secret) FROM elsewhere"):
        with pytest.raises(NoBudget, match="no budget"):
            cur.estimate_for("b", Request.parse(sql, epsilon=1))
        with pytest.raises(NoBudget):
            cur.answer("b", Request.parse(sql, epsilon=1))
    cur.close()


BUDGETS: list[Any] = [
    ("basic", None),
    ("pure", Budget.pure(1)),
    ("approx", Budget.approx(1, "1e-3")),
    ("rdp", Budget.rdp([2, 8, math.inf], [1, 1, 1])),
    ("zcdp", Budget.zcdp("0.5")),
    ("nats", Budget.nats(1.0, "0.3")),
]


@pytest.mark.slow
@pytest.mark.parametrize(("currency", "budget"), BUDGETS, ids=[b[0] for b in BUDGETS])
@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_fits_is_what_the_charge_then_does(currency: str, budget: Any, noise: str) -> None:
    cur = _curator()
    if budget is None:
        cur.add_analyst("a", "people", epsilon=1, delta="1e-3")
    else:
        cur.add_analyst("a", "people", budget=budget)
    delta = "1e-6" if noise == "gaussian" else 0
    verdicts = []
    for eps in ("0.1", "0.3", "0.6", "0.9", "1.5", "3", "6", "12"):
        try:
            req = Request.parse(SQL, epsilon=eps, delta=delta, noise=noise)
        except ParameterError:
            continue
        fits = cur.estimate_for("a", req).fits
        try:
            cur.answer("a", req)
            charged = True
        except BudgetExceeded:
            charged = False
        assert fits is charged, (currency, noise, eps)
        verdicts.append(fits)
    if noise == "gaussian" and currency in ("pure", "rdp"):
        # Gaussian noise is not pure ε-DP for any ε: a pure budget admits no δ > 0, and this
        # RDP curve bounds α = ∞, where RDP is pure DP (Mironov 2017, Prop. 3).
        assert verdicts and not any(verdicts)
    else:
        # Both outcomes were seen: the sequence runs past the edge of the budget.
        assert True in verdicts and False in verdicts
    cur.close()
