"""An accountant with Opacus' interface, and a noise-multiplier search that always answers.

:class:`OpacusAccountant` keeps Opacus' ``history`` (a list of ``(noise_multiplier,
sample_rate, steps)`` runs, consecutive identical steps merged), ``step``, ``get_epsilon``,
``state_dict``/``load_state_dict``, ``mechanism()``, ``len()`` and the optimizer hook, so
``PrivacyEngine`` can use it: call :func:`register_opacus` once and pass
``PrivacyEngine(accountant="infodp")``, or assign ``engine.accountant = OpacusAccountant()``.
Its ε is infodp's certified bound for the Poisson-subsampled Gaussian steps (add/remove-one
neighbours, as Opacus): the pessimistic PLD (Doroshenko et al. 2022), never above the RDP
conversion of the same steps (it is one of the candidates), and defined for every ε —
there is no estimate to fail ("Discrete mean differs significantly") and no silent fallback.
Schedules with many distinct steps are grouped pessimistically
(:mod:`infodp.accounting.schedule`).

Opacus itself is not imported: nothing here needs torch.

>>> acc = OpacusAccountant()
>>> for _ in range(100):
...     acc.step(noise_multiplier=1.0, sample_rate=0.01)
>>> acc.history, len(acc), acc.mechanism()
([(1.0, 0.01, 100)], 1, 'infodp')
>>> round(acc.get_epsilon(1e-5), 3) == round(
...     subsampled_gaussian_profile(1.0, 0.01).repeat(100).epsilon(1e-5), 3)
True
"""

from __future__ import annotations

import importlib
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping
from copy import deepcopy
from typing import Any

from infodp._validate import as_positive, as_positive_int, as_probability
from infodp.accounting import conversions as _conv
from infodp.accounting import rdp as _rdp
from infodp.accounting.pld import PLDTooLarge
from infodp.accounting.profile import (
    DEFAULT_INTERVAL,
    PrivacyProfile,
    subsampled_gaussian_profile,
)
from infodp.accounting.schedule import (
    DEFAULT_RESOLUTION,
    EXACT_GROUPS,
    round_steps,
    schedule_profile,
)
from infodp.errors import ParameterError

__all__ = ["OpacusAccountant", "get_noise_multiplier", "register_opacus"]

#: Histories written by these accountants have the same format and are re-certified as-is.
_COMPATIBLE = ("infodp", "rdp", "prv", "gdp")


def _interval(profile: PrivacyProfile, delta: float) -> float:
    # A grid proportionate to the answer: fine for tiny ε (0.01), coarse enough for ε = 100
    # to fit in memory. Every grid gives a certified upper bound. The RDP curve on the default
    # orders is the one profile.epsilon tabulates next: its cached copy is computed once.
    guess = _conv.rdp_to_epsilon(profile._rdp_grid(), _rdp.DEFAULT_ORDERS, delta)
    scale = min(max(guess / 10.0, 0.05), 10.0) if math.isfinite(guess) else 10.0
    return DEFAULT_INTERVAL * scale


def certified_epsilon(profile: PrivacyProfile, delta: float, *, few: bool = True) -> float:
    """Certified ε of ``profile`` at ``delta`` on a grid suited to its size.

    ``few=False`` (thousands of distinct steps) skips the RDP tabulation and the grid guess.
    """
    h = _interval(profile, delta) if few else DEFAULT_INTERVAL
    while True:
        try:
            return profile.epsilon(delta, interval=h, with_rdp=few)
        except PLDTooLarge:  # pragma: no cover - profile.epsilon already falls back to RDP
            h *= 4


