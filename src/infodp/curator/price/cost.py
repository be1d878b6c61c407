"""What a query costs: the composition of its mechanisms' privacy profiles (no backend).

:func:`plan_cost` splits the query's exact (ε, δ) over the plan's measurements and gives each
a mechanism from :mod:`infodp.mechanisms` (discrete Laplace or discrete Gaussian for counts
and sums, the exponential mechanism for quantiles, partition selection for undeclared group
keys). The query's profile is the sequential composition of the measurements' profiles (each
measurement's cells are disjoint: parallel composition); the ledger stores that profile's
spec, and the per-individual information (nats at α = 1, 2, ∞) is read from it
(:func:`leakage_of`). The information about the *whole table* uses the declared public row
bound only (:mod:`infodp.curator.rules.budget_info`).
"""

from __future__ import annotations

import enum
import functools
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

from infodp._exact import float_down, float_up, parse_exact, split_share
from infodp.curator.declaration.schema import DatasetSchema
from infodp.curator.plan.nodes import Measurement, MeasurementKind, QueryPlan
from infodp.curator.rules import measure_for, measurements
from infodp.errors import InternalError, ParameterError
from infodp.units import nats_to_bits

if TYPE_CHECKING:
    from typing import TypeAlias

    from infodp._jsonable import JsonObject, JsonValue
    from infodp.accounting import PrivacyProfile
    from infodp.mechanisms.gaussian import DiscreteGaussianMechanism
    from infodp.mechanisms.laplace import DiscreteLaplaceMechanism
    from infodp.mechanisms.partition import PartitionSelection
    from infodp.mechanisms.quantile import ExponentialQuantile

    #: The noise added to a count or a sum (grid units).
    Additive: TypeAlias = DiscreteLaplaceMechanism | DiscreteGaussianMechanism

__all__ = [
    "MAX_CELLS",
    "MAX_QUANTILE_CELLS",
    "PRIVACY_PARAMETER_RANGE",
    "Leakage",
    "MeasurementCost",
    "Noise",
    "QueryCost",
    "as_budget_fraction",
    "as_noise",
    "leakage_of",
    "plan_cost",
    "selection",
]

#: Largest number of declared GROUP BY cells a query may ask for (and most groups released
#: by partition selection); refused before anything is reserved.
MAX_CELLS = 50_000
#: Largest number of quantile cells (declared cells × quantiles) a query may ask for: each is
#: one exponential-mechanism draw over its group's distinct values.
MAX_QUANTILE_CELLS = 5_000

#: Exact bounds of a non-zero ε or δ (their float roundings stay normal numbers).
PRIVACY_PARAMETER_RANGE = (Fraction(1, 10**300), Fraction(10**300))


def as_budget_fraction(name: str, value: object, *, allow_zero: bool = False) -> Fraction:
    """A privacy parameter as an exact fraction: "0.1" and 0.1 both give 1/10 exactly.

    Floats are read through their shortest decimal repr, so the ε the ledger debits is the
    one the user typed, and the noise is calibrated to that same exact number.

    >>> as_budget_fraction("epsilon", 0.1), as_budget_fraction("epsilon", "1e-6")
    (Fraction(1, 10), Fraction(1, 1000000))
    >>> as_budget_fraction("epsilon", -1)
    Traceback (most recent call last):
    ...
    infodp.errors.ParameterError: epsilon must be a positive finite number; got -1.
    """
    allowed = "a non-negative finite number" if allow_zero else "a positive finite number"
    if isinstance(value, bool):
        raise ParameterError(name, value, allowed)
    frac = parse_exact(name, value)
    if frac < 0 or (frac == 0 and not allow_zero):
        raise ParameterError(name, value, allowed)
    if frac != 0 and not PRIVACY_PARAMETER_RANGE[0] <= frac <= PRIVACY_PARAMETER_RANGE[1]:
        # Outside this range a float rounding of the value underflows to 0 or overflows (and
        # the accounting downstream would divide by zero or produce NaN) after the charge.
        span = "a number in [1e-300, 1e300]"
        raise ParameterError(name, value, ("0 or " if allow_zero else "") + span)
    return frac


