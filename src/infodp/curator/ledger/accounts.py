"""Accountant states as the ledger stores them: parsed once per exact text, spent, refunded.

Every currency is enforced by :class:`infodp.accounting.Accountant`. A stored state is its
whole JSON text, so a parse cached by that text can never be stale: a state another process
advanced is a different text and is parsed (and validated) afresh. A basic budget is kept as
its exact (ε, δ) sums in the analysts row and enforced by an accountant rebuilt from them
(:meth:`Accountant.basic`): the same verdict, without a growing state.

>>> from fractions import Fraction
>>> from infodp.accounting.accountant import Accountant, Budget
>>> text = Accountant(Budget.pure(1)).to_json()
>>> spec = {"mechanism": "pure-dp", "epsilon": 0.25}
>>> after = spend(text, None, None, json.dumps(spec), Fraction(1, 4), Fraction(0))
>>> accountant_of(after).remaining()
0.75
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from fractions import Fraction
from typing import TYPE_CHECKING, Generic, TypeVar

from infodp.errors import InternalError

if TYPE_CHECKING:
    from infodp._jsonable import JsonObject
    from infodp.accounting.accountant import Accountant, Budget
    from infodp.accounting.profile import PrivacyProfile

K = TypeVar("K")
V = TypeVar("V")
Remaining = float | dict[float, float] | dict[str, float]

__all__ = [
    "accountant_of",
    "budget_of",
    "can_spend",
    "refund",
    "remaining_of",
    "spend",
    "spend_profile",
]


class _Lru(Generic[K, V]):
    """A small thread-safe LRU of immutable (or treated as read-only) values."""

    def __init__(self, size: int = 256) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[K, V] = OrderedDict()
        self._size = size

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> V:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return value


class _Bounded(Generic[K, V]):
    """A bounded memo of a pure function's values, emptied when full (a lookup on the
    reservation's path is one dictionary read)."""

    def __init__(self, size: int = 256) -> None:
        self._items: dict[K, V] = {}
        self._size = size

    def get(self, key: K) -> V | None:
        return self._items.get(key)

    def put(self, key: K, value: V) -> V:
        if len(self._items) >= self._size:
            self._items.clear()
        self._items[key] = value
        return value


_STATES: _Lru[str, Accountant] = _Lru()
_PROFILES: _Bounded[str, PrivacyProfile] = _Bounded()
_BASIC: _Bounded[tuple[str | None, Fraction, Fraction], PrivacyProfile] = _Bounded()
_REMAINING: _Lru[str, Remaining] = _Lru()
_BUDGETS: _Bounded[str, Budget] = _Bounded()


def accountant_of(text: str) -> Accountant:
    """The (shared, read-only) accountant of a stored state text."""
    from infodp.accounting.accountant import Accountant

    acc = _STATES.get(text)
    if acc is None:
        acc = _STATES.put(text, Accountant.from_json(text))
    return acc


def budget_of(text: str) -> Budget:
    """The :class:`infodp.accounting.Budget` of a stored ``budget_json`` text."""
    from infodp.accounting.accountant import Budget

    budget = _BUDGETS.get(text)
    if budget is None:
        budget = _BUDGETS.put(text, Budget.from_dict(json.loads(text)))
    return budget


def remaining_of(text: str) -> Remaining:
    """:meth:`Accountant.remaining` of a stored state (computed once per state text: an
    approx budget's figure may need a PLD)."""
    left = _REMAINING.get(text)
    if left is None:
        left = _REMAINING.put(text, accountant_of(text).remaining())
    return dict(left) if isinstance(left, dict) else left  # a copy: callers may change it


def spend_profile(
    profile_spec: JsonObject | str | None, epsilon: Fraction, delta: Fraction
) -> PrivacyProfile:
    """The privacy profile a query spends: its spec (dict or stored JSON text), or without
    one the (ε, δ) guarantee profile of its declaration."""
    from infodp.accounting.accountant import _guarantee_profile
    from infodp.accounting.spec import profile_from_spec

    if profile_spec is None:
        return _guarantee_profile(epsilon, delta)
    if not isinstance(profile_spec, str):
        return profile_from_spec(profile_spec)
    # Profiles are immutable values: one parse per distinct spec text (a repeated query's
    # spend is read once).
    cached = _PROFILES.get(profile_spec)
    if cached is None:
        cached = _PROFILES.put(profile_spec, profile_from_spec(json.loads(profile_spec)))
    return cached


