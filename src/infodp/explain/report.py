"""What does this ε mean? A privacy profile turned into leakage, attacker views and rates.

:func:`explain` takes any privacy profile (one mechanism, a composition, a curator's spent
budget) and returns an :class:`Explanation`: the leakage per individual in nats and bits at
α = 1 (Shannon), 2 and ∞ (worst case), the attacker's best odds, success probability,
hypothesis-testing region and min-entropy leakage, the Markov tail of the leakage, how many
releases a determined attacker needs to learn b bits, δ made concrete for a table of N rows, and
the same for a group of k individuals.

Every number is an upper bound on what an attacker can achieve (a lower bound where it counts
releases an attacker needs). Where (ε, δ) with δ > 0 leaves the leakage unbounded (“Differential
Privacy and Information Theory” (2022),
"Hacking (ε, δ)-privacy"), the guarantee is ``None`` and the report gives the probability δ
and, separately and labelled, the conditional numbers that hold on the remaining 1 − δ.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from infodp._format import format_number as _num
from infodp._np import np, npt
from infodp._validate import (
    as_alpha,
    as_nonnegative,
    as_positive_int,
    as_probability,
)
from infodp.errors import ParameterError
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
from infodp.units import LN2, nats_to_bits

__all__ = [
    "BITS_TO_EXTRACT",
    "DEFAULT_DELTA",
    "LEVELS",
    "TAIL_LEAKS_BITS",
    "TRADEOFF_FPRS",
    "Explanation",
    "ProfileLike",
    "explain",
    "explain_epsilon_delta",
    "profile_tradeoff",
]

#: The three Rényi levels every report shows: Shannon (1), collision (2), worst case (∞).
LEVELS: tuple[tuple[str, float], ...] = (("1", 1.0), ("2", 2.0), ("inf", math.inf))
#: Target δ for a non-pure profile when the caller gives neither ε nor δ (as infodp account).
DEFAULT_DELTA = 1e-5
#: Amounts of information (bits) for the "releases needed" table.
BITS_TO_EXTRACT: tuple[int, ...] = (1, 8, 64)
#: False-positive rates at which the JSON report lists the trade-off curve.
TRADEOFF_FPRS: tuple[float, ...] = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5)
#: Leak sizes (bits) for the Markov tail table.
TAIL_LEAKS_BITS: tuple[float, ...] = (0.1, 0.5, 1.0, 2.0, 4.0, 8.0)


@runtime_checkable
class ProfileLike(Protocol):
    """What :func:`explain` needs from a privacy profile (``infodp.accounting.PrivacyProfile``)."""

    def pure_epsilon(self) -> Any:
        """Pure ε, or inf."""

    def rdp(self, alpha: Any) -> Any:
        """Upper bound on the Rényi-DP curve ε(α)."""

    def information(self, alpha: Any) -> Any:
        """Upper bound on the channel capacity C_α in nats."""

    def delta(self, epsilon: Any) -> Any:
        """Certified δ(ε)."""

    def epsilon(self, delta: Any) -> Any:
        """Certified ε(δ)."""

    def group(self, k: Any) -> Any:
        """Profile for a group of k individuals."""


def _call(fn: Callable[[], Any]) -> float:
    """Call a profile query; a query the profile cannot answer yet counts as "no bound" (inf).

    Returning inf is the conservative choice: no finite guarantee is claimed.
    """
    try:
        value = float(fn())
    except NotImplementedError:
        return math.inf
    if math.isnan(value):
        raise ParameterError("profile", "a profile returning NaN", "a profile without NaN")
    return value


def _bits(nats: float | None) -> float | None:
    return None if nats is None else nats_to_bits(nats)


@dataclass(frozen=True, slots=True)
class Explanation:
    """The meaning of one privacy profile for one individual (or one group of k).

    Numbers are in nats; ``bits`` and the ``*_bits`` views divide by ln 2. ``nats[level]`` is
    ``None`` when no finite guarantee exists at that level (then ``unbounded_probability`` says
    with which probability the protection may fail entirely); ``conditional_nats`` are the
    bounds that hold on the complementary event of probability 1 − δ and are *not* guarantees.

    >>> e = explain_epsilon_delta(1.0)
    >>> round(e.nats["1"], 6), round(e.bits["inf"], 4)
    (0.462117, 1.4427)
    >>> round(e.attacker_success_max, 6)
    0.731059
    """

    epsilon: float
    delta: float
    pure: bool
    nats: Mapping[str, float | None]
    conditional_nats: Mapping[str, float] | None
    unbounded_probability: float
    posterior_odds_bound: float
    attacker_success_max: float
    attacker_success_epsilon_delta: float
    attacker_success_linear: float
    min_entropy_leakage_bound: float
    min_entropy_leakage_bound_epsilon_delta: float
    tail_alpha: float
    tail: tuple[tuple[float, float], ...]
    conditional_tail: tuple[tuple[float, float], ...] | None
    releases_for_bits: Mapping[int, float | None]
    conditional_releases_for_bits: Mapping[int, float] | None
    rows: int | None
    expected_exposed_individuals: float | None
    group_size: int
    group: Explanation | None
    warnings: tuple[str, ...]
    profile: Any = field(repr=False, compare=False)
    #: Results of the literature that bear on this profile, in plain words (:func:`_results`).
    results: tuple[str, ...] = ()

    @property
    def bits(self) -> dict[str, float | None]:
        """``nats`` converted to bits (÷ ln 2)."""
        return {k: _bits(v) for k, v in self.nats.items()}

    @property
    def conditional_bits(self) -> dict[str, float] | None:
        """``conditional_nats`` converted to bits."""
        if self.conditional_nats is None:
            return None
        return {k: nats_to_bits(v) for k, v in self.conditional_nats.items()}

    @property
    def caveat(self) -> str | None:
        """Plain words for the levels without a guarantee, or ``None`` when all are bounded.

        The conditional figures are clearly labelled: they hold only on the event of
        probability 1 − δ (Kairouz–Oh–Viswanath 2015, Thm 2.1) and are not guarantees.

        >>> print(explain_epsilon_delta(1.0, 0.01).caveat)  # doctest: +NORMALIZE_WHITESPACE
        No guarantee at α = 1, 2, ∞: with probability δ = 0.01 per release the leakage is
        unbounded. Not a guarantee: with probability 1 − δ = 0.99 it is at most 0.4621 nats
        (0.6667 bits) at α = 1; 0.7353 nats (1.061 bits) at α = 2; 1 nats (1.443 bits) at α = ∞.
        """
        missing = [(k, a) for k, a in LEVELS if self.nats[k] is None]
        if not missing:
            return None
        names = ", ".join(k.replace("inf", "∞") for k, _ in missing)
        text = (
            f"No guarantee at α = {names}: with probability δ = {_num(self.delta)} per release "
            "the leakage is unbounded."
        )
        if self.conditional_nats is not None:
            parts = [
                f"{_num(self.conditional_nats[k])} nats "
                f"({_num(nats_to_bits(self.conditional_nats[k]))} bits)"
                f" at α = {k.replace('inf', '∞')}"
                for k, _ in missing
            ]
            text += (
                f" Not a guarantee: with probability 1 − δ = {_num(1.0 - self.delta, 6)} it is at "
                "most " + "; ".join(parts) + "."
            )
        return text

    def _repr_html_(self) -> str:
        """The notebook view: the report's headline and tables, without the plots
        (:func:`~infodp.explain.render_html` gives the whole report).

        >>> "What δ = 0.01 means" in explain_epsilon_delta(1.0, 0.01)._repr_html_()
        True
        """
        from infodp.explain.html import summary_html

        return summary_html(self)

    def __repr__(self) -> str:
        """A one-line summary (the full content is in :meth:`to_dict`)."""
        bits: Mapping[str, float | None] = self.bits
        when = ""
        if bits.get("1") is None and self.conditional_bits is not None:
            bits, when = self.conditional_bits, " with prob. 1 − δ (unbounded with prob. δ)"
        return (
            f"Explanation(ε {_num(self.epsilon)}, δ {_num(self.delta)}: ≤ "
            f"{_num(bits.get('1'), missing='∞')} bits at α = 1, ≤ "
            f"{_num(bits.get('inf'), missing='∞')} bits worst case{when}; attacker success ≤ "
            f"{_num(self.attacker_success_max)})"
        )

    def tradeoff(self, fpr: Any) -> npt.NDArray[np.float64]:
        """Smallest false-negative rate an attacker can reach at each false-positive rate.

        Pure/(ε, δ): Kairouz–Oh–Viswanath 2015, Thm 2.1; other profiles: see
        :func:`profile_tradeoff`.

        >>> [round(float(v), 4) for v in explain_epsilon_delta(1.0).tradeoff([0.1, 0.5])]
        [0.7282, 0.1839]
        """
        return profile_tradeoff(self.profile, fpr, epsilon=self.epsilon, delta=self.delta)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``None`` = unbounded; the CLI's ``--json`` payload).

        >>> d = explain_epsilon_delta(1.0, 0.01).to_dict()
        >>> d["nats"]["inf"] is None, d["delta"]
        (True, 0.01)
        """
        out: dict[str, Any] = {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "pure": self.pure,
            "nats": dict(self.nats),
            "bits": self.bits,
            "unbounded_probability": self.unbounded_probability,
            "caveat": self.caveat,
            "conditional": None
            if self.conditional_nats is None
            else {
                "probability": 1.0 - self.unbounded_probability,
                "note": "holds only on the event of probability 1 - delta; not a guarantee",
                "nats": dict(self.conditional_nats),
                "bits": self.conditional_bits,
                "releases_for_bits": {
                    str(b): n for b, n in (self.conditional_releases_for_bits or {}).items()
                },
                "tail": [
                    {"leak_nats": r, "probability_at_most": p}
                    for r, p in (self.conditional_tail or ())
                ],
            },
            "posterior_odds_bound": self.posterior_odds_bound,
            # e^ε bounds the odds only on the event of probability 1 − δ (KOV 2015, Thm 2.1).
            "posterior_odds_bound_probability": 1.0 - self.delta,
            "attacker_success_max": self.attacker_success_max,
            "attacker_success_epsilon_delta": self.attacker_success_epsilon_delta,
            "attacker_success_linear": self.attacker_success_linear,
            "min_entropy_leakage_bound": self.min_entropy_leakage_bound,
            "min_entropy_leakage_bound_epsilon_delta": (
                self.min_entropy_leakage_bound_epsilon_delta
            ),
            "tradeoff": [
                {"false_positive_rate": a, "false_negative_rate_at_least": float(b)}
                for a, b in zip(TRADEOFF_FPRS, self.tradeoff(TRADEOFF_FPRS), strict=True)
            ],
            "tail_alpha": self.tail_alpha,
            "tail": [{"leak_nats": r, "probability_at_most": p} for r, p in self.tail],
            "releases_for_bits": {str(b): n for b, n in self.releases_for_bits.items()},
            "warnings": list(self.warnings),
            "results": list(self.results),
        }
        if self.rows is not None:
            out["rows"] = self.rows
            out["expected_exposed_individuals"] = self.expected_exposed_individuals
        if self.group is not None:
            out["group"] = {"size": self.group_size, **self.group.to_dict()}
        return out


