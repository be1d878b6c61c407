"""The black-box auditor: an empirical ε lower bound, a δ lower bound, leaked information and a
verdict against the claim.

The auditor samples ``M(D)`` and ``M(D')`` for two neighbouring datasets, splits each sample in
two, **selects** the most distinguishing event (threshold, interval or learned classifier, see
:mod:`infodp.audit.events`) on the first half and **counts** it on the second. The held-out
counts give joint one-sided Clopper–Pearson bounds ``P(M(D) ∈ E) ≥ L0``, ``P(M(D') ∈ E) ≤ U1``
and hence, with probability ≥ ``confidence`` *including the selection of the event*,

- ``ε ≥ log((L0 − δ)/U1)`` (Dwork & Roth 2014, Definition 2.4; the method of DP-Sniper,
  Bichsel et al. 2021, and of Jagielski et al. 2020 "Auditing differentially private machine
  learning");
- ``D_1(M(D) ‖ M(D')) ≥ kl(L0 ‖ U1)`` (data processing; this and the ε bound hold jointly);
- ``δ(ε) ≥ L0' − e^ε U1'`` at a given ε, from a second event selected (on the same training
  half) for that objective and counted on the held-out half;
- ``I(X; Y) ≥`` the held-out cross-entropy bound of :mod:`infodp.audit.information`, for a
  uniform secret bit X choosing D or D' (each of the last two holds with ``confidence``
  on its own).

The verdict is ``"violation"`` when one of these lower bounds exceeds the claim (claimed ε at the
claimed δ, or the profile's KL/information bound at α = 1), else ``"consistent"``. A
"consistent" audit is evidence, not proof: an audit can only ever *refute* a privacy claim.

Mechanisms are given as any object with ``sample(dataset, size, rng)`` (vectorised: millions of
samples per second), as a plain Python callable ``f(dataset)`` returning a number, a label or a
vector (called once per sample), or by name for the reference simulators used by the CLI.

>>> import numpy as np
>>> mech = VectorisedMechanism(lambda d, n, rng: sum(d) + rng.laplace(0.0, 1.0, n), "laplace")
>>> r = audit(mech, [0], [1], samples=200_000, claimed_epsilon=1.0, rng=1)
>>> r.verdict, 0.9 < r.epsilon_lower <= 1.0, r.confidence
('consistent', True, 0.95)
>>> bad = audit(mech, [0], [1], samples=200_000, claimed_epsilon=0.5, rng=1)
>>> bad.verdict
'violation'
"""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from infodp._validate import as_nonnegative, as_positive, as_positive_int, as_probability
from infodp.accounting.profile import PrivacyProfile, approximate_dp_profile
from infodp.audit.estimators import (
    _joint_bounds,
    delta_lower_bound,
    epsilon_lower_bound,
    kl_lower_bound,
)
from infodp.audit.events import Event, as_outputs, candidate_scorers, select_event
from infodp.audit.information import mi_lower_bound
from infodp.errors import InternalError, ParameterError
from infodp.mechanisms.registry import REGISTRY, referenced
from infodp.units import nats_to_bits

__all__ = [
    "REFERENCE_MECHANISMS",
    "AuditResult",
    "CallableMechanism",
    "Check",
    "SampledMechanism",
    "VectorisedMechanism",
    "as_mechanism",
    "audit",
    "neighbour_candidates",
    "reference_mechanism",
]

AnyArray = npt.NDArray[Any]
DEFAULT_BATCH = 1_000_000


class SampledMechanism(Protocol):
    """What the auditor needs: ``sample(dataset, size, rng)`` → ``size`` outputs of M(dataset)."""

    def sample(self, dataset: Any, size: int, rng: np.random.Generator) -> Any: ...


@dataclass(frozen=True)
class VectorisedMechanism:
    """A mechanism given by a vectorised sampler ``sampler(dataset, size, rng)``.

    For simulation and auditing only (numpy randomness, floating point): never a release path.

    >>> m = VectorisedMechanism(lambda d, n, rng: np.full(n, float(len(d))))
    >>> m.sample([1, 2], 3, np.random.default_rng(0)).tolist()
    [2.0, 2.0, 2.0]
    """

    sampler: Callable[[Any, int, np.random.Generator], Any]
    name: str = "vectorised"

    def sample(self, dataset: Any, size: int, rng: np.random.Generator) -> Any:
        """``size`` outputs of the mechanism on ``dataset``."""
        return self.sampler(dataset, size, rng)