# Exact fractions round to floats through _exact alone (ε and δ up, a remaining budget down);
# the underscored names stay for the engine, which imports them from here.
_float_up = float_up
_float_down = float_down


class Noise(enum.StrEnum):
    """The noise added to counts and sums: discrete Laplace (pure ε) or discrete Gaussian."""

    LAPLACE = "laplace"
    GAUSSIAN = "gaussian"


def as_noise(value: object) -> Noise:
    """``"laplace"`` or ``"gaussian"`` as a :class:`Noise` (ParameterError otherwise).

    >>> as_noise("gaussian")
    <Noise.GAUSSIAN: 'gaussian'>
    """
    if isinstance(value, str):
        try:
            return Noise(value)
        except ValueError:
            pass
    raise ParameterError("noise", value, "'laplace' or 'gaussian'")


@dataclass(frozen=True, slots=True)
class MeasurementCost:
    """One noisy measurement: its (ε, δ) share, integer sensitivity, grid step and noise.

    :attr:`mechanism` is the :mod:`infodp.mechanisms` object that releases every cell of it
    (the exponential mechanism for quantiles, discrete Laplace or discrete Gaussian for
    counts and sums; None when the sensitivity is 0 and nothing needs hiding).
    """

    measurement: Measurement
    epsilon: Fraction
    sensitivity: int
    step: float
    noise: Noise = Noise.LAPLACE
    delta: Fraction = Fraction(0)
    #: :attr:`mechanism`, built once when this cost is made (a release reads it per cell
    #: and per measurement; it pickles with the cost, so a worker process does not rebuild it).
    _built: Additive | ExponentialQuantile | None = field(
        init=False, default=None, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "_built", _mechanism(self))

    @property
    def mechanism(self) -> Additive | ExponentialQuantile | None:
        """The calibrated mechanism object (built once, with this measurement cost)."""
        return self._built

    @property
    def additive(self) -> bool:
        """False for a histogram measurement (the exponential mechanism; its rule says)."""
        return measure_for(self.measurement).additive

    @property
    def noise_mechanism(self) -> Additive | None:
        """:attr:`mechanism` of a count or sum (None: sensitivity 0, no noise)."""
        mech = self._built
        if not self.additive:
            raise InternalError(f"{self.measurement.key} adds no noise")
        return mech  # type: ignore[return-value]  # not a quantile: additive or None

    @property
    def quantile_mechanism(self) -> ExponentialQuantile:
        """:attr:`mechanism` of a quantile (the exponential mechanism over its grid)."""
        mech = self._built
        if self.additive or mech is None:
            raise InternalError(f"{self.measurement.key} is not a quantile with noise")
        return mech  # type: ignore[return-value]  # a quantile's mechanism

    @property
    def scale(self) -> float:
        """Noise scale in grid units: b for Laplace, σ for Gaussian; 2Δ/ε for quantiles."""
        if not self.additive:
            return float(2 * Fraction(self.sensitivity) / self.epsilon)
        mech = self.noise_mechanism
        if mech is None:
            return 0.0
        from infodp.mechanisms.laplace import DiscreteLaplaceMechanism  # loaded by every query

        return float(mech.scale if isinstance(mech, DiscreteLaplaceMechanism) else mech.sigma)

    @property
    def mechanism_name(self) -> str:
        """The name shown in the cost (exponential, discrete_laplace, discrete_gaussian)."""
        if not self.additive:
            return "exponential"
        return "discrete_gaussian" if self.noise == Noise.GAUSSIAN else "discrete_laplace"

    def profile(self) -> PrivacyProfile:
        """The privacy profile of this measurement over all its cells.

        The cells are disjoint (a row falls in one cell): parallel composition (McSherry
        2009), with the sensitivity m covering a unit's m rows in any cells (L1 for Laplace
        and the exponential mechanism; L2 ≤ L1 for the Gaussian).
        """
        from infodp.accounting import pure_dp_profile

        mech = self.mechanism
        return pure_dp_profile(0.0) if mech is None else mech.profile()

    def halfwidth(self, beta: float) -> int:
        """Grid units h with P(|noise| > h) ≤ β for one cell (from the mechanism's own tail)."""
        mech = self.noise_mechanism
        return 0 if mech is None else int(mech.halfwidth(beta))


