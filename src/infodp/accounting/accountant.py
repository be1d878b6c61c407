"""The budget accountant: spend profiles against a budget, never overspend, persist as JSON.

A budget is given in one currency:

- ``Budget.pure(ε)``: pure ε-DP; spends add pure ε (Dwork & Roth 2014, Theorem 3.16);
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

Additive currencies are kept as exact rationals (``fractions.Fraction`` of the float costs,
which are themselves upper bounds), so the running total never drifts. A spend may also
*declare* the exact (ε, δ) it was calibrated to (``spend(p, epsilon=Fraction(1, 10))``,
checked against the profile): pure budgets then add the exact ε, and an approx budget accepts
a sequence whose declared (ε, δ) sum within it (basic composition, Dwork & Roth 2014,
Thm 3.16) even where the float PLD would round a hair over — so ten spends of 0.1 fit in 1
in every currency.

The state is a multiset of (profile, count, declared) — identical spends are merged — so its
size, the JSON and the approx check grow with the number of *distinct* spends only.

>>> from infodp.accounting import laplace_profile
>>> acc = Accountant(Budget.pure(1.0))
>>> acc.spend(laplace_profile(scale=2.0))        # ε = 0.5
>>> acc.can_spend(laplace_profile(scale=1.0))    # another ε = 1 would overspend
False
>>> acc.remaining()
0.5
>>> Accountant.from_json(acc.to_json()).remaining()
0.5
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from infodp._validate import as_alpha, as_nonnegative, as_probability
from infodp.accounting.profile import PrivacyProfile, compose
from infodp.accounting.spec import profile_from_spec, profile_to_spec
from infodp.errors import BudgetExceeded, InternalError, ParameterError

__all__ = ["CURRENCIES", "Accountant", "Budget"]

CURRENCIES = ("pure", "approx", "rdp", "zcdp", "nats")
"""The budget currencies understood by :class:`Budget`."""

_STATE_VERSION = 2


@dataclass(frozen=True)
class Budget:
    """A privacy budget in one currency (immutable). Build it with the class methods.

    >>> Budget.approx(1.0, 1e-6).currency
    'approx'
    """

    currency: str
    epsilon: float = math.inf
    delta: float = 0.0
    alpha: float = math.inf
    orders: tuple[float, ...] = ()
    epsilons: tuple[float, ...] = ()

    @classmethod
    def pure(cls, epsilon: float) -> Budget:
        """Pure ε-DP budget."""
        return cls("pure", epsilon=as_nonnegative("epsilon", epsilon))

    @classmethod
    def approx(cls, epsilon: float, delta: float) -> Budget:
        """(ε, δ)-DP budget."""
        return cls(
            "approx",
            epsilon=as_nonnegative("epsilon", epsilon),
            delta=as_probability("delta", delta),
        )

    @classmethod
    def rdp(cls, orders: Sequence[float], epsilons: Sequence[float]) -> Budget:
        """Rényi-DP curve budget: ε(α) ≤ epsilons[i] at each orders[i] (α ∈ [1, ∞])."""
        a = tuple(as_alpha("orders", x, minimum=1.0) for x in orders)
        e = tuple(as_nonnegative("epsilons", x) for x in epsilons)
        if not a or len(a) != len(e):
            raise ParameterError("orders", list(orders), "a non-empty list as long as epsilons")
        return cls("rdp", orders=a, epsilons=e)

    @classmethod
    def zcdp(cls, rho: float) -> Budget:
        """ρ-zCDP budget (Bun & Steinke 2016)."""
        return cls("zcdp", epsilon=as_nonnegative("rho", rho))

    @classmethod
    def nats(cls, alpha: float, nats: float) -> Budget:
        """Information budget: at most ``nats`` nats per individual at level α."""
        return cls(
            "nats",
            alpha=as_alpha("alpha", alpha, minimum=1.0),
            epsilon=as_nonnegative("nats", nats),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (inverse of :meth:`from_dict`)."""
        if self.currency == "pure":
            return {"currency": "pure", "epsilon": self.epsilon}
        if self.currency == "approx":
            return {"currency": "approx", "epsilon": self.epsilon, "delta": self.delta}
        if self.currency == "rdp":
            return {"currency": "rdp", "orders": list(self.orders), "epsilons": list(self.epsilons)}
        if self.currency == "zcdp":
            return {"currency": "zcdp", "rho": self.epsilon}
        return {"currency": "nats", "alpha": self.alpha, "nats": self.epsilon}

    @classmethod
    def from_dict(cls, obj: Any) -> Budget:
        """Validate and build a budget from :meth:`to_dict` output."""
        if not isinstance(obj, dict) or obj.get("currency") not in CURRENCIES:
            raise ParameterError("budget", obj, f"an object with currency in {CURRENCIES}")
        cur = obj["currency"]
        keys = {
            "pure": {"epsilon"},
            "approx": {"epsilon", "delta"},
            "rdp": {"orders", "epsilons"},
            "zcdp": {"rho"},
            "nats": {"alpha", "nats"},
        }[cur]
        if set(obj) - {"currency"} != keys:
            raise ParameterError("budget", sorted(obj), f"keys currency, {', '.join(sorted(keys))}")
        alpha = _float_from_json(obj["alpha"]) if cur == "nats" else 0.0
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
        return cls.nats(alpha, obj["nats"])


