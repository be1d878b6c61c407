"""Plain-words phrases of an explanation shared by the text report (``infodp explain``) and the
HTML report (:mod:`infodp.explain.html`), so both say the same thing the same way.

ε is a number of nats: ε = 1 is "1.443 bits per person" at worst, as in “Differential Privacy
and Information Theory” (2022), "approx. 1.44 bits per query".

>>> from infodp.explain import explain_epsilon_delta
>>> epsilon_phrase(explain_epsilon_delta(1.0))
'ε = 1 = 1.443 bits per person'
>>> leads_with_one_minus_delta(explain_epsilon_delta(1.0, 1e-5))
True
"""

from __future__ import annotations

import math
from typing import Any

from infodp._format import format_number
from infodp.units import nats_to_bits

__all__ = [
    "epsilon_phrase",
    "guarantee_line",
    "leads_with_one_minus_delta",
    "unbounded_line",
]


def epsilon_phrase(ex: Any) -> str:
    """``ε = 1 = 1.443 bits per person`` (``ε = ∞`` when no finite ε is certified)."""
    eps = float(ex.epsilon)
    if not math.isfinite(eps):
        return "ε = ∞"
    return f"ε = {format_number(eps)} = {format_number(nats_to_bits(eps))} bits per person"


def leads_with_one_minus_delta(ex: Any) -> bool:
    """δ > 0 and no level of leakage is bounded once the δ event counts: the report then
    leads with what holds (odds, the trade-off, leakage with probability 1 − δ)."""
    return bool(ex.delta > 0 and ex.nats["1"] is None and ex.conditional_nats is not None)


def guarantee_line(ex: Any) -> str:
    """What (ε, δ) guarantees, in one sentence (Kairouz, Oh & Viswanath 2015, Thm 2.1: with
    probability 1 − δ the release is a post-processing of ε-randomized response).

    >>> from infodp.explain import explain_epsilon_delta
    >>> print(guarantee_line(explain_epsilon_delta(1.0, 1e-5)))  # doctest: +NORMALIZE_WHITESPACE
    What (ε, δ) guarantees: with probability 1 − δ = 0.99999 per release, an attacker's odds
    about any one person grow by at most e^ε = 2.718, and no membership test beats the
    trade-off below; with probability δ = 1e-05 the release may reveal that person outright.
    """
    return (
        f"What (ε, δ) guarantees: with probability 1 − δ = {format_number(1 - ex.delta, 8)} per "
        "release, an attacker's odds about any one person grow by at most "
        f"e^ε = {format_number(ex.posterior_odds_bound)}, and no membership test "
        f"beats the trade-off below; with probability δ = {format_number(ex.delta, 3)} the "
        "release may reveal that person outright."
    )


def unbounded_line(ex: Any) -> str:
    """Why the pure-ε quantities (leakage at α = 1, 2, ∞ counting the δ event) are unbounded.

    >>> from infodp.explain import explain_epsilon_delta
    >>> unbounded_line(explain_epsilon_delta(1.0, 1e-5)).split(":")[0]
    'Counting the δ event, the leakage at α = 1, 2 and ∞ is unbounded'
    """
    return (
        "Counting the δ event, the leakage at α = 1, 2 and ∞ is unbounded: a release that "
        f"fails (probability δ = {format_number(ex.delta, 3)}) may reveal a person's row "
        "outright, and (ε, δ) says nothing of how much it reveals then, so the leakage figures "
        "above hold with probability 1 − δ only (“Differential Privacy and Information Theory”, "
        "2022, 'Hacking (ε, δ)-privacy')."
    )
