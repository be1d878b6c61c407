"""The budget accountant: spend profiles against a budget, never overspend, persist as JSON.

A budget is given in one currency:

- ``Budget.pure(ε)``: pure ε-DP; spends add pure ε (Dwork & Roth 2014, Theorem 3.16);
- ``Budget.approx(ε, δ)``: (ε, δ)-DP; the whole sequence of spends is composed with the tight
  PLD/RDP machinery and a spend is allowed only if the composition still has δ(ε) ≤ δ;
- ``Budget.rdp(orders, epsilons)``: a Rényi-DP curve; the spent RDP at *every* listed order
  must stay within the curve (Mironov 2017, Proposition 1: RDP adds at a fixed order);
- ``Budget.nats(α, nats)``: information at level α, in nats per individual; spends add their
  ``information(α)`` bound: the RDP ε(α) ("Differential Privacy and Information Theory",
  2022: capacity ≤ diameter, and the diameter composes additively at a fixed order by
  Mironov's Proposition 1), or at α = 1 a bound on the Shannon capacity (subadditive under
  composition by the chain rule of mutual information).

Additive currencies are kept as exact rationals (``fractions.Fraction`` of the float costs,
which are themselves upper bounds), so the running total never drifts.

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

CURRENCIES = ("pure", "approx", "rdp", "nats")
"""The budget currencies understood by :class:`Budget`."""

_STATE_VERSION = 1


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
            "nats": {"alpha", "nats"},
        }[cur]
        if set(obj) - {"currency"} != keys:
            raise ParameterError("budget", sorted(obj), f"keys currency, {', '.join(sorted(keys))}")
        alpha = _float_from_json(obj["alpha"]) if cur == "nats" else 0.0
        if cur == "pure":
            return cls.pure(obj["epsilon"])
        if cur == "approx":
            return cls.approx(obj["epsilon"], obj["delta"])
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


@dataclass
class Accountant:
    """Spends privacy profiles against a :class:`Budget`; the only stateful accounting object.

    ``spend`` raises :class:`~infodp.errors.BudgetExceeded` (naming requested, remaining and
    the gap) *before* anything is recorded, so a curator calls it before releasing.
    """

    budget: Budget
    _spent: list[PrivacyProfile] = field(default_factory=list)
    _totals: list[Fraction] = field(default_factory=list)  # additive currencies

    def __post_init__(self) -> None:
        if not isinstance(self.budget, Budget):
            raise ParameterError("budget", self.budget, "a Budget")
        if not self._totals:
            self._totals = [Fraction(0)] * self._width()

    # ---- costs ----------------------------------------------------------------------------
    def _width(self) -> int:
        return len(self.budget.orders) if self.budget.currency == "rdp" else 1

    def _cost(self, profile: PrivacyProfile) -> list[float]:
        b = self.budget
        if b.currency == "pure":
            return [profile.pure_epsilon()]
        if b.currency == "rdp":
            return [float(x) for x in np.atleast_1d(profile.rdp(list(b.orders)))]
        if b.currency == "nats":
            return [profile.information(b.alpha)]
        raise InternalError(f"no additive cost in currency {b.currency}")

    def _limits(self) -> list[float]:
        b = self.budget
        return list(b.epsilons) if b.currency == "rdp" else [b.epsilon]

    def _approx_delta(self, profiles: list[PrivacyProfile]) -> float:
        if not profiles:
            return 0.0
        return compose(*profiles).delta(self.budget.epsilon)

    # ---- public API -----------------------------------------------------------------------
    def can_spend(self, profile: PrivacyProfile) -> bool:
        """Dry run: would :meth:`spend` accept ``profile``? Nothing is recorded."""
        return self._check(profile) is None

    def spend(self, profile: PrivacyProfile) -> None:
        """Record ``profile`` as spent, or raise BudgetExceeded and record nothing."""
        problem = self._check(profile)
        if problem is not None:
            raise BudgetExceeded(*problem)
        if self.budget.currency != "approx":
            cost = self._cost(profile)
            self._totals = [t + _fraction(c) for t, c in zip(self._totals, cost, strict=True)]
        self._spent.append(profile)

    def _check(self, profile: PrivacyProfile) -> tuple[str, str, str] | None:
        if not isinstance(profile, PrivacyProfile):
            raise ParameterError("profile", profile, "a PrivacyProfile")
        b = self.budget
        if b.currency == "approx":
            before = self._approx_delta(self._spent)
            after = self._approx_delta([*self._spent, profile])
            if after <= b.delta:
                return None
            eps = f"at ε={b.epsilon:g}"
            return (
                f"δ+{after - before:.6g} {eps}",
                f"δ={max(b.delta - before, 0.0):.6g} {eps}",
                f"δ={after - b.delta:.6g}",
            )
        unit = {"pure": "ε", "rdp": "RDP ε", "nats": "nats"}[b.currency]
        cost = self._cost(profile)
        for i, (total, c, limit) in enumerate(zip(self._totals, cost, self._limits(), strict=True)):
            if math.isinf(c) or total + _fraction(c) > _fraction(limit):
                where = f" at α={b.orders[i]:g}" if b.currency == "rdp" else ""
                if b.currency == "nats":
                    where = f" at level α={b.alpha:g}"
                remaining = _fraction(limit) - total
                gap = math.inf if math.isinf(c) else float(total + _fraction(c) - _fraction(limit))
                return (
                    f"{unit}={c:.6g}{where}",
                    f"{unit}={float(remaining):.6g}{where}",
                    f"{unit}={gap:.6g}{where}",
                )
        return None

    def spent(self) -> tuple[PrivacyProfile, ...]:
        """The profiles spent so far, in order."""
        return tuple(self._spent)

    def remaining(self) -> float | dict[float, float] | dict[str, float]:
        """What is left, in the budget's currency.

        pure/nats: a float (ε or nats, rounded down); rdp: {order: ε left}; approx:
        ``{"delta": δ left at the budget ε, "epsilon_spent": ε(δ) of the spends so far}``.
        """
        b = self.budget
        if b.currency == "approx":
            used = self._approx_delta(self._spent)
            eps_spent = compose(*self._spent).epsilon(b.delta) if self._spent else 0.0
            return {"delta": max(b.delta - used, 0.0), "epsilon_spent": eps_spent}
        left = [
            _round_down(_fraction(lim) - t)
            for t, lim in zip(self._totals, self._limits(), strict=True)
        ]
        if b.currency == "rdp":
            return dict(zip(b.orders, left, strict=True))
        return left[0]

    # ---- persistence ----------------------------------------------------------------------
    def to_json(self) -> str:
        """Serialise budget and spends (profiles as specs, exact totals as fractions)."""
        budget: dict[str, Any] = {}
        for key, value in self.budget.to_dict().items():
            if isinstance(value, float):
                budget[key] = _to_json_float(value)
            elif isinstance(value, list):
                budget[key] = [_to_json_float(float(x)) for x in value]
            else:
                budget[key] = value
        state = {
            "version": _STATE_VERSION,
            "budget": budget,
            "spent": [profile_to_spec(p) for p in self._spent],
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
        if state["version"] != _STATE_VERSION:
            raise ParameterError("state.version", state["version"], f"{_STATE_VERSION}")
        budget = Budget.from_dict(state["budget"])
        if not isinstance(state["spent"], list):
            raise ParameterError("state.spent", state["spent"], "a list of profile specs")
        acc = cls(budget)
        for i, spec in enumerate(state["spent"]):
            profile = profile_from_spec(spec, where=f"state.spent[{i}]")
            try:
                acc.spend(profile)
            except BudgetExceeded as err:
                raise ParameterError(
                    f"state.spent[{i}] exceeds the budget ({err}); the state is corrupt."
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


def _round_down(x: Fraction) -> float:
    """Largest float ≤ x (remaining budget is never overstated)."""
    f = float(x)
    return f if Fraction(f) <= x else math.nextafter(f, -math.inf)
