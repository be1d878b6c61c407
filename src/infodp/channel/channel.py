"""Discrete channels P(Y|X) and their capacities, with certified brackets.

A privacy mechanism seen from one individual's row is a noisy channel: row ``x`` of the
matrix is the output distribution ``P(Y | X = x)``. Its privacy at level α is the
article's Rényi channel capacity ("Differential Privacy and Information Theory", 2022, "Channel
Capacity")::

    C_α = sup_{P_X} I_α(X; Y),   I_α(X; Y) = D_α(P_XY ‖ P_X P_Y),

bracketed by Sibson's capacity (the "radius") below and the largest pairwise Rényi divergence
between rows (the "diameter", the Rényi-DP ε(α) of the channel) above ("Differential Privacy and
Information Theory", 2022, "Sibson's
definition")::

    min_Q max_x D_α(P_{Y|x} ‖ Q)  ≤  C_α  ≤  max_{x,x'} D_α(P_{Y|x} ‖ P_{Y|x'}).

At α = 1 all three notions coincide with Shannon's capacity (MI-DP); at α = ∞ the diameter
equals C_∞, the channel's pure ε.

The API: :class:`Channel` (``matrix``, ``inputs``, ``outputs``; constructors
``binary_symmetric``, ``binary_erasure``, ``z_channel``, ``randomized_response``; ``then`` for
post-processing and ``product`` / ``&`` for two uses on the same input) with ``epsilon()``,
``delta(eps)``, ``divergences(α)``, ``diameter(α)``, ``shannon_capacity()``,
``sibson_capacity(α)``, ``renyi_capacity(α)`` and ``capacity(α, definition=...)``, each
capacity returned as a :class:`CapacityResult`.

Every capacity is returned as a :class:`CapacityResult` holding a bracket ``[lower, upper]``
that contains the true value: ``lower`` is the information of an explicit input distribution,
``upper`` a dual certificate (for instance ``max_x D(W_x ‖ q)`` for an explicit ``q``). A small
allowance for floating-point rounding is subtracted from ``lower`` and added to ``upper``, so
``upper`` can be used as a privacy guarantee and ``lower`` as an attack rate.

>>> bsc = Channel.binary_symmetric(0.1)
>>> result = bsc.capacity()
>>> closed_form = math.log(2) + 0.1 * math.log(0.1) + 0.9 * math.log(0.9)  # log 2 − H(0.1)
>>> result.lower <= closed_form <= result.upper, result.upper - result.lower <= 1e-9
(True, True)
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from infodp._validate import (
    SUM_TOLERANCE,
    as_alpha,
    as_nonnegative,
    as_positive,
    as_positive_int,
    as_probability,
    as_real,
)
from infodp.channel._numerics import (
    _INF,
    _MONOTONE_WINDOW,
    _NEAR_ONE,
    FloatArray,
    _allowance,
    _log_scale,
    _order_allowance,
    _pairwise_renyi,
    _readonly,
)
from infodp.channel.renyi import _renyi_capacity
from infodp.channel.result import CapacityResult
from infodp.channel.shannon import _shannon_capacity
from infodp.channel.sibson import _sibson_capacity
from infodp.errors import ParameterError

__all__ = ["DEFINITIONS", "Channel"]

#: The capacity definitions accepted by :meth:`Channel.capacity` and ``infodp capacity``.
DEFINITIONS: tuple[str, ...] = ("shannon", "sibson", "renyi")


def _labels(name: str, labels: Sequence[Hashable] | None, size: int) -> tuple[Hashable, ...]:
    if labels is None:
        return tuple(range(size))
    if isinstance(labels, (str, bytes)):
        raise ParameterError(name, labels, f"a sequence of {size} distinct labels")
    out = tuple(labels)
    if len(out) != size:
        raise ParameterError(name, f"{len(out)} labels", f"a sequence of {size} distinct labels")
    try:
        distinct = len(set(out)) == size
    except TypeError:
        raise ParameterError(name, out, "a sequence of hashable labels") from None
    if not distinct:
        raise ParameterError(name, out, f"a sequence of {size} distinct labels")
    return out


class Channel:
    """A discrete channel P(Y|X): a row-stochastic matrix with input and output labels.

    Row ``x`` is the output distribution given input ``x``. The matrix is validated (finite,
    non-negative, every row summing to 1 within 1e-9; errors name the row) and read-only;
    channels are immutable values.

    >>> ch = Channel([[0.75, 0.25], [0.25, 0.75]], inputs=["no", "yes"])
    >>> ch.n_inputs, ch.n_outputs, ch.inputs
    (2, 2, ('no', 'yes'))
    >>> round(ch.epsilon(), 6)  # log 3: randomized response (Warner 1965)
    1.098612
    >>> Channel([[0.5, 0.4], [0.5, 0.5]])
    Traceback (most recent call last):
        ...
    infodp.errors.ParameterError: matrix row 0 must sum to 1 (within 1e-09); it sums to 0.9.
    """

    __slots__ = ("_inputs", "_matrix", "_outputs")

    _matrix: FloatArray
    _inputs: tuple[Hashable, ...]
    _outputs: tuple[Hashable, ...]

    def __init__(
        self,
        matrix: Any,
        inputs: Sequence[Hashable] | None = None,
        outputs: Sequence[Hashable] | None = None,
    ) -> None:
        if isinstance(matrix, Channel):
            matrix = matrix.matrix
        try:
            W = np.array(matrix, dtype=np.float64, copy=True)
        except (TypeError, ValueError):
            raise ParameterError(
                "matrix", matrix, "a 2-d array of probabilities (one row per input)"
            ) from None
        if W.ndim != 2 or W.shape[0] == 0 or W.shape[1] == 0:
            raise ParameterError(
                "matrix", f"array of shape {W.shape}", "a non-empty 2-d array (inputs × outputs)"
            )
        for x in range(W.shape[0]):
            row = W[x]
            if not np.isfinite(row).all():
                raise ParameterError(
                    f"matrix row {x} must contain only finite probabilities; found NaN or inf."
                )
            if (row < 0).any():
                y = int(np.argmax(row < 0))
                raise ParameterError(
                    f"matrix row {x} must be non-negative; found {row[y]!r} at column {y}."
                )
            total = math.fsum(row.tolist())
            if abs(total - 1.0) > SUM_TOLERANCE:
                raise ParameterError(
                    f"matrix row {x} must sum to 1 (within {SUM_TOLERANCE:g}); "
                    f"it sums to {total!r}."
                )
        W.setflags(write=False)
        object.__setattr__(self, "_matrix", W)
        object.__setattr__(self, "_inputs", _labels("inputs", inputs, W.shape[0]))
        object.__setattr__(self, "_outputs", _labels("outputs", outputs, W.shape[1]))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Channel is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Channel is immutable; cannot delete {name!r}")

    # ---- basic properties ---------------------------------------------------------------

    @property
    def matrix(self) -> FloatArray:
        """The read-only row-stochastic matrix P(Y|X) (inputs × outputs)."""
        return self._matrix

    @property
    def n_inputs(self) -> int:
        """Number of inputs (rows)."""
        return int(self._matrix.shape[0])

    @property
    def n_outputs(self) -> int:
        """Number of outputs (columns)."""
        return int(self._matrix.shape[1])

    @property
    def inputs(self) -> tuple[Hashable, ...]:
        """Input labels (default ``0 … n_inputs−1``)."""
        return self._inputs

    @property
    def outputs(self) -> tuple[Hashable, ...]:
        """Output labels (default ``0 … n_outputs−1``)."""
        return self._outputs

    def __repr__(self) -> str:
        return f"Channel(n_inputs={self.n_inputs}, n_outputs={self.n_outputs})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Channel):
            return NotImplemented
        return (
            self._inputs == other._inputs
            and self._outputs == other._outputs
            and np.array_equal(self._matrix, other._matrix)
        )

    def __hash__(self) -> int:
        return hash((self._matrix.shape, self._matrix.tobytes(), self._inputs, self._outputs))

    # ---- constructors --------------------------------------------------------------------

    @classmethod
    def binary_symmetric(cls, p: float) -> Channel:
        """Binary symmetric channel: the bit is flipped with probability ``p`` ∈ [0, 1].

        Capacity log 2 − H(p) nats (Shannon 1948; "Differential Privacy and Information Theory",
        2022, "Protection against B… outcomes").

        >>> Channel.binary_symmetric(0.25).matrix.tolist()
        [[0.75, 0.25], [0.25, 0.75]]
        """
        p = as_probability("p", p)
        return cls([[1.0 - p, p], [p, 1.0 - p]], inputs=(0, 1), outputs=(0, 1))

    @classmethod
    def binary_erasure(cls, e: float) -> Channel:
        """Binary erasure channel: the bit is erased (output ``"?"``) with probability ``e``.

        Capacity (1 − e) log 2 nats (Elias 1955; Cover & Thomas 2006, §7.1.5).

        >>> ch = Channel.binary_erasure(0.5)
        >>> ch.outputs, ch.matrix.tolist()
        ((0, '?', 1), [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
        """
        e = as_probability("e", e)
        return cls([[1.0 - e, e, 0.0], [0.0, e, 1.0 - e]], inputs=(0, 1), outputs=(0, "?", 1))

    @classmethod
    def z_channel(cls, p: float) -> Channel:
        """Z channel: 0 is always received as 0; 1 is received as 0 with probability ``p``.

        Capacity log(1 + (1 − p) p^{p/(1−p)}) nats (Golomb 1980; Tallini et al. 2002, Eq. (4)).

        >>> Channel.z_channel(0.5).matrix.tolist()
        [[1.0, 0.0], [0.5, 0.5]]
        """
        p = as_probability("p", p)
        return cls([[1.0, 0.0], [p, 1.0 - p]], inputs=(0, 1), outputs=(0, 1))

    @classmethod
    def randomized_response(cls, k: int, epsilon: float) -> Channel:
        """k-ary randomized response at level ε: the truth with probability e^ε/(e^ε + k − 1).

        Every other value has probability 1/(e^ε + k − 1), so the channel is exactly ε-DP
        (Warner 1965; Kairouz et al. 2016, "Extremal mechanisms", §4). ``epsilon=inf`` gives
        the identity channel.

        >>> rr = Channel.randomized_response(2, math.log(3))
        >>> rr.matrix.round(6).tolist()
        [[0.75, 0.25], [0.25, 0.75]]
        """
        k = as_positive_int("k", k, minimum=2)
        epsilon = as_nonnegative("epsilon", epsilon, allow_inf=True)
        if math.isinf(epsilon):
            W = np.eye(k)
        else:
            # probabilities in the log domain: e^ε/(e^ε+k−1) = 1/(1+(k−1)e^{−ε})
            off = math.exp(-epsilon) / (1.0 + (k - 1) * math.exp(-epsilon))
            W = np.full((k, k), off)
            np.fill_diagonal(W, 1.0 / (1.0 + (k - 1) * math.exp(-epsilon)))
        labels = tuple(range(k))
        return cls(W, inputs=labels, outputs=labels)

    # ---- combinations --------------------------------------------------------------------

    def then(self, other: Channel) -> Channel:
        """Cascade: feed this channel's output into ``other`` (post-processing), P = W·V.

        By the data-processing inequality ("Differential Privacy and Information Theory", 2022) no
        capacity of the cascade exceeds this
        channel's.

        >>> bsc = Channel.binary_symmetric(0.1)
        >>> bsc.then(bsc).matrix.round(6).tolist()
        [[0.82, 0.18], [0.18, 0.82]]
        """
        if not isinstance(other, Channel):
            raise ParameterError("other", other, "a Channel")
        if other.n_inputs != self.n_outputs:
            raise ParameterError(
                "other",
                f"a channel with {other.n_inputs} inputs",
                f"a channel with {self.n_outputs} inputs (this channel's outputs)",
            )
        if other.inputs != self.outputs:
            raise ParameterError(
                "other.inputs", other.inputs, f"the outputs of this channel {self.outputs!r}"
            )
        W = self._matrix @ other._matrix
        W = W / W.sum(axis=1, keepdims=True)
        return Channel(W, inputs=self.inputs, outputs=other.outputs)

    def product(self, other: Channel) -> Channel:
        """Two conditionally independent uses on the same input: P(y1, y2 | x) = W(y1|x) V(y2|x).

        Output labels are pairs ``(y1, y2)`` in row-major order. This is the composition of two
        queries on the same row ("Differential Privacy and Information Theory", 2022, "Group
        privacy and composability").

        >>> bsc = Channel.binary_symmetric(0.25)
        >>> both = bsc & bsc
        >>> both.outputs
        ((0, 0), (0, 1), (1, 0), (1, 1))
        >>> both.matrix[0].tolist()
        [0.5625, 0.1875, 0.1875, 0.0625]
        """
        if not isinstance(other, Channel):
            raise ParameterError("other", other, "a Channel")
        if other.n_inputs != self.n_inputs or other.inputs != self.inputs:
            raise ParameterError(
                "other.inputs", other.inputs, f"the same inputs as this channel {self.inputs!r}"
            )
        W = (self._matrix[:, :, None] * other._matrix[:, None, :]).reshape(self.n_inputs, -1)
        labels = tuple(itertools.product(self.outputs, other.outputs))
        return Channel(W, inputs=self.inputs, outputs=labels)

    def __and__(self, other: Channel) -> Channel:
        if not isinstance(other, Channel):
            return NotImplemented
        return self.product(other)

    # ---- privacy parameters ----------------------------------------------------------------

    def epsilon(self) -> float:
        """Pure ε of the channel: max over outputs y and inputs x, x' of log P(y|x)/P(y|x').

        Equals C_∞ and the diameter at α = ∞ ("Differential Privacy and Information Theory", 2022,
        "Connecting differential privacy to
        Shannon"); ``inf`` when some output is possible under one input and impossible under
        another. Rounded up by a few ulps.

        >>> round(Channel.randomized_response(4, 1.5).epsilon(), 9)
        1.5
        >>> Channel.binary_erasure(0.5).epsilon()
        inf
        """
        W = self._matrix
        used = W.max(axis=0) > 0
        Wu = W[:, used]
        if (Wu.min(axis=0) == 0).any():
            return _INF
        logW = np.log(Wu)
        value = float(np.max(logW.max(axis=0) - logW.min(axis=0)))
        return value + _allowance(value, 2)

    def delta(self, eps: float) -> float:
        """δ(ε): the largest hockey-stick divergence Σ_y max(0, P(y|x) − e^ε P(y|x')).

        The channel is (ε, δ)-DP exactly for δ ≥ this value (Dwork & Roth 2014, Def. 2.4;
        Balle et al. 2018, Thm 1). ``eps`` ∈ [0, ∞].

        >>> rr = Channel.randomized_response(2, math.log(3))
        >>> round(rr.delta(0.0), 6), round(rr.delta(math.log(3)), 6)
        (0.5, 0.0)
        """
        eps = as_real("eps", eps, allow_inf=True)
        if eps < 0:
            raise ParameterError("eps", eps, "a number in [0, inf]")
        W = self._matrix
        if math.isinf(eps):
            return 0.0
        scale = math.exp(eps) if eps < 700 else _INF
        worst = 0.0
        for x in range(W.shape[0]):
            with np.errstate(over="ignore", invalid="ignore"):
                scaled = np.where(W > 0, scale * W, 0.0)
            excess = np.clip(W[x][None, :] - scaled, 0.0, None).sum(axis=1)
            worst = max(worst, float(excess.max()))
        return min(1.0, worst + _allowance(worst, W.shape[1]))

    def divergences(self, alpha: float) -> FloatArray:
        """The matrix of Rényi divergences D_α(P_{Y|x} ‖ P_{Y|x'}) between rows (nats).

        α ∈ [0, ∞]; α = 1 is KL and α = ∞ the max-divergence, computed exactly.

        >>> Channel.binary_symmetric(0.25).divergences(float("inf")).round(6).tolist()
        [[0.0, 1.098612], [1.098612, 0.0]]
        """
        alpha = as_alpha("alpha", alpha)
        return _readonly(_pairwise_renyi(self._matrix, alpha))

    def diameter(self, alpha: float) -> float:
        """max_{x,x'} D_α(P_{Y|x} ‖ P_{Y|x'}): the Rényi-DP ε(α) and an upper bound on C_α.

        For the BSC it is 1/(α−1) log(p^α (1−p)^{1−α} + (1−p)^α p^{1−α}) ("Differential Privacy and
        Information Theory", 2022, "Sufficient
        vs necessary"). Rounded up by a few ulps. α ∈ [0, ∞].

        >>> bsc = Channel.binary_symmetric(0.25)
        >>> round(bsc.diameter(2.0), 6), round(bsc.diameter(float("inf")), 6)
        (0.847298, 1.098612)
        """
        alpha = as_alpha("alpha", alpha)
        value = float(_pairwise_renyi(self._matrix, alpha).max())
        scale = _log_scale(self._matrix)
        if abs(alpha - 1.0) < _NEAR_ONE:  # the expm1/log1p branch has no 1/|α−1| amplification
            return value + _allowance(value, self.n_outputs) * (1.0 + 2.0 * scale)
        return value + _order_allowance(value, self.n_outputs, alpha, scale)

    # ---- capacities ------------------------------------------------------------------------

    def shannon_capacity(self, *, tol: float = 1e-9, max_iter: int = 100_000) -> CapacityResult:
        """Shannon capacity max_P I(X;Y) (MI-DP level, α = 1) with a certified bracket.

        lower = I(p; W) at the returned input, upper = max_x D(W_x ‖ q) at the returned output
        law (Blahut 1972, Thm 2). Stops when upper − lower ≤ ``tol`` nats.

        >>> r = Channel.z_channel(0.5).shannon_capacity()
        >>> round(r.upper, 9), round(math.log(1.25), 9)
        (0.223143551, 0.223143551)
        """
        tol = as_positive("tol", tol)
        max_iter = as_positive_int("max_iter", max_iter)
        return _shannon_capacity(self._matrix, tol, max_iter)

    def sibson_capacity(
        self, alpha: float, *, tol: float = 1e-9, max_iter: int = 10_000
    ) -> CapacityResult:
        """Sibson's α-capacity: the radius min_Q max_x D_α(P_{Y|x} ‖ Q), α ∈ (0, ∞].

        Equal to Arimoto's and Augustin–Csiszár's α-capacities (Csiszár 1995; Verdú 2015) and a
        lower bound on the article's C_α. lower = I^s_α at the returned input, upper =
        max_x D_α(P_{Y|x} ‖ Q) at the returned Q. At α = ∞ it is log Σ_y max_x P(y|x); at α = 1
        the Shannon capacity. For the BSC it is log 2 − H_α(p) ("Differential Privacy and
        Information Theory", 2022). Within about 1e-3
        of α = 1 the rounding allowance (amplified by 1/|α−1|) can exceed ``tol``: the bracket
        is then wider than ``tol`` and ``converged`` is False, rather than crossing.

        >>> r = Channel.binary_symmetric(0.25).sibson_capacity(2.0)
        >>> round(r.upper, 6), round(math.log(2) + math.log(0.25**2 + 0.75**2), 6)
        (0.223144, 0.223144)
        """
        alpha = as_alpha("alpha", alpha)
        if alpha == 0:
            raise ParameterError("alpha", alpha, "a Rényi order in (0, inf]")
        tol = as_positive("tol", tol)
        max_iter = as_positive_int("max_iter", max_iter)
        if alpha == 1:
            r = _shannon_capacity(self._matrix, tol, max_iter)
            return _relabel(r, "sibson")
        result = _sibson_capacity(self._matrix, alpha, tol, max_iter)
        if abs(alpha - 1.0) < _MONOTONE_WINDOW and result.gap > tol:
            result = self._tighten_near_one(
                result, alpha, lambda a: _sibson_capacity(self._matrix, a, tol, max_iter), tol
            )
        return result

    def renyi_capacity(
        self,
        alpha: float,
        *,
        tol: float = 1e-9,
        n_starts: int = 4,
        rng: np.random.Generator | int | None = 0,
        refine_budget: int | None = None,
        time_budget: float | None = None,
        progress: bool = False,
    ) -> CapacityResult:
        """The article's capacity C_α = sup_P D_α(P_XY ‖ P_X P_Y), α ∈ (0, ∞].

        I_α is not concave in P, so ``lower`` comes from a global multi-start search and the
        centres of the cells below (it is the value at ``input_distribution``), while
        ``upper`` is certified: the diameter ("Differential Privacy and Information Theory", 2022:
        radius ≤ C_α ≤ diameter), Shannon's
        capacity for α < 1, and a branch and bound over simplicial cells of the input simplex
        (:mod:`infodp.channel.certificates` proves the cell bound) that stops once
        ``upper − lower ≤ tol``, after ``refine_budget`` cells (default 2 000 for at most 3
        inputs, 200 000 otherwise) or after ``time_budget`` seconds, returning the best
        bracket so far (``None`` or ``math.inf``: no time limit). ``iterations`` counts local
        searches plus cells (the work done); ``progress=True`` shows a progress bar when
        standard error is a terminal. At α = ∞ C_∞ = pure ε exactly; at α = 1 it is Shannon's
        capacity. Ask for a realistic ``tol`` (1e-3 nats) with four inputs or more.

        >>> r = Channel.binary_symmetric(0.25).renyi_capacity(2.0)
        >>> r.lower >= 0.223143, r.lower <= r.upper <= 0.869039
        (True, True)
        """
        started = time.monotonic()
        alpha = as_alpha("alpha", alpha)
        if alpha == 0:
            raise ParameterError("alpha", alpha, "a Rényi order in (0, inf]")
        tol = as_positive("tol", tol)
        n_starts = as_positive_int("n_starts", n_starts, minimum=0)
        if refine_budget is None:
            refine_budget = 2000 if self.n_inputs <= 3 else 200_000
        refine_budget = as_positive_int("refine_budget", refine_budget, minimum=0)
        budget = (
            math.inf
            if time_budget is None
            else as_positive("time_budget", time_budget, allow_inf=True)
        )
        if alpha == 1:
            return _relabel(_shannon_capacity(self._matrix, tol, 100_000), "renyi")
        generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        result = _renyi_capacity(
            self._matrix, alpha, tol, n_starts, generator, refine_budget, budget, progress
        )
        if abs(alpha - 1.0) < _MONOTONE_WINDOW and result.gap > tol:
            result = self._tighten_near_one(
                result,
                alpha,
                # the comparison run shares what is left of the time budget
                lambda a: _renyi_capacity(
                    self._matrix,
                    a,
                    tol,
                    n_starts,
                    np.random.default_rng(0),
                    refine_budget,
                    max(started + budget - time.monotonic(), 0.0),
                ),
                tol,
            )
        return result

    def _tighten_near_one(
        self, result: CapacityResult, alpha: float, at: Any, tol: float
    ) -> CapacityResult:
        """Intersect a near-α=1 bracket with the one implied by monotonicity in α.

        Sibson's and the article's capacities are non-decreasing in α ("Differential Privacy and
        Information Theory", 2022,
        "Channel capacity"; Verdú 2015, Thm 4): for 1 < α < α₀, C_1 ≤ C_α ≤ C_{α₀}, and for
        α₀ < α < 1, C_{α₀} ≤ C_α ≤ C_1, with α₀ = 1 ± 1e-4 where rounding is not amplified.
        """
        shannon = _shannon_capacity(self._matrix, tol, 100_000)
        outer = at(1.0 + math.copysign(_MONOTONE_WINDOW, alpha - 1.0))
        below, above = (shannon, outer) if alpha > 1 else (outer, shannon)
        low = max((result, below), key=lambda r: r.lower)
        high = min((result, above), key=lambda r: r.upper)
        return CapacityResult(
            lower=low.lower,
            upper=max(high.upper, low.lower),
            input_distribution=low.input_distribution,
            output_distribution=high.output_distribution,
            iterations=result.iterations + shannon.iterations + outer.iterations,
            definition=result.definition,
            alpha=alpha,
            converged=high.upper - low.lower <= tol,
            method=result.method + "; bracket intersected with monotonicity in alpha",
        )

    def capacity(
        self, alpha: float = 1.0, *, definition: str = "renyi", tol: float = 1e-9
    ) -> CapacityResult:
        """Capacity at level α under ``definition`` ∈ {"shannon", "sibson", "renyi"}.

        "shannon" requires α = 1; "renyi" is the article's C_α (the privacy level),
        "sibson" its lower bound (the radius). At α = 1 all three are Shannon's capacity.

        >>> ch = Channel.randomized_response(3, 1.0)
        >>> round(ch.capacity(float("inf")).upper, 9)
        1.0
        >>> ch.capacity(2.0, definition="shannon")
        Traceback (most recent call last):
            ...
        infodp.errors.ParameterError: alpha must be 1 for definition='shannon'; got 2.0.
        """
        alpha = as_alpha("alpha", alpha)
        if definition not in DEFINITIONS:
            raise ParameterError("definition", definition, "one of 'shannon', 'sibson', 'renyi'")
        if definition == "shannon":
            if alpha != 1:
                raise ParameterError("alpha", alpha, "1 for definition='shannon'")
            return self.shannon_capacity(tol=tol)
        if definition == "sibson":
            return self.sibson_capacity(alpha, tol=tol)
        return self.renyi_capacity(alpha, tol=tol)


def _relabel(result: CapacityResult, definition: str) -> CapacityResult:
    return CapacityResult(
        lower=result.lower,
        upper=result.upper,
        input_distribution=result.input_distribution,
        output_distribution=result.output_distribution,
        iterations=result.iterations,
        definition=definition,
        alpha=1.0,
        converged=result.converged,
        method=result.method + " (alpha = 1: Shannon capacity)",
    )
