"""The first term's law and spectrum are remembered, and change no bound.

An interval's search convolves one lead noise (coefficient 1) with many coefficients of the
others (:mod:`infodp.curator.rules.intervals`); the lead's law on its grid and its FFT are computed
once. The oracle for every bound is the same computation with nothing remembered.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from infodp.mechanisms import DiscreteGaussianMechanism, DiscreteLaplaceMechanism, error_law


def _forget() -> None:
    error_law._lead_law.cache_clear()
    error_law._SPECTRA.clear()


def _fresh(terms: list[tuple[object, float]], beta: float) -> float:
    _forget()
    return error_law._convolved(terms, beta)  # type: ignore[arg-type]


@pytest.mark.parametrize("lead_scale", [300.0, 4.0], ids=["wide_lead", "narrow_lead"])
def test_remembered_bounds_equal_fresh_ones(lead_scale: float) -> None:
    lead = DiscreteLaplaceMechanism(lead_scale)
    others = [DiscreteLaplaceMechanism(2.0), DiscreteGaussianMechanism(5.0)]
    cases = []
    for i in range(40):
        other = others[i % 2]
        c = (-1) ** i * (0.01 + 0.37 * i)
        third = [(DiscreteLaplaceMechanism(7.0), 0.5 + i / 10)] if i % 5 == 0 else []
        cases.append(([(lead, 1.0), (other, c), *third], 0.05 if i % 3 else 0.01))
    expected = [_fresh(terms, beta) for terms, beta in cases]
    _forget()
    # Each bound twice in a row with the lead remembered: the identical float every time.
    got = [error_law._convolved(terms, beta) for terms, beta in cases for _ in range(2)]  # type: ignore[arg-type]
    assert got == [e for e in expected for _ in range(2)]


def test_the_lead_is_laid_on_its_grid_once(monkeypatch: pytest.MonkeyPatch) -> None:
    lead, other = DiscreteLaplaceMechanism(400.0), DiscreteLaplaceMechanism(3.0)
    laws, ffts = [0], [0]
    real_law, real_rfft = error_law._term_law, np.fft.rfft

    def counted_law(*args: object) -> object:
        laws[0] += 1
        return real_law(*args)  # type: ignore[arg-type]

    def counted_rfft(*args: object, **kwargs: object) -> object:
        ffts[0] += 1
        return real_rfft(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(error_law, "_term_law", counted_law)
    monkeypatch.setattr(np.fft, "rfft", counted_rfft)
    _forget()
    # The lead's range is the widest for every coefficient here, so its grid step is fixed,
    # and every other law is long enough to be convolved by FFT, at one FFT size.
    for c in (40.0, 50.0, 60.0, 80.0, 100.0):
        error_law._convolved([(lead, 1.0), (other, c)], 0.05)
    assert laws[0] == 1 + 5  # the lead once, each other term once
    assert ffts[0] == 1 + 5  # the lead's spectrum once (one FFT size), each other's once
    law, _, _ = error_law._lead_law((lead, 1.0, 100, 1.0))
    with pytest.raises(ValueError, match="read-only"):
        law[0] = 1.0


def test_a_mechanism_that_cannot_be_a_key_is_computed_afresh() -> None:
    @dataclass(eq=True)  # eq without frozen: instances are unhashable
    class Unhashable:
        inner: DiscreteLaplaceMechanism

        def halfwidth(self, beta: float) -> int:
            return self.inner.halfwidth(beta)

        def _noise_pmf(self, k: object) -> object:
            return self.inner._noise_pmf(k)  # type: ignore[arg-type]

    plain = [(DiscreteLaplaceMechanism(50.0), 1.0), (DiscreteLaplaceMechanism(2.0), 3.0)]
    odd = [(Unhashable(DiscreteLaplaceMechanism(50.0)), 1.0), plain[1]]
    assert error_law.combination_halfwidth(odd, 0.05) == _fresh(plain, 0.05)  # type: ignore[arg-type]
