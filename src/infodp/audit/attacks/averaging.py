"""Averaging attack: ask the same noisy question again and again.

Each answer of an ε-DP sum query is the truth plus Laplace noise of scale 1/ε; the mean of q
independent answers has standard deviation √2/(ε√q) (Laplace variance 2b²), so an unbudgeted
curator eventually reveals the exact sum — and, to an attacker who knows the other rows (the
strong adversary of DP), the target's bit. Sequential composition (Dwork & Roth 2014,
Thm 3.16; Dwork & Roth 2014 "sequential composition") says q answers cost qε: infodp's curator
keeps a durable ledger and refuses the query that would overspend (raising
:class:`~infodp.errors.BudgetExceeded`) before any noise is drawn.

>>> r = averaging_attack(epsilon=0.5, queries=2000, budget=1.0, trials=200, rng=0)
>>> r.naive_success > r.dp_ceiling, r.infodp_answered, r.infodp_refused
(True, 2, True)
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from scipy import stats

from infodp._jsonable import json_key
from infodp._validate import as_positive, as_positive_int
from infodp.audit.attacks._result import AttackResult
from infodp.audit.estimators import clopper_pearson
from infodp.errors import BudgetExceeded
from infodp.mechanisms.sampling import RandomSource, as_generator, simulate_discrete_laplace

__all__ = ["AveragingResult", "UnbudgetedCurator", "averaging_attack"]


@dataclass(frozen=True)
class UnbudgetedCurator:
    """A curator that answers every sum query with fresh Laplace noise and never says no.

    A strawman for the attack (numpy noise, no ledger): NOT PRIVATE beyond one query.

    >>> c = UnbudgetedCurator((1, 0, 1), epsilon=1.0)
    >>> c.answers(4, rng=0).shape
    (4,)
    """

    rows: tuple[int, ...]
    epsilon: float

    def answers(self, queries: int, rng: Any = None) -> np.ndarray:
        """``queries`` independent noisy answers to ``SELECT SUM(bit)``."""
        gen = as_generator(rng)
        return float(sum(self.rows)) + gen.laplace(0.0, 1.0 / self.epsilon, size=queries)


@dataclass(frozen=True)
class AveragingResult(AttackResult):
    """Outcome of the averaging attack against an unbudgeted curator and against infodp."""

    epsilon: float = field(metadata=json_key("epsilon_per_query"))
    queries: int
    budget: float = field(metadata=json_key("budget_epsilon"))
    trials: int
    naive_error: float = field(metadata=json_key("naive_mean_abs_error"))
    naive_error_theory: float = field(metadata=json_key("naive_mean_abs_error_theory"))
    naive_success: float
    naive_success_theory: float
    naive_success_lower: float = field(metadata=json_key("naive_success_lower_95"))
    infodp_answered: int
    infodp_refused: bool
    infodp_refusal: str
    infodp_error: float = field(metadata=json_key("infodp_abs_error"))
    infodp_success: float
    dp_ceiling: float

    def _summary(self) -> str:
        return (
            f"{self.queries} answers from an unbudgeted curator reveal the target's bit "
            f"{self.naive_success:.1%} of the time; infodp answered "
            f"{self.infodp_answered} and refused the next (budget ε = {self.budget:g}), "
            f"leaving the attacker {self.infodp_success:.1%} (ε-DP ceiling "
            f"{self.dp_ceiling:.1%})."
        )


def _curator_run(
    rows: list[int], epsilon: float, budget: float, limit: int, source: RandomSource | None
) -> tuple[list[float], bool, str]:
    from infodp.curator import Curator

    answers: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        csv = os.path.join(tmp, "people.csv")
        with open(csv, "w", encoding="ascii") as handle:
            handle.write("bit\n" + "".join(f"{int(r)}\n" for r in rows))
        cur = Curator(os.path.join(tmp, "store.duckdb"), source=source)
        cur.register_dataset(
            "people",
            csv,
            {
                "table": "people",
                "privacy_unit": "row",
                "columns": {"bit": {"type": "int", "bounds": [0, 1]}},
            },
        )
        cur.add_analyst("eve", "people", epsilon=budget)
        for _ in range(limit):
            try:
                result = cur.query("eve", "SELECT SUM(bit) FROM people", epsilon=epsilon)
            except BudgetExceeded as refusal:
                return answers, True, str(refusal)
            answers.append(float(cast(float, result.rows[0][0])))  # a SUM releases a number
    return answers, False, ""


def averaging_attack(
    epsilon: float = 0.1,
    queries: int = 10_000,
    budget: float = 1.0,
    *,
    rows: int = 100,
    trials: int = 2000,
    rng: Any = None,
    source: RandomSource | None = None,
) -> AveragingResult:
    """Average ``queries`` answers of ``SELECT SUM(bit)`` to learn one row's bit.

    Against :class:`UnbudgetedCurator`: ``trials`` simulated games (fresh secret bit each);
    success is compared with Φ(√q ε/(2√2)) (CLT for the mean of q Laplace(1/ε) answers;
    the guess is wrong only when the mean error passes ½ the wrong way). Against infodp's
    :class:`~infodp.curator.Curator` with an ε = ``budget`` analyst budget: one real run until
    refusal (``source`` for its noise; default the OS CSPRNG), then the attacker's success
    with the answers it got is simulated with the same (discrete Laplace) noise law.
    ``dp_ceiling`` = e^B/(1 + e^B) for the total budget B (Kairouz, Oh & Viswanath 2015).
    """
    eps = as_positive("epsilon", epsilon)
    q = as_positive_int("queries", queries)
    bud = as_positive("budget", budget)
    n = as_positive_int("rows", rows, minimum=2)
    t = as_positive_int("trials", trials)
    gen = as_generator(rng)
    b = 1.0 / eps
    others = gen.integers(0, 2, size=n - 1)
    known = int(others.sum())

    # Naive curator: simulate trials × queries answers in chunks (memory ≤ ~4e6 floats).
    secrets = gen.integers(0, 2, size=t)
    errors = np.empty(t)
    chunk = max(1, 4_000_000 // q)
    for start in range(0, t, chunk):
        stop = min(t, start + chunk)
        noise = gen.laplace(0.0, b, size=(stop - start, q))
        errors[start:stop] = noise.mean(axis=1)
    estimate = known + secrets + errors
    guess = (estimate - known > 0.5).astype(np.int64)
    wins = int(np.count_nonzero(guess == secrets))
    sd = math.sqrt(2.0) * b / math.sqrt(q)

    # infodp's curator: one real run with a random secret.
    secret = int(gen.integers(0, 2))
    answers, refused, refusal = _curator_run([secret, *others.tolist()], eps, bud, q, source)
    got = len(answers)
    infodp_error = abs(float(np.mean(answers)) - (known + secret)) if got else math.inf
    if got:
        sim = simulate_discrete_laplace(b, t * got, gen).reshape(t, got).mean(axis=1)
        sim_guess = (secrets + sim > 0.5).astype(np.int64)
        infodp_success = float(np.mean(sim_guess == secrets))
    else:
        infodp_success = 0.5
    return AveragingResult(
        epsilon=eps,
        queries=q,
        budget=bud,
        trials=t,
        naive_error=float(np.mean(np.abs(errors))),
        naive_error_theory=sd * math.sqrt(2.0 / math.pi),  # E|N(0, sd²)| (CLT)
        naive_success=wins / t,
        naive_success_theory=float(stats.norm.cdf(0.5 / sd)),
        naive_success_lower=clopper_pearson(wins, t, side="lower")[0],
        infodp_answered=got,
        infodp_refused=refused,
        infodp_refusal=refusal,
        infodp_error=infodp_error,
        infodp_success=infodp_success,
        dp_ceiling=1.0 / (1.0 + math.exp(-bud)),
    )