@functools.lru_cache(maxsize=4096)
def _mechanism(p: MeasurementCost) -> Additive | ExponentialQuantile | None:
    # Each family is imported only when used: the Gaussian's module loads scipy, which a
    # Laplace query (the CLI's default) never needs (its start-up: benchmarks/cli_startup.py).
    if p.sensitivity == 0:
        return None
    if not measure_for(p.measurement).additive:  # the exponential mechanism's histogram
        from infodp.mechanisms.quantile import ExponentialQuantile

        return ExponentialQuantile(p.epsilon, p.sensitivity)
    if p.noise == Noise.GAUSSIAN:
        from infodp.mechanisms.gaussian import DiscreteGaussianMechanism

        # Calibrated at floats not above the exact (ε, δ) share, so the release is (ε, δ)-DP
        # for the exact values charged (Balle & Wang 2018 analytic calibration, then the
        # discrete Gaussian's own profile, Canonne, Kamath & Steinke 2020).
        return DiscreteGaussianMechanism.calibrate(
            _float_down(p.epsilon), _float_down(p.delta), p.sensitivity
        )
    from infodp.mechanisms.laplace import DiscreteLaplaceMechanism

    # scale rounded up: ε_real = Δ/scale ≤ the exact ε charged (Ghosh et al. 2009).
    return DiscreteLaplaceMechanism(_float_up(Fraction(p.sensitivity) / p.epsilon), p.sensitivity)


@dataclass(frozen=True, slots=True)
class QueryCost:
    """What a query costs: (ε, δ) for the analyst, information (nats) about the whole table."""

    epsilon: Fraction
    delta: Fraction
    parts: tuple[MeasurementCost, ...]
    information_nats: float
    cells: int
    #: The declared public row bound the information cost assumes (None: none declared).
    row_bound: int | None = None
    #: Groups one unit may add under partition selection (the schema's group limit).
    group_limit: int = 1

    def profile(self) -> PrivacyProfile:
        """The composed profile of the measurements (sequential composition, Dwork & Roth
        2014, Thm 3.16 and its tight PLD/RDP forms); with partition selection the selected
        count is replaced by the (ε, δ) profile of :class:`~infodp.mechanisms.PartitionSelection`.
        """
        return _profile_of(self)

    def profile_spec(self) -> JsonObject:
        """:meth:`profile` as an :mod:`infodp.accounting.spec` (what the ledger stores)."""
        from infodp.accounting.spec import profile_to_spec

        return profile_to_spec(self.profile())

    def to_dict(self) -> JsonObject:
        """JSON-ready (floats rounded up; exact fractions alongside)."""
        return {
            "information_scope": _information_scope(
                self.row_bound, self.information_nats, self.cells < 0
            ),
            "information_unbounded": _unbounded_reason(
                self.row_bound, self.information_nats, self.cells < 0
            ),
            "epsilon": _float_up(self.epsilon),
            "delta": _float_up(self.delta),
            "epsilon_exact": str(self.epsilon),
            "delta_exact": str(self.delta),
            "information_nats": self.information_nats,
            "information_bits": nats_to_bits(self.information_nats),
            "measurements": [
                {
                    "measurement": p.measurement.key,
                    "epsilon": _float_up(p.epsilon),
                    "sensitivity": p.sensitivity * p.step,
                    "mechanism": p.mechanism_name,
                    "noise_scale": p.scale * p.step,
                }
                for p in self.parts
            ],
        }


def _unbounded_reason(row_bound: int | None, nats: float, selection: bool) -> str | None:
    """Why the information about the whole table is not bounded (None: it is).

    >>> _unbounded_reason(1000, math.inf, True)
    'the key set DP partition selection releases is not covered by this bound'
    >>> _unbounded_reason(None, math.inf, False)
    'no public row bound declared'
    """
    if math.isfinite(nats):
        return None
    if selection:  # whatever the row bound: the released keys are not accounted for
        return "the key set DP partition selection releases is not covered by this bound"
    if row_bound is None:
        return "no public row bound declared"
    return "a measurement without a finite bound on its information"