def _basic_spend(profile_spec: str | None, epsilon: Fraction, delta: Fraction) -> PrivacyProfile:
    """What a basic budget's accountant spends for a query: the (ε, δ) guarantee profile of
    its exact declared (ε, δ), once the accountant has checked that the query's own profile
    meets that declaration.

    Basic composition adds the declared (ε, δ) only (Dwork & Roth 2014, Thm 3.16), so the
    verdict is the same as spending the query's profile; the check that the profile meets
    its declaration (:meth:`Accountant.spend` raises ParameterError otherwise) is a function
    of (spec, ε, δ), made once per distinct triple in a process instead of per reservation.
    """
    from infodp.accounting.accountant import Accountant, _guarantee_profile

    key = (profile_spec, epsilon, delta)
    hit = _BASIC.get(key)
    if hit is not None:
        return hit
    if profile_spec is not None:
        # A fresh budget of exactly the declared (ε, δ): only the declaration check can fail.
        check = Accountant.basic(epsilon, delta, (Fraction(0), Fraction(0)))
        check.spend(spend_profile(profile_spec, epsilon, delta), epsilon=epsilon, delta=delta)
    return _BASIC.put(key, _guarantee_profile(epsilon, delta))


def spend(
    state: str | None,
    basic: tuple[Fraction, Fraction, Fraction, Fraction] | None,
    budget_json: str | None,
    profile_spec: str | None,
    epsilon: Fraction,
    delta: Fraction,
) -> str | None:
    """The accountant state after spending a query (BudgetExceeded if it does not fit).

    ``state`` is the stored state (None: a basic budget, whose (ε, δ, spent ε, spent δ) are
    ``basic``; its new state is its sums, kept in the analysts row, and None is returned).
    ``budget_json``, when given, is the granted budget the stored state must carry (a state
    whose budget differs was edited: refused). The query's exact (ε, δ) is declared with
    it, so pure-ε sums stay exact in every currency.
    """
    from infodp.accounting.accountant import Accountant

    if state is None:
        if basic is None:
            raise InternalError("a basic budget without its sums")
        acc = Accountant.basic(basic[0], basic[1], (basic[2], basic[3]))
        acc.spend(_basic_spend(profile_spec, epsilon, delta), epsilon=epsilon, delta=delta)
        return None
    if profile_spec is None:
        raise InternalError("an accountant budget needs the query's privacy profile")
    profile = spend_profile(profile_spec, epsilon, delta)
    acc = accountant_of(state)
    if budget_json is not None and acc.budget != budget_of(budget_json):
        raise _edited()
    acc = acc.copy()
    acc.spend(profile, epsilon=epsilon, delta=delta)
    text: str = acc.to_json()
    _STATES.put(text, acc)
    return text


def can_spend(
    state: str | None,
    basic: tuple[Fraction, Fraction, Fraction, Fraction] | None,
    profile_spec: str | None,
    epsilon: Fraction,
    delta: Fraction,
) -> bool:
    """Whether :func:`spend` would accept the query: the accountant's dry run
    (:meth:`Accountant.can_spend`) on the same state, profile and declaration; nothing is
    recorded. A profile that does not meet its declaration raises, as :func:`spend` does.

    >>> from infodp.accounting.accountant import Accountant, Budget
    >>> text = Accountant(Budget.zcdp("0.5")).to_json()
    >>> spec = json.dumps({"mechanism": "pure-dp", "epsilon": 1.0})
    >>> can_spend(text, None, spec, Fraction(1), Fraction(0))
    True
    >>> wider = json.dumps({"mechanism": "pure-dp", "epsilon": 1.01})  # ρ = ε²/2 > 0.5
    >>> can_spend(text, None, wider, Fraction(101, 100), Fraction(0))
    False
    """
    from infodp.accounting.accountant import Accountant

    if state is None:
        if basic is None:
            raise InternalError("a basic budget without its sums")
        acc = Accountant.basic(basic[0], basic[1], (basic[2], basic[3]))
        profile = _basic_spend(profile_spec, epsilon, delta)
    else:
        if profile_spec is None:
            raise InternalError("an accountant budget needs the query's privacy profile")
        acc = accountant_of(state)
        profile = spend_profile(profile_spec, epsilon, delta)
    return bool(acc.can_spend(profile, epsilon=epsilon, delta=delta))


def refund(state: str, profile_json: str | None, epsilon: Fraction, delta: Fraction) -> str:
    """The accountant state with one spend (an entry being cancelled) taken back out."""
    if profile_json is None:
        raise InternalError("a spending entry without its privacy profile")
    acc = accountant_of(state).copy()
    acc.refund(spend_profile(profile_json, epsilon, delta), epsilon=epsilon, delta=delta)
    text: str = acc.to_json()
    _STATES.put(text, acc)
    return text


def _edited() -> Exception:
    from infodp.errors import LedgerError

    return LedgerError(
        "the ledger's accountant state does not carry the budget that was granted: it was "
        "edited or corrupted; nothing was charged. Run 'infodp ledger verify'."
    )