def _choose_epsilon_delta(
    profile: ProfileLike, pure: float, epsilon: float | None, delta: float | None
) -> tuple[float, float]:
    """The (ε, δ) pair the report is about: pure ε if finite, else the caller's target."""
    if math.isfinite(pure):
        return pure, 0.0
    if epsilon is not None:
        d = _call(lambda: profile.delta(epsilon))
        return epsilon, min(1.0, max(0.0, d))
    target = DEFAULT_DELTA if delta is None else delta
    eps = _call(lambda: profile.epsilon(target))
    return max(0.0, eps), target


def _leakage(profile: ProfileLike, alpha: float, pure: float) -> float:
    """Tightest available upper bound on C_α: min(RDP diameter, capacity bound, pure-ε form)."""
    if math.isinf(alpha):
        return pure
    bound = min(_call(lambda: profile.rdp(alpha)), _call(lambda: profile.information(alpha)))
    if math.isfinite(pure):
        # ε-DP implies D_α ≤ D_α(RR_ε) (Kairouz–Oh–Viswanath 2015; Cuff & Yu 2016 at α = 1).
        bound = min(bound, pure_dp_divergence(pure, alpha))
    return max(0.0, bound)


def _tail(capacity: float, alpha: float) -> tuple[tuple[float, float], ...]:
    return tuple((b * LN2, markov_tail_bound(capacity, b * LN2, alpha)) for b in TAIL_LEAKS_BITS)


