"""dp_accounting ``DpEvent`` trees as infodp profiles, and an accountant with its interface.

Google's dp_accounting describes *what happened* as an immutable event tree
(``GaussianDpEvent``, ``PoissonSampledDpEvent``, ``SelfComposedDpEvent``, …) and sums it with
a ``PrivacyAccountant`` (``compose(event, count)``, ``get_epsilon(delta)``,
``get_delta(epsilon)``, ``supports(event)``). :class:`DpEventAccountant` has that interface,
so JAX/TF privacy code switches with one line; the events are read by class name and
attribute, so dp_accounting is only imported to build events back
(:func:`event_from_profile`).

Each event is the dp_accounting mechanism with sensitivity 1 (noise multipliers are noise
scale over the L1/L2 bound), under the accountant's neighbouring relation:

========================================= ============================== ==========================
event                                     add/remove one                 replace one
========================================= ============================== ==========================
``GaussianDpEvent(z)``                    N(0, z²), sensitivity 1        sensitivity 2
``LaplaceDpEvent(b)``                     Laplace(b), sensitivity 1      sensitivity 2
``DiscreteLaplaceDpEvent(a, s)``          DLap(1/a), sensitivity s       sensitivity 2s
``RandomizedResponseDpEvent(p, k)``       not a relation for RR          RR, ε = log(1 + k(1−p)/p)
``PoissonSampledDpEvent(q, Gaussian(z))`` subsampled Gaussian (z, q)     (z/2, q), joint convexity
``SampledWithoutReplacementDpEvent``      (z/2, b/n), one substitution   (z/2, b/n), Balle et al.
``NoOpDpEvent`` / ``NonPrivateDpEvent``   nothing / ε = ∞                nothing / ε = ∞
========================================= ============================== ==========================

(the sampled rows: :mod:`infodp.accounting.batching`). Anything else is unsupported:
``supports`` says False and ``compose`` raises, as dp_accounting's accountants do.

>>> class GaussianDpEvent:                      # any object with dp_accounting's fields
...     def __init__(self, noise_multiplier): self.noise_multiplier = noise_multiplier
>>> acc = DpEventAccountant()
>>> round(acc.compose(GaussianDpEvent(1.0), 4).get_epsilon(1e-5), 4) == round(
...     _p.gaussian_profile(0.5).epsilon(1e-5), 4)
True
"""

from __future__ import annotations

import enum
import math
from typing import Any

from infodp._validate import as_nonnegative, as_positive_int, as_probability
from infodp.accounting import batching as _batching
from infodp.accounting import profile as _p
from infodp.errors import ParameterError

__all__ = ["DpEventAccountant", "UnsupportedEvent", "event_from_profile", "profile_from_event"]


class UnsupportedEvent(ParameterError):
    """An event (or a sub-event) infodp does not account under the chosen relation."""

    def __init__(self, event: Any, reason: str) -> None:
        super().__init__("event", type(event).__name__, f"a supported DpEvent ({reason})")
        self.event = event
        self.reason = reason


class _NonPrivate(Exception):
    """A ``NonPrivateDpEvent`` (or a noiseless mechanism): ε = ∞."""


_RELATIONS = {
    "ADD_OR_REMOVE_ONE": "add_remove",
    "REPLACE_ONE": "replace_one",
    "add_remove": "add_remove",
    "replace_one": "replace_one",
}


def _relation(value: Any) -> str:
    key = getattr(value, "name", value)
    if not isinstance(key, str) or key not in _RELATIONS:
        raise ParameterError(
            "neighboring_relation",
            value,
            "add_remove, replace_one or dp_accounting's NeighboringRelation "
            "ADD_OR_REMOVE_ONE / REPLACE_ONE",
        )
    return _RELATIONS[key]


def _noise(event: Any, field: str) -> float:
    value = as_nonnegative(f"{type(event).__name__}.{field}", getattr(event, field))
    if value == 0.0:
        raise _NonPrivate
    return value


def _leaf(event: Any, relation: str) -> _p.PrivacyProfile:
    name = type(event).__name__
    sens = 1.0 if relation == "add_remove" else 2.0
    if name == "GaussianDpEvent":
        return _p.gaussian_profile(_noise(event, "noise_multiplier"), sens)
    if name == "LaplaceDpEvent":
        return _p.laplace_profile(_noise(event, "noise_multiplier"), sens)
    if name == "DiscreteLaplaceDpEvent":
        a = _noise(event, "noise_parameter")
        s = as_positive_int("DiscreteLaplaceDpEvent.sensitivity", event.sensitivity)
        return _p.discrete_laplace_profile(1.0 / a, s * int(sens))
    if name == "RandomizedResponseDpEvent":
        return _randomized_response(event, relation)
    if name == "PoissonSampledDpEvent":
        return _poisson(event, relation)
    if name == "SampledWithoutReplacementDpEvent":
        return _without_replacement(event, relation)
    raise UnsupportedEvent(event, "not a mechanism infodp accounts")