@dataclass(frozen=True)
class CallableMechanism:
    """Any Python callable ``f(dataset)`` returning one output, called once per sample.

    If ``f`` has a parameter named ``rng`` it receives the audit's numpy Generator (so audits
    are reproducible); otherwise ``f`` uses its own randomness.

    >>> m = CallableMechanism(lambda d, rng: d[0] + rng.normal())
    >>> len(m.sample([0.0], 4, np.random.default_rng(0)))
    4
    """

    function: Callable[..., Any]
    name: str = "callable"

    def sample(self, dataset: Any, size: int, rng: np.random.Generator) -> list[Any]:
        """``size`` outputs, one call each."""
        if _accepts_rng(self.function):
            return [self.function(dataset, rng=rng) for _ in range(size)]
        return [self.function(dataset) for _ in range(size)]


def _accepts_rng(function: Callable[..., Any]) -> bool:
    try:
        return "rng" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def as_mechanism(mechanism: Any) -> SampledMechanism:
    """The auditor's view of ``mechanism``.

    Accepts an object with ``sample(dataset, size, rng)``; an infodp mechanism with a fast
    ``simulate(value, size, rng)`` sampler (the dataset is then the query's value); or a plain
    callable ``f(dataset)``.

    >>> def noisy(dataset):
    ...     return sum(dataset)
    >>> as_mechanism(noisy).name
    'noisy'
    """
    if hasattr(mechanism, "sample") and callable(mechanism.sample):
        return mechanism  # type: ignore[no-any-return]
    simulate = getattr(mechanism, "simulate", None)
    if callable(simulate):
        name = type(mechanism).__name__
        return VectorisedMechanism(lambda d, n, rng: simulate(d, n, rng), name)
    if callable(mechanism):
        return CallableMechanism(mechanism, getattr(mechanism, "__name__", "callable"))
    raise ParameterError(
        "mechanism",
        mechanism,
        "an object with sample(dataset, size, rng), an infodp mechanism, or a callable",
    )


# ---- reference simulators (CLI --mechanism NAME) --------------------------------------------


def _sum(dataset: Any) -> float:
    try:
        return float(np.sum(np.asarray(dataset, dtype=np.float64)))
    except (TypeError, ValueError):
        raise ParameterError("dataset", dataset, "a list of numbers") from None


def _bit(dataset: Any) -> int:
    value = _sum(dataset)
    if value not in (0.0, 1.0):
        raise ParameterError("dataset", dataset, "one bit (0 or 1) for randomized response")
    return int(value)