def explain(
    profile: ProfileLike | Sequence[ProfileLike],
    *,
    epsilon: Any = None,
    delta: Any = None,
    rows: Any = None,
    group: Any = 1,
    tail_alpha: Any = 2.0,
) -> Explanation:
    """Explain what a privacy profile means for one individual.

    The report is about one (ε, δ) pair: the pure ε when the profile has one (δ = 0);
    otherwise ε(δ) for the target ``delta`` (default :data:`DEFAULT_DELTA`) or δ(ε) for a
    target ``epsilon``. Leakage at α is the tightest of the profile's Rényi-DP diameter
    ``rdp(α)``, its capacity bound ``information(α)`` and, for pure ε, the tight
    randomized-response value (“Differential Privacy and Information Theory” (2022): C_α ≤
    diameter; Cuff & Yu 2016, Property 1).

    ``rows`` (N) adds δ·N, the expected number of individuals whose protection fails, with a
    warning when δ ≥ 1/N; ``group`` = k > 1 adds the same report for a group of k individuals
    (``profile.group(k)``; “Differential Privacy and Information Theory” (2022), "Group privacy"),
    at target ε = k·ε when ε was the target or the profile is pure.

    ``profile`` may also be a sequence of profiles, e.g. a curator's spends
    (``Accountant.spent()``): they are composed first.

    >>> e = explain_epsilon_delta(1.0, 0.01, rows=1000)
    >>> e.nats["1"] is None, round(e.conditional_nats["1"], 6), e.expected_exposed_individuals
    (True, 0.462117, 10.0)
    >>> from infodp.accounting import laplace_profile
    >>> from infodp.accounting.accountant import Accountant, Budget
    >>> acc = Accountant(Budget.pure(2.0))
    >>> acc.spend(laplace_profile(scale=2.0)); acc.spend(laplace_profile(scale=2.0))
    >>> spent = explain(acc.spent())
    >>> spent.epsilon, round(spent.bits["inf"], 4)
    (1.0, 1.4427)
    """
    if isinstance(profile, (list, tuple)):
        # A sequence of spends (e.g. ``Accountant.spent()``): their sequential composition.
        from infodp.accounting import compose, pure_dp_profile

        profile = compose(*profile) if profile else pure_dp_profile(0.0)
    if not isinstance(profile, ProfileLike):
        raise ParameterError("profile", type(profile).__name__, "a privacy profile")
    eps_target = None if epsilon is None else as_nonnegative("epsilon", epsilon)
    delta_target = None if delta is None else as_probability("delta", delta)
    n_rows = None if rows is None else as_positive_int("rows", rows)
    k = as_positive_int("group", group)
    t_alpha = as_alpha("tail_alpha", tail_alpha, minimum=1.0)

    pure = _call(profile.pure_epsilon)
    eps, dlt = _choose_epsilon_delta(profile, pure, eps_target, delta_target)
    is_pure = math.isfinite(pure)

    nats: dict[str, float | None] = {}
    for key, alpha in LEVELS:
        value = _leakage(profile, alpha, pure)
        nats[key] = value if math.isfinite(value) else None
    unbounded = any(v is None for v in nats.values())
    # With a finite guarantee at every level there is no "catastrophe" event; otherwise the
    # protection may fail entirely with probability δ (the (ε, δ) reading of “Differential Privacy
    # and Information Theory” (2022)).
    unbounded_probability = dlt if unbounded else 0.0

    conditional: dict[str, float] | None = None
    if dlt > 0.0 and math.isfinite(eps):
        # KOV 2015, Thm 2.1: with probability 1 − δ the release is a post-processing of ε-RR,
        # so it leaks at most D_α(RR_ε); where the profile has a smaller finite bound, that
        # bound holds anyway.
        conditional = {
            key: min(pure_dp_divergence(eps, alpha), math.inf if v is None else v)
            for (key, alpha), v in zip(LEVELS, nats.values(), strict=True)
        }

    tv = min(1.0, max(0.0, _call(lambda: profile.delta(0.0))))
    success_ed = attacker_success_bound(eps, dlt) if math.isfinite(eps) else 1.0
    success = min(success_ed, 0.5 * (1.0 + tv))

    tail_capacity = _leakage(profile, t_alpha, pure)
    tail = _tail(tail_capacity, t_alpha)
    conditional_tail = None
    if conditional is not None:
        conditional_tail = _tail(min(pure_dp_divergence(eps, t_alpha), tail_capacity), t_alpha)

    c1 = nats["1"]
    releases: dict[int, float | None] = {
        b: (None if c1 is None else releases_needed(b, c1)) for b in BITS_TO_EXTRACT
    }
    conditional_releases = None
    if conditional is not None:
        conditional_releases = {b: releases_needed(b, conditional["1"]) for b in BITS_TO_EXTRACT}

    warnings: list[str] = []
    if unbounded and dlt > 0.0:
        if all(v is None for v in nats.values()):
            warnings.append(
                f"With probability {_num(dlt)} per release the protection may fail completely: "
                "(epsilon, delta) alone does not bound the information leaked then "
                "(“Differential Privacy and Information Theory”, 2022, "
                "'Hacking (epsilon, delta)-privacy')."
            )
        else:
            warnings.append(
                "No worst-case bound: one output may reveal arbitrarily much. The mechanism "
                f"behaves no worse than one that is epsilon-DP except with probability {_num(dlt)}"
                ", when it may reveal the row; the average leakage shown (alpha = 1, 2) is "
                "bounded regardless."
            )
    if not math.isfinite(eps):
        warnings.append("No finite epsilon is certified at this delta.")
    exposed = None
    if n_rows is not None:
        exposed = dlt * n_rows
        if dlt > 0.0 and dlt >= 1.0 / n_rows:
            warnings.append(
                f"delta = {_num(dlt)} >= 1/N = {_num(1.0 / n_rows)}: in the worst case allowed "
                f"by (epsilon, delta), about {_num(exposed)} of the {_num(n_rows)} individuals "
                "lose their protection in each release."
            )

    group_explanation = None
    if k > 1:
        group_profile = profile.group(k)
        g_eps = k * eps if (is_pure or eps_target is not None) and math.isfinite(eps) else None
        group_explanation = explain(
            group_profile,
            epsilon=g_eps,
            delta=None if g_eps is not None else dlt if dlt > 0 else delta_target,
            rows=n_rows,
            group=1,
            tail_alpha=t_alpha,
        )

    return Explanation(
        epsilon=eps,
        delta=dlt,
        pure=is_pure,
        nats=MappingProxyType(nats),
        conditional_nats=None if conditional is None else MappingProxyType(conditional),
        unbounded_probability=unbounded_probability,
        posterior_odds_bound=posterior_odds_bound(eps),
        attacker_success_max=success,
        attacker_success_epsilon_delta=success_ed,
        attacker_success_linear=linear_success_bound(eps, dlt),
        min_entropy_leakage_bound=math.log(2.0 * success),
        min_entropy_leakage_bound_epsilon_delta=(
            min_entropy_leakage_bound(eps, dlt) if math.isfinite(eps) else LN2
        ),
        tail_alpha=t_alpha,
        tail=tail,
        conditional_tail=conditional_tail,
        releases_for_bits=MappingProxyType(releases),
        conditional_releases_for_bits=(
            None if conditional_releases is None else MappingProxyType(conditional_releases)
        ),
        rows=n_rows,
        expected_exposed_individuals=exposed,
        group_size=k,
        group=group_explanation,
        warnings=tuple(warnings),
        profile=profile,
        results=_results(eps if is_pure else math.inf, c1, n_rows, k),
    )