class OpacusAccountant:
    """Opacus' ``IAccountant`` interface with infodp's certified ε (add/remove-one)."""

    def __init__(self, resolution: float = DEFAULT_RESOLUTION) -> None:
        self.history: list[tuple[float, float, int]] = []
        self.resolution = as_positive("resolution", resolution)

    #: The neighbouring relation of every ε this accountant gives.
    relation = "add_remove"

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one optimisation step (merged with the previous one when identical)."""
        z = as_positive("noise_multiplier", noise_multiplier)
        q = as_probability("sample_rate", sample_rate)
        if self.history and self.history[-1][:2] == (z, q):
            self.history[-1] = (z, q, self.history[-1][2] + 1)
        else:
            self.history.append((z, q, 1))

    def profile(self) -> PrivacyProfile:
        """The certified profile of the steps so far."""
        return schedule_profile(self.history, self.resolution)

    def get_epsilon(self, delta: float, *args: Any, **kwargs: Any) -> float:
        """Certified ε spent so far at ``delta`` (Opacus' extra arguments are accepted and
        ignored: there is no estimate to tune)."""
        d = as_probability("delta", delta)
        if not self.history:
            return 0.0
        few = len(round_steps(self.history, self.resolution)) <= EXACT_GROUPS
        return certified_epsilon(self.profile(), d, few=few)

    def get_privacy_spent(self, *, delta: float, **kwargs: Any) -> tuple[float, float]:
        """``(ε, δ)`` as Opacus' RDP accountant returns it (the order slot holds δ)."""
        return self.get_epsilon(delta), delta

    def __len__(self) -> int:
        """Number of history entries, as Opacus' accountants count."""
        return len(self.history)

    @classmethod
    def mechanism(cls) -> str:
        """The name under which :func:`register_opacus` registers this accountant."""
        return "infodp"

    def get_optimizer_hook_fn(self, sample_rate: float) -> Callable[[Any], None]:
        """The hook Opacus' ``PrivacyEngine`` attaches to its ``DPOptimizer``."""

        def hook_fn(optim: Any) -> None:
            self.step(
                noise_multiplier=optim.noise_multiplier,
                sample_rate=sample_rate * optim.accumulated_iterations,
            )

        return hook_fn

    def state_dict(self, destination: Any = None) -> Any:
        """``{"history": ..., "mechanism": "infodp"}`` (Opacus' checkpoint format)."""
        if destination is None:
            destination = OrderedDict()
        destination["history"] = deepcopy(self.history)
        destination["mechanism"] = self.mechanism()
        return destination

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Load a state dict of this accountant or of Opacus' rdp/prv/gdp accountants (the
        history format is the same, so an Opacus run can be re-certified)."""
        if not state_dict or "history" not in state_dict or "mechanism" not in state_dict:
            raise ParameterError("state_dict", "<state>", "a mapping with history and mechanism")
        if state_dict["mechanism"] not in _COMPATIBLE:
            raise ParameterError(
                "state_dict['mechanism']",
                state_dict["mechanism"],
                "one of " + ", ".join(_COMPATIBLE),
            )
        history = []
        for i, entry in enumerate(state_dict["history"]):
            try:
                z, q, k = entry
            except (TypeError, ValueError):
                raise ParameterError(
                    f"history[{i}]", entry, "(noise_multiplier, sample_rate, steps)"
                ) from None
            history.append(
                (
                    as_positive(f"history[{i}].noise_multiplier", z),
                    as_probability(f"history[{i}].sample_rate", q),
                    as_positive_int(f"history[{i}].steps", k),
                )
            )
        self.history = history


def register_opacus() -> None:
    """Register :class:`OpacusAccountant` with Opacus as ``"infodp"``:
    ``PrivacyEngine(accountant="infodp")`` then uses it. Needs opacus installed."""
    try:
        registry = importlib.import_module("opacus.accountants.registry")
    except ImportError:  # pragma: no cover - opacus is the caller's
        raise ParameterError(
            "opacus", "not installed", "installed to register an accountant"
        ) from None
    registry.register_accountant("infodp", OpacusAccountant, force=True)


def _epsilon_at(sigma: float, q: float, steps: int, delta: float) -> float:
    return certified_epsilon(subsampled_gaussian_profile(sigma, q).repeat(steps), delta)


def get_noise_multiplier(
    *,
    target_epsilon: float,
    target_delta: float,
    sample_rate: float,
    epochs: float | None = None,
    steps: int | None = None,
    accountant: Any = None,
    epsilon_tolerance: Any = None,
    rel_tol: float = 1e-3,
    **kwargs: Any,
) -> float:
    """Smallest noise multiplier (within ``rel_tol`` relatively) whose certified ε meets the target.

    Opacus' signature (``accountant`` and ``epsilon_tolerance`` are accepted and ignored).
    ``epochs`` means ⌊epochs/sample_rate⌋ steps, as in Opacus. The ε of the returned σ is at
    most ``target_epsilon``; σ/(1 + rel_tol) does not meet it. Poisson sampling, add/remove.

    >>> z = get_noise_multiplier(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.01,
    ...                          steps=1000)
    >>> _epsilon_at(z, 0.01, 1000, 1e-5) <= 1.0 < _epsilon_at(z / 1.01, 0.01, 1000, 1e-5)
    True
    """
    eps = as_positive("target_epsilon", target_epsilon)
    d = as_probability("target_delta", target_delta, open_low=True, open_high=True)
    q = as_probability("sample_rate", sample_rate, open_low=True)
    if (steps is None) == (epochs is None):
        raise ParameterError("steps/epochs", (steps, epochs), "exactly one of steps or epochs")
    n = (
        as_positive_int("steps", steps)
        if steps is not None
        else as_positive_int("steps from epochs", int(as_positive("epochs", epochs) / q))
    )
    tol = as_positive("rel_tol", rel_tol)

    def meets(sigma: float) -> bool:
        return _epsilon_at(sigma, q, n, d) <= eps

    # Bracket in log σ, then bisect: ε is non-increasing in σ (a larger σ is a
    # post-processing of a smaller one), so the bracket always exists.
    lo, hi = 1.0, 1.0
    while meets(lo):
        lo /= 2.0
        if lo < 1e-6:
            return 2.0 * lo  # any σ meets the target: ε far above what the run can leak
    while not meets(hi):
        hi *= 2.0
        if hi > 1e12:
            raise ParameterError("target_epsilon", eps, "reachable with σ ≤ 1e12")
    hi = max(hi, lo)
    while hi / lo > 1.0 + tol:
        mid = math.sqrt(lo * hi)
        if meets(mid):
            hi = mid
        else:
            lo = mid
    return hi
