"""Notebook views (``_repr_html_``) of profiles, capacities, explanations and budgets.

Each view is a small table whose numbers are checked against closed forms, not against the
object's own output: Laplace's pure ε = Δ/b and its KL divergence ε + e^(−ε) − 1 (Mironov
2017, Prop. 6), the binary erasure channel's capacity (1 − e)·ln 2 (Cover & Thomas 2006,
§7.1.5), and budgets' arithmetic.
"""

from __future__ import annotations

import html
import math
import re
from fractions import Fraction
from html.parser import HTMLParser

from infodp._format import format_number
from infodp.accounting import Accountant, Budget, laplace_profile
from infodp.channel import Channel
from infodp.curator import Budget as AnalystBudget
from infodp.explain import explain_epsilon_delta


def _cells(page: str) -> dict[str, str]:
    """{first cell: second cell} of every two-cell row, unescaped."""
    rows = re.findall(r"<tr><td>(.*?)</td><td[^>]*>(.*?)</td></tr>", page)
    return {html.unescape(k): html.unescape(v) for k, v in rows}


def _balanced(page: str) -> None:
    class Check(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.stack: list[str] = []

        def handle_starttag(self, tag: str, attrs: object) -> None:
            self.stack.append(tag)

        def handle_endtag(self, tag: str) -> None:
            assert self.stack.pop() == tag

    checker = Check()
    checker.feed(page)
    assert checker.stack == []


def test_profile_view_shows_laplace_closed_forms() -> None:
    page = laplace_profile(1.0)._repr_html_()  # scale 1, sensitivity 1: ε = 1
    _balanced(page)
    cells = _cells(page)
    assert cells["pure ε"] == format_number(1.0)
    assert cells["information at α = ∞ (nats)"] == format_number(1.0)
    # At α = 1 the bound is the Laplace KL divergence ε + e^(−ε) − 1 = e^(−1) at ε = 1.
    assert cells["information at α = 1 (nats)"] == format_number(1.0 + math.exp(-1.0) - 1.0)


def test_capacity_view_shows_the_bracket_in_nats_and_bits() -> None:
    page = Channel.binary_erasure(0.25).capacity()._repr_html_()
    _balanced(page)
    cells = _cells(page)
    closed = 0.75 * math.log(2)
    assert cells["lower (nats)"] == format_number(closed) == cells["upper (nats)"]
    assert cells["upper (bits)"] == format_number(0.75)
    assert cells["converged"] == "yes"


def test_explanation_view_leads_with_the_one_minus_delta_figures() -> None:
    page = explain_epsilon_delta(1.0, 1e-6)._repr_html_()
    _balanced(page)
    assert "What δ = 1e-06 means." in page
    assert page.index("With probability 1 − δ") < page.index("Including the δ event")
    assert format_number(math.tanh(0.5)) in page  # Cuff & Yu 2016: ε·tanh(ε/2) nats at α = 1
    assert "<img" not in page  # no plots in the notebook view


def test_budget_views_show_what_is_left() -> None:
    budget = Budget.pure(1.0)
    assert _cells(budget._repr_html_()) == {"currency": "pure", "epsilon": "1"}
    acc = Accountant(budget)
    acc.spend(laplace_profile(2.0))  # ε = 1/2
    cells = _cells(acc._repr_html_())
    assert cells["spends"] == "1" and cells["left"] == format_number(0.5)
    analyst = AnalystBudget(
        "ana", "people", Fraction(1), Fraction(1, 10**6), Fraction(1, 4), Fraction(0)
    )
    page = analyst._repr_html_()
    _balanced(page)
    cells = _cells(page)
    assert cells["ε left"] == format_number(Fraction(3, 4))
    assert cells["analyst"] == "ana" and cells["δ left"] == format_number(Fraction(1, 10**6))