def _results(pure: float, mi_nats: float | None, rows: int | None, group: int) -> tuple[str, ...]:
    """What four results of the literature add for a reader of this profile (nats inside,
    bits where a reader compares with a file size); the formulas are in
    :mod:`infodp.channel.relations`.

    - pure ε: the posterior of an attacker who knows every other row moves by at most
      e^{±ε} relative to the prior (ε covering any change of the last row), so one output
      lowers the attacker's entropy about that row by at most ε nats (ε-information privacy,
      Calmon & Fawaz 2012, Theorem 4); a prior that already tells two values apart by ε_X
      nats leaves them at most ε + ε_X apart afterwards
      (identifiability, Wang, Ying & Zhang 2016);
    - pure ε and a row count N: the release tells at most 2εN nats about the whole table,
      whatever its distribution (McGregor et al. 2010, Prop. 4.1, one party's input fixed);
    - a group of k > 1: the group figures come from ε and the Rényi curve; the α = 1 figure
      alone (MI-DP) would bound no group (Cuff & Yu 2016, Example 5.1).

    >>> [line.split()[0] for line in _results(0.5, 0.1, 1000, 2)]
    ['Against', 'If', 'About', 'The']
    """

    # The two figures are infodp.channel.relations.dp_from_information_privacy (2ε) and
    # .information_cost_bound (2εN), written out here so that a query's price, which calls
    # explain(), does not import the channel solvers and numpy (a test checks they agree).
    def dp_from_information_privacy(eps: float) -> float:
        return 2.0 * eps

    def information_cost_bound(eps: float, n: int) -> float:
        return 2.0 * eps * n

    out: list[str] = []
    if math.isfinite(pure):
        out.append(
            "Against an attacker who knows every other row, one output lowers the "
            f"attacker's entropy about the last row by at most {_num(pure)} nats "
            f"({_num(pure / LN2)} bits) when epsilon covers replacing that row (twice that "
            "under add/remove neighbours): the posterior stays within e^epsilon of the prior, "
            "i.e. epsilon-information privacy (Calmon & Fawaz 2012, Thm 4; the converse gives "
            f"back only {_num(dp_from_information_privacy(pure))}-DP)."
        )
        out.append(
            "If the attacker's prior already favours one value over another by e^x, the "
            f"posterior favours it by at most e^(x + {_num(pure)}) (identifiability, Wang, "
            "Ying & Zhang 2016)."
        )
        if rows is not None and pure > 0:
            total = information_cost_bound(pure, rows)
            out.append(
                f"About the whole table of {rows} rows the release tells at most "
                f"{_num(total)} nats ({_num(total / LN2)} bits) whatever its distribution "
                "(2 epsilon N; McGregor et al. 2010, Prop. 4.1)."
            )
    if group > 1 and mi_nats is not None:
        out.append(
            "The group figures come from epsilon and the Renyi curve: the alpha = 1 figure "
            f"alone ({_num(mi_nats)} nats per individual, MI-DP) would bound no group "
            "(Cuff & Yu 2016, Example 5.1)."
        )
    return tuple(out)