def _float_from_json(x: Any) -> float:
    return math.inf if x == "inf" else x


def _to_json_float(x: float) -> float | str:
    return "inf" if math.isinf(x) else x


def _fraction(x: float) -> Fraction:
    if math.isnan(x):
        raise InternalError("NaN privacy cost")
    return Fraction(x)


Declared = tuple[Fraction, Fraction] | None


@dataclass
class Accountant:
    """Spends privacy profiles against a :class:`Budget`; the only stateful accounting object.

    ``spend`` raises :class:`~infodp.errors.BudgetExceeded` (naming requested, remaining and
    the gap) *before* anything is recorded, so a curator calls it before releasing.
    """

    budget: Budget
    #: (spec key) -> [profile, count, declared (ε, δ) or None]; identical spends merged.
    _spent: dict[tuple[str, Declared], list[Any]] = field(default_factory=dict)
    _totals: list[Fraction] = field(default_factory=list)  # additive currencies
    #: Sums of the declared (ε, δ) (None once a spend declared nothing): basic composition.
    _declared: tuple[Fraction, Fraction] | None = (Fraction(0), Fraction(0))

    def __post_init__(self) -> None:
        if not isinstance(self.budget, Budget):
            raise ParameterError("budget", self.budget, "a Budget")
        if not self._totals:
            self._totals = [Fraction(0)] * self._width()

    # ---- costs ----------------------------------------------------------------------------
    def _width(self) -> int:
        return len(self.budget.orders) if self.budget.currency == "rdp" else 1

    def _cost(self, profile: PrivacyProfile, declared: Declared = None) -> list[Fraction | None]:
        """The spend's cost per tracked total (None: infinite)."""
        b = self.budget
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
        raise InternalError(f"no additive cost in currency {b.currency}")

    def _limits(self) -> list[Fraction]:
        b = self.budget
        return [_fraction(x) for x in (b.epsilons if b.currency == "rdp" else [b.epsilon])]

    def _approx_delta(self, extra: PrivacyProfile | None = None) -> float:
        parts = [p.repeat(k) if k > 1 else p for p, k, _ in self._spent.values()]
        if extra is not None:
            parts.append(extra)
        if not parts:
            return 0.0
        return compose(*parts).delta(self.budget.epsilon)

    # ---- public API -----------------------------------------------------------------------
    def can_spend(self, profile: PrivacyProfile, *, epsilon: Any = None, delta: Any = 0) -> bool:
        """Dry run: would :meth:`spend` accept ``profile``? Nothing is recorded."""
        return self._check(profile, _declared(profile, epsilon, delta)) is None

    def spend(self, profile: PrivacyProfile, *, epsilon: Any = None, delta: Any = 0) -> None:
        """Record ``profile`` as spent, or raise BudgetExceeded and record nothing.

        ``epsilon`` (and ``delta``): the exact (ε, δ)-DP guarantee the spend was calibrated
        to (a Fraction or exact decimal text); it must agree with the profile (ParameterError
        otherwise) and makes pure-ε sums exact.
        """
        declared = _declared(profile, epsilon, delta)
        self._record(profile, declared, 1)

    def _record(self, profile: PrivacyProfile, declared: Declared, count: int) -> None:
        problem = self._check(profile, declared, count)
        if problem is not None:
            raise BudgetExceeded(*problem)
        if self.budget.currency != "approx":
            cost = self._cost(profile, declared)
            self._totals = [t + (c or 0) * count for t, c in zip(self._totals, cost, strict=True)]
        self._declared = _add(self._declared, _times(declared, count))
        key = (json.dumps(profile_to_spec(profile), sort_keys=True), declared)
        item = self._spent.get(key)
        if item is None:
            self._spent[key] = [profile, count, declared]
        else:
            item[1] += count

    def _check(
        self, profile: PrivacyProfile, declared: Declared, count: int = 1
    ) -> tuple[str, str, str] | None:
        """Why ``count`` spends of ``profile`` would overspend (None: they fit)."""
        if not isinstance(profile, PrivacyProfile):
            raise ParameterError("profile", profile, "a PrivacyProfile")
        b = self.budget
        if b.currency == "approx":
            basic = _add(self._declared, _times(declared, count))
            if (
                basic is not None
                and basic[0] <= _fraction(b.epsilon)
                and basic[1] <= _fraction(b.delta)
            ):
                return None  # basic composition of the declared (ε, δ) (Thm 3.16)
            before = self._approx_delta()
            after = self._approx_delta(profile.repeat(count) if count > 1 else profile)
            if after <= b.delta:
                return None
            eps = f"at ε={b.epsilon:g}"
            return (
                f"δ+{after - before:.6g} {eps}",
                f"δ={max(b.delta - before, 0.0):.6g} {eps}",
                f"δ={after - b.delta:.6g}",
            )
        unit = {"pure": "ε", "rdp": "RDP ε", "zcdp": "ρ", "nats": "nats"}[b.currency]
        cost = [None if c is None else c * count for c in self._cost(profile, declared)]
        for i, (total, c, limit) in enumerate(zip(self._totals, cost, self._limits(), strict=True)):
            if c is None or total + c > limit:
                where = f" at α={b.orders[i]:g}" if b.currency == "rdp" else ""
                if b.currency == "nats":
                    where = f" at level α={b.alpha:g}"
                remaining = limit - total
                shown = math.inf if c is None else float(c)
                gap = math.inf if c is None else float(total + c - limit)
                return (
                    f"{unit}={shown:.6g}{where}",
                    f"{unit}={float(remaining):.6g}{where}",
                    f"{unit}={gap:.6g}{where}",
                )
        return None

    def spent(self) -> tuple[PrivacyProfile, ...]:
        """The profiles spent so far (each repeated by its count; order not kept)."""
        return tuple(p for p, k, _ in self._spent.values() for _ in range(k))

    def remaining(self) -> float | dict[float, float] | dict[str, float]:
        """What is left, in the budget's currency.

        pure/zcdp/nats: a float (ε, ρ or nats, rounded down); rdp: {order: ε left}; approx:
        ``{"delta": δ left at the budget ε, "epsilon_spent": ε(δ) of the spends so far}``.
        """
        b = self.budget
        if b.currency == "approx":
            used = self._approx_delta()
            if self._declared is not None and self._declared[0] <= _fraction(b.epsilon):
                used = min(used, float(self._declared[1]))
            parts = [p.repeat(k) if k > 1 else p for p, k, _ in self._spent.values()]
            eps_spent = compose(*parts).epsilon(b.delta) if parts else 0.0
            if self._declared is not None and self._declared[1] <= _fraction(b.delta):
                eps_spent = min(eps_spent, float(self._declared[0]))
            return {"delta": max(b.delta - used, 0.0), "epsilon_spent": eps_spent}
        left = [_round_down(lim - t) for t, lim in zip(self._totals, self._limits(), strict=True)]
        if b.currency == "rdp":
            return dict(zip(b.orders, left, strict=True))
        return left[0]

    # ---- persistence ----------------------------------------------------------------------
    def to_json(self) -> str:
        """Serialise budget and spends (a multiset of specs, exact totals as fractions)."""
        budget: dict[str, Any] = {}
        for key, value in self.budget.to_dict().items():
            if isinstance(value, float):
                budget[key] = _to_json_float(value)
            elif isinstance(value, list):
                budget[key] = [_to_json_float(float(x)) for x in value]
            else:
                budget[key] = value
        spent = []
        for (spec, declared), (_, k, _) in self._spent.items():
            item: dict[str, Any] = {"spec": json.loads(spec), "count": k}
            if declared is not None:
                item["declared"] = [str(declared[0]), str(declared[1])]
            spent.append(item)
        state = {
            "version": _STATE_VERSION,
            "budget": budget,
            "spent": spent,
            "totals": [str(t) for t in self._totals],
        }
        return json.dumps(state, allow_nan=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Accountant:
        """Load a state written by :meth:`to_json`, validating everything.

        The totals are recomputed from the spent profiles and must match the stored ones, and
        they must be within the budget; otherwise ParameterError (a tampered or corrupt file).
        """
        try:
            state = json.loads(text)
        except (TypeError, ValueError):
            raise ParameterError("state", "<unparsable>", "a JSON accountant state") from None
        if not isinstance(state, dict) or set(state) != {"version", "budget", "spent", "totals"}:
            raise ParameterError("state", "<object>", "keys version, budget, spent, totals")
        if state["version"] not in (1, _STATE_VERSION):
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
            try:
                acc._record(profile, declared, count)
            except BudgetExceeded as err:
                raise ParameterError(
                    f"{where} exceeds the budget ({err}); the state is corrupt."
                ) from None
        try:
            stored = [Fraction(t) for t in state["totals"]]
        except (TypeError, ValueError, ZeroDivisionError):
            raise ParameterError("state.totals", state["totals"], "a list of fractions") from None
        if stored != acc._totals:
            raise ParameterError(
                "state.totals", state["totals"], "the totals of the spent profiles (corrupt state)"
            )
        return acc


def _finite(x: float) -> Fraction | None:
    return None if math.isinf(x) else _fraction(x)


def _ratio(text: Any) -> Any:
    """An exact ratio "p/q" as stored by :meth:`Accountant.to_json` (bounded length)."""
    if isinstance(text, str) and len(text) <= 2000 and re.fullmatch(r"\d+(/[1-9]\d*)?", text):
        return Fraction(text)
    raise ParameterError("state.spent.declared", str(text)[:40], "exact ratios p/q")


def _pair(dec: Any, where: str) -> tuple[Any, Any]:
    if not isinstance(dec, list) or len(dec) != 2:
        raise ParameterError(f"{where}.declared", dec, "[epsilon, delta] as exact text")
    return dec[0], dec[1]


def _declared(profile: PrivacyProfile, epsilon: Any, delta: Any) -> Declared:
    """The exact (ε, δ) a spend declares, checked against its profile (None: none declared)."""
    if epsilon is None:
        return None
    from infodp._exact import parse_exact

    eps = parse_exact("epsilon", epsilon)
    dlt = parse_exact("delta", delta)
    if eps < 0 or not 0 <= dlt <= 1:
        raise ParameterError("epsilon/delta", (str(eps), str(dlt)), "ε ≥ 0 and δ in [0, 1]")
    # The profile's float bounds may exceed the exact calibration by rounding only.
    tol = 1 + 1e-9
    if dlt == 0:
        ok = profile.pure_epsilon() <= float(eps) * tol
    else:
        ok = profile.delta(float(eps)) <= float(dlt) * tol
    if not ok:
        raise ParameterError(
            "epsilon", str(eps), f"an (ε, δ) = ({eps}, {dlt}) guarantee the profile meets"
        )
    return (eps, dlt)


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


def _round_down(x: Fraction) -> float:
    """Largest float ≤ x (remaining budget is never overstated)."""
    f = float(x)
    return f if Fraction(f) <= x else math.nextafter(f, -math.inf)
