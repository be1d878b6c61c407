"""Privacy profiles: everything accounting needs to know about one mechanism.

A :class:`PrivacyProfile` describes the privacy of one mechanism (or of a composition of
mechanisms) with respect to one individual, under the neighbouring relation that defines the
mechanism's sensitivity (subsampled mechanisms use add/remove-one, as dp-accounting does). It
carries

- the pure ε (``math.inf`` when the mechanism is not pure-DP),
- an upper bound on the Rényi-DP curve ε(α), α ∈ [1, ∞] (α = 1 is the KL bound, α = ∞ pure ε),
- zCDP ρ where it applies,
- a pessimistic privacy loss distribution (PLD) for tight δ(ε),
- information bounds: ``information(alpha)`` bounds the Rényi channel capacity C_α of
  "Differential Privacy and Information Theory" (2022) in nats per individual, by the diameter
  (the RDP ε(α); "radius ≤ C_α ≤ diameter"), a capacity bound of the mechanism's channel at
  α = 1, or the article's level-α composition; ``information_bound(alpha)`` names the rule.

Every query returns a certified upper bound: ``epsilon(delta)`` and ``delta(epsilon)`` take the
minimum over the PLD, the RDP conversion and pure ε, each of which is itself an upper bound.

>>> from infodp.accounting import gaussian_profile, laplace_profile
>>> g = gaussian_profile(sigma=2.0)
>>> round(g.rdp(2.0), 6)              # α / (2σ²)
0.25
>>> round(g.repeat(4).rdp(2.0), 6)     # RDP composes additively
1.0
>>> lap = laplace_profile(scale=1.0)
>>> lap.pure_epsilon()
1.0
>>> round(lap.epsilon(0.0), 6)
1.0
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, overload

from infodp._exact import float_up as _up
from infodp._lazy import lazy_module
from infodp._np import np, npt
from infodp._scipy import special
from infodp._validate import (
    as_alpha,
    as_alphas,
    as_nonnegative,
    as_positive,
    as_positive_int,
    as_probability,
    as_real,
)
from infodp.accounting import hockey as _hockey
from infodp.accounting import rdp as _rdp
from infodp.errors import ParameterError

if TYPE_CHECKING:
    from infodp.accounting import conversions as _conv
    from infodp.accounting import discrete_gaussian as _dg
    from infodp.accounting import pld as _pldlib
    from infodp.accounting.pld import PrivacyLossDistribution
else:
    # Both on first use (as numpy): a pure-ε profile answers α = 1, 2, ∞ and δ in closed
    # form, so a Laplace query's leakage summary builds no PLD and no numpy array.
    _pldlib = lazy_module("infodp.accounting.pld")
    _dg = lazy_module("infodp.accounting.discrete_gaussian")
    _conv = lazy_module("infodp.accounting.conversions")  # RDP → (ε, δ): numeric profiles only


__all__ = [
    "DEFAULT_INTERVAL",
    "ApproximateDPProfile",
    "ComposedProfile",
    "DiscreteGaussianProfile",
    "DiscreteLaplaceProfile",
    "DiscreteSubsampledGaussianProfile",
    "GaussianProfile",
    "GroupProfile",
    "InformationBound",
    "LaplaceProfile",
    "ParallelProfile",
    "PrivacyProfile",
    "PureDPProfile",
    "RandomizedResponseProfile",
    "SubsampledGaussianProfile",
    "approximate_dp_profile",
    "compose",
    "discrete_gaussian_profile",
    "discrete_laplace_profile",
    "discrete_subsampled_gaussian_profile",
    "gaussian_profile",
    "laplace_profile",
    "parallel",
    "post_process",
    "pure_dp_profile",
    "randomized_response_profile",
    "subsampled_gaussian_profile",
]

DEFAULT_INTERVAL = 2e-4
"""Default PLD grid (value discretisation interval, nats).

