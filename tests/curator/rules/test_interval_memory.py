"""The AVG and VARIANCE intervals' exact-law numerics are not recomputed for inputs seen.

The bound on a noise combination's quantile (:func:`~infodp.mechanisms.error_law.combination_halfwidth`)
is remembered process-wide by its exact inputs: a second identical query (same noise draws,
from a fresh curator object with nothing of its own remembered) convolves nothing and
releases the identical interval; the first one did convolve (so the counter can see it).
"""  # noqa: E501

from __future__ import annotations

from pathlib import Path

import pytest

from _server_harness import build_store
from infodp.curator.engine import Curator
from infodp.mechanisms import error_law
from infodp.mechanisms.sampling import InsecureSeededSource


def _source() -> InsecureSeededSource:
    return InsecureSeededSource(11, i_understand_this_is_not_private=True)


@pytest.mark.slow
@pytest.mark.parametrize(
    "sql",
    ["SELECT AVG(age) FROM people", "SELECT region, VARIANCE(age) FROM people GROUP BY region"],
    ids=["avg", "variance"],
)
def test_a_second_identical_query_convolves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sql: str
) -> None:
    db, _ = build_store(tmp_path, [("alice", "people", 100)])
    convolutions = [0]
    real = error_law._convolve

    def counted(a: object, b: object) -> object:
        convolutions[0] += 1
        return real(a, b)  # type: ignore[arg-type]

    monkeypatch.setattr(error_law, "_convolve", counted)
    error_law._remembered.cache_clear()
    answers = []
    for _ in range(2):
        convolutions[0] = 0
        cur = Curator(db, source=_source())  # nothing remembered by the object itself
        try:
            r = cur.query("alice", sql, epsilon=1)
        finally:
            cur.close()
        answers.append((r.rows, r.confidence_intervals, convolutions[0]))
    (rows1, cis1, first), (rows2, cis2, second) = answers
    assert first > 0 and second == 0
    assert rows1 == rows2 and cis1 == cis2  # the identical release and interval


def test_the_bound_is_remembered_by_exact_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Equal mechanisms (another object with the same parameters), coefficients and β share
    one computation; any other input is computed afresh, to the value a fresh computation
    gives."""
    from infodp.mechanisms import DiscreteGaussianMechanism, DiscreteLaplaceMechanism

    calls = [0]
    real = error_law._convolved

    def counted(live: object, beta: float) -> float:
        calls[0] += 1
        return real(live, beta)  # type: ignore[arg-type]

    monkeypatch.setattr(error_law, "_convolved", counted)
    error_law._remembered.cache_clear()
    terms = [(DiscreteLaplaceMechanism(40.0), 1.0), (DiscreteLaplaceMechanism(3.0), -2.5)]
    first = error_law.combination_halfwidth(terms, 0.05)
    again = [(DiscreteLaplaceMechanism(40.0), 1.0), (DiscreteLaplaceMechanism(3.0), -2.5)]
    assert error_law.combination_halfwidth(again, 0.05) == first and calls[0] == 1
    others = [
        ([(DiscreteLaplaceMechanism(40.0), 1.0), (DiscreteLaplaceMechanism(3.0), -2.5)], 0.01),
        ([(DiscreteLaplaceMechanism(40.0), 1.0), (DiscreteLaplaceMechanism(3.5), -2.5)], 0.05),
        ([(DiscreteLaplaceMechanism(40.0), 1.0), (DiscreteLaplaceMechanism(3.0), -2.25)], 0.05),
        ([(DiscreteLaplaceMechanism(40.0), 1.0), (DiscreteGaussianMechanism(3.0), -2.5)], 0.05),
    ]
    for n, (combo, beta) in enumerate(others, start=2):
        got = error_law.combination_halfwidth(combo, beta)
        assert calls[0] == n
        assert got == real(combo, beta)  # what an unremembered computation gives
        assert got != first