def _randomized_response(event: Any, relation: str) -> _p.PrivacyProfile:
    if relation != "replace_one":
        raise UnsupportedEvent(event, "randomized response is private under replace_one only")
    k = as_positive_int("RandomizedResponseDpEvent.num_buckets", event.num_buckets)
    p = as_probability("RandomizedResponseDpEvent.noise_parameter", event.noise_parameter)
    if k == 1 or p == 1.0:
        return _p.pure_dp_profile(0.0)
    if p == 0.0:
        raise _NonPrivate
    # Keep w.p. 1 − p + p/k, each other bucket p/k: ε = log(1 + k(1 − p)/p) (Warner 1965).
    return _p.randomized_response_profile(math.log1p(k * (1.0 - p) / p), k)


def _gaussian_inner(event: Any, outer: str) -> float:
    inner = event.event
    if type(inner).__name__ != "GaussianDpEvent":
        raise UnsupportedEvent(event, f"{outer} of a GaussianDpEvent only")
    return _noise(inner, "noise_multiplier")


def _poisson(event: Any, relation: str) -> _p.PrivacyProfile:
    q = as_probability("PoissonSampledDpEvent.sampling_probability", event.sampling_probability)
    if q == 0.0:
        return _p.pure_dp_profile(0.0)
    z = _gaussian_inner(event, "PoissonSampledDpEvent")
    # The bound of batching.step_profile for Poisson sampling, at any rate q.
    return _p.subsampled_gaussian_profile(z if relation == "add_remove" else z / 2, q)


def _without_replacement(event: Any, relation: str) -> _p.PrivacyProfile:
    n = as_positive_int("source_dataset_size", event.source_dataset_size)
    b = as_positive_int("sample_size", event.sample_size, minimum=0)
    if b == 0:
        return _p.pure_dp_profile(0.0)
    z = _gaussian_inner(event, "SampledWithoutReplacementDpEvent")
    return _batching.step_profile(
        z, scheme="fixed_size", relation=relation, batch_size=b, dataset_size=n
    )


def _walk(event: Any, count: int, relation: str, out: list[tuple[_p.PrivacyProfile, int]]) -> None:
    name = type(event).__name__
    if name == "NoOpDpEvent":
        return
    if name == "NonPrivateDpEvent":
        raise _NonPrivate
    if name == "SelfComposedDpEvent":
        k = as_positive_int("SelfComposedDpEvent.count", event.count, minimum=0)
        if k:
            _walk(event.event, count * k, relation, out)
        return
    if name == "ComposedDpEvent":
        for e in event.events:
            _walk(e, count, relation, out)
        return
    out.append((_leaf(event, relation), count))


def profile_from_event(event: Any, neighboring_relation: Any = "add_remove") -> _p.PrivacyProfile:
    """The infodp profile of a dp_accounting event tree (sensitivity 1 per record).

    A tree with a ``NonPrivateDpEvent`` (or noise 0) has no finite profile and raises.

    >>> class NoOpDpEvent: pass
    >>> profile_from_event(NoOpDpEvent()).epsilon(0.0)
    0.0
    """
    relation = _relation(neighboring_relation)
    parts: list[tuple[_p.PrivacyProfile, int]] = []
    try:
        _walk(event, 1, relation, parts)
    except _NonPrivate:
        raise UnsupportedEvent(event, "it is not private (no noise): ε = ∞") from None
    if not parts:
        return _p.pure_dp_profile(0.0)
    return _p.compose(*(p.repeat(k) if k > 1 else p for p, k in parts))


def event_from_profile(profile: _p.PrivacyProfile) -> Any:
    """The dp_accounting event of an infodp profile, where one exists (add/remove, sensitivity
    folded into the noise multiplier). Needs dp_accounting installed (``infodp[ml]``).

    >>> event_from_profile(_p.gaussian_profile(2.0, 0.5)).noise_multiplier
    4.0
    """
    try:
        from dp_accounting import dp_event as de
    except ImportError:  # pragma: no cover - the optional extra
        raise ParameterError(
            "dp_accounting", "not installed", "installed: pip install 'infodp[ml]'"
        ) from None
    p = profile
    if isinstance(p, _p.GaussianProfile):
        return de.GaussianDpEvent(p.sigma / p.sensitivity)
    if isinstance(p, _p.LaplaceProfile):
        return de.LaplaceDpEvent(p.scale / p.sensitivity)
    if isinstance(p, _p.DiscreteLaplaceProfile):
        return de.DiscreteLaplaceDpEvent(1.0 / p.scale, p.sensitivity)
    if isinstance(p, _p.RandomizedResponseProfile):
        return de.RandomizedResponseDpEvent(p.k / (math.exp(p.eps) + p.k - 1), p.k)
    if isinstance(p, _p.SubsampledGaussianProfile):
        return de.PoissonSampledDpEvent(p.sampling_rate, de.GaussianDpEvent(p.noise_multiplier))
    if isinstance(p, _p.PureDPProfile) and p.eps == 0.0:
        return de.NoOpDpEvent()
    if isinstance(p, _p.ComposedProfile):
        return de.ComposedDpEvent(
            [
                event_from_profile(q)
                if k == 1
                else de.SelfComposedDpEvent(event_from_profile(q), k)
                for q, k in p.parts
            ]
        )
    raise ParameterError("profile", type(p).__name__, "a profile with a dp_accounting event")