Twice dp-accounting's 1e-4: the connect-the-dots discretisation (Doroshenko et al. 2022) is
pessimistic at any interval, and its excess over the fine-grid value shrinks roughly with the
square of the interval — +0.002% on 10 000 DP-SGD steps and +0.0001% on 1000 Laplace
mechanisms at 2e-4 (benchmarks/accounting.py) — while composition costs about half.
"""

if TYPE_CHECKING:
    ArrayF = npt.NDArray[np.float64]


# Absolute allowance for floating-point rounding in PLD δ queries: δ is computed as
# (mass at +∞) + (tail mass) − e^ε·(tail sum), each ≤ 1, so its error is a few ulps of 1.
_PLD_ROUNDING = 2e-15


def _round_up_delta(pld: PrivacyLossDistribution, eps: float) -> float:
    """``pld.delta(eps)`` plus the rounding allowance wherever δ(ε) may exceed the mass at
    +∞ loss: where the computed value does, and also where a finite loss lies above ε. There
    δ(ε) = mass at +∞ + Σ_{l > ε} p_l (1 − e^{ε − l}) is strictly above that mass, but for a
    loss within a few ulps of ε the float sum cancels to exactly the mass."""
    value = pld.delta(eps)
    if value > pld.infinity_mass or eps < pld.support()[1]:
        return min(1.0, value + _PLD_ROUNDING)
    return value


def _div_up(numerator: float, denominator: float) -> float:
    """numerator / denominator rounded up (the float quotient may round down by half an ulp)."""
    if math.isinf(numerator) or denominator == 0:
        return math.inf
    return _up(Fraction(numerator) / Fraction(denominator))


@dataclass(frozen=True, slots=True)
class InformationBound:
    """An upper bound on the capacity C_α in nats per individual, and the rule behind it.

    ``rule`` is "rdp" (the RDP curve, the channel's diameter), "capacity" (a bound on the
    channel's Shannon capacity) or "level composition" (the article's rule for composed
    mechanisms, 1/(α − 1) = Σ 1/(α_i − 1)).

    >>> from infodp.accounting import gaussian_profile
    >>> gaussian_profile(2.0).repeat(100).information_bound(1.0).rule
    'level composition'
    """

    nats: float
    rule: str


@dataclass(frozen=True)
class PrivacyProfile(abc.ABC):
    """Privacy of one mechanism (or composition) for one individual; immutable.

    Subclasses implement ``_pure_epsilon``, ``_kl``, ``_rdp_orders`` (finite α > 1),
    ``_zcdp_rho`` and ``_pld``; the public methods validate, broadcast and combine.
    """

    # ---- subclass hooks -------------------------------------------------------------------
    @abc.abstractmethod
    def _pure_epsilon(self) -> float: ...

    @abc.abstractmethod
    def _kl(self) -> float: ...

    @abc.abstractmethod
    def _rdp_orders(self, alphas: ArrayF) -> ArrayF: ...

    def _zcdp_rho(self) -> float | None:
        return None

    @abc.abstractmethod
    def _pld(self, interval: float) -> PrivacyLossDistribution: ...

    def _group(self, k: int) -> PrivacyProfile:
        return GroupProfile(self, k)

    # ---- memoised hooks -------------------------------------------------------------------
    def _memo(self, key: str, compute: Callable[[], float]) -> float:
        """``compute()`` once per profile, kept in the instance ``__dict__``.

        Sound because a profile is a frozen dataclass whose fields are numbers and tuples of
        profiles: the value is a function of the fields, which never change, and every derived
        profile (compose, repeat, group, ``dataclasses.replace``) is a new object built by
        ``__init__`` with an empty memo. The entry is not a field, so ``==``, ``hash`` (the PLD
        and RDP caches' keys) and ``repr`` ignore it. The write bypasses the frozen
        ``__setattr__`` as :func:`functools.cached_property` does; two threads racing store the
        same value. A subclass with ``__slots__`` (no ``__dict__``) just recomputes.
        """
        memo: dict[str, float] | None = getattr(self, "__dict__", None)
        if memo is None:
            return float(compute())
        value = memo.get(key)
        if value is None:
            value = memo[key] = float(compute())
        return value

    def _kl_memo(self) -> float:
        """The memoised KL bound (:meth:`_kl`)."""
        return self._memo("_kl_value", self._kl)

    # ---- public queries -------------------------------------------------------------------
    def pure_epsilon(self) -> float:
        """The pure ε (max-divergence, RDP at α = ∞); ``math.inf`` when not pure-DP.

        Computed once per profile (profiles are immutable; see :meth:`_memo`).
        """
        return self._memo("_pure_epsilon_value", self._pure_epsilon)

    def approx_guarantee(self) -> tuple[float, float] | None:
        """An (ε, δ) pair this profile is known to satisfy outright, or None.

        A pure-ε profile satisfies (ε, 0); an (ε, δ) profile its own pair; a composition the
        sums of its parts' pairs (Dwork & Roth 2014, Theorem 3.16, basic composition), which
        :meth:`delta` and :meth:`epsilon` use beside the PLD and RDP bounds: for a composition
        of an (ε, δ) part with pure parts they can be looser than the plain sum.

        >>> compose(ApproximateDPProfile(0.25, 1e-6), laplace_profile(2.0)).approx_guarantee()
        (0.75, 1e-06)
        """
        return self._approx_guarantee()

    def _approx_guarantee(self) -> tuple[float, float] | None:
        pure = self.pure_epsilon()
        return (pure, 0.0) if math.isfinite(pure) else None

    def exact_guarantee(self) -> tuple[Fraction, Fraction] | None:
        """An (ε, δ) pair this profile satisfies, as exact fractions (None: none known).

        :meth:`approx_guarantee` rounds each part up to a float; this keeps what is exact
        (the ε = Δ/scale of a Laplace mechanism, the sums of a composition's parts), so a
        composition of parts calibrated to shares that add to ε is seen to meet ε itself.

        >>> p = compose(*[laplace_profile(3.0)] * 3)
        >>> p.approx_guarantee()[0] > 1, p.exact_guarantee()
        (True, (Fraction(1, 1), Fraction(0, 1)))
        """
        return self._exact_guarantee()

    def _exact_guarantee(self) -> tuple[Fraction, Fraction] | None:
        g = self.approx_guarantee()  # floats that are upper bounds: their exact values
        return None if g is None else (Fraction(g[0]), Fraction(g[1]))

    @overload
    def rdp(self, alpha: float) -> float: ...

    @overload
    def rdp(self, alpha: npt.ArrayLike) -> float | ArrayF: ...

    def rdp(self, alpha: npt.ArrayLike) -> float | ArrayF:
        """Upper bound on the Rényi-DP curve ε(α) in nats; α ∈ [1, ∞], vectorised.

        α = 1 gives the KL bound and α = ∞ the pure ε (Mironov 2017, Definition 3 and
        Proposition 1 in the limits). The result is min(curve, pure ε), since D_α ≤ D_∞.
        A Python number is answered on floats (:meth:`_rdp_at`), without building an array.
        """
        if isinstance(alpha, int | float) and not isinstance(alpha, bool):
            return self._rdp_scalar(as_alpha("alpha", alpha, minimum=1.0))
        a = as_alphas("alpha", alpha, minimum=1.0)
        flat = a.reshape(-1)
        out = np.empty(flat.shape, dtype=np.float64)
        pure = self.pure_epsilon()
        finite = np.isfinite(flat) & (flat > 1.0)
        out[flat == 1.0] = self._kl_memo()
        out[np.isinf(flat)] = pure
        if finite.any():
            out[finite] = self._rdp_orders(flat[finite])
        out = np.minimum(np.maximum(out, 0.0), pure)
        if np.isnan(out).any():
            raise _internal("rdp produced NaN")
        if a.ndim == 0:
            return float(out[0])
        return out.reshape(a.shape)

    def _rdp_scalar(self, a: float) -> float:
        pure = self.pure_epsilon()
        if a == 1.0:
            value = self._kl_memo()
        elif math.isinf(a):
            value = pure
        else:
            value = self._rdp_at(a)
        value = min(max(value, 0.0), pure)
        if math.isnan(value):
            raise _internal("rdp produced NaN")
        return float(value)

    def _delta_closed(self, epsilon: float) -> float | None:
        """The tight δ(ε) in closed form (rounded up) when the profile has one, else None."""
        return None

    def _rdp_at(self, alpha: float) -> float:
        """The curve at one finite order α > 1; profiles with a closed form override this."""
        return float(self._rdp_orders(np.array([alpha], dtype=np.float64))[0])

    def zcdp_rho(self) -> float | None:
        """zCDP ρ (Bun & Steinke 2016, Definition 1.1) when the profile has one, else ``None``."""
        rho = self._zcdp_rho()
        return None if rho is None else float(rho)

    def pld(
        self, value_discretization_interval: float = DEFAULT_INTERVAL
    ) -> PrivacyLossDistribution:
        """A pessimistic privacy loss distribution on a grid of the given interval (nats)."""
        h = as_positive("value_discretization_interval", value_discretization_interval)
        return _cached_pld(self, h)

    def delta(self, epsilon: float, *, interval: float = DEFAULT_INTERVAL) -> float:
        """Certified upper bound on δ(ε): the minimum over the PLD, RDP, pure-ε and basic
        (ε, δ) composition bounds.

        ``interval`` is the PLD grid (nats); every grid gives an upper bound.
        """
        eps = as_real("epsilon", epsilon, allow_inf=True)
        h = as_positive("interval", interval)
        pure = self.pure_epsilon()
        if math.isfinite(pure) and eps >= pure:
            return 0.0
        closed = self._delta_closed(eps)
        if closed is not None:
            return closed  # the tight value (rounded up by ~1e-12): the PLD and RDP add nothing
        # The PLD's δ is a difference of sums of floats (≤ 1): allow its rounding error.
        # Only the part above the (exact) mass at +∞ loss carries rounding error.
        pld_delta = self._pld_query(lambda pld: _round_up_delta(pld, eps), 1.0, h)
        candidates = [1.0, pld_delta]
        if 0 <= eps < math.inf:
            candidates.append(_conv.rdp_to_delta(self._rdp_grid(), _rdp.DEFAULT_ORDERS, eps))
        guarantee = self.approx_guarantee()
        if guarantee is not None and eps >= guarantee[0]:
            candidates.append(guarantee[1])
        return float(min(max(c, 0.0) for c in candidates))

    def epsilon(
        self, delta: float, *, interval: float = DEFAULT_INTERVAL, with_rdp: bool = True
    ) -> float:
        """Certified upper bound on ε(δ): the minimum over the PLD, RDP, pure-ε and basic
        (ε, δ) composition bounds.

        The result may be 0 (nothing leaks beyond δ) or ``math.inf``; it is never NaN.
        ``interval`` is the PLD grid (nats); every grid gives an upper bound. ``with_rdp=False``
        skips the RDP candidate (still an upper bound; saves tabulating thousands of curves).
        """
        d = as_probability("delta", delta)
        h = as_positive("interval", interval)
        if d >= 1.0:
            return 0.0  # δ(0) = TV ≤ 1 for every pair of distributions
        # Ask the PLD at δ minus its rounding allowance (ε(δ) is non-increasing, so this errs up)
        # and round its logarithm up by a few ulps.
        # The mass at +∞ loss is exact, so never ask below it.
        pld_eps = self._pld_query(
            lambda pld: pld.epsilon(max(d - _PLD_ROUNDING, min(d, pld.infinity_mass))),
            math.inf,
            h,
        )
        if 0.0 < pld_eps < math.inf:
            pld_eps += 8 * math.ulp(max(pld_eps, 1.0))
        candidates = [self.pure_epsilon(), pld_eps]
        if d > 0 and (with_rdp or math.isinf(pld_eps)):
            candidates.append(_conv.rdp_to_epsilon(self._rdp_grid(), _rdp.DEFAULT_ORDERS, d))
        guarantee = self.approx_guarantee()
        if guarantee is not None and d >= guarantee[1]:
            candidates.append(guarantee[0])  # basic composition (Dwork & Roth 2014, Thm 3.16)
        return float(max(min(candidates), 0.0))

    def _repr_html_(self) -> str:
        """The notebook view: pure ε, ε at δ = 10⁻⁶ and the information bounds (nats).

        >>> from infodp.accounting import laplace_profile
        >>> "pure ε" in laplace_profile(1.0)._repr_html_()
        True
        """
        from infodp._report import summary_table

        def finite(value: float) -> float | None:
            return value if math.isfinite(value) else None

        rows: list[tuple[str, Any]] = [
            ("pure ε", finite(self.pure_epsilon())),
            ("ε at δ = 10⁻⁶", finite(self.epsilon(1e-6))),
        ]
        rows += [
            (f"information at α = {name} (nats)", finite(self.information(alpha)))
            for name, alpha in (("1", 1.0), ("2", 2.0), ("∞", math.inf))
        ]
        rho = self.zcdp_rho()
        if rho is not None:
            rows.append(("zCDP ρ", rho))
        return summary_table(type(self).__name__, rows, "per individual; upper bounds")

    def information(self, alpha: float) -> float:
        """Upper bound, in nats per individual, on the channel capacity C_α at level α.

        The least of the bounds of :meth:`information_bound` (which also names the rule used).
        """
        return self.information_bound(alpha).nats

    def information_bound(self, alpha: float) -> InformationBound:
        """Upper bound on C_α (nats per individual) and the rule that gave it, α ∈ [1, ∞].

        Candidates: the RDP curve ε(α), the diameter (Mironov 2017; "Differential Privacy and
        Information Theory", 2022: radius ≤ C_α ≤ diameter); at α = 1 a capacity
        bound of the mechanism's channel when one is known (:meth:`_capacity`); for compositions
        the article's level-α rule: Σ_i ε_i at level α with 1/(α − 1) = Σ_i 1/(α_i − 1)
        (:meth:`ComposedProfile.information_bound`). The smallest wins; ties go to "rdp".
        """
        a = as_alpha("alpha", alpha, minimum=1.0)
        best = InformationBound(float(self.rdp(a)), "rdp")
        if a == 1.0:
            cap = self._capacity()
            if cap is not None and cap < best.nats:
                best = InformationBound(cap, "capacity")
        return best

    def _capacity(self) -> float | None:
        """Upper bound on the Shannon capacity C_1 of one use, when better known than KL."""
        return None

    # ---- composition ----------------------------------------------------------------------
    def compose(self, *others: PrivacyProfile) -> PrivacyProfile:
        """Sequential (adaptive) composition with ``others``."""
        return compose(self, *others)

    def repeat(self, k: int) -> PrivacyProfile:
        """k-fold self-composition (fast path: one FFT power for the PLD)."""
        n = as_positive_int("k", k)
        if n == 1:
            return self
        if isinstance(self, ComposedProfile):
            return ComposedProfile(tuple((p, m * n) for p, m in self.parts))
        return ComposedProfile(((self, n),))

    def group(self, k: int) -> PrivacyProfile:
        """Privacy of the same mechanism for a group of k individuals (datasets at distance k)."""
        n = as_positive_int("k", k)
        if n == 1:
            return self
        return self._group(n)

    # ---- helpers --------------------------------------------------------------------------
    def _pld_query(
        self,
        query: Callable[[PrivacyLossDistribution], float],
        fallback: float,
        interval: float = DEFAULT_INTERVAL,
    ) -> float:
        # A PLD too large for the grid (huge ε) is skipped: the RDP and pure-ε
        # bounds still hold, they are only looser.
        try:
            return query(self.pld(interval))
        except _pldlib.PLDTooLarge:
            return fallback

    def _rdp_grid(self) -> ArrayF:
        return _cached_rdp_grid(self)


# PLDs can hold ~10^6 floats: keep only a few (the accountant re-queries the latest ones).
@functools.lru_cache(maxsize=16)
def _cached_pld(profile: PrivacyProfile, interval: float) -> PrivacyLossDistribution:
    return profile._pld(interval)


@functools.lru_cache(maxsize=1024)
def _cached_rdp_grid(profile: PrivacyProfile) -> ArrayF:
    values = np.asarray(profile.rdp(_rdp.DEFAULT_ORDERS), dtype=np.float64)
    values.setflags(write=False)
    return values


def _internal(message: str) -> Exception:
    from infodp.errors import InternalError

    return InternalError(message)


# ---- mechanism profiles ------------------------------------------------------------------


class _NoiseProfile(PrivacyProfile):
    """A value plus noise, of a query with sensitivity ``sensitivity`` (a dataclass field)."""

    if TYPE_CHECKING:
        sensitivity: float

    def _group(self, k: int) -> PrivacyProfile:
        # A group of k moves the query by at most k·Δ (triangle inequality): the same noise
        # at sensitivity k·Δ is the group's exact profile. (mypy sees only the base's fields.)
        return dataclasses.replace(self, sensitivity=self.sensitivity * k)  # type: ignore[call-arg]


@dataclass(frozen=True)
class LaplaceProfile(_NoiseProfile):
    """Laplace mechanism: noise density exp(−|y|/scale)/(2·scale), L1 sensitivity."""

    scale: float
    sensitivity: float = 1.0

    def _pure_epsilon(self) -> float:
        return _div_up(self.sensitivity, self.scale)

    def _exact_guarantee(self) -> tuple[Fraction, Fraction] | None:
        # ε = Δ/scale exactly (both are floats, so exact rationals).
        if not (0 < self.scale < math.inf and math.isfinite(self.sensitivity)):
            return super()._exact_guarantee()
        return Fraction(self.sensitivity) / Fraction(self.scale), Fraction(0)

    def _kl(self) -> float:
        return float(_rdp.laplace_rdp(self.scale / self.sensitivity, 1.0))

    def _rdp_orders(self, alphas: ArrayF) -> ArrayF:
        return np.asarray(_rdp.laplace_rdp(self.scale / self.sensitivity, alphas))

    def _pld(self, interval: float) -> PrivacyLossDistribution:
        return _pldlib.PrivacyLossDistribution.from_laplace(self.scale, self.sensitivity, interval)


@dataclass(frozen=True)
class GaussianProfile(_NoiseProfile):
    """Gaussian mechanism: noise N(0, σ²), L2 sensitivity."""

    sigma: float
    sensitivity: float = 1.0

    def _pure_epsilon(self) -> float:
        return math.inf

    def _kl(self) -> float:
        return float(_rdp.gaussian_rdp(self.sigma / self.sensitivity, 1.0))

    def _rdp_orders(self, alphas: ArrayF) -> ArrayF:
        return np.asarray(_rdp.gaussian_rdp(self.sigma / self.sensitivity, alphas))

    def _zcdp_rho(self) -> float | None:
        # Bun & Steinke 2016, Proposition 1.6: ρ = Δ²/(2σ²).
        return self.sensitivity**2 / (2.0 * self.sigma**2)

    def _pld(self, interval: float) -> PrivacyLossDistribution:
        return _pldlib.PrivacyLossDistribution.from_gaussian(self.sigma, self.sensitivity, interval)

    def _capacity(self) -> float | None:
        # One row moves the query inside a set of L2 diameter Δ, so any input law has total
        # variance E‖X − EX‖² = ½E‖X − X'‖² ≤ Δ²/2; with Gaussian noise I(X; X + N) ≤
        # Σ_j ½ log(1 + λ_j/σ²) ≤ tr Σ_X/(2σ²) ≤ Δ²/(4σ²) (Cover & Thomas 2006, Thm 8.6.5
        # and 9.4.1: the Gaussian maximises entropy at a given covariance) — half the KL Δ²/(2σ²).
        return _div_up(self.sensitivity**2, 4.0 * self.sigma**2)


@dataclass(frozen=True)
class DiscreteLaplaceProfile(_NoiseProfile):
    """Discrete Laplace mechanism: P(k) ∝ exp(−|k|/scale) on the integers, integer sensitivity."""

    scale: float
    sensitivity: int = 1

    def _pure_epsilon(self) -> float:
        return _div_up(self.sensitivity, self.scale)

    def _exact_guarantee(self) -> tuple[Fraction, Fraction] | None:
        # ε = Δ/scale exactly (both are floats, so exact rationals).
        if not (0 < self.scale < math.inf and math.isfinite(self.sensitivity)):
            return super()._exact_guarantee()
        return Fraction(self.sensitivity) / Fraction(self.scale), Fraction(0)

    def _kl(self) -> float:
        return _rdp.discrete_laplace_kl(self.scale, self.sensitivity)

    def _rdp_orders(self, alphas: ArrayF) -> ArrayF:
        return np.asarray(_rdp.discrete_laplace_rdp(self.scale, self.sensitivity, alphas))

    def _rdp_at(self, alpha: float) -> float:
        return float(_rdp.discrete_laplace_rdp(self.scale, self.sensitivity, alpha))

    def _delta_closed(self, epsilon: float) -> float | None:
        return _hockey.discrete_laplace_delta(self.scale, self.sensitivity, epsilon)

    def _pld(self, interval: float) -> PrivacyLossDistribution:
        return _pldlib.PrivacyLossDistribution.from_discrete_laplace(
            self.scale, self.sensitivity, interval
        )


@dataclass(frozen=True)
class DiscreteGaussianProfile(_NoiseProfile):
    """Discrete Gaussian N_Z(0, σ²) (Canonne, Kamath & Steinke 2020), integer sensitivity."""

    sigma: float
    sensitivity: int = 1

    def _pure_epsilon(self) -> float:
        return math.inf

    def _kl(self) -> float:
        return float(_rdp.discrete_gaussian_rdp(self.sigma, self.sensitivity, np.array([1.0]))[0])

    def _rdp_orders(self, alphas: ArrayF) -> ArrayF:
        return _rdp.discrete_gaussian_rdp(self.sigma, self.sensitivity, alphas)

    def _zcdp_rho(self) -> float | None:
        # Canonne, Kamath & Steinke 2020, Theorem 4: Δ²/(2σ²)-zCDP.
        return self.sensitivity**2 / (2.0 * self.sigma**2)

    def _pld(self, interval: float) -> PrivacyLossDistribution:
        return _pldlib.PrivacyLossDistribution.from_discrete_gaussian(
            self.sigma, self.sensitivity, interval
        )


@dataclass(frozen=True)
class RandomizedResponseProfile(PrivacyProfile):
    """k-ary randomized response: keep the true value w.p. e^ε/(e^ε+k−1), else uniform other."""

    eps: float
    k: int = 2

    def _pure_epsilon(self) -> float:
        return self.eps

    def _kl(self) -> float:
        return float(_rdp.randomized_response_rdp(self.eps, self.k, 1.0))

    def _rdp_orders(self, alphas: ArrayF) -> ArrayF:
        return np.asarray(_rdp.randomized_response_rdp(self.eps, self.k, alphas))

    def _zcdp_rho(self) -> float | None:
        # Bun & Steinke 2016, Proposition 3.3: ε-DP implies ε²/2-zCDP.
        return self.eps**2 / 2.0

    def _pld(self, interval: float) -> PrivacyLossDistribution:
        return _pldlib.PrivacyLossDistribution.from_randomized_response(self.eps, self.k, interval)

    def _group(self, k: int) -> PrivacyProfile:
        return PureDPProfile(self.eps * k)

    def _capacity(self) -> float | None:
        # The certified Shannon capacity of the k-ary randomized-response channel.
        from infodp.channel import Channel

        if self.k > 64 or not math.isfinite(self.eps):
            return None
        return Channel.randomized_response(self.k, self.eps).shannon_capacity().upper


@dataclass(frozen=True)
class PureDPProfile(PrivacyProfile):
    """Any ε-DP mechanism: the tight bounds implied by ε-DP alone.

    The binary randomized-response pair (e^ε/(1+e^ε), 1/(1+e^ε)) dominates every ε-DP pair
    (Kairouz, Oh & Viswanath 2015, Theorem 2.1), so its divergences are the tight bounds:
    KL = ε·tanh(ε/2) (Cuff & Yu 2016, Property 1) and the Rényi curve of Mironov 2017,
    Table II.
    """

    eps: float

    def _pure_epsilon(self) -> float:
        return self.eps

    def _kl(self) -> float:
        return float(_rdp.randomized_response_rdp(self.eps, 2, 1.0))

    def _rdp_orders(self, alphas: ArrayF) -> ArrayF:
        return np.asarray(_rdp.randomized_response_rdp(self.eps, 2, alphas))

    def _zcdp_rho(self) -> float | None:
        # Bun & Steinke 2016, Proposition 3.3: ε-DP implies ε²/2-zCDP.
        return self.eps**2 / 2.0

    def _pld(self, interval: float) -> PrivacyLossDistribution:
        return _pldlib.PrivacyLossDistribution.from_randomized_response(self.eps, 2, interval)

    def _group(self, k: int) -> PrivacyProfile:
        # Dwork & Roth 2014, Theorem 2.2: ε-DP gives kε-DP for groups of k.
        return PureDPProfile(self.eps * k)


@dataclass(frozen=True)
class SubsampledGaussianProfile(PrivacyProfile):
    """Poisson-subsampled Gaussian (DP-SGD step), add/remove-one neighbours, sensitivity 1."""

    noise_multiplier: float
    sampling_rate: float

    def _pure_epsilon(self) -> float:
        return math.inf

    def _kl(self) -> float:
        return _rdp.subsampled_gaussian_kl(self.noise_multiplier, self.sampling_rate)

    def _rdp_orders(self, alphas: ArrayF) -> ArrayF:
        return _rdp.subsampled_gaussian_rdp(self.noise_multiplier, self.sampling_rate, alphas)

    def _pld(self, interval: float) -> PrivacyLossDistribution:
        return _pldlib.PrivacyLossDistribution.from_subsampled_gaussian(
            self.noise_multiplier, self.sampling_rate, interval
        )


# Largest atom window for the exact Rényi sums; larger orders use the Jensen bound only.
_DSG_MAX_ATOMS = 2**17


@dataclass(frozen=True)
class DiscreteSubsampledGaussianProfile(PrivacyProfile):
    """Poisson-subsampled *discrete* Gaussian, add/remove-one neighbours (both directions).

    In lattice units: remove is P = (1−q)·N_Z(0, s²) + q·N_Z(μ, s²) against Q = N_Z(0, s²),
    add is the same pair swapped (the pairs of Mironov, Talwar & Zhang 2019 with the discrete
    Gaussian of Canonne, Kamath & Steinke 2020, Definition 1). Everything is computed from the
    atoms k ∈ [−W, μ + W], W = ⌈√150·s⌉ + 2, of the exact pmf; the mass outside is bounded
    rigorously (:func:`~infodp.accounting.discrete_gaussian.log_outside_upper`: sum ≤ integral
    for a monotone tail, Z ≥ the in-window sum)
    and counted pessimistically (at +∞ loss in the PLD, added to the Rényi sums).
    """

    sigma_units: float
    mu_units: int
    sampling_rate: float

    def _pure_epsilon(self) -> float:
        return math.inf

    def _jensen(self, alphas: ArrayF) -> ArrayF:
        # Σ P^α Q^{1−α} ≤ (1−q) + q·e^{α(α−1)μ²/(2s²)} in both directions (convexity of x^α
        # and x^{1−α}, and CKS 2020, Proposition 5: D_α(N_Z(μ)‖N_Z(0)) = αμ²/(2s²) exactly
        # for integer μ); add also has D_∞ ≤ −log(1−q) since the mixture ≥ (1−q)·N_Z(0, s²).
        s, mu, q = self.sigma_units, self.mu_units, self.sampling_rate
        expo = alphas * (alphas - 1) * mu * mu / (2 * s * s)
        both = np.logaddexp(math.log1p(-q), math.log(q) + expo) / (alphas - 1)
        return np.asarray(both, dtype=np.float64)

    def _window(self, alpha: float, remove: bool) -> tuple[ArrayF, ArrayF, float]:
        """log P, log Q on the atoms around both bumps of Σ P^α Q^{1−α}, and the log of a
        certified bound on that sum outside the window.

        Outside: Σ P^α Q^{1−α} ≤ (1−q)·Σ N_0 + q·e^{α(α−1)μ²/(2s²)}·Σ N_0(k − c), with
        c = αμ (remove) or (1−α)μ (add), by convexity of x^α resp. x^{1−α}.
        """
        s, mu, q = self.sigma_units, self.mu_units, self.sampling_rate
        log_z = _dg.log_normaliser_lower(s)
        w = math.ceil(_dg.WINDOW_WIDTH * s) + 2
        c = alpha * mu if remove else (1 - alpha) * mu
        lo = math.floor(min(0.0, c)) - w
        hi = math.ceil(max(float(mu), c)) + w
        k = np.arange(lo, hi + 1, dtype=np.float64)
        lp0 = -(k * k) / (2 * s * s) - log_z
        lmix = np.logaddexp(
            math.log1p(-q) + lp0, math.log(q) - ((k - mu) ** 2) / (2 * s * s) - log_z
        )
        log_p, log_q = (lmix, lp0) if remove else (lp0, lmix)
        expo = alpha * (alpha - 1) * mu * mu / (2 * s * s)
        out = np.logaddexp(
            math.log1p(-q) + _dg.log_outside_upper(s, 0.0, lo, hi),
            math.log(q) + expo + _dg.log_outside_upper(s, c, lo, hi),
        )
        return log_p, log_q, float(out)

    def _exact(self, alpha: float, remove: bool) -> float:
        """log Σ P^α Q^{1−α} = (α−1)·D_α of one direction, rounded up by the outside bound."""
        log_p, log_q, out = self._window(alpha, remove)
        inside = float(special.logsumexp(alpha * log_p + (1 - alpha) * log_q))
        return float(np.logaddexp(inside, out))

    def _kl(self) -> float:
        # KL = Σ_in p log(p/q) + Σ_out p log(p/q), and p log(p/q) ≤ p²/q − p ≤ p²/q
        # (log x ≤ x − 1): the outside part is at most the order-2 outside bound.
        s, mu = self.sigma_units, self.mu_units
        if 2 * (math.ceil(_dg.WINDOW_WIDTH * s) + 2) + 2 * mu > _DSG_MAX_ATOMS:
            # Too many atoms to sum: KL = D_1 ≤ D_2 (Rényi divergence grows with the order,
            # van Erven & Harremoës 2014, Theorem 3) ≤ the order-2 convexity bound.
            return float(self._jensen(np.array([2.0]))[0])
        best = 0.0
        for remove in (True, False):
            log_p, log_q, out = self._window(2.0, remove)
            inside = math.fsum((np.exp(log_p) * (log_p - log_q)).tolist())
            best = max(best, inside + math.exp(out))
        return best

    def _rdp_orders(self, alphas: ArrayF) -> ArrayF:
        bound = self._jensen(alphas)
        add_cap = -math.log1p(-self.sampling_rate)
        s, mu = self.sigma_units, self.mu_units
        width = 2 * (math.ceil(_dg.WINDOW_WIDTH * s) + 2) + mu
        out = np.empty(alphas.shape, dtype=np.float64)
        for i, a in enumerate(alphas.tolist()):
            best = float(bound[i])
            if width + (a - 1) * mu <= _DSG_MAX_ATOMS:
                remove = self._exact(a, True) / (a - 1)
                add = min(self._exact(a, False) / (a - 1), add_cap)
                best = min(best, max(remove, add))
            else:
                best = max(best, 0.0)
            out[i] = best
        return out

    def _pld(self, interval: float) -> PrivacyLossDistribution:
        return _pldlib.PrivacyLossDistribution.from_discrete_subsampled_gaussian(
            self.sigma_units, self.mu_units, self.sampling_rate, interval
        )


@dataclass(frozen=True)
class ApproximateDPProfile(PrivacyProfile):
    """A mechanism of which only an (ε, δ)-DP guarantee is known.

    Its dominating pair is the (ε, δ) randomized response of Kairouz, Oh & Viswanath 2015
    (Theorem 2.1); with δ > 0 no Rényi divergence is bounded, so rdp and information are ∞.
    """

    eps: float
    delta_: float

    def _pure_epsilon(self) -> float:
        return self.eps if self.delta_ == 0 else math.inf

    def _approx_guarantee(self) -> tuple[float, float] | None:
        return (self.eps, self.delta_)

    def _kl(self) -> float:
        return (
            float(_rdp.randomized_response_rdp(self.eps, 2, 1.0)) if self.delta_ == 0 else math.inf
        )

    def _rdp_orders(self, alphas: ArrayF) -> ArrayF:
        if self.delta_ == 0:
            return np.asarray(_rdp.randomized_response_rdp(self.eps, 2, alphas))
        return np.full(alphas.shape, math.inf)

    def _pld(self, interval: float) -> PrivacyLossDistribution:
        return _pldlib.PrivacyLossDistribution.from_privacy_parameters(
            self.eps, self.delta_, interval
        )

    def _group(self, k: int) -> PrivacyProfile:
        # Dwork & Roth 2014, Theorem 2.2 (group privacy): (kε, k·e^{(k−1)ε}·δ).
        delta = min(1.0, k * math.exp((k - 1) * self.eps) * self.delta_) if self.delta_ else 0.0
        return ApproximateDPProfile(self.eps * k, delta)


# ---- combinators -------------------------------------------------------------------------


@dataclass(frozen=True)
class ComposedProfile(PrivacyProfile):
    """Sequential composition: ``parts`` is a tuple of (profile, multiplicity)."""

    parts: tuple[tuple[PrivacyProfile, int], ...]

    def _pure_epsilon(self) -> float:
        # Dwork & Roth 2014, Theorem 3.16 (basic composition of pure ε), summed exactly.
        values = [(p.pure_epsilon(), k) for p, k in self.parts]
        if any(math.isinf(v) for v, _ in values):
            return math.inf
        return _up(sum((k * Fraction(v) for v, k in values), Fraction(0)))

    def _approx_guarantee(self) -> tuple[float, float] | None:
        # Dwork & Roth 2014, Theorem 3.16: (Σ kε_i, Σ kδ_i), summed exactly and rounded up.
        pairs = [(p.approx_guarantee(), k) for p, k in self.parts]
        if any(g is None for g, _ in pairs):
            return None
        eps = sum((k * Fraction(g[0]) for g, k in pairs if g is not None), Fraction(0))
        dlt = sum((k * Fraction(g[1]) for g, k in pairs if g is not None), Fraction(0))
        return _up(eps), min(1.0, _up(dlt))

    def _exact_guarantee(self) -> tuple[Fraction, Fraction] | None:
        # Dwork & Roth 2014, Theorem 3.16, on the parts' exact pairs: no rounding at all.
        eps, dlt = Fraction(0), Fraction(0)
        for p, k in self.parts:
            g = p.exact_guarantee()
            if g is None:
                return None
            eps, dlt = eps + k * g[0], dlt + k * g[1]
        return eps, min(Fraction(1), dlt)

    def _kl(self) -> float:
        return float(sum(k * p.rdp(1.0) for p, k in self.parts))

    def _rdp_orders(self, alphas: ArrayF) -> ArrayF:
        # Mironov 2017, Proposition 1: RDP at a fixed order adds under composition.
        total = np.zeros(alphas.shape, dtype=np.float64)
        for p, k in self.parts:
            total = total + k * np.asarray(p.rdp(alphas), dtype=np.float64)
        return total

    def _rdp_at(self, alpha: float) -> float:
        total = 0.0
        for p, k in self.parts:
            total = total + k * p.rdp(alpha)
        return total

    def _delta_closed(self, epsilon: float) -> float | None:
        # Discrete Laplace parts only (a curator's pure-ε query): the exact hockey stick of
        # the product of the pairs (infodp.accounting.hockey); others go through the PLD.
        pairs: list[tuple[float, int]] = []
        for p, k in self.parts:
            if type(p) is not DiscreteLaplaceProfile or k > _hockey.MAX_COMBINATIONS:
                return None
            pairs += [(p.scale, p.sensitivity)] * k
        return _hockey.composed_discrete_laplace_delta(pairs, epsilon)

    def _zcdp_rho(self) -> float | None:
        # Bun & Steinke 2016, Lemma 1.7: ρ adds under composition.
        rhos = [p._zcdp_rho() for p, _ in self.parts]
        if any(r is None for r in rhos):
            return None
        return float(
            sum(k * r for (_, k), r in zip(self.parts, rhos, strict=True) if r is not None)
        )

    def _pld(self, interval: float) -> PrivacyLossDistribution:
        if not self.parts:
            raise _internal("empty composition")
        # One FFT product over all distinct parts (each raised to its multiplicity).
        return _pldlib.PrivacyLossDistribution.compose_all(
            [(p.pld(interval), k) for p, k in self.parts]
        )

    def information_bound(self, alpha: float) -> InformationBound:
        """The RDP curve, or the article's level-α composition when it is smaller.

        "Differential Privacy and Information Theory" (2022), "Group privacy and
        composability": conditionally
        independent (or adaptively chained) releases that are ε_i-private at levels α_i are
        Σ ε_i-private at level α with 1/(α − 1) = Σ_i 1/(α_i − 1). With M uses in all, every
        use is evaluated at α_i = 1 + M(α − 1) (α_i = α at α ∈ {1, ∞}), each by its own best
        bound (capacity, RDP or a nested composition).
        """
        a = as_alpha("alpha", alpha, minimum=1.0)
        rdp = super().information_bound(a)
        total = sum(k for _, k in self.parts)
        level = a if a == 1.0 or math.isinf(a) else 1.0 + total * (a - 1.0)
        value = float(sum(k * p.information(level) for p, k in self.parts))
        if value < rdp.nats:
            return InformationBound(value, "level composition")
        return rdp

    def _group(self, k: int) -> PrivacyProfile:
        # Each mechanism sees the same k-group: group privacy distributes over composition.
        return ComposedProfile(tuple((p.group(k), m) for p, m in self.parts))


@dataclass(frozen=True)
class GroupProfile(PrivacyProfile):
    """Group privacy for ``k`` individuals of a mechanism with no exact group form."""

    base: PrivacyProfile
    k: int

    def _pure_epsilon(self) -> float:
        # Dwork & Roth 2014, Theorem 2.2: kε (rounded up, not to nearest).
        base = self.base.pure_epsilon()
        return math.inf if math.isinf(base) else _up(self.k * Fraction(base))

    def _kl(self) -> float:
        return float(self._rdp_orders(np.array([1.0]))[0])

    def _rdp_orders(self, alphas: ArrayF) -> ArrayF:
        return _rdp.group_rdp(self.base.rdp, self.k, alphas)

    def _zcdp_rho(self) -> float | None:
        # Bun & Steinke 2016, Proposition 1.9 (group privacy): k²ρ.
        rho = self.base._zcdp_rho()
        return None if rho is None else self.k**2 * rho

    def _pld(self, interval: float) -> PrivacyLossDistribution:
        return _pldlib.PrivacyLossDistribution.from_rdp_curve(
            self.rdp, self.pure_epsilon(), interval
        )

    def _group(self, k: int) -> PrivacyProfile:
        return GroupProfile(self.base, self.k * k)


@dataclass(frozen=True)
class ParallelProfile(PrivacyProfile):
    """Parallel composition over disjoint data: each individual meets one part, so the max."""

    parts: tuple[PrivacyProfile, ...]

    def _pure_epsilon(self) -> float:
        return max(p.pure_epsilon() for p in self.parts)

    def _kl(self) -> float:
        return max(p.rdp(1.0) for p in self.parts)

    def _rdp_orders(self, alphas: ArrayF) -> ArrayF:
        return np.asarray(
            np.max([np.asarray(p.rdp(alphas)) for p in self.parts], axis=0), dtype=np.float64
        )

    def _rdp_at(self, alpha: float) -> float:
        return max(p.rdp(alpha) for p in self.parts)

    def _zcdp_rho(self) -> float | None:
        rhos = [p._zcdp_rho() for p in self.parts]
        return None if any(r is None for r in rhos) else max(r for r in rhos if r is not None)

    def _pld(self, interval: float) -> PrivacyLossDistribution:
        return _pldlib.PrivacyLossDistribution.maximum([p.pld(interval) for p in self.parts])

    def _group(self, k: int) -> PrivacyProfile:
        return ParallelProfile(tuple(p.group(k) for p in self.parts))


# ---- constructors ------------------------------------------------------------------------


def laplace_profile(scale: float, sensitivity: float = 1.0) -> PrivacyProfile:
    """Profile of the Laplace mechanism with noise scale ``scale`` and L1 ``sensitivity``.

    >>> round(laplace_profile(2.0).pure_epsilon(), 6)
    0.5
    """
    return LaplaceProfile(as_positive("scale", scale), as_positive("sensitivity", sensitivity))


def gaussian_profile(sigma: float, sensitivity: float = 1.0) -> PrivacyProfile:
    """Profile of the Gaussian mechanism N(0, σ²) with L2 ``sensitivity``.

    >>> gaussian_profile(1.0).zcdp_rho()
    0.5
    """
    return GaussianProfile(as_positive("sigma", sigma), as_positive("sensitivity", sensitivity))


def discrete_laplace_profile(scale: float, sensitivity: int = 1) -> PrivacyProfile:
    """Profile of the discrete Laplace mechanism, P(k) ∝ exp(−|k|/scale), integer sensitivity.

    >>> round(discrete_laplace_profile(2.0, 1).pure_epsilon(), 6)
    0.5
    """
    return DiscreteLaplaceProfile(
        as_positive("scale", scale), as_positive_int("sensitivity", sensitivity)
    )


def discrete_gaussian_profile(sigma: float, sensitivity: int = 1) -> PrivacyProfile:
    """Profile of the discrete Gaussian mechanism (Canonne, Kamath & Steinke 2020).

    >>> discrete_gaussian_profile(1.0).zcdp_rho()
    0.5
    """
    return DiscreteGaussianProfile(
        as_positive("sigma", sigma), as_positive_int("sensitivity", sensitivity)
    )


def randomized_response_profile(epsilon: float, k: int = 2) -> PrivacyProfile:
    """Profile of k-ary randomized response with privacy parameter ε.

    >>> round(randomized_response_profile(math.log(3)).pure_epsilon(), 6)
    1.098612
    """
    return RandomizedResponseProfile(
        as_nonnegative("epsilon", epsilon), as_positive_int("k", k, minimum=2)
    )


def pure_dp_profile(epsilon: float) -> PrivacyProfile:
    """Profile of any ε-DP mechanism (exponential mechanism, report-noisy-max, staircase, …).

    >>> p = pure_dp_profile(1.0)
    >>> round(p.rdp(1.0), 6) == round(math.tanh(0.5), 6)   # KL = ε·tanh(ε/2)
    True
    """
    return PureDPProfile(as_nonnegative("epsilon", epsilon))


def subsampled_gaussian_profile(noise_multiplier: float, sampling_rate: float) -> PrivacyProfile:
    """Profile of one Poisson-subsampled Gaussian step (DP-SGD), add/remove-one neighbours.

    ``sampling_rate`` 1 is the plain Gaussian mechanism and 0 releases nothing.

    >>> p = subsampled_gaussian_profile(1.0, 1.0)
    >>> round(p.rdp(2.0), 6)
    1.0
    """
    sigma = as_positive("noise_multiplier", noise_multiplier)
    q = as_probability("sampling_rate", sampling_rate)
    if q == 1.0:
        return GaussianProfile(sigma, 1.0)
    if q == 0.0:
        return PureDPProfile(0.0)
    return SubsampledGaussianProfile(sigma, q)


def discrete_subsampled_gaussian_profile(
    sigma_units: float, mu_units: int, sampling_rate: float
) -> PrivacyProfile:
    """Profile of a Poisson-subsampled discrete Gaussian step, add/remove-one neighbours.

    Noise N_Z(0, σ²) on the integers (σ = ``sigma_units``), a present individual shifts the
    sum by the integer ``mu_units`` with probability ``sampling_rate``. Unlike the continuous
    :func:`subsampled_gaussian_profile`, it certifies the lattice release exactly (see
    :class:`DiscreteSubsampledGaussianProfile`); at fine lattices the two nearly agree.

    >>> p = discrete_subsampled_gaussian_profile(0.4, 1, 0.1)
    >>> p.delta(6.0) > subsampled_gaussian_profile(0.4, 0.1).delta(6.0)
    True
    >>> fine = discrete_subsampled_gaussian_profile(1024.0, 1024, 0.1)
    >>> round(fine.delta(1.0), 6) == round(subsampled_gaussian_profile(1.0, 0.1).delta(1.0), 6)
    True
    """
    sigma = as_positive("sigma_units", sigma_units)
    mu = as_positive_int("mu_units", mu_units, minimum=0)
    q = as_probability("sampling_rate", sampling_rate)
    if q == 0.0 or mu == 0:
        return PureDPProfile(0.0)
    if q == 1.0:
        return DiscreteGaussianProfile(sigma, mu)
    return DiscreteSubsampledGaussianProfile(sigma, mu, q)


def approximate_dp_profile(epsilon: float, delta: float) -> PrivacyProfile:
    """Profile of a mechanism of which only (ε, δ)-DP is known.

    >>> p = approximate_dp_profile(1.0, 1e-6)
    >>> p.delta(1.0)
    1e-06
    """
    return ApproximateDPProfile(as_nonnegative("epsilon", epsilon), as_probability("delta", delta))


def compose(*profiles: PrivacyProfile) -> PrivacyProfile:
    """Sequential (adaptive) composition of heterogeneous profiles.

    Identical profiles are merged into one (profile, multiplicity) part so that the PLD uses
    one FFT power per distinct mechanism.

    >>> g, lap = gaussian_profile(1.0), laplace_profile(1.0)
    >>> total = compose(g, g, lap).rdp(2.0)
    >>> round(total, 6) == round(2 * g.rdp(2.0) + lap.rdp(2.0), 6)
    True
    """
    if not profiles:
        raise ParameterError("profiles", (), "at least one PrivacyProfile")
    counts: dict[PrivacyProfile, int] = {}
    for p in profiles:
        if not isinstance(p, PrivacyProfile):
            raise ParameterError("profiles", p, "PrivacyProfile instances")
        items = p.parts if isinstance(p, ComposedProfile) else ((p, 1),)
        for q, k in items:
            counts[q] = counts.get(q, 0) + k
    parts = tuple(counts.items())
    if len(parts) == 1 and parts[0][1] == 1:
        return parts[0][0]
    return ComposedProfile(parts)


def parallel(*profiles: PrivacyProfile) -> PrivacyProfile:
    """Parallel composition over disjoint data: the worst part (max) for each individual.

    >>> round(parallel(laplace_profile(1.0), laplace_profile(2.0)).pure_epsilon(), 6)
    1.0
    """
    if not profiles:
        raise ParameterError("profiles", (), "at least one PrivacyProfile")
    for p in profiles:
        if not isinstance(p, PrivacyProfile):
            raise ParameterError("profiles", p, "PrivacyProfile instances")
    if len(profiles) == 1:
        return profiles[0]
    return ParallelProfile(tuple(profiles))


def post_process(profile: PrivacyProfile) -> PrivacyProfile:
    """Post-processing leaves the profile unchanged (data processing inequality).

    Every divergence in a profile is an f-divergence or Rényi divergence, which cannot grow
    under a channel applied to the output ("Differential Privacy and Information Theory",
    data-processing inequality; Dwork & Roth
    2014, Proposition 2.1).

    >>> g = gaussian_profile(1.0)
    >>> post_process(g) is g
    True
    """
    if not isinstance(profile, PrivacyProfile):
        raise ParameterError("profile", profile, "a PrivacyProfile")
    return profile
