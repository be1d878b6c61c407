"""Lower bounds on the mutual information a mechanism leaks about one individual.

The experiment: a secret bit X, uniform, chooses the dataset (D if X = 0, D' if X = 1) and the
attacker sees Y = M(D_X). For *any* predictor q(x | y),

    I(X; Y) = H(X) − H(X | Y) ≥ log 2 − E[−log q(X | Y)],

since the cross-entropy E[−log q(X|Y)] is at least the conditional entropy H(X|Y) (Gibbs'
inequality; this is the variational bound of Barber & Agakov 2003, "The IM algorithm"). The
predictor is fitted on training samples (a histogram of a score, with add-½ smoothing, clipped
to [η, 1 − η]); the expected cross-entropy is then bounded *above* on held-out samples with
the empirical Bernstein inequality (Maurer & Pontil 2009, "Empirical Bernstein bounds and
sample variance penalization", Theorem 4), separately for X = 0 and X = 1 at level
``1 − (1 − c)/2``. So the result is a lower bound on I(X; Y) — and hence on the Shannon
capacity C_1 of the individual's channel (“Differential Privacy and Information Theory” (2022)) —
that holds with probability ≥ c, for the uniform prior on {D, D'}.

Why not a plug-in estimate: plug-in mutual information is biased *upwards* on finite samples,
so it would overstate the leak; here every approximation (binning, clipping, a finite sample)
can only make the bound smaller.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> tr0, tr1 = rng.integers(0, 2, 20_000), rng.integers(0, 2, 20_000)  # independent of X
>>> te0, te1 = rng.integers(0, 2, 20_000), rng.integers(0, 2, 20_000)
>>> mi_lower_bound(tr0, tr1, te0, te1)
0.0
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from infodp._validate import as_positive_int, as_probability
from infodp.errors import ParameterError
from infodp.units import LN2

__all__ = ["empirical_bernstein_upper", "mi_lower_bound"]

ArrayF = npt.NDArray[np.float64]

_CLIP = 1e-3  # q ∈ [η, 1 − η]: keeps the losses bounded (range log((1 − η)/η))


def empirical_bernstein_upper(values: Any, value_range: float, confidence: float = 0.95) -> float:
    """Upper confidence bound on the mean of i.i.d. values in an interval of width ``value_range``.

    Maurer & Pontil (2009), Theorem 4: with probability ≥ 1 − a,
    ``E X ≤ mean + sqrt(2 V ln(2/a) / n) + 7 R ln(2/a) / (3 (n − 1))`` where V is the sample
    variance (with n − 1) and R the range. (Their 2/a makes the statement two-sided; we keep
    it, which is conservative.)

    >>> round(empirical_bernstein_upper([0.5] * 1000, 1.0), 4)   # zero variance: range term
    0.5086
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    n = x.size
    if n < 2:
        raise ParameterError("values", f"{n} value(s)", "at least 2 values")
    if not np.isfinite(x).all():
        raise ParameterError("values", "<non-finite>", "finite numbers")
    c = as_probability("confidence", confidence, open_low=True, open_high=True)
    if not (math.isfinite(value_range) and value_range > 0):
        raise ParameterError("value_range", value_range, "a positive finite number")
    log_term = math.log(2.0 / (1.0 - c))
    var = float(np.var(x, ddof=1))
    return float(
        x.mean()
        + math.sqrt(2.0 * var * log_term / n)
        + 7.0 * value_range * log_term / (3.0 * (n - 1))
    )


def _bins(train0: ArrayF, train1: ArrayF, bins: int) -> ArrayF:
    pooled = np.concatenate([train0, train1])
    values = np.unique(pooled)
    if len(values) <= bins:
        # Discrete scores: one bin per value (edges half-way between consecutive values).
        mids = (values[1:] + values[:-1]) / 2.0
        return np.asarray(mids, dtype=np.float64)
    edges = np.quantile(pooled, np.linspace(0.0, 1.0, bins + 1)[1:-1])
    return np.asarray(np.unique(edges), dtype=np.float64)


def mi_lower_bound(
    train0: Any,
    train1: Any,
    test0: Any,
    test1: Any,
    *,
    confidence: float = 0.95,
    bins: int = 64,
) -> float:
    """Lower bound (nats) on I(X; Y) for a uniform secret bit X choosing D or D'.

    ``train*`` and ``test*`` are real *scores* of outputs of M(D) (``*0``) and M(D') (``*1``);
    any fixed function of the output may be used (data processing: I(X; s(Y)) ≤ I(X; Y)).
    The predictor is a ``bins``-bin histogram of the training scores; the held-out
    cross-entropy is bounded with :func:`empirical_bernstein_upper`. Never negative.

    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> # Randomized response with ε = log 3: I = log 2 − H_b(1/4) ≈ 0.1308 nats.
    >>> flip = lambda x, n: np.where(rng.random(n) < 0.75, x, 1 - x)
    >>> b = mi_lower_bound(flip(0, 10**5), flip(1, 10**5), flip(0, 10**5), flip(1, 10**5))
    >>> 0.11 < b < 0.1308
    True
    """
    t0 = np.asarray(train0, dtype=np.float64).reshape(-1)
    t1 = np.asarray(train1, dtype=np.float64).reshape(-1)
    h0 = np.asarray(test0, dtype=np.float64).reshape(-1)
    h1 = np.asarray(test1, dtype=np.float64).reshape(-1)
    for name, arr in (("train0", t0), ("train1", t1), ("test0", h0), ("test1", h1)):
        if arr.size < 2 or not np.isfinite(arr).all():
            raise ParameterError(name, f"{arr.size} scores", "at least 2 finite scores")
    c = as_probability("confidence", confidence, open_low=True, open_high=True)
    nbins = as_positive_int("bins", bins)
    edges = _bins(t0, t1, nbins)
    k = len(edges) + 1
    c0 = np.bincount(np.searchsorted(edges, t0, side="right"), minlength=k)
    c1 = np.bincount(np.searchsorted(edges, t1, side="right"), minlength=k)
    p0 = (c0 + 0.5) / (t0.size + 0.5 * k)
    p1 = (c1 + 0.5) / (t1.size + 0.5 * k)
    q0 = np.clip(p0 / (p0 + p1), _CLIP, 1.0 - _CLIP)  # q(X = 0 | bin), uniform prior
    loss0 = -np.log(q0[np.searchsorted(edges, h0, side="right")])
    loss1 = -np.log1p(-q0[np.searchsorted(edges, h1, side="right")])
    value_range = math.log((1.0 - _CLIP) / _CLIP)
    level = 1.0 - (1.0 - c) / 2.0
    upper = 0.5 * (
        empirical_bernstein_upper(loss0, value_range, level)
        + empirical_bernstein_upper(loss1, value_range, level)
    )
    return max(0.0, LN2 - upper)
