"""The budget accountant: spend profiles against a budget, never overspend, persist as JSON.

A budget is given in one currency:

- ``Budget.basic(ε, δ)``: the exact (ε, δ) of the spends add up (basic sequential
  composition, Dwork & Roth 2014, Theorem 3.16);
- ``Budget.pure(ε)``: pure ε-DP; spends add pure ε (ibid.);
- ``Budget.approx(ε, δ)``: (ε, δ)-DP; the whole sequence of spends is composed with the tight
  PLD/RDP machinery and a spend is allowed only if the composition still has δ(ε) ≤ δ;
- ``Budget.rdp(orders, epsilons)``: a Rényi-DP curve; the spent RDP at *every* listed order
  must stay within the curve (Mironov 2017, Proposition 1: RDP adds at a fixed order);
- ``Budget.zcdp(ρ)``: zero-concentrated DP; spends add their ρ (Bun & Steinke 2016,
  Lemma 2.3), a pure ε-DP spend costs ε²/2 (ibid., Proposition 1.4);
- ``Budget.nats(α, nats)``: information at level α, in nats per individual; spends add their
  ``information(α)`` bound: the RDP ε(α) ("Differential Privacy and Information Theory",
  2022: capacity ≤ diameter, and the diameter composes additively at a fixed order by
  Mironov's Proposition 1), or at α = 1 a bound on the Shannon capacity (subadditive under
  composition by the chain rule of mutual information).

Budgets are exact: ε, δ, ρ and nats are :class:`~fractions.Fraction` values read by the one
converter of user text (:func:`infodp._exact.parse_exact`; a float means its shortest decimal,
so ``0.1`` is 1/10). Additive currencies keep exact running totals (fractions of the float
costs, which are themselves certified upper bounds), so the total never drifts. A spend may
also *declare* the exact (ε, δ) it was calibrated to (``spend(p, epsilon=Fraction(1, 10))``,
checked against the profile): basic and pure budgets then add the exact ε, and an approx
budget accepts a sequence whose declared (ε, δ) sum within it (basic composition) even where
the float PLD would round a hair over — so ten spends of 0.1 fit in 1 in every currency.

The state is a multiset of (profile, count, declared) — identical spends are merged — so its
size and the JSON grow with the number of *distinct* spends only, and every update is
incremental: a spend adds its cost to the running totals, :meth:`Accountant.refund` takes it
back out. An approx budget is checked cheapest first: the declared basic sum, then the RDP
totals at :data:`~infodp.accounting.rdp.DEFAULT_ORDERS` (RDP adds per order; converted with
:func:`~infodp.accounting.conversions.rdp_to_delta`), and only when both are too loose the
tight PLD of the whole multiset. PLD verdicts are remembered per budget as certificates: a
multiset whose PLD δ(ε) fits certifies every sub-multiset (dropping mechanisms is
post-processing, Dwork & Roth 2014, Proposition 2.1), and the check looks ahead along the
direction of the new spend (doubling, then bisection at the edge), so a run of identical
spends costs O(log n) PLD compositions in all, not one per spend. An approx budget with δ = 0
is pure ε-DP: after the declared sum it is decided on the exact sum of the spends' pure ε (the
largest loss of the composed dominating pairs), never on a float δ(ε) = 0, which rounding
returns for a loss within a few ulps above ε.

>>> from infodp.accounting import laplace_profile
>>> acc = Accountant(Budget.pure(1.0))
>>> acc.spend(laplace_profile(scale=2.0))        # ε = 0.5
>>> acc.can_spend(laplace_profile(scale=1.0))    # another ε = 1 would overspend
False
>>> acc.remaining()
0.5
>>> Accountant.from_json(acc.to_json()).remaining()
0.5
>>> basic = Accountant(Budget.basic("1", "1e-6"))
>>> for _ in range(10):
...     basic.spend(laplace_profile(scale=10.0), epsilon="0.1")
>>> basic.can_spend(laplace_profile(scale=10.0), epsilon="0.1")
False
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from infodp._exact import float_down as _down
from infodp._exact import float_up as _up
from infodp._exact import format_fraction, parse_ratio
from infodp._lazy import lazy_module
from infodp._np import np
from infodp._validate import as_alpha
from infodp.accounting import rdp as _rdp
from infodp.accounting.profile import (
    _PLD_ROUNDING,
    DEFAULT_INTERVAL,
    ApproximateDPProfile,
    PrivacyProfile,
    approximate_dp_profile,
    compose,
)
from infodp.accounting.spec import profile_from_spec, profile_to_spec
from infodp.errors import BudgetExceeded, InternalError, ParameterError

if TYPE_CHECKING:
    from infodp.accounting import conversions as _conv
    from infodp.accounting import pld as _pldlib
else:
    _pldlib = lazy_module("infodp.accounting.pld")
    _conv = lazy_module("infodp.accounting.conversions")  # the RDP and zCDP currencies only

__all__ = ["CURRENCIES", "Accountant", "Budget", "exact_amount"]

CURRENCIES = ("basic", "pure", "approx", "rdp", "zcdp", "nats")
"""The budget currencies understood by :class:`Budget`."""

_STATE_VERSION = 3

#: Relative slack added to float conversions that are not rounded up by construction.
_SLACK = 1e-12


def exact_amount(name: str, value: Any, *, probability: bool = False) -> Fraction:
    """A budget amount (ε, δ, ρ, nats) as an exact fraction: text, int, float (its shortest
    decimal), Fraction, or the "p/q" text this module writes back.

    >>> exact_amount("epsilon", 0.1), exact_amount("delta", "1e-6", probability=True)
    (Fraction(1, 10), Fraction(1, 1000000))
    >>> exact_amount("delta", 2, probability=True)
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: delta must be a probability in [0, 1]; got 2.
    """
    x = parse_ratio(name, value)
    if x < 0:
        raise ParameterError(name, value, "a non-negative number (>= 0)")
    if probability and x > 1:
        raise ParameterError(name, value, "a probability in [0, 1]")
    return x


def _shown(x: Fraction) -> float | str:
    """JSON form of an exact amount: a float when its shortest repr is exactly ``x``."""
    f = float(x)
    if math.isfinite(f) and parse_ratio("x", repr(f)) == x:
        return f
    return f"{x.numerator}/{x.denominator}"


@dataclass(frozen=True)
class Budget:
    """A privacy budget in one currency (immutable, exact). Build it with the class methods.

    ``epsilon`` holds ε (basic, pure, approx), ρ (zcdp) or the nats (nats).

    >>> Budget.approx(1.0, 1e-6).currency, Budget.approx(0.1, 0).epsilon
    ('approx', Fraction(1, 10))
    """

    currency: str
    epsilon: Fraction = Fraction(0)
    delta: Fraction = Fraction(0)
    alpha: float = math.inf
    orders: tuple[float, ...] = ()
    epsilons: tuple[float, ...] = ()

    @classmethod
    def basic(cls, epsilon: Any, delta: Any = 0) -> Budget:
        """(ε, δ) under basic composition: the spends' exact (ε, δ) add up."""
        return cls._epsilon_delta("basic", epsilon, delta)

    @classmethod
    def pure(cls, epsilon: Any) -> Budget:
        """Pure ε-DP budget."""
        return cls("pure", epsilon=exact_amount("epsilon", epsilon))

    @classmethod
    def approx(cls, epsilon: Any, delta: Any) -> Budget:
        """(ε, δ)-DP budget (tight PLD composition)."""
        return cls._epsilon_delta("approx", epsilon, delta)

    @classmethod
    def _epsilon_delta(cls, currency: str, epsilon: Any, delta: Any) -> Budget:
        return cls(
            currency,
            epsilon=exact_amount("epsilon", epsilon),
            delta=exact_amount("delta", delta, probability=True),
        )

    @classmethod
    def rdp(cls, orders: Sequence[float], epsilons: Sequence[float]) -> Budget:
        """Rényi-DP curve budget: ε(α) ≤ epsilons[i] at each orders[i] (α ∈ [1, ∞])."""
        a = tuple(as_alpha("orders", x, minimum=1.0) for x in orders)
        e = tuple(float(exact_amount("epsilons", x)) for x in epsilons)
        if not a or len(a) != len(e):
            raise ParameterError("orders", list(orders), "a non-empty list as long as epsilons")
        return cls("rdp", orders=a, epsilons=e)

    @classmethod
    def zcdp(cls, rho: Any) -> Budget:
        """ρ-zCDP budget (Bun & Steinke 2016)."""
        return cls("zcdp", epsilon=exact_amount("rho", rho))

    @classmethod
    def nats(cls, alpha: float, nats: Any) -> Budget:
        """Information budget: at most ``nats`` nats per individual at level α."""
        return cls(
            "nats",
            alpha=as_alpha("alpha", alpha, minimum=1.0),
            epsilon=exact_amount("nats", nats),
        )

    def _repr_html_(self) -> str:
        """The notebook view: the currency and its amounts.

        >>> "approx" in Budget.approx(1.0, 1e-6)._repr_html_()
        True
        """
        from infodp._report import summary_table

        rows = [("currency", self.currency)] + [
            (k, v) for k, v in self.to_dict().items() if k != "currency"
        ]
        return summary_table("Budget", rows)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (inverse of :meth:`from_dict`); amounts are floats when
        their shortest decimal is exact, else "p/q" text."""
        eps, dlt = _shown(self.epsilon), _shown(self.delta)
        if self.currency in ("basic", "approx"):
            return {"currency": self.currency, "epsilon": eps, "delta": dlt}
        if self.currency == "pure":
            return {"currency": "pure", "epsilon": eps}
        if self.currency == "rdp":
            return {"currency": "rdp", "orders": list(self.orders), "epsilons": list(self.epsilons)}
        if self.currency == "zcdp":
            return {"currency": "zcdp", "rho": eps}
        return {"currency": "nats", "alpha": self.alpha, "nats": eps}

    @classmethod
    def from_dict(cls, obj: Any) -> Budget:
        """Validate and build a budget from :meth:`to_dict` output."""
        if not isinstance(obj, dict) or obj.get("currency") not in CURRENCIES:
            raise ParameterError("budget", obj, f"an object with currency in {CURRENCIES}")
        cur = obj["currency"]
        keys = {
            "basic": {"epsilon", "delta"},
            "pure": {"epsilon"},
            "approx": {"epsilon", "delta"},
            "rdp": {"orders", "epsilons"},
            "zcdp": {"rho"},
            "nats": {"alpha", "nats"},
        }[cur]
        if set(obj) - {"currency"} != keys:
            raise ParameterError("budget", sorted(obj), f"keys currency, {', '.join(sorted(keys))}")
        if cur == "basic":
            return cls.basic(obj["epsilon"], obj["delta"])
        if cur == "pure":
            return cls.pure(obj["epsilon"])
        if cur == "approx":
            return cls.approx(obj["epsilon"], obj["delta"])
        if cur == "zcdp":
            return cls.zcdp(obj["rho"])
        if cur == "rdp":
            if not isinstance(obj["orders"], list) or not isinstance(obj["epsilons"], list):
                raise ParameterError("budget.orders", obj["orders"], "a list of orders")
            return cls.rdp([_float_from_json(x) for x in obj["orders"]], obj["epsilons"])
        return cls.nats(_float_from_json(obj["alpha"]), obj["nats"])


def _float_from_json(x: Any) -> Any:
    return math.inf if x == "inf" else x


def _to_json_float(x: Any) -> Any:
    return "inf" if isinstance(x, float) and math.isinf(x) else x


def _fraction(x: float) -> Fraction:
    if math.isnan(x):
        raise InternalError("NaN privacy cost")
    return Fraction(x)


Declared = tuple[Fraction, Fraction] | None
Key = tuple[str, Declared]
#: A multiset of spends: key -> count.
Counts = dict[Key, int]


@dataclass
class Accountant:
    """Spends privacy profiles against a :class:`Budget`; the only stateful accounting object.

    ``spend`` raises :class:`~infodp.errors.BudgetExceeded` (naming requested, remaining and
    the gap) *before* anything is recorded, so a curator calls it before releasing.
    """

    budget: Budget
    #: (spec key) -> [profile, count, declared (ε, δ) or None]; identical spends merged.
    _spent: dict[Key, list[Any]] = field(default_factory=dict)
    #: Additive totals (None: infinite): ε (pure), ρ (zcdp), nats or RDP at the budget's
    #: orders (rdp).
    _totals: list[Fraction | None] = field(default_factory=list)
    #: Sums of the declared (ε, δ) (None once a spend declared nothing): basic composition.
    _declared: tuple[Fraction, Fraction] | None = (Fraction(0), Fraction(0))

    def __post_init__(self) -> None:
        if not isinstance(self.budget, Budget):
            raise ParameterError("budget", self.budget, "a Budget")
        if not self._totals:
            self._totals = [Fraction(0)] * self._width()

    @classmethod
    def basic(cls, epsilon: Any, delta: Any, spent: tuple[Fraction, Fraction]) -> Accountant:
        """A basic-currency accountant whose spends so far are known by their sums only."""
        acc = cls(Budget.basic(epsilon, delta))
        acc._declared = (Fraction(spent[0]), Fraction(spent[1]))
        return acc

    def copy(self) -> Accountant:
        """An independent copy (the profiles themselves are immutable and shared)."""
        return Accountant(
            self.budget,
            {k: list(v) for k, v in self._spent.items()},
            list(self._totals),
            self._declared,
        )

    # ---- costs ----------------------------------------------------------------------------
    def _width(self) -> int:
        cur = self.budget.currency
        if cur == "rdp":
            return len(self.budget.orders)
        return 0 if cur in ("basic", "approx") else 1

    def _cost(self, profile: PrivacyProfile, declared: Declared = None) -> list[Fraction | None]:
        """The spend's cost per tracked total (None: infinite)."""
        b = self.budget
        if b.currency in ("basic", "approx"):
            return []  # approx: see _rdp_total
        if b.currency == "pure":
            if declared is not None and declared[1] == 0:
                return [declared[0]]
            return [_finite(profile.pure_epsilon())]
        exact_inf = declared[0] if declared is not None and declared[1] == 0 else None
        if b.currency == "rdp":
            # At α = ∞ the RDP of an ε-DP spend is ε: the exact declared value there.
            return [
                exact_inf if exact_inf is not None and math.isinf(a) else _finite(float(x))
                for a, x in zip(b.orders, np.atleast_1d(profile.rdp(list(b.orders))), strict=True)
            ]
        if b.currency == "zcdp":
            return [_rho(profile, declared)]
        if b.currency == "nats":
            if exact_inf is not None and math.isinf(b.alpha):
                return [exact_inf]  # information at α = ∞ is at most ε (the diameter)
            return [_finite(profile.information(b.alpha))]
        raise InternalError(f"no cost in currency {b.currency}")

    def _limits(self) -> list[Fraction]:
        b = self.budget
        if b.currency == "rdp":
            return [_fraction(x) for x in b.epsilons]
        return [b.epsilon]

    # ---- public API -----------------------------------------------------------------------
    def can_spend(self, profile: PrivacyProfile, *, epsilon: Any = None, delta: Any = 0) -> bool:
        """Dry run: would :meth:`spend` accept ``profile``? Nothing is recorded."""
        declared = self._declared_of(profile, epsilon, delta)
        return self._check(profile, declared, 1) is None

    def spend(self, profile: PrivacyProfile, *, epsilon: Any = None, delta: Any = 0) -> None:
        """Record ``profile`` as spent, or raise BudgetExceeded and record nothing.

        ``epsilon`` (and ``delta``): the exact (ε, δ)-DP guarantee the spend was calibrated
        to (a Fraction or exact decimal text); it must agree with the profile (ParameterError
        otherwise) and makes pure-ε sums exact. A basic budget needs it unless the profile
        is pure ε-DP.
        """
        declared = self._declared_of(profile, epsilon, delta)
        problem = self._check(profile, declared, 1)
        if problem is not None:
            raise BudgetExceeded(*problem)
        self._add(profile, declared, 1)

    def refund(self, profile: PrivacyProfile, *, epsilon: Any = None, delta: Any = 0) -> None:
        """Take back one earlier spend of exactly this profile and declaration (a release
        that never happened). The state is then what it would be without that spend."""
        declared = self._declared_of(profile, epsilon, delta)
        key = _key(profile, declared)
        item = self._spent.get(key)
        if item is None:
            raise InternalError("refund of a spend that was not recorded")
        cost = self._cost(profile, declared)
        self._totals = [
            None if t is None or c is None else t - c
            for t, c in zip(self._totals, cost, strict=True)
        ]
        if any(t is None for t in self._totals):
            self._totals = self._recomputed_totals(exclude=key)
        d = self._declared
        if d is not None and declared is not None:
            self._declared = (d[0] - declared[0], d[1] - declared[1])
        item[1] -= 1
        if item[1] == 0:
            del self._spent[key]
        if self._declared is None and all(v[2] is not None for v in self._spent.values()):
            self._declared = _sum_declared(self._spent.values())

    def _recomputed_totals(self, exclude: Key) -> list[Fraction | None]:
        totals: list[Fraction | None] = [Fraction(0)] * self._width()
        for key, (p, k, dec) in self._spent.items():
            count = k - 1 if key == exclude else k
            cost = self._cost(p, dec)
            totals = [
                None if t is None or c is None else t + c * count
                for t, c in zip(totals, cost, strict=True)
            ]
        return totals

    def _declared_of(self, profile: PrivacyProfile, epsilon: Any, delta: Any) -> Declared:
        if not isinstance(profile, PrivacyProfile):
            raise ParameterError("profile", profile, "a PrivacyProfile")
        declared = _declared(profile, epsilon, delta)
        if declared is None and self.budget.currency == "basic":
            eps = profile.pure_epsilon()
            if math.isinf(eps):
                raise ParameterError(
                    "epsilon", None, "the exact (ε, δ) of a spend that is not pure ε-DP"
                )
            declared = (_fraction(eps), Fraction(0))
        return declared

    def _add(self, profile: PrivacyProfile, declared: Declared, count: int) -> None:
        """Record ``count`` spends without checking (callers checked, or validate after)."""
        cost = self._cost(profile, declared)
        self._totals = [
            None if t is None or c is None else t + c * count
            for t, c in zip(self._totals, cost, strict=True)
        ]
        self._declared = _add(self._declared, _times(declared, count))
        key = _key(profile, declared)
        item = self._spent.get(key)
        if item is None:
            self._spent[key] = [profile, count, declared]
        else:
            item[1] += count

    def _check(
        self, profile: PrivacyProfile, declared: Declared, count: int
    ) -> tuple[str, str, str] | None:
        """Why ``count`` spends of ``profile`` would overspend (None: they fit)."""
        b = self.budget
        if b.currency == "basic":
            return self._check_basic(declared, count)
        if b.currency == "approx":
            return self._check_approx(profile, declared, count)
        unit = {"pure": "ε", "rdp": "RDP ε", "zcdp": "ρ", "nats": "nats"}[b.currency]
        cost = [None if c is None else c * count for c in self._cost(profile, declared)]
        for i, (total, c, limit) in enumerate(zip(self._totals, cost, self._limits(), strict=True)):
            if total is None or c is None or total + c > limit:
                where = f" at α={b.orders[i]:g}" if b.currency == "rdp" else ""
                if b.currency == "nats":
                    where = f" at level α={b.alpha:g}"
                remaining = limit - (total or 0)
                shown = math.inf if c is None else float(c)
                gap = math.inf if c is None or total is None else float(total + c - limit)
                return (
                    f"{unit}={shown:.6g}{where}",
                    f"{unit}={float(remaining):.6g}{where}",
                    f"{unit}={gap:.6g}{where}",
                )
        return None

    def _check_basic(self, declared: Declared, count: int) -> tuple[str, str, str] | None:
        b = self.budget
        d = _times(declared, count)
        spent = self._declared
        if d is None or spent is None:
            raise InternalError("a basic budget without exact (ε, δ) sums")
        if spent[0] + d[0] <= b.epsilon and spent[1] + d[1] <= b.delta:
            return None
        left = (max(Fraction(0), b.epsilon - spent[0]), max(Fraction(0), b.delta - spent[1]))
        gap = (max(Fraction(0), d[0] - left[0]), max(Fraction(0), d[1] - left[1]))
        return (
            f"epsilon={format_fraction(d[0])}, delta={format_fraction(d[1])}",
            f"epsilon={format_fraction(left[0])}, delta={format_fraction(left[1])}",
            f"epsilon={format_fraction(gap[0])}, delta={format_fraction(gap[1])}",
        )

    def _check_approx(
        self, profile: PrivacyProfile, declared: Declared, count: int
    ) -> tuple[str, str, str] | None:
        b = self.budget
        basic = _add(self._declared, _times(declared, count))
        if basic is not None and basic[0] <= b.epsilon and basic[1] <= b.delta:
            return None  # basic composition of the declared (ε, δ) (Thm 3.16)
        if b.delta == 0:
            return self._check_approx_pure(profile, count)
        if self._rdp_delta((profile, count)) <= b.delta:
            return None  # the RDP bound already fits (Mironov 2017, Proposition 1)
        counts = self._counts()
        key = _key(profile, declared)
        profiles = {k: v[0] for k, v in self._spent.items()}
        profiles[key] = profile
        if _fits(b, counts, profiles, key, count):
            return None
        before = _multiset_delta(b, counts, profiles) if counts else 0.0
        after = _multiset_delta(b, _plus(counts, key, count), profiles)
        eps = f"at ε={float(b.epsilon):g}"
        return (
            f"δ+{max(after - before, 0.0):.6g} {eps}",
            f"δ={max(float(b.delta) - before, 0.0):.6g} {eps}",
            f"δ={max(after - float(b.delta), 0.0):.6g}",
        )

    def _check_approx_pure(
        self, profile: PrivacyProfile, count: int
    ) -> tuple[str, str, str] | None:
        """:meth:`_check_approx` for δ = 0, decided on exact sums.

        (ε, 0)-DP is pure ε-DP: δ(ε) = 0 exactly when the composed privacy loss never exceeds
        ε, and the largest loss of the composed dominating pairs is the sum of the parts' pure
        ε (Dwork & Roth 2014, Theorem 3.16, tight for them). The PLD's float δ is not used
        here: for a loss within a few ulps above ε its sum A − e^ε·B cancels to exactly 0, so
        a spend one ulp over ε would read as fitting.
        """
        b = self.budget
        spent = _sum_pure(self._spent.values())
        cost = _pure_upper(profile)
        total = None if spent is None or cost is None else spent + count * cost
        if total is not None and total <= b.epsilon:
            return None
        left = None if spent is None else max(Fraction(0), b.epsilon - spent)
        return (
            f"ε={'inf' if cost is None else f'{float(cost * count):.6g}'} at δ=0",
            f"ε={'0' if left is None else f'{float(left):.6g}'} at δ=0",
            f"ε={'inf' if total is None else f'{float(total - b.epsilon):.6g}'} at δ=0",
        )

    def _counts(self) -> Counts:
        return {k: v[1] for k, v in self._spent.items()}

    def _rdp_total(self, extra: tuple[PrivacyProfile, int] | None = None) -> Any:
        """RDP of the spends (and ``extra``) at DEFAULT_ORDERS, summed per order (Mironov
        2017, Proposition 1), rounded up: a float sum of n non-negative terms is within a
        relative (n + 1)·2⁻⁵³ of the exact sum (Higham 2002, §4.2), so the slack covers it.

        A function of the multiset only, so an incremental state and a replay agree.
        """
        rows = [(p, k) for p, k, _ in self._spent.values()]
        if extra is not None:
            rows.append(extra)
        total = np.zeros(_rdp.DEFAULT_ORDERS.shape)
        for p, k in rows:
            total += k * p._rdp_grid()
        return total * (1 + (len(rows) + 3) * 2.0**-50)

    def _rdp_delta(self, extra: tuple[PrivacyProfile, int] | None = None) -> Fraction:
        """δ at the budget's ε from the spends' summed RDP (certified, rounded up)."""
        total = self._rdp_total(extra)
        ok = np.isfinite(total)
        if not ok.any():
            return Fraction(1)
        value = _conv.rdp_to_delta(total[ok], _rdp.DEFAULT_ORDERS[ok], _down(self.budget.epsilon))
        return Fraction(min(1.0, value * (1 + _SLACK)))

    def _repr_html_(self) -> str:
        """The notebook view: the budget, how many spends, and what is left.

        >>> from infodp.accounting import laplace_profile
        >>> acc = Accountant(Budget.pure(1.0))
        >>> acc.spend(laplace_profile(2.0))
        >>> "left" in acc._repr_html_()
        True
        """
        from infodp._report import summary_table

        left = self.remaining()
        rows: list[tuple[str, Any]] = [("currency", self.budget.currency)]
        rows += [(f"budget {k}", v) for k, v in self.budget.to_dict().items() if k != "currency"]
        rows.append(("spends", len(self.spent())))
        if isinstance(left, dict):
            rows += [(f"left {k}", v) for k, v in left.items()]
        else:
            rows.append(("left", left))
        return summary_table("Accountant", rows)

    def spent(self) -> tuple[PrivacyProfile, ...]:
        """The profiles spent so far (each repeated by its count), in a canonical order."""
        return tuple(
            self._spent[k][0]
            for k in sorted(self._spent, key=_sort_key)
            for _ in range(self._spent[k][1])
        )

    def remaining(self) -> float | dict[float, float] | dict[str, float]:
        """What is left, in the budget's currency.

        basic: ``{"epsilon": ε left, "delta": δ left}``; pure/zcdp/nats: a float (ε, ρ or
        nats, rounded down); rdp: {order: ε left}; approx: ``{"delta": δ left at the budget
        ε, "epsilon_spent": ε(δ) of the spends so far}``, each the least of the certified
        bounds from the declared sums and the RDP totals, and the tight PLD of the spends
        once those two no longer show them within the budget (so a figure may understate
        what is left by the RDP-vs-PLD gap, never overstate it).
        """
        b = self.budget
        if b.currency == "basic":
            d = self._declared or (Fraction(0), Fraction(0))
            return {
                "epsilon": _down(max(Fraction(0), b.epsilon - d[0])),
                "delta": _down(max(Fraction(0), b.delta - d[1])),
            }
        if b.currency == "approx":
            return self._approx_remaining()
        left = [
            0.0 if t is None else _down(max(Fraction(0), lim - t))
            for t, lim in zip(self._totals, self._limits(), strict=True)
        ]
        if b.currency == "rdp":
            return dict(zip(b.orders, left, strict=True))
        return left[0]

    def _approx_remaining(self) -> dict[str, float]:
        b = self.budget
        if not self._spent:
            return {"delta": _down(b.delta), "epsilon_spent": 0.0}
        used = self._rdp_delta()
        d = self._declared
        if d is not None and d[0] <= b.epsilon:
            used = min(used, d[1])
        total = self._rdp_total()
        ok = np.isfinite(total)
        eps_spent = math.inf
        if ok.any():
            eps_spent = _conv.rdp_to_epsilon(total[ok], _rdp.DEFAULT_ORDERS[ok], _down(b.delta)) * (
                1 + _SLACK
            )
        if d is not None and d[1] <= b.delta:
            eps_spent = min(eps_spent, _up(d[0]))
        if used > b.delta or eps_spent > b.epsilon:
            # Admitted by the PLD: only a PLD shows how much is left. It is read on a grid
            # that widens with the number of spends (a bounded number of points whatever the
            # history, so reporting stays O(1) per query); the connect-the-dots PLD is
            # pessimistic at any grid (Doroshenko et al. 2022), so the figures stay certified,
            # only a little looser than the admission's own PLD.
            pld_delta, pld_eps = self._coarse_pld(_down(b.epsilon), _down(b.delta))
            used = min(used, Fraction(pld_delta))
            eps_spent = min(eps_spent, pld_eps)
        return {"delta": _down(max(Fraction(0), b.delta - used)), "epsilon_spent": eps_spent}

    def _coarse_pld(self, epsilon: float, delta: float) -> tuple[float, float]:
        """(δ(ε), ε(δ)) upper bounds from a PLD of the spends on a grid of ~10⁴ points."""
        total = sum(k for _, k, _ in self._spent.values())
        scale = 2 ** max(0, math.ceil(math.log2(math.sqrt(total / 16)))) if total > 16 else 1
        profile = compose(*[p.repeat(k) if k > 1 else p for p, k, _ in self._spent.values()])
        try:
            pld = profile.pld(DEFAULT_INTERVAL * scale)
        except _pldlib.PLDTooLarge:
            return 1.0, math.inf
        # As PrivacyProfile.delta/epsilon: allow the float rounding of the PLD's sums.
        d = min(1.0, pld.delta(epsilon) + _PLD_ROUNDING)
        e = pld.epsilon(max(delta - _PLD_ROUNDING, min(delta, pld.infinity_mass)))
        if 0.0 < e < math.inf:
            e += 8 * math.ulp(max(e, 1.0))
        return d, e

    # ---- persistence ----------------------------------------------------------------------
    def to_json(self) -> str:
        """Serialise budget and spends (a canonical multiset of specs, exact totals)."""
        budget = {k: _to_json_float(v) for k, v in self.budget.to_dict().items()}
        if self.budget.currency == "rdp":
            budget["orders"] = [_to_json_float(float(x)) for x in self.budget.orders]
        spent = []
        for spec, declared in sorted(self._spent, key=_sort_key):
            item: dict[str, Any] = {
                "spec": json.loads(spec),
                "count": self._spent[(spec, declared)][1],
            }
            if declared is not None:
                item["declared"] = [str(declared[0]), str(declared[1])]
            spent.append(item)
        state = {
            "version": _STATE_VERSION,
            "budget": budget,
            "spent": spent,
            "totals": ["inf" if t is None else str(t) for t in self._totals],
        }
        return json.dumps(state, allow_nan=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Accountant:
        """Load a state written by :meth:`to_json`, validating everything.

        The totals are recomputed from the spent profiles and must match the stored ones, and
        the spends together must fit the budget; otherwise ParameterError (a tampered or
        corrupt file).
        """
        try:
            state = json.loads(text)
        except (TypeError, ValueError):
            raise ParameterError("state", "<unparsable>", "a JSON accountant state") from None
        if not isinstance(state, dict) or set(state) != {"version", "budget", "spent", "totals"}:
            raise ParameterError("state", "<object>", "keys version, budget, spent, totals")
        if state["version"] not in (1, 2, _STATE_VERSION):
            raise ParameterError("state.version", state["version"], f"{_STATE_VERSION}")
        budget = Budget.from_dict(state["budget"])
        if not isinstance(state["spent"], list):
            raise ParameterError("state.spent", state["spent"], "a list of profile specs")
        acc = cls(budget)
        for i, raw in enumerate(state["spent"]):
            where = f"state.spent[{i}]"
            legacy = not (isinstance(raw, dict) and "spec" in raw)
            item = {"spec": raw, "count": 1} if legacy else raw
            if not isinstance(item, dict) or not {"spec", "count"} <= set(item):
                raise ParameterError(where, "<item>", "an object with spec and count")
            profile = profile_from_spec(item["spec"], where=f"{where}.spec")
            count = item["count"]
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ParameterError(f"{where}.count", count, "a positive integer")
            dec = item.get("declared")
            declared = None if dec is None else _declared(profile, *map(_ratio, _pair(dec, where)))
            if declared is None and budget.currency == "basic":
                raise ParameterError(f"{where}.declared", None, "the exact (ε, δ) of the spend")
            acc._add(profile, declared, count)
        problem = acc._over_budget()
        if problem is not None:
            raise ParameterError(
                f"state.spent exceeds the budget ({problem}); the state is corrupt."
            )
        if state["version"] == _STATE_VERSION or budget.currency != "approx":
            if not isinstance(state["totals"], list):
                raise ParameterError("state.totals", state["totals"], "a list of fractions")
            try:
                stored = [None if t == "inf" else Fraction(t) for t in state["totals"]]
            except (TypeError, ValueError, ZeroDivisionError):
                raise ParameterError(
                    "state.totals", state["totals"], "a list of fractions"
                ) from None
            if stored != acc._totals:
                raise ParameterError(
                    "state.totals",
                    state["totals"],
                    "the totals of the spent profiles (corrupt state)",
                )
        return acc

    def _over_budget(self) -> str | None:
        """Why the whole recorded state overspends (None: it fits)."""
        b = self.budget
        if b.currency == "basic":
            d = self._declared
            if d is None or d[0] > b.epsilon or d[1] > b.delta:
                return "the declared (ε, δ) sum exceeds the budget"
            return None
        if b.currency == "approx":
            d = self._declared
            if d is not None and d[0] <= b.epsilon and d[1] <= b.delta:
                return None
            if not self._spent or self._rdp_delta() <= b.delta:
                return None
            counts = self._counts()
            profiles = {k: v[0] for k, v in self._spent.items()}
            if _known(b, counts) is True or _multiset_delta(b, counts, profiles) <= b.delta:
                _memo(b).remember(counts, True)
                return None
            return "δ at the budget ε exceeds the budget"
        for t, lim in zip(self._totals, self._limits(), strict=True):
            if t is None or t > lim:
                return "the spent total exceeds the budget"
        return None


# ---- PLD certificates (approx budgets) ------------------------------------------------------


class _FitMemo:
    """Multisets known to fit a budget (and known not to), for one budget."""

    __slots__ = ("no", "yes")

    def __init__(self) -> None:
        self.yes: list[Counts] = []
        self.no: list[Counts] = []

    def known(self, counts: Counts) -> bool | None:
        for cert in self.yes:
            if all(cert.get(k, 0) >= n for k, n in counts.items()):
                return True  # a sub-multiset of one that fits (post-processing)
        for cert in self.no:
            if all(counts.get(k, 0) >= n for k, n in cert.items()):
                return False  # contains one that does not fit: refusing is always safe
        return None

    def remember(self, counts: Counts, fits: bool) -> None:
        target = self.yes if fits else self.no
        target.append(dict(counts))
        del target[:-16]


_MEMOS: OrderedDict[Budget, _FitMemo] = OrderedDict()
_MEMO_LOCK = threading.Lock()


def _memo(budget: Budget) -> _FitMemo:
    with _MEMO_LOCK:
        memo = _MEMOS.get(budget)
        if memo is None:
            memo = _MEMOS[budget] = _FitMemo()
            while len(_MEMOS) > 256:
                _MEMOS.popitem(last=False)
        else:
            _MEMOS.move_to_end(budget)
        return memo


def _known(budget: Budget, counts: Counts) -> bool | None:
    with _MEMO_LOCK:
        memo = _MEMOS.get(budget)
        return None if memo is None else memo.known(counts)


def _plus(counts: Counts, key: Key, n: int) -> Counts:
    out = dict(counts)
    out[key] = out.get(key, 0) + n
    return out


def _multiset_delta(budget: Budget, counts: Counts, profiles: dict[Key, PrivacyProfile]) -> float:
    """Certified δ at the budget's ε (rounded down) of the composition of a multiset."""
    parts = [
        profiles[k].repeat(n) if n > 1 else profiles[k]
        for k, n in sorted(counts.items(), key=lambda kv: _sort_key(kv[0]))
        if n > 0
    ]
    return compose(*parts).delta(_down(budget.epsilon))


def _fits(
    budget: Budget, counts: Counts, profiles: dict[Key, PrivacyProfile], key: Key, count: int
) -> bool:
    """Whether ``counts`` plus ``count`` × ``key`` has PLD δ(ε) within the budget.

    Certified and tight: the verdict is the PLD's (min with RDP and pure ε) for the exact
    multiset, or a certificate from a larger multiset that fits. On a miss it looks ahead
    along ``key``: the largest extra count that still fits (doubling from the size of the
    state, then bisection) is remembered, so the next identical spends are answered from it.
    """
    memo = _memo(budget)
    target = _plus(counts, key, count)
    with _MEMO_LOCK:
        known = memo.known(target)
    if known is not None:
        return known

    def ok(extra: int) -> bool:
        multiset = _plus(counts, key, count + extra)
        with _MEMO_LOCK:
            hit = memo.known(multiset)
        if hit is not None:
            return hit
        fits = Fraction(_multiset_delta(budget, multiset, profiles)) <= budget.delta
        with _MEMO_LOCK:
            memo.remember(multiset, fits)
        return fits

    ahead = max(count, sum(target.values()))
    if ok(ahead):
        return True
    if not ok(0):
        return False
    lo, hi = 0, ahead  # ok(lo), not ok(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return True


# ---- helpers --------------------------------------------------------------------------------


def _key(profile: PrivacyProfile, declared: Declared) -> Key:
    return (json.dumps(profile_to_spec(profile), sort_keys=True), declared)


def _sort_key(key: Key) -> tuple[str, str]:
    spec, declared = key
    return (spec, "" if declared is None else f"{declared[0]}|{declared[1]}")


def _pure_upper(profile: PrivacyProfile) -> Fraction | None:
    """An exact upper bound on a profile's pure ε (None: it is not pure-DP): the smaller of
    its exact guarantee's ε (when that guarantee has δ = 0) and its pure ε rounded up."""
    pure = _finite(profile.pure_epsilon())
    exact = profile.exact_guarantee()
    if pure is None or exact is None or exact[1] != 0:
        return pure
    return min(pure, exact[0])


def _sum_pure(items: Any) -> Fraction | None:
    total = Fraction(0)
    for p, k, _ in items:
        pure = _pure_upper(p)
        if pure is None:
            return None
        total += k * pure
    return total


def _sum_declared(items: Any) -> tuple[Fraction, Fraction] | None:
    total: tuple[Fraction, Fraction] | None = (Fraction(0), Fraction(0))
    for _, k, dec in items:
        total = _add(total, _times(dec, k))
    return total


def _finite(x: float) -> Fraction | None:
    return None if math.isinf(x) else _fraction(x)


def _ratio(text: Any) -> Any:
    """An exact ratio "p/q" as stored by :meth:`Accountant.to_json` (bounded length)."""
    if isinstance(text, str) and len(text) <= 2000:
        try:
            return exact_amount("state.spent.declared", text)
        except ParameterError:
            pass
    raise ParameterError("state.spent.declared", str(text)[:40], "exact ratios p/q")


def _pair(dec: Any, where: str) -> tuple[Any, Any]:
    if not isinstance(dec, list) or len(dec) != 2:
        raise ParameterError(f"{where}.declared", dec, "[epsilon, delta] as exact text")
    return dec[0], dec[1]


def _declared(profile: PrivacyProfile, epsilon: Any, delta: Any) -> Declared:
    """The exact (ε, δ) a spend declares, checked against its profile (None: none declared)."""
    if epsilon is None:
        return None
    eps = exact_amount("epsilon", epsilon)
    dlt = exact_amount("delta", delta, probability=True)
    exact = profile.exact_guarantee()
    # The profile's float bounds may exceed the exact calibration by rounding only.
    tol = 1 + 1e-9
    if exact is not None and exact[0] <= eps and exact[1] <= dlt:
        ok = True  # the parts' exact (ε, δ) add to at most the declaration (Thm 3.16)
    elif isinstance(profile, ApproximateDPProfile):  # an (ε, δ) guarantee: compare it directly
        ok = profile.eps <= _up(eps) * tol and profile.delta_ <= _up(dlt) * tol
    elif dlt == 0:
        ok = profile.pure_epsilon() <= _up(eps) * tol
    else:
        ok = profile.delta(_up(eps)) <= _up(dlt) * tol
    if not ok:
        raise ParameterError(
            "epsilon", str(eps), f"an (ε, δ) = ({eps}, {dlt}) guarantee the profile meets"
        )
    return (eps, dlt)


def _guarantee_profile(epsilon: Fraction, delta: Fraction) -> PrivacyProfile:
    """The (ε, δ) profile of a spend known only by its exact guarantee (ε, δ rounded up)."""
    return approximate_dp_profile(_up(epsilon), min(1.0, _up(delta)))


def _times(d: Declared, count: int) -> Declared:
    return None if d is None else (d[0] * count, d[1] * count)


def _add(total: tuple[Fraction, Fraction] | None, d: Declared) -> tuple[Fraction, Fraction] | None:
    if total is None or d is None:
        return None
    return (total[0] + d[0], total[1] + d[1])


def _rho(profile: PrivacyProfile, declared: Declared) -> Fraction | None:
    """ρ of a spend: its profile's zCDP ρ, or ε²/2 for a pure ε-DP one (Bun & Steinke 2016,
    Proposition 1.4), the exact declared ε when there is one."""
    rho = profile.zcdp_rho()
    pure: Fraction | None = None
    if declared is not None and declared[1] == 0:
        pure = declared[0] * declared[0] / 2
    eps = profile.pure_epsilon()
    if math.isfinite(eps) and pure is None:
        pure = _fraction(eps) * _fraction(eps) / 2
    options = [x for x in (None if rho is None else _fraction(rho), pure) if x is not None]
    return min(options) if options else None
