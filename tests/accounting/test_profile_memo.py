"""Profiles memoise pure ε and KL: computed once, never inherited by a derived profile."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import infodp.accounting as acc
from infodp.accounting import profile as prof


def _count(monkeypatch: pytest.MonkeyPatch, cls: type, name: str) -> list[int]:
    """Wrap ``cls.name`` so that every call is counted; returns the counter."""
    calls = [0]
    original: Callable[..., float] = getattr(cls, name)

    def counted(self: prof.PrivacyProfile) -> float:
        calls[0] += 1
        return original(self)

    monkeypatch.setattr(cls, name, counted)
    return calls


def _laplace_kl(scale: float, sensitivity: float) -> float:
    # Mironov 2017, Table II (α = 1): KL(Lap(0, b) ‖ Lap(Δ, b)) = Δ/b + e^{−Δ/b} − 1.
    r = sensitivity / scale
    return r + math.expm1(-r)


def test_pure_epsilon_is_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count(monkeypatch, prof.LaplaceProfile, "_pure_epsilon")
    p = acc.laplace_profile(2.0)
    # Dwork & Roth 2014, Theorem 3.6: Laplace with scale b and L1 sensitivity Δ is Δ/b-DP.
    assert [p.pure_epsilon() for _ in range(5)] == [0.5] * 5
    p.rdp(math.inf)
    p.rdp([2.0, math.inf])
    p.epsilon(0.0)
    assert calls[0] == 1


def test_kl_is_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count(monkeypatch, prof.LaplaceProfile, "_kl")
    p = acc.laplace_profile(2.0)
    expected = _laplace_kl(2.0, 1.0)
    assert p.rdp(1.0) == pytest.approx(expected, rel=1e-12)
    assert p.rdp(1.0) == p.information(1.0) == float(p.rdp([1.0, 2.0])[0])
    assert calls[0] == 1


def test_composition_memoises_its_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count(monkeypatch, prof.LaplaceProfile, "_pure_epsilon")
    a, b = acc.laplace_profile(2.0), acc.laplace_profile(4.0)
    total = acc.compose(a, b)
    for _ in range(3):
        # Dwork & Roth 2014, Theorem 3.16: pure ε adds under composition (1/2 + 1/4).
        assert total.pure_epsilon() == 0.75
    assert calls[0] == 2  # once per part, however often the composition is asked


def test_derived_profiles_do_not_inherit_the_memo() -> None:
    p = acc.laplace_profile(2.0)
    assert p.pure_epsilon() == 0.5
    assert p.rdp(1.0) == pytest.approx(_laplace_kl(2.0, 1.0), rel=1e-12)
    # Group privacy (Dwork & Roth 2014, Theorem 2.2) and composition (Theorem 3.16): new
    # objects with their own values, not the memo of the profile they came from.
    assert p.group(3).pure_epsilon() == 1.5
    assert p.group(3).rdp(1.0) == pytest.approx(_laplace_kl(2.0, 3.0), rel=1e-12)
    assert p.repeat(4).pure_epsilon() == 2.0
    assert p.repeat(4).rdp(1.0) == pytest.approx(4 * _laplace_kl(2.0, 1.0), rel=1e-12)
    assert acc.compose(p, acc.laplace_profile(1.0)).pure_epsilon() == 1.5
    assert acc.parallel(p, acc.laplace_profile(1.0)).pure_epsilon() == 1.0
    other = dataclasses.replace(p, scale=8.0)
    assert other.pure_epsilon() == 0.125
    assert other.rdp(1.0) == pytest.approx(_laplace_kl(8.0, 1.0), rel=1e-12)
    assert p.pure_epsilon() == 0.5


def test_memo_leaves_equality_hash_and_repr_alone() -> None:
    p, fresh = acc.laplace_profile(2.0), acc.laplace_profile(2.0)
    before = repr(p)
    p.pure_epsilon()
    p.rdp(1.0)
    assert p == fresh
    assert hash(p) == hash(fresh)
    assert repr(p) == before == repr(fresh)
    assert dataclasses.fields(p) == dataclasses.fields(fresh)


@settings(max_examples=50, deadline=None)
@given(
    scale=st.floats(1e-3, 1e3, allow_nan=False),
    sensitivity=st.integers(1, 50),
    k=st.integers(2, 20),
)
def test_memoised_pure_epsilon_is_the_fresh_value(scale: float, sensitivity: int, k: int) -> None:
    p = acc.discrete_laplace_profile(scale, sensitivity)
    first = p.pure_epsilon()
    assert first == p.pure_epsilon() == float(p._pure_epsilon())
    # Never understated: Δ/b rounded up (Dwork & Roth 2014, Theorem 3.6, discrete analogue).
    assert Fraction(first) >= Fraction(sensitivity) / Fraction(scale)
    grouped = p.group(k).pure_epsilon()
    assert Fraction(grouped) >= k * Fraction(sensitivity) / Fraction(scale)
    assert p.pure_epsilon() == first