def reference_mechanism(
    name: str, **params: float
) -> tuple[VectorisedMechanism, PrivacyProfile, list[float], list[float]]:
    """(sampler, claimed profile, D, D') for a named mechanism on a sum query.

    ``laplace`` (scale, sensitivity), ``gaussian`` (sigma, sensitivity), ``discrete-laplace``
    (scale, sensitivity) and ``discrete-gaussian`` (sigma, sensitivity) are infodp's own
    mechanisms (:mod:`infodp.mechanisms`), sampled through their fast ``simulate`` path and
    claimed through their ``profile()`` (the secure release's guarantee, snapping included),
    on the sum of the dataset with D = [0] and D' = [sensitivity]; so is ``staircase``
    (epsilon, sensitivity). ``randomized-response`` (epsilon) is infodp's binary
    :class:`~infodp.mechanisms.randomized_response.RandomizedResponse` on one bit, D = [0],
    D' = [1].

    >>> mech, profile, d, d2 = reference_mechanism("laplace", scale=2.0, sensitivity=1.0)
    >>> round(profile.pure_epsilon(), 6), d, d2      # (1024 + 1)/1024 / 2: snapping charged
    (0.500488, [0.0], [1.0])
    """
    from infodp.mechanisms.randomized_response import RandomizedResponse

    if name not in REFERENCE_MECHANISMS:
        raise ParameterError("mechanism", name, f"one of {', '.join(REFERENCE_MECHANISMS)}")
    allowed = REFERENCE_MECHANISMS[name]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ParameterError(f"mechanism {name} does not take {', '.join(unknown)}.")
    row = REGISTRY[name]
    # A parameter not given is 1; the sensitivity is checked first, whole for a lattice.
    sens = as_positive("sensitivity", params.get("sensitivity", 1.0))
    values: dict[str, Any] = {
        key: as_positive(key, params.get(key, 1.0)) for key in allowed if key != "sensitivity"
    }
    if "sensitivity" in allowed:
        values["sensitivity"] = _int_sens(sens) if "sensitivity" in row.integers else sens
    cls = row.mechanism
    if cls is None:
        raise InternalError(f"reference mechanism {name!r} has no class")
    own: Any = cls(**values)
    if isinstance(own, RandomizedResponse):
        rr = own

        def bit(d: Any, n: int, rng: np.random.Generator) -> Any:
            return rr.simulate(_bit(d), n, rng)

        return (
            VectorisedMechanism(bit, f"infodp randomized-response(epsilon={rr.epsilon:g})"),
            rr.profile(),
            [0.0],
            [1.0],
        )
    label = ", ".join(f"{k}={v:g}" for k, v in sorted(params.items()))
    discrete = "sensitivity" in row.integers

    def value(d: Any) -> float | int:
        total = _sum(d)
        if not discrete:
            return total
        if not total.is_integer():
            raise ParameterError("dataset", d, "integers for a discrete mechanism")
        return int(total)

    mech = VectorisedMechanism(
        lambda d, n, rng: own.simulate(value(d), n, rng), f"infodp {name}({label})"
    )
    return mech, own.profile(), [0.0], [sens]


def _int_sens(value: float) -> int:
    if not float(value).is_integer():
        raise ParameterError("sensitivity", value, "an integer for a discrete mechanism")
    return int(value)


REFERENCE_MECHANISMS: dict[str, tuple[str, ...]] = referenced()
"""Reference simulators the CLI can audit by name, with the parameters each takes."""


def neighbour_candidates(
    low: float = 0.0, high: float = 1.0, size: int = 1
) -> list[tuple[list[float], list[float]]]:
    """A small family of neighbouring dataset pairs with rows in ``[low, high]``.

    Replace-one pairs at the extremes of the domain (both directions) and add/remove-one
    pairs; the auditor tries each on a pilot sample and audits the best on fresh samples.

    >>> neighbour_candidates(0, 1, size=2)[:2]
    [([0.0, 0.0], [0.0, 1.0]), ([1.0, 1.0], [1.0, 0.0])]
    """
    lo, hi = float(low), float(high)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ParameterError("low/high", (low, high), "finite numbers with low < high")
    m = as_positive_int("size", size)
    base_lo, base_hi = [lo] * m, [hi] * m
    pairs = [
        (base_lo, [*base_lo[:-1], hi]),
        (base_hi, [*base_hi[:-1], lo]),
        ([*base_lo[:-1], hi], base_lo),
        (base_hi, base_hi[:-1]),
        (base_lo, base_lo[:-1]),
        ([(lo + hi) / 2] * m, [(lo + hi) / 2] * (m - 1) + [hi]),
    ]
    return [(list(a), list(b)) for a, b in pairs]


# ---- results --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One comparison of an empirical lower bound with the claimed upper bound."""

    name: str
    lower: float
    claimed: float
    violated: bool


