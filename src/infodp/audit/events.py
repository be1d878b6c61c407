"""Distinguishing events for auditing: thresholds, intervals and a learned classifier.

An audit needs an event ``E`` on which ``P(M(D) ∈ E)`` and ``P(M(D') ∈ E)`` differ by as large a
ratio as possible. Every event here is an interval ``{y : low ≤ s(y) ≤ high}`` of a real
*score* ``s``:

- ``identity``: the output itself (numeric scalar outputs) — thresholds and intervals, the
  families of Ding et al. 2018 ("Detecting violations of differential privacy") and of
  DP-Sniper's threshold rule (Bichsel et al. 2021);
- ``table``: for discrete outputs (labels, or few distinct numbers) the empirical log-ratio
  ``log(p̂0(y)/p̂1(y))`` with add-½ smoothing; thresholding it gives the Neyman–Pearson-optimal
  sets of outputs ranked by likelihood ratio;
- ``logistic``: a logistic-regression classifier (the "learned classifier" of DP-Sniper,
  Bichsel et al. 2021) on features ``(y, |y|, y²)`` per coordinate, for vectors and as
  a second opinion on scalars; the event thresholds its log-odds.

:func:`select_event` picks the best event *on training samples only* (it maximises the
Clopper–Pearson ε lower bound on those samples, which penalises rare events); the auditor then
counts the chosen event on fresh held-out samples, so the final bound is honest.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> a, b = rng.laplace(0, 1, 20_000), rng.laplace(1, 1, 20_000)
>>> event, eps = select_event(a, b, confidence=0.95)
>>> 0.8 < eps < 1.0, event.kind in ("threshold", "interval")
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp._validate import as_probability, as_real
from infodp.audit.estimators import _epsilon_from_bounds, _joint_bounds
from infodp.errors import InternalError, ParameterError

__all__ = ["Event", "Scorer", "as_outputs", "candidate_scorers", "select_event"]

ArrayF = npt.NDArray[np.float64]
AnyArray = npt.NDArray[Any]

_MAX_TABLE = 256  # at most this many distinct outputs are treated as labels
_THRESHOLDS = 1024  # candidate cut points for one-sided events
_INTERVAL_POINTS = 64  # grid for two-sided intervals (C(64, 2) = 2016 intervals)
_FIT_SAMPLES = 50_000  # samples per side used to fit the logistic classifier


def as_outputs(samples: Any) -> AnyArray:
    """Mechanism outputs as an array: float64 (n,) for numbers, (n, d) for vectors, object
    (n,) for labels (anything else hashable).

    >>> as_outputs([1, 2.5]).dtype.name, as_outputs([[1, 2], [3, 4]]).shape
    ('float64', (2, 2))
    >>> as_outputs(["yes", "no"]).dtype.name
    'object'
    """
    if isinstance(samples, np.ndarray) and samples.dtype.kind in "biuf":
        arr = samples.astype(np.float64, copy=False)
    else:
        items = list(samples)
        if items and all(
            isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
            for v in items
        ):
            arr = np.asarray(items, dtype=np.float64)
        elif items and all(
            isinstance(v, (list, tuple, np.ndarray))
            and all(isinstance(c, (int, float, np.integer, np.floating)) for c in v)
            for v in items
        ):
            try:
                arr = np.asarray(items, dtype=np.float64)
            except ValueError:
                raise ParameterError(
                    "samples", "<ragged vectors>", "vectors of one common length"
                ) from None
        else:
            out = np.empty(len(items), dtype=object)
            for i, v in enumerate(items):
                out[i] = _hashable(v)
            return out
    if arr.ndim == 0 or arr.ndim > 2 or arr.shape[0] == 0:
        raise ParameterError(
            "samples", f"array of shape {arr.shape}", "a non-empty 1-d or 2-d array"
        )
    if np.isnan(arr).any():
        raise ParameterError("samples", "<contains NaN>", "outputs without NaN")
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    return arr


def _hashable(value: Any) -> Hashable:
    if isinstance(value, (list, np.ndarray)):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Scorer:
    """A map from outputs to real scores (immutable).

    ``kind`` is ``"identity"`` (scalar outputs), ``"table"`` (log-ratio per distinct output;
    unseen outputs score 0) or ``"logistic"`` (log-odds of a fitted logistic classifier).

    >>> Scorer("identity")(as_outputs([3.0, -1.0])).tolist()
    [3.0, -1.0]
    >>> Scorer("table", table=(("a", 2.0),))(as_outputs(["a", "b"])).tolist()
    [2.0, 0.0]
    """

    kind: str
    table: tuple[tuple[Hashable, float], ...] = ()
    weights: tuple[float, ...] = ()
    center: tuple[float, ...] = ()
    spread: tuple[float, ...] = ()

    def __call__(self, outputs: AnyArray) -> ArrayF:
        if self.kind == "identity":
            if outputs.dtype == object or outputs.ndim != 1:
                raise ParameterError("outputs", "<non-scalar outputs>", "numbers for 'identity'")
            return np.asarray(outputs, dtype=np.float64)
        if self.kind == "table":
            lookup = dict(self.table)
            if outputs.dtype == object:
                return np.fromiter(
                    (lookup.get(v, 0.0) for v in outputs), dtype=np.float64, count=len(outputs)
                )
            if outputs.ndim != 1 or not self.table:
                return np.zeros(len(outputs), dtype=np.float64)
            keys = np.asarray([k for k, _ in self.table], dtype=np.float64)
            vals = np.asarray([v for _, v in self.table], dtype=np.float64)
            order = np.argsort(keys)
            keys, vals = keys[order], vals[order]
            flat = np.asarray(outputs, dtype=np.float64)
            pos = np.minimum(np.searchsorted(keys, flat), len(keys) - 1)
            return np.where(keys[pos] == flat, vals[pos], 0.0)
        if self.kind == "logistic":
            x = _standardise(_features(outputs), self.center, self.spread)
            w = np.asarray(self.weights, dtype=np.float64)
            return np.asarray(x @ w[1:] + w[0], dtype=np.float64)
        raise InternalError(f"unknown scorer kind {self.kind!r}")

    def describe(self) -> str:
        """A short human description of the score."""
        return {
            "identity": "the output",
            "table": f"the empirical log-ratio of {len(self.table)} distinct outputs",
            "logistic": f"a logistic classifier's log-odds ({len(self.weights) - 1} features)",
        }.get(self.kind, self.kind)


@dataclass(frozen=True)
class Event:
    """The event ``{y : low ≤ score(y) ≤ high}`` (immutable).

    ``favours`` is 0 when the event is likelier under the first dataset D (the bound is on
    ``log P_D(E)/P_D'(E)``) and 1 when it is likelier under the neighbour D'.

    >>> e = Event(Scorer("identity"), -math.inf, 0.0, favours=0)
    >>> e.contains(as_outputs([-1.0, 0.0, 2.0])).tolist()
    [True, True, False]
    >>> e.describe()
    'the output ≤ 0'
    """

    scorer: Scorer
    low: float
    high: float
    favours: int

    def contains(self, outputs: AnyArray) -> npt.NDArray[np.bool_]:
        """Boolean mask: which outputs fall in the event."""
        s = self.scorer(outputs)
        return (s >= self.low) & (s <= self.high)

    def count(self, outputs: AnyArray) -> int:
        """How many outputs fall in the event."""
        return int(np.count_nonzero(self.contains(outputs)))

    @property
    def kind(self) -> str:
        """``"threshold"`` (one side infinite) or ``"interval"``."""
        return "threshold" if math.isinf(self.low) or math.isinf(self.high) else "interval"

    def describe(self) -> str:
        """A short human description, e.g. ``'the output ≤ 0'``."""
        what = self.scorer.describe()
        if math.isinf(self.low) and math.isinf(self.high):
            return f"any value of {what}"
        if math.isinf(self.low):
            return f"{what} ≤ {self.high:.6g}"
        if math.isinf(self.high):
            return f"{what} ≥ {self.low:.6g}"
        return f"{self.low:.6g} ≤ {what} ≤ {self.high:.6g}"


# ---- features and classifier ----------------------------------------------------------------


def _features(outputs: AnyArray) -> ArrayF:
    if outputs.dtype == object:
        raise ParameterError("outputs", "<labels>", "numbers or vectors for a classifier")
    x = np.asarray(outputs, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    return np.concatenate([x, np.abs(x), x * x], axis=1)


def _standardise(x: ArrayF, center: tuple[float, ...], spread: tuple[float, ...]) -> ArrayF:
    return np.asarray((x - np.asarray(center)) / np.asarray(spread), dtype=np.float64)


def _fit_logistic(x0: ArrayF, x1: ArrayF, rng: np.random.Generator) -> Scorer:
    """Logistic regression (label 1 for D) by Newton's method with a small ridge penalty."""
    if len(x0) > _FIT_SAMPLES:
        x0 = x0[rng.choice(len(x0), _FIT_SAMPLES, replace=False)]
    if len(x1) > _FIT_SAMPLES:
        x1 = x1[rng.choice(len(x1), _FIT_SAMPLES, replace=False)]
    x = np.concatenate([x0, x1])
    center = x.mean(axis=0)
    spread = x.std(axis=0)
    spread = np.where(spread > 0, spread, 1.0)
    z = (x - center) / spread
    design = np.concatenate([np.ones((len(z), 1)), z], axis=1)
    y = np.concatenate([np.ones(len(x0)), np.zeros(len(x1))])
    w = np.zeros(design.shape[1])
    ridge = 1e-6 * len(z)
    for _ in range(25):
        eta = np.clip(design @ w, -30.0, 30.0)
        p = 1.0 / (1.0 + np.exp(-eta))
        grad = design.T @ (p - y) + ridge * w
        hess = (design * (p * (1.0 - p))[:, None]).T @ design + ridge * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w = w - step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return Scorer(
        "logistic",
        weights=tuple(float(v) for v in w),
        center=tuple(float(v) for v in center),
        spread=tuple(float(v) for v in spread),
    )


def _table_scorer(train0: AnyArray, train1: AnyArray) -> Scorer | None:
    keys0, counts0 = _unique(train0)
    keys1, counts1 = _unique(train1)
    if keys0 is None or keys1 is None:
        return None
    c0 = dict(zip(keys0, counts0, strict=True))
    c1 = dict(zip(keys1, counts1, strict=True))
    keys = set(c0) | set(c1)
    n0, n1 = len(train0), len(train1)
    numeric = train0.dtype != object
    if len(keys) > _MAX_TABLE or (numeric and 10 * len(keys) > n0 + n1):
        return None  # (nearly) continuous outputs: a table would only memorise the samples
    table = tuple(
        (k, math.log((c0.get(k, 0) + 0.5) / n0) - math.log((c1.get(k, 0) + 0.5) / n1))
        for k in sorted(keys, key=repr)
    )
    return Scorer("table", table=table)


def _unique(outputs: AnyArray) -> tuple[list[Hashable] | None, list[int]]:
    if outputs.dtype == object:
        counts: dict[Hashable, int] = {}
        for v in outputs:
            counts[v] = counts.get(v, 0) + 1
            if len(counts) > _MAX_TABLE:
                return None, []
        return list(counts), list(counts.values())
    if outputs.ndim != 1:
        return None, []
    values, counts_arr = np.unique(outputs, return_counts=True)
    if len(values) > _MAX_TABLE:
        return None, []
    return [float(v) for v in values], [int(c) for c in counts_arr]


def candidate_scorers(
    train0: AnyArray, train1: AnyArray, *, rng: np.random.Generator | None = None
) -> list[Scorer]:
    """The scores worth searching for ``train0`` (samples of M(D)) and ``train1`` (of M(D')).

    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> [s.kind for s in candidate_scorers(rng.normal(size=100), rng.normal(size=100))]
    ['identity', 'logistic']
    >>> [s.kind for s in candidate_scorers(as_outputs(["a", "b"]), as_outputs(["b", "b"]))]
    ['table']
    """
    gen = rng if rng is not None else np.random.default_rng(0)
    if (train0.dtype == object) != (train1.dtype == object) or train0.shape[1:] != train1.shape[1:]:
        raise ParameterError(
            "samples", "<outputs of different kinds>", "outputs of one kind for D and D'"
        )
    out: list[Scorer] = []
    table = _table_scorer(train0, train1)
    if train0.dtype != object and train0.ndim == 1:
        out.append(Scorer("identity"))
    if table is not None:
        out.append(table)
    if train0.dtype != object and table is None:
        out.append(_fit_logistic(_features(train0), _features(train1), gen))
    if not out:
        raise ParameterError(
            "samples",
            "<labels>",
            f"at most {_MAX_TABLE} distinct labels (or numbers/vectors) for the audit",
        )
    return out


# ---- search ---------------------------------------------------------------------------------


def _cut_points(sorted_pooled: ArrayF, limit: int) -> ArrayF:
    """At most ``limit`` cut points: every distinct value, or evenly spaced order statistics."""
    n = sorted_pooled.size
    if n == 0:
        return sorted_pooled
    distinct = sorted_pooled[np.concatenate([[True], sorted_pooled[1:] != sorted_pooled[:-1]])]
    if len(distinct) <= limit:
        return np.asarray(distinct, dtype=np.float64)
    idx = np.round(np.linspace(0, n - 1, limit)).astype(np.int64)
    return np.asarray(np.unique(sorted_pooled[idx]), dtype=np.float64)


def _interval_counts(sorted_s: ArrayF, lows: ArrayF, highs: ArrayF) -> npt.NDArray[np.int64]:
    right = np.searchsorted(sorted_s, highs, side="right")
    left = np.searchsorted(sorted_s, lows, side="left")
    return np.asarray(right - left, dtype=np.int64)


def select_event(
    train0: Any,
    train1: Any,
    *,
    confidence: float = 0.95,
    delta: float = 0.0,
    at_epsilon: float | None = None,
    scorers: list[Scorer] | None = None,
    rng: np.random.Generator | None = None,
) -> tuple[Event, float]:
    """The event with the largest Clopper–Pearson ε lower bound on the *training* samples.

    With ``at_epsilon`` the objective is instead the δ lower bound ``L0 − e^ε·U1`` at that ε
    (the event that best refutes an (ε, δ) claim). ``scorers`` defaults to
    :func:`candidate_scorers` of the training samples.

    The ranking bound is taken at level ``1 − (1 − confidence)/F`` for a family of F events
    (Bonferroni), so it holds for all candidates at once. Searches thresholds ``s ≥ t``,
    ``s ≤ t`` (up to 1024 cut points) and intervals (a 64-point grid) of every candidate
    score, in both orientations. The returned ε is measured on the same samples that chose
    the event, so it is *not* a valid bound: count the event on fresh samples (:func:`audit`
    does) before claiming anything.

    >>> import numpy as np
    >>> rng = np.random.default_rng(2)
    >>> e, _ = select_event(rng.integers(0, 2, 5000), 1 - rng.integers(0, 2, 5000))
    >>> e.scorer.kind in ("identity", "table")
    True
    """
    c = as_probability("confidence", confidence, open_low=True, open_high=True)
    d = as_probability("delta", delta)
    target = None if at_epsilon is None else as_real("at_epsilon", at_epsilon, allow_inf=True)
    t0, t1 = as_outputs(train0), as_outputs(train1)
    best: tuple[float, Event] | None = None
    if scorers is None:
        scorers = candidate_scorers(t0, t1, rng=rng)
    # Rank events by a bound that holds uniformly over the whole family (Bonferroni over
    # 2·(2·1024 + 2080) events per score): noisy small-probability events then lose to large
    # ones, which curbs the winner's curse of picking the luckiest event on the training half.
    family = 2 * (2 * _THRESHOLDS + _INTERVAL_POINTS * (_INTERVAL_POINTS + 1) // 2)
    c = 1.0 - (1.0 - c) / (family * len(scorers))
    for scorer in scorers:
        s0 = np.sort(scorer(t0))
        s1 = np.sort(scorer(t1))
        pooled = np.sort(np.concatenate([s0, s1]), kind="stable")  # two sorted runs: fast
        cuts = _cut_points(pooled, _THRESHOLDS)
        grid = _cut_points(pooled, _INTERVAL_POINTS)
        i, j = np.triu_indices(len(grid))
        lows = np.concatenate([cuts, np.full(len(cuts), -math.inf), grid[i]])
        highs = np.concatenate([np.full(len(cuts), math.inf), cuts, grid[j]])
        k0 = _interval_counts(s0, lows, highs)
        k1 = _interval_counts(s1, lows, highs)
        for favours, (ka, na, kb, nb) in enumerate(
            ((k0, len(s0), k1, len(s1)), (k1, len(s1), k0, len(s0)))
        ):
            lower, upper = _joint_bounds(ka, na, kb, nb, c)
            if target is None:
                objective = _epsilon_from_bounds(lower, upper, d)
            elif math.isinf(target):
                objective = np.zeros(lower.shape) if target > 0 else lower
            else:
                objective = lower - math.exp(min(target, 700.0)) * upper
            idx = int(np.argmax(objective))
            value = float(objective[idx])
            if best is None or value > best[0]:
                best = (value, Event(scorer, float(lows[idx]), float(highs[idx]), favours))
    if best is None:
        raise InternalError("no candidate event")
    return best[1], best[0]