def _information_scope(row_bound: int | None, nats: float, selection: bool = False) -> str:
    """What ``information_nats`` covers (it never uses the measured, private row count)."""
    if selection and not math.isfinite(nats):
        return "not bounded: the released key set (partition selection) is not covered here"
    if row_bound is None and not math.isfinite(nats):
        return (
            "per individual only: the table declares no public row count or bound, so the "
            "information about the whole table is not bounded here (inf)"
        )
    if not math.isfinite(nats):
        return "not bounded: the released key set (partition selection) is not covered here"
    if row_bound is None:
        return "about the whole table (this query's information does not depend on its size)"
    return f"about the whole table, assuming its declared public bound of {row_bound} rows"


def _cells(plan: QueryPlan) -> int:
    n = 1
    for g in plan.group_by:
        if g.categories is None:
            return -1
        n *= len(g.categories)
    return n


def plan_cost(
    plan: QueryPlan,
    schema: DatasetSchema,
    epsilon: Fraction,
    delta: Fraction,
    rows: int | None,
    noise: Noise | str = Noise.LAPLACE,
) -> QueryCost:
    """Split ε over the plan's measurements and bound the information released.

    Each measurement gets an equal float share of ε (and of δ with Gaussian noise), rounded
    down so that the shares add to at most the query's (ε, δ), exactly and in floats
    (:func:`infodp._exact.split_share`); the query is charged its whole (ε, δ).

    ``rows`` is the declared public bound on the row count (:attr:`DatasetSchema.row_bound`),
    never the measured count: the cost must be the same on neighbouring tables. Without one,
    counts and sums release an unbounded amount of information about the whole table (inf).

    Sensitivities (L1 over all cells, add/remove one unit with at most m rows): COUNT m;
    SUM m·max|v|; centred sums m·r and m·r² (r = largest |v − centre|), in grid units; the
    two-sided quantile score (distance from q·n to the ranks a grid point occupies) changes by
    at most m (exponential mechanism).

    >>> from infodp.curator.declaration.source import load_schema
    >>> from infodp.curator.sql.parse import parse_query
    >>> s = load_schema({"table": "t", "privacy_unit": "row",
    ...                  "columns": {"x": {"type": "int", "bounds": [0, 10]}}})
    >>> c = plan_cost(parse_query("SELECT AVG(x) FROM t", s), s, Fraction(1), Fraction(0), 100)
    >>> [(p.measurement.key, str(p.epsilon), p.sensitivity) for p in c.parts]
    [('csum(x)', '1/2', 5), ('count(x)', '1/2', 1)]
    """
    noise = as_noise(noise)
    ms = measurements(plan)
    additive = [x for x in ms if measure_for(x).additive]
    gaussian = noise == Noise.GAUSSIAN and bool(additive)
    _check_noise(plan, gaussian, delta)
    # Float shares whose sum never exceeds the query's exact (ε, δ): the mechanisms and the
    # profile the ledger checks against that (ε, δ) see each share unrounded.
    if not ms:
        # Only declared keys are released (GROUP BY without an aggregate): they are public,
        # nothing is measured, and nothing is charged whatever (ε, δ) was offered.
        epsilon = delta = Fraction(0)
    share = split_share(epsilon, len(ms)) if ms else Fraction(0)
    delta_share = split_share(delta, len(additive)) if gaussian else Fraction(0)
    parts = tuple(_part(meas, schema, share, delta_share if gaussian else None) for meas in ms)
    cells = _cells(plan)
    if plan.needs_partition_selection:
        _check_selection(plan, parts, delta)
        info = math.inf  # the released key set itself is not bounded by this accounting
    else:
        delta = delta if gaussian else Fraction(0)
        info = _information(parts, schema, rows, cells)
    return QueryCost(epsilon, delta, parts, info, cells, rows, schema.group_limit)


def _unbounded(plan: QueryPlan) -> str:
    return ", ".join(g.column for g in plan.group_by if g.categories is None)