@dataclass(frozen=True)
class AuditResult:
    """The outcome of an audit (immutable). Information is in nats.

    ``epsilon_lower`` and ``kl_lower`` come from one held-out event and hold jointly with
    probability ≥ ``confidence``; ``delta_lower`` (from ``delta_event``) and ``mi_lower``
    each hold with ``confidence`` on their own.
    """

    epsilon_lower: float
    confidence: float
    delta: float
    event: str
    favours: str
    p_lower: float
    p_upper: float
    samples: int
    selection_samples: int
    heldout_samples: int
    delta_epsilon: float | None
    delta_lower: float | None
    kl_lower: float
    mi_lower: float
    claimed_epsilon: float | None
    claimed_delta: float
    claimed_information: float | None
    checks: tuple[Check, ...]
    verdict: str
    dataset: Any = None
    neighbour: Any = None
    mechanism: str = ""
    notes: tuple[str, ...] = field(default=())
    delta_event: str | None = None

    def __repr__(self) -> str:
        from infodp._format import format_number as f

        claim = "" if self.claimed_epsilon is None else f", claimed ε {f(self.claimed_epsilon)}"
        return (
            f"AuditResult(ε ≥ {f(self.epsilon_lower)} with {f(100 * self.confidence)}% "
            f"confidence{claim}: {self.verdict}; {f(self.samples)} samples per dataset)"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (nats; bits given as labelled extra keys)."""
        return {
            "mechanism": self.mechanism,
            "epsilon_lower": self.epsilon_lower,
            "confidence": self.confidence,
            "verdict": self.verdict,
            "delta": self.delta,
            "claimed_epsilon": self.claimed_epsilon,
            "claimed_delta": self.claimed_delta,
            "claimed_information_alpha1_nats": self.claimed_information,
            "event": self.event,
            "event_favours": self.favours,
            "p_event_lower": self.p_lower,
            "p_event_neighbour_upper": self.p_upper,
            "samples_per_side": self.samples,
            "selection_samples": self.selection_samples,
            "heldout_samples": self.heldout_samples,
            "delta_epsilon": self.delta_epsilon,
            "delta_lower": self.delta_lower,
            "delta_event": self.delta_event,
            "kl_lower_nats": self.kl_lower,
            "mi_lower_nats": self.mi_lower,
            "mi_lower_bits": nats_to_bits(self.mi_lower),
            "checks": [
                {"name": c.name, "lower": c.lower, "claimed": c.claimed, "violated": c.violated}
                for c in self.checks
            ],
            "dataset": self.dataset,
            "neighbour": self.neighbour,
            "notes": list(self.notes),
        }


# ---- sampling ---------------------------------------------------------------------------------


def _draw(
    mech: SampledMechanism,
    datasets: Sequence[Any],
    size: int,
    rng: np.random.Generator,
    batch: int,
    progress: bool,
) -> list[AnyArray]:
    """``size`` outputs for each dataset, drawn in batches, with an optional progress bar."""
    show = progress and sys.stderr.isatty()
    chunks: list[list[Any]] = [[] for _ in datasets]
    total = size * len(datasets)
    bar: Any = None
    task: Any = None
    if show:
        from rich.console import Console
        from rich.progress import Progress

        bar = Progress(console=Console(stderr=True), transient=True)
        bar.start()
        task = bar.add_task(f"sampling {getattr(mech, 'name', 'mechanism')}", total=total)
    try:
        for i, data in enumerate(datasets):
            done = 0
            while done < size:
                n = min(batch, size - done)
                out = mech.sample(data, n, rng)
                got = len(out)
                if got != n:
                    raise ParameterError(
                        "mechanism", f"{got} outputs for size={n}", "exactly size outputs"
                    )
                chunks[i].append(out)
                done += n
                if bar is not None:
                    bar.update(task, advance=n)
    finally:
        if bar is not None:
            bar.stop()
    result = []
    for parts in chunks:
        arrays = [as_outputs(p) for p in parts]
        kinds = {(a.dtype == object, a.shape[1:]) for a in arrays}
        if len(kinds) != 1:
            raise ParameterError("mechanism", "<mixed outputs>", "outputs of one kind")
        result.append(np.concatenate(arrays) if len(arrays) > 1 else arrays[0])
    return result


def _generator(rng: Any) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, (int, np.integer)) and not isinstance(rng, bool)):
        return np.random.default_rng(rng)
    raise ParameterError("rng", rng, "a numpy Generator, an integer seed or None")


def _claim(
    claimed_epsilon: Any, claimed_delta: Any, claimed_profile: Any
) -> tuple[float | None, float, PrivacyProfile | None]:
    delta = as_probability("claimed_delta", claimed_delta)
    if claimed_profile is not None:
        if not isinstance(claimed_profile, PrivacyProfile):
            raise ParameterError("claimed_profile", claimed_profile, "a PrivacyProfile")
        eps = claimed_profile.epsilon(delta)
        if claimed_epsilon is not None:
            eps = min(eps, as_nonnegative("claimed_epsilon", claimed_epsilon, allow_inf=True))
        return eps, delta, claimed_profile
    if claimed_epsilon is None:
        return None, delta, None
    eps = as_nonnegative("claimed_epsilon", claimed_epsilon, allow_inf=True)
    profile = approximate_dp_profile(eps, delta) if math.isfinite(eps) else None
    return eps, delta, profile


def audit(
    mechanism: Any,
    dataset: Any = None,
    neighbour: Any = None,
    *,
    samples: int = 1_000_000,
    confidence: float = 0.95,
    claimed_epsilon: float | None = None,
    claimed_delta: float = 0.0,
    claimed_profile: PrivacyProfile | None = None,
    delta_epsilon: float | None = None,
    candidates: Sequence[tuple[Any, Any]] | None = None,
    pilot_samples: int | None = None,
    rng: Any = None,
    batch_size: int = DEFAULT_BATCH,
    progress: bool = False,
) -> AuditResult:
    """Audit ``mechanism`` as a black box on ``dataset`` vs ``neighbour``.

    ``samples`` outputs are drawn per dataset; half select the event, half are held out.
    Without a pair, ``candidates`` (default :func:`neighbour_candidates`) are each tried on
    ``pilot_samples`` extra outputs (default ``samples // 10``) and the best is audited on
    fresh samples (the pilot never touches the held-out counts).

    The claim is ``claimed_epsilon`` at ``claimed_delta`` and/or ``claimed_profile``; with
    neither, an infodp mechanism's own ``profile()`` is the claim (then the
    claimed ε is ``profile.epsilon(claimed_delta)`` and the α = 1 bound ``profile.rdp(1)``
    is checked against the KL and MI lower bounds). ``delta_epsilon`` (default: the claimed
    ε) is where the δ lower bound is evaluated.
    """
    mech = as_mechanism(mechanism)
    if claimed_epsilon is None and claimed_profile is None:
        claimed_profile = _own_profile(mechanism)
    n = as_positive_int("samples", samples, minimum=4)
    c = as_probability("confidence", confidence, open_low=True, open_high=True)
    batch = as_positive_int("batch_size", batch_size)
    gen = _generator(rng)
    claimed_eps, claimed_d, profile = _claim(claimed_epsilon, claimed_delta, claimed_profile)
    notes: list[str] = []
    if (dataset is None) != (neighbour is None):
        raise ParameterError("dataset/neighbour", None, "both given, or both omitted (search)")
    if dataset is None:
        pairs = list(candidates) if candidates is not None else neighbour_candidates()
        if not pairs:
            raise ParameterError("candidates", candidates, "at least one (D, D') pair")
        pilot = as_positive_int("pilot_samples", pilot_samples or max(n // 10, 4), minimum=4)
        best: tuple[float, Any, Any] | None = None
        for d0, d1 in pairs:
            o0, o1 = _draw(mech, [d0, d1], pilot, gen, batch, progress)
            _, score = select_event(o0, o1, confidence=c, delta=claimed_d, rng=gen)
            if best is None or score > best[0]:
                best = (score, d0, d1)
        if best is None:
            raise InternalError("no candidate pair")
        dataset, neighbour = best[1], best[2]
        notes.append(f"pair chosen among {len(pairs)} candidates on {pilot} pilot samples per side")
    out0, out1 = _draw(mech, [dataset, neighbour], n, gen, batch, progress)
    half = n // 2
    train0, test0 = out0[:half], out0[half:]
    train1, test1 = out1[:half], out1[half:]
    scorers = candidate_scorers(as_outputs(train0), as_outputs(train1), rng=gen)
    event, _ = select_event(train0, train1, confidence=c, delta=claimed_d, scorers=scorers, rng=gen)
    k0, m0, k1, m1 = _held_out(event, test0, test1)
    eps_lower = epsilon_lower_bound(k0, m0, k1, m1, confidence=c, delta=claimed_d)
    lower0, upper1 = (float(v) for v in _joint_bounds(k0, m0, k1, m1, c))
    d_eps = delta_epsilon if delta_epsilon is not None else claimed_eps
    d_lower = None
    d_event = None
    if d_eps is not None:
        d_eps = as_nonnegative("delta_epsilon", d_eps, allow_inf=True)
        # A second event, chosen on the training half for the δ objective at d_eps.
        d_event, _ = select_event(
            train0, train1, confidence=c, at_epsilon=d_eps, scorers=scorers, rng=gen
        )
        j0, n0_, j1, n1_ = _held_out(d_event, test0, test1)
        d_lower = delta_lower_bound(j0, n0_, j1, n1_, epsilon=d_eps, confidence=c)
    kl_lower = kl_lower_bound(k0, m0, k1, m1, confidence=c)
    mi_lower = _mi(event, train0, train1, test0, test1, c)
    checks = _checks(eps_lower, d_eps, d_lower, kl_lower, mi_lower, claimed_eps, claimed_d, profile)
    claimed_info = profile.information(1.0) if profile is not None else None
    if claimed_info is not None and math.isinf(claimed_info):
        notes.append(
            "the claim bounds no information at α = 1 (unbounded): an (ε, δ) guarantee with "
            "δ > 0 allows any leak with probability δ (“Differential Privacy and Information "
            "Theory”, 2022, 'Hacking (ε, δ)-privacy')"
        )
    if claimed_eps is None and profile is None:
        verdict = "no claim"
    else:
        verdict = "violation" if any(ch.violated for ch in checks) else "consistent"
    return AuditResult(
        epsilon_lower=eps_lower,
        confidence=c,
        delta=claimed_d,
        event=event.describe(),
        favours="dataset" if event.favours == 0 else "neighbour",
        p_lower=lower0,
        p_upper=upper1,
        samples=n,
        selection_samples=half,
        heldout_samples=n - half,
        delta_epsilon=d_eps,
        delta_lower=d_lower,
        kl_lower=kl_lower,
        mi_lower=mi_lower,
        claimed_epsilon=claimed_eps,
        claimed_delta=claimed_d,
        claimed_information=claimed_info,
        checks=tuple(checks),
        verdict=verdict,
        dataset=_jsonable(dataset),
        neighbour=_jsonable(neighbour),
        mechanism=str(getattr(mech, "name", type(mech).__name__)),
        notes=tuple(notes),
        delta_event=None if d_event is None else d_event.describe(),
    )


def _held_out(event: Event, test0: AnyArray, test1: AnyArray) -> tuple[int, int, int, int]:
    """Held-out counts (k_favoured, n_favoured, k_other, n_other) of ``event``."""
    k0, k1 = event.count(test0), event.count(test1)
    m0, m1 = len(test0), len(test1)
    if event.favours == 1:
        return k1, m1, k0, m0
    return k0, m0, k1, m1


def _own_profile(mechanism: Any) -> PrivacyProfile | None:
    """An infodp mechanism's own claim (``profile()``), if it has one."""
    method = getattr(mechanism, "profile", None)
    if not callable(method):
        return None
    try:
        profile = method()
    except TypeError:
        return None
    return profile if isinstance(profile, PrivacyProfile) else None


def _mi(
    event: Event,
    train0: AnyArray,
    train1: AnyArray,
    test0: AnyArray,
    test1: AnyArray,
    confidence: float,
) -> float:
    scorer = event.scorer
    try:
        return mi_lower_bound(
            scorer(train0), scorer(train1), scorer(test0), scorer(test1), confidence=confidence
        )
    except ParameterError:
        return 0.0


def _checks(
    eps_lower: float,
    d_eps: float | None,
    d_lower: float | None,
    kl_lower: float,
    mi_lower: float,
    claimed_eps: float | None,
    claimed_d: float,
    profile: PrivacyProfile | None,
) -> list[Check]:
    checks: list[Check] = []
    if claimed_eps is not None:
        checks.append(Check("epsilon", eps_lower, claimed_eps, bool(eps_lower > claimed_eps)))
    if d_lower is not None and d_eps is not None:
        allowed = claimed_d if profile is None else min(1.0, max(claimed_d, profile.delta(d_eps)))
        if claimed_eps is not None and d_eps < claimed_eps and profile is None:
            allowed = 1.0  # a bare (ε, δ) claim says nothing at smaller ε
        checks.append(Check("delta", d_lower, allowed, bool(d_lower > allowed)))
    if profile is not None:
        kl_claim = profile.rdp(1.0)
        checks.append(Check("kl", kl_lower, kl_claim, bool(kl_lower > kl_claim)))
        info_claim = profile.information(1.0)
        checks.append(Check("information", mi_lower, info_claim, bool(mi_lower > info_claim)))
    return checks


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value