def explain_epsilon_delta(
    epsilon: Any,
    delta: Any = 0.0,
    *,
    rows: Any = None,
    group: Any = 1,
    tail_alpha: Any = 2.0,
) -> Explanation:
    """Explain a bare (ε, δ) guarantee (δ = 0: pure ε-DP).

    Uses ``pure_dp_profile(ε)`` or ``approximate_dp_profile(ε, δ)`` from
    :mod:`infodp.accounting`: the tight consequences of (ε, δ) alone.

    >>> e = explain_epsilon_delta(1.0, 0.01, rows=500)
    >>> e.bits["inf"] is None, e.unbounded_probability, len(e.warnings)
    (True, 0.01, 2)
    """
    from infodp.accounting import approximate_dp_profile, pure_dp_profile

    eps = as_nonnegative("epsilon", epsilon)
    dlt = as_probability("delta", delta)
    profile = pure_dp_profile(eps) if dlt == 0.0 else approximate_dp_profile(eps, dlt)
    return explain(
        profile,
        epsilon=eps,
        rows=rows,
        group=group,
        tail_alpha=tail_alpha,
    )


def profile_tradeoff(
    profile: ProfileLike,
    fpr: Any,
    *,
    epsilon: Any = None,
    delta: Any = None,
    grid: int = 64,
) -> npt.NDArray[np.float64]:
    """Hypothesis-testing trade-off implied by a profile: the least FNR at each FPR.

    A mechanism that is (ε, δ(ε))-DP for every ε satisfies every KOV region at once, so its
    trade-off function is at least sup_ε f_{ε,δ(ε)} (Dong, Roth & Su 2022, Prop. 2.12; KOV
    2015, Thm 2.1). We take the sup over a grid of ε (plus the pure ε and the given pair); as
    each δ(ε) is an upper bound, the curve lies on or below the true one: attackers can do no
    better than this region.

    >>> [round(float(v), 4) for v in profile_tradeoff(_pure(1.0), [0.1, 0.5])]
    [0.7282, 0.1839]
    """
    x = np.asarray(fpr, dtype=np.float64)
    pairs: list[tuple[float, float]] = []
    pure = _call(profile.pure_epsilon)
    if math.isfinite(pure):
        pairs.append((pure, 0.0))
    if epsilon is not None and delta is not None and math.isfinite(float(epsilon)):
        pairs.append((float(epsilon), float(delta)))
    hi = pure if math.isfinite(pure) else _call(lambda: profile.epsilon(1e-10))
    if not math.isfinite(hi):
        given = float(epsilon or 0.0)  # may be ∞ (an (ε, δ) profile read at a smaller δ)
        hi = max(4.0 * given if math.isfinite(given) else 0.0, 10.0)
    for e in np.linspace(0.0, hi, grid):
        d = min(1.0, max(0.0, _call(functools.partial(profile.delta, float(e)))))
        if d < 1.0:
            pairs.append((float(e), d))
    out = np.zeros_like(x)
    for e, d in pairs:
        out = np.maximum(out, tradeoff_fnr(x, e, d))
    return out


def _pure(epsilon: float) -> ProfileLike:
    from infodp.accounting import pure_dp_profile

    profile: ProfileLike = pure_dp_profile(epsilon)
    return profile