def _check_noise(plan: QueryPlan, gaussian: bool, delta: Fraction) -> None:
    """Gaussian noise needs δ > 0 and declared group keys (selection uses Laplace counts)."""
    if gaussian and plan.needs_partition_selection:
        raise ParameterError(
            "noise",
            str(Noise.GAUSSIAN),
            f"'laplace' for GROUP BY over {_unbounded(plan)} (no declared categories: partition "
            "selection uses Laplace counts); or declare the column's categories",
        )
    if gaussian and delta <= 0:
        raise ParameterError("delta", float(delta), "> 0 for Gaussian noise (it is (ε, δ)-DP)")


def _part(
    meas: Measurement, schema: DatasetSchema, share: Fraction, gaussian_delta: Fraction | None
) -> MeasurementCost:
    """One measurement priced by its kind's rule (sensitivity and step), calibrated now so
    that a refusal comes before any reservation; ``gaussian_delta``: its δ share when the
    query uses Gaussian noise (None: Laplace)."""
    rule = measure_for(meas)
    sens, step = rule.sensitivity(meas, schema), rule.step(meas, schema)
    if sens > 0 and not float(Fraction(sens) / share) > 0:
        # ε so large that Δ/ε underflows: refused before anything is reserved (this check
        # does not depend on the table, unlike the information cost).
        raise ParameterError(
            "scale", 0.0, "a positive number (> 0): epsilon is too large for its noise scale"
        )
    if rule.additive and gaussian_delta is not None:
        part = MeasurementCost(meas, share, sens, step, Noise.GAUSSIAN, gaussian_delta)
    else:
        part = MeasurementCost(meas, share, sens, step, Noise.LAPLACE, Fraction(0))
    return part  # calibrated when made: a refusal comes before any reservation


def _check_selection(plan: QueryPlan, parts: tuple[MeasurementCost, ...], delta: Fraction) -> None:
    """What partition selection (undeclared GROUP BY keys) refuses."""
    if any(not measure_for(p.measurement).additive for p in parts):
        # Each quantile histogram is its own bounded statement; keys seen only there would
        # become extra candidates for selection, beyond the k per unit the threshold's δ
        # assumes. Refused until all measurements share one bounded row set.
        raise ParameterError(
            f"MEDIAN/QUANTILE with GROUP BY over {_unbounded(plan)} (no declared categories) is "
            "not supported: declare the column's categories, or ask the quantile separately."
        )
    if delta <= 0:
        raise ParameterError(
            "delta",
            float(delta),
            f"> 0 for GROUP BY over {_unbounded(plan)}, which has no declared categories (DP "
            "partition selection costs δ; or declare the column as a category)",
        )


def _information(
    parts: tuple[MeasurementCost, ...], schema: DatasetSchema, rows: int | None, cells: int
) -> float:
    """Nats about the whole table: every cell of every measurement (each kind's rule gives
    one cell's, :mod:`~infodp.curator.rules.budget_info`), rounded up; the cell counts are
    capped."""
    if cells > MAX_CELLS:
        raise ParameterError("GROUP BY", cells, f"at most {MAX_CELLS} declared cells")
    quantile_cells = cells * sum(1 for p in parts if not measure_for(p.measurement).additive)
    if quantile_cells > MAX_QUANTILE_CELLS:
        raise ParameterError(
            "GROUP BY with MEDIAN/QUANTILE",
            f"{cells} cells × quantiles = {quantile_cells}",
            f"at most {MAX_QUANTILE_CELLS} quantile cells in all (fewer groups or quantiles)",
        )
    info = 0.0
    for p in parts:
        info += cells * measure_for(p.measurement).information(p, schema, rows)
    return math.nextafter(info, math.inf) if 0 < info < math.inf else info


#: The count partition selection thresholds (COUNT(*) without a FILTER; rules.measurements).
_SELECTION_COUNT = Measurement(MeasurementKind.COUNT_ROWS)


@functools.lru_cache(maxsize=1024)
def _profile_of(cost: QueryCost) -> PrivacyProfile:
    from infodp.accounting import compose

    if not cost.parts:  # declared keys only: nothing measured (plan_cost)
        from infodp.accounting.profile import PureDPProfile

        return PureDPProfile(0.0)
    profiles = []
    for p in cost.parts:
        if cost.cells < 0 and p.measurement == _SELECTION_COUNT:
            # Partition selection: the selection count and the released key set, (ε, δ).
            from infodp.mechanisms import PartitionSelection  # only then: a module and a class

            sel = PartitionSelection(p.scale, cost.group_limit, p.sensitivity, cost.delta)
            profiles.append(sel.profile())
        else:
            profiles.append(p.profile())
    return profiles[0] if len(profiles) == 1 else compose(*profiles)