class _Relation(enum.Enum):
    ADD_OR_REMOVE_ONE = 1
    REPLACE_ONE = 2


class DpEventAccountant:
    """A dp_accounting-style accountant whose ε is infodp's certified bound.

    ``DpEventAccountant(neighboring_relation)`` takes dp_accounting's ``NeighboringRelation``
    (or ``"add_remove"`` / ``"replace_one"``); ``neighboring_relation`` names it back.
    ``get_epsilon`` is the smallest of infodp's certified bounds (pessimistic PLD at
    ``value_discretization_interval``, RDP, pure ε) for everything composed so far.

    >>> class LaplaceDpEvent:
    ...     def __init__(self, noise_multiplier): self.noise_multiplier = noise_multiplier
    >>> acc = DpEventAccountant().compose(LaplaceDpEvent(1.0), 3)
    >>> round(acc.get_epsilon(0.0), 6), acc.neighboring_relation.name
    (3.0, 'ADD_OR_REMOVE_ONE')
    """

    def __init__(
        self,
        neighboring_relation: Any = "add_remove",
        value_discretization_interval: float = _p.DEFAULT_INTERVAL,
    ) -> None:
        self._relation = _relation(neighboring_relation)
        self._interval = as_nonnegative(
            "value_discretization_interval", value_discretization_interval
        )
        if self._interval <= 0:
            raise ParameterError(
                "value_discretization_interval", value_discretization_interval, "> 0"
            )
        self._parts: list[tuple[_p.PrivacyProfile, int]] = []
        self._events: list[tuple[Any, int]] = []
        self._non_private = False

    @property
    def neighboring_relation(self) -> Any:
        """The relation, as dp_accounting's enum when installed (else an equivalent enum)."""
        try:
            from dp_accounting.privacy_accountant import NeighboringRelation
        except ImportError:  # pragma: no cover - the optional extra
            return (
                _Relation.ADD_OR_REMOVE_ONE
                if self._relation == "add_remove"
                else (_Relation.REPLACE_ONE)
            )
        if self._relation == "add_remove":
            return NeighboringRelation.ADD_OR_REMOVE_ONE
        return NeighboringRelation.REPLACE_ONE

    @property
    def relation(self) -> str:
        """``"add_remove"`` or ``"replace_one"``."""
        return self._relation

    def supports(self, event: Any) -> bool:
        """Whether :meth:`compose` accepts ``event`` (checked without changing state)."""
        try:
            _walk(event, 1, self._relation, [])
        except _NonPrivate:
            return True
        except ParameterError:
            return False
        return True

    def compose(self, event: Any, count: int = 1) -> DpEventAccountant:
        """Account ``event`` run ``count`` times; returns ``self`` (dp_accounting chains)."""
        k = as_positive_int("count", count, minimum=0)
        parts: list[tuple[_p.PrivacyProfile, int]] = []
        try:
            _walk(event, k, self._relation, parts)
        except _NonPrivate:
            self._non_private = True
        self._parts += [(p, c) for p, c in parts if c > 0]
        self._events.append((event, k))
        return self

    @property
    def ledger(self) -> list[tuple[Any, int]]:
        """The (event, count) pairs composed so far, in order."""
        return list(self._events)

    def profile(self) -> _p.PrivacyProfile:
        """The composed profile (pure ε 0 when nothing was composed)."""
        if self._non_private:
            raise UnsupportedEvent("NonPrivateDpEvent", "it is not private (no noise): ε = ∞")
        if not self._parts:
            return _p.pure_dp_profile(0.0)
        return _p.compose(*(p.repeat(k) if k > 1 else p for p, k in self._parts))

    def get_epsilon(self, target_delta: float) -> float:
        """Certified ε at ``target_delta`` (∞ after a non-private event)."""
        d = as_probability("target_delta", target_delta)
        if self._non_private:
            return math.inf
        profile = self.profile()
        return profile.epsilon(d, interval=self._interval)

    def get_delta(self, target_epsilon: float) -> float:
        """Certified δ at ``target_epsilon`` (1 after a non-private event)."""
        e = as_nonnegative("target_epsilon", target_epsilon, allow_inf=True)
        if self._non_private:
            return 1.0
        profile = self.profile()
        return profile.delta(e, interval=self._interval)
