"""What does this ε mean? Privacy profiles turned into information and attacker terms.

:func:`explain` turns any privacy profile (a mechanism, a composition, a spent budget) into an
:class:`Explanation`: leakage per individual in nats and bits at α = 1, 2 and ∞, attacker
odds, success probability, trade-off region, min-entropy leakage, the Markov tail of the
leakage, releases needed to learn b bits, δ made concrete for N rows, and a group view.
:func:`render_html` / :func:`write_html` produce a self-contained HTML report with plots.

ε = 1 is "approx. 1.44 bits per query" (“Differential Privacy and Information Theory”, 2022):

>>> from infodp.explain import explain_epsilon_delta
>>> round(explain_epsilon_delta(1.0).bits["inf"], 2)
1.44
"""

from __future__ import annotations

import typing as _typing

from infodp._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from infodp.explain.bounds import (
        attacker_success_bound,
        linear_success_bound,
        markov_tail_bound,
        min_entropy_leakage_bound,
        posterior_odds_bound,
        pure_dp_divergence,
        releases_needed,
        tradeoff_fnr,
    )
    from infodp.explain.html import render_html, write_html
    from infodp.explain.report import (
        DEFAULT_DELTA,
        Explanation,
        ProfileLike,
        explain,
        explain_epsilon_delta,
        profile_tradeoff,
    )

# Imported on first use (infodp._lazy): importing one submodule stays cheap.
__getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        "attacker_success_bound": "infodp.explain.bounds",
        "markov_tail_bound": "infodp.explain.bounds",
        "min_entropy_leakage_bound": "infodp.explain.bounds",
        "posterior_odds_bound": "infodp.explain.bounds",
        "pure_dp_divergence": "infodp.explain.bounds",
        "releases_needed": "infodp.explain.bounds",
        "linear_success_bound": "infodp.explain.bounds",
        "tradeoff_fnr": "infodp.explain.bounds",
        "render_html": "infodp.explain.html",
        "write_html": "infodp.explain.html",
        "DEFAULT_DELTA": "infodp.explain.report",
        "Explanation": "infodp.explain.report",
        "ProfileLike": "infodp.explain.report",
        "explain": "infodp.explain.report",
        "explain_epsilon_delta": "infodp.explain.report",
        "profile_tradeoff": "infodp.explain.report",
    },
)

__all__ = [
    "DEFAULT_DELTA",
    "Explanation",
    "ProfileLike",
    "attacker_success_bound",
    "explain",
    "explain_epsilon_delta",
    "linear_success_bound",
    "markov_tail_bound",
    "min_entropy_leakage_bound",
    "posterior_odds_bound",
    "profile_tradeoff",
    "pure_dp_divergence",
    "releases_needed",
    "render_html",
    "tradeoff_fnr",
    "write_html",
]
