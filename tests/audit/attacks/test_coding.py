"""the "DP and Information Theory" (2022) article's broken-wifi attack: achieved information rate
never exceeds the Shannon capacity
of one ε-DP query, and a real code beats repetition."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from infodp.audit.attacks import coding_attack, fano_information_bits, repetition_length
from infodp.errors import ParameterError


def _bsc_capacity_bits(epsilon: float) -> float:
    # Binary symmetric channel with p = 1/(1+e^ε): C = 1 − H₂(p) bits (Shannon 1948; "DP and
    # Information Theory" (2022)).
    p = 1 / (1 + math.exp(epsilon))
    return 1 - float(stats.entropy([p, 1 - p], base=2))


@pytest.mark.parametrize(("epsilon", "bits"), [(1.0, 8), (2.0, 8), (0.5, 6)])
def test_rates_below_capacity_and_linear_beats_repetition(epsilon: float, bits: int) -> None:
    r = coding_attack(epsilon=epsilon, bits=bits, trials=1500, rng=31)
    cap = _bsc_capacity_bits(epsilon)
    assert r.capacity_bits == pytest.approx(cap, abs=1e-6)
    for code in (r.repetition, r.linear):
        assert 0 < code.information_rate_bits <= cap
        assert code.information_rate_bits <= code.nominal_rate_bits
    assert r.linear.information_rate_bits > r.repetition.information_rate_bits
    # the random code gets within a factor of 3 of capacity at these short lengths
    assert r.linear.information_rate_bits > cap / 3


def test_repetition_length_is_exact() -> None:
    # p = 1/4 (ε = log 3): majority of 5 fails with P(Bin(5, 1/4) ≥ 3) = 0.1035..., of 7 with
    # 0.0706, of 9 with 0.0489 ≤ 0.05 (binomial tail).
    assert stats.binom.sf(4, 9, 0.25) <= 0.05 < stats.binom.sf(3, 7, 0.25)
    assert repetition_length(math.log(3), 1, 0.05) == 9
    # 8 bits need every bit right: (1 − P_bit)^8 ≥ 0.95.
    r = repetition_length(math.log(3), 8, 0.05)
    assert (1 - stats.binom.sf(r // 2, r, 0.25)) ** 8 >= 0.95
    assert (1 - stats.binom.sf((r - 2) // 2, r - 2, 0.25)) ** 8 < 0.95


def test_fano_bound_values() -> None:
    # Cover & Thomas 2006, Thm 2.10.1: I ≥ k − h(P_e) − P_e log₂(2^k − 1).
    assert fano_information_bits(8, 0.0) == 8.0
    pe = 0.1
    expected = 8 - float(stats.entropy([pe, 1 - pe], base=2)) - pe * math.log2(255)
    assert fano_information_bits(8, pe) == pytest.approx(expected)
    assert fano_information_bits(1, 0.5) == 0.0


def test_bad_parameters() -> None:
    with pytest.raises(ParameterError, match="bits"):
        coding_attack(bits=17)
    with pytest.raises(ParameterError, match="epsilon"):
        coding_attack(epsilon=-1.0)