def selection(cost: QueryCost) -> PartitionSelection:
    """The :class:`~infodp.mechanisms.PartitionSelection` of a cost with unknown group keys."""
    from infodp.mechanisms import PartitionSelection

    p = next(q for q in cost.parts if q.measurement == _SELECTION_COUNT)
    return PartitionSelection(p.scale, cost.group_limit, p.sensitivity, cost.delta)


@dataclass(frozen=True, slots=True)
class Leakage(Mapping[str, "JsonValue"]):
    """The :func:`infodp.explain.explain` summary (per individual) of a query's cost, frozen:
    made once per priced query and shared by every answer of it (nothing to copy).

    It reads as the JSON object an answer shows under ``cost.leakage`` (``leak["nats"]["1"]``;
    each read of a nested object is a fresh copy); :meth:`to_dict` is that object.
    """

    epsilon: float
    delta: float
    #: Nats at α = 1, 2, ∞ (keys "1", "2", "inf"; None: no finite guarantee at that order).
    nats: tuple[tuple[str, float | None], ...]
    bits: tuple[tuple[str, float | None], ...]
    attacker_success_max: float
    posterior_odds_bound: float
    unbounded_probability: float
    warnings: tuple[str, ...]
    #: δ·N for the declared public row bound N (None: no bound declared, left out).
    expected_exposed_individuals: float | None = None
    #: Whether a row bound was declared (then ``expected_exposed_individuals`` is shown).
    rows_declared: bool = False

    def to_dict(self) -> JsonObject:
        """The summary as a fresh JSON object (what an answer's ``cost.leakage`` holds)."""
        out: JsonObject = {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "nats": dict(self.nats),
            "bits": dict(self.bits),
            "attacker_success_max": self.attacker_success_max,
            "posterior_odds_bound": self.posterior_odds_bound,
            "unbounded_probability": self.unbounded_probability,
            "warnings": list(self.warnings),
        }
        if self.rows_declared:
            out["expected_exposed_individuals"] = self.expected_exposed_individuals
        return out

    def __getitem__(self, key: str) -> JsonValue:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return 8 + self.rows_declared


@functools.lru_cache(maxsize=256)
def _leakage_cached(spec: str, rows: int | None) -> Leakage:
    from infodp.accounting.spec import profile_from_spec
    from infodp.explain import explain

    e = explain(profile_from_spec(json.loads(spec)), rows=rows)
    # The fields of Explanation.to_dict this summary keeps, read directly: to_dict would also
    # tabulate the attacker's trade-off curve, which is most of its cost (a fixed cost of
    # every query) and is not part of the summary.
    return Leakage(
        e.epsilon,
        e.delta,
        tuple(e.nats.items()),
        tuple(e.bits.items()),
        e.attacker_success_max,
        e.posterior_odds_bound,
        e.unbounded_probability,
        tuple(e.warnings),
        e.expected_exposed_individuals if rows is not None else None,
        rows is not None,
    )


def leakage_of(cost: QueryCost) -> Leakage:
    """The :func:`infodp.explain.explain` summary (per individual) of the query's composed
    profile: nats at α = 1, 2, ∞ read from the mechanisms' profiles.

    >>> from infodp.curator.declaration.source import load_schema
    >>> from infodp.curator.sql.parse import parse_query
    >>> s = load_schema({"table": "t", "privacy_unit": "row", "public_rows": 100,
    ...                  "columns": {"x": {"type": "int", "bounds": [0, 10]}}})
    >>> c = plan_cost(parse_query("SELECT AVG(x) FROM t", s), s, Fraction(1), Fraction(0), 100)
    >>> 0.2 < dict(leakage_of(c).nats)["1"] < 0.25
    True
    """
    return _leakage_cached(json.dumps(cost.profile_spec(), sort_keys=True), cost.row_bound)
